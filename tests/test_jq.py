"""jq in the call (issue 36.3): read-fields --jq, run --jq, read_fields(jq=) over MCP and the Python API, _jq
on every proxied tool; checked before anything runs, refused where an agent may not reach, stopped at limits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflow_structure.cli.app import main
from pflow_structure.errors import JqExpressionError, JqRunError
from pflow_structure.paths.jq import REFUSED, check_jq, run_jq
from pflow_structure.service import read_fields, registry_run
from tests.conftest import EXAMPLES_DATA, cli_runner, examples
from tests.test_mcp_proxy import PROXY, in_session, npm_server, plain, texts

ISSUES = str(EXAMPLES_DATA / "github_issues.json")
OPEN_COUNT = '[.result[] | select(.state == "open") | .number] | length'
ENV_REFUSED = (
    "the jq expression uses $ENV (line 1, column 1), which is refused: it reads the environment of the process "
    "(its secrets); pass values in the expression instead"
)
PATHS_OR_JQ = "Give PATH... or --jq EXPR (one of them): the paths to read, or a jq expression."
BROKEN = ".a | .b |"
SYNTAX_ERROR = (
    "the jq expression does not compile: jq: error: syntax error, unexpected end of file at <top-level>, "
    "line 1, column 9:\n    .a | .b |\n            ^\njq: 1 compile error"
)


@pytest.fixture
def issues_id() -> str:
    return str(registry_run("read-json", {"path": ISSUES})["execution_id"])


# -- the check, before anything runs ------------------------------------------------------------------
def test_env_is_refused_with_its_reason() -> None:
    with pytest.raises(JqExpressionError) as caught:
        check_jq("$ENV.HOME")
    assert str(caught.value) == ENV_REFUSED


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_refused_name_is_refused_where_it_would_run(name: str) -> None:
    with pytest.raises(JqExpressionError, match=f"uses {re.escape(name)} "):
        check_jq(f"[1, {name}]")


@pytest.mark.parametrize(
    "expression",
    ['.result[] | select(.type == "input")', ".env", "{env: 1}", "def debug: 1; 2", ".a # env\n | .b", '"\\\\(env)"'],
)
def test_a_refused_name_as_text_a_field_a_key_a_new_name_or_a_comment_is_not_refused(expression: str) -> None:
    assert check_jq(expression) == expression


@pytest.mark.parametrize("expression", ['"\\(env)"', "{$ENV: 1}", ".a # not this line \\\\\nenv", "x::env"])
def test_a_refused_name_in_an_interpolation_a_key_variable_or_after_a_closed_comment_is_refused(
    expression: str,
) -> None:
    with pytest.raises(JqExpressionError, match="which is refused"):
        check_jq(expression)


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet='.[]{}()|"\\#$:;,\n env input debug as def x1 @', max_size=40))
def test_every_expression_is_accepted_or_refused_with_our_error(expression: str) -> None:
    try:
        assert check_jq(expression) == expression
    except JqExpressionError as exc:
        assert str(exc).startswith(("the jq expression", "a jq expression must be"))


def test_a_comment_continued_by_an_odd_backslash_is_read_as_jq_reads_it() -> None:
    # jq 1.8: a comment ending in an odd number of backslashes goes on to the next line, so env is comment.
    assert run_jq(".a # comment \\\nenv", {"a": 7}) == [7]


def test_a_syntax_error_is_jqs_own_message_with_the_line_and_column() -> None:
    with pytest.raises(JqExpressionError) as caught:
        check_jq(BROKEN)
    assert str(caught.value) == SYNTAX_ERROR


def test_the_refused_builtins_are_errors_inside_the_program_even_past_the_check() -> None:
    import jq

    from pflow_structure.paths.jq import _guarded

    with pytest.raises(ValueError, match="env is refused: it reads the environment"):
        jq.compile(_guarded("env")).input_value(None).all()
    assert jq.compile(_guarded("$ENV")).input_value(None).all() == ["{}"]


def test_without_the_jq_package_the_option_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pflow_structure.paths.jq import _compiles

    _compiles.cache_clear()  # an expression compiled before is not compiled again
    monkeypatch.setitem(sys.modules, "jq", None)  # what an import of a missing package raises
    with pytest.raises(JqExpressionError, match=r"cannot be imported here \(.*\): pip install 'jq>=1.13'$"):
        check_jq(".a")


# -- running: results, limits ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (".result | keys | length", 100),
        (".result | map(select(.comments > 5)) | length", 18),
        (".result | sort_by(.comments) | .[-3:] | map(.number)", [64, 133, 59]),
        (".result | group_by(.state) | map({state: .[0].state, count: length})",
         [{"state": "closed", "count": 87}, {"state": "open", "count": 13}]),
        (".result[0] | {number, title}", {"number": 150, "title": "Different results from Betamax vs Requests"}),
    ],
)  # fmt: skip
def test_jq_answers_as_jq_does(issues_id: str, expression: str, expected: Any) -> None:
    assert read_fields(issues_id, jq=expression) == {expression: expected}


def test_the_python_api_pages_a_jq_list_by_offset_and_limit(issues_id: str) -> None:
    expression = ".result[].number"
    assert read_fields(issues_id, jq=expression, offset=3, limit=2) == {expression: [147, 146]}
    assert read_fields(issues_id, jq=expression, offset=98) == {expression: [52, 51]}


def test_integers_past_2_to_the_53_keep_their_digits() -> None:
    assert run_jq(".a", {"a": 12345678901234567890123}) == [12345678901234567890123]


def test_repeat_1_stops_with_an_error_that_says_how_to_bound_it() -> None:
    with pytest.raises(JqRunError) as caught:
        run_jq("repeat(1)", None)
    assert str(caught.value).startswith(
        "the jq expression answered more than 100,000 results (repeat, range and recurse without a bound never end)"
    )


def test_a_run_past_the_time_limit_is_stopped_with_an_error() -> None:
    with pytest.raises(JqRunError) as caught:
        run_jq("[range(1e12)] | length", None, time_limit=0.5)
    assert str(caught.value) == (
        "the jq expression ran past its time limit of 0.5 s and was stopped: bound it (limit(n; ...), first(...), "
        ".[:n]); repeat, range, recurse and while without a bound never end"
    )


def test_a_runtime_error_is_jqs_own_message() -> None:
    with pytest.raises(JqRunError) as caught:
        run_jq(".[] | .x", [[1]])
    assert str(caught.value) == 'the jq expression failed while it ran: Cannot index array with string ("x")'


# -- answers ---------------------------------------------------------------------------------------
def test_a_stream_is_answered_as_a_list_and_says_so(issues_id: str) -> None:
    from pflow_structure.service.querying import jq_answer

    answer = jq_answer(issues_id, ".result[] | select(.comments > 10) | .number")
    assert answer.value == {
        ".result[] | select(.comments > 10) | .number": [133, 65, 64, 59],
        "_stream": "4 results (a stream): answered as a list",
    }


def test_no_result_is_a_miss_with_its_reason(issues_id: str) -> None:
    from pflow_structure.service.querying import NOTHING, jq_answer

    answer = jq_answer(issues_id, ".result[] | select(.comments > 1000)")
    assert answer == (
        {".result[] | select(.comments > 1000)": None, "_missing": {".result[] | select(.comments > 1000)": NOTHING}},
        False,
    )


def test_a_result_over_the_budget_pages_and_the_pages_are_the_result(issues_id: str) -> None:
    from pflow_structure.service.querying import jq_answer

    expression = ".result | map({number, title})"
    whole = read_fields(issues_id, jq=expression)[expression]
    arguments: dict[str, Any] = {"execution_id": issues_id, "jq": expression}
    pages: list[Any] = []
    for _ in range(20):
        call = {name: value for name, value in arguments.items() if name != "jq"}  # jq_answer's own names
        answer = jq_answer(**call, expression=arguments["jq"], max_tokens=400).value
        pages += answer[expression]
        if "_more" not in answer:
            break
        arguments = answer["_more"][expression]["next"]
    assert len(pages) == 100 and pages == whole


def test_a_jq_answer_in_a_codex_session_keeps_to_its_bytes_and_lines(issues_id: str) -> None:
    from pflow_structure.render.output_text import compact
    from pflow_structure.service.clients import session_settings
    from pflow_structure.service.querying import jq_answer
    from pflow_structure.settings import Settings

    codex = session_settings(Settings.from_env(), {"name": "codex-mcp-client"})  # 10,000 bytes, 256 lines
    answer = jq_answer(issues_id, ".result | map({number, title, body})", settings=codex).value
    text = compact(answer)
    assert len(text.encode("utf-8")) <= 10_000 and text.count("\n") < 256
    assert (
        answer["_more"][".result | map({number, title, body})"]["next"]["jq"] == ".result | map({number, title, body})"
    )


def test_a_dict_too_large_answers_its_structure_and_asks_to_narrow_the_expression(issues_id: str) -> None:
    from pflow_structure.service.querying import jq_answer

    more = jq_answer(issues_id, ".result[0]", max_tokens=300).value["_more"][".result[0]"]
    assert more["shown"] == (
        "too large to show: its structure; narrow the expression, e.g. (.result[0]) | keys, or (.result[0]) | .KEY"
    )
    assert "next" not in more
    assert list(more["structure"])[:3] == [".", ".url", ".repository_url"]  # paths relative to the result


# -- the command line ------------------------------------------------------------------------------
def test_read_fields_jq_answers_the_count(issues_id: str) -> None:
    result = cli_runner().invoke(main, ["read-fields", issues_id, "--jq", OPEN_COUNT])
    assert (result.exit_code, result.stdout) == (0, "13\n")


def test_run_jq_refuses_a_syntax_error_before_the_node_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = cli_runner().invoke(main, ["run", "shell", f"command=touch {marker}", "--jq", BROKEN])
    assert (result.exit_code, result.stderr) == (1, f"Error: {SYNTAX_ERROR}\n")
    assert not marker.exists()


def test_run_jq_answers_the_result_and_the_rest_stays_cached() -> None:
    result = cli_runner().invoke(main, ["run", "read-json", f"path={ISSUES}", "--jq", OPEN_COUNT])
    first, rest = result.stdout.split("\n", 1)
    assert (result.exit_code, first) == (0, "13")
    assert rest.startswith("Cached as exec-")


def test_read_fields_takes_paths_or_jq_not_both(issues_id: str) -> None:
    result = cli_runner().invoke(main, ["read-fields", issues_id, "result", "--jq", "."])
    assert result.exit_code == 2
    assert result.stderr.endswith(f"Error: {PATHS_OR_JQ}\n")


# -- MCP -----------------------------------------------------------------------------------------------
def test_serve_read_fields_and_registry_run_with_jq_answer_the_count_and_refuse_env() -> None:
    import sys

    async def work(client: Any) -> Any:
        run = {"node_type": "read-json", "parameters": {"path": ISSUES}}
        ran = plain(await client.call_tool("registry_run", {**run, "jq": OPEN_COUNT}))
        execution_id = ran["structuredContent"]["execution_id"]
        counted = plain(await client.call_tool("read_fields", {"execution_id": execution_id, "jq": OPEN_COUNT}))
        refused = plain(await client.call_tool("read_fields", {"execution_id": execution_id, "jq": "$ENV"}))
        return ran, counted, refused

    ran, counted, refused = in_session([sys.executable, "-m", "pflow_structure", "serve"], work)
    assert (ran["isError"], ran["structuredContent"]["values"]) == (False, {OPEN_COUNT: 13})
    assert (counted["isError"], counted["structuredContent"]) == (False, {OPEN_COUNT: 13})
    assert refused["isError"] is True
    assert texts(refused) == [f"Error: {ENV_REFUSED}"]


def test_the_proxy_answers_jq_in_one_call_and_refuses_a_broken_expression_before_the_tool_runs(
    tmp_path: Path,
) -> None:
    written = tmp_path / "written.txt"

    async def work(client: Any) -> Any:
        counted = plain(await client.call_tool("read_text_file", {"path": ISSUES, "_jq": OPEN_COUNT}))
        write = {"path": str(written), "content": "x"}
        refused = plain(await client.call_tool("write_file", {**write, "_jq": BROKEN}))
        env = plain(await client.call_tool("write_file", {**write, "_jq": "$ENV"}))
        execution_id = json.loads(texts(counted)[0])["execution_id"]
        read = plain(
            await client.call_tool("read_fields", {"execution_id": execution_id, "jq": "[.result[].number] | max"})
        )
        failed = plain(await client.call_tool("read_text_file", {"path": ISSUES, "_jq": ".result.x"}))
        return counted, refused, env, read, failed

    command = [*PROXY, "--", npm_server("mcp-server-filesystem"), str(EXAMPLES_DATA), str(tmp_path)]
    counted, refused, env, read, failed = in_session(command, work)
    answer = json.loads(texts(counted)[0])
    assert (counted["isError"], answer["values"]) == (False, {OPEN_COUNT: 13})
    assert answer["rest"].startswith(f"The whole output is cached as {answer['execution_id']}")
    assert (read["isError"], json.loads(texts(read)[0])) == (False, {"[.result[].number] | max": 150})
    # A failure while jq runs answers the cached id and jq's reason, never the whole result.
    reason = 'the jq expression failed while it ran: Cannot index array with string ("x")'
    failure = json.loads(texts(failed)[0])
    assert (failed["isError"], failure["values"]) == (True, {".result.x": None, "_missing": {".result.x": reason}})
    # A failure while jq runs answers the cached id and jq's reason, never the whole result.
    reason = 'the jq expression failed while it ran: Cannot index array with string ("x")'
    failure = json.loads(texts(failed)[0])
    assert (failed["isError"], failure["values"]) == (True, {".result.x": None, "_missing": {".result.x": reason}})
    assert (refused["isError"], texts(refused)) == (True, [f"Error: {SYNTAX_ERROR}"])
    assert (env["isError"], texts(env)) == (True, [f"Error: {ENV_REFUSED}"])
    assert not written.exists()  # neither call reached the server


def test_a_tool_with_its_own_jq_argument_gets_the_prefixed_one() -> None:
    from pflow_structure.mcp.proxy.selection import Selection, take_fields, with_fields_argument

    tool = {"name": "q", "description": "Query.", "inputSchema": {"type": "object", "properties": {"_jq": {}}}}
    listed = with_fields_argument(tool)
    assert listed["inputSchema"]["properties"]["_pflow_structure_jq"] == {"type": "string"}
    assert listed["description"] == "Query. (_pflow_structure_jq: pflow-structure's _jq.)"
    sent, selection = take_fields({"_jq": "theirs", "_pflow_structure_jq": ".a"}, tool["inputSchema"])
    assert (sent, selection) == ({"_jq": "theirs"}, Selection(jq=".a"))


def test_jq_is_taken_off_before_the_call_goes_downstream() -> None:
    from tests.test_want_proxy import ECHO

    async def work(client: Any) -> Any:
        return plain(await client.call_tool("echo_typed", {"text": "hi", "_jq": ".result"}))

    answer = json.loads(texts(in_session([*PROXY, "--", *ECHO], work))[0])
    assert answer["values"] == {".result": ['ARGS {"text":"hi"}']}  # what the server was sent (text, as lines): no _jq


def test_a_jq_expression_that_misses_the_top_key_is_told_where_to_start() -> None:
    from pflow_structure.errors import JqRunError
    from pflow_structure.paths.jq import run_jq

    value = {"result": {"data": {"children": [{"title": "a"}]}}}
    with pytest.raises(JqRunError) as raised:
        run_jq("[.data.children[] | .title]", value)
    assert str(raised.value) == (
        "the jq expression failed while it ran: Cannot iterate over null (null). "
        "The input's top has .result: start from there (.result | [.data.children[] | .title])"
    )
    with pytest.raises(JqRunError) as raised:
        run_jq(".[0]", {"result": [1]})
    assert str(raised.value).endswith("The input's top has .result: start from there (.result[0])")
    assert run_jq(".result[0]", {"result": [1]}) == [1]


def test_the_rows_of_a_list_of_numbers_read_on_ranked_with_the_number_itself_as_the_column() -> None:
    from pflow_structure.paths.jq import jq_rows_ranked, jq_rows_where

    data = {"sizes": [3.5, 9, 1, 7]}
    ranked = jq_rows_ranked(["sizes"], [], [(".", [])], ("number", True, [1], 2))
    assert ranked is not None and run_jq(ranked, data) == [[{"i": 3, ".": 7}, {"i": 0, ".": 3.5}]]
    where = jq_rows_where(["sizes"], [], [(".", [])], ["1"])
    assert where is not None and run_jq(where, {"sizes": ["1", "2", "1"]}) == [[{"i": 0, ".": "1"}, {"i": 2, ".": "1"}]]


def test_jq_rows_where_quotes_keys_and_values_and_gives_each_rows_index(tmp_path: Path) -> None:
    from pflow_structure import read_fields, registry_run
    from pflow_structure.paths.jq import jq_path, jq_rows_where

    assert jq_path(["result", "os-ext", "a b", "état", "end"]) == '.result["os-ext"]["a b"]["\\u00e9tat"].end'
    assert jq_path(["result", 0, "id"]) is None
    items = [{"os-ext": {"a b": 'it\'s "open"\\' if n % 4 == 0 else "shut"}, "id": n} for n in range(12)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"list": items}), encoding="utf-8")
    expression = jq_rows_where(["result", "list"], ["os-ext", "a b"], [("id", ["id"])], ['it\'s "open"\\'])
    assert expression is not None
    answer = registry_run("read-json", {"path": str(path)}, structure=True)
    rows = read_fields(answer["execution_id"], jq=expression)[expression]
    assert rows == [{"i": n, "id": n} for n in (0, 4, 8)]
