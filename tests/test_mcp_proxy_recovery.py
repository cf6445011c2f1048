"""`pflow-structure proxy` when the server behind it fails or the client leaves, against real servers.

server-everything over streamable HTTP on 127.0.0.1 is killed, restarted, stopped (SIGSTOP) and
resumed while the SDK's client talks to it through the proxy; URLs where nothing or the wrong
thing listens are tried at start; and a client that closes its input with calls in flight still
reads their answers. Every message is checked word for word: it names the URL (never its
credentials) and what to check. Both SDK majors run these tests (see `.ci/run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from tests.test_mcp_proxy import PROXY, failures, plain, texts
from tests.test_mcp_proxy_remote import (
    TIMEOUT,
    Seen,
    everything,
    everything_command,
    free_port,
    innermost,
    started,
    through_proxy,
)

CHECK_PORT = "Check: is the server running, and listening on that host and port? Is the port in --url right?"
CHECK_MCP = (
    "Check: that --url is the server's MCP endpoint (often .../mcp); a server that speaks only the older "
    "HTTP+SSE transport needs --transport sse and its event-stream URL (often .../sse)"
)
CHECK_SSE = (
    "Check: that --url is the server's event-stream endpoint (often .../sse); a server that speaks streamable "
    "HTTP needs its endpoint (often .../mcp) without --transport sse"
)
CHECK_TLS = (
    "Check: http:// or https:// in --url (a server on this machine usually speaks plain http://), and whether "
    "this machine trusts the server's certificate"
)
CHECK_SLOW = (
    "Check: is the server up and reachable from here? If it is only slow, raise --timeout (--start-timeout for "
    "the handshake)"
)


def refused(url: str, transport: str = "streamable-http") -> str:
    """The start-up error for ``url`` where nothing listens."""
    port = url.split(":")[2].split("/")[0]
    return (
        f"could not connect to the MCP server at {url} over {transport}: nothing accepts connections at "
        f"127.0.0.1:{port}. {CHECK_PORT}"
    )


def start_error(args: list[str]) -> str:
    """The error the client's ``initialize`` gets from a proxy started with ``args``."""

    async def work(client: Any, seen: Seen) -> Any:
        return await client.list_tools()

    with pytest.raises(Exception) as failed:
        through_proxy(args, work)
    return str(innermost(failed.value))


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung server); yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=10)
        for connection in [*accepted, listener]:
            connection.close()


# -- at start: nothing, or the wrong thing, at the URL ------------------------------------------


def test_a_url_where_nothing_listens_names_it_without_credentials_and_says_what_to_check() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    assert start_error(["--url", f"http://ada:pw-1234@127.0.0.1:{port}/mcp?key=k-5678"]) == refused(url)
    assert start_error(["--url", url, "--transport", "sse"]) == refused(url, "sse")


def test_a_wrong_path_or_transport_at_start_says_which_endpoint_to_give() -> None:
    with everything("streamableHttp") as mcp_url, everything("sse") as sse_url:
        base = mcp_url.removesuffix("/mcp")
        for url, transport, expected in (
            (f"{base}/nope", "streamable-http", f"it answered HTTP 404 (Not Found). {CHECK_MCP}"),
            (sse_url, "streamable-http", f"it answered HTTP 404 (Not Found). {CHECK_MCP}"),
            (mcp_url, "sse", f"it answered HTTP 400 (Bad Request). {CHECK_SSE}"),
        ):
            message = start_error(["--url", url, "--transport", transport])
            assert message == f"could not connect to the MCP server at {url} over {transport}: {expected}"


def test_https_to_a_plain_http_server_says_the_tls_handshake_failed() -> None:
    with everything("streamableHttp") as url:
        secure = url.replace("http://", "https://")
        message = start_error(["--url", secure])
    where = secure.split("/")[2]
    start = f"could not connect to the MCP server at {secure} over streamable-http: the TLS handshake with {where} "
    assert message.startswith(start + "failed (ConnectError: [SSL: ")  # then OpenSSL's words, which vary
    assert message.endswith(f"). {CHECK_TLS}") and "_ssl.c" not in message


