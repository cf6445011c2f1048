"""The picker (never above compact JSON, failures logged) and the token metrics."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflow_structure.render import auto
from pflow_structure.render.auto import compact_json, render_auto, render_auto_text
from pflow_structure.render.failure_log import read_failures
from pflow_structure.render.metrics import format_stats, measure_format, run_stats, savings_percent, stats_dict
from pflow_structure.render.tokens import count_tokens
from tests.conftest import corpus_files, examples

NOW = dt.datetime(2026, 1, 18, 12, 0, tzinfo=dt.timezone.utc)
OUTLINE_RECORDS = [
    {"id": "R1", "state": "OPEN", "title": "Cache invalidation", "summary": "Event-driven with a TTL fallback."},
    {"id": "R2", "state": "RESOLVED", "title": "Use Redis", "summary": "Approved.", "parent_id": "R1"},
]


def _ticks(*values: float) -> Iterator[float]:
    yield from values


def test_a_uniform_list_of_dicts_becomes_a_toon_table() -> None:
    rows = [{"id": i, "name": f"user{i}", "active": i % 2 == 0} for i in range(5)]
    result = render_auto(rows)
    assert (result.format, result.text.split("\n")[0]) == ("toon", "[5]{id,name,active}:")
    assert result.tokens < result.json_tokens == count_tokens(compact_json(rows))


def test_records_shaped_like_an_outline_become_an_outline() -> None:
    result = render_auto(OUTLINE_RECORDS)
    assert result.format == "outline"
    assert (
        result.text
        == "[R1] (O) Cache invalidation\n  Event-driven with a TTL fallback.\n\n  [R2] (R) Use Redis\n    Approved."
    )


def test_records_with_fields_the_outline_drops_are_not_outlined_when_exact() -> None:
    records = [dict(OUTLINE_RECORDS[0], type="question")]
    assert render_auto(records).format != "outline"
    assert render_auto(records, exact=False, formats=["outline"]).format == "outline"


def test_line_formats_compete_only_when_exact_is_off() -> None:
    graph = {"entities": [{"name": "Alice", "entityType": "person", "observations": ["x"]}], "relations": []}
    assert render_auto(graph, operation="read_graph").format in ("json", "toon")  # TOON wins where tokens are estimated
    assert render_auto(graph, operation="read_graph", exact=False).text.startswith("Found 1 entity:")


def test_a_scalar_is_its_compact_json() -> None:
    assert render_auto("hi") == auto.Rendered('"hi"', "json", count_tokens('"hi"'), count_tokens('"hi"'))
    assert render_auto_text(None) == "null"


def test_a_failing_renderer_falls_back_to_json_and_logs_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: Any) -> str:
        raise KeyError("boom")

    monkeypatch.setattr(auto, "_CANDIDATES", (("toon", broken), ("table", broken)))
    log = tmp_path / "failures.jsonl"
    result = render_auto([{"a": 1}], operation="list_things", failure_log=log)
    assert (result.text, result.format, result.fallback) == ('[{"a":1}]', "json", True)
    records = read_failures(log)
    assert len(records) == 1
    assert {k: records[0][k] for k in ("operation", "input_bytes", "error", "format")} == {
        "operation": "list_things",
        "input_bytes": 9,
        "error": "KeyError: 'boom'",
        "format": "toon",
    }
    assert set(records[0]) == {"timestamp", "operation", "input_bytes", "error", "format"}


def test_a_value_json_cannot_hold_is_shown_and_logged(tmp_path: Path) -> None:
    log = tmp_path / "failures.jsonl"
    result = render_auto({"tags": {1}}, failure_log=log)
    assert (result.text, result.fallback) == ('{"tags":"{1}"}', True)
    assert [r["error"] for r in read_failures(log)] == ["TypeError: cannot encode set as JSON"]


def test_a_slow_render_logs_a_slow_line(tmp_path: Path) -> None:
    log = tmp_path / "failures.jsonl"
    ticks = _ticks(0.0, 0.075)
    render_auto([1, 2], operation="op", failure_log=log, clock=lambda: next(ticks))
    (record,) = read_failures(log)
    assert (record["kind"], record["elapsed_ms"], record["error"]) == (
        "slow",
        75.0,
        "slow render: 75.0 ms (over 50 ms)",
    )


def test_without_a_log_path_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ticks = _ticks(0.0, 1.0)
    render_auto([1], clock=lambda: next(ticks))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_render_auto_is_never_above_compact_json_on_the_corpus(path: Path) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    result = render_auto(value, exact=False)
    assert result.tokens <= count_tokens(compact_json(value))
    assert not result.fallback


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["id", "title", "name", "", "a b"]) | st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_JSON, st.booleans(), st.sampled_from([None, "search_nodes", "get_status", "add_memory", "get_episodes"]))
def test_no_json_value_makes_render_auto_fail(tmp_path: Path, value: Any, exact: bool, operation: str | None) -> None:
    log = tmp_path / "hypothesis-failures.jsonl"
    result = render_auto(value, exact=exact, operation=operation, now=NOW, failure_log=log, slow_ms=1e9)
    assert result.tokens <= count_tokens(compact_json(value))
    assert read_failures(log) == []


def test_deep_nesting_falls_back_without_raising() -> None:
    value: Any = []
    for _ in range(5000):
        value = [value]
    rendered = render_auto(value)
    # Python 3.13's encoder writes this depth; older ones raise RecursionError, which falls back.
    assert rendered.fallback is True or rendered.text == "[" * 5001 + "]" * 5001


# -- metrics ---------------------------------------------------------------------------------


def test_savings_percent_is_the_seeds_formula() -> None:
    assert (savings_percent(200, 50), savings_percent(0, 5)) == (75.0, 0.0)


def test_run_stats_gives_mean_median_and_sample_stdev() -> None:
    assert run_stats([1.0, 2.0, 6.0]) == (3, 3.0, 2.0, pytest.approx(2.6457513))
    assert run_stats([]) == (0, 0.0, 0.0, 0.0)


def test_measure_format_compares_against_pretty_and_compact_json() -> None:
    value = [{"id": i, "name": "x"} for i in range(3)]
    metrics = measure_format(value, render_auto_text(value), format_name="toon", operation="demo")
    assert metrics.output.bytes == len(render_auto_text(value).encode())
    assert metrics.compact.bytes == len(compact_json(value))
    assert metrics.pretty.estimated_tokens == (len(json.dumps(value, indent=2)) + 3) // 4
    assert metrics.savings_vs_pretty > metrics.savings_vs_compact > 0


def test_a_rendering_that_saves_little_is_flagged() -> None:
    assert measure_format({"a": 1}, '{"a":1}').flagged is True


def test_format_stats_times_each_run_and_is_json_safe() -> None:
    ticks = _ticks(0.0, 0.001, 0.0, 0.003)
    stats = format_stats([1], compact_json, runs=2, clock=lambda: next(ticks))
    assert stats.render_ms == (2, 2.0, 2.0, pytest.approx(1.4142135))
    assert json.loads(json.dumps(stats_dict(stats)))["render_ms"]["median"] == 2.0


def test_a_list_of_strings_with_a_comma_in_one_quotes_every_string_and_reads_back() -> None:
    from pflow_structure.render.toon_reader import parse_toon

    value = {"people": [{"id": i, "name": f"n{i}", "role": "eng"} for i in range(10)], "tags": ["a, b", "c", "d e", 7]}
    rendered = render_auto(value)
    assert rendered.format == "toon"
    assert rendered.text.splitlines()[-1] == 'tags[4]: "a, b","c","d e",7'
    assert parse_toon(rendered.text) == value
    plain = render_auto({**value, "tags": ["c", "d e"]}).text
    assert plain.splitlines()[-1] == "tags[2]: c,d e"  # nothing to tell apart: bare, as TOON writes them
