"""The answer budget and `_missing`: every answer fits, every miss says why, every page reads back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflow_structure.paths import parse_path
from pflow_structure.render.output_text import format_json
from pflow_structure.render.tokens import count_tokens
from pflow_structure.service import store_outputs
from pflow_structure.service.answers import read_fields_answer
from tests.conftest import EXAMPLES_DATA, examples

Read = Callable[[dict[str, Any]], dict[str, Any]]


def read_all(read: Read, arguments: dict[str, Any]) -> Any:
    """The whole value at ``arguments["field_paths"][0]``, following each ``_more`` entry's ``next``
    (and ``then``) as an agent would, with nothing but what the answers say."""
    path = arguments["field_paths"][0]
    answer = read(arguments)
    more = answer.get("_more", {}).get(path)
    if more is None:
        return answer[path]
    if "structure" in more:
        children = more["next"]["field_paths"]
        return {parse_path(child)[-1]: read_all(read, {**more["next"], "field_paths": [child]}) for child in children}
    if more["shown"].startswith("item "):  # one item larger than the share: by its own path, then the list on
        return [read_all(read, more["next"])] + (read_all(read, more["then"]) if "then" in more else [])
    if path not in answer:  # not shown beside the others: read alone
        return read_all(read, more["next"])
    shown = answer[path]
    if isinstance(shown, str):
        return shown + read_all(read, more["next"])
    return list(shown) + read_all(read, more["next"])


def service_reader(max_tokens: int, answers: list[dict[str, Any]]) -> Read:
    def read(arguments: dict[str, Any]) -> dict[str, Any]:
        arguments = dict(arguments)
        answer = read_fields_answer(
            arguments.pop("execution_id"), arguments.pop("field_paths"), max_tokens=max_tokens, **arguments
        ).value
        answers.append(answer)
        return answer

    return read


def tokens(answer: dict[str, Any]) -> int:
    return count_tokens(format_json(answer, compact=True))


def issues_run() -> str:
    run = store_outputs("read-json", {}, {"result": json.loads((EXAMPLES_DATA / "github_issues.json").read_text())})
    return str(run["execution_id"])


def test_a_typo_and_a_malformed_path_keep_their_null_and_say_why_in_the_json() -> None:
    answer = read_fields_answer(issues_run(), ["result[0].titel", "result[0", "result[0].number"])
    assert answer.found is True
    assert answer.value["result[0].titel"] is None and answer.value["result[0"] is None
    assert answer.value["_missing"] == {
        "result[0].titel": "result[0].titel: no key 'titel' here. Did you mean result[0].title, result[0].state?",
        "result[0": "Invalid field path at column 9: expected ']' to close the '[' at column 7\n  result[0\n"
        '          ^\nPaths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).',
    }


def test_an_answer_that_fits_has_no_extra_keys() -> None:
    answer = read_fields_answer(issues_run(), ["result[0].number", "result[*].state"], limit=2)
    assert answer.value == {"result[0].number": 150, "result[*].state": ["closed", "open"]}


def test_the_whole_list_pages_within_the_budget_and_names_the_next_page() -> None:
    execution_id = issues_run()
    answer = read_fields_answer(execution_id, ["result"]).value
    assert tokens(answer) <= 8000
    assert answer["_more"] == {
        "result": {
            "shown": "items 0-2 of 100",
            "next": {"execution_id": execution_id, "field_paths": ["result[*]"], "offset": 3},
        }
    }
    assert answer["_note"] == (
        "Answer kept under 8,000 tokens: each _more entry gives the arguments (next) that read on."
    )


def test_a_long_string_is_cut_with_its_length_and_the_char_offset_that_reads_on() -> None:
    run = store_outputs("custom", {}, {"result": {"text": "word " * 2000}})
    answer = read_fields_answer(run["execution_id"], ["result.text"], max_tokens=300).value
    more = answer["_more"]["result.text"]
    shown = len(answer["result.text"])
    assert more["shown"] == f"characters 0-{shown - 1} of 10000"
    assert more["next"] == {"execution_id": run["execution_id"], "field_paths": ["result.text"], "char_offset": shown}
    assert tokens(answer) <= 300


def test_a_dict_too_large_answers_with_its_structure_and_its_keys_to_read() -> None:
    run = store_outputs("custom", {}, {"result": {"a": "x " * 400, "b": list(range(300))}})
    answer = read_fields_answer(run["execution_id"], ["result"], max_tokens=200).value
    assert "result" not in answer
    more = answer["_more"]["result"]
    assert more["shown"] == "too large to show (2 keys): its structure, then read the paths you need"
    assert more["structure"]["result"] == {"type": "dict"}
    assert more["next"] == {"execution_id": run["execution_id"], "field_paths": ["result.a", "result.b"]}
    assert tokens(answer) <= 200


def test_several_paths_share_the_budget_and_a_small_one_stays_whole() -> None:
    execution_id = issues_run()
    answer = read_fields_answer(execution_id, ["result[0].number", "result[*].body", "result[*].title"]).value
    assert answer["result[0].number"] == 150
    assert tokens(answer) <= 8000
    assert set(answer["_more"]) == {"result[*].body"}  # the titles fit beside the bodies' first page
    issues = json.loads((EXAMPLES_DATA / "github_issues.json").read_text())
    assert answer["result[*].title"] == [issue["title"] for issue in issues]
    shown = len(answer["result[*].body"])
    assert answer["result[*].body"] == [issue["body"] for issue in issues[:shown]]
    assert answer["_more"]["result[*].body"]["shown"] == f"items 0-{shown - 1} of {len(issues)}"


def test_reading_every_page_of_the_issues_gives_the_value_back_exactly() -> None:
    execution_id = issues_run()
    value = json.loads((EXAMPLES_DATA / "github_issues.json").read_text())
    answers: list[dict[str, Any]] = []
    read = service_reader(8000, answers)
    assert read_all(read, {"execution_id": execution_id, "field_paths": ["result"]}) == value
    bodies = read_all(read, {"execution_id": execution_id, "field_paths": ["result[*].body"]})
    assert bodies == [issue["body"] for issue in value]
    assert max(tokens(answer) for answer in answers) <= 8000


KEYS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=300),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=25,
)
# Values that mostly need more than one answer: a list of 4-12 values (some long strings), a dict of 2-4
# lists, or a long string.
LARGE = (
    st.lists(JSON | st.text(min_size=100, max_size=300), min_size=4, max_size=12)
    | st.dictionaries(KEYS, st.lists(JSON, min_size=2, max_size=6), min_size=2, max_size=4)
    | st.text(min_size=600, max_size=2000)
)


def test_pages_together_are_the_value_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    """Each value read with a budget between a tenth and most of its own tokens (300-600: a dict's key paths
    alone, with keys such as ``"\\u001f𐀀"``, can outgrow smaller ones; see budget.py's structure) comes back
    exactly, every answer within the budget, in more than one answer whenever the value alone is over it;
    the share of examples that paged is printed and at least half (about 0.9)."""
    paged: list[bool] = []

    @settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=LARGE, share=st.floats(min_value=0.1, max_value=0.8))
    def pages_read_back(value: Any, share: float) -> None:
        budget = min(600, max(300, round(tokens({"result": value}) * share)))
        run = store_outputs("custom", {}, {"result": value})
        answers: list[dict[str, Any]] = []
        read = service_reader(budget, answers)
        whole = read_all(read, {"execution_id": run["execution_id"], "field_paths": ["result"]})
        assert format_json(whole, compact=True) == format_json(value, compact=True)
        assert all(tokens(answer) <= budget for answer in answers)
        assert len(answers) > 1 or tokens({"result": value}) <= budget
        paged.append(len(answers) > 1)

    pages_read_back()
    with capsys.disabled():
        print(f"\n[pages read back] {sum(paged)} of {len(paged)} examples paged")
    assert sum(paged) * 2 >= len(paged)


def test_a_tool_that_has_its_own_fields_argument_gets_the_prefixed_one_and_says_so() -> None:
    from pflow_structure.mcp.proxy.selection import Selection, take_fields, with_fields_argument

    tool = {"name": "q", "description": "Query.", "inputSchema": {"type": "object", "properties": {"_fields": {}}}}
    listed = with_fields_argument(tool)
    assert set(listed["inputSchema"]["properties"]) == {"_fields", "_pflow_structure_fields", "_jq"}
    assert listed["description"] == "Query. (_pflow_structure_fields: pflow-structure's _fields.)"
    sent, paths = take_fields({"_fields": "theirs", "_pflow_structure_fields": ["a"]}, tool["inputSchema"])
    assert (sent, paths) == ({"_fields": "theirs"}, Selection(paths=["a"]))


def test_registry_run_with_fields_answers_values_the_execution_id_and_the_rest_line() -> None:
    from pflow_structure.service import registry_run

    path = str(EXAMPLES_DATA / "github_issues.json")
    answer = registry_run("read-json", {"path": path}, fields=["result[*].number"], max_tokens=200)
    execution_id = answer["execution_id"]
    values = answer["values"]
    shown = len(values["result[*].number"])
    assert values["result[*].number"] == list(range(150, 150 - shown, -1))
    assert values["_more"]["result[*].number"]["next"] == {
        "execution_id": execution_id,
        "field_paths": ["result[*].number"],
        "offset": shown,
    }
    assert tokens(answer) <= 200


def test_a_structure_past_the_budget_lists_the_first_paths_and_says_how_many_more() -> None:
    from pflow_structure.service import read_fields, registry_run

    path = str(EXAMPLES_DATA / "github_issues.json")
    whole = registry_run("read-json", {"path": path}, all_fields=True)
    cut = registry_run("read-json", {"path": path}, all_fields=True, max_tokens=400)
    assert tokens(cut) <= 400
    kept = list(cut["structure"])
    assert kept == list(whole["structure"])[: len(kept)]
    left_out = len(whole["structure"]) - len(kept)
    assert cut["warnings"][-1] == (
        f"{left_out} more paths not shown to stay under 400 tokens: read a parent path, or raise max_tokens"
    )
    assert None not in read_fields(cut["execution_id"], kept[:5]).values()


def test_read_fields_on_the_command_line_ends_with_the_command_that_reads_on() -> None:
    from tests.test_cli import invoke, run_issues

    execution_id = run_issues()
    body = json.loads((EXAMPLES_DATA / "github_issues.json").read_text())[0]["body"]
    outcome = invoke("read-fields", execution_id, "result[0].body", "--max-tokens", "300")
    assert outcome.exit_code == 0
    shown = json.loads(outcome.stdout.split("\n")[0].removeprefix("result[0].body: "))
    assert 100 < len(shown) < len(body) and body.startswith(shown)
    assert outcome.stdout.split("\n")[1] == (
        f"# result[0].body: characters 0-{len(shown) - 1} of {len(body)}; read on: pflow-structure read-fields "
        f"{execution_id} 'result[0].body' --char-offset {len(shown)}"
    )
    rest = invoke("read-fields", execution_id, "result[0].body", "--char-offset", str(len(shown)), "--json")
    assert json.loads(rest.stdout)["result[0].body"] == body[len(shown) :]


def test_run_with_field_prints_the_values_and_exits_1_when_every_field_misses() -> None:
    from tests.test_cli import invoke

    path = f"path={EXAMPLES_DATA / 'github_issues.json'}"
    found = invoke("run", "read-json", path, "--field", "result[0].number", "--field", "result[0].state")
    lines = found.stdout.split("\n")
    assert (found.exit_code, lines[:2]) == (0, ["result[0].number: 150", 'result[0].state: "closed"'])
    assert lines[2].startswith("Cached as exec-") and lines[2].endswith(" PATH reads any other path.")
    missed = invoke("run", "read-json", path, "--field", "result[0].titel", "--json")
    assert missed.exit_code == 1
    answer = json.loads(missed.stdout)
    assert answer["values"]["_missing"] == {
        "result[0].titel": "result[0].titel: no key 'titel' here. Did you mean result[0].title, result[0].state?"
    }
    assert "result[0].title" in answer["structure"]


def test_the_answer_budget_comes_from_the_environment_and_a_bad_value_is_refused() -> None:
    import pytest

    from pflow_structure.errors import ParameterError
    from pflow_structure.settings import Settings

    assert Settings.from_env({}).answer_budget == 8000
    import os

    settings = Settings.from_env({**os.environ, "PFLOW_STRUCTURE_ANSWER_BUDGET": "500"})
    answer = read_fields_answer(issues_run(), ["result"], settings=settings).value
    assert tokens(answer) <= 500
    assert answer["_note"].startswith("Answer kept under 500 tokens")
    with pytest.raises(ParameterError, match="PFLOW_STRUCTURE_ANSWER_BUDGET='lots' is not a number"):
        Settings.from_env({"PFLOW_STRUCTURE_ANSWER_BUDGET": "lots"})
    with pytest.raises(ParameterError, match="max_tokens must be a whole number of at least 1, not 0"):
        read_fields_answer(issues_run(), ["result"], max_tokens=0)


def test_an_offset_past_the_end_says_so_over_mcp() -> None:
    """As the command line says it (tests/test_cli.py), in ``_more``: an empty page is never silent."""
    import asyncio

    from pflow_structure.mcp.server import answer_read_fields
    from pflow_structure.settings import Settings

    execution_id = issues_run()
    arguments = {"execution_id": execution_id, "field_paths": ["result[*].number", "$..number"], "offset": 150}
    answer = asyncio.run(answer_read_fields(arguments, Settings.from_env()))
    assert answer["structuredContent"] == {
        "result[*].number": [],
        "$..number": [],
        "_more": {
            "result[*].number": {"shown": "offset 150 is past the end: the list has 100 items"},
            "$..number": {"shown": "offset 150 is past the end: the list has 116 items"},
        },
    }


def test_a_structure_cut_to_no_paths_by_a_tiny_budget_does_not_say_the_node_wrote_nothing() -> None:
    from pflow_structure.render.structure_text import NO_PATHS, render_structure_text
    from pflow_structure.service import registry_run

    answer = registry_run("read-json", {"path": str(EXAMPLES_DATA / "github_issues.json")}, max_tokens=40)
    assert answer["structure"] == {}
    text = render_structure_text(answer)
    assert NO_PATHS not in text
    assert "(none fit the answer's budget: see the warning below)" in text
    assert "33 more paths not shown to stay under 40 tokens" in text


def test_a_want_view_cut_to_no_paths_by_a_tiny_budget_does_not_say_no_field_matches() -> None:
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.service import registry_run

    path = str(EXAMPLES_DATA / "github_issues.json")
    answer = registry_run("read-json", {"path": path}, want="title", structure=True, max_tokens=30)
    assert answer["structure"] == {} and answer["wanted"][0] == "result[0].title"
    text = render_structure_text(answer)
    assert "No field name matches" not in text
    assert "38 more paths not shown to stay under 30 tokens" in text
