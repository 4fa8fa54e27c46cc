"""Run the real workflow (repo Snakefile) in a temporary working directory on a small config.

The test overlay points every data source at the real files in ../shared/data (the local-mirror
option), trains on a few hundred real Wikipedia sentences, and uses tiny local backbones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def tiny_overlay(shared_data: Path, tiny_models: dict[str, Path], *, experiment: str = "wftest",
                 max_steps: int = 4, sentences: int = 256) -> dict:
    """A complete overlay on config.yaml: tiny BERT, SimCSE + frozen baselines, STS-B from the mirror."""
    return {
        "experiment": experiment,
        "resources_dir": "resources",
        "data": {
            "mirror": str(shared_data),
            "sources": {
                "wiki_sample": {"url": (shared_data / "wiki" / "wiki1m_for_simcse.first1280000bytes.txt").as_uri(),
                                "format": "file"},
                # ../shared/data holds no Web of Science copy: the synthetic fixture stands in (not mirrored)
                "wos": {"url": "fixture://wos/WebOfScience.zip", "sha256": None, "synthetic": True},
            },
        },
        "corpus": {"name": "wiki-sample", "source": "wiki_sample",
                   "file": "wiki1m_for_simcse.first1280000bytes.txt", "reader": "lines",
                   "max_sentences": sentences},
        "backbones": {"tiny-bert": {"model": str(tiny_models["bert"]), "tokenizer": "tiny-bert", "family": "bert",
                                    "stands_in_for": "bert-base"}},
        "methods": {"simcse": {"params": {"max_steps": max_steps, "eval_steps": 2, "batch_size": 8},
                               "per_backbone": {"tiny-bert": {"batch_size": 8, "lr": 1e-4}}}},
        "matrix": only_blocks({"tiny-simcse": {"backbones": ["tiny-bert"], "methods": ["simcse"], "seeds": [1]},
                               "tiny-frozen": {"backbones": ["tiny-bert"], "methods": ["frozen-avg"], "seeds": [0]}}),
        "training": {"checkpoint_every": 2},
        "evaluation": {"batch_size": 64, "sts": {"tasks": ["STSBenchmark"]}},
    }


def base_config() -> dict:
    """config.yaml as a mapping (the base every test overlay is merged over)."""
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def only_blocks(blocks: dict) -> dict:
    """An overlay's ``matrix`` that runs exactly ``blocks``: every named block of config.yaml removed
    (``<name>: null``), then ``blocks`` (docs/configuration.md, "Config layers")."""
    return {**{name: None for name in base_config()["matrix"]}, **blocks}


def only_units(section: str, names) -> dict:
    """An overlay's ``evaluation.<section>`` (suites or figures) that turns on exactly ``names``."""
    return {**{name: False for name in base_config()["evaluation"][section]}, **{name: True for name in names}}


def write_overlay(workdir: Path, overlay: dict) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "overlay.yaml"
    path.write_text(yaml.safe_dump(overlay, sort_keys=False), encoding="utf-8")
    return path


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def fixed_thread_env(threads: int | str | None = None) -> dict[str, str]:
    """The thread settings every test process and workflow job runs with: ``threads`` if given, else the
    caller's ``OMP_NUM_THREADS``, else 1, for torch (which reads these at start), OpenMP, MKL and OpenBLAS,
    with dynamic adjustment off, so a result does not depend on the machine's core count or load."""
    threads = str(threads or os.environ.get("OMP_NUM_THREADS") or "1")
    return {**{name: threads for name in THREAD_VARIABLES}, "OMP_DYNAMIC": "FALSE", "MKL_DYNAMIC": "FALSE"}


DRY_RUN = frozenset({"-n", "--dry-run", "--dryrun", "--lint", "--list-rules", "--summary", "--detailed-summary"})


def snakemake(workdir: Path, *args: str, overlay: Path | None = None, check: bool = True, timeout: int = 900,
              repo: Path = REPO, env: dict[str, str] | None = None, fresh: bool = False,
              extra=()) -> subprocess.CompletedProcess:
    """``snakemake -s <repo>/Snakefile -d <workdir> <args> --configfiles config.yaml overlay.yaml [extra...]``.

    ``args`` come before ``--configfiles`` (which takes every word after it), so they may end in targets.
    ``repo``: a copy of the checkout (see :func:`copy_checkout`), whose src/ is then imported instead.
    ``extra``: more config files after the overlay (a user's own layer, as CONTRIBUTING's "Your own experiment").
    Jobs run with :func:`fixed_thread_env`; ``env`` adds or overrides variables (e.g. a BLAS back-end).
    The jobs that load models are forked from a warm server (tests/job_server.py: the same command line, with
    torch and transformers imported once); ``fresh=True`` starts every job as its own process, for a test
    about the job processes themselves.
    """
    overlay = overlay or workdir / "overlay.yaml"
    cmd = [SNAKEMAKE, "-s", str(repo / "Snakefile"), "-d", str(workdir), "--cores", "2", *args,
           "--configfiles", str(repo / "config.yaml"), str(overlay), *map(str, extra)]
    env = {**os.environ, **fixed_thread_env(), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           **(env or {})}
    if repo != REPO:
        env["PYTHONPATH"] = str(repo / "src")
    if not fresh and not DRY_RUN.intersection(args):
        from tests.job_server import job_env

        env = job_env(env)
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}")
    return result


