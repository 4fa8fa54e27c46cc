"""Table specs (specs/<name>.yaml): one declarative file per paper table, validated on load.

A spec says which metrics feed each cell and how seeds are combined; it names no file. Each cell is
the merge of its row's and its column's *selector* fields:

    backbone  the paper backbone (config.yaml name; a config backbone with ``stands_in_for`` fills it)
    method    the config.yaml method name
    suite     the evaluation suite whose metrics file holds the number (sts, transfer, clustering, ...)
    key       the metric inside that file's ``results`` (a dotted path for nested results)
    stat      a seed statistic forced for this column (mean, std, max, min, range, best)

A column may also set ``reported_column`` (the reported.yaml column it compares with; default its key,
``null`` for a column the paper does not print). A row sets ``label`` (unique: the CSV row and the
audit's handle), ``group`` (a section heading) and ``reported`` (its reported.yaml row).

A row sets what its cells share (usually backbone + method), a column the rest (usually the key); in
transposed tables (PromptBERT Knowl 5 and 9) the columns carry the backbone. A field set by both is a
spec error. Top-level ``suite`` and ``key`` are defaults. A row without ``method`` must say why in
``reported_only`` (a method the papers copied from other work that this workflow does not run).

Top level: name, paper, title, statistic (best-of-n | mean: the headline seed statistic), select_by
(the metric best-of-n ranks seeds by), max_seeds (use at most the N lowest seeds), reported (default
reported.yaml entry), suite, key, columns, rows, notes, digits (decimals shown, default 2; the paper's own,
e.g. 4 for PromptBERT Knowl 4's cosines).
"""

from __future__ import annotations

from pathlib import Path

from sentrepro.yaml_files import parse_yaml

from sentrepro.planning.reported import ENTRY_REFERENCE

# Package data this module reads (sentrepro.code.codedeps adds it to the code of every rule importing us).
PACKAGE_DATA = ("specs/*.yaml",)
SPECS_DIR = Path(__file__).resolve().parent / Path(PACKAGE_DATA[0]).parent
STATISTICS = ("best-of-n", "mean")
STATS = ("mean", "std", "max", "min", "range", "best")
SELECTOR_FIELDS = ("backbone", "method", "suite", "key", "stat")
TOP_FIELDS = {"name", "paper", "title", "statistic", "select_by", "max_seeds", "reported", "suite", "key",
              "columns", "rows", "notes", "averages", "digits"}
ROW_FIELDS = {"label", "group", "backbone", "method", "suite", "key", "reported", "reported_only"}
COLUMN_FIELDS = {"label", "backbone", "method", "suite", "key", "stat", "reported_column", "averages"}
# The metric key of an aggregate (the suites' "avg": a plain mean over tasks). A cell of it is filled
# only when the run has every metric it averages (averaged_keys), so that an average over some
# columns is never set beside the paper's average over all of them.
AGGREGATE_KEY = "avg"


class SpecError(ValueError):
    """A table spec is malformed; the message names the file and the key at fault."""


def spec_path(name: str) -> Path:
    return SPECS_DIR / f"{name}.yaml"


def available_specs() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.yaml"))


def load_spec(name: str, methods=None) -> dict:
    """Load and validate ``specs/<name>.yaml``; ``methods``: the config's method names, when a config is
    at hand (every method the spec reads must be one of them)."""
    path = spec_path(name)
    if not path.exists():
        raise SpecError(f"no table spec '{name}' ({path}); specs: {', '.join(available_specs())}")
    with open(path, encoding="utf-8") as handle:
        spec = parse_yaml(handle)
    return validate_spec(spec, path, methods)


def _unknown(mapping: dict, allowed: set, where: str) -> None:
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")


