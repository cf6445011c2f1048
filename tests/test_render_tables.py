"""Markdown and TOON-style tables: exact text, quoting, and lossless round trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.auto import same_value
from pflow_structure.render.tables import (
    parse_markdown_table,
    parse_toon_table,
    render_markdown_table,
    render_toon_table,
)
from pflow_structure.render.toon import render_toon
from pflow_structure.render.toon_reader import parse_toon
from tests.conftest import examples

ROWS = [{"id": 1, "name": "Ada", "score": 0.5}, {"id": 2, "name": "Smith, J", "score": None}]


def test_toon_table_has_a_header_and_one_row_per_item() -> None:
    assert render_toon_table(ROWS) == 'items[2]{id,name,score}:\n  1,Ada,0.5\n  2,"Smith, J",null'


def test_markdown_table_escapes_pipes() -> None:
    assert render_markdown_table([{"a": "x|y", "b": 1}]) == "| a | b |\n|---|---|\n| x\\|y | 1 |"


def test_strings_that_read_as_other_values_are_quoted() -> None:
    row = {"a": "42", "b": "true", "c": "", "d": " pad", "e": "two\nlines", "f": "-x"}
    assert render_toon_table([row]) == 'items[1]{a,b,c,d,e,f}:\n  "42","true",""," pad","two\\nlines","-x"'


def test_toon_document_holds_primitives_lists_and_tables() -> None:
    value = {"total": 2, "tags": ["a", "b"], "none": [], "rows": [{"id": 1}, {"id": 2}], "odd key": "v"}
    text = render_toon(value)
    assert text == 'total: 2\ntags[2]: a,b\nnone[0]:\nrows[2]{id}:\n  1\n  2\n"odd key": v'
    assert parse_toon(text) == value


def test_a_root_list_uses_the_nameless_toon_header() -> None:
    assert render_toon([{"a": 1}]) == "[1]{a}:\n  1"
    assert parse_toon_table("[1]{a}:\n  1") == (None, [{"a": 1}])


@pytest.mark.parametrize(
    "items",
    [[], [{"a": {"b": 1}}], [{"a": 1}, {"b": 1}], [{"a": float("nan")}], [{}], "text", [1, 2]],
    ids=["empty", "nested", "different-keys", "nan", "no-keys", "string", "not-dicts"],
)
def test_lists_a_table_cannot_hold_are_refused(items: Any) -> None:
    with pytest.raises(NotRepresentable):
        render_toon_table(items)


# TOON escapes only backslash, quote, newline, return and tab: other control characters and lone
# surrogates have no form there (refused below), so the round trips draw text without them.
_TEXT = st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\n\r\t")
_CELLS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(_TEXT),
)
_KEYS = st.text(_TEXT, max_size=6)


@pytest.mark.parametrize("text", ["a\x0cb", "\x00", "\x1f", "a\ud800"])
def test_a_string_toon_cannot_escape_is_refused(text: str) -> None:
    with pytest.raises(NotRepresentable):
        render_toon_table([{"k": text}])
    with pytest.raises(NotRepresentable):
        render_toon_table([{text: 1}])


@st.composite
def _tables(draw: Any) -> list[dict[str, Any]]:
    keys = draw(st.lists(_KEYS, min_size=1, max_size=4, unique=True))
    rows = draw(st.lists(st.fixed_dictionaries({k: _CELLS for k in keys}), min_size=1, max_size=5))
    return rows


@settings(max_examples=examples(80), deadline=None)
@given(_tables())
def test_toon_table_round_trips(rows: list[dict[str, Any]]) -> None:
    assert same_value(parse_toon_table(render_toon_table(rows))[1], rows)


@settings(max_examples=examples(80), deadline=None)
@given(_tables())
def test_markdown_table_round_trips(rows: list[dict[str, Any]]) -> None:
    assert same_value(parse_markdown_table(render_markdown_table(rows)), rows)
