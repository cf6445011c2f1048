"""A real stdio MCP server for the proxy's tests: well-behaved tools and faulty ones.

Run as ``python tests/servers/faulty_mcp_server.py`` (it ignores its arguments). It speaks the
protocol itself, one JSON-RPC message a line, as tests/servers/echo_mcp_server.py does, without the
SDK: importing the SDK costs a process about 1.4 s of CPU, and the suite starts this server about 20
times on each Python CI runs it on. SDK servers stand behind the proxy elsewhere: the npm servers
(the TypeScript SDK) and ``pflow-structure serve`` (the Python SDK, tests/test_mcp_proxy_remote.py).
Each tool call runs on its own thread, so a long call (``sleep``) does not hold up the others, as in
an SDK server; the end of the input ends the process, calls in flight or not. One prompt and one
resource, so that pass-through can be checked; ``add_tool`` changes the tool list while the session runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

WRITING = threading.Lock()


class ToolFailed(Exception):
    """A tool error: answered as a result with ``isError``, as MCP wants for a tool's own failure."""


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


def _die(_: dict[str, Any]) -> str:
    sys.stdout.flush()
    os._exit(3)


def _sleep(arguments: dict[str, Any]) -> str:
    time.sleep(float(arguments.get("seconds", 300)))
    return "slept"


def _last_words(_: dict[str, Any]) -> str:
    threading.Timer(0.2, os._exit, args=(0,)).start()
    return "my last words"


def _add_tool(_: dict[str, Any]) -> str:
    """Adds the tool ``added`` and says so (``notifications/tools/list_changed``) before answering."""
    TOOLS["added"] = ("A tool add_tool added while the session ran.", {}, lambda _: "added")
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    return "added a tool"


def _fail(_: dict[str, Any]) -> str:
    raise ToolFailed("the tool failed on purpose")


# name: (description, properties of the input schema, what the call answers with its arguments)
TOOLS: dict[str, tuple[str, dict[str, Any], Callable[[dict[str, Any]], str]]] = {
    "small": ("Small pretty-printed JSON.", {}, lambda _: json.dumps({"ok": True, "items": [1, 2, 3]}, indent=2)),
    "big": (
        "count records as pretty-printed JSON text.",
        {"count": {"type": "integer", "default": 500}},
        lambda arguments: json.dumps(_records(int(arguments.get("count", 500))), indent=2),
    ),
    "malformed": (
        "Text that starts like JSON and is cut off.",
        {"size": {"type": "integer", "default": 10}},
        lambda arguments: json.dumps(_records(int(arguments.get("size", 10))), indent=2)[:-40],
    ),
    "die": ("Exits the server process in the middle of the call.", {}, _die),
    "fail": ("A tool error.", {}, _fail),
    "add_tool": ("Adds the tool added, and tells the client its tool list changed.", {}, _add_tool),
    "plain": (
        "Plain text, one line per item.",
        {"lines": {"type": "integer", "default": 5}},
        lambda arguments: "\n".join(f"line {n}: some plain text" for n in range(int(arguments.get("lines", 5)))),
    ),
    "pid": ("This server's process id.", {}, lambda _: str(os.getpid())),
    "sleep": ("Sleeps, then answers.", {"seconds": {"type": "number", "default": 300}}, _sleep),
    "last_words": ("Answers, then the process exits a moment later.", {}, _last_words),
    "surrogate": (
        "Small JSON with an escaped lone surrogate (a cut emoji, as real APIs send).",
        {},
        lambda _: '{"name": "bad \\ud800 char", "price": 19.90, "big": 1e400, "dup": 1, "dup": 2}',
    ),
}
if os.environ.get("FAULTY_SERVER_READ_FIELDS") == "1":
    TOOLS["read_fields"] = (
        "The downstream's own read_fields.",
        {"execution_id": {"type": "string", "default": ""}},
        lambda arguments: f"downstream read_fields got {arguments.get('execution_id', '')}",
    )
if os.environ.get("FAULTY_SERVER_BIG_ERROR") == "1":  # benchmarks/large.py: a large result passed on as an error

    def _big_error(arguments: dict[str, Any]) -> str:
        raise ToolFailed(json.dumps(_records(int(arguments.get("count", 500))), indent=2))

    TOOLS["big_error"] = ("count records as pretty-printed JSON text, in an error result.", {}, _big_error)
    TOOLS["big_structured"] = (  # its result: the records as text and, beside it, as structuredContent (call_tool)
        "count records, as text and as structuredContent.",
        {},
        lambda _: "",
    )
if os.environ.get("FAULTY_SERVER_EXTRA_TOOL"):  # a tool of the name a test needs (a gateway's name clash)
    EXTRA = os.environ["FAULTY_SERVER_EXTRA_TOOL"]
    TOOLS[EXTRA] = (f"The downstream's own {EXTRA}.", {}, lambda _: f"downstream {EXTRA}")

PROMPT = {
    "name": "greet",
    "description": "A greeting prompt.",
    "arguments": [{"name": "name", "required": True}],
}
RESOURCE = {"uri": "note://hello", "name": "hello_note", "description": "A short note.", "mimeType": "text/plain"}


def _tool_list() -> list[dict[str, Any]]:
    return [
        {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}}
        for name, (description, properties, _) in TOOLS.items()
    ]


def _text(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def call_tool(params: dict[str, Any]) -> dict[str, Any]:
    found = TOOLS.get(params.get("name", ""))
    if params.get("name") == "big_structured" and found is not None:
        structured = {"records": _records(int((params.get("arguments") or {}).get("count", 500)))}
        return {**_text(json.dumps(structured, indent=2)), "structuredContent": structured}
    if found is None:
        return _text(f"Unknown tool: {params.get('name')}", is_error=True)
    try:
        return _text(found[2](params.get("arguments") or {}))
    except ToolFailed as failure:
        return _text(str(failure), is_error=True)


def result_of(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result for ``method``, or None when this server has no such method."""
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": False}, "resources": {}},
            "serverInfo": {"name": "faulty-test-server", "version": "1.0"},
            "instructions": "A test server with tools that misbehave on purpose.",
        }
    answers: dict[str, Callable[[], dict[str, Any]]] = {
        "ping": dict,
        "tools/list": lambda: {"tools": _tool_list()},
        "prompts/list": lambda: {"prompts": [PROMPT]},
        "prompts/get": lambda: {
            "description": PROMPT["description"],
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "text", "text": f"Say hello to {params.get('arguments', {}).get('name')}."},
                }
            ],
        },
        "resources/list": lambda: {"resources": [RESOURCE]},
        "resources/templates/list": lambda: {"resourceTemplates": []},
        "resources/read": lambda: {
            "contents": [{"uri": params.get("uri"), "mimeType": "text/plain", "text": "hello from the faulty server"}]
        },
    }
    answer = answers.get(method)
    return None if answer is None else answer()


def send(message: dict[str, Any]) -> None:
    with WRITING:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer_call(request_id: Any, params: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": call_tool(params)})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or an answer to a request this server never sends
        method, params = message["method"], message.get("params") or {}
        if method == "tools/call":
            threading.Thread(target=answer_call, args=(message["id"], params), daemon=True).start()
            continue
        result = result_of(method, params)
        if result is None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
