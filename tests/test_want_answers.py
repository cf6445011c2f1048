"""Answers the size of the question (issue 35): want answers, small outputs as data, hints that read right."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pflow_structure import Settings, read_fields, registry_run
from pflow_structure.render.structure_text import describe_entry, hint_path
from pflow_structure.render.tokens import count_tokens
from pflow_structure.render.want_values import want_values
from tests.conftest import EXAMPLES_DATA
from tests.test_cli import ID_PATTERN, invoke

ISSUES = EXAMPLES_DATA / "github_issues.json"
BLOCKS = {
    "content": [
        {"type": "image", "data": "xx"},
        {"type": "tool_use", "id": "t1"},
        {"type": "text", "text": "hello there"},
        {"type": "image", "data": "yy"},
    ]
}


def _blocks_file(tmp_path: Path) -> Path:
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps(BLOCKS), encoding="utf-8")
    return path


# -- hints that read right (35.4) -------------------------------------------------------------


def test_a_field_only_some_items_have_names_which_items_in_the_structure(tmp_path: Path) -> None:
    result = registry_run("read-json", {"path": str(_blocks_file(tmp_path))}, structure=True)
    assert result["structure"]["result.content[0].text"] == {
        "type": "str",
        "avg_length": 11,
        "present": 1,
        "of": 4,
        "present_at": [2],
    }
    assert result["structure"]["result.content[0].data"]["present_at"] == [0, 3]


def test_in_n_of_m_shows_the_items_and_marks_more_than_it_lists() -> None:
    assert (
        describe_entry({"type": "str", "present": 1, "of": 4, "present_at": [2]}, short=True) == "str, in 1 of 4: [2]"
    )
    entry = {"type": "int", "present": 16, "of": 100, "present_at": [3, 7, 9]}
    assert describe_entry(entry, short=True) == "int, in 16 of 100: [3] [7] [9]…"


def test_a_hint_for_a_field_item_0_lacks_names_an_item_that_has_it() -> None:
    entry = {"type": "str", "present": 1, "of": 4, "present_at": [2]}
    assert hint_path("result.content[0].text", entry) == "result.content[2].text"


def test_a_hint_for_a_field_of_every_item_reads_every_item() -> None:
    assert hint_path("result[0].labels[0].name", {"type": "str"}) == "result[*].labels[*].name"
    assert hint_path("result[0].data", {"type": "str", "present": 2, "of": 4, "present_at": [0, 3]}) == "result[*].data"


def test_the_structure_views_read_command_reads_the_item_that_has_the_field(tmp_path: Path) -> None:
    outcome = invoke("run", "read-json", f"path={_blocks_file(tmp_path)}", "--want", "text", "--structure")
    command = outcome.stdout.splitlines()[-1]
    assert command.endswith(
        " 'result.content[2].text' 'result.content[*].type' 'result.content[*].data' 'result.content[1].id'"
    )
    execution_id = re.search(ID_PATTERN, command)
    assert execution_id
    assert read_fields(execution_id[0], ["result.content[2].text"]) == {"result.content[2].text": "hello there"}


def test_a_want_answers_map_lists_the_other_fields_its_words_match_by_name() -> None:
    answer = registry_run("read-json", {"path": str(ISSUES)}, want="who opened each issue, is it still open?")
    assert "structure" not in answer and "wanted" not in answer  # the map names them, once
    assert answer["map"] == (
        "Rest: result list, 100 items, each 57 more fields; your words also match: "
        "result[*].milestone.closed_issues, .author_association, .assignee, .milestone.creator, "
        "result[*].assignees[*], result[*].milestone.state, .closed_at, .milestone.closed_at"
    )


# -- want answers with values (35.1) ----------------------------------------------------------


def test_a_want_answer_leads_with_the_values_one_row_per_item_its_label_and_handle() -> None:
    answer = registry_run("read-json", {"path": str(ISSUES)}, want="who opened each issue, is it still open?")
    issues = json.loads(ISSUES.read_text(encoding="utf-8"))
    assert list(answer["values"]) == [
        "result[*].number",  # the handle, short
        "result[*].title",  # the label
        "result[*].state",  # "open" is one of its values
        "result[*].milestone.open_issues",
        "result[*].user.login",  # "who opened"
    ]
    rows = len(answer["values"]["result[*].number"])
    assert 20 < rows < 100  # as many rows as fill the want budget
    assert answer["values"]["result[*].number"] == [issue["number"] for issue in issues[:rows]]
    assert answer["values"]["result[*].state"] == [issue["state"] for issue in issues[:rows]]
    assert answer["values"]["result[*].user.login"] == [issue["user"]["login"] for issue in issues[:rows]]


def test_a_record_noun_names_no_field_and_a_value_word_names_its_field() -> None:
    from pflow_structure.service.want_choice import by_word, record_nouns

    assert record_nouns("which hosts are up, and the version of each agent?") == {"host", "agent"}
    structure = {
        "result": {"type": "list", "length": 3},
        "result[0].state": {"type": "str", "avg_length": 6},
        "result[0].milestone.open_issues": {"type": "int"},
        "result[0].issue_count": {"type": "int"},
    }
    outputs = {
        "result": [{"state": s, "milestone": {"open_issues": 1}, "issue_count": 2} for s in ("open", "closed", "open")]
    }
    # "open" says the state's value (a field named after it sits deeper); "issue" names the records.
    assert by_word(structure, [], "which issues are open", outputs) == ["result[0].state"]
    # Values all different are names, not categories: no word meets them.
    names = {"result": [{"state": s, "milestone": {"open_issues": 1}, "issue_count": 2} for s in ("open", "b", "c")]}
    assert by_word(structure, [], "which issues are open", names) == ["result[0].milestone.open_issues"]


def test_a_records_label_is_its_own_name_else_a_name_in_a_part_of_it() -> None:
    from pflow_structure.service.want_choice import _children, record_label

    structure = {
        "result": {"type": "list", "length": 2},
        "result[0].id": {"type": "str", "avg_length": 36},
        "result[0].state": {"type": "str", "avg_length": 6},
        "result[0].created": {"type": "str", "avg_length": 20},
        "result[0].profile": {"type": "dict"},
        "result[0].profile.name": {"type": "str", "avg_length": 9},
        "result[0].owner": {"type": "dict"},
        "result[0].owner.id": {"type": "int"},
        "result[0].owner.name": {"type": "str", "avg_length": 5},
    }
    # The owner is another entity (it has an id); the profile is a part of the record.
    assert record_label(structure, ("result", 0), _children(structure)) == "result[0].profile.name"
    del structure["result[0].profile.name"]
    assert record_label(structure, ("result", 0), _children(structure)) == "result[0].id"
    assert record_label(structure, ("result", 0), _children(structure), handles=False) is None
    # A record that only wraps an object (``{"kind", "data"}``) is called by that object's title.
    wrapped = {
        "result": {"type": "list", "length": 2},
        "result[0].kind": {"type": "str", "avg_length": 2},
        "result[0].data": {"type": "dict"},
        "result[0].data.id": {"type": "str", "avg_length": 6},
        "result[0].data.title": {"type": "str", "avg_length": 40},
    }
    assert record_label(wrapped, ("result", 0), _children(wrapped)) == "result[0].data.title"


def test_a_want_answer_pages_with_the_exact_call_that_reads_on() -> None:
    outputs = {"result": [{"number": n, "title": f"issue {n}"} for n in range(50)]}
    calls: list[dict[str, Any]] = []

    def call(arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return "NEXT"

    shown = want_values(
        outputs, ["result[0].number", "result[0].title"], execution_id="exec-1-abc", budget=120,
        count=count_tokens, call=call,
    )  # fmt: skip
    rows = len(shown.values["result[*].number"])
    assert 0 < rows < 50
    assert shown.values["result[*].title"] == [f"issue {n}" for n in range(rows)]
    nxt = {"execution_id": "exec-1-abc", "field_paths": ["result[*].number", "result[*].title"], "offset": rows}
    assert shown.more["result[*].number"] == {"shown": f"items 0-{rows - 1} of 50", "items": 50, "next": nxt}
    assert shown.lines[0] == "result[*] (50 items): number, title"
    assert shown.lines[1:3] == ["  0,issue 0", "  1,issue 1"]
    assert shown.lines[-1] == f"Rows 0-{rows - 1} of 50 shown; read on: NEXT"
    assert calls == [nxt]


def test_the_cli_want_answers_next_command_reads_the_next_rows() -> None:
    outcome = invoke("run", "read-json", f"path={ISSUES}", "--want", "who wrote each issue")
    paging = next(line for line in outcome.stdout.splitlines() if line.startswith("Rows "))
    found = re.fullmatch(
        r"Rows 0-(\d+) of 100 shown; read on: pflow-structure read-fields (exec-\S+) (.*) --offset (\d+)", paging
    )
    assert found
    assert int(found[4]) == int(found[1]) + 1
    assert found[3].startswith("'result[*].number' 'result[*].title' ")
    following = read_fields(found[2], ["result[*].number"], offset=int(found[4]), limit=1)
    assert following == {"result[*].number": [json.loads(ISSUES.read_text(encoding="utf-8"))[int(found[4])]["number"]]}


def test_a_want_answer_stays_within_max_tokens() -> None:
    outcome = invoke(
        "run", "read-json", f"path={ISSUES}", "--want", "title and body of each issue", "--max-tokens", "300"
    )
    assert outcome.exit_code == 0
    assert count_tokens(outcome.stdout) <= 300


def test_a_small_budget_shrinks_the_map_before_the_rows_and_drops_it_before_the_last_row(steady_ids: None) -> None:
    want = "title and state of each issue"
    for budget in (160, 200, 300):
        outcome = invoke("run", "read-json", f"path={ISSUES}", "--want", want, "--max-tokens", str(budget))
        assert count_tokens(outcome.stdout) <= budget, outcome.stdout
        rest = [line for line in outcome.stdout.splitlines() if line.startswith("Rest: ")]
        assert all(count_tokens(line) <= budget // 5 for line in rest), rest  # the map's share of a small budget
    tight = invoke("run", "read-json", f"path={ISSUES}", "--want", want, "--max-tokens", "140").stdout
    assert count_tokens(tight) <= 140, tight
    assert "Rest: " not in tight  # no room for the map beside one row
    assert "  150,Different results from Betamax vs Requests,closed,null" in tight.splitlines()
    assert "--offset 1" in tight


def test_the_printed_want_answer_with_its_last_newline_stays_within_max_tokens(steady_ids: None) -> None:
    for budget in (304, 405, 509):  # each printed one token over (the newline click.echo adds) before the fix
        outcome = invoke(
            "run", "read-json", f"path={ISSUES}", "--want", "who opened each issue", "--max-tokens", str(budget)
        )
        assert count_tokens(outcome.stdout) <= budget, budget


def test_run_json_is_sized_as_the_dict_it_prints_not_as_the_text(steady_ids: None) -> None:
    outcome = invoke(
        "run", "read-json", f"path={ISSUES}", "--want", "title and state of each issue", "--max-tokens", "600", "--json"
    )
    answer = json.loads(outcome.stdout)
    assert count_tokens(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 600
    assert 1 <= len(answer["values"]["result[*].title"]) < 100
    # a small dict keeps rows beside the map (it once showed 1 row in 342 tokens of 500)
    small = registry_run("read-json", {"path": str(ISSUES)}, want="title and state of each issue", max_tokens=500)
    assert count_tokens(json.dumps(small, separators=(",", ":"), ensure_ascii=False)) <= 500
    assert small["map"].startswith("Rest: result list, 100 items") and len(small["values"]["result[*].title"]) >= 12
    # too small for the map beside one row: the map goes, and ``wanted`` names the matches it named
    tight = registry_run("read-json", {"path": str(ISSUES)}, want="title and state of each issue", max_tokens=320)
    assert count_tokens(json.dumps(tight, separators=(",", ":"), ensure_ascii=False)) <= 320
    assert tight["map"] == "" and len(tight["values"]["result[*].title"]) == 1
    assert tight["wanted"][:2] == ["result[0].milestone.open_issues", "result[0].milestone.closed_issues"]


def test_structure_gives_the_want_view_and_the_structure_command_the_full_one() -> None:
    view = registry_run("read-json", {"path": str(ISSUES)}, want="title", structure=True)
    assert "values" not in view and view["wanted"][0] == "result[0].title"
    answer = registry_run("read-json", {"path": str(ISSUES)}, want="title")
    outcome = invoke("structure", answer["execution_id"], "--json")
    assert json.loads(outcome.stdout)["original_field_count"] == 110


# -- small outputs answered as data (35.2) ----------------------------------------------------


def test_a_small_output_comes_back_as_data_with_its_id(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"ok": True, "count": 2}), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)})
    assert answer["data"] == {"ok": True, "count": 2}
    assert answer["rest"] == (  # the id is the dict's execution_id, not said again
        'Cached (paths start at result): read_fields reads a part, "${ID:PATH}" passes it on unread.'
    )
    outcome = invoke("run", "read-json", f"path={path}")
    lines = outcome.stdout.splitlines()
    assert lines[:2] == ["ok: true", "count: 2"]  # what format's picker chooses
    assert re.fullmatch(
        rf"Cached as {ID_PATTERN} \(paths start at result\); read-fields ID PATH reads a part, "
        r"\"\$\{ID:PATH\}\" passes it on unread\.",
        lines[2],
    )


def test_structure_forces_the_view_of_a_small_output(tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"ok": True}), encoding="utf-8")
    assert registry_run("read-json", {"path": str(path)}, structure=True)["structure"] == {
        "result": {"type": "dict"},
        "result.ok": {"type": "bool"},
    }


def test_the_proxy_answers_a_result_smaller_as_data_than_as_structure_with_the_data() -> None:
    from pflow_structure.mcp.proxy.shaping import shape_and_store

    value = [{"id": index, "name": f"n{index}"} for index in range(10)]  # 192 tokens; a TOON table beats its structure
    result = {"content": [{"type": "text", "text": json.dumps(value, indent=2)}]}
    shaped = shape_and_store("t", {}, result, settings=Settings.from_env(), budget=50, read_tool="read_fields")
    lines = shaped.result["content"][0]["text"].splitlines()
    assert lines[:3] == ["[10]{id,name}:", "  0,n0", "  1,n1"] and len(lines) == 12
    assert lines[-1].startswith("Cached as exec-") and lines[-1].endswith(
        ': read_fields reads a part, "${ID:PATH}" passes it on unread.'
    )


def test_the_proxy_compacts_a_small_json_text_and_drops_its_copy_unless_told_to_keep_it() -> None:
    from pflow_structure.mcp.proxy.shaping import shape_and_store

    text = json.dumps({"a": [1, 2], "b": "x"}, indent=2)
    result = {"content": [{"type": "text", "text": text}], "structuredContent": {"content": text}}
    shaped = shape_and_store("t", {}, result, settings=Settings.from_env(), budget=1000, read_tool="read_fields")
    assert shaped.result == {"content": [{"type": "text", "text": '{"a":[1,2],"b":"x"}'}]}
    keep = Settings.from_env({"PFLOW_STRUCTURE_PROXY_KEEP_TEXT": "1"})
    assert shape_and_store("t", {}, result, settings=keep, budget=1000, read_tool="read_fields").result is result


def test_the_want_budget_is_a_setting() -> None:
    assert Settings.from_env({}).want_budget == 1500
    assert Settings.from_env({"PFLOW_STRUCTURE_WANT_BUDGET": "600"}).want_budget == 600


# -- MCP tool descriptions --------------------------------------------------------------------


def test_the_tool_descriptions_say_what_a_want_answer_is_in_at_most_40_tokens() -> None:
    from pflow_structure.mcp.proxy.shaping import WANT_DESCRIPTION as PROXIED
    from pflow_structure.mcp.server import WANT_DESCRIPTION

    served = WANT_DESCRIPTION + " With want: the matching fields' values (one row per item) and a short map."
    assert count_tokens(served) <= 40 and "values" in served
    assert count_tokens(PROXIED) <= 40 and "values" in PROXIED.lower()


def test_matches_below_a_dict_of_data_keys_are_named_in_the_map_not_called_missing(tmp_path: Path) -> None:
    path = tmp_path / "keyed.json"
    path.write_text(json.dumps({f"k{n}": {"size": n, "tag": f"t{n}"} for n in range(30)}), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)}, want="size of each")
    assert (
        answer["values"] == {}
        and answer["map"] == "Rest: result dict, 2 more fields; your words also match: result[*].size"
    )
    lines = invoke("run", "read-json", f"path={path}", "--want", "size of each").stdout.splitlines()
    execution_id = lines[0].split(":")[0]
    assert lines[0] == f"{execution_id}: your words match the fields named below; read-fields reads them."
    assert lines[1] == "Rest: result dict, 2 more fields; your words also match: result[*].size"


def test_a_single_records_fields_show_four_values_and_a_lists_three_columns() -> None:
    from pflow_structure.service.want_choice import _fitting

    ranked = [
        "result.a", "result.items[0].b", "result.c", "result.items[0].d", "result.e", "result.f",
        "result.items[0].g", "result.items[0].h", "result.i",
    ]  # fmt: skip
    # Outside any list a field is one line; a column is a line per row: four of those, three of these.
    assert _fitting(ranked) == [
        "result.a", "result.items[0].b", "result.c", "result.items[0].d", "result.e", "result.f", "result.items[0].g",
    ]  # fmt: skip


def test_the_map_leaves_out_a_container_with_nothing_more_to_read() -> None:
    from pflow_structure.render.want_text import want_map

    structure = {
        "result": {"type": "dict"},
        "result.meta": {"type": "dict"},
        "result.meta.total": {"type": "int"},
        "result.items": {"type": "list", "length": 2},
        "result.items[0].name": {"type": "str", "avg_length": 4},
        "result.items[0].size": {"type": "int"},
    }
    fields = ["result.meta.total", "result.items[0].name", "result.items[0].size"]
    mapped = want_map(structure, fields, ["result.meta.total", "result.items[0].name"], [])
    assert mapped.text == "Rest: result.items list, 2 items, each 1 more field"
    assert list(mapped.structure) == ["result.items"]


def test_a_superlative_ranks_the_rows_by_the_number_its_next_word_names() -> None:
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {
        "result[0].title": {"type": "str", "avg_length": 20},
        "result[0].comments": {"type": "int"},
        "result[0].score": {"type": "int"},
        "result[0].created_at": {"type": "str", "avg_length": 20},
    }
    shown = ["result[0].title", "result[0].comments", "result[0].score"]
    assert sort_order(structure, shown, "the title of the highest-scoring post") == Order("result[0].score", True, 5)
    assert sort_order(structure, shown, "the 3 least commented posts") == Order("result[0].comments", False, 3)
    assert sort_order(structure, shown, "top 10 posts") == Order("result[0].comments", True, 10)  # the first number
    assert sort_order(structure, shown, "the newest post") is None  # no time among the columns
    assert sort_order(structure, [*shown, "result[0].created_at"], "the newest post") == Order(
        "result[0].created_at", True, 5
    )
    assert sort_order(structure, shown, "what are the min and max sizes") is None  # names, not superlatives


def test_newest_ranks_by_the_records_own_time_before_a_nested_ones() -> None:
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {
        "result[0].title": {"type": "str", "avg_length": 20},
        "result[0].base.repo.updated_at": {"type": "str", "avg_length": 20},
        "result[0].created_at": {"type": "str", "avg_length": 20},
    }
    shown = ["result[0].title", "result[0].base.repo.updated_at"]  # the want showed a nested time only
    assert sort_order(structure, shown, "the 10 newest pull requests") == Order("result[0].created_at", True, 10)
    assert sort_order(structure, ["result[0].title"], "the latest pull requests") is None  # no time shown: no rank


def test_the_column_after_by_and_a_count_before_the_superlative_rank_the_rows() -> None:
    from pflow_structure.filtering.want import stem
    from pflow_structure.service.want_choice import Order, record_nouns, sort_order

    structure = {
        "result[0].title": {"type": "str", "avg_length": 20},
        "result[0].milestone.open_issues": {"type": "int"},
        "result[0].comments": {"type": "int"},
    }
    shown = list(structure)
    by = Order("result[0].comments", True, 20)
    assert sort_order(structure, shown, "top 20 issues by comments") == by  # not open_issues: "issues" is the record
    assert sort_order(structure, shown, "which 20 issues have the most comments") == by
    assert sort_order(structure, shown, "the 3 issues from 2021 with the most comments").rows == 3  # type: ignore[union-attr]
    assert record_nouns("top 20 issues by comments") == {stem("issues")}
    assert sort_order(structure, shown, "top 1000 issues by comments") == by._replace(rows=1000)  # beside it
    assert sort_order(structure, shown, "the issue from 2014 with the most comments") == by._replace(rows=5)
    # "issues" names the records, not open_issues: with no word for the column, the first number shown
    assert sort_order(structure, shown, "top 5 issues") == Order("result[0].milestone.open_issues", True, 5)
    numbered = {"result[0].number": {"type": "int"}, **structure}
    assert sort_order(numbered, list(numbered), "top 5 issues") == Order("result[0].number", True, 5)
    # a number after a noun that ends its phrase names a thing, not rows (it showed 3 and 42 rows)
    assert sort_order(structure, shown, "the most commented issues in milestone 3") == by._replace(rows=5)
    assert sort_order(structure, shown, "top comments on issue 42") == by._replace(rows=5)
    assert sort_order(structure, shown, "list 3 issues with the most comments") == by._replace(rows=3)
    # a superlative between the count and the noun: "issues" still names the records (it ranked by open_issues)
    assert record_nouns("the 5 largest issues") == {stem("issues")}
    assert sort_order(numbered, list(numbered), "the 5 largest issues") == Order("result[0].number", True, 5)


def test_the_word_most_grades_is_no_record_noun_after_a_count() -> None:
    # "the 3 most commented posts" is about posts: "commented" named the records, so comment_count (not a
    # whole key "comment") could not rank them and the first number shown (score) did
    from pflow_structure.filtering.want import stem
    from pflow_structure.service.want_choice import Order, record_nouns, sort_order

    structure = {
        "result[0].title": {"type": "str", "avg_length": 20},
        "result[0].score": {"type": "int"},
        "result[0].comment_count": {"type": "int"},
    }
    assert record_nouns("the 3 most commented posts") == {stem("posts")}
    assert sort_order(structure, list(structure), "the 3 most commented posts") == Order(
        "result[0].comment_count", True, 3
    )


def test_a_count_after_the_graded_word_the_records_or_first_or_limit_counts_rows() -> None:
    # each showed five rows: the number after a word that is no stopword was taken for a thing's number
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {
        "result[0].title": {"type": "str", "avg_length": 20},
        "result[0].comments": {"type": "int"},
        "result[0].created_at": {"type": "str", "avg_length": 20},
    }
    shown = list(structure)
    newest = Order("result[0].created_at", True, 20)
    assert sort_order(structure, shown, "the most recent 20") == newest
    assert sort_order(structure, shown, "the highest-commented 8") == Order("result[0].comments", True, 8)
    assert sort_order(structure, shown, "newest issues, first 20") == newest
    assert sort_order(structure, shown, "the most commented issues, limit 10") == Order("result[0].comments", True, 10)
    assert sort_order(structure, shown, "the most commented issues, 7 of them") == Order("result[0].comments", True, 7)
    assert sort_order(structure, shown, "the most commented issue 42") == Order("result[0].comments", True, 5)


def test_at_least_and_at_most_bound_a_number_and_rank_no_rows() -> None:
    # they ranked the issues by comments, lowest first for "at least 5" (five rows) and highest for "at most 2"
    from pflow_structure.service.want_choice import sort_order

    structure = {"result[0].title": {"type": "str", "avg_length": 20}, "result[0].comments": {"type": "int"}}
    shown = list(structure)
    assert sort_order(structure, shown, "issues with at least 5 comments") is None
    assert sort_order(structure, shown, "issues with at most 2 comments") is None


def test_a_by_that_names_no_column_leaves_the_column_to_the_words_after_the_superlative() -> None:
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {"result[0].milestone.open_issues": {"type": "int"}, "result[0].comments": {"type": "int"}}
    by = Order("result[0].comments", True, 5)
    assert sort_order(structure, list(structure), "the most commented issues opened by octocat") == by
    assert sort_order(structure, list(structure), "the most commented issue") == by  # the first word names it


def test_most_recent_ranks_by_time_as_newest_does() -> None:
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {"result[0].milestone.open_issues": {"type": "int"}, "result[0].created_at": {"type": "str"}}
    shown = list(structure)
    assert sort_order(structure, shown, "the 3 most recent issues") == Order("result[0].created_at", True, 3)
    assert sort_order(structure, shown, "the least recent issue") == Order("result[0].created_at", False, 5)


def test_a_number_of_days_is_no_count_of_rows() -> None:
    from pflow_structure.service.want_choice import Order, sort_order

    structure = {"result[0].comments": {"type": "int"}}
    assert sort_order(structure, list(structure), "the most commented issue in the last 30 days") == Order(
        "result[0].comments", True, 5
    )
    assert sort_order(structure, list(structure), "the 10 most commented issues of the last 7 days") == Order(
        "result[0].comments", True, 10
    )


def test_a_ranked_answer_shows_the_top_rows_with_their_index_and_reads_on_in_order(tmp_path: Path) -> None:
    posts = [{"id": n, "title": f"post {n}", "score": (n * 37) % 101} for n in range(30)]
    path = tmp_path / "posts.json"
    path.write_text(json.dumps(posts), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)}, want="title of the highest-scoring posts")
    top = sorted(range(30), key=lambda n: -posts[n]["score"])[:5]
    assert answer["values"]["result[*].score"] == [posts[n]["score"] for n in top]
    assert answer["values"]["result[*].title"] == [posts[n]["title"] for n in top]
    # the table's entry once, under its first column; the others point at it
    first = next(iter(answer["_more"]))
    assert answer["_more"]["result[*].score"] == {"as": first}
    more = answer["_more"][first]
    assert more["order"] == {"by": "result[*].score", "highest_first": True, "items": top}
    assert more["shown"] == "the 5 highest by score of 30"
    assert "offset" not in more["next"]  # reading on reads every row, in the list's order
    outcome = invoke("run", "read-json", f"path={path}", "--want", "title of the highest-scoring posts")
    lines = outcome.stdout.splitlines()
    assert lines[1] == "result[*] (30 items): [i], id, title, score; the 5 highest by score of 30"
    assert lines[2] == f"  [{top[0]}] {top[0]},post {top[0]},{posts[top[0]]['score']}"
    assert lines[7].startswith("All 30 rows in their order: pflow-structure read-fields exec-")


def test_ranked_rows_cut_by_the_budget_read_on_with_the_next_ones_by_rank_in_one_jq_call(tmp_path: Path) -> None:
    posts = [{"id": n, "title": f"post number {n} " + "words " * 20, "score": (n * 37) % 101} for n in range(60)]
    posts[7]["score"] = None  # a missing score ranks last, and jq reads past it as the answer does
    posts[9]["score"] = 9.5  # a float among ints: numbers all the same
    path = tmp_path / "posts.json"
    path.write_text(json.dumps(posts), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)}, want="the 25 highest-scoring posts", max_tokens=900)
    more = answer["_more"][next(iter(answer["_more"]))]
    shown = more["order"]["items"]
    assert 1 < len(shown) < 25, more["shown"]
    rest = read_fields(answer["execution_id"], jq=more["next"]["jq"])[more["next"]["jq"]]
    ranked = sorted((n for n in range(60) if n != 7), key=lambda n: -posts[n]["score"])  # type: ignore[operator]
    assert [row["i"] for row in rest] == ranked[len(shown) : 25]  # no score is tied: one order
    assert [*shown, *(row["i"] for row in rest)] == ranked[:25]
    assert rest[0]["score"] == posts[ranked[len(shown)]]["score"]


def _ranked_read_on(tmp_path: Path, scores: list[Any], want: str) -> tuple[list[int], list[int]]:
    """The indices a ranked answer over posts with ``scores`` shows, and those its jq read-on gives."""
    posts = [{"id": n, "title": f"post number {n} " + "words " * 20, "score": score} for n, score in enumerate(scores)]
    path = tmp_path / "posts.json"
    path.write_text(json.dumps(posts), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)}, want=want, max_tokens=900)
    more = answer["_more"][next(iter(answer["_more"]))]
    assert "jq" in more["next"], more["next"]
    rest = read_fields(answer["execution_id"], jq=more["next"]["jq"])[more["next"]["jq"]]
    return more["order"]["items"], [row["i"] for row in rest]


def test_the_ranked_read_on_keeps_the_answers_order_among_tied_values(tmp_path: Path) -> None:
    scores = [10 if n < 40 else n for n in range(60)]  # 20 distinct, then 40 tied at 10: first by index
    shown, rest = _ranked_read_on(tmp_path, scores, "the 25 highest-scoring posts")
    assert [*shown, *rest] == [*range(59, 39, -1), 0, 1, 2, 3, 4]
    shown, rest = _ranked_read_on(tmp_path, [5] * 60, "the 25 lowest-scoring posts")
    assert [*shown, *rest] == list(range(25))


def test_ranked_ints_and_floats_read_on_by_rank(tmp_path: Path) -> None:
    scores = [n * 1.5 if n % 2 else n for n in range(60)]
    shown, rest = _ranked_read_on(tmp_path, scores, "the 25 highest-scoring posts")
    assert [*shown, *rest] == sorted(range(60), key=lambda n: -scores[n])[:25]


def _lines(outputs: Any, paths: list[str], budget: int = 2000) -> Any:
    return want_values(outputs, paths, execution_id="exec-1-abc", budget=budget, count=count_tokens, call=str)


def test_a_column_alike_in_every_row_is_one_line_above_the_table_and_whole_in_values() -> None:
    playlist = "PLOU2XLYxmsIKpaV8h0AGE05so0fAwwfTw"
    outputs = {"result": [{"title": f"talk {n}", "playlist": playlist, "due": None} for n in range(12)]}
    shown = _lines(outputs, ["result[0].title", "result[0].playlist", "result[0].due"])
    assert shown.lines[:4] == [
        f"result[*].playlist: {playlist} (in every row shown)",
        "result[*].due: null (in every row shown)",
        "result[*] (12 items): title",
        "  talk 0",
    ]
    assert sum(playlist in line for line in shown.lines) == 1
    # The dict (JSON, MCP) holds the value once too, and says for how many rows.
    assert shown.values["result[*].playlist"] == playlist
    assert shown.values["result[*].due"] is None
    assert shown.alike == {"result[*].playlist": 12, "result[*].due": 12}
    assert shown.values["result[*].title"] == [f"talk {n}" for n in range(12)]


def test_a_column_stays_in_the_rows_when_once_would_cost_more_or_nothing_else_varies() -> None:
    short = {"result": [{"title": f"talk {n}", "ok": True} for n in range(3)]}
    # three cells of "true" cost less than a line that names the path
    assert _lines(short, ["result[0].title", "result[0].ok"]).lines[0] == "result[*] (3 items): title, ok"
    two = {"result": [{"title": f"talk {n}", "playlist": "PLOU2XLYxmsIKpaV8h0AGE05so0fAwwfTw"} for n in range(2)]}
    assert _lines(two, ["result[0].title", "result[0].playlist"]).lines[0] == "result[*] (2 items): title, playlist"
    same = {"result": [{"kind": "youtube#playlistItem", "etag": "abc"} for _ in range(5)]}
    assert _lines(same, ["result[0].kind", "result[0].etag"]).lines[0] == "result[*] (5 items): kind, etag"


def test_alike_columns_leave_room_for_more_rows_in_the_same_budget() -> None:
    playlist = "PLOU2XLYxmsIKpaV8h0AGE05so0fAwwfTw"
    outputs = {"result": [{"title": f"talk {n}", "playlist": playlist} for n in range(60)]}
    alike = len(_lines(outputs, ["result[0].title", "result[0].playlist"], budget=200).values["result[*].title"])
    varied = {"result": [{"title": f"talk {n}", "playlist": f"{playlist}{n}"} for n in range(60)]}
    differ = len(_lines(varied, ["result[0].title", "result[0].playlist"], budget=200).values["result[*].title"])
    assert alike > 2 * differ


def _tickets(count: int, pending: set[int]) -> list[dict[str, Any]]:
    return [
        {"id": 100 + n, "subject": f"printer jam on floor {n}", "status": "pending" if n in pending else "new"}
        for n in range(count)
    ]


def _pending(outputs: Any) -> tuple[str, list[int]] | None:
    from pflow_structure.render.want_values import picked_items
    from pflow_structure.service.want_choice import holds

    picked = picked_items(outputs, "result[0].status", lambda value: holds(value, frozenset({"pending"})))
    return None if picked is None else ("result[0].status", picked)


def test_a_word_that_names_a_value_picks_the_rows_that_hold_it_with_their_index() -> None:
    outputs = {"result": _tickets(30, {4, 17})}
    shown = want_values(
        outputs, ["result[0].id", "result[0].subject", "result[0].status"], execution_id="exec-1-abc", budget=1500,
        count=count_tokens, call=lambda arguments: "ALL " + " ".join(arguments["field_paths"]),
        where=_pending(outputs),
    )  # fmt: skip
    assert shown.lines == [
        "result[*] (30 items): [i], id, subject, status; the 2 of 30 whose status is pending",
        "  [4] 104,printer jam on floor 4,pending",
        "  [17] 117,printer jam on floor 17,pending",
        "All 30 rows: ALL result[*].id result[*].subject result[*].status",
    ]
    assert shown.values["result[*].id"] == [104, 117]
    assert shown.more["result[*].id"]["where"] == {"by": "result[*].status", "values": ["pending"], "items": [4, 17]}


def test_rows_are_not_picked_from_a_short_list_or_when_most_rows_hold_the_value() -> None:
    def rows(outputs: Any) -> int:
        return len(want_values(
            outputs, ["result[0].id", "result[0].status"], execution_id="exec-1-abc", budget=1500,
            count=count_tokens, call=str, where=_pending(outputs),
        ).values["result[*].id"])  # fmt: skip

    assert _pending({"result": _tickets(9, {4})}) is None  # under ten items: all of them, they cost little
    assert rows({"result": _tickets(9, {4})}) == 9
    assert _pending({"result": _tickets(30, set(range(16)))}) is None  # more than half hold it
    assert _pending({"result": _tickets(30, set())}) is None  # none holds it
    assert rows({"result": _tickets(30, set(range(15)))}) == 15


def test_the_value_word_of_the_want_chooses_the_column_and_each_or_all_turns_picking_off() -> None:
    from pflow_structure.service.want_choice import Where, holds, row_filter
    from pflow_structure.structure import infer_structure

    outputs = {"result": _tickets(30, {4})}
    structure = infer_structure(outputs).structure
    paths = ["result[0].id", "result[0].subject", "result[0].status"]
    assert row_filter(outputs, structure, paths, "which ticket is pending") == Where(
        "result[0].status", frozenset({"pending"})
    )
    assert row_filter(outputs, structure, paths, "status of each ticket, is it pending") is None
    assert row_filter(outputs, structure, paths, "ticket subjects") is None
    assert holds("LOCKED_OUT", frozenset({"locked"})) and not holds("ACTIVE", frozenset({"locked"}))
    assert not holds(None, frozenset({"locked"}))


def test_run_want_answers_which_one_is_pending_with_that_row(tmp_path: Path) -> None:
    path = tmp_path / "tickets.json"
    path.write_text(json.dumps({"count": 6040, "tickets": _tickets(50, {0})}), encoding="utf-8")
    outcome = invoke("run", "read-json", f"path={path}", "--want", "total count, which ticket is pending")
    lines = outcome.stdout.splitlines()
    assert "result.count: 6040" in lines
    start = lines.index(next(line for line in lines if line.startswith("result.tickets[*] (50 items)")))
    assert lines[start].endswith("; the 1 of 50 whose status is pending")
    assert lines[start + 1] == "  [0] 100,printer jam on floor 0,pending"
    assert lines[start + 2].startswith("All 50 rows: pflow-structure read-fields exec-")


def test_why_leads_with_the_reason_before_the_fields_the_other_words_name() -> None:
    from pflow_structure.service.want_choice import by_word
    from pflow_structure.structure import infer_structure

    dispute = {
        "result": {
            "reason": "fraudulent",
            "payment_intent": "pi_1",
            "evidence": {"customer_name": "Jane Doe", "refund_refusal_explanation": None},
        }
    }
    structure = infer_structure(dispute).structure
    wanted = ["result.evidence.customer_name", "result.payment_intent", "result.reason"]
    assert by_word(structure, wanted, "Why did the customer dispute this payment?")[0] == "result.reason"
    assert by_word(structure, wanted, "customer and payment")[0] == "result.evidence.customer_name"


def test_a_word_no_field_names_leads_with_its_one_field_by_meaning() -> None:
    from pflow_structure.service.want_choice import by_word
    from pflow_structure.structure import infer_structure

    call = {
        "result": {
            "parent_call_sid": "CA1",
            "start_time": "Fri, 18 Oct 2019 17:02:00 +0000",
            "end_time": "Fri, 18 Oct 2019 17:03:00 +0000",
            "queue_time": "1000",
            "price": "-0.200",
            "duration": "4",
        }
    }
    structure = infer_structure(call).structure
    wanted = ["result.parent_call_sid", "result.end_time", "result.start_time", "result.queue_time", "result.price"]
    order = by_word(structure, wanted, "what did the call cost?")
    # "cost" names no field; "price" is the one field it means, and it comes before the ones that only
    # happen to be listed first
    assert order[:2] == ["result.parent_call_sid", "result.price"]
    # "when" means every time of the record: no single one leads for it
    assert by_word(structure, wanted, "when was the call?")[:2] == ["result.parent_call_sid", "result.end_time"]


def test_picked_rows_past_the_budget_say_how_many_of_the_picked_are_shown() -> None:
    outputs = {"result": _tickets(30, set(range(0, 28, 2)))}  # 14 of 30 pending
    shown = want_values(
        outputs, ["result[0].id", "result[0].subject", "result[0].status"], execution_id="exec-1-abc", budget=140,
        count=count_tokens, call=lambda arguments: "ALL", where=_pending(outputs),
    )  # fmt: skip
    rows = len(shown.values["result[*].id"])
    assert 0 < rows < 14
    assert shown.lines[0].endswith(f"; the first {rows} of the 14 (of 30) whose status is pending")
    assert shown.more["result[*].id"]["where"]["items"] == list(range(0, 2 * rows, 2))
    assert count_tokens("\n".join(shown.lines)) <= 140


def test_no_rows_are_picked_for_a_negation_a_verb_or_a_value_that_says_not() -> None:
    from pflow_structure.service.want_choice import holds, row_filter
    from pflow_structure.structure import infer_structure

    outputs = {"result": _tickets(30, {4})}
    structure = infer_structure(outputs).structure
    paths = ["result[0].id", "result[0].status"]
    for want in ("which tickets are not pending", "tickets other than pending", "non-pending tickets",
                 "which tickets aren't pending", "tickets except the pending one"):  # fmt: skip
        assert row_filter(outputs, structure, paths, want) is None, want
    assert holds("Not started", frozenset({"started"})) is False
    assert holds("Started", frozenset({"started"})) is True
    # "who opened the issues" asks for every issue's opener: "opened" is not the state "open"
    issues = {"result": json.loads(ISSUES.read_text(encoding="utf-8"))}
    issue_paths = ["result[0].number", "result[0].state", "result[0].user.login"]
    assert row_filter(issues, infer_structure(issues).structure, issue_paths, "who opened the issues") is None
    assert row_filter(issues, infer_structure(issues).structure, issue_paths, "which issues are open") is not None


def test_a_column_inside_a_list_of_the_item_picks_no_rows() -> None:
    from pflow_structure.service.want_choice import row_filter
    from pflow_structure.structure import infer_structure

    outputs = {"result": [{"id": n, "labels": [{"name": "bug" if n % 3 else "urgent"}]} for n in range(30)]}
    paths = ["result[0].id", "result[0].labels[0].name"]
    assert row_filter(outputs, infer_structure(outputs).structure, paths, "which are urgent") is None


def test_one_true_and_one_point_oh_are_three_values_not_one() -> None:
    outputs = {"result": [{"title": f"t{n}", "enabled": [1, True, 1.0][n % 3]} for n in range(12)]}
    shown = _lines(outputs, ["result[0].title", "result[0].enabled"])
    assert shown.alike == {}
    assert shown.lines[0] == "result[*] (12 items): title, enabled"


def test_alike_is_decided_once_and_the_text_and_dict_stay_within_the_budget(tmp_path: Path) -> None:
    service = "billing-ledger-reconciliation-worker-eu-west-1-" + "x" * 40
    logs = [{"level": ["INFO", "WARN"][n % 2] if n < 150 else "ERROR", "service": service, "n": n} for n in range(200)]
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(logs), encoding="utf-8")
    for budget in (200, 300, 500):
        outcome = invoke(
            "run", "read-json", f"path={path}", "--want", "log level and service", "--max-tokens", str(budget)
        )
        assert count_tokens(outcome.stdout) <= budget
        rows = [line for line in outcome.stdout.splitlines() if line.startswith("  ")]
        assert len(rows) > 2, outcome.stdout  # not cut to one row by a second decision on the shown rows
        assert sum(service[:60] in line for line in outcome.stdout.splitlines()) == 1
    # the MCP server and the Python API give the dict: its compact JSON keeps within max_tokens too
    answer = registry_run("read-json", {"path": str(path)}, want="log level and service", max_tokens=400)
    assert count_tokens(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 400
    assert answer["values"]["result[*].service"] == service  # 87 characters: too few past 80 to cut in the dict
    assert "cut" not in answer
    assert answer["alike"]["result[*].service"] == len(answer["values"]["result[*].level"])


def test_the_choice_of_data_or_view_does_not_turn_on_the_ids_tokens() -> None:
    from pflow_structure.service.want_answer import view_tokens

    view = {"execution_id": "exec-1763463202-0cd0c8fe", "node_type": "read-json", "values": {"result.a": 1},
            "map": "Rest: 3 more fields", "want": "a"}  # fmt: skip
    other = dict(view, execution_id="exec-1795863336-609be26b")
    assert view_tokens(view) == view_tokens(other)


def test_a_pick_cut_by_the_budget_reads_every_picked_row_in_one_jq_call(tmp_path: Path) -> None:
    path = tmp_path / "tickets.json"
    path.write_text(json.dumps({"tickets": _tickets(200, set(range(0, 200, 3)))}), encoding="utf-8")
    answer = registry_run("read-json", {"path": str(path)}, want="which tickets are pending", max_tokens=300)
    more = answer["_more"]["result.tickets[*].id"]
    assert more["shown"].startswith(f"the first {len(more['where']['items'])} of the 67 (of 200) whose status")
    shown = len(more["where"]["items"])
    assert more["next"]["jq"].endswith(f" | .[{shown}:]")  # the rows after those shown
    rest = read_fields(answer["execution_id"], jq=more["next"]["jq"])
    rows = next(iter(rest.values()))
    assert [row["i"] for row in rows] == list(range(0, 200, 3))[shown:]
    assert rows[0] == {"i": 3 * shown, "id": 100 + 3 * shown, "subject": f"printer jam on floor {3 * shown}",
                       "status": "pending"}  # fmt: skip


def test_the_map_is_left_out_when_the_values_show_every_field() -> None:
    from pflow_structure.render.want_text import want_map

    structure = {"result": {"type": "list", "length": 3}, "result[0].id": {"type": "int"}}
    assert want_map(structure, ["result[0].id"], ["result[0].id"], [], count_tokens).text == ""
    assert want_map(structure, ["result[0].id"], [], [], count_tokens).text.startswith("Rest: ")


def test_a_column_under_a_quoted_key_can_pick_rows() -> None:
    from pflow_structure.service.want_choice import row_filter
    from pflow_structure.structure import infer_structure

    outputs = {"result": [{"id": n, "os-ext": "open" if n == 3 else "shut"} for n in range(20)]}
    paths = ["result[0].id", 'result[0]["os-ext"]']
    found = row_filter(outputs, infer_structure(outputs).structure, paths, "which one is open")
    assert found is not None and found.path == 'result[0]["os-ext"]'


def test_the_dict_cuts_long_cells_as_the_text_does_and_keeps_within_max_tokens(steady_ids: None) -> None:
    # before: each body whole in the dict, so one row (1,690 tokens for a budget of 1,500; "top 20": 1 row)
    plain = registry_run("read-json", {"path": str(ISSUES)}, want="title and body of each issue", max_tokens=1500)
    assert count_tokens(json.dumps(plain, separators=(",", ":"), ensure_ascii=False)) <= 1500
    bodies = plain["values"]["result[*].body"]
    whole = json.loads(ISSUES.read_text())
    assert len(bodies) >= 10
    assert bodies[0] == whole[0]["body"][:80] + f"…({len(whole[0]['body']):,} chars)"
    assert plain["cut"].endswith("e.g. result[0].body")  # the first cut cell, column by column
    assert all(len(title) <= 120 for title in plain["values"]["result[*].title"])  # the dict cuts 40 past 80
    ranked = registry_run("read-json", {"path": str(ISSUES)}, want="top 20 issues by comments", max_tokens=1500)
    assert count_tokens(json.dumps(ranked, separators=(",", ":"), ensure_ascii=False)) <= 1500
    items = ranked["_more"]["result[*].number"]["order"]["items"]
    assert len(items) >= 10
    for index, body in zip(items, ranked["values"]["result[*].body"], strict=True):
        text = whole[index]["body"]
        assert body == (text if len(text) <= 200 else text[:200] + f"…({len(text):,} chars)")


@pytest.mark.parametrize(
    ("response", "want"),
    [
        ("auth0/client.json", "Which grant types may it use?"),
        (
            "aws/autoscaling_describe_groups.json",
            "Which instances are in the group and are they healthy and InService?",
        ),
        ("digitalocean/volumes_list.json", "Which volumes exist, how large, in which region?"),
    ],
)
def test_the_dict_is_the_answer_only_when_the_data_costs_more_than_it_and_a_read(
    response: str, want: str, steady_ids: None
) -> None:
    # the choice was made by the text's size: the dict came back where the data cost less than it and a read
    from pflow_structure.service.want_answer import READ_ALLOWANCE

    path = Path(__file__).parent / "data" / "filter_eval" / response
    data = count_tokens(
        json.dumps(json.loads(path.read_text(encoding="utf-8")), separators=(",", ":"), ensure_ascii=False)
    )
    answer = registry_run("read-json", {"path": str(path)}, want=want)
    if "values" in answer:
        assert count_tokens(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) + READ_ALLOWANCE < data
    else:
        assert answer["data"] == json.loads(path.read_text(encoding="utf-8"))


def test_a_cell_with_a_control_character_or_a_lone_surrogate_is_written_escaped(tmp_path: Path) -> None:
    # TOON has no form for them: the want answer failed whole ("a string with a control character or a lone
    # surrogate has no TOON or table form") for one such cell, as a CI log's ANSI escape (\x1b) is
    path = tmp_path / "logs.json"
    lines = [{"id": n, "line": f"\x1b[31mfail\x1b[0m {n}", "note": "\ud800" + "z" * 90} for n in range(12)]
    path.write_text(json.dumps(lines), encoding="utf-8")
    outcome = invoke("run", "read-json", f"path={path}", "--want", "line and note of each")
    assert outcome.exit_code == 0, outcome.output
    printed = outcome.stdout.splitlines()
    assert printed[1] == 'result[*].note: "\\ud800' + "z" * 79 + '"…(91 chars) (in every row shown)'
    assert printed[3] == '  0,"\\u001b[31mfail\\u001b[0m 0"'
