"""Issue 6 where agents use it: `pflow-structure format`, `read-fields --format`, the proxy's
small answers, and the line formats on what a real @modelcontextprotocol/server-memory returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cli import main
from pflow_structure.mcp.proxy.shaping import shape_result
from pflow_structure.render.auto import render_as, render_auto
from pflow_structure.render.failure_log import read_failures
from pflow_structure.render.lines import render_lines
from pflow_structure.render.tokens import count_tokens
from pflow_structure.service import registry_run
from pflow_structure.settings import Settings
from tests.conftest import cli_runner
from tests.test_mcp_proxy import in_session, npm_server, plain

PEOPLE = [{"id": 1, "name": "Ada", "role": "eng"}, {"id": 2, "name": "Bo", "role": "ops"}]


def invoke(*args: str, stdin: str | None = None) -> Any:
    return cli_runner().invoke(main, list(args), input=stdin, catch_exceptions=False)


# -- pflow-structure format ------------------------------------------------------------------


def test_format_prints_rows_as_a_toon_table() -> None:
    outcome = invoke("format", "-", stdin=json.dumps(PEOPLE))
    assert (outcome.exit_code, outcome.stdout) == (0, "[2]{id,name,role}:\n  1,Ada,eng\n  2,Bo,ops\n")


def test_format_auto_falls_back_to_compact_json_for_nested_values(tmp_path: Path) -> None:
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"a": [{"b": {"c": [1, {"d": None}]}}]}, indent=2), encoding="utf-8")
    assert invoke("format", str(path)).stdout == '{"a":[{"b":{"c":[1,{"d":null}]}}]}\n'


def test_format_as_a_format_that_does_not_fit_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "tags.json"
    path.write_text('[{"id": 1, "tags": ["x"]}]', encoding="utf-8")
    outcome = invoke("format", str(path), "--as", "table")
    assert outcome.exit_code == 1
    assert outcome.stderr == (
        f"Error: {path} cannot be shown as table: a table cell must be a primitive, not list. "
        "Use --as auto, which picks a format that fits.\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a":', "Error: {name} is not JSON: Expecting value at line 1, column 6. Fix it or pass a JSON file.\n"),
        (b"", "Error: {name} is not JSON: Expecting value at line 1, column 1. Fix it or pass a JSON file.\n"),
        (b"\xff\xfe\x00PNG", "Error: {name} is not UTF-8 text (byte 0); format reads JSON.\n"),
    ],
)
def test_format_refuses_what_is_not_json_with_the_place(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    outcome = invoke("format", str(path))
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (1, "", message.format(name=path))


def test_format_of_a_missing_file_says_it_cannot_be_read() -> None:
    outcome = invoke("format", "/nonexistent/x.json")
    assert (outcome.exit_code, outcome.stderr) == (
        1,
        "Error: Cannot read /nonexistent/x.json: No such file or directory.\n",
    )


def test_format_lines_with_an_operation_uses_its_line_format() -> None:
    found = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}
    outcome = invoke("format", "-", "--as", "lines", "--operation", "search_nodes", stdin=json.dumps(found))
    assert outcome.stdout == "Found 1 entity:\n1. Ada [person] - wrote the first program\n"


def test_format_auto_admits_summaries_only_with_lossy() -> None:
    found = {"entities": [{"name": f"n{i}", "entityType": "t", "observations": ["o"] * 3} for i in range(5)]}
    exact = invoke("format", "-", "--operation", "search_nodes", stdin=json.dumps(found)).stdout
    lossy = invoke("format", "-", "--operation", "search_nodes", "--lossy", stdin=json.dumps(found)).stdout
    assert json.loads(exact) == found
    assert lossy.startswith("Found 5 entities:\n1. n0 [t] - o; o; o\n")


def test_format_stats_reports_tokens_savings_and_times() -> None:
    outcome = invoke("format", "-", "--stats", "--runs", "3", "--json", stdin=json.dumps(PEOPLE * 10))
    stats = json.loads(outcome.stdout)
    assert stats["format"] == "auto (toon)"
    assert (stats["output"]["tokens"], stats["compact"]["tokens"]) == (
        168,
        243,
    )  # o200k tokens of the TOON and the JSON
    assert stats["savings_vs_compact"] > 25 and stats["flagged"] is False
    assert stats["render_ms"]["runs"] == 3


def test_format_stats_text_flags_a_rendering_that_saves_under_25_percent() -> None:
    text = invoke("format", "-", "--stats", "--runs", "1", stdin='{"a": [1, {"b": 2}]}').stdout
    assert "compact JSON: " in text and "saved 0%" in text
    assert text.endswith("review: under 25% saved against compact JSON\n")


def test_format_help_lists_every_format() -> None:
    text = invoke("format", "--help").stdout
    assert "[default: auto]" in text and "auto|outline|lines|table|toon|json" in text


# -- read-fields --format --------------------------------------------------------------------


@pytest.fixture
def people_run(tmp_path: Path) -> str:
    path = tmp_path / "people.json"
    path.write_text(json.dumps({"people": PEOPLE * 15, "count": 30}), encoding="utf-8")
    return str(registry_run("read-json", {"path": str(path)})["execution_id"])


def test_read_fields_format_auto_shows_rows_as_a_table_under_their_path(people_run: str) -> None:
    outcome = invoke("read-fields", people_run, "result.people", "result.count", "--limit", "2", "--format", "auto")
    assert outcome.stdout == (
        "result.people:\n  [30]{id,name,role}:\n"
        + "".join(f"    {p['id']},{p['name']},{p['role']}\n" for p in PEOPLE * 15)
        + "result.count: 30\n"
    )


def test_read_fields_format_pages_a_wildcard_before_rendering(people_run: str) -> None:
    outcome = invoke("read-fields", people_run, "result.people[*]", "--limit", "2", "--offset", "4", "--format=toon")
    assert outcome.stdout == (
        "result.people[*]:  # items 4-5 of 30; --offset 6 for more\n  [2]{id,name,role}:\n    1,Ada,eng\n    2,Bo,ops\n"
    )


def test_read_fields_format_that_does_not_fit_falls_back_once_to_the_format_that_fits(people_run: str) -> None:
    outcome = invoke("read-fields", people_run, "result", "result.people[0]", "result.count", "--format", "table")
    auto = invoke("read-fields", people_run, "result", "result.people[0]", "result.count", "--format", "auto")
    assert (outcome.exit_code, auto.exit_code) == (0, 0)
    assert outcome.stdout == auto.stdout  # a nested dict and a lone record: auto's choice for each
    assert outcome.stdout.startswith("result:\n  people[30]{id,name,role}:\n")
    assert outcome.stderr == "note: values that table cannot hold are shown in the format that fits (--format auto)\n"


# -- the proxy's small answers ---------------------------------------------------------------


def _shape(result: dict[str, Any], tmp_path: Path) -> Any:
    settings = Settings(cache_dir=tmp_path / "cache", failure_log=tmp_path / "fail.jsonl")

    def render(value: Any) -> tuple[str, str]:
        rendered = render_auto(value, operation="tool", failure_log=settings.failure_log)
        return rendered.text, rendered.format

    def store(tool: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        raise AssertionError("small answers are not cached")

    return shape_result("tool", {}, result, budget=1000, count=count_tokens, store=store, render=render)


def test_a_small_list_of_records_comes_back_as_a_toon_table(tmp_path: Path) -> None:
    shaped = _shape({"content": [{"type": "text", "text": json.dumps(PEOPLE, indent=2)}]}, tmp_path)
    assert shaped.kind == "formatted"
    assert shaped.result["content"][0]["text"] == "[2]{id,name,role}:\n  1,Ada,eng\n  2,Bo,ops"
    assert shaped.tokens_out == count_tokens(shaped.result["content"][0]["text"]) < shaped.tokens_in


def test_numbers_as_the_server_wrote_them_are_not_reformatted(tmp_path: Path) -> None:
    text = '[{"id": 1, "price": 19.90}, {"id": 2, "price": 5.00}]'
    shaped = _shape({"content": [{"type": "text", "text": text}]}, tmp_path)
    assert (shaped.kind, shaped.result["content"][0]["text"]) == (
        "compacted",
        '[{"id":1,"price":19.90},{"id":2,"price":5.00}]',
    )


def test_a_structured_twin_keeps_the_text_as_json(tmp_path: Path) -> None:
    result = {"content": [{"type": "text", "text": json.dumps(PEOPLE, indent=2)}], "structuredContent": {"r": PEOPLE}}
    shaped = _shape(result, tmp_path)
    assert shaped.kind == "compacted"  # a table beside the JSON twin would show the data twice
    assert json.loads(shaped.result["content"][0]["text"]) == PEOPLE


# -- real server-memory data in the line formats ---------------------------------------------

ENTITIES = [
    {"name": "Ada", "entityType": "person", "observations": ["wrote the first program", "born 1815"]},
    {"name": "Analytical Engine", "entityType": "machine", "observations": ["designed by Babbage"]},
    {"name": "Babbage", "entityType": "person", "observations": ["mathematician"]},
]
RELATIONS = [
    {"from": "Ada", "to": "Analytical Engine", "relationType": "programmed"},
    {"from": "Babbage", "to": "Analytical Engine", "relationType": "designed"},
]


def test_server_memory_read_graph_and_search_nodes_render_as_entity_and_relation_lines(tmp_path: Path) -> None:
    async def work(client: Any) -> Any:
        await client.call_tool("create_entities", {"entities": ENTITIES})
        await client.call_tool("create_relations", {"relations": RELATIONS})
        graph = plain(await client.call_tool("read_graph", {}))
        found = plain(await client.call_tool("search_nodes", {"query": "Babbage"}))
        return graph["structuredContent"], found["structuredContent"]

    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    graph, found = in_session([npm_server("mcp-server-memory")], work, env)
    assert render_lines(graph, "read_graph") == (
        "Found 3 entities:\n"
        "1. Ada [person] - wrote the first program; born 1815\n"
        "2. Analytical Engine [machine] - designed by Babbage\n"
        "3. Babbage [person] - mathematician\n"
        "Relations (2):\n"
        "1. Ada --programmed--> Analytical Engine\n"
        "2. Babbage --designed--> Analytical Engine"
    )
    lines = render_lines(found, "search_nodes", query="Babbage")
    assert lines.startswith('Found 2 entities for "Babbage":\n')
    assert lines.endswith(
        "Relations (2):\n1. Ada --programmed--> Analytical Engine\n2. Babbage --designed--> Analytical Engine"
    )
    assert count_tokens(lines) < 0.5 * count_tokens(json.dumps(found, indent=2))
    assert read_failures(tmp_path / "none.jsonl") == []


def test_read_fields_format_cannot_make_a_key_pass_for_the_next_path(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({"meta": {"total": 2, "result.count": 5}, "count": 5}), encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})["execution_id"]
    outcome = invoke("read-fields", run, "result.meta", "result.count", "--format", "toon")
    assert outcome.stdout == "result.meta:\n  total: 2\n  result.count: 5\nresult.count: 5\n"


def test_read_fields_format_keeps_the_bytes_marker(tmp_path: Path) -> None:
    from tests.test_compliance import _node, run_pocketflow_node

    run = run_pocketflow_node(_node({"files": [{"data": b"\x89PNG"}, {"data": "iVBORw=="}]}), "writes-bytes")
    outcome = invoke("read-fields", run["execution_id"], "result.files", "--format", "auto")
    assert outcome.stdout == 'result.files: [{"data": "<4 bytes, base64: iVBORw==>"}, {"data": "iVBORw=="}]\n'


def test_read_fields_json_with_another_format_is_a_usage_error(people_run: str) -> None:
    outcome = invoke("read-fields", people_run, "result", "--json", "--format", "toon")
    assert outcome.exit_code == 2
    assert "--json prints JSON; it cannot be combined with --format toon." in outcome.stderr


def test_a_lone_surrogate_is_never_written_raw_by_a_compact_format() -> None:
    rows = [{"id": 1, "name": "a\ud800b"}, {"id": 2, "name": "c"}]
    rendered = render_auto(rows)
    assert rendered.format == "json" and "\\ud800" in rendered.text
    rendered.text.encode("utf-8")


def test_control_characters_keep_a_value_out_of_toon() -> None:
    rows = [{"k": "a\x0cb"}, {"k": "c"}]
    assert render_auto(rows).format == "json"
    assert render_as([{"k": "a\nb"}, {"k": "c"}], "toon") == '[2]{k}:\n  "a\\nb"\n  c'


def test_a_successful_mutation_with_a_null_error_is_a_success() -> None:
    item = {"success": True, "error": None, "name": "New Learning", "uuid": "0123456789abcdef"}
    assert render_lines(item, "add_memory") == '✓ Episode added: "New Learning" (id: ...89abcdef)'


def test_read_fields_format_zips_wildcard_paths_over_one_list_into_one_table(people_run: str) -> None:
    outcome = invoke(
        "read-fields", people_run, "result.people[*].name", "result.people[*].role", "result.count", "--limit", "3"
    )
    assert outcome.stdout.startswith('result.people[*].name: ["Ada", "Bo", "Ada"]')  # text mode: a line each
    zipped = invoke(
        "read-fields",
        people_run,
        "result.people[*].name",
        "result.people[*].role",
        "result.count",
        "--limit",
        "3",
        "--format",
        "auto",
    )
    assert zipped.stdout == (
        "result.people[*].name, result.people[*].role:  # items 0-2 of 30; --offset 3 for more\n"
        "  [3]{name,role}:\n    Ada,eng\n    Bo,ops\n    Ada,eng\n"
        "result.count: 30\n"
    )


def test_read_fields_format_does_not_zip_lists_of_other_lengths_or_nested_values(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    data = {"a": [{"x": 1, "t": [1]}, {"x": 2, "t": [2]}], "b": [{"y": 1}, {"y": 2}, {"y": 3}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})["execution_id"]
    outcome = invoke("read-fields", run, "result.a[*].x", "result.b[*].y", "result.a[*].t", "--format", "auto")
    assert outcome.stdout == "result.a[*].x:\n  [1,2]\nresult.b[*].y:\n  [1,2,3]\nresult.a[*].t:\n  [[1],[2]]\n"


# -- bad input and option combinations (found in review) -------------------------------------


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[NaN]", "is not strict JSON: NaN is not a JSON number"),
        ('{"a": 1, "b": {"a": 2, "a": 3}}', 'is not strict JSON: the key "a" appears twice in one object'),
        ("[" + "9" * 5000 + "]", "digits"),
    ],
    ids=["nan", "duplicate-key", "huge-integer"],
)
def test_format_refuses_what_json_readers_disagree_on(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(content, encoding="utf-8")
    outcome = cli_runner().invoke(main, ["format", str(path)])
    assert outcome.exit_code == 1
    assert f"Error: {path} " in outcome.stderr and words in outcome.stderr
    assert "Traceback" not in outcome.stdout + outcome.stderr


def test_format_with_standard_input_closed_says_so() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -m pflow_structure format - <&-"], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr == "Error: Standard input is closed; pipe JSON into format -, or give a FILE.\n"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--json"], "--json only applies with --stats"),
        (["--runs", "3"], "--runs only applies with --stats"),
        (["--as", "toon", "--lossy"], "--lossy only applies to --as auto"),
        (["--as", "table", "--operation", "search_nodes"], "--operation picks a line format"),
    ],
)
def test_format_options_that_would_be_ignored_are_usage_errors(args: list[str], words: str) -> None:
    outcome = cli_runner().invoke(main, ["format", "-", *args], input=json.dumps(PEOPLE))
    assert outcome.exit_code == 2 and words in outcome.stderr


def test_format_of_a_value_too_deep_for_a_format_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[{"name": ' + "[" * 900 + "]" * 900 + "}]", encoding="utf-8")
    outcome = cli_runner().invoke(main, ["format", str(path), "--as", "lines"])
    assert outcome.exit_code == 1
    assert "nested too deeply to show as lines. Use --as auto" in outcome.stderr


def test_format_stats_of_auto_names_the_format_it_picked() -> None:
    text = invoke("format", "-", "--stats", "--runs", "1", stdin=json.dumps(PEOPLE)).stdout
    assert text.startswith("format: auto (toon)\n")


def test_the_token_vocabulary_is_built_before_the_render_clock_starts() -> None:
    from pflow_structure.render import tokens

    tokens._build_encoding.cache_clear()
    built_when_timed = []

    def clock() -> float:
        built_when_timed.append(tokens._build_encoding.cache_info().currsize)
        return 0.0

    render_auto(PEOPLE, clock=clock)
    assert built_when_timed == [1, 1]  # no first-call build counted as a slow render


def test_the_built_vocabulary_keeps_one_copy_of_its_ranks_and_still_counts() -> None:
    from pflow_structure.render import tokens

    encoding = tokens._encoding()
    if encoding is None:
        pytest.skip("tiktoken or litellm's o200k file is not installed")
    assert len(encoding._mergeable_ranks) == 0  # tiktoken's pickling copy, 27 MB resident (issue 37)
    assert count_tokens("hello world, how are you") == 6  # hello / world / , / how / are / you


def test_format_stats_times_runs_after_one_untimed_render() -> None:
    from pflow_structure.render.metrics import format_stats

    calls = []

    def render(value: Any) -> str:
        calls.append(value)
        return "x"

    stats = format_stats([1], render, runs=3)
    assert len(calls) == 4 and stats.render_ms.runs == 3


def test_read_fields_without_a_path_is_a_usage_error(people_run: str) -> None:
    outcome = cli_runner().invoke(main, ["read-fields", people_run])
    assert (
        outcome.exit_code == 2
        and "Error: Give PATH... or --jq EXPR (one of them): the paths to read, or a jq expression." in outcome.stderr
    )


def test_read_fields_table_past_the_end_says_so(people_run: str) -> None:
    paths = ["result.people[*].id", "result.people[*].name"]
    outcome = invoke("read-fields", people_run, *paths, "--offset", "30", "--format", "toon")
    assert outcome.stdout == (
        "result.people[*].id, result.people[*].name:  # offset 30 is past the end: the list has 30 items\n  []\n"
    )
