"""``pflow-structure nodes`` (discovery, then ``--describe`` for planning) and
``pflow-structure workflows list|show|save|delete`` (the saved-workflow store).

Both call :mod:`pflow_structure.service.discovery`, as the MCP tools ``list_nodes`` and
``describe_nodes`` do. Warnings (a pflow registry or a workflow file that cannot be read) go
to stderr; the listing still prints.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
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
from pflow_structure.render.output_text import safe_text

NARROW_HINT = (
    "Run `pflow-structure nodes --markdown --query WORDS` (found in names and descriptions) or add "
    "`--kind nodes` or `--kind workflows` to see the rest."
)
MAX_INPUT_BYTES = 8 * 1024 * 1024  # a stored workflow is at most 1 MB; its input may be indented more


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        click.echo(safe_text(f"Warning: {warning}"), err=True)


def _table(rows: Sequence[tuple[str, str]]) -> list[str]:
    """``name  description`` lines, names padded to one width."""
    width = max((len(name) for name, _ in rows), default=0)
    return [f"{name:<{width}}  {text}".rstrip() for name, text in rows]


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--describe",
    "node_ids",
    multiple=True,
    metavar="ID",
    help="Print the full interface of node ID (the planning context); repeat for more nodes.",
)
@click.option(
    "--workflow",
    "workflow_names",
    multiple=True,
    metavar="NAME",
    help="Print the full interface of saved workflow NAME (the planning context); repeat for more.",
)
@click.option(
    "--query",
    metavar="WORDS",
    help="List only the nodes and workflows whose name or description holds every word (any case).",
)
@click.option("--kind", type=click.Choice(["nodes", "workflows"]), help="List only nodes, or only saved workflows.")
@click.option(
    "--markdown", is_flag=True, help="Print the discovery context as MCP's list_nodes returns it (markdown, 10 KB)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON: the nodes as a list of {name, description, source} (saved workflows: `workflows list "
    "--json`, or --kind workflows); with --describe or --workflow, the planning result (context, or error and "
    "suggestions).",
)
@click.pass_context
@fails_cleanly
def nodes(
    ctx: click.Context,
    node_ids: Sequence[str],
    workflow_names: Sequence[str],
    query: str | None,
    kind: str | None,
    markdown: bool,
    as_json: bool,
) -> None:
    """List the nodes and the saved workflows, one line each.

    This is phase 1 of discovery: pick the few you need, then print their full
    interfaces (inputs, outputs with their nested structure, parameters, actions):

    \b
      pflow-structure nodes
      pflow-structure nodes --query "github issue" --kind workflows
      pflow-structure nodes --describe read-json --describe shell
      pflow-structure nodes --workflow fix-github-issue

    Nodes come from pflow-structure and, when it exists, pflow's registry
    [env PFLOW_STRUCTURE_PFLOW_REGISTRY; default ~/.pflow/registry.json], marked [pflow]:
    those are for pflow workflows, `run` executes the others. Saved workflows come from
    PFLOW_STRUCTURE_WORKFLOWS_DIR [default ~/.pflow/workflows]. An unknown name exits 1
    with close matches.
    """
    if markdown and as_json:
        raise click.UsageError("--markdown and --json cannot be combined; choose one.", ctx)
    if node_ids or workflow_names:
        if query is not None or kind is not None:
            raise click.UsageError("--query and --kind narrow the list; leave them out with --describe or --workflow.")
        _print_planning(ctx, node_ids, workflow_names, as_json)
        return
    from pflow_structure.service.discovery import discover

    found = discover(settings_for(ctx), query=query, kind=kind, narrow_hint=NARROW_HINT)
    _warn(found["warnings"])
    if as_json:
        echo_json(found["nodes"] if kind != "workflows" else found["workflows"])
    elif markdown:
        echo_text(found["context"])
    elif found["nodes"] or found["workflows"]:
        echo_text("\n".join(_discovery_lines(found)))
    else:
        click.echo(f"Nothing matches {query!r}; try fewer or other words." if query else f"No {kind} to list.")


def _discovery_lines(found: dict[str, Any]) -> list[str]:
    """Nodes (with their source unless built in), then saved workflows; each a padded table."""
    rows = [
        (node["name"], node["description"] + ("" if node["source"] == "builtin" else f"  [{node['source']}]"))
        for node in found["nodes"]
    ]
    lines = _table(rows)
    if found["workflows"]:
        flows = _table([(flow["name"], flow["description"]) for flow in found["workflows"]])
        lines += ["", "Saved workflows:", *flows] if lines else ["Saved workflows:", *flows]
    return lines


def _print_planning(ctx: click.Context, node_ids: Sequence[str], workflow_names: Sequence[str], as_json: bool) -> None:
    """The planning context; an unknown name exits 1 with the error and its close matches on stderr."""
    from pflow_structure.service.discovery import describe

    planned = describe(settings_for(ctx), node_ids, workflow_names)
    _warn(planned["warnings"])
    if as_json:
        echo_json(planned)
    if "error" in planned:
        click.echo(f"Error: {planned['error'].rstrip()}", err=True)
        sys.exit(1)
    if not as_json:
        echo_text(planned["context"])


@main.group(context_settings=CONTEXT_SETTINGS)
def workflows() -> None:
    """List, show, save and delete saved workflows (one NAME.json each).

    The directory is PFLOW_STRUCTURE_WORKFLOWS_DIR [default ~/.pflow/workflows], where pflow
    keeps its saved workflows. Names are letters, digits, '-' and '_'.
    """


@workflows.command("list", context_settings=CONTEXT_SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of workflows (no IR).")
@click.pass_context
@fails_cleanly
def workflows_list(ctx: click.Context, as_json: bool) -> None:
    """List saved workflows: name and description."""
    from pflow_structure.discovery.interface import first_line
    from pflow_structure.service.discovery import list_workflows

    listed = list_workflows(settings_for(ctx))
    _warn(listed["warnings"])
    if as_json:
        echo_json(listed["workflows"])
    elif not listed["workflows"]:
        click.echo(f"No saved workflows in {listed['directory']}")
    else:
        rows = [(flow["name"], first_line(flow["description"])) for flow in listed["workflows"]]
        echo_text("\n".join(_table(rows)))


@workflows.command("show", context_settings=CONTEXT_SETTINGS)
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the stored record (IR included) as JSON.")
@click.pass_context
@fails_cleanly
def workflows_show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show saved workflow NAME: description, inputs, outputs, nodes, version."""
    from pflow_structure.service.discovery import show_workflow

    shown = show_workflow(settings_for(ctx), name)
    _warn(shown["warnings"])
    if as_json:
        echo_json(shown["workflow"])
    else:
        echo_text(shown["context"])


