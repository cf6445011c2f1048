"""``pflow-structure format FILE``: a JSON value in the fewest tokens that keep its meaning."""

from __future__ import annotations

import json
from typing import Any

import click

from pflow_structure.cli.common import (
    CONTEXT_SETTINGS,
    ClosedInput,
    echo_json,
    echo_text,
    fails_cleanly,
    main,
    read_file_or_stdin,
    settings_for,
)

FORMAT_CHOICES = ("auto", "outline", "lines", "table", "toon", "json")
MAX_INPUT_BYTES = 16 * 1024 * 1024  # about 4 million tokens: far past what anyone shows an agent


@main.command("format", context_settings=CONTEXT_SETTINGS)
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=str))
@click.option(
    "--as",
    "format_name",
    type=click.Choice(FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="auto: the smallest format that reads back as the same value (compact JSON if nothing beats it). "
    "outline and lines are summaries; toon and table are lossless or refuse.",
)
@click.option(
    "--operation",
    metavar="NAME",
    help="The tool the value came from, for the line formats: search_nodes, search_facts, get_episodes, "
    "get_status, add_memory, delete_*...",
)
@click.option(
    "--lossy", is_flag=True, help="With --as auto: let it also pick summaries that leave fields out (line formats)."
)
@click.option("--stats", is_flag=True, help="Print token metrics instead: bytes, tokens, savings, render time.")
@click.option(
    "--runs", type=click.IntRange(1, 1000), default=10, show_default=True, help="With --stats: renders timed."
)
@click.option("--json", "as_json", is_flag=True, help="With --stats: print the metrics as JSON.")
@click.pass_context
@fails_cleanly
def format_command(
    ctx: click.Context,
    file: str,
    format_name: str,
    operation: str | None,
    lossy: bool,
    stats: bool,
    runs: int,
    as_json: bool,
) -> None:
    """Print the JSON value in FILE (- for standard input) in a compact text format.

    Tokens are o200k (exact when litellm's bundled vocabulary is installed, else chars/4).
    A renderer that fails prints compact JSON instead and logs one line to the failure log
    (PFLOW_STRUCTURE_FAILURE_LOG).

    \b
    Examples:
      pflow-structure format examples/data/github_issues.json --stats
      pflow-structure format graph.json --as lines --operation search_nodes
    """
    _check_combination(ctx, format_name, operation, lossy, stats)
    value = _read_value(file)
    settings = settings_for(ctx)
    name = "standard input" if file == "-" else file
    render = _renderer(format_name, operation, lossy, settings.failure_log, name)
    if not stats:
        echo_text(render(value))
        return
    from pflow_structure.render.metrics import format_stats, render_stats_text, stats_dict

    shown_name = format_name
    if format_name == "auto":  # say which format auto picked
        from pflow_structure.render.auto import render_auto

        picked = render_auto(value, operation=operation, exact=not lossy, failure_log=settings.failure_log).format
        shown_name = f"auto ({picked})"
    measured = format_stats(value, render, runs=runs, format_name=shown_name, operation=operation or "")
    if as_json:
        echo_json(stats_dict(measured))
    else:
        echo_text(render_stats_text(measured))


def _check_combination(ctx: click.Context, format_name: str, operation: str | None, lossy: bool, stats: bool) -> None:
    """Options that would be silently ignored are usage errors instead."""
    given = {
        name
        for name in ("runs", "as_json")
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    }
    if given and not stats:
        flags = " and ".join("--json" if name == "as_json" else "--runs" for name in sorted(given))
        raise click.UsageError(f"{flags} only appl{'y' if len(given) > 1 else 'ies'} with --stats.")
    if lossy and format_name != "auto":
        raise click.UsageError(f"--lossy only applies to --as auto (--as {format_name} is one format by name).")
    if operation and format_name in ("outline", "table", "toon", "json"):
        raise click.UsageError(f"--operation picks a line format; it has no effect with --as {format_name}.")


def _renderer(format_name: str, operation: str | None, lossy: bool, failure_log: Any, name: str) -> Any:
    """A function value -> text for the chosen format; a value that does not fit is a clear error."""
    from pflow_structure.errors import NotRepresentable, ParameterError
    from pflow_structure.render.auto import render_named

    def render(value: Any) -> str:
        try:
            return render_named(value, format_name, operation=operation, exact=not lossy, failure_log=failure_log)
        except NotRepresentable as exc:
            raise ParameterError(
                f"{name} cannot be shown as {format_name}: {exc}. Use --as auto, which picks a format that fits."
            ) from None

    return render


def _read_value(file: str) -> Any:
    """The JSON value in ``file``; a file that is not JSON is an error naming it, its line and column."""
    from pflow_structure.errors import ParameterError

    name = "standard input" if file == "-" else file
    try:
        raw = read_file_or_stdin(file, MAX_INPUT_BYTES)
    except ClosedInput:
        raise ParameterError("Standard input is closed; pipe JSON into format -, or give a FILE.") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(f"Cannot read {name}: {getattr(exc, 'strerror', None) or exc}.") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise ParameterError(
            f"{name} is over {MAX_INPUT_BYTES // (1024 * 1024)} MB; format is for outputs small enough to show."
        )
    try:
        return json.loads(raw.decode("utf-8-sig"), parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except _NotStrictJson as exc:
        raise ParameterError(f"{name} is not strict JSON: {exc}. Fix it: JSON readers differ on it.") from None
    except UnicodeDecodeError as exc:
        raise ParameterError(f"{name} is not UTF-8 text (byte {exc.start}); format reads JSON.") from None
    except RecursionError:
        raise ParameterError(f"{name} is nested too deeply to read as JSON.") from None
    except json.JSONDecodeError as exc:
        raise ParameterError(
            f"{name} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. Fix it or pass a JSON file."
        ) from None
    except ValueError as exc:  # Python refuses integers of over 4,300 digits
        raise ParameterError(
            f"{name} cannot be read: {str(exc).split(';')[0]}. Write such a number as a string."
        ) from None


class _NotStrictJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotStrictJson(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _NotStrictJson(f"the key {json.dumps(key, ensure_ascii=False)[:80]} appears twice in one object")
        value[key] = item
    return value
