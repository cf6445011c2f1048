"""``pflow-structure cache list|stats|prune|clear``: inspect and clean the execution cache."""

from __future__ import annotations

import click

from pflow_structure.cli.common import CONTEXT_SETTINGS, echo_json, fails_cleanly, main, settings_for


@main.group(context_settings=CONTEXT_SETTINGS)
def cache() -> None:
    """Inspect and clean the execution cache."""


@cache.command("list", context_settings=CONTEXT_SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@click.pass_context
@fails_cleanly
def cache_list(ctx: click.Context, as_json: bool) -> None:
    """List cached executions, oldest first (id, age, size)."""
    import time

    store = settings_for(ctx).cache()
    now = time.time()
    infos = store.scan()
    rows = [
        {
            "execution_id": info.execution_id,
            "age_hours": round((now - info.created) / 3600, 2),
            "bytes": info.size,
            "expired": store.is_expired(info, now),
            "path": str(info.path) if info.path is not None else None,
        }
        for info in infos
    ]
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"No cached executions in {store.location}")
    for row in rows:
        flag = "  expired" if row["expired"] else ""
        click.echo(f"{row['execution_id']}  {row['age_hours']:>7.2f} h  {row['bytes']:>10} B{flag}")


@cache.command("stats", context_settings=CONTEXT_SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
@fails_cleanly
def cache_stats(ctx: click.Context, as_json: bool) -> None:
    """Show where the cache is (directory, or Redis with PFLOW_STRUCTURE_CACHE_URL), entry count, size and limits."""
    stats = settings_for(ctx).cache().stats()
    if as_json:
        echo_json(stats)
        return
    for key, value in stats.items():
        click.echo(f"{key}: {value}")


@cache.command("prune", context_settings=CONTEXT_SETTINGS)
@click.pass_context
@fails_cleanly
def cache_prune(ctx: click.Context) -> None:
    """Delete expired entries, then the oldest while the cache is over its size cap."""
    outcome = settings_for(ctx).cache().prune()
    click.echo(
        f"Removed {outcome['expired']} expired and {outcome['evicted']} over-cap entries; "
        f"{outcome['remaining']} remain."
    )


@cache.command("clear", context_settings=CONTEXT_SETTINGS)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@fails_cleanly
def cache_clear(ctx: click.Context, yes: bool) -> None:
    """Delete every cached execution."""
    store = settings_for(ctx).cache()
    if not yes:
        click.confirm(f"Delete every cached execution in {store.location}?", abort=True)
    click.echo(f"Deleted {store.clear()} entries.")
