"""The papers' comparative claims (src/sentrepro/verdicts/claims.yaml): loading, validation, sides.

Each claim names a table spec, a column and two sides (row labels of that table, or another table's
cell); the verdict builder reads both sides from the same metrics files the tables read. Validation
checks the fields, that every side is a row and column of its spec, and that ids are unique; the
quotes against the paper texts are checked by tests/test_claims.py (the texts live outside the
package). :func:`plan_problems` checks that a config's plan can produce every claim's cells (the
runs, the suite, the metric key), so a claim nothing can answer is caught before any run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentrepro.yaml_files import read_validated_yaml
from sentrepro.verdicts.stats import DIRECTIONS
from sentrepro.planning.table_specs import SpecError, load_spec

PACKAGE_DATA = ("claims.yaml",)  # read here; part of the code fingerprint of every rule importing this
CLAIMS_PATH = (Path(__file__).resolve().parent / PACKAGE_DATA[0]).resolve()
TOP_FIELDS = {"bootstrap", "claims", "not_checked"}
CLAIM_FIELDS = {"id", "paper", "file", "line", "quote", "text", "table", "column", "a", "b", "direction",
                "magnitude", "numbers", "paper_values", "note", "kind", "margin", "margin_why", "at_least",
                "inconsistency", "exact"}
REQUIRED = ("id", "paper", "file", "line", "quote", "text", "table", "column", "a", "b", "direction")
NOT_CHECKED_FIELDS = {"id", "file", "line", "quote", "why"}
BOOTSTRAP_FIELDS = {"item_resamples", "item_seed", "seed_resamples", "seed_seed", "level"}
NUMBER = re.compile(r"\d+\.\d+")


class ClaimsError(ValueError):
    """claims.yaml is malformed or refers to a table, row or column that does not exist."""


@dataclass(frozen=True)
class Side:
    """One side of a claim: a cell of a table spec (spec labels, before stand-in/synthetic suffixes)."""

    table: str
    row: str
    column: str

    def describe(self) -> str:
        return f"{self.table} | {self.row} | {self.column}"


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces (quotes are compared this way; the texts use tabs)."""
    return " ".join(text.split())


def _side(claim: dict, key: str, where: str) -> Side:
    value = claim[key]
    if isinstance(value, str):
        return Side(claim["table"], value, claim["column"])
    if isinstance(value, dict) and set(value) <= {"table", "row", "column"} and "row" in value:
        return Side(value.get("table", claim["table"]), value["row"], value.get("column", claim["column"]))
    raise ClaimsError(f"{where}.{key}: a row label or {{table, row[, column]}}, got {value!r}")


def sides(claim: dict) -> tuple[Side, Side]:
    where = f"{CLAIMS_PATH}: claim '{claim.get('id')}'"
    return _side(claim, "a", where), _side(claim, "b", where)


def _check_side(side: Side, where: str, specs: dict) -> None:
    if side.table not in specs:
        try:
            specs[side.table] = load_spec(side.table)
        except SpecError as exc:
            raise ClaimsError(f"{where}: {exc}") from exc
    spec = specs[side.table]
    rows = [r["label"] for r in spec["rows"]]
    columns = [c["label"] for c in spec["columns"]]
    if side.row not in rows:
        raise ClaimsError(f"{where}: table {side.table} has no row '{side.row}' (rows: {'; '.join(rows)})")
    if side.column not in columns:
        raise ClaimsError(f"{where}: table {side.table} has no column '{side.column}' (columns: {', '.join(columns)})")


