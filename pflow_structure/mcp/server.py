"""``pflow-structure serve``: the registry tools over MCP, answering as the CLI does.

Each tool calls the one service (:mod:`pflow_structure.service`) and returns a
``CallToolResult`` built here: the dict as ``structuredContent`` and its compact JSON as the
one text block (no pretty-printed copy, no declared output schema that a trimmed answer could
break). Our errors come back with ``isError`` and the words the CLI prints.

No ``from __future__ import annotations`` here: the SDK reads the tools' annotations (the
parameter descriptions) at registration, and the types they name are imported inside
:func:`build_server`, so that importing this module does not import ``mcp``.
"""

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pflow_structure.mcp.tools import (
    CHAR_OFFSET_DESCRIPTION,
    DELETE_DESCRIPTION,
    FIELDS_DESCRIPTION,
    MAX_TOKENS_DESCRIPTION,
    NAMES_DESCRIPTION,
    OFFSET_DESCRIPTION,
    SET_DESCRIPTION,
    ReadPaging,
)
from pflow_structure.render.fields_text import READ_FORMAT_DESCRIPTION
from pflow_structure.settings import Settings

INSTRUCTIONS = (
    "Structure first, values on demand. Find what to run in two phases: list_nodes gives every node and saved "
    "workflow with one line each; then describe_nodes with the few you chose gives their full interfaces "
    "(inputs, outputs with their nested structure, parameters). Call registry_run to run a node: you get an "
    "execution_id and the structure of its output (template paths such as result[0].title with types, counts "
    "and lengths), never the values. Then call read_fields with the execution_id and only the paths you need. "
    "When you know the paths already, registry_run(..., fields=[paths]) answers their values in the same call. "
    "Every answer stays under a token budget; _more gives the exact arguments for the rest, _missing why a path "
    "found nothing."
)


ReadFormat = Literal["json", "text", "auto", "outline", "lines", "table", "toon"]  # = READ_FORMATS (a test checks)


