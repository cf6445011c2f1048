"""A server of the MCP SDK's own (``FastMCP`` on mcp 1.x, ``MCPServer`` on 2.x) over streamable HTTP on
127.0.0.1, whose tool ``add_tool`` adds a tool while the session runs and tells the client
(``notifications/tools/list_changed``): server-everything changes its tools at initialisation only, so
this is the upstream of the proxy's mid-session list-change test over streamable HTTP.

Run as ``python tests/servers/list_changing_server.py PORT``.
"""

from __future__ import annotations

import sys

try:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef,attr-defined,unused-ignore]
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,attr-defined,unused-ignore]

server = Server("list-changing")


def added() -> str:
    """A tool that add_tool adds while the session runs."""
    return "added"


@server.tool()
async def add_tool(ctx: Context) -> str:  # type: ignore[type-arg,unused-ignore]
    """Add the tool ``added`` and tell the client that the tool list changed."""
    server.add_tool(added)
    await ctx.session.send_tool_list_changed()  # the notification itself, on both majors
    return "added a tool"


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