def validate_spec(spec: dict, path: Path, methods=None) -> dict:
    """Check a spec's structure and the names it uses (:func:`check_names`); every error names ``path``
    and the offending key."""
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: the top level must be a mapping")
    _unknown(spec, TOP_FIELDS, str(path))
    for required in ("name", "paper", "title", "statistic", "columns", "rows"):
        if required not in spec:
            raise SpecError(f"{path}: missing '{required}'")
    if spec["name"] != path.stem:
        raise SpecError(f"{path}: name '{spec['name']}' differs from the file name '{path.stem}'")
    if spec["statistic"] not in STATISTICS:
        raise SpecError(f"{path}: statistic '{spec['statistic']}' is not one of {', '.join(STATISTICS)}")
    digits = spec.get("digits", 2)
    if not isinstance(digits, int) or isinstance(digits, bool) or not 0 <= digits <= 6:
        raise SpecError(f"{path}: digits must be an integer from 0 to 6, got {digits!r}")
    max_seeds = spec.get("max_seeds")
    if max_seeds is not None and (not isinstance(max_seeds, int) or max_seeds < 1):
        raise SpecError(f"{path}: max_seeds must be a positive integer, got {max_seeds!r}")
    labels: set[str] = set()
    for index, column in enumerate(spec["columns"]):
        where = f"{path}: columns[{index}]"
        _unknown(column, COLUMN_FIELDS, where)
        if "label" not in column:
            raise SpecError(f"{where}: missing 'label'")
        if column.get("stat") is not None and column["stat"] not in STATS:
            raise SpecError(f"{where}: stat '{column['stat']}' is not one of {', '.join(STATS)}")
        if column["label"] in labels:
            raise SpecError(f"{where}: duplicate column label '{column['label']}'")
        labels.add(column["label"])
    labels = set()
    for index, row in enumerate(spec["rows"]):
        where = f"{path}: rows[{index}]"
        _unknown(row, ROW_FIELDS, where)
        if "label" not in row:
            raise SpecError(f"{where}: missing 'label'")
        if row["label"] in labels:
            raise SpecError(f"{where}: duplicate row label '{row['label']}'")
        labels.add(row["label"])
        if row.get("method") is None and not row.get("reported_only"):
            raise SpecError(f"{where} ('{row['label']}'): no method; say why in 'reported_only'")
        if row.get("method") is not None and row.get("reported_only"):
            raise SpecError(f"{where} ('{row['label']}'): has a method and 'reported_only'; choose one")
        if row.get("reported_only") and not row.get("reported"):
            raise SpecError(f"{where} ('{row['label']}'): reported_only rows need 'reported'")
        if row.get("reported") and not ENTRY_REFERENCE.match(row["reported"]) and not spec.get("reported"):
            raise SpecError(f"{where}: reported '{row['reported']}' names no entry and the spec has no 'reported'")
        for column in spec["columns"]:
            both = [f for f in SELECTOR_FIELDS if f in row and f in column]
            if both:
                raise SpecError(f"{where} ('{row['label']}') and column '{column['label']}' both set {', '.join(both)}")
            if not row.get("reported_only"):
                selector = cell_selector(spec, row, column)
                for needed in ("backbone", "method", "suite", "key"):
                    if selector.get(needed) is None:
                        raise SpecError(f"{where} ('{row['label']}'), column '{column['label']}': no {needed} "
                                        f"(set it on the row, the column or the top level)")
    if spec["statistic"] == "best-of-n" and not spec.get("select_by"):
        raise SpecError(f"{path}: statistic best-of-n needs 'select_by' (the metric seeds are ranked by)")
    for column in spec["columns"]:
        if cell_selector(spec, {}, column).get("key") == AGGREGATE_KEY or \
                any(cell_selector(spec, row, column).get("key") == AGGREGATE_KEY for row in spec["rows"]):
            suite = cell_selector(spec, {}, column).get("suite")
            if not averaged_keys(spec, column, suite):
                raise SpecError(f"{path}: column '{column['label']}' is an aggregate ({AGGREGATE_KEY}) but no "
                                "other column of its suite says what it averages; set 'averages: [keys]'")
    check_names(spec, path, methods)
    return spec