def planned_jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """Parse the 'Job stats' table of a dry run: rule -> count; {} only when Snakemake says "Nothing to
    be done". Any other output (an error, a changed format) raises, so "plans nothing" cannot pass on
    output that was not read (the parser `sentrepro cost` uses too: sentrepro.planning.workflow)."""
    from sentrepro.planning.workflow import parse_job_stats

    text = result.stdout + result.stderr
    if result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}); no plan to read:\n{text[-4000:]}")
    return parse_job_stats(text)


def same_size_behaviour_change(text: str) -> str:
    """A module's source with its first ``==`` comparison turned into ``!=``: another behaviour, the same
    number of bytes (so that, with the modification time put back, only the content tells the edit)."""
    edited = text.replace(" == ", " != ", 1)
    if edited == text:
        raise AssertionError("no ' == ' comparison to change")
    return edited


def copy_checkout(target: Path) -> Path:
    """A copy of the checkout's workflow and package (Snakefile, config.yaml, workflow/, envs/, src/sentrepro) at
    ``target``; :func:`snakemake` with ``repo=target`` runs it with that copy of the package imported."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    target.mkdir(parents=True)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, target / name)
    shutil.copytree(REPO / "workflow", target / "workflow", ignore=ignore)
    shutil.copytree(REPO / "envs", target / "envs", ignore=ignore)  # the rules' conda: files (job metadata)
    shutil.copytree(REPO / "src" / "sentrepro", target / "src" / "sentrepro", ignore=ignore)
    return target


class DryRuns:
    """``snakemake -n`` of one working directory, many times, without one cold Snakemake start each: a
    server process (tests/plan_server.py) imports Snakemake once and forks a child per plan, which runs
    Snakemake's own command line on the checkout as it is on disk at that moment (the package is imported
    afresh in every child). :meth:`plan` takes and returns what :func:`snakemake` does. A context manager.
    """

    def __init__(self, workdir: Path, *, repo: Path = REPO, env: dict | None = None):
        self.workdir, self.repo = workdir, repo
        self.env = {**os.environ, "OMP_NUM_THREADS": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                    **(env or {})}
        if repo != REPO:
            self.env["PYTHONPATH"] = str(repo / "src")
        self.server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("plan_server.py"))],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=self.env,
                                       cwd=workdir)
        self.count = 0
        self.scratch = Path(tempfile.mkdtemp(prefix="dry-runs-"))

    def plan(self, *args: str) -> subprocess.CompletedProcess:
        overlay = self.workdir / "overlay.yaml"
        argv = ["-s", str(self.repo / "Snakefile"), "-d", str(self.workdir), "--cores", "2", "-n", *args,
                "--configfiles", str(self.repo / "config.yaml"), str(overlay)]
        self.count += 1
        out = {name: self.scratch / f"{self.count}.{name}" for name in ("stdout", "stderr")}
        request = {"argv": argv, "cwd": str(self.workdir), **{k: str(v) for k, v in out.items()}}
        self.server.stdin.write(json.dumps(request) + "\n")
        self.server.stdin.flush()
        reply = self.server.stdout.readline()
        if not reply:
            raise AssertionError(f"the plan server stopped (exit {self.server.poll()})")
        texts = {name: path.read_text(encoding="utf-8", errors="replace") for name, path in out.items()}
        for path in out.values():
            path.unlink()
        return subprocess.CompletedProcess(["snakemake", *argv], json.loads(reply)["rc"], texts["stdout"],
                                           texts["stderr"])

    def close(self) -> None:
        if self.server.poll() is None:
            self.server.stdin.close()
            self.server.wait(timeout=60)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "DryRuns":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def cluster_rule_commands() -> dict[str, str]:
    """rule -> the `sentrepro` subcommand its shell runs, for every rule that is not one of the Snakefile's
    ``localrules`` (read from the rule files; the rules of the one definition per suite are ``evaluate_<suite>``)."""
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    local = set(re.findall(r"^\s+(\w+),$", snakefile.split("localrules:", 1)[1].split("\n\n", 1)[0], re.M))
    found = {}
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"^\s*rule\b", path.read_text(encoding="utf-8"), flags=re.M)[1:]:
            name = re.match(r"\s*(\w*):", block).group(1) or "evaluate_<suite>"
            command = re.search(r"\bsentrepro ([a-z][a-z-]+)", block.split("shell:", 1)[-1])
            if command and name not in local:
                found[name] = command.group(1)
    return found
