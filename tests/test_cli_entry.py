"""The click-free read-fields path prints exactly what the click command prints.

``pflow-structure read-fields`` is what agents call most, so the console script reads its
plain forms without importing click (pflow_structure.cli.entry); anything else goes to click.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pflow_structure.cli.entry import parse_read_fields, run_read_fields
from pflow_structure.cli.read_fields import ReadFieldsArgs
from tests.test_cli import invoke, run_issues

EXAMPLE_ID = "exec-1763463202-0cd0c8fe"


def _cases(execution_id: str, cache_dir: str) -> list[list[str]]:
    return [
        ["read-fields", execution_id, "result[0].title"],
        ["read-fields", execution_id, "result[*].number", "--limit", "3"],
        ["read-fields", execution_id, "result[*].number", "--limit=3", "--offset=98"],
        ["read-fields", execution_id, "result[*].milestone.title"],
        ["read-fields", execution_id, "result[0].titel", "result[", "result[500].x", "result[0].pull_request.url"],
        ["read-fields", execution_id, "result[0].title", "result[0].labels", "--json"],
        ["read-fields", execution_id, "--json", "result[9999].x", "result[*].id", "--offset", "99"],
        ["read-fields", execution_id, "$..milestone.title", "--limit", "2"],
        ["read-fields", execution_id, "result[?(@.state=='open')].number", "--limit", "0"],
        ["read-fields", "exec-1-../../etc/passwd", "x"],
        ["read-fields", EXAMPLE_ID, "result"],
        ["--cache-dir", cache_dir, "read-fields", execution_id, "result[0].number"],
        [f"--cache-dir={cache_dir}", "read-fields", execution_id, "result[1].number"],
        ["read-fields", execution_id, "result[*].labels[0]", "--limit", "40", "--format", "auto"],
        ["read-fields", execution_id, "result[0].labels", "result[0].title", "--format=toon"],
        ["read-fields", execution_id, "result[0].user", "--format", "table"],
        ["read-fields", execution_id, "result[0].title", "--format", "json"],
        ["read-fields", execution_id, "result[*].number", "result[*].state", "--limit", "5", "--format", "auto"],
        ["--cache-dir", cache_dir + "-elsewhere", "read-fields", execution_id, "result[1].number"],
        ["read-fields", execution_id, "--jq", '[.result[] | select(.state == "open")] | length'],
        ["read-fields", execution_id, "--jq=.result[] | select(.comments > 10) | .number", "--json"],
        ["read-fields", execution_id, "--jq", ".result | map({number, state})", "--limit", "3", "--format", "auto"],
        ["read-fields", execution_id, "--jq", "$ENV.HOME"],
        ["read-fields", execution_id, "--jq", ".result | map(.title"],
        ["read-fields", execution_id, "--jq", ".result[] | select(.comments > 1000)"],
    ]


def test_the_fast_path_prints_what_click_prints(capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    execution_id = run_issues()
    for argv in _cases(execution_id, str(isolated_cache)):
        args = parse_read_fields(argv)
        assert args is not None, argv
        code = run_read_fields(args)
        fast = capsys.readouterr()
        slow = invoke(*argv)
        assert (code, fast.out, fast.err) == (slow.exit_code, slow.stdout, slow.stderr), argv


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["read-fields"],
        ["read-fields", EXAMPLE_ID],
        ["read-fields", EXAMPLE_ID, "--json"],
        ["read-fields", "--help"],
        ["read-fields", EXAMPLE_ID, "x", "-h"],
        ["read-fields", EXAMPLE_ID, "x", "--limit", "-1"],
        ["read-fields", EXAMPLE_ID, "x", "--limit"],
        ["read-fields", EXAMPLE_ID, "x", "--limit=", "y"],
        ["read-fields", EXAMPLE_ID, "x", "--offset", "two"],
        ["read-fields", EXAMPLE_ID, "x", "--limit", "9" * 5000],
        ["read-fields", EXAMPLE_ID, "--", "x"],
        ["read-fields", EXAMPLE_ID, "x", "--bogus"],
        ["read-fields", EXAMPLE_ID, "x", "--json=yes"],
        ["read-fields", EXAMPLE_ID, "x", "--format", "yaml"],
        ["read-fields", EXAMPLE_ID, "x", "--format"],
        ["read-fields", EXAMPLE_ID, "x", "--jq", "."],
        ["read-fields", EXAMPLE_ID, "--jq"],
        ["--cache-dir"],
        ["--cache-dir", "d"],
        ["--verbose", "read-fields", EXAMPLE_ID, "x"],
        ["run", "read-json", "path=x.json"],
        ["cache", "list"],
    ],
)
def test_anything_unusual_goes_to_click(argv: list[str]) -> None:
    assert parse_read_fields(argv) is None


def test_plain_forms_are_parsed() -> None:
    argv = ["--cache-dir=/c", "read-fields", EXAMPLE_ID, "a", "--json", "b", "--limit=5", "--offset", "2", "-"]
    assert parse_read_fields(argv) == ReadFieldsArgs(
        EXAMPLE_ID, ["a", "b", "-"], as_json=True, limit=5, offset=2, cache_dir="/c"
    )
    assert parse_read_fields(["read-fields", EXAMPLE_ID, "a", "--format", "toon"]) == ReadFieldsArgs(
        EXAMPLE_ID, ["a"], format="toon"
    )
    assert parse_read_fields(["read-fields", EXAMPLE_ID, "--jq", ".a | length"]) == ReadFieldsArgs(
        EXAMPLE_ID, [], jq=".a | length"
    )


# What a plain read-fields leaves unloaded (its start-up is what agents wait for most): click, the
# filter, the structure inference, the reference resolver, the answer budget and token counting
# (loaded only for an answer over the budget), the usage log, the encoding package (an entry with
# bytes, orjson for a large one), the cache protocols (settings reads a URL with cache/urls.py),
# standard modules that only some branches need, and typing (our named tuples come from records.py,
# annotations import it only for the type checker).
NOT_LOADED_BY_READ_FIELDS = (
    "asyncio",
    "base64",
    "click",
    "collections.abc",
    "copy",
    "dataclasses",
    "datetime",
    "inspect",
    "jsonpath_ng",
    "litellm",
    "math",
    "orjson",
    "pflow_structure.cache.backend",
    "pflow_structure.cache.usage",
    "pflow_structure.encoding",
    "pflow_structure.encoding.jsonio",
    "pflow_structure.filtering",
    "pflow_structure.render.budget",
    "pflow_structure.render.tokens",
    "pflow_structure.structure",
    "pflow_structure.values",
    "threading",
    "tiktoken",
    "typing",
)


def test_the_console_script_reads_fields_without_loading_what_it_does_not_need(isolated_cache: Path) -> None:
    execution_id = run_issues()
    code = (
        "import sys; sys.argv = ['pflow-structure', 'read-fields', sys.argv[1], 'result[0].number'];"
        "from pflow_structure.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n"
        f"    print([m for m in {NOT_LOADED_BY_READ_FIELDS!r} if m in sys.modules], exit.code, file=sys.stderr)"
    )
    env = {**os.environ, "PFLOW_STRUCTURE_CACHE_DIR": str(isolated_cache)}
    result = subprocess.run([sys.executable, "-c", code, execution_id], capture_output=True, text=True, env=env)
    assert (result.stdout, result.stderr) == ("result[0].number: 150\n", "[] 0\n")


def test_python_dash_m_uses_the_same_entry_point(isolated_cache: Path) -> None:
    execution_id = run_issues()
    env = {**os.environ, "PFLOW_STRUCTURE_CACHE_DIR": str(isolated_cache)}
    result = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "read-fields", execution_id, "result[1].number"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (result.returncode, result.stdout) == (0, "result[1].number: 149\n")
    help_text = subprocess.run([sys.executable, "-m", "pflow_structure", "--help"], capture_output=True, text=True)
    assert help_text.stdout.startswith("Usage: pflow-structure [OPTIONS] COMMAND [ARGS]...")


def test_a_cache_dir_that_is_a_file_is_left_to_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pflow_structure.cli.entry import _cache_dir_is_usable

    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert _cache_dir_is_usable(str(a_file)) is False
    assert _cache_dir_is_usable(str(tmp_path / "missing")) is True
    monkeypatch.setenv("PFLOW_STRUCTURE_CACHE_DIR", str(a_file))
    assert _cache_dir_is_usable(None) is False
    result = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "read-fields", EXAMPLE_ID, "x"],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert f"Directory '{a_file}' is a file." in result.stderr


def test_a_closed_pipe_ends_quietly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`read-fields ... | head`: the reader went away; exit 1 without a traceback, as click does."""
    from pflow_structure.cli import entry

    def closed_pipe(args: ReadFieldsArgs) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(entry, "run_read_fields", closed_pipe)
    assert entry._run_like_click(ReadFieldsArgs(EXAMPLE_ID, ["x"])) == 1
    assert capsys.readouterr().err == ""


