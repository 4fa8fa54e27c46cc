"""Workflow jobs of the tests without one cold interpreter start each: a fork server for ``sentrepro`` jobs.

A tiny-model job (evaluate, train, tokenize, export) spends most of its CPU importing torch, transformers and
scikit-learn: ~10 s of an ~11 s evaluate job on this project's 2-core machine. The workflow tests run hundreds
of them. Here a server process imports those libraries once (never ``sentrepro``), and every job forks a child
of it that runs the package's own command line, ``sentrepro.cli.main``, exactly as the ``sentrepro`` executable
does: with the job's arguments, working directory, environment and its very stdin/stdout/stderr (passed over a
Unix socket), importing ``sentrepro`` afresh from disk. The job's exit status is the child's.

How a job reaches it: :func:`job_env` puts a directory holding a ``sentrepro`` shim first on ``PATH`` (the
workflow's rules call ``sentrepro``). The shim sends the job to the server when the job's environment equals
the server's in every variable that a library reads when it is imported (:data:`IMPORT_TIME_VARIABLES`: the
server imported those libraries under its own values); otherwise, or when no server answers, it ``exec``s the
real ``sentrepro``. So a job whose environment differs (a test that sets its own thread count, another
``PYTHONPATH``, a job without ``HF_HUB_OFFLINE=1``) runs exactly as without the server. The server is started
with ``HF_HUB_OFFLINE=1``, the prefix of the rules that load models, so those are the jobs it serves.

Signals reach the job: the shim forwards SIGTERM/SIGINT/SIGHUP to the child, and a child whose shim is gone
(killed) terminates itself, as a killed job would. Tests that are about processes themselves (which libraries
a job imported, killing a job) run with ``fresh=True``.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOCKET_VARIABLE = "SENTREPRO_TEST_JOB_SERVER"
# Read by a library at import time (so fixed in the server once it imported them): a job whose value of any of
# these differs from the server's runs as a fresh process instead.
IMPORT_TIME_VARIABLES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "TORCH", "PYTORCH_", "CUDA",
                         "OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "PYTHON", "SKLEARN_", "SCIPY_", "NUMPY_",
                         "MPL", "XDG_CACHE_HOME", "LD_", "ATEN_", "ONEDNN_", "DNNL_", "SAFETENSORS_")
# Imported once by the server; every job forks from there. Third-party only: the package under test is
# imported by each job from disk.
PRELOAD = ("numpy", "scipy.stats", "scipy.optimize", "sklearn", "sklearn.linear_model", "sklearn.cluster",
           "sklearn.model_selection", "sklearn.metrics", "torch", "transformers",
           "transformers.models.bert.modeling_bert", "transformers.models.roberta.modeling_roberta",
           "transformers.models.deberta.modeling_deberta", "transformers.models.bert.tokenization_bert",
           "safetensors.torch", "tokenizers", "yaml", "jsonschema", "requests", "tqdm")


def import_time_environment(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that libraries read when imported (see :data:`IMPORT_TIME_VARIABLES`)."""
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_VARIABLES) and k != SOCKET_VARIABLE}


# ----------------------------------------------------------------------------------------------- the server

def serve(socket_path: str) -> None:
    """Import :data:`PRELOAD`, then fork a child per request on ``socket_path`` until stdin closes. Each
    request is logged in ``<socket_path>.log``: ``served <pid> <argv>`` or ``refused <variables>``."""
    import importlib

    before = dict(os.environ)
    expected = import_time_environment(before)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # what the imports set (scikit-learn: KMP_*; transformers: TORCHINDUCTOR_CACHE_DIR): a job gets them too
    set_by_imports = {k: v for k, v in os.environ.items() if before.get(k) != v}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    log = open(f"{socket_path}.log", "a", encoding="utf-8", buffering=1)
    print("ready", flush=True)
    open_jobs: dict[int, socket.socket] = {}
    while True:  # no threads in this process: a forked child must not inherit a lock another thread holds
        readable, _, _ = select.select([listener, 0], [], [], 0.05)
        if 0 in readable and not os.read(0, 4096):
            break  # stdin closed: the tests are done
        if listener in readable:
            conn, _ = listener.accept()
            request, fds = _receive(conn)
            theirs = import_time_environment(request["env"])
            if theirs != expected or len(fds) != 3:
                differing = sorted(k for k in {*theirs, *expected} if theirs.get(k) != expected.get(k))
                log.write(f"refused {' '.join(differing)}\n")
                for fd in fds:
                    os.close(fd)
                conn.sendall(b"refused\n")
                conn.close()
            else:
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    log.close()
                    for other in open_jobs.values():
                        other.close()
                    run_job(conn, fds, request, set_by_imports)  # never returns
                for fd in fds:
                    os.close(fd)
                log.write(f"served {pid} {json.dumps(request['argv'][1:])}\n")
                conn.sendall(f"pid {pid}\n".encode())
                open_jobs[pid] = conn
        while open_jobs:  # reap finished jobs, tell each shim its job's status
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = open_jobs.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"status {os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                conn.close()
    listener.close()
    log.close()


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: a length line sent with the three descriptors, then that many bytes of JSON."""
    data, fds, _, _ = socket.recv_fds(conn, 4096, 3)
    while b"\n" not in data:
        data += conn.recv(4096)
    header, data = data.split(b"\n", 1)
    size = int(header)
    while len(data) < size:
        data += conn.recv(size - len(data))
    return json.loads(data.decode()), list(fds)


def run_job(conn: socket.socket, fds: list[int], request: dict, set_by_imports: dict[str, str]) -> None:
    """In the forked child: ``sentrepro.cli.main`` as the ``sentrepro`` executable runs it; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**set_by_imports, **request["env"]})
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        sys.argv = list(request["argv"])
        threading.Thread(target=_die_with_shim, args=(conn,), daemon=True).start()
        import importlib

        importlib.invalidate_caches()  # files written since the server started (a test's edited copy) are seen
        from sentrepro.cli import main

        try:
            code = main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - an uncaught exception: traceback and status 1, as python would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) else 1)