def _places(spec: dict):
    """(where, mapping) of every place a selector field may be set: the top level, each row and column."""
    yield "", spec
    for kind in ("rows", "columns"):
        for index, item in enumerate(spec[kind]):
            yield f"{kind}[{index}].", item


def check_names(spec: dict, path: Path, methods=None) -> None:
    """Every name the spec uses must exist, so that a typo is an error and never an empty table: each
    ``suite`` is a registered evaluation suite; each ``method`` (when ``methods``, the config's method
    names, is given) a config method; each row's ``reported`` an entry and row of reported.yaml, and each
    column a column of that entry (its ``reported_column``, else its metric key; ``reported_column: null``
    for a column the paper does not print)."""
    from sentrepro.planning import registry
    from sentrepro.planning.reported import ReportedError, load_reported, resolve_row

    suites = registry.suites()
    for where, place in _places(spec):
        if place.get("suite") is not None and place["suite"] not in suites:
            raise SpecError(f"{path}: {where}suite: '{place['suite']}' is no evaluation suite "
                            f"(known: {', '.join(suites)})")
        if methods is not None and place.get("method") is not None and place["method"] not in methods:
            raise SpecError(f"{path}: {where}method: '{place['method']}' is no method of the config "
                            f"(known: {', '.join(methods)})")
    reported = load_reported()
    entries: list[str] = []
    for index, row in enumerate(spec["rows"]):
        if not row.get("reported"):
            continue
        try:
            entry, row_key = resolve_row(row["reported"], spec.get("reported"))
        except ReportedError as exc:
            raise SpecError(f"{path}: rows[{index}].reported: {exc}") from None
        if entry not in reported or row_key not in reported[entry]["rows"]:
            raise SpecError(f"{path}: rows[{index}].reported: '{row['reported']}' is no row of reported.yaml "
                            f"entry '{entry}'")
        entries.append(entry)
    columns = {c for entry in entries for c in reported[entry]["columns"]}
    for number, column in enumerate(spec["columns"] if entries else []):
        field = "reported_column" if "reported_column" in column else "key"
        wanted = column.get(field) if field == "reported_column" else cell_selector(spec, {}, column).get("key")
        if wanted is not None and wanted not in columns:
            raise SpecError(f"{path}: columns[{number}].{field}: '{wanted}' is no column of the reported.yaml "
                            f"entries its rows compare with ({', '.join(sorted(set(entries)))}: "
                            f"{', '.join(sorted(columns))}); reported_column: null for a column the paper "
                            "does not print")


def cell_selector(spec: dict, row: dict, column: dict) -> dict:
    """The merged selector of one cell: backbone, method, suite, key, stat."""
    selector = {"suite": spec.get("suite"), "key": spec.get("key"), "stat": None}
    for source in (row, column):
        for field in SELECTOR_FIELDS:
            if field in source:
                selector[field] = source[field]
    return selector


def averaged_keys(spec: dict, column: dict, suite: str | None) -> list[str]:
    """The metric keys an aggregate cell averages: the column's ``averages``, else the spec's, else the
    keys of the table's other columns of the same suite (the paper's Avg. averages its other columns)."""
    if column.get("averages"):
        return list(column["averages"])
    if spec.get("averages"):
        return list(spec["averages"])
    keys = []
    for other in spec["columns"]:
        selector = cell_selector(spec, {}, other)
        if selector.get("key") not in (None, AGGREGATE_KEY) and selector.get("suite") == suite \
                and not other.get("stat") and selector["key"] not in keys:
            keys.append(selector["key"])
    return keys


def spec_methods(spec: dict) -> set[str]:
    """Every config method name the spec reads metrics of."""
    found = set()
    for row in spec["rows"]:
        if row.get("reported_only"):
            continue
        for column in spec["columns"]:
            found.add(cell_selector(spec, row, column)["method"])
    return found