def build_server(settings: Settings | None = None, *, host: str = "127.0.0.1") -> Any:
    """The MCP server object (``FastMCP`` on mcp 1.x, ``MCPServer`` on 2.x) with our tools."""
    from mcp.types import CallToolResult
    from pydantic import Field

    from pflow_structure.mcp.compat import context_class, new_server

    server = new_server("pflow-structure", INSTRUCTIONS, host)
    Context = context_class()  # a type the SDK reads: the tool gets its request's context

    def for_session(context: Any) -> Settings:
        """The settings of the calling client's session: its budget (service/clients.py)."""
        from pflow_structure.mcp.compat import client_info
        from pflow_structure.service.clients import session_settings

        return session_settings(settings or Settings.from_env(), client_info(context))

    async def registry_run(
        node_type: Annotated[
            str, Field(description="Name of the node to run, as list_nodes shows it, e.g. read-json.")
        ],
        parameters: Annotated[
            dict[str, Any] | None,
            Field(description='The node\'s parameters, e.g. {"path": "data.json"} for read-json.'),
        ] = None,
        all_fields: Annotated[
            bool,
            Field(description="List every field. By default a structure of more than 50 fields shows the useful ones."),
        ] = False,
        want: Annotated[
            str | None,
            Field(description="Plain words for what you need; the fields they name come first (in wanted)."),
        ] = None,
        fields: Annotated[list[str] | None, Field(description=FIELDS_DESCRIPTION)] = None,
        max_tokens: Annotated[int | None, Field(description=MAX_TOKENS_DESCRIPTION, ge=1)] = None,
        ctx: Context = None,  # type: ignore[valid-type]  # the SDK's class, chosen at run time (compat.py)
    ) -> CallToolResult:
        """Run a node and get its execution_id and the structure of its output, not the values.

        The structure maps template paths (result[0].title; [0] stands for every list item) to
        their type and statistics. When a large structure is filtered, hidden names each object's
        keys that are not shown (OBJECT.NAME reads back too). Read values afterwards with read_fields.
        A parameter "${execution_id:path}" passes a cached value on unread. With fields (paths, as
        read_fields takes them) the answer is their values instead of the structure, in the same call.
        """
        from pflow_structure.mcp.compat import to_dict
        from pflow_structure.service.usage import CountedRun

        session = for_session(ctx)
        run = CountedRun(session)  # registry_run, counting the output's tokens for `stats`

        def call() -> Any:
            chosen = None if fields is None else list(fields)
            # An agent's answer is always bounded, all_fields included (the Python API leaves that to the caller).
            budget = max_tokens if max_tokens is not None or not all_fields else session.answer_budget
            return run(node_type, parameters or {}, all_fields=all_fields, want=want, fields=chosen, max_tokens=budget)

        answer: CallToolResult = await answer_from(call, found=None if fields is None else _fields_found)
        await asyncio.to_thread(run.record, node_type, to_dict(answer))
        return answer

    async def read_fields(
        execution_id: Annotated[str, Field(description="The execution_id registry_run returned.")],
        field_paths: Annotated[
            list[str],
            Field(
                description="Paths to read, e.g. ['result[0].title', 'result[*].number']: [*] for every item, "
                "negative indices, or JSONPath starting with $."
            ),
        ],
        limit: Annotated[int | None, Field(description="Most items returned per [*] or JSONPath path.", ge=0)] = None,
        offset: Annotated[int, Field(description=OFFSET_DESCRIPTION, ge=0)] = 0,
        format: Annotated[ReadFormat, Field(description=READ_FORMAT_DESCRIPTION)] = "json",
        char_offset: Annotated[int, Field(description=CHAR_OFFSET_DESCRIPTION, ge=0)] = 0,
        max_tokens: Annotated[int | None, Field(description=MAX_TOKENS_DESCRIPTION, ge=1)] = None,
        names: Annotated[Literal["template", "normalized"] | None, Field(description=NAMES_DESCRIPTION)] = None,
        ctx: Context = None,  # type: ignore[valid-type]  # the SDK's class, chosen at run time (compat.py)
    ) -> CallToolResult:
        """Read the values at chosen paths of an execution: {path: value}; null where a path finds nothing,
        and _missing says why and what is near. An answer stays under a token budget: past it a list pages,
        a long string is cut, a large dict gives its structure; _more gives the exact arguments that read on.

        format="auto" answers in fewer tokens: a path: line per path, lists and dicts under it in
        the smallest format that reads back as the same value (several [*] paths over one list
        become one table, a column each)."""
        from pflow_structure.mcp.compat import to_dict
        from pflow_structure.service.usage import record_read

        paging = ReadPaging(limit, offset, char_offset, max_tokens, names)
        session = for_session(ctx)
        if format != "json":
            answer: CallToolResult = await answer_read_text(execution_id, list(field_paths), format, paging, session)
        else:
            answer = await answer_read_json(execution_id, list(field_paths), paging, session)
        await asyncio.to_thread(record_read, session, execution_id, to_dict(answer))
        return answer

    async def list_nodes(
        query: Annotated[
            str | None,
            Field(
                description="Only the nodes and workflows whose name or description holds every one of these words "
                "(any case), e.g. 'github issue'. Leave out to list all."
            ),
        ] = None,
        kind: Annotated[
            Literal["nodes", "workflows"] | None,
            Field(description="Only nodes, or only saved workflows. Leave out for both."),
        ] = None,
    ) -> CallToolResult:
        """List the nodes and saved workflows: name and one line each (phase 1), at most 10 KB.

        Pick the few you need, then call describe_nodes for their full interfaces. When the list is
        cut, call again with query or kind to see the rest. registry_run runs the nodes whose source
        is not "pflow"; pflow's nodes are listed for pflow workflows.
        """
        from pflow_structure.service.discovery import discover

        answer: CallToolResult = await answer_with_context(
            lambda: discover(settings or Settings.from_env(), query=query, kind=kind)
        )
        return answer

    async def describe_nodes(
        node_ids: Annotated[
            list[str], Field(description="Node names from list_nodes, e.g. ['read-json', 'shell']; may be [].")
        ],
        workflow_names: Annotated[
            list[str] | None, Field(description="Saved workflow names from list_nodes, e.g. ['fix-github-issue'].")
        ] = None,
    ) -> CallToolResult:
        """Full interfaces of the chosen nodes and workflows (phase 2): inputs, outputs with their nested
        structure, parameters and actions. An unknown name is an error listing close matches."""
        from pflow_structure.service.discovery import describe

        answer: CallToolResult = await answer_with_context(
            lambda: describe(settings or Settings.from_env(), list(node_ids), list(workflow_names or []))
        )
        return answer

    async def edit_fields(
        execution_id: Annotated[str, Field(description="The execution_id of the value to change.")],
        set: Annotated[dict[str, Any] | None, Field(description=SET_DESCRIPTION)] = None,
        delete: Annotated[list[str] | None, Field(description=DELETE_DESCRIPTION)] = None,
        ctx: Context = None,  # type: ignore[valid-type]  # the SDK's class, chosen at run time (compat.py)
    ) -> CallToolResult:
        """Change a cached value without reading it: set values at paths (a missing key is added; [*] sets
        every item) and delete paths. Answers a new execution_id and the structure of what changed; the
        original is unchanged."""
        from pflow_structure.mcp.compat import to_dict
        from pflow_structure.service.usage import record_read

        session = for_session(ctx)
        arguments = {"execution_id": execution_id, "set": set, "delete": delete}
        answer: CallToolResult = await answer_edit(arguments, session)
        await asyncio.to_thread(record_read, session, execution_id, to_dict(answer))
        return answer

    from pflow_structure.service.clients import declared_size

    answering = (registry_run, read_fields, edit_fields)  # answers within the budget: their size is declared
    for tool in (registry_run, read_fields, edit_fields, list_nodes, describe_nodes):
        declares = tool in answering and "meta" in inspect.signature(server.tool).parameters  # mcp 1.x: from 1.15
        options = {"meta": declared_size(settings or Settings.from_env())} if declares else {}
        server.tool(name=tool.__name__, description=inspect.cleandoc(tool.__doc__ or ""), **options)(tool)
    return server