def _die_with_shim(conn: socket.socket) -> None:
    """The shim's end closed before the job finished (the shim was killed): end the job as SIGTERM would."""
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


# ------------------------------------------------------------------------------------------------- the shim

SHIM = """#!{python} -SE
import sys
sys.path.insert(0, {repo!r})
from tests.job_server import shim_main
shim_main({real!r})
"""


def shim_main(real: str) -> None:
    """The ``sentrepro`` on the job's PATH: the job through the server, or ``exec`` of the real command."""
    path = os.environ.get(SOCKET_VARIABLE)
    if path:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(path)
        except OSError:
            client = None
        if client is not None:
            request = {"argv": [real, *sys.argv[1:]], "cwd": os.getcwd(), "env": dict(os.environ)}
            payload = json.dumps(request).encode()
            socket.send_fds(client, [f"{len(payload)}\n".encode()], [0, 1, 2])
            client.sendall(payload)
            reader = client.makefile("r")
            first = reader.readline().split()
            if first and first[0] == "pid":
                child = int(first[1])
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    signal.signal(sig, lambda number, _frame: os.kill(child, number))
                last = reader.readline().split()
                if not last or last[0] != "status":
                    sys.exit(1)
                status = int(last[1])
                if status < 0:  # the job died of a signal: so does the shim
                    signal.signal(-status, signal.SIG_DFL)
                    os.kill(os.getpid(), -status)
                sys.exit(status)
            client.close()  # refused (another environment): run it fresh
    os.execv(real, [real, *sys.argv[1:]])


# ------------------------------------------------------------------------------------------------ the client

_SERVERS: dict[str, tuple[subprocess.Popen, str, Path]] = {}


def job_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` (a job environment, PATH with the interpreter's bin first) with the shim first on PATH and the
    socket of a server for its import-time environment (started on first use; one per distinct such
    environment, kept for this process)."""
    served = {**env, "HF_HUB_OFFLINE": "1"}
    key = hashlib.sha256(json.dumps(import_time_environment(served), sort_keys=True).encode()).hexdigest()[:16]
    if key not in _SERVERS or _SERVERS[key][0].poll() is not None:
        _SERVERS[key] = _start(served)
    _, path, shim_dir = _SERVERS[key]
    return {**env, "PATH": f"{shim_dir}:{env['PATH']}", SOCKET_VARIABLE: path}


def server_log(env: dict[str, str]) -> list[str]:
    """The lines the server of ``env`` (from :func:`job_env`) logged so far."""
    return Path(f"{env[SOCKET_VARIABLE]}.log").read_text(encoding="utf-8").splitlines()


def _start(env: dict[str, str]) -> tuple[subprocess.Popen, str, Path]:
    folder = Path(tempfile.mkdtemp(prefix="sentrepro-jobs-"))
    shim_dir = folder / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "sentrepro"
    real = str(Path(sys.executable).with_name("sentrepro"))
    shim.write_text(SHIM.format(python=sys.executable, repo=str(REPO), real=real), encoding="utf-8")
    shim.chmod(0o755)
    path = str(folder / "socket")
    server = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                               f"from tests.job_server import serve; serve({path!r})"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=folder)
    deadline = time.monotonic() + 300
    while server.stdout.readline().strip() != "ready":
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the job server did not start (exit {server.poll()})")
    atexit.register(_stop, server)
    return server, path, shim_dir


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