def validate_claims(data: dict, path: Path = CLAIMS_PATH) -> dict:
    """Check fields, unique ids, directions, numbers in quotes and that every side is a spec cell."""
    if not isinstance(data, dict) or set(data) - TOP_FIELDS or "claims" not in data:
        raise ClaimsError(f"{path}: top level must be a mapping with 'claims' (allowed: {sorted(TOP_FIELDS)})")
    boot = data.get("bootstrap") or {}
    if set(boot) != BOOTSTRAP_FIELDS:
        raise ClaimsError(f"{path}: bootstrap needs exactly {sorted(BOOTSTRAP_FIELDS)}, has {sorted(boot)}")
    if boot["item_resamples"] < 1000:
        raise ClaimsError(f"{path}: bootstrap.item_resamples must be at least 1000")
    specs: dict[str, dict] = {}
    ids: set[str] = set()
    for index, claim in enumerate(data["claims"]):
        where = f"{path}: claims[{index}] ('{claim.get('id')}')"
        if not isinstance(claim, dict):
            raise ClaimsError(f"{where}: must be a mapping")
        unknown = set(claim) - CLAIM_FIELDS
        missing = [f for f in REQUIRED if f not in claim]
        if unknown or missing:
            raise ClaimsError(f"{where}: unknown fields {sorted(unknown)}, missing {missing}")
        if claim["id"] in ids:
            raise ClaimsError(f"{where}: duplicate id")
        ids.add(claim["id"])
        if claim["direction"] not in DIRECTIONS:
            raise ClaimsError(f"{where}: direction '{claim['direction']}' is not one of {', '.join(DIRECTIONS)}")
        if not isinstance(claim["line"], int) or claim["line"] < 1:
            raise ClaimsError(f"{where}: line must be a positive integer")
        quoted = set(NUMBER.findall(normalise(claim["quote"])))
        stated = ([claim["magnitude"]] if claim.get("magnitude") is not None else []) \
            + list(claim.get("numbers") or []) + list(claim.get("paper_values") or [])
        for number in stated:
            if not isinstance(number, (int, float)) or f"{number:.2f}" not in quoted:
                raise ClaimsError(f"{where}: number {number!r} is not in its quote {claim['quote']!r}")
        if claim["direction"] == "no_gain":
            if not isinstance(claim.get("margin"), (int, float)) or claim["margin"] < 0 or not claim.get("margin_why"):
                raise ClaimsError(f"{where}: a no_gain claim needs its equivalence 'margin' (>= 0) and 'margin_why'")
        elif "margin" in claim or "margin_why" in claim:
            raise ClaimsError(f"{where}: 'margin' is for no_gain claims ('at_least' for a minimum gain)")
        if "at_least" in claim and (claim["direction"] == "no_gain" or not isinstance(claim["at_least"], (int, float))
                                    or claim["at_least"] <= 0):
            raise ClaimsError(f"{where}: 'at_least' is a positive size for a greater/less claim")
        if "exact" in claim and not (isinstance(claim["exact"], str) and claim["exact"].strip()):
            raise ClaimsError(f"{where}: 'exact' says why both sides are exact population numbers (a sentence)")
        if claim.get("paper_values") is not None and len(claim["paper_values"]) != 2:
            raise ClaimsError(f"{where}: paper_values must be [a, b]")
        for side in sides(claim):
            _check_side(side, where, specs)
    for index, entry in enumerate(data.get("not_checked") or []):
        where = f"{path}: not_checked[{index}]"
        if set(entry) != NOT_CHECKED_FIELDS:
            raise ClaimsError(f"{where}: needs exactly {sorted(NOT_CHECKED_FIELDS)}")
        if entry["id"] in ids:
            raise ClaimsError(f"{where}: duplicate id '{entry['id']}'")
        ids.add(entry["id"])
    return data


def load_claims(path: Path = CLAIMS_PATH) -> dict:
    """claims.yaml, validated (cached per path)."""
    return read_validated_yaml(str(path), validate_claims)


def claim_tables(data: dict) -> list[str]:
    """Every table spec the claims read, sorted."""
    return sorted({side.table for claim in data["claims"] for side in sides(claim)})


def _producible_keys(config: dict, suite: str) -> set[str] | None:
    """The metric keys a suite writes under this config: its task or set list plus ``avg`` (every
    suite with a list averages it); None when the suite's keys are not a config list (any key)."""
    block = (config.get("evaluation") or {}).get(suite) or {}
    names = block.get("tasks") or block.get("sets")
    return None if names is None else set(names) | {"avg"}


