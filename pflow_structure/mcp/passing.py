"""Passing values on, for the proxy and the server: what both say about ``edit_fields``.

The tool's name, description and schema, its argument check, and the input schemas of a tool
list (where references need them). The answers are built in :mod:`pflow_structure.mcp.server`
(:func:`~pflow_structure.mcp.server.answer_edit`); this module imports neither adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflow_structure.errors import ParameterError

EDIT_TOOL = "edit_fields"
EDIT_TOOL_DESCRIPTION = (
    "Change a cached result without reading it: set values at paths (a missing key is added; [*] sets every "
    "item) and delete paths. Answers a new execution_id and the structure of what changed; the original is "
    'unchanged. Pass the new value on with "${execution_id:path}" in any tool argument.'
)
SET_DESCRIPTION = (
    'Path: new value, e.g. {"result.items[0].title": "New", "result[*].done": true}. A value may be a '
    'reference, "${exec-ID:path}".'
)
DELETE_DESCRIPTION = 'Paths to remove, e.g. ["result.draft", "result.items[2]"].'
EDIT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "execution_id": {"type": "string", "description": "The execution_id of the value to change."},
        "set": {"type": "object", "description": SET_DESCRIPTION},
        "delete": {"type": "array", "items": {"type": "string"}, "description": DELETE_DESCRIPTION},
    },
    "required": ["execution_id"],
}


def edit_arguments(arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """``(execution_id, set, delete)`` from a tool call; ParameterError saying what is wrong."""
    execution_id = arguments.get("execution_id")
    if not isinstance(execution_id, str) or not execution_id:
        raise ParameterError("execution_id is required: the execution_id of the value to change")
    # Only a missing (or null) argument means "none": a wrong type, even an empty one, is refused.
    set_values = arguments.get("set")
    set_values = {} if set_values is None else set_values
    delete = arguments.get("delete")
    delete = [] if delete is None else delete
    if not isinstance(set_values, dict):
        raise ParameterError('set must be an object of path: value, e.g. {"result.title": "New title"}')
    if not isinstance(delete, list) or not all(isinstance(path, str) for path in delete):
        raise ParameterError('delete must be a list of paths, e.g. ["result.draft"]')
    return execution_id, set_values, delete


def tool_schemas(listing: Mapping[str, Any]) -> dict[str, Any]:
    """Input schema by tool name, from a ``tools/list`` answer."""
    return {
        tool["name"]: tool.get("inputSchema")
        for tool in listing.get("tools", [])
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
    }
