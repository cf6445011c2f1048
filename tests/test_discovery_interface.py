"""The Interface docstring parser: nested format, descriptions kept whole, `_raw` for bad items only."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pflow_structure.discovery import MAX_DEPTH, parse_interface
from pflow_structure.nodes import BUILTIN_NODES
from pflow_structure.registry import find_node
from tests.conftest import examples


def _doc(*lines: str) -> str:
    return "A node.\n\nInterface:\n" + "\n".join(lines) + "\n\nNotes after the block.\n"


def raw_paths(value: Any, path: str = "") -> list[str]:
    """Where `_raw` fallbacks sit in a parsed interface."""
    found: list[str] = []
    if isinstance(value, dict):
        if "_raw" in value:
            found.append(path)
        for key, child in value.items():
            found.extend(raw_paths(child, f"{path}/{key}"))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(raw_paths(child, f"{path}[{index}]"))
    return found


def test_default_in_description_is_not_a_parameter() -> None:
    """pflow's parser turns this line into a bogus parameter named `default` with type `{})`."""
    doc = _doc("- Params: inputs: dict  # Variable name to value mapping (optional, default: {})")
    assert parse_interface(doc)["params"] == [
        {"key": "inputs", "type": "dict", "description": "Variable name to value mapping (optional, default: {})"}
    ]


def test_seed_example_gives_the_nested_format() -> None:
    doc = _doc(
        '- Writes: shared["issue_data"]: dict  # GitHub issue',
        "    - number: int  # Issue number",
        "    - user: dict  # Author information",
        "      - login: str  # Username",
        "      - id: int  # User ID",
        "    - labels: list  # Issue labels",
        "      - name: str  # Label name",
    )
    assert parse_interface(doc)["outputs"] == [
        {
            "key": "issue_data",
            "type": "dict",
            "description": "GitHub issue",
            "structure": {
                "number": {"type": "int", "description": "Issue number"},
                "user": {
                    "type": "dict",
                    "description": "Author information",
                    "structure": {
                        "login": {"type": "str", "description": "Username"},
                        "id": {"type": "int", "description": "User ID"},
                    },
                },
                "labels": {
                    "type": "list",
                    "description": "Issue labels",
                    "items": {"name": {"type": "str", "description": "Label name"}},
                },
            },
        }
    ]


def test_list_of_dicts_puts_its_fields_under_items() -> None:
    doc = _doc('- Writes: shared["commits"]: list[dict]  # Commits', "    - sha: str  # Full SHA")
    assert parse_interface(doc)["outputs"][0]["items"] == {"sha": {"type": "str", "description": "Full SHA"}}


def test_inline_list_of_dicts_syntax_is_parsed() -> None:
    doc = _doc('- Writes: shared["rows"]: [{name: str, size: int}]  # Rows')
    assert parse_interface(doc)["outputs"] == [
        {
            "key": "rows",
            "type": "list[dict]",
            "description": "Rows",
            "items": {"name": {"type": "str", "description": ""}, "size": {"type": "int", "description": ""}},
        }
    ]


def test_description_keeps_commas_parentheses_and_hashes() -> None:
    doc = _doc("- Params: state: str  # Issue state: open, closed, all (optional, default: open) # not a split")
    assert parse_interface(doc)["params"][0]["description"] == (
        "Issue state: open, closed, all (optional, default: open) # not a split"
    )


def test_reads_without_a_type_are_any() -> None:
    doc = _doc('- Reads: shared["text"]')
    assert parse_interface(doc)["inputs"] == [{"key": "text", "type": "any", "description": ""}]


def test_several_declarations_on_one_line_share_the_comment() -> None:
    doc = _doc('- Reads: shared["a"]: str, shared["b"]: int  # Both inputs')
    assert parse_interface(doc)["inputs"] == [
        {"key": "a", "type": "str", "description": "Both inputs"},
        {"key": "b", "type": "int", "description": "Both inputs"},
    ]


def test_union_and_capitalised_types_are_normalised() -> None:
    doc = _doc('- Writes: shared["response"]: dict | str  # Body', "- Params: data: Any  # Anything")
    parsed = parse_interface(doc)
    assert (parsed["outputs"][0]["type"], parsed["params"][0]["type"]) == ("dict|str", "any")