def plan_problems(data: dict, config: dict) -> dict[str, str]:
    """claim id -> why the config's plan cannot produce or cannot decide it (none: every claim decidable).

    Produce: a reported-only side needs a published number (it is tested as that constant); any other
    side needs a planned run filling its cell (:func:`sentrepro.planning.table_cells.unfilled_cells`: the runs,
    the suite enabled with its ``runs`` filter, stand-ins included) and a metric key the suite writes.
    Decide (the verdict builder's rule, :mod:`sentrepro.verdicts.build`): a trained side needs at least
    :data:`sentrepro.verdicts.stats.MIN_SEEDS` planned seeds (at most the spec's ``max_seeds`` are read); two
    constants need an interval that is not over seeds: per-item STS scores on both deterministic sides
    (paired bootstrap) or an ``exact`` claim; a deterministic side against a published number needs
    its per-item STS scores; two published numbers never decide.
    """
    from sentrepro.planning import registry
    from sentrepro.planning.evaluations import enabled_suites, suite_runs
    from sentrepro.planning.matrix import runs
    from sentrepro.verdicts.stats import MIN_SEEDS
    from sentrepro.tables.build import paper_value
    from sentrepro.planning.table_cells import stands_in_for, table_inputs, unfilled_cells
    from sentrepro.planning.reported import load_reported
    from sentrepro.planning.table_specs import cell_selector

    reported = load_reported()
    all_runs = runs(config)
    enabled = set(enabled_suites(config))

    def planned(suite):
        return suite_runs(config, suite) if suite in enabled else []

    unfilled: dict[str, set] = {}
    inputs: dict[str, list] = {}
    problems: dict[str, str] = {}
    for claim in data["claims"]:
        why, kinds = [], []
        for side in sides(claim):
            spec = load_spec(side.table)
            row = next(r for r in spec["rows"] if r["label"] == side.row)
            column = next(c for c in spec["columns"] if c["label"] == side.column)
            selector = cell_selector(spec, row, column)
            if row.get("reported_only"):
                paper = paper_value(reported, spec, row, column, selector["key"])
                if paper is None or paper.value is None:
                    why.append(f"{side.describe()}: reported only and the paper prints no number")
                kinds.append(("published", selector["suite"]))
                continue
            if side.table not in unfilled:
                unfilled[side.table] = set(unfilled_cells(spec, all_runs, config["backbones"], planned))
                inputs[side.table] = table_inputs(spec, all_runs, config["backbones"], planned)
            cell = (selector["backbone"], selector["method"], selector["suite"])
            if cell in unfilled[side.table]:
                why.append(f"{side.describe()}: no planned run of {cell[1]} on {cell[0]} gets suite {cell[2]}")
                kinds.append((None, selector["suite"]))
            else:
                kinds.append(_planned_kind(side, cell, inputs[side.table], config, registry, stands_in_for,
                                           MIN_SEEDS, why))
            keys = _producible_keys(config, selector["suite"])
            if keys is not None and selector["key"] not in keys:
                why.append(f"{side.describe()}: suite {selector['suite']} writes no '{selector['key']}' "
                           f"(it writes {', '.join(sorted(keys))})")
        if not why:
            why += _undecidable_constants(claim, kinds)
        if why:
            problems[claim["id"]] = "; ".join(why)
    return problems


def _planned_kind(side: Side, cell: tuple, planned: list, config: dict, registry, stands_in_for, min_seeds: int,
                  why: list) -> tuple[str, str]:
    """("trained" or "deterministic", suite) of a planned cell; a trained cell with fewer than
    ``min_seeds`` planned seeds adds its problem to ``why``."""
    backbone, method, suite = cell
    seeds = {run.seed for run, s in planned
             if run.method == method and s == suite
             and (run.backbone == backbone or backbone in stands_in_for(config["backbones"].get(run.backbone, {})))}
    if not registry.method(config["methods"][method]["kind"]).trains:
        return "deterministic", suite
    if len(seeds) < min_seeds:
        why.append(f"{side.describe()}: trained with {len(seeds)} planned seed(s), the verdict needs at least "
                   f"{min_seeds}")
    return "trained", suite


def _undecidable_constants(claim: dict, kinds: list[tuple[str, str]]) -> list[str]:
    """Why a claim with no trained side has no interval on this plan (empty when it has one)."""
    names = [k for k, _ in kinds]
    if "trained" in names:
        return []
    if names == ["published", "published"]:
        return ["both sides are published numbers: nothing of ours to test"]
    if names == ["deterministic", "deterministic"]:
        if claim.get("exact") or all(s == "sts" for _, s in kinds):
            return []
        return ["two deterministic sides without per-item scores (suite "
                f"{', '.join(sorted({s for _, s in kinds}))}) and not 'exact': no interval can decide"]
    ours = next(s for k, s in kinds if k == "deterministic")
    if ours == "sts":
        return []
    return [f"a deterministic {ours} number against a published one: no per-item scores, no interval"]
