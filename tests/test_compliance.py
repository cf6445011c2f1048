"""The core spec's test criteria 1, 2 and 8-20, one named test (or a few) per criterion.

Criteria 3-7 (smart filtering) belong to the filtering issue. Each test's docstring quotes
its criterion. Nodes are real: the built-in ``read-json`` and ``shell`` nodes, or a tiny
PocketFlow node defined here and run by PocketFlow itself before ``store_outputs``.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from pocketflow import Node

from pflow_structure import (
    ExecutionCache,
    ExecutionExpiredError,
    ExecutionNotFoundError,
    NodeExecutionError,
    read_fields,
    registry_run,
    store_outputs,
)
from pflow_structure.cli import main
from pflow_structure.render.structure_text import TREE_HEADER
from pflow_structure.settings import Settings
from tests.conftest import CORPUS, cli_runner, corpus_files
from tests.contract import assert_structure_reads_back
from tests.structure_text import parse_tree

ISSUES = CORPUS / "github__list_issues.json"
DAY = 24 * 3600
SPEC_ENTRY_FIELDS = {"execution_id", "node_type", "timestamp", "ttl_hours", "params", "outputs"}


# -- helpers --------------------------------------------------------------------------------


def entry_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("exec-*.json")) if directory.exists() else []


def load_entry(directory: Path, execution_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / f"{execution_id}.json").read_text(encoding="utf-8"))
    return data


def run_pocketflow_node(node: Any, node_type: str) -> dict[str, Any]:
    """Run ``node`` with PocketFlow on a fresh shared store, then cache and describe what it wrote."""
    shared: dict[str, Any] = {}
    node.run(shared)
    return store_outputs(node_type, node.params, shared)


def assert_reads_back(run: dict[str, Any]) -> None:
    """The read-back contract on what the cache holds for ``run``."""
    entry = Settings.from_env().cache().get(run["execution_id"])
    assert_structure_reads_back(entry.outputs, run["structure"], entry.binary_paths)


class Clock:
    """A settable clock for ExecutionCache: no sleeping."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class WritesValue(Node):  # type: ignore[misc]
    """A tiny PocketFlow node that writes ``params["value"]`` to ``shared["result"]``."""

    def prep(self, shared: dict[str, Any]) -> Any:
        return self.params["value"]

    def exec(self, prep_res: Any) -> Any:
        return prep_res

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> str:
        shared["result"] = exec_res
        return "default"


def _node(value: Any) -> WritesValue:
    node = WritesValue()
    node.set_params({"value": value})
    return node


class Chain:
    """An object graph node: ``Chain(0).child.child...`` (objects with ``__dict__``)."""

    def __init__(self, level: int, child: Chain | None) -> None:
        self.level = level
        self.child = child

    def __repr__(self) -> str:
        return f"Chain({self.level})"


def chain(length: int) -> Chain:
    """``Chain(0) -> Chain(1) -> ... -> Chain(length - 1)``."""
    node: Chain | None = None
    for level in reversed(range(length)):
        node = Chain(level, node)
    assert node is not None
    return node


# -- criterion 1 ------------------------------------------------------------------------------


