"""The ``senteval`` layout (SimCSE's senteval.tar, SentEval's data/downstream tree) read whole from the real files,
through the registry as `sentrepro check` reads it: every STS and transfer set, with the sizes the benchmarks
publish (docs/evaluation-and-data.md), and the Moses-tokenized text variant the layout implies."""

from __future__ import annotations

from sentrepro.data import benchmarks
from sentrepro.data.benchmarks import TEXT_VARIANTS
from sentrepro.data.check import text_variant

# sizes as published: STS12-16 test pairs (STS13 without SMT), STS-B and SICK splits, transfer items per file
TOTALS = {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186}
SPLITS = {"STSBenchmark": {"train": 5749, "dev": 1500, "test": 1379},
          "SICKRelatedness": {"train": 4500, "dev": 500, "test": 4927},
          "SST2": {"train": 67349, "dev": 872, "test": 1821}, "TREC": {"train": 5452, "test": 500},
          "MRPC": {"train": 4076, "test": 1725}}
BINARY = {"MR": 10662, "CR": 3775, "SUBJ": 10000, "MPQA": 10606}
CLASSES = {"MR": 2, "CR": 2, "SUBJ": 2, "MPQA": 2, "SST2": 2, "TREC": 6, "MRPC": 2}


def test_the_senteval_layout_reads_every_sts_and_transfer_set_of_the_real_tree(shared_data):
    layout = benchmarks.layouts()["senteval"]
    variant = text_variant("senteval", {"layout": "senteval"})  # implied by the layout, as config.yaml says it
    assert variant == "senteval" and "Moses" in TEXT_VARIANTS[variant]
    assert layout.holds_sts
    found = layout.read(shared_data / "senteval", variant, True)  # counts checked against the units' tables
    assert list(found) == [*TOTALS, "STSBenchmark", "SICKRelatedness", *BINARY, "SST2", "TREC", "MRPC"]
    for name, total in TOTALS.items():
        assert found[name]["family"] == "sts" and found[name]["parts"]["test"] == total
    for name, parts in SPLITS.items():
        assert found[name]["parts"] == parts
    for name, total in BINARY.items():
        assert found[name]["family"] == "transfer" and found[name]["parts"]["all"] == total
    assert {name: found[name]["classes"] for name in CLASSES} == CLASSES
    assert found["STSBenchmark"]["family"] == found["SICKRelatedness"]["family"] == "sts"
