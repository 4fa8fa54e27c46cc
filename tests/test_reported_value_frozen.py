"""A published number, once read from reported.yaml, cannot be changed by a reader: ReportedValue is frozen (and so
hashable), as every table, caption and verdict reads the same object."""

from __future__ import annotations

import dataclasses

import pytest

from sentrepro.planning.reported import load_reported, reported_value


def test_a_read_published_number_is_frozen():
    value = reported_value(load_reported(), "conpvp_table3", "bert-base/SimCSE", "avg")
    assert value.value == 76.25
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.value = 99.0
    assert hash(value) == hash(dataclasses.replace(value))
