"""Two-phase discovery for the adapters: what ``pflow-structure nodes`` / ``workflows`` and MCP's
``list_nodes`` / ``describe_nodes`` call, so the CLI and the server answer alike.

Nodes come from our registry (built-ins and the ``pflow_structure.nodes`` entry points) and,
when the file exists, pflow's ``registry.json`` (read only; ``settings.pflow_registry``).
Workflows come from the store in ``settings.workflows_dir``. Files that cannot be read are
skipped and reported in ``warnings``: nothing here prints.

- :func:`discover`: phase 1, a name and one line per node and workflow (markdown ``context``),
  optionally only those matching ``query`` (words in the name or description) or of one ``kind``.
- :func:`describe`: phase 2, the full interfaces of the chosen few, or the missing-components
  error (``error``, ``missing_nodes``, ``missing_workflows``, ``suggestions``).
- :func:`list_workflows`, :func:`show_workflow`, :func:`save_workflow_text`,
  :func:`delete_saved_workflow`, :func:`saved_workflow_path`: the workflow store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pflow_structure.discovery import NodeSources
    from pflow_structure.settings import Settings

WORKFLOW_SUMMARY_FIELDS = ("name", "description", "inputs", "outputs", "version", "tags", "updated_at")


def node_sources(settings: Settings) -> NodeSources:
    """Registry metadata of every node: ours first, then pflow's (hidden when one of ours has its id)."""
    from pflow_structure.discovery import collect_node_metadata
    from pflow_structure.registry import available_nodes

    return collect_node_metadata(available_nodes().values(), settings.pflow_registry)


