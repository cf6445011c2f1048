"""Seed 004's line formats: golden files per operation, the generic formatter, server-memory shapes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.render.lines import (
    LineContext,
    formatter_for,
    parse_timestamp,
    register_formatter,
    relative_time,
    render_lines,
    short_id,
)

GOLDEN = Path(__file__).resolve().parent / "data" / "render" / "lines"
NOW = dt.datetime(2026, 1, 18, 12, 0, tzinfo=dt.timezone.utc)

# What @modelcontextprotocol/server-memory's read_graph and search_nodes answer.
MEMORY_GRAPH: dict[str, Any] = {
    "entities": [
        {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["Works at Acme", "Likes tea"]},
        {"type": "entity", "name": "Acme", "entityType": "company", "observations": []},
    ],
    "relations": [{"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works_at"}],
}


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_line_format_reproduces_the_seed_example(name: str) -> None:
    case = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    expected = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8").removesuffix("\n")
    now = parse_timestamp(case["now"])
    assert render_lines(case["input"], case["operation"], query=case["query"], now=now) == expected


def test_memory_server_read_graph_shows_entities_then_relations() -> None:
    assert render_lines(MEMORY_GRAPH, "read_graph", now=NOW) == (
        "Found 2 entities:\n"
        "1. Alice [person] - Works at Acme; Likes tea\n"
        "2. Acme [company]\n"
        "Relations (1):\n"
        "1. Alice --works_at--> Acme"
    )


def test_memory_server_search_nodes_names_the_query() -> None:
    found = {"entities": MEMORY_GRAPH["entities"][:1], "relations": []}
    assert render_lines(found, "search_nodes", query="alice", now=NOW) == (
        'Found 1 entity for "alice":\n1. Alice [person] - Works at Acme; Likes tea\nRelations (0):'
    )


def test_memory_server_relations_render_as_arrows() -> None:
    assert render_lines(MEMORY_GRAPH["relations"], "search_facts", now=NOW) == (
        "Found 1 relationship:\n1. Alice --works_at--> Acme"
    )


def test_generic_format_picks_identifying_fields_and_shortens_ids_and_times() -> None:
    items = [
        {
            "id": "3f2b8c1e-7d4a-4e9b-a0c1-5e6f7a8b9c0d",
            "title": "Fix login",
            "state": "open",
            "type": "issue",
            "body": "Login fails\non Safari.",
            "updated_at": "2026-01-18T09:00:00Z",
            "labels": ["bug"],
        },
        {"number": 12, "state": "closed"},
    ]
    assert render_lines(items, now=NOW) == (
        "- Fix login [issue] (open) - Login fails on Safari. (id: ...7a8b9c0d, 3h ago)\n- 12 (closed)"
    )


def test_generic_format_shows_other_values_as_text() -> None:
    assert render_lines([1, None, "a\nb"], "entities", now=NOW) == "- 1\n- null\n- a b"


def test_a_failed_mutation_says_so_with_its_error() -> None:
    answer = {"success": False, "error": "episode not found", "uuid": "abc"}
    assert render_lines(answer, "delete_episode", now=NOW) == "✗ Episode not deleted (id: abc) - episode not found"


def test_unregistered_delete_operations_are_mutations() -> None:
    assert render_lines({"uuid": "x1"}, "delete_widget", now=NOW) == "✓ Widget done (id: x1)"


def test_a_registered_formatter_is_used_for_its_operation() -> None:
    def shout(value: Any, context: LineContext) -> str:
        return f"{context.operation}: {len(value)}"

    register_formatter("test_shout", shout)
    assert render_lines([1, 2], "test_shout", now=NOW) == "test_shout: 2"
    assert formatter_for("test_shout") is shout


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-01-18T11:59:30Z", "just now"),
        ("2026-01-18T11:55:00+00:00", "5m ago"),
        ("2026-01-18T14:00:00.123456789+0200", "just now"),
        ("2026-01-15T12:00:00", "3d ago"),
        ("2025-11-18T12:00:00Z", "2mo ago"),
        ("2024-01-18T12:00:00Z", "2y ago"),
        ("2026-01-18T14:00:00Z", "in 2h"),
        ("not a date", None),
    ],
)
def test_relative_time(stamp: str, expected: str | None) -> None:
    assert relative_time(stamp, NOW) == expected


def test_short_id_keeps_short_ids_and_cuts_long_ones_to_their_last_eight() -> None:
    assert (short_id(12345), short_id("9f8e7d6c-5b4a-4321-9abc-def0a1b2c3d4")) == ("12345", "...a1b2c3d4")


def test_status_labels_read_counts_as_plurals_and_keep_other_fields() -> None:
    status = {
        "status": "degraded",
        "name": "Search index",
        "query_count": 3,
        "box_count": 2,
        "entities": 5,
        "message": "",
        "lastUpdated": "2026-01-18T10:00:00Z",
        "uptime": "3d",
    }
    assert render_lines(status, "get_status", now=NOW) == (
        "Search index Status: DEGRADED\n"
        "Queries: 3 | Boxes: 2 | Entities: 5 | Message:  | Last update: 2h ago | Uptime: 3d"
    )


def test_status_without_a_status_field_is_key_value_pairs_only() -> None:
    assert render_lines({"message": "ok", "node_total": 9}, "get_status", now=NOW) == "ok\nNodes: 9"
