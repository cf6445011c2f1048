"""``_fields`` on every proxied tool: the values at chosen paths in the same call, the rest cached.

The proxy adds an optional argument ``_fields`` (paths, as ``read_fields`` takes them) to each tool
of the server behind it, and takes it off the call before the server sees it. With it, the result
is cached whatever its size and the answer is the values at those paths, the execution id and one
line on reading the rest (:func:`pflow_structure.service.answers.fields_answer`), within the answer
budget; a path that misses brings its reason and the structure. A tool that already has an argument
``_fields`` gets ``_pflow_structure_fields`` instead, and its description says so.

Plain functions on plain dicts: no SDK types here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pflow_structure.errors import ParameterError

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

FIELDS_ARGUMENT = "_fields"
PREFIXED_FIELDS_ARGUMENT = "_pflow_structure_fields"
# Paid on every turn for every tool: kept to about a dozen o200k tokens (benchmarks/README.md, issue 28).
FIELDS_ARGUMENT_DESCRIPTION = "Read these paths now"  # short: paid on every tool (the instructions say more)


def fields_argument(schema: Any) -> str:
    """``_fields``, or the prefixed name when the tool's own input schema has a ``_fields``."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping) and FIELDS_ARGUMENT in properties:
        return PREFIXED_FIELDS_ARGUMENT
    return FIELDS_ARGUMENT


def with_fields_argument(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool as the proxy lists it: its input schema with the ``_fields`` argument added."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        return dict(tool)
    name = fields_argument(schema)
    properties = dict(schema.get("properties") or {})
    properties[name] = {"type": "array", "items": {"type": "string"}, "description": FIELDS_ARGUMENT_DESCRIPTION}
    listed = {**tool, "inputSchema": {**schema, "properties": properties}}
    if name != FIELDS_ARGUMENT:
        listed["description"] = f"{tool.get('description') or ''} ({name}: pflow-structure's _fields.)".lstrip()
    return listed


def take_fields(arguments: dict[str, Any], schema: Any) -> tuple[dict[str, Any], list[str] | None]:
    """``(arguments for the server, the paths asked for or None)``; ParameterError for a wrong type."""
    name = fields_argument(schema)
    if name not in arguments:
        return arguments, None
    rest = {key: value for key, value in arguments.items() if key != name}
    paths = arguments[name]
    if paths is None:
        return rest, None
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(path, str) for path in paths):
        raise ParameterError(f'{name} must be a list of paths, e.g. ["result[*].name"], not {paths!r}')
    return rest, paths


def fields_result(
    tool: str, arguments: dict[str, Any], result: dict[str, Any], paths: list[str], settings: Settings
) -> dict[str, Any] | None:
    """The answer with the values at ``paths``, or None to answer as usual (an error, non-text content)."""
    from pflow_structure.mcp.proxy.shaping import is_text_lines, payload
    from pflow_structure.render.output_text import format_json
    from pflow_structure.service import store_outputs
    from pflow_structure.service.field_answers import fields_answer, fields_found

    if result.get("isError"):
        return None
    found = payload(result)
    if found is None:
        return None
    value = found[0]
    text_paths = [["result"]] if is_text_lines(result, value) else []
    described = store_outputs(f"mcp:{tool}", arguments, {"result": value}, settings=settings, text_paths=text_paths)
    answer = fields_answer(described, paths, settings=settings)
    shaped: dict[str, Any] = {
        "content": [{"type": "text", "text": format_json(answer, compact=True)}],
        "isError": not fields_found(answer),
    }
    if "_meta" in result:
        shaped["_meta"] = result["_meta"]
    return shaped
