"""pytest without a cold interpreter per mutant: a fork server that imports the heavy libraries once.

A cold ``python -m pytest`` of a sentrepro test file spends most of its CPU importing torch, transformers and
scikit-learn (several seconds, far more on a loaded 2-core machine). :mod:`mutation` starts one server per worker:
the server imports those libraries (never ``sentrepro``, which every run imports afresh from the worker's copy on
disk, where the mutant is), and each request forks a child that runs ``pytest.main`` with the request's arguments
in the request's directory, under a time limit (an alarm), and answers with the child's raw exit status: pytest's
exit code, or minus the signal that ended it (``-14``: the alarm, a mutant that hangs).

A request may ask for coverage: the child then records, with coverage.py, which lines of the named files each test
runs (one coverage context per test id: what mutation testing's "run only the tests that cover the mutated line"
needs) and every test's duration, and saves both.

    python benchmarks/mutation_server.py serve SOCKET     # run by benchmarks/mutation.py
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

# Third-party only, imported once by the server; the package under test is imported by each child from disk.
PRELOAD = ("numpy", "scipy.stats", "scipy.optimize", "sklearn", "sklearn.linear_model", "sklearn.cluster",
           "sklearn.model_selection", "sklearn.metrics", "torch", "transformers", "safetensors.torch", "yaml",
           "jsonschema", "requests", "pytest", "coverage")


class TestContexts:
    """A pytest plugin: the coverage context is the running test's id from its setup to its teardown (lines run
    while collecting or between tests, e.g. module bodies on import, are in the empty context); each test's
    duration (setup + call + teardown, seconds) is summed in ``durations``."""

    def __init__(self, coverage) -> None:
        self.coverage = coverage
        self.durations: dict[str, float] = {}

    def pytest_runtest_setup(self, item) -> None:
        self.coverage.switch_context(item.nodeid)

    def pytest_runtest_logreport(self, report) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.when == "teardown":
            self.coverage.switch_context("")


def run_child(request: dict) -> int:
    """One pytest run, as ``python -m pytest ARGS`` from the request's directory (in the forked child); its output
    goes to the request's ``log`` file, or nowhere."""
    os.chdir(request["cwd"])
    sys.path.insert(0, request["cwd"])
    out = os.open(request.get("log") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    import pytest

    # Writing bytecode is asked for only by the runs of the unmutated copy (the coverage pass, the warm-up): their
    # caches (pytest's rewritten test files, the package's modules) are then read by every mutant's run, which
    # writes none. A cache of the mutated module is never written, so none can be stale: the original's is older
    # than every mutant and every restored original (their mtimes differ, and Python then compiles afresh).
    sys.dont_write_bytecode = not request.get("write_bytecode", False)
    wanted = request.get("coverage")
    if not wanted:
        return int(pytest.main(request["args"]))
    import coverage

    cov = coverage.Coverage(data_file=wanted["data_file"], include=wanted["include"], branch=False)
    plugin = TestContexts(cov)
    cov.start()
    try:
        code = int(pytest.main(request["args"], plugins=[plugin]))
    finally:
        cov.stop()
        cov.save()
    with open(wanted["durations_file"], "w", encoding="utf-8") as out:
        json.dump(plugin.durations, out)
    return code


def preload() -> None:
    """Import the heavy libraries, and the pytest plugins installed as entry points (pytest would import them in
    every child: ~0.6 s each time)."""
    import importlib
    import importlib.metadata

    for name in PRELOAD:
        importlib.import_module(name)
    for entry in importlib.metadata.entry_points(group="pytest11"):
        entry.load()


def serve(path: str) -> None:
    preload()
    loaded = sorted(m for m in sys.modules if m == "sentrepro" or m.startswith("sentrepro."))
    if loaded:
        raise SystemExit(f"mutation server: the preload imported {', '.join(loaded)}; it must import no sentrepro")

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    while True:
        connection, _ = server.accept()
        with connection:
            request = json.loads(connection.makefile("r").readline())
            if request.get("stop"):
                return
            pid = os.fork()
            if pid == 0:  # the child
                code = 3
                try:
                    server.close()
                    os.setpgid(0, 0)  # its own process group: what its tests start is ended with it
                    signal.alarm(max(1, int(request["limit_s"])))
                    code = run_child(request)
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            try:
                os.killpg(pid, signal.SIGKILL)  # anything the tests left running in the child's group
            except OSError:
                pass
            try:
                connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:  # the caller is gone: serve the next one
                pass


def ask(path: str, request: dict) -> int:
    """Send one request to the server at ``path``; its child's exit status (pytest's code, or -signal)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall((json.dumps(request) + "\n").encode())
        answer = connection.makefile("r").readline()
    if not answer.strip():
        raise RuntimeError(f"mutation server {path}: no answer to {request.get('args', [])[:3]}")
    return int(answer)


def stop(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(b'{"stop": true}\n')


if __name__ == "__main__":
    command, socket_path = sys.argv[1:3]
    if command == "serve":
        serve(socket_path)
    else:
        raise SystemExit(f"unknown command {command!r} (serve)")
