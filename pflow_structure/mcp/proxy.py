"""``pflow-structure proxy -- COMMAND ARGS...``: any stdio MCP server, answering structure first.

The proxy starts the downstream server as a subprocess and serves, on its own stdin/stdout,
the downstream's tools (same names, descriptions and input schemas) plus ``read_fields``;
prompts and resources pass through unchanged. Each tool result goes through
:func:`pflow_structure.mcp.answers.shape_result`: small results come back as they are (or as
compact JSON when that is smaller), large ones are cached and answered with an execution id
and their structure.

Never worse than no proxy: a failure while shaping a result answers with the downstream
result unchanged and appends a line to the failure log. A downstream that exits is reported
as a tool error naming its command, and started again on the next request.

Declared output schemas are removed from the tool list: a structure answer would not match
them, and a client that validates ``structuredContent`` would reject it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from pflow_structure.errors import ParameterError, StructureError
from pflow_structure.mcp.answers import DEFAULT_BUDGET, shape_result
from pflow_structure.render.failure_log import append_failure, failure_record
from pflow_structure.render.fields_text import READ_FORMAT_DESCRIPTION, READ_FORMATS
from pflow_structure.settings import Settings

READ_TOOL = "read_fields"
INTERNAL_ERROR = -32603
DEFAULT_START_TIMEOUT = 60.0
MAX_TOOL_PAGES = 100
GRACE = 5.0  # seconds an in-flight request may still take after the downstream's output ended
EXACT_COUNT_CHARS = 4_000_000

READ_TOOL_DESCRIPTION = (
    "Read values from a result the proxy cached because it was too large to show. Give the execution_id from "
    "that answer and the paths you need, as its structure lists them: {path: value}; null where a path finds "
    "nothing."
)
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
        "offset": {"type": "integer", "minimum": 0, "description": "Items to skip first, for paging [*] paths."},
        "format": {
            "type": "string",
            "enum": list(READ_FORMATS),
            "description": READ_FORMAT_DESCRIPTION,
        },
    },
    "required": ["execution_id", "field_paths"],
}


class DownstreamError(Exception):
    """The downstream server could not be started, or exited; the message names its command."""


class _Connection:
    """One run of the downstream process and its client session, owned by one task.

    The owning task enters the SDK's ``stdio_client`` and ``ClientSession`` and stays inside
    them until the connection is closed or the process's output ends; other tasks send
    requests through ``session``. ``dead`` is set the moment the output ends: no new request
    gets this connection. Requests in flight get what the process wrote before it exited (the
    session delivers it, then fails the rest with "Connection closed"); the owner leaves the
    session only when they are done, or after ``GRACE`` seconds.
    """

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.dead = anyio.Event()
        self.closed = anyio.Event()
        self.session: Any = None
        self.init: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.in_flight = 0

    async def own(self, command: list[str], start_timeout: float) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        from pflow_structure.mcp.compat import to_dict

        parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        try:
            async with stdio_client(parameters) as (read_stream, write_stream):
                relay_send, relay_receive = anyio.create_memory_object_stream[Any](16)
                async with anyio.create_task_group() as group:
                    group.start_soon(self._relay, read_stream, relay_send)
                    async with ClientSession(relay_receive, write_stream) as session:
                        with anyio.fail_after(start_timeout):
                            self.init = to_dict(await session.initialize())
                        self.session = session
                        self.ready.set()
                        await self.dead.wait()
                        with anyio.move_on_after(GRACE):
                            while self.in_flight:
                                await anyio.sleep(0.02)
                    group.cancel_scope.cancel()
        except Exception as exc:
            self.error = exc
        finally:
            self.dead.set()
            self.ready.set()
            self.closed.set()

    async def _relay(self, source: Any, sink: Any) -> None:
        """Pass messages on; when the process's output ends, mark the connection dead."""
        from pflow_structure.mcp.compat import relay

        try:
            await relay(source, sink)
        finally:
            self.dead.set()


