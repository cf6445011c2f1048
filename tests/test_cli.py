"""The ``pflow-structure`` command: help, exit codes, parameter typing, output, cache commands.

Most tests drive click's CliRunner in-process; a few run ``python -m pflow_structure`` as a
real subprocess, the way a shell or an agent does. Exit codes: 0 success, 1 failure, 2
usage error; errors go to stderr.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import Result

from pflow_structure import ExecutionCache, __version__
from pflow_structure.cli import main
from pflow_structure.integrations.pflow import pflow_version
from pflow_structure.render.structure_text import TREE_HEADER
from tests.conftest import CORPUS, REPO, cli_runner

ISSUES = CORPUS / "github__list_issues.json"
ISSUE_NUMBERS = [issue["number"] for issue in json.loads(ISSUES.read_text(encoding="utf-8"))]
ISSUE_TITLES = [issue["title"] for issue in json.loads(ISSUES.read_text(encoding="utf-8"))]
ID_PATTERN = r"exec-\d+-[0-9a-f]{8,}"


# -- helpers --------------------------------------------------------------------------------


def invoke(*args: str, input: str | None = None) -> Result:
    return cli_runner().invoke(main, list(args), input=input, prog_name="pflow-structure")


def run_json(*args: str) -> dict[str, Any]:
    outcome = invoke("run", *args, "--json")
    assert outcome.exit_code == 0, outcome.stderr
    result: dict[str, Any] = json.loads(outcome.stdout)
    return result


def run_issues() -> str:
    """Run read-json on the GitHub issue list; return the execution id."""
    execution_id: str = run_json("read-json", f"path={ISSUES}")["execution_id"]
    return execution_id


def cached_params(cache_dir: Path, execution_id: str) -> Any:
    return json.loads((cache_dir / f"{execution_id}.json").read_text(encoding="utf-8"))["params"]


def typed(cache_dir: Path, *params: str) -> Any:
    """The params as the CLI typed them, read from the cache entry of a real run."""
    data = cache_dir.parent / "data.json"
    data.write_text('{"ok": true}', encoding="utf-8")
    execution_id = run_json("read-json", f"path={data}", *params)["execution_id"]
    stored = cached_params(cache_dir, execution_id)
    del stored["path"]
    return stored


def walk_commands(command: click.Command, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(prefix) or "pflow-structure", command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from walk_commands(sub, (*prefix, name))


def python_m(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pflow_structure", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
        timeout=120,
    )


def age_entry(cache_dir: Path, execution_id: str, hours: float) -> None:
    """Rewrite an entry's timestamp as if it was written ``hours`` ago."""
    path = cache_dir / f"{execution_id}.json"
    entry = json.loads(path.read_text(encoding="utf-8"))
    moment = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=hours)
    entry["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(entry), encoding="utf-8")


# -- help and version -------------------------------------------------------------------------


@pytest.mark.parametrize("name, command", list(walk_commands(main)), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_has_help_text(name: str, command: click.Command) -> None:
    assert command.help, f"{name} has no help text"
    assert command.get_short_help_str().strip(), f"{name} has no short help"


@pytest.mark.parametrize("name, command", list(walk_commands(main)), ids=lambda v: v if isinstance(v, str) else "")
def test_every_option_has_help_text(name: str, command: click.Command) -> None:
    missing = [
        option.opts[0]
        for option in command.params
        if isinstance(option, click.Option) and not (option.help or "").strip()
    ]
    assert missing == [], f"{name}: options without help: {missing}"


def test_the_help_names_the_pflow_cli_releases_the_pflow_command_runs() -> None:
    (line,) = [line for line in invoke("--help").stdout.splitlines() if line.startswith("  pflow ")]
    assert line.split(None, 1)[1].startswith("Run pflow-cli 0.16 (or 0.8 to 0.10) with the")


@pytest.mark.parametrize("name", [name for name, _ in walk_commands(main)])
def test_every_command_prints_its_help_page(name: str) -> None:
    words = [] if name == "pflow-structure" else name.split()
    outcome = invoke(*words, "--help")
    assert outcome.exit_code == 0
    # `pflow --help` goes to pflow-cli's own CLI when it is installed (our page says what to install)
    usage = (
        "Usage: pflow "
        if words == ["pflow"] and pflow_version() is not None
        else f"Usage: {' '.join(['pflow-structure', *words])} "
    )
    assert outcome.stdout.startswith(usage)


def test_version_option_prints_the_package_version() -> None:
    outcome = invoke("--version")
    assert (outcome.exit_code, outcome.stdout) == (0, f"pflow-structure, version {__version__}\n")


def test_short_version_option_prints_the_package_version() -> None:
    outcome = invoke("-V")
    assert (outcome.exit_code, outcome.stdout) == (0, f"pflow-structure, version {__version__}\n")


# -- a real process --------------------------------------------------------------------------


def test_python_dash_m_runs_a_node_and_another_process_reads_a_field() -> None:
    ran = python_m("run", "read-json", f"path={ISSUES}", "--json")
    assert (ran.returncode, ran.stderr) == (0, "")
    execution_id = json.loads(ran.stdout)["execution_id"]
    read = python_m("read-fields", execution_id, "result[0].number", "result[0].title")
    assert (read.returncode, read.stderr) == (0, "")
    assert read.stdout == f"result[0].number: {ISSUE_NUMBERS[0]}\nresult[0].title: {json.dumps(ISSUE_TITLES[0])}\n"


def test_python_dash_m_unknown_node_exits_1_with_suggestion_on_stderr() -> None:
    outcome = python_m("run", "read-jsn", "path=x.json")
    assert (outcome.returncode, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        "Error: Unknown node type 'read-jsn'. Did you mean read-json? Run `pflow-structure nodes` to list them.\n"
    )


def test_python_dash_m_argument_without_equals_exits_2() -> None:
    outcome = python_m("run", "read-json", "data.json")
    assert (outcome.returncode, outcome.stdout) == (2, "")
    assert outcome.stderr.endswith("Error: Parameter 'data.json' has no '='; write KEY=VALUE, e.g. path=data.json\n")


def test_python_dash_m_text_output_starts_like_the_spec_example() -> None:
    outcome = python_m("run", "read-json", f"path={ISSUES}")
    assert outcome.returncode == 0
    lines = outcome.stdout.split("\n")
    assert lines[0] == "✓ Node executed successfully"
    assert re.fullmatch(f"Execution ID: {ID_PATTERN}", lines[1])
    assert lines[2:5] == ["", TREE_HEADER, "  result list, 100 items; each [0]:"]


def test_a_nested_list_writes_its_item_once_and_the_fields_below_extend_it() -> None:
    from pflow_structure.render.structure_text import tree_lines
    from tests.structure_text import parse_tree

    structure = {
        "result": {"type": "dict"},
        "result.items": {"type": "list", "length": 20},
        "result.items[0].id": {"type": "int"},
        "result.items[0].tags": {"type": "list", "min_length": 0, "max_length": 3, "length": 1.5},
        "result.items[0].tags[0]": {"type": "str", "avg_length": 4},
        "result.items[0].owner": {"type": "dict"},
        "result.items[0].owner.login": {"type": "str", "avg_length": 9},
        "result.files": {"type": "dict", "keys": 3, "dynamic_keys": True, "key_names": ["a.txt", "b.txt", "c"]},
        "result.files[*].size": {"type": "int"},
        "result.files[*].mode": {"type": "str", "avg_length": 6},
        "result.one": {"type": "list", "length": 2},
        "result.one[0].name": {"type": "str", "avg_length": 3},
    }
    hidden = {"result.items[0]": {"names": ["url", "node_id"]}, "result.items[0].owner": {"names": ["id"]}}
    lines = tree_lines(structure, hidden)
    assert lines == [
        "  result dict",
        "    .items list, 20 items; each [0]:",
        "      .id int",
        "      .tags list, 0-3 items, avg 1.5",
        "        [0] str ~4",
        "      .owner dict",
        "        .login str ~9",
        "        other keys: id",
        "      other keys: url, node_id",
        '    .files dict, 3 keys: "a.txt", "b.txt", c; each [*]:',
        "      .size int",
        "      .mode str ~6",
        "    .one list, 2 items",
        "      [0].name str ~3",
    ]
    assert parse_tree(lines) == (structure, hidden)  # every path composes back as it was


# -- exit codes -------------------------------------------------------------------------------


def test_run_success_exits_0() -> None:
    outcome = invoke("run", "read-json", f"path={ISSUES}")
    assert (outcome.exit_code, outcome.stderr) == (0, "")


def test_unknown_node_exits_1_with_did_you_mean_on_stderr() -> None:
    outcome = invoke("run", "read-jsn", "path=x.json")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        "Error: Unknown node type 'read-jsn'. Did you mean read-json? Run `pflow-structure nodes` to list them.\n"
    )


def test_argument_without_equals_is_a_usage_error() -> None:
    outcome = invoke("run", "read-json", "data.json")
    assert outcome.exit_code == 2
    assert outcome.stderr == (
        "Usage: pflow-structure run [OPTIONS] NODE [KEY=VALUE]...\n"
        "Try 'pflow-structure run --help' for help.\n\n"
        "Error: Parameter 'data.json' has no '='; write KEY=VALUE, e.g. path=data.json\n"
    )


def test_failing_node_exits_1_with_the_node_message_and_caches_nothing(isolated_cache: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    outcome = invoke("run", "read-json", f"path={missing}")
    assert outcome.exit_code == 1
    assert outcome.stderr == (
        f"Error: Node 'read-json' failed: {missing} does not exist; "
        "check the path (relative paths start at the current directory)\n"
    )
    assert list(isolated_cache.glob("exec-*.json")) == []


def test_unknown_execution_id_exits_1_with_execution_not_found() -> None:
    outcome = invoke("read-fields", "exec-1763463202-0cd0c8fe", "result")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        "Error: Execution not found: exec-1763463202-0cd0c8fe. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id.\n"
    )


# A malformed execution id (exit 1, the exact text, no file touched): tests/test_security.py, its one home.


def test_expired_execution_exits_1_with_execution_expired(isolated_cache: Path) -> None:
    execution_id = run_issues()
    age_entry(isolated_cache, execution_id, hours=30)
    outcome = invoke("read-fields", execution_id, "result[0].title")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        f"Error: Execution expired: {execution_id} is 30.0 h old and entries live 24 h. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id.\n"
    )