def test_list_of_a_scalar_type_is_supported() -> None:
    doc = _doc("- Params: files: list[str]  # Files to add")
    assert parse_interface(doc)["params"][0]["type"] == "list[str]"


def test_unknown_type_becomes_raw_for_that_item_only() -> None:
    doc = _doc('- Writes: shared["name"]: str | null  # Maybe', '- Writes: shared["ok"]: int  # Fine')
    assert parse_interface(doc)["outputs"] == [
        {"_raw": '- Writes: shared["name"]: str | null  # Maybe'},
        {"key": "ok", "type": "int", "description": "Fine"},
    ]


def test_optional_marker_field_becomes_raw_under_its_name() -> None:
    doc = _doc('- Writes: shared["user"]: dict  # User', "    - age?: int  # Age", "    - name: str  # Name")
    assert parse_interface(doc)["outputs"][0]["structure"] == {
        "age?": {"_raw": "- age?: int  # Age"},
        "name": {"type": "str", "description": "Name"},
    }


def test_fields_under_a_scalar_make_that_field_raw() -> None:
    doc = _doc('- Writes: shared["user"]: dict  # User', "    - name: str  # Name", "      - first: str  # First")
    assert parse_interface(doc)["outputs"][0]["structure"] == {
        "name": {"_raw": "- name: str  # Name\n- first: str  # First"}
    }


def test_nesting_beyond_five_levels_becomes_raw() -> None:
    lines = ['- Writes: shared["deep"]: dict  # Deep']
    lines += [f"{'  ' * (level + 1)}- level{level}: dict  # Level {level}" for level in range(1, MAX_DEPTH + 2)]
    node = parse_interface(_doc(*lines))["outputs"][0]
    for level in range(1, MAX_DEPTH + 1):
        node = node["structure"][f"level{level}"]
    assert node["structure"] == {"level6": {"_raw": "- level6: dict  # Level 6"}}


def test_comment_continuation_line_joins_the_description() -> None:
    doc = _doc("- Params: since: str  # Filter by date (optional)", "    # Accepts: ISO date, or 7 days ago")
    assert parse_interface(doc)["params"][0]["description"] == (
        "Filter by date (optional) Accepts: ISO date, or 7 days ago"
    )


def test_actions_keep_names_and_drop_their_notes() -> None:
    doc = _doc("- Actions: default (success), error (failure, or timeout), <custom> (dynamic routing)")
    assert parse_interface(doc)["actions"] == ["default", "error", "<custom>"]


def test_unknown_label_goes_to_other_with_its_section() -> None:
    doc = _doc("- Shared: confirm_delete: bool  # Must be set")
    assert parse_interface(doc)["other"] == [
        {"section": "Shared", "key": "confirm_delete", "type": "bool", "description": "Must be set"}
    ]


def test_line_without_a_label_goes_to_other_as_raw() -> None:
    assert parse_interface(_doc("- just some words"))["other"] == [{"_raw": "- just some words"}]


def test_block_ends_at_the_first_blank_line() -> None:
    doc = _doc("- Actions: default") + "- Writes: shared['after']: str\n"
    assert parse_interface(doc)["outputs"] == []


def test_indented_docstring_parses_like_a_cleaned_one() -> None:
    cleaned = _doc('- Writes: shared["a"]: dict  # A', "    - b: int  # B")
    indented = "\n".join(cleaned.splitlines()[:1] + ["        " + line for line in cleaned.splitlines()[1:]])
    assert parse_interface(indented) == parse_interface(cleaned)


def test_docstring_without_interface_gives_empty_sections() -> None:
    assert parse_interface("Just a description.\n\nMore text.") == {
        "description": "Just a description.",
        "inputs": [],
        "outputs": [],
        "params": [],
        "actions": [],
    }


def test_builtin_node_docstrings_parse_without_raw() -> None:
    for name in BUILTIN_NODES:
        parsed = parse_interface(find_node(name).load().__doc__)
        assert (name, raw_paths(parsed)) == (name, [])


@settings(max_examples=examples(100), deadline=None)  # a loaded CI machine must not fail it on time alone
@given(st.text(max_size=300))
def test_any_text_parses_without_raising(text: str) -> None:
    parsed = parse_interface("Node.\n\nInterface:\n" + text)
    assert sorted(key for key in parsed if key != "other") == ["actions", "description", "inputs", "outputs", "params"]
