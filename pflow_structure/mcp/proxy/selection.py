"""``_want``, ``_fields`` and ``_jq`` on every proxied tool: chosen values in the same call, the rest cached.

The proxy adds an optional argument ``_fields`` (paths, as ``read_fields`` takes them) to each tool
of the server behind it, and takes it off the call before the server sees it. With it, the result
is cached whatever its size and the answer is the values at those paths, the execution id and one
line on reading the rest (:func:`pflow_structure.service.answers.fields_answer`), within the answer
budget; a path that misses brings its reason and the structure. A tool that already has an argument
``_fields`` gets ``_pflow_structure_fields`` instead, and its description says so.

``_jq`` (a jq expression, :mod:`pflow_structure.paths.jq`) is taken off the same way
(``_pflow_structure_jq`` when the tool has a ``_jq``): it is checked and compiled before the server
is called (a refused or broken expression is a tool error and the tool does not run), and the
answer is its result in the shape of a ``_fields`` answer
(:func:`pflow_structure.service.querying.jq_fields_answer`).

Plain functions on plain dicts: no SDK types here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pflow_structure.errors import ParameterError
from pflow_structure.mcp.proxy.shaping import WANT_ARGUMENT, WANT_DESCRIPTION, WANT_PREFIXED

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

FIELDS_ARGUMENT = "_fields"
PREFIXED_FIELDS_ARGUMENT = "_pflow_structure_fields"
# Paid on every turn for every tool: kept to about a dozen o200k tokens (benchmarks/README.md, issue 28).
FIELDS_ARGUMENT_DESCRIPTION = "Read these paths now"  # short: paid on every tool (the instructions say more)
JQ_ARGUMENT = "_jq"
PREFIXED_JQ_ARGUMENT = "_pflow_structure_jq"
# _want, _fields and _jq together stay within 40 o200k tokens a tool (issue 36): _jq is named, not described
# (the instructions say what it does), and _fields' items are checked here rather than typed in the schema.
JQ_SCHEMA = {"type": "string"}


class Selection(NamedTuple):
    """What a call asked to be answered with instead of the structure: paths, or a jq expression."""

    paths: list[str] | None = None
    jq: str | None = None


def fields_argument(schema: Any, ours: str = FIELDS_ARGUMENT, prefixed: str = PREFIXED_FIELDS_ARGUMENT) -> str:
    """``_fields`` (or ``ours``), or the prefixed name when the tool's own input schema has one of that name."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return prefixed if isinstance(properties, Mapping) and ours in properties else ours


def jq_argument(schema: Any) -> str:
    """``_jq``, or ``_pflow_structure_jq`` when the tool's own input schema has a ``_jq``."""
    return fields_argument(schema, JQ_ARGUMENT, PREFIXED_JQ_ARGUMENT)


def with_fields_argument(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool as the proxy lists it: its input schema with the ``_fields`` and ``_jq`` arguments added."""
    schema = tool.get("inputSchema")
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        return dict(tool)
    name, jq_name = fields_argument(schema), jq_argument(schema)
    properties = dict(schema.get("properties") or {})
    properties[name] = {"type": "array", "description": FIELDS_ARGUMENT_DESCRIPTION}
    properties[jq_name] = dict(JQ_SCHEMA)
    listed = {**tool, "inputSchema": {**schema, "properties": properties}}
    pairs = ((name, FIELDS_ARGUMENT), (jq_name, JQ_ARGUMENT))
    renamed = [f"{mine}: pflow-structure's {plain}" for mine, plain in pairs if mine != plain]
    if renamed:
        listed["description"] = f"{tool.get('description') or ''} ({'; '.join(renamed)}.)".lstrip()
    return listed


def take_fields(arguments: dict[str, Any], schema: Any) -> tuple[dict[str, Any], Selection | None]:
    """``(arguments for the server, the paths or jq expression asked for, or None)``; ParameterError for a
    wrong type, and JqExpressionError (a ParameterError) for an expression that is refused or does not compile:
    both before the server is called."""
    from pflow_structure.paths.jq import check_jq

    name, jq_name = fields_argument(schema), jq_argument(schema)
    rest = {key: value for key, value in arguments.items() if key not in (name, jq_name)}
    paths, expression = arguments.get(name), arguments.get(jq_name)
    if len(rest) == len(arguments) or (paths is None and expression is None):
        return (arguments if len(rest) == len(arguments) else rest), None
    if paths is not None and expression is not None:
        raise ParameterError(f"give {name} (paths) or {jq_name} (a jq expression), not both")
    if expression is not None:
        return rest, Selection(jq=check_jq(expression))
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(path, str) for path in paths):
        raise ParameterError(f'{name} must be a list of paths, e.g. ["result[*].name"], not {paths!r}')
    return rest, Selection(paths=paths)


def fields_result(
    tool: str, arguments: dict[str, Any], result: dict[str, Any], selection: Selection, settings: Settings
) -> dict[str, Any] | None:
    """The answer with the values ``selection`` asks for, or None to answer as usual (an error, non-text content)."""
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
    if selection.jq is not None:
        from pflow_structure.service.querying import jq_fields_answer

        answer = jq_fields_answer(described, selection.jq, settings=settings)
    else:
        answer = fields_answer(described, selection.paths or [], settings=settings)
    shaped: dict[str, Any] = {
        "content": [{"type": "text", "text": format_json(answer, compact=True)}],
        "isError": not fields_found(answer),
    }
    if "_meta" in result:
        shaped["_meta"] = result["_meta"]
    return shaped


def want_argument(schema: Any) -> str:
    """The name of our ``want`` argument on a tool with this input schema."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    taken = isinstance(properties, Mapping) and WANT_ARGUMENT in properties
    return WANT_PREFIXED if taken else WANT_ARGUMENT


def with_want(tool: Mapping[str, Any]) -> dict[str, Any]:
    """``tool`` as the proxy lists it: its input schema with our optional ``want`` string (named in the
    description when it had to be prefixed); a tool whose schema is not an object schema is left alone."""
    schema = tool.get("inputSchema")
    if schema is None:
        schema = {"type": "object"}
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        return dict(tool)
    name = want_argument(schema)
    properties = dict(schema.get("properties") or {})
    properties[name] = {"type": "string", "description": WANT_DESCRIPTION}
    listed = {**tool, "inputSchema": {**schema, "properties": properties}}
    if name != WANT_ARGUMENT:
        listed["description"] = f"{tool.get('description') or ''}\n(pflow-structure: {name} is our want.)".strip()
    return listed


def pop_want(arguments: dict[str, Any], schema: Any) -> tuple[dict[str, Any], str | None]:
    """(the arguments without our ``want``, its text): what goes downstream, and what steers the view.
    A want that is not a string is sent on unchanged (it is not ours)."""
    name = want_argument(schema)
    want = arguments.get(name)
    if not isinstance(want, str):
        return arguments, None
    return {key: value for key, value in arguments.items() if key != name}, want