def test_unknown_command_exits_2() -> None:
    assert invoke("probe", "x").exit_code == 2


def test_unknown_option_exits_2() -> None:
    assert invoke("run", "--no-such-option", "read-json").exit_code == 2


def test_negative_limit_is_a_usage_error() -> None:
    assert invoke("read-fields", "exec-1763463202-0cd0c8fe", "result[*].id", "--limit", "-1").exit_code == 2


# -- parameter typing -------------------------------------------------------------------------


def test_integers_and_decimals_become_numbers(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "n=5", "neg=-12", "ratio=0.25", "big=1e3") == {
        "n": 5,
        "neg": -12,
        "ratio": 0.25,
        "big": 1000.0,
    }


def test_number_like_text_that_is_not_a_json_number_stays_text(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "zip=007", "a=nan", "b=inf", "c=1_000", "d= 5", "e=1e400") == {
        "zip": "007",
        "a": "nan",
        "b": "inf",
        "c": "1_000",
        "d": " 5",
        "e": "1e400",
    }


def test_true_and_false_become_booleans(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "on=true", "off=false", "shout=TRUE") == {"on": True, "off": False, "shout": "TRUE"}


def test_null_becomes_none(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "nothing=null") == {"nothing": None}


def test_values_starting_with_a_bracket_or_brace_are_json(isolated_cache: Path) -> None:
    assert typed(isolated_cache, 'tags=[1, "a", null]', 'filter={"state": {"in": ["open"]}}') == {
        "tags": [1, "a", None],
        "filter": {"state": {"in": ["open"]}},
    }


