"""Verdict pages built from constructed metrics files, for the page tests (tests/test_verdict_page*.py):
one with judged claims (real backbone names: best-of-N, a frozen side against a published number, the
exact anisotropy claims, a claim not run) and one like the demo's (stand-ins on synthetic data: 0 judged)."""

from __future__ import annotations

from pathlib import Path

from sentrepro.verdicts.build import VerdictResult, build_verdicts
from sentrepro.verdicts.claims import load_claims
from sentrepro.verdicts.render import write_outputs
from tests.test_verdicts import BACKBONES, write_run, write_summary

ANISOTROPY = (("bert-base", 0.4445), ("bert-base-cased", 0.1465), ("roberta-base", 0.0235))


def judged_page(root: Path) -> tuple[VerdictResult, list[Path]]:
    files = []
    for seed in (1, 2, 3, 4):
        files.append(write_run(root, "bert-base", "conpvp", seed, noise=0.15))
        files.append(write_run(root, "bert-base", "simcse", seed, noise=0.6))
        files.append(write_run(root, "roberta-large", "conpvp", seed, noise=0.30))
        files.append(write_run(root, "roberta-large", "conpvp-manual", seed, noise=0.30 + 0.001 * seed))
    files.append(write_run(root, "bert-base", "manual-prompt", 1, 0.15, trained=False))
    files += [write_summary(root, backbone, "static-avg", None, "anisotropy", {"static_token": {"reported": value}},
                            trained=False) for backbone, value in ANISOTROPY]
    backbones = dict(BACKBONES, **{b: {"stands_in_for": b} for b in ("bert-base-cased", "roberta-base")})
    result = build_verdicts(load_claims(), files, backbones, "fixture")
    return result, write_outputs(result, root / "verdicts")


def demo_like_page(root: Path) -> tuple[VerdictResult, list[Path]]:
    files = [write_run(root, "minilm", method, seed, noise, synthetic=True)
             for seed in (1, 2, 3) for method, noise in (("conpvp", 0.15), ("simcse", 0.6))]
    result = build_verdicts(load_claims(), files, {"minilm": {"stands_in_for": "bert-base"}}, "demo-like")
    return result, write_outputs(result, root / "verdicts")