def _fields_found(answer: Any) -> bool:
    from pflow_structure.service.field_answers import fields_found

    return fields_found(answer)


async def answer_from(
    call: Callable[[], Any], caller: str = "serve", found: Callable[[Any], bool] | None = None
) -> Any:
    """Run a service call off the event loop; our errors become isError results, their fixes told to ``caller``,
    and so does an answer for which ``found`` says nothing was found."""
    from pflow_structure.mcp.compat import tool_result

    failed, value = await _run_service(call, caller)
    if failed is not None:
        return failed
    text = compact_json(value)
    is_error = found is not None and not found(value)
    return tool_result(json.loads(text), text, is_error=is_error)  # structuredContent from the same JSON


async def answer_read_fields(arguments: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """The proxy's ``read_fields`` tool: its arguments checked, the answer as a result dict."""
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.compat import to_dict
    from pflow_structure.mcp.tools import read_arguments

    try:
        execution_id, paths, paging = read_arguments(arguments)
    except ParameterError as exc:
        return to_dict(error_result(exc, "proxy"))
    format_name = arguments.get("format") or "json"
    if format_name != "json":  # the service refuses a name that is not in READ_FORMATS
        return to_dict(await answer_read_text(execution_id, paths, format_name, paging, settings, "proxy"))
    return to_dict(await answer_read_json(execution_id, paths, paging, settings, "proxy"))


async def answer_read_json(
    execution_id: str, field_paths: list[str], paging: ReadPaging, settings: Settings | None, caller: str = "serve"
) -> Any:
    """``read_fields`` as JSON: the values within the budget, with ``_missing`` and ``_more``; isError
    when no path found anything (as ``read-fields`` exits 1)."""
    from pflow_structure.mcp.compat import tool_result
    from pflow_structure.service.answers import read_fields_answer

    failed, answer = await _run_service(
        lambda: read_fields_answer(execution_id, field_paths, settings=settings, **paging._asdict()),
        caller,
    )
    if failed is not None:
        return failed
    text = compact_json(answer.value)
    return tool_result(json.loads(text), text, is_error=not answer.found)


async def answer_edit(arguments: Mapping[str, Any], settings: Settings | None, caller: str = "serve") -> Any:
    """The ``edit_fields`` tool (server and proxy): the new id and the structure of what changed, or a tool error."""
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.tools import edit_arguments
    from pflow_structure.service.values import edit_fields

    try:
        execution_id, set_values, delete = edit_arguments(arguments)
    except ParameterError as exc:
        return error_result(exc, caller)
    return await answer_from(
        lambda: edit_fields(execution_id, set_values, delete, settings=settings, changes_only=True), caller
    )


async def resolved_or_error(
    arguments: dict[str, Any], schema: Mapping[str, Any] | None, settings: Settings | None, caller: str = "serve"
) -> tuple[dict[str, Any], Any]:
    """``(arguments with references replaced, None)``, or ``(arguments, tool error)`` when one does not
    resolve (before any tool sees the call). Off the event loop: a reference may read a large entry."""
    from pflow_structure.service.arguments import resolve_arguments

    failed, resolved = await _run_service(
        lambda: resolve_arguments(arguments, schema=schema, settings=settings), caller
    )
    if failed is not None:
        return arguments, failed
    return resolved, None


async def answer_read_text(
    execution_id: str,
    field_paths: list[str],
    format_name: str,
    paging: ReadPaging,
    settings: Settings | None,
    caller: str = "serve",
) -> Any:
    """``read_fields`` in a text format: the text as the one block (no structuredContent, which would
    repeat every value as JSON), notes about values shown as JSON after it."""
    from pflow_structure.mcp.compat import tool_result
    from pflow_structure.service.answers import read_fields_text_call

    failed, answer = await _run_service(
        lambda: read_fields_text_call(execution_id, field_paths, format_name, settings=settings, **paging._asdict()),
        caller,
    )
    if failed is not None:
        return failed
    return tool_result(None, "\n".join([answer.text, *answer.notes]), is_error=not answer.found)


async def answer_with_context(call: Callable[[], dict[str, Any]]) -> Any:
    """Like :func:`answer_from`, but the text block is the markdown ``context`` (plus any warnings), and a
    dict with an ``error`` (unknown names, with suggestions) comes back as isError. A lone surrogate (an
    unknown name sent as ``"\\ud800"``, echoed back) becomes U+FFFD: the answer must encode as UTF-8."""
    from pflow_structure.discovery.files import clean_json_text
    from pflow_structure.mcp.compat import tool_result

    failed, value = await _run_service(call)
    if failed is not None:
        return failed
    structured, _ = clean_json_text(json.loads(compact_json(value)))
    if "error" in structured:
        return tool_result(structured, f"Error: {structured['error'].rstrip()}", is_error=True)
    warnings = "".join(f"\n- {warning}" for warning in structured.get("warnings") or [])
    return tool_result(structured, structured["context"] + (f"\n\nWarnings:{warnings}" if warnings else ""))


async def _run_service(call: Callable[[], Any], caller: str = "serve") -> tuple[Any, Any]:
    """``(None, value)``, or ``(error result, None)`` when the call raised one of our errors."""
    from pflow_structure.errors import StructureError

    try:
        return None, await asyncio.to_thread(_quietly, call)
    except StructureError as exc:
        return error_result(exc, caller), None


def error_result(exc: Exception, caller: str = "serve") -> Any:
    """An isError result with the words the CLI prints for ``exc``, its fix told to ``caller`` ("serve" or
    "proxy": an MCP tool to call, not a shell command)."""
    from pflow_structure.errors import StructureError
    from pflow_structure.mcp.compat import tool_result

    text = exc.told(caller) if isinstance(exc, StructureError) else str(exc)
    return tool_result(None, f"Error: {text}", is_error=True)


def _quietly(call: Callable[[], Any]) -> Any:
    """Run ``call`` with print() going to stderr: on stdio, stdout is the protocol channel, and a
    node that prints would corrupt it (the transport holds its own handle, so this is safe)."""
    import contextlib
    import sys

    with contextlib.redirect_stdout(sys.stderr):
        return call()


def compact_json(value: Any) -> str:
    """Compact JSON, encoded as ``read-fields --json`` encodes (bytes as base64, surrogates escaped)."""
    from pflow_structure.render.output_text import format_json

    return format_json(value, compact=True)


LOOPBACK = ("127.0.0.1", "localhost", "::1")
KEEP_ALIVE_SECONDS = 75


def serve_http(settings: Settings | None, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp``; a bearer token is required when ``token`` is set."""
    import uvicorn

    from pflow_structure.mcp.compat import http_app

    app = http_app(build_server(settings, host=host), host)
    # Keep-alive longer than a client's idle pool (httpx: 5 s) and a load balancer's idle timeout (often
    # 60 s): with uvicorn's 5 s default, a reused connection can close under a request in flight.
    uvicorn.run(
        BearerAuth(app, token) if token else app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer TOKEN`` get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "http":
            given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                body = b'{"error": "send Authorization: Bearer <the token in PFLOW_STRUCTURE_MCP_TOKEN>"}'
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