def test_json_value_holding_nan_is_stored_without_breaking_the_run(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "weights=[NaN, 1]") == {"weights": ["NaN", 1]}


def test_bracket_value_that_is_not_json_stays_text(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "note=[draft") == {"note": "[draft"}


def test_text_after_the_first_equals_sign_is_the_value(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "query=a=b", "empty=", "words=two words") == {
        "query": "a=b",
        "empty": "",
        "words": "two words",
    }


def test_at_file_reads_the_value_from_the_file(tmp_path: Path) -> None:
    script = tmp_path / "command.sh"
    script.write_text('echo \'{"from": "file"}\'', encoding="utf-8")
    execution_id = run_json("shell", f"command=@{script}")["execution_id"]
    outcome = invoke("read-fields", execution_id, "stdout.from")
    assert (outcome.exit_code, outcome.stdout) == (0, 'stdout.from: "file"\n')


def test_at_file_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    outcome = invoke("run", "shell", f"command=@{missing}")
    assert outcome.exit_code == 2
    assert outcome.stderr.endswith(
        f"Error: Cannot read {missing} for '@{missing}': [Errno 2] No such file or directory: '{missing}'\n"
    )


def test_duplicate_key_is_a_usage_error() -> None:
    outcome = invoke("run", "read-json", f"path={ISSUES}", "path=other.json")
    assert outcome.exit_code == 2
    assert outcome.stderr.endswith("Error: Parameter 'path' is given twice\n")


