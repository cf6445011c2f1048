"""A minimal stdio MCP server, without the SDK, that answers each tool call with the exact bytes
of the ``arguments`` it received (for the proxy's byte-for-byte test).

Run as ``python tests/servers/echo_mcp_server.py``. Tools: ``echo`` (any arguments),
``echo_typed`` (``text``: string, ``items``: array, ``count``: integer), so a test can check
how the proxy passes a referenced value where a schema wants a string, ``calls`` (how many
echo calls reached this server, so a test can check that a refused call never did), and
``echo_own_want`` (an argument named ``_want`` of its own, which the proxy must leave to it).
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Answers with the raw arguments it got.", "inputSchema": {"type": "object"}},
    {
        "name": "echo_typed",
        "description": "Answers with the raw arguments it got.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string"}},
                "count": {"type": "integer"},
                "nested": {"type": "object", "properties": {"note": {"type": ["string", "null"]}}},
            },
        },
    },
    {"name": "calls", "description": "How many tool calls came before this one.", "inputSchema": {"type": "object"}},
    {
        "name": "echo_own_want",
        "description": "Answers with the raw arguments it got; has a _want argument of its own.",
        "inputSchema": {"type": "object", "properties": {"_want": {"type": "string"}}},
    },
]
CALLS = [0]


def raw_arguments(line: str) -> str:
    """The ``arguments`` value exactly as written in the request line."""
    decoder = json.JSONDecoder()
    start = line.index('"arguments":') + len('"arguments":')
    while line[start] == " ":
        start += 1
    _, end = decoder.raw_decode(line, start)
    return line[start:end]


def answer(message: dict[str, Any], line: str) -> dict[str, Any] | None:
    method = message.get("method")
    if "id" not in message:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-test-server", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and message["params"]["name"] == "calls":
        result = {"content": [{"type": "text", "text": f"{CALLS[0]} calls before"}], "isError": False}
    elif method == "tools/call":
        CALLS[0] += 1
        # A prefix keeps the proxy from re-encoding the answer: plain text passes as it is.
        result = {"content": [{"type": "text", "text": "ARGS " + raw_arguments(line)}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line), line)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
