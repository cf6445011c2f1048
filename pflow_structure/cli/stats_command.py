"""``pflow-structure stats``: per tool or node, the tokens its results had against what agents were answered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from pflow_structure.cli.common import CONTEXT_SETTINGS, echo_json, echo_text, fails_cleanly, main, settings_for

COLUMNS = (
    ("tool", "tool"),
    ("results", "results"),
    ("cached", "cached"),
    ("raw_tokens", "raw tokens"),
    ("answered_tokens", "answered"),
    ("structure_tokens", "structure"),
    ("inline_tokens", "inline"),
    ("reads", "reads"),
    ("read_tokens", "read tokens"),
    ("saved_tokens", "saved"),
)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option("--days", type=click.IntRange(min=1), help="Only the last N days (UTC, today included).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@fails_cleanly
def stats(ctx: click.Context, days: int | None, as_json: bool) -> None:
    """Tokens per tool or node: results answered, their raw tokens, and what agents were answered.

    Counted wherever an agent is answered (the proxy, serve): results as structure or inline,
    and read_fields/edit_fields answers, for the tool whose cached result they read. Only names
    and numbers are kept, beside the cache (PFLOW_STRUCTURE_CACHE_DIR, or Redis with
    PFLOW_STRUCTURE_CACHE_URL). answered = structure + inline + read tokens; saved = raw - answered.
    """
    from pflow_structure.service.usage import usage_report

    found = usage_report(settings_for(ctx), days)
    if as_json:
        echo_json(found)
        return
    echo_text(stats_text(found))


def stats_text(found: Mapping[str, Any]) -> str:
    """The report as a table, a row per tool or node and the total."""
    period = f"the last {found['days']} days (UTC)" if found["days"] else "every day kept"
    head = f"Tokens per tool or node over {period}, from {found['location']}:"
    if not found["tools"]:
        return f"{head}\nNothing recorded yet: answers through `pflow-structure proxy` or `serve` are counted."
    rows = [[_cell(row[key]) for key, _ in COLUMNS] for row in found["tools"]]
    rows.append([_cell(found["total"].get(key, "total")) for key, _ in COLUMNS])
    table = [[title for _, title in COLUMNS], *rows]
    widths = [max(len(row[index]) for row in table) for index in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) if index == 0 else cell.rjust(width) for index, (cell, width) in
                  enumerate(zip(row, widths, strict=True))).rstrip()
        for row in table
    ]  # fmt: skip
    notes = [f"note: {day}'s usage file is full; later answers that day are not counted" for day in found["full_days"]]
    return "\n".join([head, *lines, *notes])


def _cell(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)