def test_key_missing_before_equals_is_a_usage_error() -> None:
    outcome = invoke("run", "read-json", "=value")
    assert outcome.exit_code == 2
    assert outcome.stderr.endswith("Error: Parameter '=value' has no name before '='\n")


def test_secret_parameters_are_masked_in_the_cache(isolated_cache: Path) -> None:
    assert typed(isolated_cache, "api_key=sk-123", "author=ada") == {"api_key": "***", "author": "ada"}


# -- run output -------------------------------------------------------------------------------


def test_run_json_prints_the_result_dict() -> None:
    result = run_json("read-json", f"path={ISSUES}")
    assert list(result) == [
        "execution_id",
        "node_type",
        "structure",
        "field_count",
        "original_field_count",
        "filtered",
        "filter",
        "hidden_fields",
        "filter_note",
        "hidden",
    ]
    assert re.fullmatch(ID_PATTERN, result["execution_id"])
    assert result["structure"]["result[0].title"] == {"type": "str", "avg_length": 41}
    assert result["filtered"] is True and result["filter"] == "heuristic"
    # 110 fields in all; the heuristic keeps 28 (at most the target of 40; the token budget decides)
    assert (result["field_count"], result["original_field_count"], result["hidden_fields"]) == (28, 110, 82)
    assert "result[0].url" not in result["structure"] and "result[0].node_id" not in result["structure"]


def test_all_fields_lists_everything_and_the_filter_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = run_json("read-json", f"path={ISSUES}", "--all-fields")
    assert list(everything)[-3:] == ["field_count", "original_field_count", "filtered"]
    assert everything["filtered"] is False and everything["field_count"] == everything["original_field_count"]
    assert "result[0].url" in everything["structure"]
    monkeypatch.setenv("PFLOW_STRUCTURE_FILTER", "off")
    assert run_json("read-json", f"path={ISSUES}")["structure"] == everything["structure"]
    monkeypatch.setenv("PFLOW_STRUCTURE_FILTER", "sometimes")
    outcome = invoke("run", "read-json", f"path={ISSUES}")
    assert outcome.exit_code == 1
    expected = "PFLOW_STRUCTURE_FILTER='sometimes' is not a filter mode; use one of auto, llm, heuristic, off"
    assert expected in outcome.stderr


def test_run_text_lists_template_paths_and_a_summary() -> None:
    outcome = invoke("run", "read-json", f"path={ISSUES}", "--max-paths", "2")
    execution_id = re.search(ID_PATTERN, outcome.stdout)
    assert execution_id
    assert outcome.stdout == (
        "✓ Node executed successfully\n"
        f"Execution ID: {execution_id[0]}\n"
        "\n"
        f"{TREE_HEADER}\n"
        "  result list, 100 items\n"
        "    [0].url str ~57\n"
        "\n"
        "Node type: read-json\n"
        "Field count: 110, not filtered\n"
        "Omitted paths: 66 deeper paths not listed; read a parent path with read-fields, "
        "or run again with --max-paths N (PFLOW_STRUCTURE_MAX_PATHS)\n"
        f"Read values: pflow-structure read-fields {execution_id[0]} 'result[*].url'\n"
    )


# -- read-fields output -----------------------------------------------------------------------


def test_read_fields_prints_one_path_colon_json_line_per_path() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[0].number", "result[-1].title")
    assert (outcome.exit_code, outcome.stdout) == (
        0,
        f"result[0].number: {ISSUE_NUMBERS[0]}\nresult[-1].title: {json.dumps(ISSUE_TITLES[-1], ensure_ascii=False)}\n",
    )


