"""`pflow-structure proxy --url` in front of real remote servers, and everything it passes through.

The upstreams are started for real on 127.0.0.1 (a free port each): the official
@modelcontextprotocol/server-everything over streamable HTTP and SSE (and stdio), which
reports progress, asks for sampling and elicitation and changes its tool list, and our own
`serve --http` behind its bearer token. The client is the SDK's own, over stdio to the proxy:
client -> proxy -> server. node listens on loopback only through tests/servers/loopback.cjs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.structure_text import cached, cached_id
from tests.test_mcp_proxy import PROXY, failures, npm_server, plain, texts

TIMEOUT = 120
LOOPBACK = REPO / "tests" / "servers" / "loopback.cjs"
STDIN_LOG = REPO / "tests" / "servers" / "stdin_log.py"
TOKEN = "pfs-test-token-7f3a9c1e5b"  # what the upstream expects; never to be seen anywhere else
WRONG = "pfs-wrong-token-2d8e4b6a0c"
# get-env answers with the server's environment: a long variable makes it larger than the budget
MARKED = {"PFLOW_TEST_MARK": "marked", "PFLOW_TEST_BULK": " ".join(f"word{index}" for index in range(1500))}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode} before listening on {port}")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {seconds} s")


def everything_command(transport: str) -> list[str]:
    script = os.path.realpath(npm_server("mcp-server-everything"))
    return ["node", "--require", str(LOOPBACK), script, transport]


@contextlib.contextmanager
def started(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        command, env={**os.environ, "PORT": str(port), **(env or {})}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


@contextlib.contextmanager
def everything(transport: str, port: int | None = None) -> Iterator[str]:
    """server-everything over ``transport`` ("streamableHttp" or "sse"); yields its URL."""
    port = port or free_port()
    with started(everything_command(transport), port, MARKED):
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'streamableHttp' else 'sse'}"


class Seen:
    """What reached the client besides answers: notifications, and the server's own requests."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.progress: list[float] = []
        self.sampled: list[str] = []
        self.elicited: list[str] = []
        self.roots_asked = 0
        self.logs: list[Any] = []

    async def message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            self.methods.append(method)

    async def sampling(self, context: Any, params: Any) -> Any:
        from mcp import types

        self.sampled.append(json.dumps(plain(params)))
        content = types.TextContent(type="text", text="a sampled answer from the client")
        return types.CreateMessageResult(role="assistant", content=content, model="test-model", stopReason="endTurn")

    async def elicitation(self, context: Any, params: Any) -> Any:
        from mcp import types

        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    async def roots(self, context: Any) -> Any:
        from mcp import types

        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/a-root", name="a root")])

    async def logging(self, params: Any) -> None:
        self.logs.append(plain(params))

    async def until(self, check: Callable[[], bool], seconds: float = 20) -> bool:
        for _ in range(int(seconds * 10)):
            if check():
                return True
            await asyncio.sleep(0.1)
        return check()


def innermost(error: BaseException) -> BaseException:
    while len(getattr(error, "exceptions", ())) == 1:  # ExceptionGroup (a builtin from Python 3.11)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return error


