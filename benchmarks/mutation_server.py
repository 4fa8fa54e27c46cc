"""pytest for mutmut without a cold interpreter per mutant: a fork server that imports the heavy libraries once.

mutmut 2 runs its test command once per mutant. A cold ``python -m pytest`` of a sentrepro test file spends most
of its CPU importing torch, transformers and scikit-learn (several seconds, far more on a loaded 2-core machine),
so :mod:`mutation` starts one server per target: it imports those libraries (never ``sentrepro``, which every run
imports afresh from the mutated copy on disk), and mutmut's test command is this file's light ``client``, which
asks the server to fork a child that runs ``pytest.main`` with the given arguments in the client's directory.

The client exits 0 when the tests pass and 1 when they fail: mutmut 2 counts a mutant as killed only on exit code 1,
and pytest exits 2 on an import or collection error (a mutant that does not compile). Without an answer from the
server the client exits 2, which mutmut counts as a survivor, so a server failure is never a false kill. A child still running after
its time limit is killed by an alarm (mutmut gives up on the client before that and records a timeout).

    python benchmarks/mutation_server.py serve SOCKET            # (run by benchmarks/mutation.py)
    python benchmarks/mutation_server.py client SOCKET -- ARGS   # mutmut's test command
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
           "jsonschema", "requests", "pytest")
CHILD_LIMIT_S = 300


def serve(path: str) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m == "sentrepro" or m.startswith("sentrepro."))
    if loaded:
        raise SystemExit(f"mutation server: the preload imported {', '.join(loaded)}; it must import no sentrepro")
    import pytest

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
            if pid == 0:  # the child: one pytest run, as `python -m pytest ARGS` from the client's directory
                code = 3
                try:
                    server.close()
                    signal.alarm(CHILD_LIMIT_S)
                    os.chdir(request["cwd"])
                    sys.path.insert(0, request["cwd"])
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.dup2(devnull, 2)
                    code = int(pytest.main(request["args"]))
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            try:
                connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:  # the client is gone (mutmut stopped it at its timeout): serve the next one
                pass


def client(path: str, args: list[str]) -> int:
    """0: the tests passed; 1: they failed (a kill); 2: no answer from the server, which mutmut counts as a survivor
    (never a false kill: the table shows it and someone looks)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(path)
            connection.sendall((json.dumps({"cwd": os.getcwd(), "args": args}) + "\n").encode())
            code = int(connection.makefile("r").readline())
    except (OSError, ValueError) as error:
        print(f"mutation server {path}: {error}", file=sys.stderr)
        return 2
    return 0 if code == 0 else 1


def stop(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        connection.sendall(b'{"stop": true}\n')


if __name__ == "__main__":
    command, socket_path, *rest = sys.argv[1:]
    if command == "serve":
        serve(socket_path)
    elif command == "client":
        sys.exit(client(socket_path, rest[1:] if rest[:1] == ["--"] else rest))
    else:
        raise SystemExit(f"unknown command {command!r} (serve, client)")