def test_ctrl_c_prints_aborted_as_click_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pflow_structure.cli import entry

    def interrupted(args: ReadFieldsArgs) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(entry, "run_read_fields", interrupted)
    assert entry._run_like_click(ReadFieldsArgs(EXAMPLE_ID, ["x"])) == 1
    assert capsys.readouterr().err == "\nAborted!\n"


@pytest.mark.parametrize(
    ("paths", "code"),
    [
        (["result[0].titel"], 1),
        (["result[0].titel", "result[9999].x", "result["], 1),
        (["result[0].titel", "result[0].number"], 0),
        (["result[0].milestone"], 0),  # a real null is a value: the path resolved
        (["result[*].number", "--offset", "500"], 0),  # past the end: an empty page, not a miss
    ],
)
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_read_fields_exits_1_only_when_no_path_found_a_value(
    isolated_cache: Path, paths: list[str], code: int, json_flag: list[str]
) -> None:
    execution_id = run_issues()
    argv = ["read-fields", execution_id, *paths, *json_flag]
    assert parse_read_fields(argv) is not None  # the click-free path answers it...
    fast = subprocess.run(
        [sys.executable, "-m", "pflow_structure", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PFLOW_STRUCTURE_CACHE_DIR": str(isolated_cache)},
    )
    clicked = invoke(*argv)  # ...and click gives the same exit code
    assert (fast.returncode, clicked.exit_code) == (code, code)


def test_read_fields_help_says_when_it_exits_1() -> None:
    help_text = " ".join(invoke("read-fields", "--help").stdout.split())
    assert "Exit code 0 when at least one PATH found a value, 1 when none did" in help_text