def test_a_server_that_never_answers_the_handshake_is_given_up_after_the_start_timeout() -> None:
    with silent_listener() as port:
        url = f"http://127.0.0.1:{port}/mcp"
        message = start_error(["--url", url, "--start-timeout", "1"])
    assert message == (
        f"could not connect to the MCP server at {url} over streamable-http: it did not answer the MCP handshake "
        f"in time. {CHECK_SLOW}"
    )


# -- mid-session: the server killed, restarted, stopped --------------------------------------------


def _restart_upstream(
    during: Callable[[Any, Callable[[], Awaitable[None]]], Awaitable[Any]],
) -> tuple[str, Any, Any, Any]:
    """server-everything over streamable HTTP behind the proxy; ``during(client)`` is the call made while
    the server is killed and started again on the same port. Returns the URL and the three answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = everything_command("streamableHttp")
    upstream = [started(command, port)]
    upstream[0].__enter__()

    async def restart() -> None:
        upstream[0].__exit__(None, None, None)  # killed
        upstream[0] = started(command, port)
        await asyncio.to_thread(upstream[0].__enter__)  # and started again on the same port

    async def work(client: Any, seen: Seen) -> Any:
        first = plain(await client.call_tool("echo", {"message": "first"}))
        lost = plain(await during(client, restart))
        again = plain(await client.call_tool("echo", {"message": "again"}))
        return first, lost, again

    try:
        first, lost, again = through_proxy(["--url", url, "--timeout", "10"], work)
    finally:
        upstream[0].__exit__(None, None, None)
    return url, first, lost, again


def lost_messages(url: str) -> set[str]:
    """Each way a session can be found lost when its server is killed (and started again), exactly:
    the event stream of the call broke (the SDK said so), the new server does not know the session
    (it answers 400), or nothing listens yet."""
    start = f"Error: the session with the MCP server at {url} was lost ("
    port = url.split(":")[2].split("/")[0]
    return {
        f"{start}the server closed the connection before it answered); the next call opens a new session",
        f"{start}the server answered HTTP 400 for the session: it restarted, or the session expired); the next "
        "call opens a new session",
        f"{start}nothing accepts connections at 127.0.0.1:{port}); the next call opens a new session. Check: is "
        "the server running, and listening on that host and port? Is the port in --url right?",
    }


def _one_clear_error(url: str, lost: Any, operation: str) -> None:
    assert lost["isError"] is True
    (message,) = texts(lost)
    assert message in lost_messages(url)
    (record,) = failures()
    assert record["operation"] == operation and record["stage"] == "call" and record["command"] == url


def test_the_upstream_killed_during_a_call_gives_one_clear_error_then_answers() -> None:
    async def during(client: Any, restart: Callable[[], Awaitable[None]]) -> Any:
        async def later() -> None:
            await asyncio.sleep(1.0)  # the long call is in flight by now
            await restart()

        restarting = asyncio.ensure_future(later())
        answer = await client.call_tool("trigger-long-running-operation", {"duration": 10, "steps": 10})
        await restarting
        return answer

    url, first, lost, again = _restart_upstream(during)
    assert texts(first) == ["Echo: first"]
    _one_clear_error(url, lost, "trigger-long-running-operation")
    assert texts(again) == ["Echo: again"] and again.get("isError") is not True


def test_the_upstream_killed_between_calls_gives_at_most_one_clear_error_then_answers() -> None:
    async def during(client: Any, restart: Callable[[], Awaitable[None]]) -> Any:
        await restart()
        return await client.call_tool("echo", {"message": "lost"})

    url, first, lost, again = _restart_upstream(during)
    assert texts(first) == ["Echo: first"]
    if lost.get("isError"):  # the proxy learnt of the restart from this call: the clear error, once
        _one_clear_error(url, lost, "echo")
    else:  # it had already seen its event stream drop and opened a new session: nothing to report
        assert texts(lost) == ["Echo: lost"] and failures() == []
    assert texts(again) == ["Echo: again"] and again.get("isError") is not True


def test_the_upstream_gone_mid_session_says_what_to_check_then_answers_once_it_is_back() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = everything_command("streamableHttp")
    upstream = [started(command, port)]
    upstream[0].__enter__()

    async def work(client: Any, seen: Seen) -> Any:
        answers = [plain(await client.call_tool("echo", {"message": "first"}))]
        upstream[0].__exit__(None, None, None)  # killed, and nothing listens on its port
        answers += [plain(await client.call_tool("echo", {"message": "lost"})) for _ in range(2)]
        upstream[0] = started(command, port)
        await asyncio.to_thread(upstream[0].__enter__)  # back on the same port
        return [*answers, plain(await client.call_tool("echo", {"message": "again"}))]

    try:
        first, lost, still, again = through_proxy(["--url", url], work)
    finally:
        upstream[0].__exit__(None, None, None)
    gone = f"Error: {refused(url)}"
    lost_now = (
        f"Error: the session with the MCP server at {url} was lost (nothing accepts connections at 127.0.0.1:{port}); "
        f"the next call opens a new session. {CHECK_PORT}"
    )
    assert texts(first) == ["Echo: first"]
    assert lost["isError"] is True and texts(lost)[0] in {lost_now, gone}  # whether it saw its event stream drop
    assert still["isError"] is True and texts(still) == [gone]
    assert texts(again) == ["Echo: again"] and again.get("isError") is not True
    assert [record["operation"] for record in failures()] == ["echo", "echo"]


def test_a_server_that_stops_answering_during_a_call_is_given_up_after_a_ping_and_the_timeout() -> None:
    """SIGSTOP: the connections stay open and nothing answers (a hung server, or a network that drops
    everything). The proxy pings it after 2 s of silence, gives up 2 s later (--timeout 2), and once the
    server runs again (SIGCONT) the next call opens a new session."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with started(everything_command("streamableHttp"), port) as server:

        async def work(client: Any, seen: Seen) -> Any:
            first = plain(await client.call_tool("echo", {"message": "first"}))

            async def stop_soon() -> None:
                await asyncio.sleep(1.5)  # two progress steps in
                os.killpg(server.pid, signal.SIGSTOP)

            stopping = asyncio.ensure_future(stop_soon())
            try:
                lost = plain(await client.call_tool("trigger-long-running-operation", {"duration": 10, "steps": 10}))
            finally:
                await stopping
                os.killpg(server.pid, signal.SIGCONT)
            return first, lost, plain(await client.call_tool("echo", {"message": "again"}))

        first, lost, again = through_proxy(["--url", url, "--timeout", "2"], work)
    assert texts(first) == ["Echo: first"]
    assert lost["isError"] is True and texts(lost) == [
        f"Error: the session with the MCP server at {url} was lost (it answered neither the call nor a ping for "
        f"2 s); the next call opens a new session. {CHECK_SLOW}"
    ]
    assert texts(again) == ["Echo: again"] and again.get("isError") is not True


