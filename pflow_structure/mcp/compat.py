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
    """The streamable-HTTP ASGI app (path ``/mcp``); mcp 2.x takes ``host`` here instead."""
    import inspect

    if "host" in inspect.signature(server.streamable_http_app).parameters:
        return server.streamable_http_app(host=host)
    return server.streamable_http_app()
