"""Token metrics for a rendering (seed 004, R3): bytes, estimated and exact tokens, savings, run statistics.

Every size is measured three ways: UTF-8 bytes (precise), estimated tokens (characters / 4,
as the seed says) and exact o200k tokens when the vocabulary is present (``None`` when it is
not; ``method`` says which). Savings are ``100 - after / before * 100`` against pretty JSON
(``indent=2``) and against compact JSON, in exact tokens when available, else estimated.
A rendering that saves under 25% against compact JSON (the seed's ``JSON.stringify``
baseline) is flagged for review.

Shaped for ``pflow-structure format FILE --as X --stats``: :func:`format_stats` renders a value
several times and returns everything as a :class:`FormatStats`; :func:`stats_dict` makes it
JSON-safe and :func:`render_stats_text` prints it as lines.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from pflow_structure.render.auto import compact_json
from pflow_structure.render.output_text import format_json
from pflow_structure.render.tokens import ENCODING, count_tokens, method

REVIEW_BELOW_PERCENT = 25.0


class TextSize(NamedTuple):
    """One text measured: bytes, characters, chars/4 tokens, exact o200k tokens (None without the vocabulary)."""

    bytes: int
    chars: int
    estimated_tokens: int
    tokens: int | None

    @property
    def best_tokens(self) -> int:
        return self.tokens if self.tokens is not None else self.estimated_tokens


class RunStats(NamedTuple):
    """Mean, median and sample standard deviation of ``runs`` numbers."""

    runs: int
    mean: float
    median: float
    stdev: float


class FormatMetrics(NamedTuple):
    """A rendering against the pretty and compact JSON of the same value."""

    operation: str
    format: str
    output: TextSize
    pretty: TextSize
    compact: TextSize
    savings_vs_pretty: float  # percent, tokens (exact when available)
    savings_vs_compact: float
    bytes_savings_vs_compact: float  # the seed's primary measure
    flagged: bool  # under REVIEW_BELOW_PERCENT against compact JSON
    method: str


class FormatStats(NamedTuple):
    """:class:`FormatMetrics` plus the render time over repeated runs, in milliseconds."""

    metrics: FormatMetrics
    render_ms: RunStats


def measure_text(text: str) -> TextSize:
    """Bytes, characters, chars/4 tokens and (when the vocabulary is present) exact o200k tokens."""
    exact = count_tokens(text) if method() == ENCODING else None
    return TextSize(len(text.encode("utf-8", "surrogatepass")), len(text), (len(text) + 3) // 4, exact)


def savings_percent(before: int, after: int) -> float:
    """``100 - after / before * 100``, rounded to 0.1; 0 when ``before`` is 0."""
    return round(100 - after / before * 100, 1) if before else 0.0


def _pretty_json(value: Any) -> str:
    """Pretty JSON encoded as the compact baseline is (bytes as base64); repr for what JSON cannot hold."""
    try:
        return format_json(value)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(value, ensure_ascii=False, indent=2, default=repr)


def measure_format(value: Any, text: str, *, format_name: str = "", operation: str = "") -> FormatMetrics:
    """``text`` (a rendering of ``value``) against the pretty and compact JSON of ``value``."""
    output = measure_text(text)
    pretty = measure_text(_pretty_json(value))
    compact = measure_text(compact_json(value))
    against_compact = savings_percent(compact.best_tokens, output.best_tokens)
    return FormatMetrics(
        operation=operation,
        format=format_name,
        output=output,
        pretty=pretty,
        compact=compact,
        savings_vs_pretty=savings_percent(pretty.best_tokens, output.best_tokens),
        savings_vs_compact=against_compact,
        bytes_savings_vs_compact=savings_percent(compact.bytes, output.bytes),
        flagged=against_compact < REVIEW_BELOW_PERCENT,
        method=method(),
    )


def run_stats(samples: Sequence[float]) -> RunStats:
    """Mean, median and sample standard deviation (0 for fewer than two samples)."""
    count = len(samples)
    if count == 0:
        return RunStats(0, 0.0, 0.0, 0.0)
    mean = sum(samples) / count
    ordered = sorted(samples)
    middle = count // 2
    median = ordered[middle] if count % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    stdev = math.sqrt(sum((x - mean) ** 2 for x in samples) / (count - 1)) if count > 1 else 0.0
    return RunStats(count, mean, median, stdev)


def format_stats(
    value: Any,
    render: Callable[[Any], str],
    *,
    runs: int = 10,
    format_name: str = "",
    operation: str = "",
    clock: Callable[[], float] = time.perf_counter,
) -> FormatStats:
    """Render ``value`` once untimed (a first call builds the token vocabulary and warms caches),
    then ``runs`` times timed, and measure the text against its JSON."""
    text = render(value)
    times = []
    for _ in range(max(runs, 1)):
        started = clock()
        text = render(value)
        times.append((clock() - started) * 1000)
    return FormatStats(measure_format(value, text, format_name=format_name, operation=operation), run_stats(times))


def savings_summary(metrics: Sequence[FormatMetrics]) -> dict[str, Any]:
    """Over several inputs: mean, median and stdev of the savings, and which were flagged."""
    return {
        "inputs": len(metrics),
        "vs_pretty": run_stats([m.savings_vs_pretty for m in metrics])._asdict(),
        "vs_compact": run_stats([m.savings_vs_compact for m in metrics])._asdict(),
        "flagged": [m.operation or m.format for m in metrics if m.flagged],
    }


def stats_dict(stats: FormatStats) -> dict[str, Any]:
    """A JSON-safe dict of ``stats`` (for ``--stats --json`` or a benchmark's results)."""
    metrics = stats.metrics
    out: dict[str, Any] = metrics._asdict()
    for key in ("output", "pretty", "compact"):
        out[key] = getattr(metrics, key)._asdict()
    out["render_ms"] = {k: round(v, 3) if isinstance(v, float) else v for k, v in stats.render_ms._asdict().items()}
    return out


def render_stats_text(stats: FormatStats) -> str:
    """The metrics as a few lines, for a terminal."""
    m, t = stats.metrics, stats.render_ms
    unit = "tokens" if m.method == ENCODING else f"tokens, {m.method}"

    def size(s: TextSize) -> str:
        return f"{s.best_tokens:,} {unit}, {s.bytes:,} bytes"

    lines = [
        f"format: {m.format or '?'}" + (f" (operation {m.operation})" if m.operation else ""),
        f"output: {size(m.output)}",
        f"pretty JSON: {size(m.pretty)}; saved {m.savings_vs_pretty:g}%",
        f"compact JSON: {size(m.compact)}; saved {m.savings_vs_compact:g}% ({m.bytes_savings_vs_compact:g}% of bytes)",
        f"render time: median {t.median:.2f} ms, mean {t.mean:.2f} ms, stdev {t.stdev:.2f} ms over {t.runs} runs",
    ]
    if m.flagged:
        lines.append(f"review: under {REVIEW_BELOW_PERCENT:g}% saved against compact JSON")
    return "\n".join(lines)