def _workflows(settings: Settings, wanted: Sequence[str] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """Saved workflows and load warnings; the store is not read when no workflow is wanted."""
    if wanted is not None and not wanted:
        return [], []
    from pflow_structure.discovery import load_workflows

    loaded = load_workflows(settings.workflows_dir)
    return loaded.workflows, loaded.warnings


def _printable(warnings: Sequence[str]) -> list[str]:
    """Warnings that print as UTF-8: a file name with bytes that are not UTF-8 shows them as U+FFFD."""
    from pflow_structure.discovery.files import clean_text

    return [clean_text(warning) for warning in warnings]


def discover(
    settings: Settings,
    *,
    node_ids: Sequence[str] | None = None,
    workflow_names: Sequence[str] | None = None,
    query: str | None = None,
    kind: str | None = None,
    narrow_hint: str | None = None,
) -> dict[str, Any]:
    """Phase 1: the discovery context (markdown, at most 10 KB) and the entries it lists.

    ``None`` means all; unknown names are skipped. ``query`` keeps the entries whose name or
    one-line description holds every word of it (ignoring case); ``kind`` (``nodes`` or
    ``workflows``) keeps one kind. ``narrow_hint`` ends the marker shown when entries do not
    fit: how this caller's user asks for fewer (default: MCP's ``list_nodes`` arguments).
    Returns ``context``, ``nodes`` (name, description, source), ``workflows`` (name,
    description), ``node_count``, ``workflow_count``, ``warnings`` and ``shadowed`` (pflow
    nodes hidden by ours).
    """
    from pflow_structure.discovery import build_discovery_context
    from pflow_structure.discovery.context import KINDS, NARROW_HINT, matches_query, node_description
    from pflow_structure.discovery.interface import first_line
    from pflow_structure.errors import ParameterError

    if kind is not None and kind not in KINDS:
        raise ParameterError(f"Unknown kind {str(kind)[:80]!r}: use {' or '.join(KINDS)}, or leave it out for both.")
    if kind == "workflows":
        node_ids = []
    elif kind == "nodes":
        workflow_names = []
    sources = node_sources(settings)
    saved, workflow_warnings = _workflows(settings, workflow_names)
    metadata = sources.metadata
    chosen_nodes = (
        list(metadata) if node_ids is None else [name for name in dict.fromkeys(node_ids) if name in metadata]
    )
    by_name = {flow["name"]: flow for flow in saved}
    chosen_flows = (
        list(by_name) if workflow_names is None else [n for n in dict.fromkeys(workflow_names) if n in by_name]
    )
    nodes = [
        {"name": name, "description": node_description(metadata[name]), "source": str(metadata[name]["source"])}
        for name in chosen_nodes
    ]
    flows = [{"name": name, "description": first_line(by_name[name]["description"])} for name in chosen_flows]
    if query is not None:
        nodes = [node for node in nodes if matches_query(query, node["name"], node["description"])]
        flows = [flow for flow in flows if matches_query(query, flow["name"], flow["description"])]
    context = build_discovery_context(
        [node["name"] for node in nodes],
        [flow["name"] for flow in flows],
        metadata,
        saved,
        narrow_hint=narrow_hint or NARROW_HINT,
    )
    return {
        "context": context,
        "nodes": nodes,
        "workflows": flows,
        "node_count": len(nodes),
        "workflow_count": len(flows),
        "warnings": _printable(sources.warnings + workflow_warnings),
        "shadowed": sources.shadowed,
    }


def describe(settings: Settings, node_ids: Sequence[str], workflow_names: Sequence[str] = ()) -> dict[str, Any]:
    """Phase 2: the planning context (full interfaces) of the chosen nodes and workflows.

    Returns ``context``, ``nodes``, ``workflows`` and ``warnings``; or, when a name is unknown,
    the missing-components dict (``error``, ``missing_nodes``, ``missing_workflows``,
    ``suggestions``: close matches by name) with ``warnings``.
    """
    from pflow_structure.discovery import build_planning_context

    sources = node_sources(settings)
    saved, workflow_warnings = _workflows(settings, list(workflow_names))
    warnings = _printable(sources.warnings + workflow_warnings)
    planned = build_planning_context(list(node_ids), list(workflow_names), sources.metadata, saved)
    if not isinstance(planned, str):
        return {**planned, "warnings": warnings}
    return {
        "context": planned,
        "nodes": list(dict.fromkeys(node_ids)),
        "workflows": list(dict.fromkeys(workflow_names)),
        "warnings": warnings,
    }


def list_workflows(settings: Settings) -> dict[str, Any]:
    """Every saved workflow in short (no IR), the directory, and warnings about skipped files."""
    from pflow_structure.discovery import load_workflows

    loaded = load_workflows(settings.workflows_dir)
    summaries = [{key: flow[key] for key in WORKFLOW_SUMMARY_FIELDS} for flow in loaded.workflows]
    return {"directory": str(settings.workflows_dir), "workflows": summaries, "warnings": _printable(loaded.warnings)}


def show_workflow(settings: Settings, name: str) -> dict[str, Any]:
    """One saved workflow: ``workflow`` (the stored record, named by its file), ``context`` (its
    planning block) and ``warnings`` (what was repaired while reading it)."""
    from pflow_structure.discovery import build_planning_context, load_workflow

    warnings: list[str] = []
    record = load_workflow(settings.workflows_dir, name, warnings=warnings)
    context = build_planning_context([], [name], {}, [record])
    assert isinstance(context, str), context  # the one workflow asked for is the one given
    return {"workflow": record, "context": context, "warnings": _printable(warnings)}


def saved_workflow_path(settings: Settings, name: str) -> Path:
    """The file of a saved workflow; InvalidWorkflowError for an unsafe name, WorkflowNotFoundError if none."""
    from pflow_structure.discovery.workflows import workflow_path
    from pflow_structure.errors import WorkflowNotFoundError

    path = workflow_path(settings.workflows_dir, name)
    if not path.is_file():
        raise WorkflowNotFoundError(name, settings.workflows_dir)
    return path


def save_workflow_text(
    settings: Settings, name: str, text: str | bytes, description: str, *, where: str, tags: Sequence[str] = ()
) -> dict[str, Any]:
    """Save a workflow from JSON text (or its UTF-8 bytes): a workflow IR (``{"nodes": [...], ...}``)
    or a saved record's ``ir``. ``where`` names the input in messages (a file name, or stdin).

    Returns ``workflow`` (the stored record), ``path`` and ``replaced`` (an older one existed).
    Bad input (not UTF-8, not JSON, nested too deeply, text that is not valid Unicode, an empty
    description) is an :class:`~pflow_structure.errors.InvalidWorkflowError`; nothing is written.
    """
    from pflow_structure.discovery import save_workflow
    from pflow_structure.discovery.files import invalid_text_at
    from pflow_structure.discovery.workflows import workflow_path
    from pflow_structure.errors import InvalidWorkflowError

    path = workflow_path(settings.workflows_dir, name)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidWorkflowError(
                f"{where}: not UTF-8 text (byte 0x{text[exc.start]:02x} at offset {exc.start}); save the file as "
                "UTF-8 JSON."
            ) from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise InvalidWorkflowError(f"{where}: invalid JSON (nested too deeply); flatten the IR.") from None
    except ValueError as exc:
        raise InvalidWorkflowError(f"{where}: invalid JSON ({exc}); a workflow file holds a JSON object.") from None
    ir = data["ir"] if isinstance(data, dict) and "ir" in data and "nodes" not in data else data
    if not isinstance(ir, dict):
        raise InvalidWorkflowError(
            f"{where}: a workflow IR is a JSON object with a nodes list, not {type(ir).__name__}."
        )
    at = invalid_text_at(ir)
    if at is not None:
        raise InvalidWorkflowError(
            f"{where}: the IR{f' (at {at[:80]})' if at else ''} holds a lone surrogate escape such as \\ud800, "
            "which is not valid Unicode text; fix the file."
        )
    replaced = path.is_file()
    record = save_workflow(settings.workflows_dir, name, description, ir, tags=tags)
    return {"workflow": record, "path": str(path), "replaced": replaced}


def delete_saved_workflow(settings: Settings, name: str) -> str:
    """Remove a saved workflow; returns the path of the file removed."""
    from pflow_structure.discovery import delete_workflow
    from pflow_structure.discovery.workflows import workflow_path

    path = workflow_path(settings.workflows_dir, name)
    delete_workflow(settings.workflows_dir, name)
    return str(path)
