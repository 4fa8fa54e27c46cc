"""The papers' published numbers (reported.yaml): loading, validation and look-up of one cell.

reported.yaml holds one entry per published table (see its header for the fields). A table spec points
at an entry (``reported: conpvp_table3``) and each of its rows at a row key of that entry, or at a row
of another entry with ``"<entry>:<row key>"``. A look-up returns a :class:`ReportedValue` carrying the
number, the paper's std where it gives one, the footnote mark and where the number was read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sentrepro.yaml_files import read_validated_yaml

# Package data this module reads entry by entry (sentrepro.code.entry_data): in no code fingerprint; every rule
# importing us passes the entries its job reads (spec_entries) as params.data_entries.
PACKAGE_DATA_BY_ENTRY = ("reported.yaml",)
REPORTED_PATH = Path(__file__).resolve().parent / PACKAGE_DATA_BY_ENTRY[0]
ENTRY_FIELDS = {"paper", "file", "where", "statistic", "columns", "marks", "rows"}
ROW_FIELDS = {"line", "values", "std", "std_source", "mark", "note", "statistic"}


class ReportedError(ValueError):
    """reported.yaml is malformed, or a spec refers to an entry, row or column it does not have."""


@dataclass(frozen=True)
class ReportedValue:
    value: float | None
    std: float | None
    mark: str | None
    mark_meaning: str | None
    where: str          # "conpvp-paper.txt:104"
    entry: str          # "conpvp_table3"
    row: str            # "bert-base/SimCSE"
    note: str | None = None
    statistic: dict | None = None  # a row whose number is another statistic than its table's:
    #                                {"stat": "mean", "seeds": 10, "where": "file:line", "what": "..."}
    std_source: str | None = None  # where ``std`` was published when not in the paper text (repo, commit, file:line)


def validate_reported(data: dict, path: Path = REPORTED_PATH) -> dict:
    """Check every entry's fields and that each row has one value (and std) per column."""
    if not isinstance(data, dict):
        raise ReportedError(f"{path}: the top level must be a mapping of entries")
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise ReportedError(f"{path}: entry '{name}' must be a mapping")
        unknown = set(entry) - ENTRY_FIELDS
        missing = {"paper", "file", "where", "statistic", "columns", "rows"} - set(entry)
        if unknown or missing:
            raise ReportedError(f"{path}: entry '{name}': unknown fields {sorted(unknown)}, missing {sorted(missing)}")
        width = len(entry["columns"])
        for row, record in entry["rows"].items():
            where = f"{path}: {name}.rows['{row}']"
            if not isinstance(record, dict) or "values" not in record or "line" not in record:
                raise ReportedError(f"{where}: needs 'line' and 'values'")
            if set(record) - ROW_FIELDS:
                raise ReportedError(f"{where}: unknown fields {sorted(set(record) - ROW_FIELDS)}")
            for field in ("values", "std"):
                if field in record and len(record[field]) != width:
                    raise ReportedError(f"{where}.{field}: {len(record[field])} numbers for {width} columns")
                for value in record.get(field, []):
                    if value is not None and not isinstance(value, (int, float)):
                        raise ReportedError(f"{where}.{field}: '{value}' is not a number")
            statistic = record.get("statistic")
            if statistic is not None and (not isinstance(statistic, dict) or statistic.get("stat") != "mean"
                                          or not isinstance(statistic.get("seeds"), int)
                                          or set(statistic) - {"stat", "seeds", "where", "what"}):
                raise ReportedError(f"{where}.statistic: expected {{stat: mean, seeds: <int>, where, what}}")
            if "std_source" in record and "std" not in record:
                raise ReportedError(f"{where}: std_source without std")
            mark = record.get("mark")
            if mark is not None and mark not in entry.get("marks", {}):
                raise ReportedError(f"{where}: mark '{mark}' is not explained in {name}.marks")
    return data


def load_reported(path: Path = REPORTED_PATH) -> dict:
    """All entries of reported.yaml, validated (cached per path)."""
    return read_validated_yaml(str(path), validate_reported)


ENTRY_REFERENCE = re.compile(r"^([A-Za-z0-9_]+):(.+)$")


def resolve_row(reference: str, default_entry: str | None) -> tuple[str, str]:
    """``"entry:row"`` (entry: an identifier) or a bare row key of ``default_entry`` -> (entry, row).
    Row keys contain a "/" so a colon inside them ("This sentence : ...") is never read as an entry."""
    match = ENTRY_REFERENCE.match(reference)
    if match:
        return match.group(1), match.group(2)
    if default_entry is None:
        raise ReportedError(f"reported row '{reference}' names no entry and the spec has no 'reported' entry")
    return default_entry, reference


def spec_entries(spec: dict) -> list[str]:
    """The reported.yaml entries a table spec's cells read: each row's ``reported`` resolved as
    :func:`resolve_row` resolves it (the spec's own ``reported`` entry, or ``"<entry>:<row>"``)."""
    return sorted({resolve_row(row["reported"], spec.get("reported"))[0] for row in spec["rows"] if row.get("reported")})


class EntryReads(dict):
    """reported.yaml's entries (a copy), noting in ``read`` the name of every entry looked up: a reader run on
    it tells which entries it reads."""

    def __init__(self, entries: dict):
        super().__init__(entries)
        self.read: set[str] = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.read.add(name)
        return super().get(name, default)

    def __contains__(self, name):
        self.read.add(name)
        return super().__contains__(name)


def reported_value(reported: dict, entry: str, row: str, column: str) -> ReportedValue:
    """The published number of (entry, row, column); ReportedError naming what does not exist."""
    if entry not in reported:
        raise ReportedError(f"reported.yaml has no entry '{entry}' (entries: {', '.join(sorted(reported))})")
    table = reported[entry]
    if row not in table["rows"]:
        raise ReportedError(f"reported.yaml {entry} has no row '{row}' (rows: {'; '.join(table['rows'])})")
    if column not in table["columns"]:
        raise ReportedError(f"reported.yaml {entry} has no column '{column}' (columns: {', '.join(table['columns'])})")
    record = table["rows"][row]
    index = table["columns"].index(column)
    std = record.get("std")
    mark = record.get("mark")
    return ReportedValue(
        value=record["values"][index],
        std=None if std is None else std[index],
        mark=mark,
        mark_meaning=table.get("marks", {}).get(mark) if mark else None,
        where=f"{table['file']}:{record['line']}",
        entry=entry,
        row=row,
        note=record.get("note"),
        statistic=record.get("statistic"),
        std_source=record.get("std_source"),
    )
