# Input functions, params and targets of workflow/rules/verdicts.smk, which includes this file first.

from types import SimpleNamespace

from sentrepro.evaluation.item_scores import pairs_path
from sentrepro.verdicts.claims import claim_tables, load_claims


def verdict_targets():
    return [f"{EXP}/verdicts.{ext}" for ext in ("md", "csv", "html")]


def verdict_tables():
    return claim_tables(load_claims())


def verdict_entries() -> list[str]:
    """The reported.yaml entries the verdicts read: those of every table the claims name (each is built
    whole, and every published std of it sets a suite's spread)."""
    return sorted({e for name in verdict_tables() for e in spec_entries(load_table_spec(name))})


def verdict_metrics(w):
    """Every metrics file the claims' tables read (each once), as the table rule requests them."""
    files = set()
    for name in verdict_tables():
        files.update(table_metrics(SimpleNamespace(table=name)))
    return sorted(files)


def verdict_pair_scores(w):
    """The per-pair scores beside every STS metrics file the verdicts read (written by evaluate_sts)."""
    return [str(pairs_path(f)) for f in verdict_metrics(w) if Path(f).name == "sts.json"]
