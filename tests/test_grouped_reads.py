"""Reads that name their nodes and keep their parents (issue 36.2), and pages that fill the budget (35.3).

On examples/data/github_issues.json: 100 issues, 35 label names over 21 issues, 13 open issues of
which one has a milestone.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pflow_structure.errors import ParameterError
from pflow_structure.service import read_fields, reading, store_outputs
from pflow_structure.service.reading import read_fields_detailed
from pflow_structure.settings import Settings
from tests.conftest import EXAMPLES_DATA, cli_runner

ISSUES = json.loads((EXAMPLES_DATA / "github_issues.json").read_text(encoding="utf-8"))
LABELS = [[label["name"] for label in issue["labels"]] for issue in ISSUES]
OPEN = [issue for issue in ISSUES if issue["state"] == "open"]


@pytest.fixture
def issues() -> str:
    return str(store_outputs("read-json", {}, ISSUES)["execution_id"])


def test_two_wildcards_answer_one_list_per_issue_with_the_empty_ones_kept(issues: str) -> None:
    values = read_fields(issues, ["result[*].labels[*].name"])["result[*].labels[*].name"]
    assert (len(values), sum(map(len, values)), values.count([])) == (100, 35, 79)
    assert values == LABELS


def test_jsonpath_with_two_wildcards_groups_as_the_template_path_does(issues: str) -> None:
    values = read_fields(issues, ["$.result[*].labels[*].name", "$.result[?@.state=='open'].labels[*].name"])
    assert values["$.result[*].labels[*].name"] == LABELS
    assert values["$.result[?@.state=='open'].labels[*].name"] == [
        [label["name"] for label in issue["labels"]] for issue in OPEN
    ]


@pytest.mark.parametrize(
    ("names", "first"),
    [("template", "result[2].labels[0].name"), ("normalized", "$['result'][2]['labels'][0]['name']")],
)
def test_names_answer_each_value_with_its_concrete_path(issues: str, names: str, first: str) -> None:
    readout = read_fields_detailed(issues, ["result[*].labels[*].name"], names=names)
    pairs = readout.values["result[*].labels[*].name"]
    assert (len(pairs), readout.totals["result[*].labels[*].name"], pairs[0]) == (35, 35, {first: "workflow"})
    assert [value for pair in pairs for value in pair.values()] == [name for group in LABELS for name in group]


def test_filtered_paths_line_up_item_by_item(issues: str) -> None:
    paths = ["result[?(@.state=='open')].number", "result[?(@.state=='open')].milestone.title"]
    readout = read_fields_detailed(issues, paths)
    numbers, titles = readout.values[paths[0]], readout.values[paths[1]]
    assert numbers == [issue["number"] for issue in OPEN]
    assert titles == [(issue["milestone"] or {}).get("title") for issue in OPEN]
    assert (len(titles), readout.missing[paths[1]]) == (13, 12)


def test_an_empty_filter_says_how_many_items_it_tested_and_the_near_key(issues: str) -> None:
    readout = read_fields_detailed(issues, ["$.result[?@.stat=='open'].number", "$.result[?@.number>500].number"])
    assert readout.errors == {
        "$.result[?@.stat=='open'].number": "$.result[?@.stat=='open'].number: the filter [?@['stat'] == 'open'] "
        "tested 100 items and none matched. No item has the key 'stat'. Near keys: state.",
        "$.result[?@.number>500].number": "$.result[?@.number>500].number: the filter [?@['number'] > 500] "
        "tested 100 items and none matched.",
    }


def test_names_must_be_template_or_normalized(issues: str) -> None:
    with pytest.raises(ParameterError, match="names must be template or normalized, not 'dotted'"):
        read_fields_detailed(issues, ["result[*].number"], names="dotted")


def test_read_fields_answers_all_100_numbers_in_one_call(issues: str) -> None:
    from pflow_structure.cli import main

    outcome = cli_runner().invoke(main, ["read-fields", issues, "result[*].number"])
    numbers = [issue["number"] for issue in ISSUES]
    assert outcome.output == f"result[*].number: {json.dumps(numbers)}\n"


def test_names_on_the_command_line_print_a_line_per_value(issues: str) -> None:
    from pflow_structure.cli import main

    outcome = cli_runner().invoke(main, ["read-fields", issues, "result[*].labels[*].name", "--names", "template"])
    lines = outcome.output.splitlines()
    assert (lines[0], lines[1], len(lines)) == (
        "result[*].labels[*].name:",
        '  result[2].labels[0].name: "workflow"',
        36,
    )


def test_mcp_read_fields_answers_all_100_numbers_and_names_its_nodes(issues: str) -> None:
    from pflow_structure.mcp.server import answer_read_fields

    settings = Settings.from_env()

    def call(**arguments: Any) -> Any:
        result = asyncio.run(answer_read_fields({"execution_id": issues, **arguments}, settings))
        return json.loads(result["content"][0]["text"])

    assert call(field_paths=["result[*].number"]) == {"result[*].number": [issue["number"] for issue in ISSUES]}
    named = call(field_paths=["$.result[?@.number==52].title"], names="normalized")
    assert named == {"$.result[?@.number==52].title": [{"$['result'][98]['title']": ISSUES[98]["title"]}]}


def test_json_on_the_command_line_names_the_node_of_each_value_under_paths(issues: str) -> None:
    from pflow_structure.cli import main

    paths = ["result[*].labels[*].name", "result[?(@.state=='open')].milestone.title", "result[0].number"]
    outcome = cli_runner().invoke(main, ["read-fields", issues, *paths, "--json", "--limit", "5"])
    answer = json.loads(outcome.output)
    assert answer["_paths"] == {
        paths[0]: [[], [], ["result[2].labels[0].name"], [], ["result[4].labels[0].name", "result[4].labels[1].name"]],
        paths[1]: ["result[1]", "result[2]", "result[5]", "result[6]", "result[7]"],
    }


def test_a_read_of_the_whole_output_too_large_to_show_reads_on_by_its_keys(issues: str) -> None:
    from pflow_structure.cli import main

    outcome = cli_runner().invoke(main, ["read-fields", issues, "$", "--json"])
    assert json.loads(outcome.output)["_more"]["$"] == {
        "shown": "item 0 of 1 alone is larger than this answer's share",
        "next": {"execution_id": issues, "field_paths": ["result"]},
    }


@pytest.fixture
def counted_up_to_8(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of a JSONPath read counts its matches up to 8 (10,000 in use) and says "at least" past it."""
    monkeypatch.setattr(reading, "COUNTED_MATCHES", 8)


