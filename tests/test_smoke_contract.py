"""Small, exact examples of structure inference, each checked against the contract."""

from __future__ import annotations

from pflow_structure.structure import infer_structure
from tests.contract import assert_structure_reads_back


def test_statistics_cover_every_list_item_not_item_zero() -> None:
    outputs = {"result": [{"title": "a"}, {"title": "bcd", "milestone": {"title": "v1"}}]}
    inferred = infer_structure(outputs)
    assert inferred.structure == {
        "result": {"type": "list", "length": 2},
        "result[0].title": {"type": "str", "avg_length": 2},
        "result[0].milestone": {"type": "dict", "present": 1, "of": 2},
        "result[0].milestone.title": {"type": "str", "avg_length": 2},
    }
    assert inferred.field_count == 2
    assert_structure_reads_back(outputs, inferred.structure)
