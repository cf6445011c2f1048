"""(i) Compact formats, issue 6: o200k savings of the outline and the line formats against pretty
JSON, the picker against compact JSON, the ``toon-format`` package on the same inputs, and the
time to render 100 entities.

- Outline: seed 002's three-record example and generated record trees of 10, 25 and 100
  records (the seed's ``RecordRef`` shape); target >= 50% fewer tokens than pretty JSON.
- Lines: seed 004's five operation inputs (``tests/data/render/lines``) and every list in the
  corpus (a file that is a list, or the first list-valued key of a file that is a dict), in the
  generic one-line-per-entity format; target >= 50%.
- ``render_auto`` (exact and summary modes) on every corpus file and generated input; target:
  never above compact JSON.
- ``toon_format.encode`` when that package is importable (never a dependency of ours).
- Time: ``render_lines`` on 100 GitHub issues and ``render_outline`` on 100 records, median;
  target <= 20 ms.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import statistics
import time
from typing import Any

import tokens
from common import CORPUS, REPO, Context, row

SEED_DATA = REPO / "tests" / "data" / "render"
_TEXT = (
    "cache invalidation event driven TTL fallback redis pub sub infrastructure question session token bucket "
    "sliding window rate limiting staging benchmark schema migration rollout feature flag retry backoff queue"
)
WORDS = _TEXT.split()
STATES = ("OPEN", "OPEN", "LATER", "RESOLVED", "DISCARDED")


def _pretty(value: Any) -> int:
    return tokens.count_tokens(json.dumps(value, indent=2, ensure_ascii=False))


def _compact(value: Any) -> int:
    return tokens.count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _saving(before: int, after: int) -> float:
    return 100 - after / before * 100 if before else 0.0


def generated_records(count: int, seed: int = 6) -> list[dict[str, Any]]:
    """``count`` RecordRefs (seed 002's JSON shape) in a tree up to four levels deep."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    for i in range(count):
        parent = records[rng.randrange(len(records))]["id"] if records and rng.random() < 0.7 else None
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))).capitalize()
        summary = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 22))).capitalize() + "."
        records.append(
            {
                "id": f"R{i + 1:03d}",
                "type": rng.choice(("question", "conclusion")),
                "title": title,
                "summary": summary,
                "state": rng.choice(STATES),
                "parent_id": parent,
                "children_count": 0,
                "open_children_count": 0,
            }
        )
    by_id = {r["id"]: r for r in records}
    for r in records:
        if r["parent_id"]:
            by_id[r["parent_id"]]["children_count"] += 1
            by_id[r["parent_id"]]["open_children_count"] += r["state"] == "OPEN"
    return records