# -- the client leaves with calls in flight ----------------------------------------------------------


def _within(seconds: float, read: Callable[[], bytes]) -> bytes:
    box: list[bytes] = []
    thread = threading.Thread(target=lambda: box.append(read()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"nothing within {seconds} s"
    return box[0]


def leave_with_calls_in_flight(
    args: list[str], calls: list[dict[str, Any]], capabilities: dict[str, Any] | None = None
) -> tuple[dict[Any, Any], int]:
    """Raw JSON-RPC on the proxy's stdin: initialize (declaring ``capabilities``), then ``calls`` (ids 2, 3,
    ...), then close stdin at once and read stdout to its end. Returns the answers by id, and the exit code."""
    process = subprocess.Popen(
        [*PROXY, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def write(*messages: dict[str, Any]) -> None:
        stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n" for message in messages))
        stdin.flush()

    try:
        info = {"protocolVersion": "2025-06-18", "capabilities": capabilities or {},
                "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
        write({"id": 1, "method": "initialize", "params": info})
        assert json.loads(_within(TIMEOUT, stdout.readline))["id"] == 1
        write({"method": "notifications/initialized"}, *[
            {"id": index, "method": "tools/call", "params": call} for index, call in enumerate(calls, start=2)
        ])  # fmt: skip
        stdin.close()
        lines = _within(TIMEOUT, stdout.read).splitlines()
        code = process.wait(timeout=TIMEOUT)
    finally:
        process.kill()
        process.wait(timeout=30)
    answers = {message["id"]: message for message in map(json.loads, lines) if "method" not in message}
    return answers, code


@pytest.mark.parametrize("transport", ["stdio", "streamableHttp"])
def test_calls_in_flight_when_the_client_closes_its_input_are_answered_before_the_proxy_exits(transport: str) -> None:
    calls = [
        {"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2}},
        {"name": "echo", "arguments": {"message": "last"}},
    ]
    with contextlib.ExitStack() as stack:
        if transport == "stdio":
            args = ["--", *everything_command("stdio")]
        else:
            args = ["--url", stack.enter_context(everything(transport))]
        answers, code = leave_with_calls_in_flight(args, calls)
    assert code == 0
    assert texts(answers[2]["result"]) == ["Long running operation completed. Duration: 1 seconds, Steps: 2."]
    assert texts(answers[3]["result"]) == ["Echo: last"]


def test_calls_in_flight_when_the_client_leaves_get_at_most_the_timeout_to_finish() -> None:
    calls = [{"name": "trigger-long-running-operation", "arguments": {"duration": 10, "steps": 2}}]
    with everything("streamableHttp") as url:
        answers, code = leave_with_calls_in_flight(["--url", url, "--timeout", "1"], calls)
    assert code == 0 and answers == {}  # the proxy left after 1 s, without the 10-second answer


# -- the pieces, without a network ---------------------------------------------------------------


def test_a_failed_connection_is_put_in_words_with_what_to_check() -> None:
    from pflow_structure.mcp.proxy.remote import diagnose

    url = "https://mcp.example.com/mcp"
    assert diagnose(url, "streamable-http", "ConnectError: [Errno -2] Name or service not known", None) == (
        "the host name mcp.example.com does not resolve (ConnectError: [Errno -2] Name or service not known)",
        "the host name in --url (a typo? VPN or DNS?)",
    )
    assert diagnose("http://h:8/mcp", "sse", "ConnectError: All connection attempts failed", 404) == (
        "nothing accepts connections at h:8", CHECK_PORT.removeprefix("Check: "),
    )  # fmt: skip
    tls = "ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed (_ssl.c:1006)"
    assert diagnose(url, "sse", tls, None)[0] == (
        "the TLS handshake with mcp.example.com:443 failed "
        "(ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed)"
    )
    assert diagnose(url, "streamable-http", "Server returned an error response", 503) == (
        "it answered HTTP 503 (Service Unavailable)",
        "the server's own logs or status page: it failed, or a gateway in front of it could not reach it",
    )
    assert diagnose(url, "streamable-http", "Session terminated", 404, in_session=True) == (
        "the server answered HTTP 404 for the session: it restarted, or the session expired", None,
    )  # fmt: skip
    for broken in ("SSE stream ended without a response", "RemoteProtocolError: peer closed connection without "
                   "sending complete message body (incomplete chunked read)"):  # fmt: skip
        assert diagnose(url, "streamable-http", broken, None) == (
            "the server closed the connection before it answered",
            None,
        )
    assert diagnose(url, "streamable-http", "OSError: something else", None) == ("OSError: something else", None)


def test_a_question_from_the_server_after_the_client_left_is_answered_with_an_error_so_the_call_ends() -> None:
    calls = [{"name": "trigger-sampling-request", "arguments": {"prompt": "say hi", "maxTokens": 5}}]
    answers, code = leave_with_calls_in_flight(["--", *everything_command("stdio")], calls, {"sampling": {}})
    assert code == 0 and texts(answers[2]["result"]) == ["MCP error -32603: the client disconnected"]
