"""``pflow-structure edit-fields``: change a cached value into a new execution, without printing it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from pflow_structure.cli.common import CONTEXT_SETTINGS, echo_json, echo_text, fails_cleanly, main, settings_for


@main.command("edit-fields", context_settings=CONTEXT_SETTINGS)
@click.argument("execution_id")
@click.argument("changes", nargs=-1, metavar="[PATH=JSON]...")
@click.option("--delete", "delete", multiple=True, metavar="PATH", help="A path to remove (repeat for more).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print what MCP returns: the new id and the structure of what changed."
)
@click.pass_context
@fails_cleanly
def edit_fields_command(
    ctx: click.Context, execution_id: str, changes: Sequence[str], delete: Sequence[str], as_json: bool
) -> None:
    """Set PATH to a JSON value (and remove --delete PATHs) in a copy of a cached execution.

    Prints the new execution id and its structure, as run does (--json: only what changed); the
    original stays as it was. A key that
    does not exist is added, [*] sets every item, and a path through a missing parent is an
    error naming it. A value may be a reference to any cached value, "${exec-ID:PATH}":

    \b
      pflow-structure edit-fields exec-1763463202-0cd0c8fe 'result.title="New title"' --delete result.draft
      pflow-structure edit-fields exec-1763463202-0cd0c8fe 'result.body="${exec-1763463300-9a8b7c6d:result}"'
    """
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.service.values import edit_fields

    set_values = parse_changes(changes)
    if not set_values and not delete:
        raise click.UsageError("Nothing to edit: give PATH=JSON and/or --delete PATH.")
    result = edit_fields(execution_id, set_values, list(delete), settings=settings_for(ctx), changes_only=as_json)
    if as_json:
        echo_json(result)
    else:
        echo_text(render_structure_text(result, layout="tree"))


def parse_changes(items: Sequence[str]) -> dict[str, Any]:
    """``['result.title="New"', "result.count=3"]`` → ``{path: value}``; a usage error otherwise.

    The path ends at the first ``=`` outside quotes and brackets (``data["a=b"]=1`` works).
    """
    changes: dict[str, Any] = {}
    for item in items:
        cut = _assignment(item)
        if cut < 0:  # an unclosed bracket or quote: cut at the first "=", and the path's own error says what is wrong
            cut = item.find("=")
        if cut < 0:
            raise click.UsageError(f"{item!r} has no '='; write PATH=JSON, e.g. 'result.title=\"New\"'")
        path, raw = item[:cut], item[cut + 1 :]
        if not path:
            raise click.UsageError(f"{item!r} has no path before '='")
        if path in changes:
            raise click.UsageError(f"The path {path!r} is given twice")
        changes[path] = _json_value(path, raw)
    return changes


def _assignment(item: str) -> int:
    quote, depth = "", 0
    index = 0
    while index < len(item):
        char = item[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)  # a stray "]" is the path's error, not a reason to miss the "="
        elif char == "=" and depth == 0:
            return index
        index += 1
    return -1


def _json_value(path: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        pass
    if raw.startswith("${exec-") and raw.endswith("}"):
        return raw  # a reference, written without the JSON quotes
    raise click.UsageError(
        f"The value for {path} is not JSON: write text in double quotes, e.g. '{path}=\"{raw[:30]}\"', "
        "numbers, true/false, null, [...] or {...} as they are"
    )