class Downstream:
    """The downstream server: started on first use, started again after it exits."""

    def __init__(self, command: list[str], group: Any, *, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        if not command:
            raise ParameterError("no downstream command: put it after --, e.g. proxy -- npx -y some-mcp-server")
        self.command = list(command)
        self.group = group
        self.start_timeout = start_timeout
        self.starts = 0
        self._connection: _Connection | None = None
        self._lock = anyio.Lock()

    @property
    def name(self) -> str:
        return shlex.join(self.command)

    async def connection(self) -> _Connection:
        async with self._lock:
            if self._connection is None or self._connection.dead.is_set():
                self._connection = await self._start()
            return self._connection

    async def _start(self) -> _Connection:
        connection = _Connection()
        self.starts += 1
        self.group.start_soon(connection.own, self.command, self.start_timeout)
        await connection.ready.wait()
        if connection.error is not None or connection.session is None:
            reason = _describe(connection.error) if connection.error else "it exited during start-up"
            raise DownstreamError(
                f"could not start the downstream MCP server `{self.name}`: {reason}. Check the command after "
                "`--` (is it installed and on PATH? does it run on its own?)"
            )
        return connection

    async def request(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """``call(session)`` on a live connection; DownstreamError when the process exits meanwhile."""
        from pflow_structure.mcp.compat import protocol_error_class

        connection = await self.connection()
        outcome: dict[str, Any] = {}

        async def send(scope: Any) -> None:
            connection.in_flight += 1
            try:
                outcome["value"] = await call(connection.session)
            except Exception as exc:
                outcome["error"] = exc
            finally:
                connection.in_flight -= 1
            scope.cancel()

        async def watch(scope: Any) -> None:
            await connection.dead.wait()
            await anyio.sleep(GRACE)  # an answer written before the exit still arrives
            scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(send, group.cancel_scope)
            group.start_soon(watch, group.cancel_scope)
        error = outcome.get("error")
        if "value" in outcome:
            return outcome["value"]
        if connection.dead.is_set() and (error is None or _connection_closed(error)):
            raise DownstreamError(
                f"the downstream MCP server `{self.name}` exited; it will be started again on the next call"
            )
        if isinstance(error, protocol_error_class()):
            raise error
        raise DownstreamError(f"the downstream MCP server `{self.name}` failed: {_describe(error)}")

    async def close(self) -> None:
        if self._connection is not None:
            self._connection.dead.set()
            await self._connection.closed.wait()


def _connection_closed(error: BaseException) -> bool:
    return "connection closed" in str(error).lower() or isinstance(
        error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    )


def _exception_group() -> Any:
    import builtins

    found = getattr(builtins, "BaseExceptionGroup", None)
    if found is None:  # Python 3.10: anyio brings the backport
        from exceptiongroup import BaseExceptionGroup as found  # type: ignore[import-not-found,no-redef,unused-ignore]
    return found


def _describe(error: BaseException | None) -> str:
    group = _exception_group()
    while isinstance(error, group) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return "it did not answer the MCP handshake in time"
    return f"{type(error).__name__}: {error}" if error is not None else "unknown error"


class Proxy:
    """The request handlers: pass through, shape tool results, serve read_fields."""

    def __init__(self, downstream: Downstream, settings: Settings, budget: int = DEFAULT_BUDGET) -> None:
        self.downstream = downstream
        self.settings = settings
        self.budget = budget
        self.read_tool = READ_TOOL
        self.shaped: list[str] = []  # kinds of the answers given, for tests and benchmarks

    async def choose_read_tool(self) -> str:
        """``read_fields``, or ``pflow_structure_read_fields`` when the downstream has a tool of that
        name; decided once, over every page of the downstream's tool list."""
        from mcp import types

        from pflow_structure.mcp.compat import to_dict

        names: set[str] = set()
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            page = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            listing = to_dict(await self.downstream.request(functools.partial(_list_tools, page=page)))
            names.update(tool.get("name", "") for tool in listing.get("tools", []))
            cursor = listing.get("nextCursor")
            if not cursor:
                break
        self.read_tool = READ_TOOL if READ_TOOL not in names else f"pflow_structure_{READ_TOOL}"
        return self.read_tool

    # -- handlers -----------------------------------------------------------------------------
    def handlers(self, capabilities: dict[str, Any]) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        from pflow_structure.mcp.compat import paged

        found: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
        }
        if "prompts" in capabilities:
            found["prompts/list"] = self._passing("ListPromptsResult", lambda s, p: paged(s.list_prompts, p))
            found["prompts/get"] = self._passing(
                "GetPromptResult", lambda s, p: s.get_prompt(p.name, arguments=p.arguments)
            )
        if "resources" in capabilities:
            found["resources/list"] = self._passing("ListResourcesResult", lambda s, p: paged(s.list_resources, p))
            found["resources/templates/list"] = self._passing(
                "ListResourceTemplatesResult", lambda s, p: paged(s.list_resource_templates, p)
            )
            found["resources/read"] = self._passing("ReadResourceResult", lambda s, p: s.read_resource(p.uri))
        return found

    def _passing(self, result_type: str, call: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any], Any]:
        async def handler(params: Any) -> Any:
            from mcp import types

            from pflow_structure.mcp.compat import to_dict

            answer = await self._downstream_or_protocol_error(lambda session: call(session, params))
            return getattr(types, result_type).model_validate(to_dict(answer))

        return handler

    async def _downstream_or_protocol_error(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        from pflow_structure.mcp.compat import protocol_error

        try:
            return await self.downstream.request(call)
        except DownstreamError as exc:
            raise protocol_error(INTERNAL_ERROR, str(exc)) from None

    async def list_tools(self, params: Any) -> Any:
        from mcp import types

        from pflow_structure.mcp.compat import paged, to_dict

        listing = to_dict(await self._downstream_or_protocol_error(lambda session: paged(session.list_tools, params)))
        tools = [{k: v for k, v in tool.items() if k != "outputSchema"} for tool in listing.get("tools", [])]
        if not getattr(params, "cursor", None):
            tools.append(
                {"name": self.read_tool, "description": READ_TOOL_DESCRIPTION, "inputSchema": READ_TOOL_SCHEMA}
            )
        return types.ListToolsResult.model_validate({**listing, "tools": tools})

    async def call_tool(self, params: Any) -> Any:
        from mcp import types

        from pflow_structure.mcp.compat import call_tool_unchecked, to_dict, tool_result

        name = params.name
        arguments = dict(params.arguments or {})
        if name == self.read_tool:
            return await self._read_fields(arguments)
        try:
            raw = await self.downstream.request(lambda session: call_tool_unchecked(session, name, arguments))
        except DownstreamError as exc:
            self._log(name, len(_json_bytes(arguments)), str(exc), stage="call")
            return tool_result(None, f"Error: {exc}", is_error=True)
        result = to_dict(raw)
        try:
            shaped = await anyio.to_thread.run_sync(self._shape, name, arguments, result)
            answer = raw if shaped.kind == "passed" else types.CallToolResult.model_validate(shaped.result)
            answer.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")  # it must reach the client
        except Exception as exc:
            self._log(name, len(_json_bytes(result)), exc, stage="transform")
            self.shaped.append("fallback")
            return raw
        self.shaped.append(shaped.kind)
        return answer

    # -- work ---------------------------------------------------------------------------------
    def _shape(self, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> Any:
        from pflow_structure.render.tokens import count_tokens
        from pflow_structure.service import store_outputs

        def store(tool_name: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
            return store_outputs(f"mcp:{tool_name}", args, {"result": value}, settings=self.settings)

        def count(text: str) -> int:
            # Exact up to a few megabytes (about 8 MB/s); beyond that only "over the budget" matters.
            return count_tokens(text) if len(text) <= EXACT_COUNT_CHARS else (len(text) + 3) // 4

        def render(value: Any) -> tuple[str, str]:
            from pflow_structure.render.auto import render_auto

            rendered = render_auto(value, operation=tool, failure_log=self.settings.failure_log)
            return rendered.text, rendered.format

        return shape_result(
            tool,
            arguments,
            result,
            budget=self.budget,
            count=count,
            store=store,
            read_tool=self.read_tool,
            render=render,
        )

    async def _read_fields(self, arguments: dict[str, Any]) -> Any:
        from pflow_structure.mcp.server import answer_from, answer_read_text, error_result
        from pflow_structure.service import read_fields

        try:
            execution_id, paths, limit, offset = _read_arguments(arguments)
        except ParameterError as exc:
            return error_result(exc)
        format_name = arguments.get("format") or "json"
        if format_name != "json":  # the service refuses a name that is not in READ_FORMATS
            return await answer_read_text(execution_id, paths, format_name, limit, offset, self.settings)
        return await answer_from(
            lambda: read_fields(execution_id, paths, limit=limit, offset=offset, settings=self.settings)
        )

    def _log(self, tool: str, input_bytes: int, error: BaseException | str, *, stage: str) -> None:
        record = failure_record(tool, input_bytes, error, stage=stage, source="mcp-proxy", command=self.downstream.name)
        append_failure(self.settings.failure_log, record)


def _list_tools(session: Any, page: Any) -> Any:
    from pflow_structure.mcp.compat import paged

    return paged(session.list_tools, page)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, default=repr, ensure_ascii=False).encode("utf-8", "replace")


def _read_arguments(arguments: dict[str, Any]) -> tuple[str, list[str], int | None, int]:
    execution_id = arguments.get("execution_id")
    paths = arguments.get("field_paths")
    if not isinstance(execution_id, str) or not execution_id:
        raise ParameterError("execution_id is required: the execution_id from the cached answer")
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        raise ParameterError('field_paths must be a list of paths, e.g. ["result[0].name"]')
    limit, offset = arguments.get("limit"), arguments.get("offset", 0)
    for label, number in (("limit", limit), ("offset", offset)):
        if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < 0):
            raise ParameterError(f"{label} must be a whole number of at least 0, not {number!r}")
    return execution_id, paths, limit, offset or 0


INSTRUCTIONS = (
    "Answers from this server come through pflow-structure: a result too large to show comes back as an "
    "execution_id and its structure (template paths such as result[0].name with types and counts); call "
    "{read_tool} with that execution_id and only the paths you need."
)


async def serve(
    command: list[str],
    settings: Settings,
    *,
    budget: int = DEFAULT_BUDGET,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    streams: tuple[Any, Any] | None = None,
    ready: Callable[[Proxy], None] | None = None,
) -> None:
    """Run the proxy until the client disconnects (stdio, or the given server-side ``streams``)."""
    from importlib.metadata import version

    from pflow_structure.mcp.compat import lowlevel_server, protocol_error_class, run_stdio

    failure: BaseException | None = None
    async with anyio.create_task_group() as group:
        downstream = Downstream(command, group, start_timeout=start_timeout)
        group.start_soon(_warm_up)  # while the downstream process starts
        try:
            connection = await downstream.connection()
        except DownstreamError as exc:
            failure = exc
            group.cancel_scope.cancel()
        else:
            proxy = Proxy(downstream, settings, budget)
            if "tools" in connection.init.get("capabilities", {}):
                with contextlib.suppress(DownstreamError, protocol_error_class()):
                    await proxy.choose_read_tool()  # else "read_fields"; a dead downstream restarts on the next call
            info = connection.init.get("serverInfo", {})
            instructions = "\n\n".join(
                part
                for part in (connection.init.get("instructions"), INSTRUCTIONS.format(read_tool=proxy.read_tool))
                if part
            )
            server = lowlevel_server(
                f"{info.get('name', 'mcp-server')} via pflow-structure",
                version("pflow-structure"),
                instructions,
                proxy.handlers(connection.init.get("capabilities", {})),
            )
            if ready is not None:
                ready(proxy)
            if streams is None:
                await run_stdio(server)
            else:
                await server.run(streams[0], streams[1], server.create_initialization_options())
            await downstream.close()
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _warm_up() -> None:
    """Load the o200k vocabulary (about a second) and the modules a first answer needs while the
    client is still connecting; a call arriving meanwhile waits for the same load, not a second one."""

    def load() -> None:
        import pflow_structure.service
        import pflow_structure.structure  # noqa: F401
        from pflow_structure.render.tokens import count_tokens

        count_tokens("")

    await anyio.to_thread.run_sync(load)


def run(command: list[str], settings: Settings, *, budget: int, start_timeout: float) -> None:
    """Blocking entry point for the CLI."""
    try:
        anyio.run(lambda: serve(command, settings, budget=budget, start_timeout=start_timeout))
    except DownstreamError as exc:
        raise StructureError(str(exc)) from None
    except KeyboardInterrupt:
        print("pflow-structure proxy: interrupted", file=sys.stderr)
