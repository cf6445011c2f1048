"""Repeats said once in value answers (issue 38.4): shared references read back to the very same value.

The fixture is a real GitHub code-scanning alert list (tests/data/repeats/SOURCES.md): five alerts,
two rules, each rule (with its whole help text) repeated in every alert that raised it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pflow_structure.render.fields_text import render_fields_text
from pflow_structure.render.shared import LEGEND, expand_shared, share_repeats
from pflow_structure.service import store_outputs
from pflow_structure.service.answers import read_fields_text_call
from tests.conftest import REPO, examples

ALERTS_FILE = REPO / "tests" / "data" / "repeats" / "github_code_scanning_alerts.json"


def alerts() -> Any:
    return json.loads(Path(ALERTS_FILE).read_text(encoding="utf-8"))


def exact(value: Any) -> str:
    """JSON text that tells 1 from 1.0 and true, and keeps key order."""
    return json.dumps(value, ensure_ascii=False)


def test_each_repeated_object_becomes_a_reference_to_its_first_occurrence() -> None:
    shared, count = share_repeats(alerts(), "result")
    assert count == 4  # three rules and one message repeated
    assert [alert["rule"] for alert in shared[1:] if isinstance(alert["rule"], str)] == [
        "=result[0].rule",
        "=result[2].rule",
        "=result[2].rule",
    ]
    assert shared[1]["most_recent_instance"]["message"] == "=result[0].most_recent_instance.message"
    assert shared[2]["rule"]["id"] == "js/shell-command-injection-from-environment"


def test_the_shared_alert_list_expands_to_exactly_the_original() -> None:
    original = alerts()
    shared, _ = share_repeats(original, "result")
    assert exact(expand_shared(shared, "result")) == exact(original)


def test_a_page_refers_to_items_by_their_index_in_the_whole_list() -> None:
    page = alerts()[2:]
    shared, _ = share_repeats(page, "result", first_index=2)
    assert shared[1]["rule"] == "=result[2].rule"
    assert exact(expand_shared(shared, "result", first_index=2)) == exact(page)


def test_a_wildcard_read_refers_to_each_item_by_its_own_path() -> None:
    rules = [alert["rule"] for alert in alerts()][2:]
    shared, count = share_repeats(rules, "result[*].rule", first_index=2)
    assert (count, shared[1:]) == (2, ["=result[2].rule", "=result[2].rule"])
    assert exact(expand_shared(shared, "result[*].rule", first_index=2)) == exact(rules)


def test_a_jsonpath_read_is_not_shared() -> None:
    rules = [alert["rule"] for alert in alerts()]
    assert share_repeats(rules, "$..rule") == (rules, 0)


def test_a_value_holding_a_string_that_starts_with_the_marker_is_left_as_it_is() -> None:
    value = [{"formula": "=SUM(A1:A3)", "rule": {"help": "x" * 100}}, {"rule": {"help": "x" * 100}}]
    assert share_repeats(value, "result") == (value, 0)


def test_an_object_shorter_than_a_reference_is_worth_is_repeated() -> None:
    value = [{"tool": {"name": "CodeQL", "guid": None}}, {"tool": {"name": "CodeQL", "guid": None}}]
    assert share_repeats(value, "result") == (value, 0)


def test_equal_objects_that_differ_in_json_are_not_shared() -> None:
    one, other = {"n": 1, "pad": "x" * 90}, {"n": 1.0, "pad": "x" * 90}  # equal in Python, not in JSON
    assert share_repeats([one, other], "result") == ([one, other], 0)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(100), deadline=None)  # a loaded CI machine must not fail it on time alone
@given(json_values, st.sampled_from(["", "result", 'data["a b"]']))
def test_any_value_doubled_reads_back_exactly_after_sharing(value: Any, root: str) -> None:
    doubled = {"a": [value, value], "b": value}
    shared, count = share_repeats(doubled, root, min_chars=1)
    if count:
        assert exact(expand_shared(shared, root)) == exact(doubled)
    else:
        assert shared is doubled


def test_the_text_answer_states_each_rule_once_under_one_legend_line_and_reads_back() -> None:
    original = alerts()
    text = render_fields_text({"result": original}, max_items=None)
    legend, line = text.split("\n")
    assert legend == LEGEND
    assert line.count('"help"') == 2  # two rules, each stated once
    assert exact(expand_shared(json.loads(line.removeprefix("result: ")), "result")) == exact(original)


def test_the_json_format_stays_plain_json_and_the_text_format_shares() -> None:
    described = store_outputs("mcp:list_alerts", {}, {"result": alerts()})
    execution_id = described["execution_id"]
    as_json = read_fields_text_call(execution_id, ["result"], "json", max_tokens=50_000)
    as_text = read_fields_text_call(execution_id, ["result"], "text", max_tokens=50_000)
    assert json.loads(as_json.text) == {"result": alerts()}
    assert as_text.text.startswith(LEGEND + "\nresult: ")
