"""Every job a config plans, as JSON lines: rule, wildcards, input, output, log, params and resources.

For comparing two plans job by job (e.g. a config before and after it is rewritten into another form,
which must plan the very same jobs): run it on each and ``diff`` the sorted outputs. It builds the DAG with
Snakemake's own command line (``--dag --forceall``: every job, as on a fresh checkout), with ``printdag``
replaced by a dump of each job. Usage, from the repository root:

    .venv/bin/python benchmarks/plan_dump.py OUT.jsonl [snakemake arguments, e.g. --profile profiles/demo]

Resources Snakemake derives from the machine (``tmpdir``, ``_cores``, ``_nodes``) are left out.
"""

from __future__ import annotations

import json
import sys

MACHINE_RESOURCES = {"tmpdir", "_cores", "_nodes"}


def _plain(namedlist) -> dict:
    """A Snakemake Namedlist as {name or position: value}, values made JSON-safe."""
    names = {index: name for name, (index, _end) in namedlist._names.items()}
    return {str(names.get(i, i)): (v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else str(v))
            for i, v in enumerate(namedlist)}


def main(out: str, argv: list[str]) -> int:
    from snakemake import cli
    from snakemake.workflow import Workflow

    def dump(self) -> None:
        self._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        self._build_dag()
        rows = []
        for job in self.dag.jobs:
            resources = {k: v for k, v in _plain(job.resources).items() if k not in MACHINE_RESOURCES}
            rows.append({"rule": job.rule.name, "wildcards": dict(job.wildcards_dict),
                         "input": sorted(map(str, job.input)), "output": sorted(map(str, job.output)),
                         "log": sorted(map(str, job.log)), "params": _plain(job.params), "resources": resources})
        lines = sorted(json.dumps(row, sort_keys=True) for row in rows)
        with open(out, "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
        print(f"{len(lines)} jobs written to {out}", file=sys.stderr)

    Workflow.printdag = dump
    return cli.main([*argv, "--dag", "--forceall", "--cores", "1"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