def test_read_fields_missing_key_prints_null_with_reason_and_suggestions() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[0].titel")
    assert (outcome.exit_code, outcome.stdout) == (
        1,
        "result[0].titel: null  # result[0].titel: no key 'titel' here. "
        "Did you mean result[0].title, result[0].state?\n",
    )


def test_read_fields_out_of_range_index_prints_null_with_reason() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[500].title")
    assert outcome.stdout == (
        "result[500].title: null  # result[500].title: index 500 is out of range: the list has 100 items.\n"
    )


def test_read_fields_syntax_error_keeps_every_line_a_comment() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[", "result[0].number")
    assert outcome.stdout == (
        "result[: null  # Invalid field path at column 8: '[' is not closed\n"
        "  #   result[\n"
        "  #          ^\n"
        '  # Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).\n'
        f"result[0].number: {ISSUE_NUMBERS[0]}\n"
    )


def test_read_fields_wildcard_answers_every_item_that_fits_the_budget() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number")
    shown = ", ".join(str(n) for n in ISSUE_NUMBERS)
    assert outcome.stdout == f"result[*].number: [{shown}]\n"


def test_read_fields_wildcard_past_the_budget_pages_with_the_next_command() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].title", "--max-tokens", "300")
    first, read_on = outcome.stdout.splitlines()
    count = len(json.loads(first.removeprefix("result[*].title: ").split("  # ")[0]))
    assert first.endswith(f"]  # items 0-{count - 1} of 100; --offset {count} for more")
    assert 10 < count < 100
    assert read_on == (
        f"# result[*].title: items 0-{count - 1} of 100; read on: pflow-structure read-fields {execution_id} "
        f"'result[*].title' --offset {count}"
    )


def test_read_fields_limit_and_offset_page_a_wildcard() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number", "--limit", "3", "--offset", "2")
    shown = ", ".join(str(n) for n in ISSUE_NUMBERS[2:5])
    assert outcome.stdout == f"result[*].number: [{shown}]  # items 2-4 of 100; --offset 5 for more\n"


def test_read_fields_explicit_limit_is_shown_in_full() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number", "--limit", "25")
    shown = ", ".join(str(n) for n in ISSUE_NUMBERS[:25])
    assert outcome.stdout == f"result[*].number: [{shown}]  # items 0-24 of 100; --offset 25 for more\n"


def test_read_fields_last_page_has_no_more_hint() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number", "--offset", "98")
    shown = ", ".join(str(n) for n in ISSUE_NUMBERS[98:])
    assert outcome.stdout == f"result[*].number: [{shown}]  # items 98-99 of 100\n"


def test_read_fields_limit_0_reports_the_total() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number", "--limit", "0")
    assert outcome.stdout == "result[*].number: []  # none of 100 items shown (offset 0)\n"


def test_read_fields_offset_past_the_end_says_so() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[*].number", "--offset", "200")
    assert outcome.stdout == "result[*].number: []  # offset 200 is past the end: the list has 100 items\n"


def test_read_fields_jsonpath_returns_a_paged_list() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "$.result[*].number", "--limit", "2")
    shown = ", ".join(str(n) for n in ISSUE_NUMBERS[:2])
    assert outcome.stdout == f"$.result[*].number: [{shown}]  # items 0-1 of 100; --offset 2 for more\n"


def test_read_fields_json_prints_the_values_dict_and_notes_on_stderr() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "result[0].number", "result[0].titel", "--json")
    assert outcome.exit_code == 0
    reason = "result[0].titel: no key 'titel' here. Did you mean result[0].title, result[0].state?"
    assert json.loads(outcome.stdout) == {
        "result[0].number": ISSUE_NUMBERS[0],
        "result[0].titel": None,
        "_missing": {"result[0].titel": reason},
    }
    assert outcome.stderr == (
        "note: result[0].titel: no key 'titel' here. Did you mean result[0].title, result[0].state?\n"
    )


def test_read_fields_with_no_paths_is_a_usage_error() -> None:
    execution_id = run_issues()
    outcome = invoke("read-fields", execution_id, "--json")
    assert (outcome.exit_code, outcome.stdout) == (2, "")
    assert outcome.stderr.endswith(
        "Error: Give PATH... or --jq EXPR (one of them): the paths to read, or a jq expression.\n"
    )


def test_read_fields_shows_bytes_with_their_length_and_base64() -> None:
    execution_id = run_json("shell", r"command=printf '\377\376\000\001PNG'")["execution_id"]
    outcome = invoke("read-fields", execution_id, "stdout")
    assert outcome.stdout == 'stdout: "<7 bytes, base64: //4AAVBORw==>"\n'


