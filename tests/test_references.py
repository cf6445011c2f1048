"""References (${exec-ID:PATH}) and edits of cached values: the core modules, the service, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import (
    ExecutionNotFoundError,
    PathNotFoundError,
    PathSyntaxError,
    ReferenceTooLargeError,
    UnresolvedReferenceError,
)
from pflow_structure.render.failure_log import read_failures
from pflow_structure.service import read_fields, registry_run
from pflow_structure.service.arguments import resolve_arguments
from pflow_structure.service.values import edit_fields
from pflow_structure.settings import Settings
from pflow_structure.values.edits import apply_edits
from pflow_structure.values.references import resolve_references
from tests.conftest import cli_runner

DOC = {
    "title": "Report",
    "items": [{"name": "alpha", "size": 3}, {"name": "beta", "size": 5}],
    "count": 2,
    "empty": [],
}
UNKNOWN = "exec-1763463202-0cd0c8fe"


@pytest.fixture
def cache(isolated_cache: Path) -> ExecutionCache:
    return Settings.from_env().cache()


@pytest.fixture
def stored(cache: ExecutionCache) -> str:
    return cache.put("read-json", {"path": "x.json", "api_token": "s3cret"}, {"result": DOC}).execution_id


def ref(execution_id: str, path: str) -> str:
    return "${" + execution_id + ":" + path + "}"


# -- resolving: values, types, text ------------------------------------------------------------


def test_a_whole_string_reference_becomes_the_value_with_its_type(stored: str) -> None:
    arguments = {"a": ref(stored, "result.items"), "b": ref(stored, "result.count"), "c": ref(stored, "result.title")}
    assert resolve_arguments(arguments) == {"a": DOC["items"], "b": 2, "c": "Report"}


def test_references_resolve_at_any_depth_and_wildcards_give_lists(stored: str) -> None:
    arguments = {"outer": [{"names": ref(stored, "result.items[*].name")}, ref(stored, "$..size")]}
    assert resolve_arguments(arguments) == {"outer": [{"names": ["alpha", "beta"]}, [3, 5]]}


def test_where_the_schema_wants_a_string_a_value_goes_as_compact_json(stored: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "number": {"type": ["string", "number"]},
            "list": {"type": "array", "items": {"$ref": "#/$defs/Text"}},
        },
        "$defs": {"Text": {"type": "string"}},
    }
    arguments = {
        "content": ref(stored, "result.items[0]"),
        "maybe": ref(stored, "result.count"),
        "number": ref(stored, "result.count"),
        "list": [ref(stored, "result.empty"), ref(stored, "result.title")],
    }
    assert resolve_arguments(arguments, schema=schema) == {
        "content": '{"name":"alpha","size":3}',
        "maybe": "2",
        "number": 2,
        "list": ["[]", "Report"],
    }


def test_a_reference_inside_text_is_replaced_by_the_values_text(stored: str) -> None:
    text = f"Title {ref(stored, 'result.title')}, names {ref(stored, 'result.items[*].name')}."
    assert resolve_arguments({"q": text}) == {"q": 'Title Report, names ["alpha","beta"].'}


def test_double_dollar_is_a_literal_reference_and_other_text_is_untouched(stored: str) -> None:
    arguments = {
        "escaped": "$" + ref(stored, "result.title"),
        "mixed": "$" + ref(stored, "result.title") + " is " + ref(stored, "result.title"),
        "shell": "${HOME} $${HOME} ${exec-1:x} ${exec-12-zz:x} ${exec-1763463202-0cd0c8fe0cd0c8fe99:x}",
        "unclosed": ref(stored, "result.title")[:-1],
    }
    assert resolve_arguments(arguments) == {
        "escaped": ref(stored, "result.title"),
        "mixed": ref(stored, "result.title") + " is Report",
        "shell": arguments["shell"],
        "unclosed": arguments["unclosed"],
    }


def test_arguments_without_references_come_back_as_the_same_object() -> None:
    arguments = {"a": ["x", {"b": "${HOME}"}], "n": 1}
    assert resolve_arguments(arguments) is arguments


def test_a_quoted_key_with_a_brace_reads_back(cache: ExecutionCache) -> None:
    execution_id = cache.put("t", {}, {"result": {"a}b": "braced"}}).execution_id
    assert resolve_arguments({"x": ref(execution_id, 'result["a}b"]')}) == {"x": "braced"}


def test_a_text_answer_kept_as_lines_passes_its_text(cache: ExecutionCache) -> None:
    lines = ["first line", "", "third"]
    execution_id = cache.put("mcp:read", {}, {"result": lines}, text_paths=[["result"]]).execution_id
    assert resolve_arguments({"content": ref(execution_id, "result")}) == {"content": "first line\n\nthird"}
    assert resolve_arguments({"line": ref(execution_id, "result[2]")}) == {"line": "third"}
    assert read_fields(execution_id, ["result"]) == {"result": lines}  # reading is unchanged


# -- failures: exact words ---------------------------------------------------------------------


def error_of(arguments: Any, **kwargs: Any) -> str:
    with pytest.raises((UnresolvedReferenceError, ReferenceTooLargeError)) as caught:
        resolve_arguments(arguments, **kwargs)
    return str(caught.value)


def test_an_unknown_id_names_the_reference_and_where_it_was() -> None:
    assert error_of({"body": {"text": ref(UNKNOWN, "result")}}) == (
        f"Cannot pass ${{{UNKNOWN}:result}} (in body.text): Execution not found: {UNKNOWN}. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id."
    )


def test_an_expired_id_is_refused(isolated_cache: Path) -> None:
    old = ExecutionCache(isolated_cache, clock=lambda: 1_700_000_000.0).put("t", {}, {"result": 1}).execution_id
    message = error_of({"x": ref(old, "result")})
    assert message.startswith(f"Cannot pass ${{{old}:result}} (in x): Execution expired: {old} is ")
    assert message.endswith(
        " h old and entries live 24 h. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id."
    )


def test_a_path_that_finds_nothing_suggests_near_paths(stored: str) -> None:
    assert error_of({"x": ["a", "see " + ref(stored, "result.itmes")]}) == (
        f"Cannot pass ${{{stored}:result.itmes}} (in x[1]): result.itmes: no key 'itmes' here. "
        "Did you mean result.items, result.title?"
    )


def test_a_jsonpath_that_finds_nothing_is_an_error(stored: str) -> None:
    assert error_of({"x": ref(stored, "$..nothing")}) == (
        f"Cannot pass ${{{stored}:$..nothing}} (in x): $..nothing: ..['nothing'] matched nothing at any depth. "
        "Keys there: result, title, items, count, empty, name, size."
    )


def test_a_path_that_does_not_parse_is_an_error(stored: str) -> None:
    assert error_of({"x": ref(stored, "")}) == (
        f"Cannot pass ${{{stored}:}} (in x): Invalid field path at column 1: the path is empty\n  \n  ^\n"
        'Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).'
    )


def test_a_reference_cannot_read_the_masked_parameters(stored: str) -> None:
    assert error_of({"x": ref(stored, "params.api_token")}) == (
        f"Cannot pass ${{{stored}:params.api_token}} (in x): params.api_token: no key 'params' here. Keys here: result"
    )
    assert error_of({"x": ref(stored, "api_token")}).endswith("api_token: no key 'api_token' here. Keys here: result")


def test_the_resolved_size_is_capped(stored: str) -> None:
    settings = Settings.from_env().replace(max_reference_bytes=30)
    # {"name":"alpha","size":3} is 25 bytes; the title adds 6
    assert resolve_arguments({"a": ref(stored, "result.items[0]")}, settings=settings) == {"a": DOC["items"][0]}
    assert error_of({"a": ref(stored, "result.items[0]"), "b": ref(stored, "result.title")}, settings=settings) == (
        f"Values passed by reference come to at least 31 bytes at ${{{stored}:result.title}} (in b), over the cap "
        "of 30 bytes. Pass a smaller part (a longer path), or raise PFLOW_STRUCTURE_MAX_REFERENCE_SIZE."
    )


def test_the_cap_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFLOW_STRUCTURE_MAX_REFERENCE_SIZE", "2MB")
    assert Settings.from_env().max_reference_bytes == 2 * 1024**2
    assert Settings().max_reference_bytes == 20 * 1024**2


def test_the_core_takes_any_lookup_and_never_logs(stored: str, cache: ExecutionCache) -> None:
    seen: list[str] = []

    def lookup(execution_id: str) -> Any:
        seen.append(execution_id)
        return cache.get(execution_id)

    value = resolve_references([ref(stored, "result.title"), ref(stored, "result.count")], lookup)
    assert value == ["Report", 2]
    assert seen == [stored]  # one read per entry
    with pytest.raises(UnresolvedReferenceError):
        resolve_references([ref(stored, "result.nope")], lookup)
    assert read_failures(Settings.from_env().failure_log) == []


# -- registry_run and the CLI's run --------------------------------------------------------------


def test_registry_run_parameters_take_references_and_record_them_not_the_values(stored: str, tmp_path: Path) -> None:
    target = tmp_path / "copy.json"
    command = "cat > " + str(target) + " <<'EOF'\n" + ref(stored, "result") + "\nEOF"
    run = registry_run("shell", {"command": command})
    assert json.loads(target.read_text()) == DOC
    entry = Settings.from_env().cache().get(run["execution_id"])
    assert entry.params["command"] == command


def test_registry_run_fails_before_the_node_runs(stored: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(UnresolvedReferenceError):
        registry_run("shell", {"command": f"touch {marker}; echo {ref(stored, 'result.nope')}"})
    assert not marker.exists()


def test_the_cli_run_passes_a_reference_and_words_a_failure(stored: str) -> None:
    from pflow_structure.cli import main

    runner = cli_runner()
    done = runner.invoke(main, ["run", "shell", "command=echo " + ref(stored, "result.items[*].name"), "--json"])
    assert done.exit_code == 0, done.output
    execution_id = json.loads(done.stdout)["execution_id"]
    assert read_fields(execution_id, ["stdout"]) == {"stdout": "[alpha,beta]\n"}
    failed = runner.invoke(main, ["run", "shell", "command=echo " + ref(UNKNOWN, "result")])
    assert failed.exit_code == 1
    assert failed.stderr == (
        f"Error: Cannot pass ${{{UNKNOWN}:result}} (in command): Execution not found: {UNKNOWN}. "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id.\n"
    )


# -- edits ---------------------------------------------------------------------------------------


def test_edits_set_add_wildcard_and_delete_on_a_copy() -> None:
    original = json.loads(json.dumps(DOC))
    edited = apply_edits(
        original,
        {"title": "New", "items[*].done": True, "items[-1].size": 9, "meta": {"v": 1}},
        ["count", "items[0].size"],
    )
    assert edited.value == {
        "title": "New",
        "items": [{"name": "alpha", "done": True}, {"name": "beta", "size": 9, "done": True}],
        "empty": [],
        "meta": {"v": 1},
    }
    assert original == DOC


def test_edits_write_through_a_string_that_holds_json() -> None:
    assert apply_edits({"body": '{"a": [1, 2]}'}, {"body.a[1]": 3}).value == {"body": '{"a":[1,3]}'}


@pytest.mark.parametrize(
    ("set_values", "delete", "message"),
    [
        (
            {"meta.version": 2},
            [],
            "meta.version: the parent meta does not exist (no key 'meta' here). Set meta first, e.g. to {}.",
        ),
        (
            {"itmes[0].name": "x"},
            [],
            "itmes[0].name: the parent itmes does not exist (no key 'itmes' here). Set itmes first, e.g. to {}. "
            "Did you mean items[0].name, title[0].name?",
        ),
        ({"items[5].name": "x"}, [], "items[5].name: index 5 is out of range: the list has 2 items."),
        ({"title.x": 1}, [], "title.x: no key 'x': found a string of 6 chars."),
        ({"count[*]": 1}, [], "count[*]: an int has no items for [*]."),
        ({}, ["titel"], "titel: no key 'titel' here: nothing to delete. Did you mean title, items?"),
        ({}, ["items[*].color"], "items[*].color: there is nothing to delete: no item has this path."),
    ],
)
def test_edit_failures_name_the_path(set_values: dict[str, Any], delete: list[str], message: str) -> None:
    with pytest.raises(PathNotFoundError) as caught:
        apply_edits(DOC, set_values, delete)
    assert str(caught.value) == message


def test_a_jsonpath_that_names_many_nodes_cannot_edit() -> None:
    with pytest.raises(PathSyntaxError, match=r"a JSONPath edits only a singular query \(\$\.a\['b'\]\[0\]\)"):
        apply_edits(DOC, {"$..name": "x"})


def test_a_singular_jsonpath_edits_the_node_it_names() -> None:
    edited = apply_edits(DOC, {"$.items[1]['name']": "gamma"}, ["$.items[0].size"])
    assert edited.value["items"] == [{"name": "alpha"}, {"name": "gamma", "size": 5}]


def test_edit_fields_answers_a_new_id_and_leaves_the_original(stored: str) -> None:
    answer = edit_fields(stored, {"result.items[0].name": "gamma", "result.note": ref(stored, "result.title")})
    new = answer["execution_id"]
    assert new != stored and answer["edited_from"] == stored
    assert answer["structure"]["result.note"] == {"type": "str", "avg_length": 6}
    assert read_fields(new, ["result.items[*].name", "result.note"]) == {
        "result.items[*].name": ["gamma", "beta"],
        "result.note": "Report",
    }
    assert read_fields(stored, ["result"]) == {"result": DOC}
    params = Settings.from_env().cache().get(new).params
    assert params == {"edited_from": stored, "set": ["result.items[0].name", "result.note"], "delete": []}


def test_edit_fields_refuses_nothing_to_do_and_unknown_ids(stored: str) -> None:
    from pflow_structure.errors import ParameterError

    with pytest.raises(ParameterError, match=r"^nothing to edit: give set"):
        edit_fields(stored, {}, [])
    with pytest.raises(ExecutionNotFoundError):
        edit_fields(UNKNOWN, {"result.a": 1})
    with pytest.raises(UnresolvedReferenceError):
        edit_fields(stored, {"result.a": ref(stored, "result.zzz")})


def test_the_cli_edit_fields_command(stored: str) -> None:
    from pflow_structure.cli import main

    runner = cli_runner()
    done = runner.invoke(
        main,
        ["edit-fields", stored, 'result.title="Edited"', "result.count=3", "--delete", "result.empty", "--json"],
    )
    assert done.exit_code == 0, done.output
    new = json.loads(done.stdout)["execution_id"]
    assert read_fields(new, ["result"])["result"] == {
        **{k: v for k, v in DOC.items() if k != "empty"},
        "title": "Edited",
        "count": 3,
    }
    bad = runner.invoke(main, ["edit-fields", stored, "result.title=Edited"])
    assert bad.exit_code == 2
    assert "The value for result.title is not JSON: write text in double quotes" in bad.stderr
    missing = runner.invoke(main, ["edit-fields", stored, "result.a.b=1"])
    assert missing.exit_code == 1
    assert missing.stderr == (
        "Error: result.a.b: the parent result.a does not exist (no key 'a' here). Set result.a first, e.g. to {}.\n"
    )


def test_the_mcp_answer_of_edit_fields_holds_only_what_changed(stored: str) -> None:
    answer = edit_fields(
        stored, {"result.title": "A longer title", "result.items[*].done": True}, ["result.empty"], changes_only=True
    )
    new = answer.pop("execution_id")
    assert new.startswith("exec-") and new != stored
    assert answer == {
        "edited_from": stored,
        "structure": {
            "result.title": {"type": "str", "avg_length": 14},
            "result.items[0].done": {"type": "bool"},
        },
        "field_count": 5,
        "removed_paths": ["result.empty"],
        "note": f"Only what changed; every other path is as in {stored}.",
    }


def test_hostile_arguments_stay_cheap_and_deep_ones_pass_untouched(stored: str) -> None:
    from pflow_structure.values.references import MAX_PATH_CHARS

    # Each start scans at most MAX_PATH_CHARS for its "}", so 20,000 unclosed starts cost linear time.
    unclosed = ("${" + stored + ":result.title ") * 20_000
    assert resolve_arguments({"x": unclosed}) == {"x": unclosed}
    quoted = ("${" + stored + ':result["}"] ') * 20_000  # a "}" in every window, always quoted
    assert resolve_arguments({"x": quoted}) == {"x": quoted}
    too_long = "${" + stored + ":result." + "a" * MAX_PATH_CHARS + "}"
    assert resolve_arguments({"x": too_long}) == {"x": too_long}
    deep: Any = "leaf"
    for _ in range(5000):
        deep = [deep]
    arguments = {"deep": deep}
    assert resolve_arguments(arguments) is arguments


def test_a_reference_in_arguments_nested_too_deeply_is_a_clear_error(stored: str) -> None:
    from pflow_structure.errors import ParameterError

    deep: Any = ref(stored, "result.title")
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ParameterError, match=r"^the arguments are nested too deeply to resolve references in them$"):
        resolve_arguments({"deep": deep})


def test_references_and_edits_work_the_same_on_a_redis_cache(tmp_path: Path) -> None:
    import secrets

    from pflow_structure.cache.redis_store import RedisExecutionCache
    from tests.redis_servers import RedisServer, require_redis

    require_redis()
    server = RedisServer(tmp_path / "redis").start()
    try:
        redis_cache = RedisExecutionCache(
            server.url, local=ExecutionCache(tmp_path / "local"), namespace=secrets.token_hex(4)
        )
        lines = ["first", "second", ""]
        text_id = redis_cache.put("mcp:read", {}, {"result": lines}, text_paths=[["result"]]).execution_id
        doc_id = redis_cache.put("t", {}, {"result": DOC}).execution_id
        arguments = {"text": ref(text_id, "result"), "names": ref(doc_id, "result.items[*].name")}
        assert resolve_arguments(arguments, cache=redis_cache) == {
            "text": "first\nsecond\n",
            "names": ["alpha", "beta"],
        }
        edited = edit_fields(doc_id, {"result.count": 3}, cache=redis_cache, changes_only=True)
        assert redis_cache.get(edited["execution_id"]).outputs["result"]["count"] == 3
        assert redis_cache.get(doc_id).outputs["result"] == DOC
    finally:
        server.stop()
