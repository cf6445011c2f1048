"""The one import site of the MCP SDK, for both majors.

mcp 1.x (which pflow-cli needs) calls the high-level server ``FastMCP`` in
``mcp.server.fastmcp``; mcp 2.x renamed it ``MCPServer`` in ``mcp.server.mcpserver`` and
made importing the old module raise. Everything else we use (``mcp.types`` with camelCase
field names, ``ClientSession``, ``stdio_client``) has the same spelling in both.
"""

from __future__ import annotations

from typing import Any


def server_class() -> Any:
    """``MCPServer`` (mcp 2.x) or ``FastMCP`` (mcp 1.x)."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined,unused-ignore]  # mcp 1.x only

        return FastMCP
    return MCPServer


def sdk_version() -> str:
    from importlib.metadata import version

    return version("mcp")


def tool_result(structured: Any, text: str, *, is_error: bool = False) -> Any:
    """A ``CallToolResult``: ``structured`` as structuredContent (omitted when None), ``text`` as its one text block."""
    from mcp import types

    fields: dict[str, Any] = {"content": [types.TextContent(type="text", text=text)], "isError": is_error}
    if structured is not None:
        fields["structuredContent"] = structured
    return types.CallToolResult(**fields)


def new_server(name: str, instructions: str, host: str) -> Any:
    """The server object; mcp 1.x decides DNS-rebinding protection from ``host`` at construction."""
    import inspect

    cls = server_class()
    options: dict[str, Any] = {"instructions": instructions}
    if "host" in inspect.signature(cls.__init__).parameters:
        options["host"] = host
    return cls(name, **options)


def http_app(server: Any, host: str) -> Any:
    """The streamable-HTTP ASGI app (path ``/mcp``), stateless with plain JSON answers.

    Stateless: no session lives in the process, so any instance behind a load balancer answers any
    request (no affinity); JSON: each POST gets one JSON reply, not an SSE stream. mcp 2.x takes both
    (and ``host``) as arguments here; 1.x reads them from the server's settings.
    """
    import inspect

    accepted = inspect.signature(server.streamable_http_app).parameters
    if "stateless_http" in accepted:
        options = {"stateless_http": True, "json_response": True}
        if "host" in accepted:
            options["host"] = host  # type: ignore[assignment]
        return server.streamable_http_app(**options)
    server.settings.stateless_http = True
    server.settings.json_response = True
    return server.streamable_http_app()


# The low-level server, for the proxy: handlers take the request's params and return a result
# model. mcp 1.x registers them in ``Server.request_handlers`` keyed by request class and wraps
# results in ``ServerResult``; mcp 2.x takes them as ``on_*`` constructor arguments.
_LOWLEVEL = {
    "tools/list": ("on_list_tools", "ListToolsRequest"),
    "tools/call": ("on_call_tool", "CallToolRequest"),
    "prompts/list": ("on_list_prompts", "ListPromptsRequest"),
    "prompts/get": ("on_get_prompt", "GetPromptRequest"),
    "resources/list": ("on_list_resources", "ListResourcesRequest"),
    "resources/templates/list": ("on_list_resource_templates", "ListResourceTemplatesRequest"),
    "resources/read": ("on_read_resource", "ReadResourceRequest"),
}


def lowlevel_server(name: str, version: str, instructions: str | None, handlers: dict[str, Any]) -> Any:
    """A low-level ``Server`` answering the methods in ``handlers`` (keys as in ``_LOWLEVEL``)."""
    import inspect

    from mcp import types
    from mcp.server.lowlevel import Server

    unknown = set(handlers) - set(_LOWLEVEL)
    if unknown:
        raise ValueError(f"no low-level handler for {sorted(unknown)}")
    if "on_call_tool" in inspect.signature(Server.__init__).parameters:  # mcp 2.x
        options = {_LOWLEVEL[method][0]: _drop_context(handler) for method, handler in handlers.items()}
        return Server(name, version=version, instructions=instructions, **options)
    server = Server(name, version=version, instructions=instructions)
    for method, handler in handlers.items():
        request_class = getattr(types, _LOWLEVEL[method][1])
        handlers_1x = server.request_handlers  # type: ignore[attr-defined,unused-ignore]  # mcp 1.x only
        handlers_1x[request_class] = _wrap_result(handler, types.ServerResult)
    return server


def _drop_context(handler: Any) -> Any:
    async def call(_context: Any, params: Any) -> Any:
        return await handler(params)

    return call


def _wrap_result(handler: Any, server_result: Any) -> Any:
    async def call(request: Any) -> Any:
        return server_result(await handler(request.params))

    return call


async def run_stdio(server: Any, *, linger: float = 1.0) -> None:
    """Serve a low-level server on this process's stdin and stdout until the client leaves.

    When stdin ends, handlers still running get ``linger`` seconds and are then cancelled:
    mcp before 1.30 would otherwise wait for them (forever, for a downstream call that hangs).
    """
    import anyio
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](16)
        async with anyio.create_task_group() as group:

            async def relay_then_stop() -> None:
                await relay(read_stream, send)
                await anyio.sleep(linger)
                group.cancel_scope.cancel()

            group.start_soon(relay_then_stop)
            await server.run(receive, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()


async def relay(source: Any, sink: Any) -> None:
    """Pass every message from ``source`` to ``sink`` until ``source`` ends; then close ``sink``.

    Between the SDK's stream and a session, so the caller knows the moment the other side's
    output ends (the proxy: its downstream exited; the server: its client left)."""
    import anyio

    try:
        async with sink:
            async for message in source:
                await sink.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass


def protocol_error_class() -> type[Exception]:
    """The exception a session raises for a JSON-RPC error (``MCPError`` in 2.x, ``McpError`` in 1.x);
    raised from a server handler, it becomes the same JSON-RPC error for our client."""
    from mcp.shared import exceptions

    found: type[Exception] = getattr(exceptions, "MCPError", None) or getattr(exceptions, "McpError")  # noqa: B009
    return found


def to_dict(model: Any) -> dict[str, Any]:
    """A protocol object as its JSON form (camelCase keys in both majors)."""
    found: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return found


def protocol_error(code: int, message: str) -> Exception:
    """A JSON-RPC error to raise from a low-level handler."""
    from mcp.types import ErrorData

    cls: Any = protocol_error_class()
    try:
        return cls(ErrorData(code=code, message=message))  # type: ignore[no-any-return]  # mcp 1.x
    except TypeError:
        return cls(code, message)  # type: ignore[no-any-return]  # mcp 2.x


def paged(method: Any, params: Any) -> Any:
    """Call a client ``list_*`` method with the request's paging params: ``params=`` where the SDK
    takes it (mcp 2.x and later 1.x), else the plain ``cursor`` of earlier 1.x releases."""
    import inspect

    if "params" in inspect.signature(method).parameters:
        return method(params=params)
    return method(getattr(params, "cursor", None))


async def call_tool_unchecked(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    """``tools/call`` without the client's check of ``structuredContent`` against the tool's output
    schema (``ClientSession.call_tool`` raises on a mismatch, and 1.x lists the tools first): the
    proxy passes results on, and its own client sees no output schema."""
    from mcp import types

    request: Any = types.CallToolRequest(
        method="tools/call", params=types.CallToolRequestParams(name=name, arguments=arguments)
    )
    if isinstance(types.ClientRequest, type):  # mcp 1.x wraps requests in a root model
        request = types.ClientRequest(request)
    return await session.send_request(request, types.CallToolResult)
