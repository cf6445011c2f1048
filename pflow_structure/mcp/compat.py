"""The one import site of the MCP SDK, for both majors.

mcp 1.x (which pflow-cli needs) calls the high-level server ``FastMCP`` in
``mcp.server.fastmcp``; mcp 2.x renamed it ``MCPServer`` in ``mcp.server.mcpserver`` and
made importing the old module raise. Everything else we use (``mcp.types`` with camelCase
field names, ``ClientSession``, ``stdio_client``) has the same spelling in both.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


def server_class() -> Any:
    """``MCPServer`` (mcp 2.x) or ``FastMCP`` (mcp 1.x)."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined,unused-ignore]  # mcp 1.x only

        return FastMCP
    return MCPServer


def context_class() -> Any:
    """The type a tool function names to receive its request's context (``Context`` in both majors)."""
    try:
        from mcp.server.mcpserver import Context
    except ImportError:
        from mcp.server.fastmcp import Context  # type: ignore[attr-defined,no-redef,unused-ignore]  # mcp 1.x only
    return Context


def client_info(context: Any) -> dict[str, Any] | None:
    """The ``clientInfo`` the session's client sent in ``initialize`` (as a dict), or None (a stateless
    HTTP request, a client that sent none)."""
    params = getattr(getattr(context, "session", None), "client_params", None)
    info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
    return to_dict(info) if info is not None else None


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
    accepted = inspect.signature(cls.__init__).parameters
    if "host" in accepted:
        options["host"] = host
    if "log_level" in accepted:  # the SDK's INFO lines (one per HTTP request) are noise in a client's log
        options["log_level"] = "WARNING"
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


def to_dict(model: Any) -> dict[str, Any]:
    """A protocol object as its JSON form (camelCase keys in both majors), with only the fields we set:
    mcp 2.x fills defaults such as ``resultType`` that older protocol versions do not define."""
    found: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, exclude_unset=True, mode="json")
    return found


# -- the proxy's transports, as streams of JSON-RPC messages ----------------------------------
# The proxy relays messages (dicts) between its client and its upstream; these are the only
# places that know the SDK's message classes and client transports.

SSE_READ_TIMEOUT = 300.0  # seconds an open event stream may stay silent (the SDK's own default)


def message_dict(message: Any) -> dict[str, Any]:
    """A ``SessionMessage``'s JSON-RPC message as its JSON form (1.x wraps it in a root model)."""
    found: dict[str, Any] = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return found


def session_message(data: dict[str, Any]) -> Any:
    """A JSON-RPC message (a dict) as the ``SessionMessage`` the SDK's streams carry."""
    from mcp import types
    from mcp.shared.message import SessionMessage

    adapter = getattr(types, "jsonrpc_message_adapter", None)  # mcp 2.x: the message is a plain union
    if adapter is not None:
        return SessionMessage(adapter.validate_python(data))
    return SessionMessage(types.JSONRPCMessage.model_validate(data))  # type: ignore[attr-defined,unused-ignore]


@contextlib.asynccontextmanager
async def as_dicts(read_stream: Any, write_stream: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``SessionMessage`` streams as (receive, send) streams of dicts; an exception the
    transport reports comes through as it is. Closing ``send`` closes ``write_stream``."""
    import anyio

    incoming_send, incoming = anyio.create_memory_object_stream[Any](64)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](64)
    closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)

    async def pump_in() -> None:
        async with incoming_send:
            with contextlib.suppress(*closed):
                async for item in read_stream:
                    await incoming_send.send(item if isinstance(item, Exception) else message_dict(item))

    async def pump_out() -> None:
        with contextlib.suppress(*closed):
            async with outgoing_receive, write_stream:
                async for message in outgoing_receive:
                    await write_stream.send(session_message(message))

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        try:
            yield incoming, outgoing
        finally:
            group.cancel_scope.cancel()


def open_http(url: str, transport: str, headers: dict[str, str], timeout: float, on_response: Any) -> Any:
    """Connect to ``url`` (``"streamable-http"`` or ``"sse"``) and yield (receive, send) streams of dicts.

    ``timeout`` bounds connecting, sending and each wait for an answer; an event stream may stay
    silent ``SSE_READ_TIMEOUT``. ``on_response(response)`` sees every HTTP response (the proxy
    reads 401 and 403 from it: the SDK turns them into a generic error)."""
    from mcp.shared import _httpx_utils

    httpx_module: Any = getattr(_httpx_utils, "httpx2", None) or _httpx_utils.httpx  # type: ignore[attr-defined,unused-ignore]

    def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        client = _httpx_utils.create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks = {**client.event_hooks, "response": [*client.event_hooks["response"], on_response]}
        return client

    @contextlib.asynccontextmanager
    async def connect() -> Any:
        async with sdk_streams() as (read_stream, write_stream), as_dicts(read_stream, write_stream) as streams:
            yield streams

    @contextlib.asynccontextmanager
    async def sdk_streams() -> Any:
        if transport == "sse":
            from mcp.client.sse import sse_client

            read_timeout = max(timeout, SSE_READ_TIMEOUT)
            async with sse_client(
                url, headers=headers, timeout=timeout, sse_read_timeout=read_timeout, httpx_client_factory=factory
            ) as streams:
                yield streams[0], streams[1]
            return
        from mcp.client import streamable_http

        if hasattr(streamable_http, "streamable_http_client"):  # mcp 2.x: the caller brings the client
            limits = httpx_module.Timeout(timeout, read=max(timeout, SSE_READ_TIMEOUT))
            async with (
                factory(headers=headers, timeout=limits) as client,
                streamable_http.streamable_http_client(url, http_client=client) as streams,
            ):
                yield streams[0], streams[1]
            return
        async with streamable_http.streamablehttp_client(  # type: ignore[attr-defined,unused-ignore]  # mcp 1.x
            url, headers=headers, timeout=timeout, sse_read_timeout=SSE_READ_TIMEOUT, httpx_client_factory=factory
        ) as streams:
            yield streams[0], streams[1]

    return connect()