def corpus_lists() -> dict[str, list[Any]]:
    """Every corpus file's list: the file itself, or its first list-valued key."""
    found: dict[str, list[Any]] = {}
    for path in sorted(CORPUS.glob("*.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict):
            value = next((v for v in value.values() if isinstance(v, list) and len(v) > 1), None)
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            found[path.name] = value
    return found


def _toon_package() -> Any:
    try:
        import toon_format
    except ImportError:
        return None
    return toon_format


def bench_formats(ctx: Context) -> dict[str, Any]:
    from pflow_structure.render.auto import render_auto
    from pflow_structure.render.lines import parse_timestamp, render_lines
    from pflow_structure.render.outline import render_outline

    seed = json.loads((SEED_DATA / "outline" / "basic_three_records.json").read_text(encoding="utf-8"))["input"]
    outline = [
        {
            "input": "seed 002 three records",
            "pretty": _pretty(seed),
            "ours": tokens.count_tokens(render_outline(seed["results"])),
        }
    ]
    for count in (10, 25) if ctx.smoke else (10, 25, 100):
        records = generated_records(count)
        outline.append(
            {
                "input": f"{count} generated records",
                "pretty": _pretty({"results": records}),
                "ours": tokens.count_tokens(render_outline(records)),
            }
        )
    lines = []
    for path in sorted((SEED_DATA / "lines").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        text = render_lines(case["input"], case["operation"], query=case["query"], now=parse_timestamp(case["now"]))
        lines.append(
            {"input": f"seed 004 {path.stem}", "pretty": _pretty(case["input"]), "ours": tokens.count_tokens(text)}
        )
    now = dt.datetime(2026, 1, 18, tzinfo=dt.timezone.utc)
    lists = corpus_lists()
    for name, items in lists.items():
        lines.append(
            {"input": name, "pretty": _pretty(items), "ours": tokens.count_tokens(render_lines(items, now=now))}
        )
    for entry in outline + lines:
        entry["saving"] = round(_saving(entry["pretty"], entry["ours"]), 1)
    auto, toon = _auto_and_toon(ctx, seed, render_auto)
    timing = _timing(ctx, lists, render_lines, render_outline)
    return {
        "outline": outline,
        "lines": lines,
        "auto": auto,
        "toon_format": toon,
        "timing_ms": timing,
        "rows": _rows(outline, lines, auto, toon, timing),
    }


def _auto_and_toon(ctx: Context, seed: Any, render_auto: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    inputs: dict[str, Any] = {"seed 002 results": seed}
    for count in (10, 25, 100):
        inputs[f"{count} generated records"] = generated_records(count)
    files = sorted(CORPUS.glob("*.json"))
    if ctx.smoke:
        files = [f for f in files if f.stat().st_size < 20_000]
    for path in files:
        inputs[path.name] = json.loads(path.read_text(encoding="utf-8"))
    package = _toon_package()
    auto = []
    for name, value in inputs.items():
        exact, summary = render_auto(value), render_auto(value, exact=False)
        entry = {
            "input": name,
            "compact": exact.json_tokens,
            "exact": exact.tokens,
            "exact_format": exact.format,
            "summary": summary.tokens,
            "summary_format": summary.format,
        }
        if package is not None:
            entry["toon_format"] = tokens.count_tokens(package.encode(value))
        auto.append(entry)
    toon = {"available": package is not None}
    if package is not None:
        toon["ours_exact_total"] = sum(e["exact"] for e in auto)
        toon["toon_format_total"] = sum(e["toon_format"] for e in auto)
        toon["toon_format_above_compact"] = [e["input"] for e in auto if e["toon_format"] > e["compact"]]
    return auto, toon


def _timing(ctx: Context, lists: dict[str, list[Any]], render_lines: Any, render_outline: Any) -> dict[str, float]:
    runs = 5 if ctx.smoke else 21
    issues = lists.get("github__list_issues.json", [])[:100]
    records = generated_records(100)
    now = dt.datetime(2026, 1, 18, tzinfo=dt.timezone.utc)
    out = {}
    for name, func in (
        ("lines, 100 GitHub issues", lambda: render_lines(issues, now=now)),
        ("outline, 100 records", lambda: render_outline(records)),
    ):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            func()
            times.append((time.perf_counter() - started) * 1000)
        out[name] = round(statistics.median(times), 2)
    return out


def _rows(
    outline: list[dict[str, Any]],
    lines: list[dict[str, Any]],
    auto: list[dict[str, Any]],
    toon: dict[str, Any],
    timing: dict[str, float],
) -> list[dict[str, Any]]:
    def span(entries: list[dict[str, Any]]) -> str:
        worst = min(entries, key=lambda e: e["saving"])
        return f"{len(entries)} inputs, lowest {worst['saving']}% ({worst['input']}); " + ", ".join(
            f"{e['input']} {e['saving']}%" for e in entries[:6]
        )

    above = [e["input"] for e in auto if max(e["exact"], e["summary"]) > e["compact"]]
    won = sum(1 for e in auto if e["exact"] < e["compact"])
    toon_text = (
        f"ours (exact) {toon['ours_exact_total']:,} vs toon-format {toon['toon_format_total']:,} tokens; toon-format "
        f"above compact JSON on {len(toon['toon_format_above_compact'])} inputs"
        if toon["available"]
        else "toon-format not importable (pip install toon-format); not compared"
    )
    return [
        row(
            "(i) outline tokens vs pretty JSON", span(outline), ">= 50% saved", min(e["saving"] for e in outline) >= 50
        ),
        row(
            "(i) line formats vs pretty JSON (seed 004 + corpus lists)",
            span(lines),
            ">= 50% saved",
            min(e["saving"] for e in lines) >= 50,
        ),
        row(
            "(i) render_auto vs compact JSON",
            f"above compact on {len(above)} of {len(auto)} inputs; exact mode beats compact on {won}",
            "never above",
            not above,
        ),
        row("(i) toon-format package, same inputs", toon_text, "context", None),
        row(
            "(i) render 100 entities, median",
            "; ".join(f"{k} {v} ms" for k, v in timing.items()),
            "<= 20 ms",
            max(timing.values()) <= 20,
        ),
    ]