def test_a_page_counts_every_match_when_there_are_few(issues: str) -> None:
    readout = read_fields_detailed(issues, ["$..number"], offset=3, limit=5)
    assert (readout.values["$..number"], f"{readout.totals['$..number']}") == (
        [issue["number"] for issue in ISSUES[3:8]],
        "116",  # 100 issues and 16 milestones
    )


@pytest.mark.usefixtures("counted_up_to_8")
def test_a_page_of_a_descendant_path_stops_past_the_page_and_says_at_least(issues: str) -> None:
    readout = read_fields_detailed(issues, ["$..number"], offset=3, limit=5)
    total = readout.totals["$..number"]
    assert (readout.values["$..number"], total, f"{total}") == (
        [issue["number"] for issue in ISSUES[3:8]],
        9,
        "at least 9",
    )


@pytest.mark.usefixtures("counted_up_to_8")
def test_a_page_that_reaches_the_end_counts_every_match(issues: str) -> None:
    readout = read_fields_detailed(issues, ["$.result[*].number"], offset=95, limit=10)
    assert (readout.values["$.result[*].number"], f"{readout.totals['$.result[*].number']}") == (
        [issue["number"] for issue in ISSUES[95:]],
        "100",
    )


@pytest.mark.usefixtures("counted_up_to_8")
def test_a_page_of_a_descendant_path_on_the_command_line_says_at_least(issues: str) -> None:
    from pflow_structure.cli import main

    outcome = cli_runner().invoke(main, ["read-fields", issues, "$..number", "--offset", "3", "--limit", "5"])
    numbers = json.dumps([issue["number"] for issue in ISSUES[3:8]])
    assert outcome.output == f"$..number: {numbers}  # items 3-7 of at least 9; --offset 8 for more\n"


@pytest.mark.usefixtures("counted_up_to_8")
def test_a_page_counts_the_items_that_lack_the_path_on_the_page_only(issues: str) -> None:
    path = "$.result[*].milestone.title"
    readout = read_fields_detailed(issues, [path], limit=10)
    # None of the first 10 has a milestone: the read goes on to the first that has one (item 44).
    first = next(index for index, issue in enumerate(ISSUES) if issue["milestone"])
    assert (first, readout.missing[path], readout.page_counts[path]) == (44, 10, 10)
    assert (readout.values[path], f"{readout.totals[path]}") == ([None] * 10, "at least 45")


@pytest.mark.usefixtures("counted_up_to_8")
def test_a_read_without_a_limit_stops_past_what_its_budget_can_show_and_pages(issues: str) -> None:
    from pflow_structure.service.answers import read_fields_answer

    answer = read_fields_answer(issues, ["$..number"], max_tokens=100).value  # at most 51 items: 52 resolved
    shown = len(answer["$..number"])  # about 8: how many fit depends on the id's tokens
    assert answer == {
        "$..number": [issue["number"] for issue in ISSUES[:shown]],
        "_more": {
            "$..number": {
                "shown": f"items 0-{shown - 1} of at least 52",
                "next": {"execution_id": issues, "field_paths": ["$..number"], "offset": shown},
            }
        },
        "_note": "Answer kept under 100 tokens: each _more entry gives the arguments (next) that read on.",
    }
