"""reported.yaml's validator (planning/reported.py validate_reported) and ReportedValue pinned on small
hand-made entries: each check raises on exactly the malformed record it names, with the record's location."""

import dataclasses
from pathlib import Path

import pytest

from sentrepro.planning.reported import ReportedError, ReportedValue, validate_reported

P = Path("rep.yaml")


def entry(**rows):
    return {"paper": "p", "file": "f.txt", "where": "Table 1", "statistic": "mean",
            "columns": ["A", "B"], "marks": {"*": "footnote"}, "rows": rows}


def test_a_good_entry_is_returned_unchanged():
    data = {"e": entry(**{"m/x": {"line": 3, "values": [1.0, None], "std": [0.1, 0.2], "std_source": "repo",
                                  "mark": "*", "statistic": {"stat": "mean", "seeds": 5, "where": "w", "what": "x"}}})}
    assert validate_reported(data, P) is data


def test_an_unknown_entry_field_alone_is_refused():
    data = {"e": {**entry(**{"m/x": {"line": 1, "values": [1, 2]}}), "extra": 1}}
    with pytest.raises(ReportedError, match=r"unknown fields \['extra'\], missing \[\]"):
        validate_reported(data, P)


def test_a_missing_entry_field_alone_is_refused():
    e = entry(**{"m/x": {"line": 1, "values": [1, 2]}})
    del e["where"]
    with pytest.raises(ReportedError, match=r"unknown fields \[\], missing \['where'\]"):
        validate_reported({"e": e}, P)


def test_a_record_that_is_no_mapping_is_refused_even_holding_the_keys():
    with pytest.raises(ReportedError, match=r"^rep\.yaml: e\.rows\['m/x'\]: needs 'line' and 'values'$"):
        validate_reported({"e": entry(**{"m/x": ["values", "line"]})}, P)


def test_values_of_the_wrong_width_are_refused_with_the_location():
    with pytest.raises(ReportedError, match=r"^rep\.yaml: e\.rows\['m/x'\]\.values: 1 numbers for 2 columns$"):
        validate_reported({"e": entry(**{"m/x": {"line": 1, "values": [1]}})}, P)


def test_std_of_the_wrong_width_is_refused():
    with pytest.raises(ReportedError, match=r"^rep\.yaml: e\.rows\['m/x'\]\.std: 3 numbers for 2 columns$"):
        validate_reported({"e": entry(**{"m/x": {"line": 1, "values": [1, 2], "std": [1, 2, 3]}})}, P)


def test_a_statistic_other_than_a_mean_is_refused():
    rec = {"line": 1, "values": [1, 2], "statistic": {"stat": "median", "seeds": 5}}
    with pytest.raises(ReportedError, match=r"\.statistic: expected"):
        validate_reported({"e": entry(**{"m/x": rec})}, P)


def test_std_source_without_std_is_refused():
    rec = {"line": 1, "values": [1, 2], "std_source": "repo"}
    with pytest.raises(ReportedError, match="std_source without std"):
        validate_reported({"e": entry(**{"m/x": rec})}, P)


def test_an_unexplained_mark_is_refused():
    rec = {"line": 1, "values": [1, 2], "mark": "+"}
    with pytest.raises(ReportedError, match=r"mark '\+' is not explained in e\.marks"):
        validate_reported({"e": entry(**{"m/x": rec})}, P)


def test_reported_value_is_frozen_and_its_optional_fields_default_to_none():
    v = ReportedValue(1.0, None, None, None, "f.txt:1", "e", "m/x")
    assert v.note is None and v.statistic is None and v.std_source is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.value = 2.0
