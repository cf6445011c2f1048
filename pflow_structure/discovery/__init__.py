"""Two-phase discovery: a light list of what can be run, then the full interface of the chosen few.

- :func:`parse_interface` reads the ``Interface:`` block of a node docstring into nested items.
- :func:`save_workflow`, :func:`load_workflow`, :func:`load_workflows`, :func:`list_workflow_names`
  and :func:`delete_workflow` keep workflows as ``{name}.json`` in a directory you pass in.
- :func:`build_discovery_context` (names and one line each, 10 KB), :func:`build_planning_context`
  (full interfaces of the chosen few, or :class:`MissingComponents` with close matches) and
  :func:`build_context` (both, for older callers).
- :func:`collect_node_metadata` gathers registry metadata from our node specs and pflow's registry file.
"""

from __future__ import annotations

from pflow_structure.discovery.context import DISCOVERY_LIMIT, build_discovery_context, node_interface
from pflow_structure.discovery.interface import MAX_DEPTH, parse_interface
from pflow_structure.discovery.planning import (
    GROUP_LIMIT,
    TOTAL_LIMIT,
    MissingComponents,
    build_context,
    build_planning_context,
)
from pflow_structure.discovery.sources import (
    NodeSources,
    collect_node_metadata,
    metadata_from_specs,
    read_pflow_registry,
)
from pflow_structure.discovery.workflows import (
    WorkflowLoad,
    check_workflow_name,
    delete_workflow,
    list_workflow_names,
    load_workflow,
    load_workflows,
    save_workflow,
    validate_workflow,
)
from pflow_structure.errors import InvalidWorkflowError, WorkflowNotFoundError, WorkflowStoreError

__all__ = [
    "DISCOVERY_LIMIT",
    "GROUP_LIMIT",
    "MAX_DEPTH",
    "TOTAL_LIMIT",
    "InvalidWorkflowError",
    "MissingComponents",
    "NodeSources",
    "WorkflowLoad",
    "WorkflowNotFoundError",
    "WorkflowStoreError",
    "build_context",
    "build_discovery_context",
    "build_planning_context",
    "check_workflow_name",
    "collect_node_metadata",
    "delete_workflow",
    "list_workflow_names",
    "load_workflow",
    "load_workflows",
    "metadata_from_specs",
    "node_interface",
    "parse_interface",
    "read_pflow_registry",
    "save_workflow",
    "validate_workflow",
]