# -- nodes ------------------------------------------------------------------------------------


def test_nodes_lists_the_built_in_nodes_with_a_description() -> None:
    outcome = invoke("nodes")
    assert outcome.exit_code == 0
    lines = outcome.stdout.splitlines()
    assert "http       Send an HTTP request and capture the response." in lines
    assert "read-json  Read a JSON or JSON Lines file into the shared store." in lines
    assert "shell      Run a shell command and capture its output." in lines


def test_nodes_json_lists_name_description_and_source() -> None:
    listing = json.loads(invoke("nodes", "--json").stdout)
    assert {"name": "shell", "description": "Run a shell command and capture its output.", "source": "builtin"} in (
        listing
    )


# -- cache commands ---------------------------------------------------------------------------


def test_cache_list_shows_one_line_per_entry() -> None:
    first, second = run_issues(), run_issues()
    lines = invoke("cache", "list").stdout.splitlines()
    assert [line.split()[0] for line in lines] == sorted([first, second])
    assert all(re.fullmatch(rf"{ID_PATTERN} +\d+\.\d\d h +\d+ B", line) for line in lines)


def test_cache_list_on_an_empty_cache_says_so(isolated_cache: Path) -> None:
    outcome = invoke("cache", "list")
    assert (outcome.exit_code, outcome.stdout) == (0, f"No cached executions in {isolated_cache}\n")


def test_cache_list_marks_expired_entries(isolated_cache: Path) -> None:
    old = ExecutionCache(isolated_cache, clock=lambda: dt.datetime.now().timestamp() - 25 * 3600)
    execution_id = old.put("read-json", {}, {"result": 1}).execution_id
    outcome = invoke("cache", "list")
    assert outcome.exit_code == 0
    # the age is 25 h and however long the listing took (a loaded machine), hence 25.dd
    assert re.fullmatch(rf"{execution_id}    25\.\d\d h         202 B  expired\n", outcome.stdout), outcome.stdout


def test_cache_list_json_lists_entries() -> None:
    execution_id = run_issues()
    (row,) = json.loads(invoke("cache", "list", "--json").stdout)
    assert (row["execution_id"], row["expired"]) == (execution_id, False)


def test_cache_stats_reports_entries_and_limits(isolated_cache: Path) -> None:
    run_issues()
    stats = json.loads(invoke("cache", "stats", "--json").stdout)
    assert (stats["directory"], stats["entries"], stats["expired"], stats["ttl_hours"]) == (
        str(isolated_cache),
        1,
        0,
        24.0,
    )
    assert stats["max_bytes"] == 1024**3


def test_cache_stats_text_prints_key_value_lines(isolated_cache: Path) -> None:
    run_issues()
    lines = invoke("cache", "stats").stdout.splitlines()
    assert lines[:3] == [f"directory: {isolated_cache}", "entries: 1", "expired: 0"]


def test_cache_prune_removes_expired_entries(isolated_cache: Path) -> None:
    fresh = run_issues()
    old = ExecutionCache(isolated_cache, clock=lambda: dt.datetime.now().timestamp() - 25 * 3600)
    stale = old.put("read-json", {}, {"result": 1}).execution_id
    outcome = invoke("cache", "prune")
    assert (outcome.exit_code, outcome.stdout) == (0, "Removed 1 expired and 0 over-cap entries; 1 remain.\n")
    assert sorted(p.stem for p in isolated_cache.glob("exec-*.json")) == [fresh]
    assert stale != fresh


def test_cache_clear_yes_deletes_every_entry(isolated_cache: Path) -> None:
    run_issues()
    run_issues()
    outcome = invoke("cache", "clear", "--yes")
    assert (outcome.exit_code, outcome.stdout) == (0, "Deleted 2 entries.\n")
    assert list(isolated_cache.glob("exec-*.json")) == []


def test_cache_clear_without_yes_keeps_entries_when_the_answer_is_no(isolated_cache: Path) -> None:
    run_issues()
    outcome = invoke("cache", "clear", input="n\n")
    assert outcome.exit_code == 1
    assert outcome.stdout == f"Delete every cached execution in {isolated_cache}? [y/N]: n\n"
    assert len(list(isolated_cache.glob("exec-*.json"))) == 1