def test_criterion_01_registry_run_with_valid_node_creates_cache_entry(isolated_cache: Path) -> None:
    """1. Registry run with valid node creates cache entry."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    assert [p.name for p in entry_files(isolated_cache)] == [f"{run['execution_id']}.json"]
    entry = load_entry(isolated_cache, run["execution_id"])
    assert set(entry) >= SPEC_ENTRY_FIELDS
    assert entry["execution_id"] == run["execution_id"]
    assert entry["node_type"] == "read-json"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["timestamp"])
    assert entry["ttl_hours"] == 24
    assert entry["params"] == {"path": str(ISSUES)}
    assert entry["outputs"] == {"result": json.loads(ISSUES.read_text(encoding="utf-8"))}


def test_criterion_01_cache_entry_timestamp_is_the_time_of_the_run(isolated_cache: Path) -> None:
    """1. Registry run with valid node creates cache entry (stamped with the run's UTC time)."""
    before = int(time.time())
    run = registry_run("read-json", {"path": str(ISSUES)})
    after = int(time.time())
    stamp = load_entry(isolated_cache, run["execution_id"])["timestamp"]
    seconds = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp()
    assert before <= seconds <= after


def test_criterion_01_params_that_are_not_json_still_create_a_cache_entry(isolated_cache: Path) -> None:
    """1. Registry run with valid node creates cache entry, also when a param is not JSON (NaN, bytes, a date)."""
    params = {"path": str(ISSUES), "ratio": float("nan"), "raw": b"hi", "since": dt.date(2025, 1, 14)}
    run = registry_run("read-json", params)
    entry = load_entry(isolated_cache, run["execution_id"])
    assert entry["params"] == {"path": str(ISSUES), "ratio": "NaN", "raw": "aGk=", "since": "2025-01-14"}


def test_criterion_01_failed_node_creates_no_cache_entry(isolated_cache: Path, tmp_path: Path) -> None:
    """1. Registry run with valid node creates cache entry; a node that fails creates none (edge case)."""
    with pytest.raises(NodeExecutionError):
        registry_run("read-json", {"path": str(tmp_path / "missing.json")})
    assert entry_files(isolated_cache) == []


# -- criterion 2 ------------------------------------------------------------------------------


def test_criterion_02_registry_run_returns_execution_id_and_structure(tmp_path: Path) -> None:
    """2. Registry run returns execution_id and structure."""
    data = {
        "issues": [
            {"number": 1, "title": "Fix bug", "state": "open"},
            {"number": 2, "title": "Add tests", "state": "closed", "labels": ["ci"]},
        ]
    }
    path = tmp_path / "issues.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    # A small output comes back as data unless the structure is asked for (tests/test_want_answers.py).
    run = registry_run("read-json", {"path": str(path)}, structure=True)
    execution_id = run.pop("execution_id")
    assert re.fullmatch(r"exec-\d+-[0-9a-f]{8,}", execution_id)
    assert len(execution_id) <= 32
    assert run == {
        "node_type": "read-json",
        "structure": {
            "result": {"type": "dict"},
            "result.issues": {"type": "list", "length": 2},
            "result.issues[0].number": {"type": "int"},
            "result.issues[0].title": {"type": "str", "avg_length": 8},
            "result.issues[0].state": {"type": "str", "avg_length": 5},
            "result.issues[0].labels": {"type": "list", "length": 1, "present": 1, "of": 2, "present_at": [1]},
            "result.issues[0].labels[0]": {"type": "str", "avg_length": 2},
        },
        "field_count": 4,
        "original_field_count": 4,
        "filtered": False,
    }
    run["execution_id"] = execution_id
    assert_reads_back(run)


def test_criterion_02_structure_carries_no_values() -> None:
    """2. Registry run returns execution_id and structure (without data values, rule 3)."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    text = json.dumps(run)
    issues = json.loads(ISSUES.read_text(encoding="utf-8"))
    for issue in issues[:10]:
        assert issue["title"] not in text
        assert issue["user"]["login"] not in text
    assert_reads_back(run)


# -- criteria 8-14: read_fields --------------------------------------------------------------


def test_criterion_08_read_fields_with_valid_execution_id_returns_data() -> None:
    """8. Read-fields with valid execution_id returns data."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    values = read_fields(run["execution_id"], ["result"])
    assert values == {"result": json.loads(ISSUES.read_text(encoding="utf-8"))}


def test_criterion_09_read_fields_with_expired_execution_id_returns_error(isolated_cache: Path) -> None:
    """9. Read-fields with expired execution_id returns error ("Execution expired")."""
    clock = Clock(1_700_000_000.0)
    cache = ExecutionCache(isolated_cache, clock=clock)
    run = registry_run("read-json", {"path": str(ISSUES)}, cache=cache)
    clock.now += DAY + 3600
    with pytest.raises(ExecutionExpiredError) as caught:
        read_fields(run["execution_id"], ["result[0].title"], cache=cache)
    assert str(caught.value) == (
        f"Execution expired: {run['execution_id']} is 25.0 h old and entries live 24 h. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id."
    )


def test_criterion_10_read_fields_with_unknown_execution_id_returns_not_found() -> None:
    """10. Read-fields with invalid execution_id returns error ("Execution not found"): a well-formed id."""
    with pytest.raises(ExecutionNotFoundError) as caught:
        read_fields("exec-1763463202-0cd0c8fe", ["result"])
    assert str(caught.value) == (
        "Execution not found: exec-1763463202-0cd0c8fe. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id."
    )


# 10, a malformed id: refused as not found before any file access, through the cache, read_fields and
# the CLI, with the exact text and exit code: tests/test_security.py (HOSTILE_IDS), its one home.


def test_criterion_11_read_fields_with_valid_path_returns_correct_value() -> None:
    """11. Read-fields with valid path returns correct value."""
    issues = json.loads(ISSUES.read_text(encoding="utf-8"))
    run = registry_run("read-json", {"path": str(ISSUES)})
    assert read_fields(run["execution_id"], ["result[3].user.login"]) == {
        "result[3].user.login": issues[3]["user"]["login"]
    }


@pytest.mark.parametrize(
    "path",
    [
        "result[0].no_such_key",  # a key that does not exist
        "result[100].title",  # out of bounds (100 items: 0-99)
        "result[-101].title",  # out of bounds, negative
        "result[0].title.deeper",  # into a string
        "result[",  # does not parse
        "nothing",  # no such output
    ],
)
def test_criterion_12_read_fields_with_invalid_path_returns_none(path: str) -> None:
    """12. Read-fields with invalid path returns None."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    assert read_fields(run["execution_id"], [path]) == {path: None}


def test_criterion_13_read_fields_with_multiple_paths_returns_all_values() -> None:
    """13. Read-fields with multiple paths returns all values."""
    issues = json.loads(ISSUES.read_text(encoding="utf-8"))
    run = registry_run("read-json", {"path": str(ISSUES)})
    paths = ["result[0].title", "result[-1].number", "result[*].number", "result[0].missing"]
    values = read_fields(run["execution_id"], paths)
    assert list(values) == paths
    assert values == {
        "result[0].title": issues[0]["title"],
        "result[-1].number": issues[-1]["number"],
        "result[*].number": [issue["number"] for issue in issues],
        "result[0].missing": None,
    }


def test_criterion_14_read_fields_with_empty_paths_returns_empty_dict() -> None:
    """14. Read-fields with empty paths returns empty dict."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    assert read_fields(run["execution_id"], []) == {}


# -- criterion 15: 24-hour expiry ------------------------------------------------------------


def test_criterion_15_cache_entry_is_readable_until_24_hours(isolated_cache: Path) -> None:
    """15. Cache files expire after 24 hours: one second before, the entry still reads."""
    clock = Clock(1_700_000_000.0)
    cache = ExecutionCache(isolated_cache, clock=clock)
    run = registry_run("read-json", {"path": str(ISSUES)}, cache=cache)
    clock.now += DAY - 1
    assert read_fields(run["execution_id"], ["result[0].number"], cache=cache) == {"result[0].number": 150}


def test_criterion_15_cache_entry_expires_after_24_hours(isolated_cache: Path) -> None:
    """15. Cache files expire after 24 hours: one second after, the entry is expired."""
    clock = Clock(1_700_000_000.0)
    cache = ExecutionCache(isolated_cache, clock=clock)
    run = registry_run("read-json", {"path": str(ISSUES)}, cache=cache)
    clock.now += DAY + 1
    with pytest.raises(ExecutionExpiredError):
        read_fields(run["execution_id"], ["result[0].number"], cache=cache)


def test_criterion_15_default_settings_expire_an_entry_stamped_25_hours_ago(isolated_cache: Path) -> None:
    """15. Cache files expire after 24 hours: with default settings, the timestamp in the file decides."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    path = isolated_cache / f"{run['execution_id']}.json"
    entry = json.loads(path.read_text(encoding="utf-8"))
    old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=25)
    entry["timestamp"] = old.strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(entry), encoding="utf-8")
    with pytest.raises(ExecutionExpiredError) as caught:
        read_fields(run["execution_id"], ["result[0].number"])
    assert str(caught.value).startswith(f"Execution expired: {run['execution_id']} is 25.0 h old")


# -- criterion 16: permissions ----------------------------------------------------------------


@pytest.mark.usefixtures("umask_000")
def test_criterion_16_cache_file_is_0600_under_umask_000(isolated_cache: Path) -> None:
    """16. Cache files have 600 permissions (whatever the umask)."""
    run = registry_run("read-json", {"path": str(ISSUES)})
    mode = stat.S_IMODE((isolated_cache / f"{run['execution_id']}.json").stat().st_mode)
    assert oct(mode) == oct(0o600)


@pytest.mark.usefixtures("umask_000")
def test_criterion_16_every_file_in_the_cache_directory_is_0600(isolated_cache: Path) -> None:
    """16. Cache files have 600 permissions: lock and bookkeeping files too."""
    registry_run("read-json", {"path": str(ISSUES)})
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in isolated_cache.iterdir()}
    assert len(modes) >= 1
    assert modes == dict.fromkeys(modes, oct(0o600))


@pytest.mark.usefixtures("umask_000")
def test_criterion_16_cache_directory_is_0700_under_umask_000(isolated_cache: Path) -> None:
    """16. Cache files have 600 permissions, in a directory only the owner can enter (0700)."""
    assert not isolated_cache.exists()
    registry_run("read-json", {"path": str(ISSUES)})
    assert oct(stat.S_IMODE(isolated_cache.stat().st_mode)) == oct(0o700)


# -- criterion 17: CLI and MCP give the same structure ------------------------------------------


def parse_structure_text(text: str) -> dict[str, Any]:
    """Read the CLI's text output back into the dict ``registry_run`` returns."""
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "✓ Node executed successfully"
    assert lines[1].startswith("Execution ID: ")
    result: dict[str, Any] = {"execution_id": lines[1].removeprefix("Execution ID: "), "structure": {}}
    if lines[2].startswith("Page: "):  # the API's paging, above the tree
        result["page"] = lines.pop(2).removeprefix("Page: ")
    assert lines[2] == ""
    rest = iter(lines[3:])
    header = next(rest)
    if not header.endswith(" (none: the node wrote no outputs)"):
        assert header == TREE_HEADER
        tree = list(itertools.takewhile(lambda line: line != "", rest))
        result["structure"], hidden = parse_tree(tree)
        if hidden:
            result["hidden"] = hidden
    else:
        assert next(rest) == ""
    for line in rest:
        if line.startswith("Node type: "):
            result["node_type"] = line.removeprefix("Node type: ")
        elif m := re.fullmatch(r"Field count: (\d+), not filtered", line):
            result["field_count"] = result["original_field_count"] = int(m[1])
            result["filtered"] = False
        elif m := re.fullmatch(r"Field count: (\d+) of (\d+) \((\w+) filter; ((\d+) fields hidden.*)\)", line):
            result["field_count"], result["original_field_count"] = int(m[1]), int(m[2])
            result["filtered"], result["filter"], result["filter_note"] = True, m[3], m[4]
            result["hidden_fields"] = int(m[5])
        elif m := re.match(r"Omitted paths: (\d+) deeper paths not listed", line):
            result["omitted_paths"] = int(m[1])
        elif line.startswith("Warning: "):
            result.setdefault("warnings", []).append(line.removeprefix("Warning: "))
        elif line.startswith("Read values: "):
            assert f" read-fields {result['execution_id']} " in line
        else:
            raise AssertionError(f"unparsed line {line!r}")
    return result


def cli_run(*args: str) -> str:
    outcome = cli_runner().invoke(main, ["run", *args], catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return outcome.stdout


def without_id(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key != "execution_id"}


def test_criterion_17_cli_json_prints_the_dict_registry_run_returns() -> None:
    """17. CLI and MCP return identical structure format: ``run --json`` is registry_run's dict."""
    expected = registry_run("read-json", {"path": str(ISSUES)})
    printed = json.loads(cli_run("read-json", f"path={ISSUES}", "--json"))
    assert list(printed) == list(expected)
    assert without_id(printed) == without_id(expected)
    assert list(printed["structure"].items()) == list(expected["structure"].items())


@pytest.mark.parametrize("corpus_file", corpus_files(), ids=lambda p: p.stem)
def test_criterion_17_cli_text_carries_the_same_content_as_the_dict(corpus_file: Path) -> None:
    """17. CLI and MCP return identical structure format: the text reads back into the --json dict."""
    # --structure: a corpus file smaller than its structure would come back as data
    as_json = json.loads(cli_run("read-json", f"path={corpus_file}", "--json", "--structure"))
    from_text = parse_structure_text(cli_run("read-json", f"path={corpus_file}", "--structure"))
    assert without_id(from_text) == without_id(as_json)
    assert list(from_text["structure"].items()) == list(as_json["structure"].items())


def test_criterion_17_cli_text_carries_omitted_paths() -> None:
    """17. CLI and MCP return identical structure format: a capped structure says how many paths are left out."""
    args = ("read-json", f"path={ISSUES}", "--max-paths", "3")
    as_json = json.loads(cli_run(*args, "--json"))
    assert as_json["omitted_paths"] > 0
    assert without_id(parse_structure_text(cli_run(*args))) == without_id(as_json)


def test_criterion_17_cli_text_carries_warnings(tmp_path: Path) -> None:
    """17. CLI and MCP return identical structure format: warnings (here an unusable cache dir) appear in both."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    args = ("--cache-dir", str(blocker / "cache"), "run", "read-json", f"path={ISSUES}")
    runner = cli_runner()
    as_json = json.loads(runner.invoke(main, [*args, "--json"], catch_exceptions=False).stdout)
    assert len(as_json["warnings"]) == 2
    text = runner.invoke(main, list(args), catch_exceptions=False).stdout
    assert without_id(parse_structure_text(text)) == without_id(as_json)


def test_criterion_17_cli_text_carries_every_kind_of_detail(tmp_path: Path) -> None:
    """17. CLI and MCP return identical structure format: JSON-in-strings, depth cuts, length ranges,
    dynamic keys, presence, unions and quoted keys all survive the text."""
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    data = {
        "payload": json.dumps({"a": [1, 2], "b": "c"}),
        "deep_json": json.dumps(deep),
        "rows": [[1, 2], [1, 2, 3, 4], [1]],
        "versions": {f"1.{i}.0": {"size": i} for i in range(10)},
        "items": [{"a": 1}, {"a": "x", "b": None}],
        "key (with) ${braces}": {"content-type": "x"},
        "it's": 1,
    }
    path = tmp_path / "kinds.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    # --all-fields: 70 nested lists make a long view, which the filter would cut (not what is checked here)
    as_json = json.loads(cli_run("read-json", f"path={path}", "--json", "--all-fields"))
    kinds = {key for entry in as_json["structure"].values() for key in entry}
    assert kinds == {"type", "length", "min_length", "max_length", "avg_length", "json", "keys", "dynamic_keys"} | {
        "key_names",
        "present",
        "present_at",
        "of",
        "truncated",
    }
    from_text = parse_structure_text(cli_run("read-json", f"path={path}", "--all-fields"))
    assert without_id(from_text) == without_id(as_json)
    assert list(from_text["structure"].items()) == list(as_json["structure"].items())


def test_criterion_17_text_parser_rejects_a_missing_detail() -> None:
    """17. (the check itself can fail) a dropped detail makes the text differ from the dict."""
    as_json = json.loads(cli_run("read-json", f"path={ISSUES}", "--json"))
    text = cli_run("read-json", f"path={ISSUES}").replace("list, 100 items; each [0]:", "list; each [0]:", 1)
    assert without_id(parse_structure_text(text)) != without_id(as_json)


# -- criterion 18: binary data ----------------------------------------------------------------

RAW = b"\xff\xfe\x00\x01PNG"


def test_criterion_18_bytes_are_stored_as_base64_in_the_cache_file(isolated_cache: Path) -> None:
    """18. Binary data encoded as base64 in cache (a shell command that prints non-UTF-8 bytes)."""
    run = registry_run("shell", {"command": r"printf '\377\376\000\001PNG'"})
    entry = load_entry(isolated_cache, run["execution_id"])
    assert entry["outputs"]["stdout"] == base64.b64encode(RAW).decode("ascii")


def test_criterion_18_bytes_come_back_as_bytes_from_read_fields() -> None:
    """18. Binary data encoded as base64 in cache, and read back as the same bytes."""
    run = registry_run("shell", {"command": r"printf '\377\376\000\001PNG'"}, structure=True)
    assert run["structure"]["stdout"] == {"type": "bytes", "avg_length": len(RAW)}
    assert read_fields(run["execution_id"], ["stdout"]) == {"stdout": RAW}
    assert_reads_back(run)


def test_criterion_18_nested_bytes_come_back_as_bytes_inside_their_container() -> None:
    """18. Binary data encoded as base64 in cache: bytes deep inside lists and dicts come back too."""
    value = {"files": [{"name": "a.png", "content": RAW}, {"name": "b.txt", "content": b"hi"}]}
    run = run_pocketflow_node(_node(value), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {"result": value}
    assert read_fields(run["execution_id"], ["result.files[*].content"]) == {"result.files[*].content": [RAW, b"hi"]}
    assert_reads_back(run)


def test_criterion_18_user_dict_that_looks_like_a_marker_round_trips_unchanged(tmp_path: Path) -> None:
    """18. Binary data encoded as base64 in cache, unambiguously: a marker look-alike stays a dict."""
    lookalike = {"__type": "base64", "data": "aGk="}
    path = tmp_path / "lookalike.json"
    path.write_text(json.dumps({"attachment": lookalike, "text": "aGk="}), encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})
    assert read_fields(run["execution_id"], ["result"]) == {"result": {"attachment": lookalike, "text": "aGk="}}


def test_criterion_18_bytes_and_equal_base64_text_stay_distinct() -> None:
    """18. Binary data encoded as base64 in cache: b"hi" and the text "aGk=" (its base64) are told apart."""
    value = {"blob": b"hi", "text": "aGk=", "lookalike": {"__type": "base64", "data": "aGk="}}
    run = run_pocketflow_node(_node(value), "writes-value")
    assert read_fields(run["execution_id"], ["result.blob", "result.text", "result.lookalike"]) == {
        "result.blob": b"hi",
        "result.text": "aGk=",
        "result.lookalike": {"__type": "base64", "data": "aGk="},
    }


# -- criterion 19: cycles and depth -----------------------------------------------------------


def test_criterion_19_self_referencing_dict_is_cut_with_a_marker() -> None:
    """19. Circular references limited to 10 levels: a dict that contains itself is cut, not a crash."""
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    run = run_pocketflow_node(_node(loop), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {
        "result": {"name": "loop", "self": "<circular reference to result>"}
    }
    assert run["warnings"] == ["circular reference at result.self cut (it points back to result)"]
    assert_reads_back(run)


def test_criterion_19_self_referencing_list_is_cut_with_a_marker() -> None:
    """19. Circular references limited to 10 levels: a list that contains itself is cut, not a crash."""
    loop: list[Any] = [1]
    loop.append(loop)
    run = run_pocketflow_node(_node(loop), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {"result": [1, "<circular reference to result>"]}
    assert run["warnings"] == ["circular reference at result[1] cut (it points back to result)"]
    assert_reads_back(run)


def test_criterion_19_object_graph_with_a_cycle_is_cut_with_a_marker() -> None:
    """19. Circular references limited to 10 levels: objects pointing at each other are cut at the repeat."""
    first = Chain(0, None)
    first.child = Chain(1, first)
    run = run_pocketflow_node(_node(first), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {
        "result": {"level": 0, "child": {"level": 1, "child": "<circular reference to result>"}}
    }
    assert_reads_back(run)


def test_criterion_19_same_object_twice_without_a_cycle_is_not_cut() -> None:
    """19. Circular references limited to 10 levels: a shared (not circular) object is kept in both places."""
    shared_item = {"id": 7}
    run = run_pocketflow_node(_node({"a": shared_item, "b": [shared_item, shared_item]}), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {"result": {"a": {"id": 7}, "b": [{"id": 7}, {"id": 7}]}}
    assert "warnings" not in run


def test_criterion_19_objects_nested_deeper_than_10_levels_are_cut_with_a_marker() -> None:
    """19. Circular references limited to 10 levels: an object graph 15 deep keeps 10 levels and a marker."""
    run = run_pocketflow_node(_node(chain(15)), "writes-value")
    tenth = "result" + ".child" * 9
    values = read_fields(run["execution_id"], [f"{tenth}.level", f"{tenth}.child"])
    assert values == {
        f"{tenth}.level": 9,
        f"{tenth}.child": "<cut: object nested deeper than 10 levels: Chain(10)>",
    }
    assert run["warnings"] == [f"{tenth}.child: <cut: object nested deeper than 10 levels: Chain(10)>"]
    assert_reads_back(run)


def test_criterion_19_objects_10_levels_deep_are_kept_whole() -> None:
    """19. Circular references limited to 10 levels: exactly 10 levels of objects need no cut."""
    expected: Any = None
    for level in reversed(range(10)):
        expected = {"level": level, "child": expected}
    run = run_pocketflow_node(_node(chain(10)), "writes-value")
    assert read_fields(run["execution_id"], ["result"]) == {"result": expected}
    assert "warnings" not in run


def test_criterion_19_plain_json_deeper_than_10_levels_is_kept(tmp_path: Path) -> None:
    """19. Circular references limited to 10 levels: only cycles and objects; plain JSON 20 deep is kept whole.

    Real responses nest 14-17 levels (GitHub GraphQL, Slack); cutting them at 10 would lose values.
    """
    value: Any = "leaf"
    for _ in range(20):
        value = {"a": value}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)}, structure=True)
    deepest = "result" + ".a" * 20
    assert read_fields(run["execution_id"], [deepest]) == {deepest: "leaf"}
    assert "warnings" not in run
    assert_reads_back(run)


def test_criterion_19_plain_data_deeper_than_64_levels_is_cut_with_a_marker() -> None:
    """19. Circular references limited to 10 levels: even plain data stops at 64 levels, with a marker."""
    value: Any = "leaf"
    for _ in range(100):
        value = [value]
    run = run_pocketflow_node(_node(value), "writes-value")
    at_cut = "result" + "[0]" * 63
    assert read_fields(run["execution_id"], [at_cut]) == {at_cut: "<cut: nested deeper than 64 levels>"}
    assert run["warnings"] == [f"{at_cut}: <cut: nested deeper than 64 levels>"]


# -- criterion 20: 1000 entries ---------------------------------------------------------------


def test_criterion_20_lookup_among_1000_cache_files_returns_the_right_entry(isolated_cache: Path) -> None:
    """20. Cache lookup under 100ms with 1000 files: here only the behaviour (the right one of 1000).

    The timing is measured in benchmarks/ (never asserted in a test).
    """
    start = int(time.time()) - 2000
    seconds = itertools.count(start)
    cache = ExecutionCache(isolated_cache, clock=lambda: float(next(seconds)))
    ids = [cache.put("counter", {"n": n}, {"n": n, "label": f"entry {n}"}).execution_id for n in range(1000)]
    assert len(set(ids)) == 1000
    assert len(entry_files(isolated_cache)) == 1000
    for n in (0, 499, 999):
        assert read_fields(ids[n], ["n", "label"]) == {"n": n, "label": f"entry {n}"}
