"""Passing values on under hostile or confused input: references, schemas, edits, the CLI.

See tests/test_references.py for the ordinary behaviour; these are the cases an attacker or a
confused agent reaches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.store import ExecutionCache, StoredExecution
from pflow_structure.errors import (
    CacheWriteError,
    ParameterError,
    ReferenceTooLargeError,
    UnresolvedReferenceError,
)
from pflow_structure.service import read_fields
from pflow_structure.service.arguments import resolve_arguments
from pflow_structure.service.values import edit_fields
from pflow_structure.settings import Settings
from pflow_structure.values.edits import apply_edits
from tests.conftest import cli_runner

DOC = {"title": "Report", "items": [{"name": "alpha"}, {"name": "beta"}, {"name": "gamma"}], "count": 2}


@pytest.fixture
def cache(isolated_cache: Path) -> ExecutionCache:
    return Settings.from_env().cache()


@pytest.fixture
def stored(cache: ExecutionCache) -> str:
    return cache.put("read-json", {"api_token": "s3cret"}, {"result": DOC}).execution_id


def ref(execution_id: str, path: str) -> str:
    return "${" + execution_id + ":" + path + "}"


# -- references: what is resolved, and only once ----------------------------------------------------


def test_a_resolved_value_that_holds_a_reference_is_not_resolved_again(cache: ExecutionCache, stored: str) -> None:
    inner = "see " + ref(stored, "result.title") + " and $" + ref(stored, "result.count")
    outer = cache.put("t", {}, {"result": inner}).execution_id
    assert resolve_arguments({"a": ref(outer, "result"), "b": "[" + ref(outer, "result") + "]"}) == {
        "a": inner,
        "b": "[" + inner + "]",
    }


def test_ids_of_the_wrong_shape_keys_and_trailing_escapes_are_left_as_they_are(stored: str) -> None:
    arguments = {
        "traversal": "${exec-../../etc/passwd:result} ${exec-1795587939-2A04DA60:result}",
        ref(stored, "result.title"): "a key is not an argument value",
        "end": "cost: $${",
        "three": "$$" + ref(stored, "result.title"),
    }
    assert resolve_arguments(arguments) == {
        "traversal": arguments["traversal"],
        ref(stored, "result.title"): "a key is not an argument value",
        "end": "cost: $${",
        "three": "$" + ref(stored, "result.title"),  # "$" then the escape "$${...": no value read
    }


# -- the size cap ------------------------------------------------------------------------------------


def test_overlapping_jsonpath_matches_are_measured_only_up_to_the_cap(cache: ExecutionCache) -> None:
    value: Any = "x" * 10_000
    for _ in range(40):
        value = {"k": value}
    execution_id = cache.put("t", {}, {"result": value}).execution_id
    settings = Settings.from_env().replace(max_reference_bytes=50_000)
    with pytest.raises(ReferenceTooLargeError) as caught:
        resolve_arguments({"a": "all: " + ref(execution_id, "$..*")}, settings=settings)
    # The 41 matches nest in each other: their whole text is over 400,000 bytes, made before the
    # cap was checked. Measuring now stops at the first match past the cap.
    assert 50_000 < caught.value.size < 2 * 50_000
    assert str(caught.value) == (
        f"Values passed by reference come to at least {caught.value.size:,} bytes at ${{{execution_id}:$..*}} "
        "(in a), over the cap of 50,000 bytes. Pass a smaller part (a longer path), or raise "
        "PFLOW_STRUCTURE_MAX_REFERENCE_SIZE."
    )


def test_a_long_argument_key_is_shortened_in_the_error(stored: str) -> None:
    key = "k" * 100_000
    with pytest.raises(UnresolvedReferenceError) as caught:
        resolve_arguments({key: ref(stored, "result.nope")})
    assert str(caught.value) == (
        f"Cannot pass {ref(stored, 'result.nope')} (in {'k' * 150}...{'k' * 40}): result.nope: no key 'nope' here. "
        "Keys here: title, items, count"
    )


# -- tool schemas: malformed ones, and the shapes real servers write -----------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        "not a schema",
        ["a", "list"],
        {"type": "object", "properties": ["a"]},
        {"type": "object", "properties": {"l": {"prefixItems": {"0": {"type": "string"}}}}},
        {"type": "object", "properties": {"a": {"anyOf": 5}, "l": {"oneOf": {"type": "string"}}}},
        {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},  # a $ref to itself
    ],
)
def test_a_malformed_tool_schema_counts_as_no_schema(stored: str, schema: Any) -> None:
    arguments = {"a": ref(stored, "result.count"), "l": [ref(stored, "result.count")]}
    assert resolve_arguments(arguments, schema=schema) == {"a": 2, "l": [2]}


def test_a_string_wanted_through_ref_anyof_and_allof_gets_json_text(stored: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "colour": {"anyOf": [{"$ref": "#/$defs/Colour"}, {"type": "null"}]},
            "label": {"allOf": [{"$ref": "#/$defs/Colour"}], "description": "pydantic v1 writes this"},
            "options": {"anyOf": [{"$ref": "#/$defs/Options"}, {"type": "null"}]},
            "count": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/Colour"}]},
        },
        "$defs": {
            "Colour": {"type": "string", "enum": ["red", "2"]},
            "Options": {"type": "object", "properties": {"note": {"type": "string"}}},
        },
    }
    arguments = {
        "colour": ref(stored, "result.count"),
        "label": ref(stored, "result.count"),
        "options": {"note": ref(stored, "result.items[0]")},
        "count": ref(stored, "result.count"),
    }
    assert resolve_arguments(arguments, schema=schema) == {
        "colour": "2",
        "label": "2",
        "options": {"note": '{"name":"alpha"}'},
        "count": 2,
    }


# -- edits: every delete path names the value as it was ---------------------------------------------


def test_deleting_two_items_removes_the_two_named_whatever_the_order() -> None:
    expected = {**DOC, "items": [{"name": "gamma"}]}
    assert apply_edits(DOC, {}, ["items[0]", "items[1]"]).value == expected
    assert apply_edits(DOC, {}, ["items[1]", "items[-3]"]).value == expected
    assert apply_edits(DOC, {}, ["items[0].name", "items[0]", "items[1]"]).value == expected
    assert apply_edits({"body": "[1, 2, 3]"}, {}, ["body[0]", "body[2]"]).value == {"body": "[2]"}


def test_a_delete_path_given_twice_removes_once() -> None:
    assert apply_edits(DOC, {}, ["title", "title"]).value == {"items": DOC["items"], "count": 2}
    assert apply_edits(DOC, {}, ["items[0]", "items[0]"]).value == {**DOC, "items": DOC["items"][1:]}


def test_deleting_a_line_of_a_text_answer_keeps_it_text(cache: ExecutionCache) -> None:
    lines = ["first", "second", "third"]
    execution_id = cache.put("mcp:read", {}, {"result": lines}, text_paths=[["result"]]).execution_id
    edited = edit_fields(execution_id, {}, ["result[0]"], changes_only=True)["execution_id"]
    assert resolve_arguments({"content": ref(edited, "result")}) == {"content": "second\nthird"}
    assert cache.get(edited).text_paths == [["result"]]


def test_deleting_one_binary_item_keeps_the_others_binary(cache: ExecutionCache) -> None:
    from pflow_structure.encoding import encode_value

    encoded = encode_value({"result": [b"\x00\x01", b"\x02\x03", b"\x04\x05"]})
    execution_id = cache.put("t", {}, encoded.value, binary_paths=encoded.binary_paths).execution_id
    answer = edit_fields(execution_id, {}, ["result[0]"])
    assert answer["structure"]["result[0]"] == {"type": "bytes", "avg_length": 2}
    assert cache.get(answer["execution_id"]).binary_paths == [["result", 0], ["result", 1]]
    replaced = edit_fields(execution_id, {"result[1]": "text"}, [])
    assert cache.get(replaced["execution_id"]).binary_paths == [["result", 0], ["result", 2]]


# -- edits: values the cache cannot store --------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), b"raw", {"deep": [float("-inf")]}])
def test_a_value_with_no_json_form_is_refused_before_an_id_is_made(stored: str, value: Any) -> None:
    before = Settings.from_env().cache().scan()
    with pytest.raises(ParameterError) as caught:
        edit_fields(stored, {"result.count": value})
    assert str(caught.value) == (
        "the value for result.count is not JSON (NaN, Infinity and objects such as bytes have no JSON form): "
        "give a string, a number, true/false, null, a list or an object"
    )
    assert Settings.from_env().cache().scan() == before


def test_the_cli_refuses_nan_with_the_path_named(stored: str) -> None:
    from pflow_structure.cli import main

    done = cli_runner().invoke(main, ["edit-fields", stored, "result.count=NaN", "--json"])
    assert done.exit_code == 1
    assert done.stderr == (
        "Error: the value for result.count is not JSON (NaN, Infinity and objects such as bytes have no JSON "
        "form): give a string, a number, true/false, null, a list or an object\n"
    )


class _FullCache(ExecutionCache):
    """A cache that reads, but whose writes all fail (a full or read-only disk)."""

    def put(self, node_type: str, params: Any, outputs: Any, **kwargs: Any) -> StoredExecution:
        warning = "The execution was not cached, so read_fields cannot read it; set PFLOW_STRUCTURE_CACHE_DIR to a "
        return StoredExecution("exec-1763463202-0cd0c8fe", None, [warning + "writable directory."])


def test_an_edit_the_cache_could_not_store_is_an_error_not_an_id(isolated_cache: Path, stored: str) -> None:
    with pytest.raises(CacheWriteError) as caught:
        edit_fields(stored, {"result.count": 3}, cache=_FullCache(isolated_cache))
    assert str(caught.value) == (
        "The edited value could not be stored: The execution was not cached, so read_fields cannot read it; "
        "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory."
    )


# -- edit_fields arguments through MCP, and the CLI's PATH=JSON ---------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"set": [], "delete": ["result.title"]},
            'set must be an object of path: value, e.g. {"result.title": "New title"}',
        ),
        (
            {"set": "", "delete": ["result.title"]},
            'set must be an object of path: value, e.g. {"result.title": "New title"}',
        ),
        ({"set": {"result.a": 1}, "delete": ""}, 'delete must be a list of paths, e.g. ["result.draft"]'),
        ({"set": {"result.a": 1}, "delete": {}}, 'delete must be a list of paths, e.g. ["result.draft"]'),
        ({"set": {"result.a": 1}, "delete": 0}, 'delete must be a list of paths, e.g. ["result.draft"]'),
    ],
)
def test_edit_arguments_of_the_wrong_type_are_refused_even_when_empty(arguments: dict[str, Any], message: str) -> None:
    from pflow_structure.mcp.tools import edit_arguments

    with pytest.raises(ParameterError) as caught:
        edit_arguments({"execution_id": "exec-1763463202-0cd0c8fe", **arguments})
    assert str(caught.value) == message
    assert edit_arguments({"execution_id": "exec-1763463202-0cd0c8fe", "set": None, "delete": None}) == (
        "exec-1763463202-0cd0c8fe",
        {},
        [],
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "result.a]=1",
            "Error: Invalid field path at column 9: unexpected ']'; expected '.' or '['\n  result.a]\n          ^\n",
        ),
        (
            'result[0="x"',
            "Error: Invalid field path at column 9: expected ']' to close the '[' at column 7\n  result[0\n"
            "          ^\n",
        ),
    ],
)
def test_the_cli_names_the_path_error_when_brackets_do_not_balance(stored: str, change: str, message: str) -> None:
    from pflow_structure.cli import main

    done = cli_runner().invoke(main, ["edit-fields", stored, change])
    assert done.exit_code == 1
    assert done.stderr == message + (
        'Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).\n'
    )
    assert read_fields(stored, ["result"]) == {"result": json.loads(json.dumps(DOC))}
