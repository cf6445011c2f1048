"""A real stdio MCP server for the proxy's tests: well-behaved tools and faulty ones.

Run as ``python tests/servers/faulty_mcp_server.py``. Built on the SDK's high-level server
(either major, through ``pflow_structure.mcp.compat``), with one prompt and one resource so
pass-through can be checked.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pflow_structure.mcp.compat import new_server, tool_result

server = new_server("faulty-test-server", "A test server with tools that misbehave on purpose.", "127.0.0.1")


def _records(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": index,
            "title": f"Record {index}: a title long enough to count",
            "state": "open" if index % 3 else "closed",
            "labels": [{"name": "bug"}, {"name": f"area-{index % 7}"}],
        }
        for index in range(count)
    ]


@server.tool(description="Small pretty-printed JSON.")
def small():
    return tool_result(None, json.dumps({"ok": True, "items": [1, 2, 3]}, indent=2))


@server.tool(description="count records as pretty-printed JSON text.")
def big(count: int = 500):
    return tool_result(None, json.dumps(_records(count), indent=2))


@server.tool(description="Text that starts like JSON and is cut off.")
def malformed(size: int = 10):
    return tool_result(None, json.dumps(_records(size), indent=2)[:-40])


@server.tool(description="Exits the server process in the middle of the call.")
def die():
    sys.stdout.flush()
    os._exit(3)


@server.tool(description="A tool error.")
def fail():
    return tool_result(None, "the tool failed on purpose", is_error=True)


@server.tool(description="Plain text, one line per item.")
def plain(lines: int = 5):
    return tool_result(None, "\n".join(f"line {index}: some plain text" for index in range(lines)))


@server.tool(description="This server's process id.")
def pid():
    return tool_result(None, str(os.getpid()))


@server.tool(description="Sleeps, then answers.")
def sleep(seconds: float = 300):
    time.sleep(seconds)
    return tool_result(None, "slept")


@server.tool(description="Answers, then the process exits a moment later.")
def last_words():
    threading.Timer(0.2, os._exit, args=(0,)).start()
    return tool_result(None, "my last words")


@server.tool(description="Small JSON with an escaped lone surrogate (a cut emoji, as real APIs send).")
def surrogate():
    return tool_result(None, '{"name": "bad \\ud800 char", "price": 19.90, "big": 1e400, "dup": 1, "dup": 2}')


if os.environ.get("FAULTY_SERVER_READ_FIELDS") == "1":

    @server.tool(name="read_fields", description="The downstream's own read_fields.")
    def own_read_fields(execution_id: str = ""):
        return tool_result(None, f"downstream read_fields got {execution_id}")


@server.prompt(description="A greeting prompt.")
def greet(name: str) -> str:
    return f"Say hello to {name}."


@server.resource("note://hello", description="A short note.")
def hello_note() -> str:
    return "hello from the faulty server"


if __name__ == "__main__":
    server.run()
