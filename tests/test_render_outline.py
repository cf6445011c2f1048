"""The record outline of seed 002: golden files, options, and the parser's round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflow_structure.render.outline import OutlineFields, parse_envelope, parse_outline, render_outline, wrap
from tests.conftest import examples

GOLDEN = Path(__file__).resolve().parent / "data" / "render" / "outline"


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_outline_reproduces_the_seed_example(name: str) -> None:
    case = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    expected = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8").removesuffix("\n")
    assert render_outline(case["input"]["results"], **case["options"]) == expected


def test_parser_reads_the_seed_outline_back_into_nested_records() -> None:
    text = (GOLDEN / "basic_three_records.txt").read_text(encoding="utf-8")
    parsed = parse_outline(text)
    assert [r["id"] for r in parsed] == ["R001"]
    assert [(c["id"], c["state"]) for c in parsed[0]["children"]] == [("R002", "OPEN"), ("R003", "RESOLVED")]
    assert parsed[0]["children"][0]["summary"] == (
        "Should we add Redis pub/sub to support event-driven cache invalidation? Evaluating ops complexity vs benefits."
    )


def test_parser_reads_the_envelope_snippet_and_hidden_children() -> None:
    text = "session: sess_abc | tick: 147\n\n[R1] (O+2) T\n  S\n  > snip\n  [+3 children]"
    assert parse_envelope(text) == {"session": "sess_abc", "tick": 147}
    assert parse_outline(text) == [
        {
            "id": "R1",
            "state": "OPEN",
            "open_children_count": 2,
            "title": "T",
            "summary": "S",
            "snippet": "snip",
            "hidden_children": 3,
        }
    ]


def test_flat_and_nested_input_give_the_same_outline() -> None:
    flat = [{"id": "a", "title": "A"}, {"id": "b", "title": "B", "parent_id": "a"}]
    nested = [{"id": "a", "title": "A", "children": [{"id": "b", "title": "B"}]}]
    assert render_outline(flat) == render_outline(nested) == "[a] A\n  [b] B"


def test_field_names_and_state_letters_are_configurable() -> None:
    fields = OutlineFields(id="key", title="name", summary="about", state="status", parent="up", children="kids")
    records = [{"key": 7, "name": "Issue", "status": "open", "about": "Broken.", "kids": [{"key": 8, "name": "Sub"}]}]
    text = render_outline(records, fields=fields, states={"open": "o"})
    assert text == "[7] (o) Issue\n  Broken.\n\n  [8] Sub"
    assert parse_outline(text, fields=fields, states={"open": "o"})[0]["status"] == "open"


def test_a_parent_id_cycle_is_drawn_once_from_its_first_record() -> None:
    records = [{"id": "a", "title": "A", "parent_id": "b"}, {"id": "b", "title": "B", "parent_id": "a"}]
    assert render_outline(records) == "[a] A\n  [b] B"


def test_a_summary_with_newlines_continues_at_the_same_indent() -> None:
    assert render_outline([{"id": "a", "title": "A", "summary": "one\ntwo"}]) == "[a] A\n  one\n  two"


def test_one_child_is_counted_in_the_singular() -> None:
    records = [{"id": "a", "title": "A", "children": [{"id": "b", "title": "B"}]}]
    assert render_outline(records, max_depth=1) == "[a] A\n  [+1 child]"


def test_wrap_breaks_at_single_spaces_and_joins_back() -> None:
    text = "alpha beta  gamma delta"
    lines = wrap(text, 10)
    assert lines == ["alpha beta ", "gamma", "delta"]
    assert " ".join(lines) == text


_IDS = st.text(st.characters(blacklist_characters="]\n\r", blacklist_categories=("Cs",)), max_size=8)
_TITLES = st.text(
    st.one_of(st.sampled_from("[]()+ "), st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))), max_size=20
)
_WORDS = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters=".,;:!?'\"()]-/"), min_size=1)
_SUMMARIES = st.lists(_WORDS, min_size=1, max_size=15).map(" ".join)
_STATES = st.sampled_from(["OPEN", "LATER", "RESOLVED", "DISCARDED"])


@st.composite
def _records(draw: Any, depth: int = 0) -> dict[str, Any]:
    record: dict[str, Any] = {"id": draw(_IDS), "state": draw(_STATES), "title": draw(_TITLES)}
    if draw(st.booleans()):
        record["summary"] = draw(_SUMMARIES)
    if depth < 2 and draw(st.booleans()):
        record["children"] = draw(st.lists(_records(depth + 1), min_size=1, max_size=3))
    return record


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(_records(), max_size=4), st.sampled_from([None, 12, 63]))
def test_outline_round_trips_through_the_parser(records: list[dict[str, Any]], width: int | None) -> None:
    assert parse_outline(render_outline(records, width=width)) == records