def test_cache_clear_without_yes_deletes_when_the_answer_is_yes(isolated_cache: Path) -> None:
    run_issues()
    outcome = invoke("cache", "clear", input="y\n")
    assert (outcome.exit_code, outcome.stdout.splitlines()[-1]) == (0, "Deleted 1 entries.")


# -- --cache-dir ------------------------------------------------------------------------------


def test_cache_dir_option_stores_the_entry_there(isolated_cache: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-cache"
    outcome = invoke("--cache-dir", str(other), "run", "read-json", f"path={ISSUES}", "--json")
    execution_id = json.loads(outcome.stdout)["execution_id"]
    assert [p.name for p in other.glob("exec-*.json")] == [f"{execution_id}.json"]
    assert list(isolated_cache.glob("exec-*.json")) == []


def test_cache_dir_option_is_where_read_fields_looks(tmp_path: Path) -> None:
    other = tmp_path / "other-cache"
    outcome = invoke("--cache-dir", str(other), "run", "read-json", f"path={ISSUES}", "--json")
    execution_id = json.loads(outcome.stdout)["execution_id"]
    found = invoke("--cache-dir", str(other), "read-fields", execution_id, "result[0].number")
    assert (found.exit_code, found.stdout) == (0, f"result[0].number: {ISSUE_NUMBERS[0]}\n")
    assert invoke("read-fields", execution_id, "result[0].number").exit_code == 1


def test_run_flat_prints_each_template_path_in_full_as_pflow_does() -> None:
    outcome = invoke("run", "read-json", f"path={ISSUES}", "--max-paths", "3", "--flat")
    lines = outcome.stdout.split("\n")
    assert lines[3:7] == [
        "Available template paths:",
        "  ✓ ${result} (list, 100 items)",
        "  ✓ ${result[0].url} (str, ~57 chars)",
        "  ✓ ${result[0].repository_url} (str, ~46 chars)",
    ]


def test_run_tree_and_flat_list_the_same_paths() -> None:
    tree = invoke("run", "read-json", f"path={ISSUES}").stdout.split("\n\n")[1].split("\n")[1:]
    flat = invoke("run", "read-json", f"path={ISSUES}", "--flat").stdout.split("\n\n")[1].split("\n")[1:]
    assert len(tree) == len(flat) > 10
    assert tree[:2] == ["  result list, 100 items; each [0]:", "    .id int"]
    assert flat[:2] == ["  ✓ ${result} (list, 100 items)", "  ✓ ${result[0].id} (int)"]


def test_cache_dir_option_applies_to_cache_commands(tmp_path: Path) -> None:
    other = tmp_path / "other-cache"
    invoke("--cache-dir", str(other), "run", "read-json", f"path={ISSUES}")
    stats = json.loads(invoke("--cache-dir", str(other), "cache", "stats", "--json").stdout)
    assert (stats["directory"], stats["entries"]) == (str(other), 1)


def test_keys_that_are_not_valid_utf8_are_printed_escaped_not_a_crash(tmp_path: Path) -> None:
    data = tmp_path / "surrogates.json"
    data.write_text('{"\\udc81": "\\ud800x", "k": 1}', encoding="ascii")
    text = invoke("run", "read-json", f"path={data}", "--structure")
    assert text.exit_code == 0
    assert '    ["\\udc81"] str ~2\n' in text.stdout
    execution_id = re.search(ID_PATTERN, text.stdout)
    assert execution_id
    read = invoke("read-fields", execution_id[0], 'result["\\udc81"]')
    assert (read.exit_code, read.stdout) == (0, 'result["\\udc81"]: "\\ud800x"\n')
    as_json = invoke("read-fields", execution_id[0], 'result["\\udc81"]', "--json")
    assert json.loads(as_json.stdout) == {'result["\\udc81"]': "\ud800x"}


def test_read_fields_text_counts_items_that_lack_a_wildcard_path() -> None:
    execution_id = run_json("read-json", f"path={ISSUES}")["execution_id"]
    outcome = invoke("read-fields", execution_id, "result[*].milestone.title", "--limit", "2")
    assert outcome.stdout == (
        "result[*].milestone.title: [null, null]  # items 0-1 of 100; --offset 2 for more; "
        "84 of 100 items lack this path (null)\n"
    )