def through_proxy(
    args: list[str],
    work: Callable[[Any, Seen], Awaitable[Any]],
    env: dict[str, str] | None = None,
    stderr: Path | None = None,
) -> Any:
    """Start the proxy with ``args``, connect the SDK's client to it (declaring sampling, elicitation
    and roots), run ``work(client, seen)``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> Any:
        seen = Seen()
        server = StdioServerParameters(command=PROXY[0], args=[*PROXY[1:], *args], env={**os.environ, **(env or {})})
        with open(stderr or os.devnull, "w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(
                read, write, sampling_callback=seen.sampling, elicitation_callback=seen.elicitation,
                list_roots_callback=seen.roots, logging_callback=seen.logging, message_handler=seen.message,
            ) as client:  # fmt: skip
                await client.initialize()
                return await work(client, seen)

    return asyncio.run(asyncio.wait_for(main(), timeout=TIMEOUT))


async def everything_session(client: Any, seen: Seen) -> dict[str, Any]:
    """The acceptance walk: tools, list change, a large result read back, progress, sampling, elicitation."""
    found: dict[str, Any] = {}
    found["list_changed"] = await seen.until(lambda: "notifications/tools/list_changed" in seen.methods, 5)
    found["tools"] = [tool.name for tool in (await client.list_tools()).tools]
    env = plain(await client.call_tool("get-env", {}))
    found["env"] = env
    execution_id = cached_id(env)
    read = await client.call_tool(
        "read_fields", {"execution_id": execution_id, "field_paths": ["result.PFLOW_TEST_MARK"]}
    )
    found["read"] = plain(read)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.progress.append(value)

    arguments = {"duration": 1, "steps": 2}
    long = await client.call_tool("trigger-long-running-operation", arguments, progress_callback=progress)
    found["long"] = plain(long)
    found["sampling"] = plain(await client.call_tool("trigger-sampling-request", {"prompt": "say hi", "maxTokens": 5}))
    found["elicitation"] = plain(await client.call_tool("trigger-elicitation-request", {}))
    found["roots_asked"] = await seen.until(lambda: seen.roots_asked > 0, 5)
    # a list change mid-session, on the server's own event stream: gzip-file-as-resource adds a resource (a
    # data: URI, nothing fetched). Its tools change at initialisation only (registerConditionalTools).
    gzip = {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}
    found["gzip"] = plain(await client.call_tool("gzip-file-as-resource", gzip))
    found["resources_changed"] = await seen.until(lambda: "notifications/resources/list_changed" in seen.methods, 10)
    return found


def check_everything(found: dict[str, Any], seen: Seen, *, list_changed: bool = True) -> None:
    if list_changed:
        assert found["list_changed"] is True
    tools = found["tools"]
    assert tools[-2:] == ["read_fields", "edit_fields"]
    for name in ("echo", "get-env", "trigger-long-running-operation", "trigger-sampling-request",
                 "trigger-elicitation-request", "get-roots-list"):  # fmt: skip
        assert name in tools  # the last three only exist for a client that declared the capability
    structured = cached(found["env"])
    assert structured["structure"]["result"] == {"type": "dict"}  # its keys may be filtered: many variables
    assert found["read"]["structuredContent"] == {"result.PFLOW_TEST_MARK": "marked"}
    assert texts(found["long"]) == ["Long running operation completed. Duration: 1 seconds, Steps: 2."]
    assert seen.progress == [1, 2]
    assert len(seen.sampled) == 1 and "say hi" in seen.sampled[0]
    assert "a sampled answer from the client" in texts(found["sampling"])[0]
    assert seen.elicited == ["Please provide inputs for the following fields:"]
    assert "Ada Lovelace" in "".join(texts(found["elicitation"]))
    assert found["roots_asked"] is True
    assert found["gzip"]["content"][0]["type"] == "resource_link" and found["resources_changed"] is True
    assert failures() == []


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
def test_server_everything_behind_the_proxy_over_http(transport: str) -> None:
    with everything(transport) as url:
        args = ["--url", url] + (["--transport", "sse"] if transport == "sse" else [])
        seen_box: list[Seen] = []

        async def work(client: Any, seen: Seen) -> Any:
            seen_box.append(seen)
            return await everything_session(client, seen)

        found = through_proxy(args, work)
    # server-everything announces its conditional tools the moment it is initialised, and never again
    # (no tool of 2026.8.31 changes its tool list later); over streamable HTTP that is before any client
    # has its event stream open, so no client gets it (the SDK's client connected directly does not
    # either): the stdio and SSE runs check tools/list_changed; all three check a resources/list_changed
    # sent mid-session, and the next test a tools/list_changed sent mid-session over streamable HTTP.
    check_everything(found, seen_box[0], list_changed=transport == "sse")


def test_a_tool_added_mid_session_over_streamable_http_reaches_the_client_as_a_list_change() -> None:
    """server-everything changes its tools at initialisation only; the SDK's own server adds one when
    asked, mid-session, and the proxy tells its client, whose next tools/list has it (with ours after)."""
    port = free_port()
    command = [sys.executable, str(REPO / "tests" / "servers" / "list_changing_server.py"), str(port)]

    async def work(client: Any, seen: Seen) -> Any:
        before = [tool.name for tool in (await client.list_tools()).tools]
        answer = plain(await client.call_tool("add_tool", {}))
        changed = await seen.until(lambda: "notifications/tools/list_changed" in seen.methods, 10)
        after = [tool.name for tool in (await client.list_tools()).tools]
        return before, texts(answer), changed, after

    with started(command, port):
        before, answer, changed, after = through_proxy(["--url", f"http://127.0.0.1:{port}/mcp"], work)
    assert before == ["add_tool", "read_fields", "edit_fields"]
    assert answer == ["added a tool"] and changed is True
    assert after == ["add_tool", "added", "read_fields", "edit_fields"]
    assert failures() == []


def test_server_everything_behind_the_proxy_over_stdio() -> None:
    seen_box: list[Seen] = []

    async def work(client: Any, seen: Seen) -> Any:
        seen_box.append(seen)
        return await everything_session(client, seen)

    command = everything_command("stdio")
    found = through_proxy(["--", *command], work, MARKED)
    check_everything(found, seen_box[0])


# -- auth: our own serve --http behind its bearer token --------------------------------------


@contextlib.contextmanager
def our_server() -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "pflow_structure", "serve", "--http", "--port", str(port)]
    with started(command, port, {"PFLOW_STRUCTURE_MCP_TOKEN": TOKEN}):
        yield f"http://127.0.0.1:{port}/mcp"


def test_our_serve_http_behind_the_proxy_with_a_token_from_the_environment_and_no_secret_anywhere(
    tmp_path: Path,
) -> None:
    async def work(client: Any, seen: Seen) -> Any:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        data = str(REPO / "examples" / "data" / "github_issues.json")
        run = plain(await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": data}}))
        return tools, run

    header = ["--header", "Authorization: Bearer ${UPSTREAM_TOKEN}"]
    config = tmp_path / "remote.json"
    outputs: list[str] = []
    with our_server() as url:
        tools, run = through_proxy(["--url", url, *header], work, {"UPSTREAM_TOKEN": TOKEN}, tmp_path / "ok.err")
        config.write_text(json.dumps({"url": url, "headers": {"Authorization": "Bearer ${UPSTREAM_TOKEN}"}}))
        from_config = through_proxy(["--config", str(config)], work, {"UPSTREAM_TOKEN": TOKEN}, tmp_path / "c.err")
        with pytest.raises(Exception) as refused:
            through_proxy(["--url", url + "?api_key=" + WRONG, *header], work, {"UPSTREAM_TOKEN": WRONG},
                          tmp_path / "wrong.err")  # fmt: skip
        outputs += [json.dumps([tools, run, from_config]), str(innermost(refused.value))]
    assert tools == [
        "registry_run", "read_fields", "edit_fields", "list_nodes", "describe_nodes",
        "pflow_structure_read_fields", "pflow_structure_edit_fields",
    ]  # fmt: skip
    assert run["isError"] is False and run["structuredContent"]["execution_id"].startswith("exec-")
    assert from_config[0] == tools
    assert str(innermost(refused.value)) == (
        f"the MCP server at {url} asked for credentials (HTTP 401 Unauthorized); the proxy sent the header(s) "
        "Authorization. Fix: pass a valid token, e.g. --header 'Authorization: Bearer ${TOKEN}' with TOKEN set in "
        "the proxy's environment (OAuth-only servers: get a token from the vendor's settings page, see the "
        "README's Remote servers)"
    )
    assert "Error: the MCP server at" in (tmp_path / "wrong.err").read_text()
    cache = Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"])
    logs = Path(os.environ["PFLOW_STRUCTURE_FAILURE_LOG"]).parent
    files = [path for base in (cache, logs, tmp_path) if base.exists() for path in base.rglob("*") if path.is_file()]
    assert any(path.name.endswith(".err") for path in files) and any(path.suffix == ".json" for path in files)
    written = outputs + [path.read_text(errors="replace") for path in files if path != config]
    for secret in (TOKEN, WRONG):
        assert not [text for text in written if secret in text]


def test_a_missing_variable_in_a_header_stops_the_proxy_at_start_naming_it() -> None:
    done = subprocess.run(
        [*PROXY, "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: Bearer ${PFS_NOT_SET_ANYWHERE}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT,
        env={key: value for key, value in os.environ.items() if key != "PFS_NOT_SET_ANYWHERE"},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith("Error: environment variable PFS_NOT_SET_ANYWHERE is not set (used in --header).")
    assert done.stdout == ""


def test_proxy_options_that_do_not_fit_together_are_usage_errors() -> None:
    for args, words in (
        (["--url", "http://127.0.0.1:9/mcp", "--", "cmd"], "not both"),
        (["--header", "A: b", "--", "cmd"], "go with --url"),
        ([], "-- COMMAND [ARGS]... or --url URL"),
    ):
        done = subprocess.run([*PROXY, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 2 and words in done.stderr
    done = subprocess.run([*PROXY, "--url", "ftp://x/"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "is not an http(s) URL" in done.stderr


# -- the pieces, without a network -------------------------------------------------------------


def test_headers_expand_from_the_environment_and_errors_never_show_a_value() -> None:
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.proxy.remote import expand, parse_headers, redact_url

    headers = parse_headers(["Authorization: Bearer ${TOKEN}", "X-Team:  ${TEAM}-${TEAM} "])
    assert headers == {"Authorization": "Bearer ${TOKEN}", "X-Team": "${TEAM}-${TEAM}"}
    assert expand(headers, {"TOKEN": "abc", "TEAM": "x"}) == {"Authorization": "Bearer abc", "X-Team": "x-x"}
    with pytest.raises(ParameterError, match=r"^environment variable TEAM, TOKEN is not set"):
        expand(headers, {})
    with pytest.raises(ParameterError, match="line break"):
        expand({"A": "${V}"}, {"V": "a\r\nInjected: 1"})
    for bad in ("no colon here", ": empty name", "bad name: x"):
        with pytest.raises(ParameterError, match="is not 'Name: value'") as caught:
            parse_headers([bad])
        assert "here" not in str(caught.value) or bad == "no colon here"
    assert redact_url("https://user:pw@host.example:8443/mcp?token=s3cret#frag") == "https://host.example:8443/mcp"
    assert redact_url("http://[::1]:9/sse") == "http://[::1]:9/sse"


def test_a_config_file_in_the_clients_shape_is_read_and_checked(tmp_path: Path) -> None:
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.proxy.remote import read_config

    config = tmp_path / "c.json"
    config.write_text('{"type": "sse", "url": "http://127.0.0.1:1/sse", "headers": {"A": "b"}}')
    assert read_config(config) == {
        "url": "http://127.0.0.1:1/sse", "transport": "sse", "headers": {"A": "b"}, "timeout": 30.0,
    }  # fmt: skip
    for text, words in (
        ("{", "is not JSON"),
        ("[]", 'needs an object with a "url"'),
        ('{"url": "u", "headers": {"A": 1}}', "must map names to strings"),
        ('{"url": "u", "transport": "ws"}', '"transport"'),
        ('{"url": "u", "timeout": 0}', '"timeout"'),
    ):
        config.write_text(text)
        with pytest.raises(ParameterError, match=words):
            read_config(config)
    with pytest.raises(ParameterError, match="cannot read --config"):
        read_config(tmp_path / "missing.json")


def test_a_cancellation_from_the_client_reaches_the_server_under_its_own_request_id(tmp_path: Path) -> None:
    """Raw JSON-RPC on the proxy's stdin: a 3-second call, cancelled after its first progress step; the
    server (told under the id the proxy gave the request) never answers it, while a later ping is, and
    so is a second 3-second call started after it (which an uncancelled first call would answer before).
    What the proxy wrote to the server is logged (tests/servers/stdin_log.py): the cancellation is there,
    under the id the proxy gave the call, so the server was told and the proxy did not only drop an answer."""
    import select

    log = tmp_path / "to-server.jsonl"
    command = [*PROXY, "--", sys.executable, str(STDIN_LOG), str(log), "--", *everything_command("stdio")]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    received: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    def read_until(check: Callable[[dict[str, Any]], bool], seconds: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                message = json.loads(process.stdout.readline())
                received.append(message)
                if check(message):
                    return message
        return None

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert read_until(lambda m: m.get("id") == 1, 60) is not None
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 3},
            "_meta": {"progressToken": "p-1"}}})  # fmt: skip
        progress = read_until(lambda m: m.get("method") == "notifications/progress", 30)
        assert progress is not None and progress["params"]["progressToken"] == "p-1"
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}})
        send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert read_until(lambda m: m.get("id") == 3, 60) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 3}}})  # fmt: skip
        # Ordering, not a clock: the same 3 s began later, so an answer to id 2 would come first.
        later = read_until(lambda m: m.get("id") == 4, 120)
        assert later is not None and "result" in later
        assert [m for m in received if m.get("id") == 2] == []
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    sent = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    (first, _) = [m for m in sent if m.get("method") == "tools/call"]
    cancels = [m["params"]["requestId"] for m in sent if m.get("method") == "notifications/cancelled"]
    assert cancels == [first["id"]]
