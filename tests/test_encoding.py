"""Node output → JSON-safe value: one exact case per kind of value a node may write."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import enum
import json
import uuid
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from pflow_structure.encoding import encode_value, restore_binary
from pflow_structure.service import read_fields, store_outputs


def _encode(value: Any) -> Any:
    """The encoded value, after checking it is strict JSON (no NaN, no Infinity)."""
    encoded = encode_value(value).value
    json.dumps(encoded, allow_nan=False)
    return encoded


class Color(enum.Enum):
    RED = "red"
    PAIR = (1, 2)


class Level(enum.IntEnum):
    HIGH = 3


Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Attachment:
    name: str
    data: bytes


class Issue:
    def __init__(self) -> None:
        self.title = "Fix auth"
        self.labels = ("bug",)
        self._private = "hidden"


class Slotted:
    __slots__ = ("x",)

    def __repr__(self) -> str:
        return "Slotted()"


class FakeModel:
    """Stands in for a pydantic model: model_dump() is preferred over __dict__."""

    def __init__(self) -> None:
        self.internal = "not shown"

    def model_dump(self) -> dict[str, Any]:
        return {"id": 7, "tags": {"b", "a"}}


# -- containers ------------------------------------------------------------------------------


def test_plain_json_is_unchanged() -> None:
    value = {"a": [1, 2.5, "x", True, None, {"b": []}]}
    assert _encode(value) == value


def test_tuple_becomes_list() -> None:
    assert _encode({"t": (1, (2, 3))}) == {"t": [1, [2, 3]]}


def test_set_becomes_sorted_list() -> None:
    assert _encode({"s": {3, 1, 2}}) == {"s": [1, 2, 3]}


def test_frozenset_becomes_sorted_list() -> None:
    assert _encode({"s": frozenset({"b", "a"})}) == {"s": ["a", "b"]}


def test_set_of_unorderable_items_is_sorted_by_repr() -> None:
    assert _encode({"s": {1, "a"}}) == {"s": ["a", 1]}


def test_namedtuple_becomes_dict_of_its_fields() -> None:
    assert _encode({"p": Point(1, 2)}) == {"p": {"x": 1, "y": 2}}


# -- bytes -----------------------------------------------------------------------------------


def test_bytes_become_base64_and_their_place_is_recorded() -> None:
    encoded = encode_value({"data": b"hi"})
    assert encoded.value == {"data": "aGk="}
    assert encoded.binary_paths == [("data",)]


def test_bytearray_becomes_base64() -> None:
    encoded = encode_value({"raw": bytearray(b"\x00\xff")})
    assert encoded.value == {"raw": "AP8="}
    assert encoded.binary_paths == [("raw",)]


def test_memoryview_becomes_base64() -> None:
    assert encode_value({"m": memoryview(b"ab")}).value == {"m": "YWI="}


def test_bytes_inside_lists_and_objects_are_recorded_with_concrete_paths() -> None:
    encoded = encode_value({"files": [Attachment("a.txt", b"x")], "chunks": [b"1", "s", b"2"]})
    assert encoded.binary_paths == [("files", 0, "data"), ("chunks", 0), ("chunks", 2)]


def test_bare_bytes_value_has_the_root_as_binary_path() -> None:
    encoded = encode_value(b"hi")
    assert (encoded.value, encoded.binary_paths) == ("aGk=", [()])


def test_user_dict_that_looks_like_a_base64_marker_round_trips_unchanged() -> None:
    marker = {"__type": "base64", "data": "aGk="}
    run = store_outputs("test-node", {}, {"marker": marker, "blob": b"hi"})
    values = read_fields(run["execution_id"], ["marker", "blob"])
    assert values == {"marker": {"__type": "base64", "data": "aGk="}, "blob": b"hi"}


def test_base64_looking_string_is_not_turned_into_bytes() -> None:
    run = store_outputs("test-node", {}, {"text": "aGk=", "blob": b"hi"})
    assert read_fields(run["execution_id"], ["text"]) == {"text": "aGk="}


def test_read_fields_restores_bytes_inside_a_parent_value() -> None:
    run = store_outputs("test-node", {}, {"outer": {"b": b"x", "s": "eA=="}})
    assert read_fields(run["execution_id"], ["outer"]) == {"outer": {"b": b"x", "s": "eA=="}}


def test_read_fields_restores_bytes_through_a_wildcard() -> None:
    run = store_outputs("test-node", {}, {"chunks": [b"a", "b", b"c"]})
    assert read_fields(run["execution_id"], ["chunks[*]"]) == {"chunks[*]": [b"a", "b", b"c"]}


def test_read_fields_restores_bytes_through_jsonpath_with_negative_index() -> None:
    run = store_outputs("test-node", {}, {"chunks": [b"a", b"z"]})
    assert read_fields(run["execution_id"], ["$.chunks[-1]"]) == {"$.chunks[-1]": [b"z"]}


def test_restore_binary_does_not_change_the_stored_value() -> None:
    stored = {"a": {"b": "aGk="}}
    assert restore_binary(stored["a"], ("a",), [("a", "b")]) == {"b": b"hi"}
    assert stored == {"a": {"b": "aGk="}}


def test_restore_binary_ignores_paths_outside_the_value() -> None:
    assert restore_binary({"b": "aGk="}, ("x",), [("a", "b")]) == {"b": "aGk="}


# -- scalars ---------------------------------------------------------------------------------


def test_aware_datetime_becomes_iso_8601() -> None:
    moment = dt.datetime(2025, 1, 14, 10, 30, 45, tzinfo=dt.timezone.utc)
    assert _encode({"t": moment}) == {"t": "2025-01-14T10:30:45+00:00"}


def test_naive_datetime_becomes_iso_8601_without_offset() -> None:
    assert _encode({"t": dt.datetime(2025, 1, 14, 10, 30)}) == {"t": "2025-01-14T10:30:00"}


def test_date_and_time_become_iso_8601() -> None:
    assert _encode({"d": dt.date(2025, 1, 2), "t": dt.time(1, 2, 3)}) == {"d": "2025-01-02", "t": "01:02:03"}


def test_timedelta_becomes_seconds() -> None:
    assert _encode({"d": dt.timedelta(minutes=1, seconds=1.5)}) == {"d": 61.5}


def test_decimal_that_a_float_holds_exactly_becomes_a_number() -> None:
    assert _encode({"d": Decimal("1.5"), "e": Decimal("0.1")}) == {"d": 1.5, "e": 0.1}


def test_decimal_that_a_float_would_round_keeps_its_digits_as_text() -> None:
    assert _encode({"d": Decimal("12345678901234567890.123456789")}) == {"d": "12345678901234567890.123456789"}


def test_decimal_nan_and_infinity_become_strings() -> None:
    assert _encode({"n": Decimal("NaN"), "i": Decimal("-Infinity")}) == {"n": "NaN", "i": "-Infinity"}


def test_float_nan_and_infinities_become_strings() -> None:
    value = {"n": float("nan"), "p": float("inf"), "m": float("-inf")}
    assert _encode(value) == {"n": "NaN", "p": "Infinity", "m": "-Infinity"}


def test_path_becomes_string() -> None:
    assert _encode({"p": PurePosixPath("/tmp/x"), "q": Path("rel/y")}) == {"p": "/tmp/x", "q": "rel/y"}


def test_uuid_becomes_string() -> None:
    assert _encode({"u": uuid.UUID(int=1)}) == {"u": "00000000-0000-0000-0000-000000000001"}


def test_big_int_stays_an_int() -> None:
    assert _encode({"n": 2**70}) == {"n": 1180591620717411303424}


def test_bool_stays_a_bool_not_an_int() -> None:
    assert _encode({"b": True}) == {"b": True}
    assert _encode({"b": True})["b"] is True


def test_enum_with_scalar_value_becomes_its_value() -> None:
    assert _encode({"c": Color.RED, "l": Level.HIGH}) == {"c": "red", "l": 3}


def test_enum_with_container_value_becomes_its_name() -> None:
    assert _encode({"c": Color.PAIR}) == {"c": "PAIR"}


def test_complex_becomes_string() -> None:
    assert _encode({"z": 1 + 2j}) == {"z": "(1+2j)"}


def test_exception_becomes_its_type_and_message() -> None:
    assert _encode({"e": ValueError("bad input"), "f": RuntimeError()}) == {
        "e": "ValueError: bad input",
        "f": "RuntimeError",
    }


def test_object_without_attributes_becomes_its_repr() -> None:
    assert _encode({"fn": len, "s": Slotted()}) == {"fn": "<built-in function len>", "s": "Slotted()"}


def test_long_repr_is_shortened() -> None:
    class Long:
        __slots__ = ()

        def __repr__(self) -> str:
            return "<" + "x" * 500 + ">"

    assert _encode({"o": Long()}) == {"o": "<" + "x" * 199 + "...>"}


def test_broken_repr_falls_back_to_the_type_name() -> None:
    class Broken:
        __slots__ = ()

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert _encode({"o": Broken()}) == {"o": "<Broken>"}


# -- objects ---------------------------------------------------------------------------------


def test_object_with_dict_becomes_its_public_attributes() -> None:
    assert _encode({"issue": Issue()}) == {"issue": {"title": "Fix auth", "labels": ["bug"]}}


def test_dataclass_becomes_dict_of_its_fields() -> None:
    assert _encode({"a": Attachment("a.txt", b"x")}) == {"a": {"name": "a.txt", "data": "eA=="}}


def test_model_dump_is_preferred_over_attributes() -> None:
    assert _encode({"m": FakeModel()}) == {"m": {"id": 7, "tags": ["a", "b"]}}


def test_objects_nested_deeper_than_object_depth_are_cut_with_a_marker() -> None:
    @dataclasses.dataclass
    class Node:
        child: Any

    chain: Any = "leaf"
    for _ in range(3):
        chain = Node(chain)
    encoded = encode_value({"n": chain}, object_depth=2)
    assert encoded.value == {
        "n": {"child": {"child": "<cut: object nested deeper than 2 levels: " + repr(chain.child.child) + ">"}}
    }
    assert encoded.notes == ["n.child.child: " + encoded.value["n"]["child"]["child"]]


# -- keys ------------------------------------------------------------------------------------


def test_non_string_keys_become_strings() -> None:
    value = {None: "n", 2.5: "f", (1, 2): "t", b"k": "b", Color.RED: "e", dt.date(2025, 1, 1): "d", False: "x"}
    assert _encode({"m": value}) == {
        "m": {"null": "n", "2.5": "f", "(1, 2)": "t", "k": "b", "red": "e", "2025-01-01": "d", "false": "x"}
    }


def test_keys_that_collide_as_strings_are_all_kept_with_a_suffix() -> None:
    assert _encode({"m": {1: "int", "1": "str", 1.0 + 0.5: "x"}}) == {"m": {"1": "int", "1 (2)": "str", "1.5": "x"}}


def test_a_suffix_that_collides_again_gets_the_next_number() -> None:
    assert _encode({"m": {"1": "a", "1 (2)": "b", 1: "c"}}) == {"m": {"1": "a", "1 (2)": "b", "1 (3)": "c"}}


def test_binary_path_uses_the_suffixed_key() -> None:
    encoded = encode_value({"m": {"1": "a", 1: b"x"}})
    assert encoded.binary_paths == [("m", "1 (2)")]


# -- cycles and depth ------------------------------------------------------------------------


def test_self_referencing_list_is_cut_with_a_marker_and_a_note() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    encoded = encode_value({"loop": loop})
    assert encoded.value == {"loop": [1, "<circular reference to loop>"]}
    assert encoded.notes == ["circular reference at loop[1] cut (it points back to loop)"]


def test_self_referencing_dict_is_cut_with_a_marker() -> None:
    node: dict[str, Any] = {"name": "root"}
    node["self"] = node
    assert _encode({"node": node}) == {"node": {"name": "root", "self": "<circular reference to node>"}}


def test_object_cycle_is_cut_with_a_marker() -> None:
    parent = Issue()
    parent.labels = (parent,)  # type: ignore[assignment]
    assert _encode({"p": parent}) == {"p": {"title": "Fix auth", "labels": ["<circular reference to p>"]}}


def test_root_cycle_names_the_root() -> None:
    root: dict[str, Any] = {}
    root["me"] = root
    assert _encode(root) == {"me": "<circular reference to (root)>"}


def test_shared_reference_that_is_not_a_cycle_is_encoded_twice() -> None:
    shared = [1, 2]
    encoded = encode_value({"a": shared, "b": shared})
    assert (encoded.value, encoded.notes) == ({"a": [1, 2], "b": [1, 2]}, [])


def test_nesting_deeper_than_max_depth_is_cut_with_a_marker() -> None:
    value: Any = "leaf"
    for _ in range(4):
        value = [value]
    encoded = encode_value({"v": value}, max_depth=3)
    assert encoded.value == {"v": [["<cut: nested deeper than 3 levels>"]]}
    assert encoded.notes == ["v[0][0]: <cut: nested deeper than 3 levels>"]


def test_twenty_levels_of_plain_json_are_kept_by_default() -> None:
    value: Any = "leaf"
    for _ in range(20):
        value = {"a": value}
    encoded = encode_value(value)
    assert (encoded.value, encoded.notes) == (value, [])


@pytest.mark.parametrize("depth", [70, 500])
def test_very_deep_value_never_raises(depth: int) -> None:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    encoded = encode_value({"v": value})
    assert encoded.notes == ["v" + "[0]" * 63 + ": <cut: nested deeper than 64 levels>"]


def test_an_object_whose_getattr_raises_is_shown_by_its_repr() -> None:
    class Config:
        def __init__(self) -> None:
            self.data: dict[str, int] = {}

        def __getattr__(self, key: str) -> int:
            return self.__dict__["data"][key]

        def __repr__(self) -> str:
            return "<Config>"

    assert encode_value({"config": Config()}).value == {"config": "<Config>"}