@workflows.command("save", context_settings=CONTEXT_SETTINGS)
@click.argument("name")
@click.argument("file")
@click.option("--description", required=True, help="One line saying what the workflow does (shown by discovery).")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag to store with the workflow; repeat for more.")
@click.pass_context
@fails_cleanly
def workflows_save(ctx: click.Context, name: str, file: str, description: str, tags: Sequence[str]) -> None:
    """Save the workflow IR in FILE (JSON; - for stdin) as NAME, replacing one of that name.

    FILE holds a workflow IR ({"nodes": [{"id", "type", ...}], "edges": [...], ...}) or a
    saved workflow record, whose "ir" is taken.
    """
    from pflow_structure.service.discovery import save_workflow_text

    where = "stdin" if file == "-" else file
    saved = save_workflow_text(settings_for(ctx), name, _read_input(file), description, where=where, tags=tags)
    verb = "Replaced" if saved["replaced"] else "Saved"
    click.echo(f"{verb} workflow {name!r} in {saved['path']}")


def _read_input(file: str) -> bytes:
    """The bytes of FILE, or of stdin for ``-`` (at most 8 MB); InvalidWorkflowError when they cannot be read."""
    from pflow_structure.errors import InvalidWorkflowError

    where = "stdin" if file == "-" else file
    try:
        data = read_file_or_stdin(file, MAX_INPUT_BYTES)
    except ClosedInput:
        raise InvalidWorkflowError("stdin is closed; pass the workflow IR as FILE, or pipe it into stdin.") from None
    except (OSError, ValueError) as exc:
        if file == "-":
            raise InvalidWorkflowError(f"stdin cannot be read ({exc}); pass the workflow IR as FILE.") from None
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InvalidWorkflowError(
            f"{file}: cannot be read ({reason}); pass a JSON file with the workflow IR, or - for stdin."
        ) from None
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidWorkflowError(f"{where}: over {MAX_INPUT_BYTES:,} bytes; a saved workflow holds at most 1 MB.")
    return data


@workflows.command("delete", context_settings=CONTEXT_SETTINGS)
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@fails_cleanly
def workflows_delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete saved workflow NAME."""
    from pflow_structure.service.discovery import delete_saved_workflow, saved_workflow_path

    settings = settings_for(ctx)
    path = saved_workflow_path(settings, name)  # refuses unsafe names and missing workflows before asking
    if not yes:
        click.confirm(f"Delete workflow {name!r} ({path})?", abort=True)
    delete_saved_workflow(settings, name)
    click.echo(f"Deleted workflow {name!r}.")
