"""Passing values on, for the proxy and the server: the ``edit_fields`` tool and argument references.

Both MCP adapters call :mod:`pflow_structure.service.values`; this module holds what they
share: the tool's description and schema, the argument check, and the answers (our errors
come back as tool errors with the CLI's words, before any downstream sees the call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.settings import Settings

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
    set_values = arguments.get("set") or {}
    delete = arguments.get("delete") or []
    if not isinstance(set_values, dict):
        raise ParameterError('set must be an object of path: value, e.g. {"result.title": "New title"}')
    if not isinstance(delete, list) or not all(isinstance(path, str) for path in delete):
        raise ParameterError('delete must be a list of paths, e.g. ["result.draft"]')
    return execution_id, set_values, delete


async def answer_edit(arguments: Mapping[str, Any], settings: Settings | None) -> Any:
    """The ``edit_fields`` tool: the new execution's structure, or a tool error."""
    from pflow_structure.mcp.server import answer_from, error_result
    from pflow_structure.service.values import edit_fields

    try:
        execution_id, set_values, delete = edit_arguments(arguments)
    except ParameterError as exc:
        return error_result(exc)
    return await answer_from(
        lambda: edit_fields(execution_id, set_values, delete, settings=settings, changes_only=True)
    )


def tool_schemas(listing: Mapping[str, Any]) -> dict[str, Any]:
    """Input schema by tool name, from a ``tools/list`` answer."""
    return {
        tool["name"]: tool.get("inputSchema")
        for tool in listing.get("tools", [])
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
    }


async def resolve_call(proxy: Any, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The proxy's tool call: ``(arguments to send, None)``, or ``(arguments, tool error)`` when a
    reference does not resolve. Arguments without a reference are sent as the very same object.
    The tool's input schema comes from the tool list (asked for once when the client never did)."""
    import contextlib

    from pflow_structure.mcp.compat import protocol_error_class
    from pflow_structure.mcp.proxy import DownstreamError
    from pflow_structure.service.values import has_references

    if not has_references(arguments):
        return arguments, None
    if name not in proxy.schemas:
        with contextlib.suppress(DownstreamError, protocol_error_class()):
            await proxy.choose_read_tool()  # lists every page of tools, with their input schemas
    return await resolved_or_error(arguments, proxy.schemas.get(name), proxy.settings)


async def resolved_or_error(
    arguments: dict[str, Any], schema: Mapping[str, Any] | None, settings: Settings | None
) -> tuple[dict[str, Any], Any]:
    """``(arguments with references replaced, None)``, or ``(arguments, tool error)`` when one
    does not resolve. Off the event loop: a reference may read a large cache entry."""
    import anyio

    from pflow_structure.errors import StructureError
    from pflow_structure.mcp.server import error_result
    from pflow_structure.service.values import resolve_arguments

    try:
        resolved = await anyio.to_thread.run_sync(
            lambda: resolve_arguments(arguments, schema=schema, settings=settings)
        )
    except StructureError as exc:
        return arguments, error_result(exc)
    return resolved, None
