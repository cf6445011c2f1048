"""Two-phase discovery for the adapters: what ``pflow-structure nodes`` / ``workflows`` and MCP's
``list_nodes`` / ``describe_nodes`` call, so the CLI and the server answer alike.

Nodes come from our registry (built-ins and the ``pflow_structure.nodes`` entry points) and,
when the file exists, pflow's ``registry.json`` (read only; ``settings.pflow_registry``).
Workflows come from the store in ``settings.workflows_dir``. Files that cannot be read are
skipped and reported in ``warnings``: nothing here prints.

- :func:`discover`: phase 1, a name and one line per node and workflow (markdown ``context``).
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


def discover(
    settings: Settings, *, node_ids: Sequence[str] | None = None, workflow_names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Phase 1: the discovery context (markdown, at most 10 KB) and the entries it lists.

    ``None`` means all; unknown names are skipped. Returns ``context``, ``nodes`` (name,
    description, source), ``workflows`` (name, description), ``node_count``,
    ``workflow_count``, ``warnings`` and ``shadowed`` (pflow nodes hidden by ours).
    """
    from pflow_structure.discovery import build_discovery_context
    from pflow_structure.discovery.context import node_description
    from pflow_structure.discovery.interface import first_line

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
    return {
        "context": build_discovery_context(chosen_nodes, chosen_flows, metadata, saved),
        "nodes": nodes,
        "workflows": flows,
        "node_count": len(nodes),
        "workflow_count": len(flows),
        "warnings": sources.warnings + workflow_warnings,
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
    warnings = sources.warnings + workflow_warnings
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
    return {"directory": str(settings.workflows_dir), "workflows": summaries, "warnings": loaded.warnings}


def show_workflow(settings: Settings, name: str) -> dict[str, Any]:
    """One saved workflow: ``workflow`` (the stored record) and ``context`` (its planning block)."""
    from pflow_structure.discovery import build_planning_context, load_workflow

    record = load_workflow(settings.workflows_dir, name)  # its name is the file's: refused otherwise
    context = build_planning_context([], [name], {}, [record])
    assert isinstance(context, str), context  # the one workflow asked for is the one given
    return {"workflow": record, "context": context}


def saved_workflow_path(settings: Settings, name: str) -> Path:
    """The file of a saved workflow; InvalidWorkflowError for an unsafe name, WorkflowNotFoundError if none."""
    from pflow_structure.discovery.workflows import workflow_path
    from pflow_structure.errors import WorkflowNotFoundError

    path = workflow_path(settings.workflows_dir, name)
    if not path.is_file():
        raise WorkflowNotFoundError(name, settings.workflows_dir)
    return path


def save_workflow_text(
    settings: Settings, name: str, text: str, description: str, *, where: str, tags: Sequence[str] = ()
) -> dict[str, Any]:
    """Save a workflow from JSON text: a workflow IR (``{"nodes": [...], ...}``) or a saved record's ``ir``.

    Returns ``workflow`` (the stored record), ``path`` and ``replaced`` (an older one existed).
    """
    from pflow_structure.discovery import save_workflow
    from pflow_structure.discovery.workflows import workflow_path
    from pflow_structure.errors import InvalidWorkflowError

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidWorkflowError(f"{where}: invalid JSON ({exc}); a workflow file holds a JSON object.") from None
    ir = data["ir"] if isinstance(data, dict) and "ir" in data and "nodes" not in data else data
    if not isinstance(ir, dict):
        raise InvalidWorkflowError(
            f"{where}: a workflow IR is a JSON object with a nodes list, not {type(ir).__name__}."
        )
    path = workflow_path(settings.workflows_dir, name)
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
