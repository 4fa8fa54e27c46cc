"""Many dry runs from one interpreter: Snakemake (and the libraries the Snakefile imports) are imported once,
then every request forks a child that runs Snakemake's own command line, ``snakemake.cli.main``, exactly as
the ``snakemake`` executable does, with its stdout/stderr sent to files.

The package under test (``sentrepro``) is never imported here, only in the children: each plan imports it
afresh from disk and computes every fingerprint as a cold ``snakemake -n`` would (with the fingerprint
cache the environment names). Used by :class:`tests.workflow_helpers.DryRuns`; protocol: one JSON request
per stdin line ``{"argv": [...], "cwd": ..., "stdout": path, "stderr": path}``, one reply line
``{"rc": exit status}``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import jsonschema  # noqa: F401 (imported here once: the Snakefile's config validation uses it)
import numpy  # noqa: F401
import snakemake.cli
import yaml  # noqa: F401

# What Snakemake imports lazily at every plan (its storage layer: smart_open, which imports requests; the DAG's
# progress and version helpers), a fifth of a child's time when each child imported them again.
import graphlib  # noqa: F401
import packaging.version  # noqa: F401
import smart_open  # noqa: F401
import snakemake.storage  # noqa: F401
import tqdm  # noqa: F401

# Snakemake's argument parser (every plugin's options; a fifth of a small plan) built once, here, before any
# fork: each child parses its own argv with a pristine copy of it (a fork copies this process). With
# profiles, which are read from disk, the parser is built afresh as always.
_PARSER = snakemake.cli.get_argument_parser()
_build_parser = snakemake.cli.get_argument_parser


def _argument_parser(profiles=None):
    return _PARSER if profiles is None else _build_parser(profiles=profiles)


snakemake.cli.get_argument_parser = _argument_parser


def run_child(request: dict) -> None:
    """In the forked child: Snakemake's main with the request's arguments; never returns."""
    code = 1
    try:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            handle = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, fd)
            os.close(handle)
        os.chdir(request["cwd"])
        sys.argv = ["snakemake", *request["argv"]]
        try:
            snakemake.cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 (reported in the child's stderr, as a crash of snakemake would be)
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            run_child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    main()
