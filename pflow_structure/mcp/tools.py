"""The tools both the server and the proxy offer: ``read_fields`` and ``edit_fields``.

Each tool's name, description and input schema, and the check of its arguments. The answers are
built in :mod:`pflow_structure.mcp.server` (serve) and :mod:`pflow_structure.mcp.proxy.relay`;
this module imports neither adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pflow_structure.errors import ParameterError
from pflow_structure.render.fields_text import READ_FORMAT_DESCRIPTION, READ_FORMATS

READ_TOOL = "read_fields"

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


READ_TOOL_DESCRIPTION = (
    "Read values from a result the proxy cached because it was too large to show. Give the execution_id from "
    "that answer and the paths you need, as its structure lists them: {path: value}; null where a path finds "
    "nothing, and _missing says why and what is near. Answers stay under a token budget: _more gives the exact "
    'arguments for the rest. Pass values on unread: "${execution_id:path}" in any argument.'
)
OFFSET_DESCRIPTION = "Items to skip first, for paging [*] paths (and a plain list read on as PATH[*])."
CHAR_OFFSET_DESCRIPTION = "Characters to skip first in a path that names one long string (as _more says)."
FIELDS_DESCRIPTION = (
    "Paths to answer with, as read_fields takes them (e.g. ['result[*].number']): their values instead of the "
    "structure, in this call; the rest stays cached."
)
NAMES_DESCRIPTION = (
    "Each value of a [*] or JSONPath path as {its path: value}: template (result[3].name) or normalized "
    "(RFC 9535: $['result'][3]['name'])."
)
MAX_TOKENS_DESCRIPTION = "Most o200k tokens in the answer (default 8000, PFLOW_STRUCTURE_ANSWER_BUDGET)."


class ReadPaging(NamedTuple):
    """The paging arguments of one ``read_fields`` call."""

    limit: int | None = None
    offset: int = 0
    char_offset: int = 0
    max_tokens: int | None = None
    names: str | None = None


READ_TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "execution_id": {"type": "string", "description": "The execution_id from the cached answer."},
        "field_paths": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Paths to read, e.g. ['result[0].name', 'result[*].name']: [*] for every item, "
            "negative indices, or JSONPath starting with $.",
        },
        "limit": {"type": "integer", "minimum": 0, "description": "Most items returned per [*] or JSONPath path."},
        "offset": {"type": "integer", "minimum": 0, "description": OFFSET_DESCRIPTION},
        "char_offset": {"type": "integer", "minimum": 0, "description": CHAR_OFFSET_DESCRIPTION},
        "max_tokens": {"type": "integer", "minimum": 1, "description": MAX_TOKENS_DESCRIPTION},
        "names": {"type": "string", "enum": ["template", "normalized"], "description": NAMES_DESCRIPTION},
        "format": {
            "type": "string",
            "enum": list(READ_FORMATS),
            "description": READ_FORMAT_DESCRIPTION,
        },
    },
    "required": ["execution_id", "field_paths"],
}


def read_arguments(arguments: dict[str, Any]) -> tuple[str, list[str], ReadPaging]:
    execution_id = arguments.get("execution_id")
    paths = arguments.get("field_paths")
    if not isinstance(execution_id, str) or not execution_id:
        raise ParameterError("execution_id is required: the execution_id from the cached answer")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise ParameterError('field_paths must be a list of paths, e.g. ["result[0].name"]')
    numbers = {name: arguments.get(name) for name in ("limit", "offset", "char_offset", "max_tokens")}
    for label, number in numbers.items():
        least = 1 if label == "max_tokens" else 0
        if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < least):
            raise ParameterError(f"{label} must be a whole number of at least {least}, not {number!r}")
    names = arguments.get("names")
    if names not in (None, "template", "normalized"):
        raise ParameterError(f"names must be template or normalized, not {names!r}")
    paging = ReadPaging(
        numbers["limit"], numbers["offset"] or 0, numbers["char_offset"] or 0, numbers["max_tokens"], names
    )
    return execution_id, paths, paging
