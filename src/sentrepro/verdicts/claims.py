"""The papers' comparative claims (src/sentrepro/tables/claims.yaml): loading, validation, sides.

Each claim names a table spec, a column and two sides (row labels of that table, or another table's
cell); the verdict builder reads both sides from the same metrics files the tables read. Validation
checks the fields, that every side is a row and column of its spec, and that ids are unique; the
quotes against the paper texts are checked by tests/test_claims.py (the texts live outside the
package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentrepro.fsutil import read_validated_yaml
from sentrepro.stats import DIRECTIONS
from sentrepro.tables.spec import SpecError, load_spec

PACKAGE_DATA = ("../tables/claims.yaml",)  # read here; part of the code fingerprint of every rule importing this
CLAIMS_PATH = (Path(__file__).resolve().parent / PACKAGE_DATA[0]).resolve()
TOP_FIELDS = {"noise", "bootstrap", "claims", "not_checked"}
CLAIM_FIELDS = {"id", "paper", "file", "line", "quote", "text", "table", "column", "a", "b", "direction",
                "magnitude", "numbers", "paper_values", "note", "kind"}
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
    noise = data.get("noise") or {}
    if not isinstance(noise.get("default_std"), (int, float)) or not noise.get("source"):
        raise ClaimsError(f"{path}: noise needs a numeric 'default_std' and its 'source'")
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
