"""Structure inference: exact structures, each checked against the read-back contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pflow_structure.encoding import encode_value
from pflow_structure.structure import DEFAULT_MAX_PATHS, InferredStructure, classify, infer_structure
from tests.contract import assert_structure_reads_back


def _infer(outputs: Any, **options: Any) -> InferredStructure:
    """Encode like the service does, infer, and check that every listed path reads back."""
    encoded = encode_value(outputs)
    inferred = infer_structure(encoded.value, binary_paths=encoded.binary_paths, **options)
    assert_structure_reads_back(encoded.value, inferred.structure, encoded.binary_paths)
    return inferred


def _structure(outputs: Any, **options: Any) -> dict[str, dict[str, Any]]:
    return _infer(outputs, **options).structure


# -- types and basic statistics --------------------------------------------------------------


def test_spec_example_list_length_and_string_average_length() -> None:
    outputs = {"result": [{"id": 1, "title": "ab"}, {"id": 2, "title": "abcd"}]}
    assert _structure(outputs) == {
        "result": {"type": "list", "length": 2},
        "result[0].id": {"type": "int"},
        "result[0].title": {"type": "str", "avg_length": 3},
    }


def test_scalar_types_are_named_as_json_types() -> None:
    outputs = {"s": "x", "i": 1, "f": 1.5, "b": False, "n": None}
    assert _structure(outputs) == {
        "s": {"type": "str", "avg_length": 1},
        "i": {"type": "int"},
        "f": {"type": "float"},
        "b": {"type": "bool"},
        "n": {"type": "null"},
    }


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, "bool"),
        (1, "int"),
        (1.0, "float"),
        ("s", "str"),
        (None, "null"),
        ({}, "dict"),
        ([], "list"),
        ((), "list"),
    ],
)
def test_classify_checks_bool_before_int(value: Any, kind: str) -> None:
    assert classify(value) == kind


def test_named_dict_fields_are_listed_with_their_children() -> None:
    assert _structure({"user": {"login": "octocat"}}) == {
        "user": {"type": "dict"},
        "user.login": {"type": "str", "avg_length": 7},
    }


def test_list_items_that_are_plain_dicts_are_not_listed_themselves() -> None:
    assert "result[0]" not in _structure({"result": [{"a": 1}]})


def test_empty_list_has_length_zero_and_no_item_path() -> None:
    assert _structure({"items": []}) == {"items": {"type": "list", "length": 0}}


def test_empty_outputs_have_an_empty_structure() -> None:
    inferred = _infer({})
    assert (inferred.structure, inferred.field_count, inferred.total_paths) == ({}, 0, 0)


def test_bare_value_is_listed_under_result() -> None:
    inferred = infer_structure([1, 2])
    assert inferred.structure == {"result": {"type": "list", "length": 2}, "result[0]": {"type": "int"}}
    assert_structure_reads_back({"result": [1, 2]}, inferred.structure)


def test_keys_that_are_not_plain_names_are_quoted() -> None:
    # Seven keys: eight keys that are not names would be summarised as dynamic keys.
    outputs = {"h": {"content-type": 1, "x.y": 2, "": 3, "1st": 4, "é🎉": 5, 'q"': 6, "b\\": 7}}
    assert list(_structure(outputs)) == [
        "h",
        'h["content-type"]',
        'h["x.y"]',
        'h[""]',
        'h["1st"]',
        'h["é🎉"]',
        'h["q\\""]',
        'h["b\\\\"]',
    ]


# -- statistics over every item --------------------------------------------------------------


def test_key_only_item_forty_has_is_listed_with_presence() -> None:
    items: list[dict[str, Any]] = [{"n": i} for i in range(41)]
    items[40]["late"] = "x"
    assert _structure({"result": items})["result[0].late"] == {"type": "str", "avg_length": 1, "present": 1, "of": 41}


def test_key_every_item_has_shows_no_presence() -> None:
    assert _structure({"result": [{"n": 1}, {"n": 2}]})["result[0].n"] == {"type": "int"}


def test_presence_counts_dicts_not_list_items_that_are_not_dicts() -> None:
    assert _structure({"a": [{"x": 1}, 5]}) == {
        "a": {"type": "list", "length": 2},
        "a[0]": {"type": "dict|int"},
        "a[0].x": {"type": "int"},
    }


def test_mixed_types_show_as_union_with_null_last() -> None:
    outputs = {"a": [{"m": None}, {"m": "x"}, {"m": "yy"}, {"m": None}, {"m": None}]}
    assert _structure(outputs)["a[0].m"] == {"type": "str|null", "avg_length": 2}


def test_union_orders_types_by_how_often_they_appear() -> None:
    outputs = {"a": [{"x": 1.5}, {"x": 1}, {"x": 2.5}, {"x": True}, {"x": None}, {}]}
    assert _structure(outputs)["a[0].x"] == {"type": "float|int|bool|null", "present": 5, "of": 6}


def test_optional_dict_shows_dict_or_null_and_its_children() -> None:
    outputs = {"a": [{"m": {"t": 1}}, {"m": None}]}
    assert _structure(outputs) == {
        "a": {"type": "list", "length": 2},
        "a[0].m": {"type": "dict|null"},
        "a[0].m.t": {"type": "int"},
    }


def test_nested_lists_of_different_lengths_get_min_avg_max() -> None:
    outputs = {"result": [{"labels": ["a", "b", "c"]}, {"labels": ["a"]}, {"labels": []}, {"labels": ["a", "b"]}]}
    assert _structure(outputs)["result[0].labels"] == {"type": "list", "length": 1.5, "min_length": 0, "max_length": 3}


def test_nested_lists_of_the_same_length_get_one_length() -> None:
    assert _structure({"a": [[1, 2], [3, 4]]})["a[0]"] == {"type": "list", "length": 2}


def test_list_of_lists_of_dicts_reaches_the_inner_keys() -> None:
    assert _structure({"a": [[{"x": 1}], [{"x": 2}, {"x": 3}]]}) == {
        "a": {"type": "list", "length": 2},
        "a[0]": {"type": "list", "length": 1.5, "min_length": 1, "max_length": 2},
        "a[0][0].x": {"type": "int"},
    }


def test_string_average_length_is_over_every_item() -> None:
    assert _structure({"a": ["x" * 10, "x" * 20, "x" * 31]})["a[0]"] == {"type": "str", "avg_length": 20}


# -- bytes -----------------------------------------------------------------------------------


def test_bytes_are_typed_bytes_with_their_decoded_length() -> None:
    assert _structure({"blob": b"hello"}) == {"blob": {"type": "bytes", "avg_length": 5}}


def test_list_mixing_bytes_and_strings_shows_a_union() -> None:
    assert _structure({"l": [b"ab", "s", b"cd"]})["l[0]"] == {"type": "bytes|str", "avg_length": 2}


def test_user_dict_that_looks_like_a_base64_marker_is_a_plain_dict() -> None:
    assert _structure({"m": {"__type": "base64", "data": "aGk="}}) == {
        "m": {"type": "dict"},
        "m.__type": {"type": "str", "avg_length": 6},
        "m.data": {"type": "str", "avg_length": 4},
    }


# -- strings that hold JSON ------------------------------------------------------------------


def test_string_holding_a_json_object_is_marked_and_its_keys_listed() -> None:
    assert _structure({"raw": json.dumps({"x": 1, "y": [1, 2]})}) == {
        "raw": {"type": "str", "avg_length": 21, "json": "dict"},
        "raw.x": {"type": "int"},
        "raw.y": {"type": "list", "length": 2},
        "raw.y[0]": {"type": "int"},
    }


def test_string_holding_a_json_array_is_marked_list_with_its_length() -> None:
    assert _structure({"rows": '[{"id": 7}, {"id": 8}]'}) == {
        "rows": {"type": "str", "length": 2, "avg_length": 22, "json": "list"},
        "rows[0].id": {"type": "int"},
    }


def test_json_text_with_surrounding_whitespace_is_marked() -> None:
    assert _structure({"out": '{"ok": true}\n'}) == {
        "out": {"type": "str", "avg_length": 13, "json": "dict"},
        "out.ok": {"type": "bool"},
    }


def test_json_inside_json_text_is_read_through_twice() -> None:
    outer = json.dumps({"inner": json.dumps({"deep": True})})
    assert _structure({"raw": outer})["raw.inner.deep"] == {"type": "bool"}


def test_strings_of_objects_and_arrays_together_are_marked_dict_or_list() -> None:
    assert _structure({"a": ['{"x": 1}', "[1, 2]", "plain"]})["a[0]"] == {
        "type": "str",
        "length": 2,
        "avg_length": 6,
        "json": "dict|list",
    }


def test_string_that_only_looks_like_json_is_a_plain_string() -> None:
    assert _structure({"a": "{oops}"}) == {"a": {"type": "str", "avg_length": 6}}


def test_json_text_deeper_than_the_parser_allows_is_a_plain_string() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert _structure({"a": text}) == {"a": {"type": "str", "avg_length": 200_000}}


# -- dicts whose keys are data ---------------------------------------------------------------


def _versions(count: int) -> dict[str, Any]:
    return {
        f"1.{i}.0": {"version": f"1.{i}.0", **({"author": {"name": "sindre"}} if i == 0 else {})} for i in range(count)
    }


def test_dict_with_version_keys_is_summarised_under_wildcard() -> None:
    assert _structure({"versions": _versions(8)}) == {
        "versions": {"type": "dict", "keys": 8, "dynamic_keys": True, "key_names": list(_versions(8))},
        "versions[*].version": {"type": "str", "avg_length": 5},
        "versions[*].author": {"type": "dict", "present": 1, "of": 8},
        "versions[*].author.name": {"type": "str", "avg_length": 6},
    }


def test_dict_with_fewer_than_eight_scalar_keys_is_listed_key_by_key() -> None:
    versions = {f"1.{i}.0": f"2024-01-0{i + 1}" for i in range(7)}
    assert list(_structure({"versions": versions}))[:3] == ["versions", 'versions["1.0.0"]', 'versions["1.1.0"]']


def test_three_dicts_sharing_their_keys_are_records_keyed_by_name() -> None:
    properties = {
        "owner": {"type": "string", "description": "Repository owner"},
        "repo": {"type": "string", "description": "Repository name"},
        "page": {"description": "Page number"},
    }
    outputs = {"inputSchema": {"properties": properties}}
    assert _structure(outputs) == {
        "inputSchema": {"type": "dict"},
        "inputSchema.properties": {
            "type": "dict",
            "keys": 3,
            "dynamic_keys": True,
            "key_names": ["owner", "repo", "page"],
        },
        "inputSchema.properties[*].type": {"type": "str", "avg_length": 6, "present": 2, "of": 3},
        "inputSchema.properties[*].description": {"type": "str", "avg_length": 14},
    }
    assert_structure_reads_back(outputs, infer_structure(outputs).structure)


def test_two_dicts_sharing_their_keys_are_listed_key_by_key() -> None:
    outputs = {"p": {"a": {"type": "x"}, "b": {"type": "y"}}}
    assert list(_structure(outputs)) == ["p", "p.a", "p.a.type", "p.b", "p.b.type"]


def test_dicts_with_mostly_different_keys_are_fields_not_records() -> None:
    outputs = {"p": {"a": {"x": 1, "y": 1}, "b": {"y": 1, "z": 1}, "c": {"w": 1, "v": 1}}}
    assert "p[*].y" not in _structure(outputs)


def test_a_dict_holding_a_scalar_beside_dicts_is_a_record() -> None:
    outputs = {"p": {"a": {"x": 1}, "b": {"x": 2}, "c": {"x": 3}, "n": 1}}
    assert "p.a.x" in _structure(outputs)


def test_a_key_longer_than_the_limit_is_not_listed() -> None:
    huge = {"k" * 5000: {"x": 1}, "b": {"x": 2}, "c": {"x": 3}}
    assert _structure({"p": huge})["p"]["key_names"] == []


def test_key_names_stop_at_eight_or_120_characters() -> None:
    long_keys = {f"{'k' * 50}{i}": {"x": i} for i in range(4)}
    assert _structure({"p": long_keys})["p"]["key_names"] == list(long_keys)[:2]
    many = {f"key{i}": {"x": i} for i in range(12)}
    assert _structure({"p": many})["p"]["key_names"] == [f"key{i}" for i in range(8)]


def test_dynamic_dict_of_scalars_lists_the_wildcard_itself() -> None:
    assert _structure({"time": {f"2024-01-{day:02d}": "x" for day in range(1, 11)}}) == {
        "time": {"type": "dict", "keys": 10, "dynamic_keys": True, "key_names": [f"2024-01-0{d}" for d in range(1, 9)]},
        "time[*]": {"type": "str", "avg_length": 1},
    }


def test_twenty_plain_named_keys_holding_dicts_are_summarised() -> None:
    names = [f"Schema{chr(65 + i)}x" for i in range(20)]
    assert _structure({"schemas": {name: {"id": name} for name in names}}) == {
        "schemas": {"type": "dict", "keys": 20, "dynamic_keys": True, "key_names": names[:8]},
        "schemas[*].id": {"type": "str", "avg_length": 8},
    }


def test_hundred_keys_of_one_kind_are_summarised_whatever_the_keys_look_like() -> None:
    names = ["".join(chr(97 + (i // 26**power) % 26) for power in range(3)) for i in range(100)]
    assert _structure({"users": {name: True for name in names}}) == {
        "users": {"type": "dict", "keys": 100, "dynamic_keys": True, "key_names": names[:8]},
        "users[*]": {"type": "bool"},
    }


def test_ninety_nine_plain_named_scalar_keys_are_listed_one_by_one() -> None:
    names = ["".join(chr(97 + (i // 26**power) % 26) for power in range(3)) for i in range(99)]
    assert len(_structure({"users": {name: True for name in names}})) == 100


def test_numbered_field_names_are_not_taken_for_dynamic_keys() -> None:
    keys = ["email", "first_name", "image_192", "image_24", "image_32", "image_48", "image_72", "last_name"]
    structure = _structure({"profile": {key: "s" for key in keys}})
    assert "profile.email" in structure
    assert "dynamic_keys" not in structure["profile"]


def test_dict_with_mixed_value_types_is_not_summarised() -> None:
    value: dict[str, Any] = {f"k{i}": i for i in range(8)}
    value.update({"a1": "s", "b2": [1]})
    assert "dynamic_keys" not in _structure({"d": value})["d"]


# -- limits and counts -----------------------------------------------------------------------


def test_default_path_cap_is_500() -> None:
    assert DEFAULT_MAX_PATHS == 500


def test_path_cap_keeps_the_shallowest_paths_in_order_and_counts_the_rest() -> None:
    outputs = {"a": {"b": {"c": 1}}, "z": 2, "y": {"w": 3}}
    inferred = _infer(outputs, max_paths=3)
    assert inferred.structure == {"a": {"type": "dict"}, "z": {"type": "int"}, "y": {"type": "dict"}}
    assert (inferred.total_paths, inferred.omitted_paths) == (6, 3)


def test_path_cap_breaks_depth_ties_by_original_order() -> None:
    inferred = _infer({"a": {"b": 1, "c": 2}, "d": {"e": 3}}, max_paths=4)
    assert list(inferred.structure) == ["a", "a.b", "a.c", "d"]


def test_structure_within_the_cap_omits_nothing() -> None:
    assert _infer({"a": 1}).omitted_paths == 0


def test_field_count_counts_leaf_paths_only() -> None:
    outputs = {"result": [{"title": "a", "user": {"login": "x"}, "labels": [{"name": "bug"}]}], "count": 1}
    assert _infer(outputs).field_count == 4


def test_field_count_counts_empty_containers_as_fields() -> None:
    assert _infer({"a": [], "b": {}, "c": [{}]}).field_count == 3


def test_field_count_includes_paths_beyond_the_cap() -> None:
    assert _infer({"a": {"b": {"c": 1, "d": 2}}}, max_paths=1).field_count == 2


def test_depth_limit_marks_the_cut_path_truncated() -> None:
    assert _structure({"a": {"b": {"c": {"d": 1}}}}, max_depth=2) == {
        "a": {"type": "dict"},
        "a.b": {"type": "dict", "truncated": "depth"},
    }


def test_encoder_markers_are_listed_as_strings() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert _structure({"loop": loop}) == {
        "loop": {"type": "list", "length": 1},
        "loop[0]": {"type": "str", "avg_length": 28},
    }


def test_a_repeated_dict_shape_is_listed_once_and_referenced_after() -> None:
    user = {"login": "a", "id": 1, "url": "u"}
    outputs = {"result": [{"user": dict(user), "assignee": dict(user), "closed_by": None}]}
    outputs["result"][0]["closed_by"] = dict(user)
    inferred = infer_structure(outputs)
    assert inferred.structure == {
        "result": {"type": "list", "length": 1},
        "result[0].user": {"type": "dict"},
        "result[0].user.login": {"type": "str", "avg_length": 1},
        "result[0].user.id": {"type": "int"},
        "result[0].user.url": {"type": "str", "avg_length": 1},
        "result[0].assignee": {"type": "dict", "same_as": "result[0].user"},
        "result[0].closed_by": {"type": "dict", "same_as": "result[0].user"},
    }
    assert inferred.field_count == 9  # the fields behind each reference still count
    assert_structure_reads_back(outputs, inferred.structure)


def test_a_dict_with_other_keys_is_not_called_the_same_shape() -> None:
    outputs = {"a": {"x": 1, "y": 2, "z": 3}, "b": {"x": 1, "y": 2, "w": 3}, "c": {"x": "s", "y": 2, "z": 3}}
    structure = infer_structure(outputs).structure
    assert not any("same_as" in entry for entry in structure.values())


def test_small_dicts_are_not_referenced() -> None:
    outputs = {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 2}}
    assert "same_as" not in infer_structure(outputs).structure["b"]


def _keys_below(structure: dict[str, dict[str, object]], parent: str) -> set[str]:
    return {path[len(parent) :] for path in structure if path.startswith(parent) and path != parent}


def test_same_as_never_confuses_two_dynamic_dicts_with_different_values() -> None:
    """Merged stats nodes of dynamic-key dicts are temporary; a reused id() must not reuse a shape."""
    outputs = {
        "a": {f"v{i}": {"x": 1, "y": 2, "z": 3} for i in range(10)},
        "b": {f"v{i}": {"p": "s", "q": "s", "r": "s"} for i in range(10)},
    }
    structure = infer_structure(outputs).structure
    assert "same_as" not in structure.get("b[*]", {})
    assert {"b[*].p", "b[*].q", "b[*].r"} <= set(structure)
    assert_structure_reads_back(outputs, structure)


def test_every_same_as_target_is_listed_with_the_same_keys() -> None:
    outputs = {"r": [{"x": 1, "y": 2, "z": 3}], "q": {"x": 1, "y": 2, "z": 3}}
    structure = infer_structure(outputs).structure
    assert structure["q"] == {"type": "dict", "same_as": "r[0]"}
    assert structure["r[0]"] == {"type": "dict"}
    assert list(structure) == ["r", "r[0]", "r[0].x", "r[0].y", "r[0].z", "q"]
    assert_structure_reads_back(outputs, structure)


def test_same_as_is_dropped_when_the_cap_removes_the_target_fields() -> None:
    user = {"login": "a", "id": 1, "url": "u"}
    outputs = {"a": {"b": {"c": {"user": dict(user)}}}, "z": dict(user)}
    structure = infer_structure(outputs, max_paths=4).structure
    assert structure["z"] == {"type": "dict"}
    assert_structure_reads_back(outputs, structure)


def test_json_text_is_never_the_same_shape_as_a_dict() -> None:
    for outputs in (
        {"d": {"a": 1, "b": 2, "c": 3}, "s": '{"a": 1, "b": 2, "c": 3}'},
        {"s": '{"a": 1, "b": 2, "c": 3}', "d": {"a": 1, "b": 2, "c": 3}},
    ):
        structure = infer_structure(outputs).structure
        assert not any("same_as" in entry for entry in structure.values())
        assert {"d.a", "s.a"} <= set(structure)
        assert_structure_reads_back(outputs, structure)


def test_a_union_of_equally_frequent_types_puts_str_before_int() -> None:
    outputs = {"a": [{"x": "ab"}, {"x": 1}]}
    assert _structure(outputs)["a[0].x"] == {"type": "str|int", "avg_length": 2}


def test_key_names_stop_one_character_past_120() -> None:
    keys = {"k" * 59 + "0": {"x": 1}, "k" * 60 + "1": {"x": 2}, "k" * 59 + "2": {"x": 3}}  # 60 + 61 = 121
    assert _structure({"p": keys})["p"]["key_names"] == ["k" * 59 + "0"]


def test_ten_named_dicts_sharing_their_keys_are_records_keyed_by_name() -> None:
    """Past the small-dict rule (8 keys and more): still one [*] when the values share their keys."""
    names = ["owner", "repo", "page", "sort", "order", "state", "labels", "since", "per_page", "direction"]
    outputs = {"p": {name: {"type": "string", "description": f"the {name}"} for name in names}}
    structure = _structure(outputs)
    assert [path for path in structure if path.startswith("p")] == ["p", "p[*].type", "p[*].description"]
    assert structure["p"]["keys"] == 10
    assert_structure_reads_back(outputs, infer_structure(outputs).structure)


def test_eight_keys_of_24_characters_or_more_look_like_data_and_are_summarised() -> None:
    """Long keys are ids or hashes more often than field names, even without a digit."""
    keys = {f"{name}_session_token_for_user": "x" for name in "abcdefgh"}  # 24 characters each
    assert _structure({"p": keys})["p"]["dynamic_keys"] is True
    shorter = {f"{name}_session_token_for_use": "x" for name in "abcdefgh"}  # 23: field names
    assert "dynamic_keys" not in _structure({"p": shorter})["p"]


def test_an_average_list_length_keeps_one_decimal() -> None:
    assert _structure({"e": [[1], [2, 3], [4, 5]]})["e[0]"] == {
        "type": "list",
        "length": 1.7,
        "min_length": 1,
        "max_length": 2,
    }


def test_filter_signals_are_gathered_for_scalar_leaves_only() -> None:
    inferred = infer_structure({"a": [1, 2, 3], "b": "x", "c": {"d": True}, "e": [[1], [2, 3]]})
    assert sorted(inferred.signals) == ["a[0]", "b", "c.d", "e[0][0]"]
