"""The proxy's stdio transport never holds more than PFLOW_STRUCTURE_MAX_MESSAGE_SIZE of one line.

Before the limit, a client that wrote without a newline grew the proxy by gigabytes a minute (a
line was read whole before it was parsed). Now an over-long line is dropped as it arrives; the
peer waiting for it (when either end of the line names its id) gets an error saying the size and
the setting, and the session goes on. Real processes: the proxy over stdio, in front of our echo
server and of the real server-filesystem.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

from pflow_structure.mcp.proxy.stdio import TooLong, _Splitter
from tests.conftest import REPO
from tests.test_mcp_proxy import PROXY, assert_gone, npm_server

ECHO = [sys.executable, str(REPO / "tests" / "servers" / "echo_mcp_server.py")]
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}  # fmt: skip


class Session:
    """A proxy process driven line by line; every read is bounded by the pipe's answer or the timeout."""

    def __init__(self, command: list[str], limit: str, cache: Path) -> None:
        env = dict(os.environ, PFLOW_STRUCTURE_MAX_MESSAGE_SIZE=limit, PFLOW_STRUCTURE_CACHE_DIR=str(cache))
        self.process = subprocess.Popen(
            [*PROXY, "--", *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            bufsize=0,
        )  # fmt: skip
        self.buffer = b""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout: IO[bytes] = self.process.stdout
        self.send(INITIALIZE)
        assert self.answer()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        self.write((json.dumps(message) + "\n").encode())

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def answer(self, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.stdout], [], [], left)[0], f"no answer within {timeout} s"
            chunk = os.read(self.stdout.fileno(), 65536)
            assert chunk, "the proxy closed its output"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def close(self) -> str:
        self.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            self.process.kill()
        return self.process.stderr.read().decode()  # type: ignore[union-attr]


@pytest.fixture
def echo(tmp_path: Path) -> Any:
    session = Session(ECHO, "64KB", tmp_path / "cache")
    yield session
    session.close()


def _call(request_id: int, arguments: dict[str, Any], name: str = "echo") -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_request_over_the_limit_gets_an_error_naming_the_size_and_the_setting_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    session = Session(ECHO, "64KB", tmp_path / "cache")
    session.send(_call(2, {"text": "x" * 200_000}))
    refused = session.answer()
    assert refused == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32600,
            "message": "pflow-structure proxy: a message from the client was 195.4 KB, over the 64 KB limit, and "
            "was dropped, not passed on. Pass large values by reference (${exec-ID:PATH}) or raise "
            "PFLOW_STRUCTURE_MAX_MESSAGE_SIZE (e.g. 1GB).",
        },
    }
    session.send(_call(3, {}, "calls"))  # the echo server never saw request 2
    assert session.answer()["result"]["content"][0]["text"] == "0 calls before"
    session.send(_call(4, {"text": "y" * 60_000}))  # under the limit: passed on (its echo is cached: too large)
    assert "result" in session.answer()
    session.send(_call(5, {}, "calls"))
    assert session.answer()["result"]["content"][0]["text"] == "1 calls before"
    stderr = session.close()
    assert stderr.count("a message from the client was 195.4 KB") == 1


def test_an_endless_line_without_a_newline_is_dropped_as_it_arrives_and_the_next_line_is_read(echo: Session) -> None:
    for _ in range(160):  # 10 MB of NUL bytes, no newline: 160 times the limit
        echo.write(b"\x00" * 65_536)
    echo.write(b"\n")
    echo.send(_call(5, {}, "calls"))
    assert echo.answer() == {
        "jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "0 calls before"}], "isError": False}
    }  # fmt: skip  # nothing answered the NUL line: it named no id


def test_an_answer_over_the_limit_from_a_stdio_server_is_an_error_for_its_request(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("line of text\n" * 20_000, encoding="utf-8")  # 260 KB
    small = tmp_path / "small.txt"
    small.write_text("hello", encoding="utf-8")
    session = Session([npm_server("mcp-server-filesystem"), str(tmp_path)], "64KB", tmp_path / "cache")
    session.send(_call(2, {"path": str(big)}, "read_text_file"))
    refused = session.answer()
    assert refused["id"] == 2
    # the text twice (content and structuredContent), each newline escaped: 547 KB
    assert re.fullmatch(
        r"pflow-structure proxy: a message from the server was 5\d\d KB, over the 64 KB limit, and was dropped, "
        r"not passed on\. Raise PFLOW_STRUCTURE_MAX_MESSAGE_SIZE \(e\.g\. 1GB\)\.",
        refused["error"]["message"],
    ), refused
    session.send(_call(3, {"path": str(small)}, "read_text_file"))
    assert session.answer()["result"]["content"][0]["text"] == "hello"
    session.close()


def test_a_bad_limit_is_said_at_start_with_the_fix(tmp_path: Path) -> None:
    env = dict(os.environ, PFLOW_STRUCTURE_MAX_MESSAGE_SIZE="lots", PFLOW_STRUCTURE_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [*PROXY, "--", *ECHO], input=(json.dumps(INITIALIZE) + "\n").encode(), capture_output=True, env=env, timeout=60
    )
    assert done.returncode != 0
    assert "PFLOW_STRUCTURE_MAX_MESSAGE_SIZE='lots' is not a size; use bytes or a unit, e.g. 500MB or 2GB" in (
        done.stderr.decode()
    )


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_the_splitter_gives_the_same_lines_whatever_the_chunk_size(size: int) -> None:
    data = (
        b'{"a":1}\n\n{"jsonrpc":"2.0","id":"r-9","method":"m","params":{"v":"'
        + b"z" * 40
        + b'"}}\n{"b":2}\n'
        + b'{"result":{"v":"'
        + b"z" * 40
        + b'"},"jsonrpc":"2.0","id":12}\n'  # the TypeScript SDK's order
        + b'{"result":{"v":"'
        + b"z" * 40
        + b'","id":5}}\n'  # an inner id is not the message's
        + b'{"id":7,"v":"'
        + b"z" * 40
        + b'"}\n'  # neither a request nor an answer: its id is not used
        + b'{"jsonrpc":"2.0","id":01,"method":"m","params":"'
        + b"z" * 40
        + b'"}\n'  # not an id JSON reads
        + b'{"c":3}'
    )
    splitter = _Splitter(30)
    lines: list[Any] = []
    for start in range(0, len(data), size):
        lines.extend(splitter.feed(data[start : start + size]))
    lines.extend(splitter.rest())
    assert lines == [
        b'{"a":1}',
        TooLong(99, "r-9", request=True),
        b'{"b":2}',
        TooLong(83, 12),
        TooLong(66, None),
        TooLong(55, None),
        TooLong(90, None, request=True),
        b'{"c":3}',
    ]
    assert splitter.pending == bytearray()


def test_the_splitter_against_split_on_random_lines_and_chunks() -> None:
    """Requests (id first), answers (id last, as TypeScript writes them) and plain lines, under and
    over a small limit, cut into random chunks: every line under the limit comes out whole, every
    other one as TooLong with its size and, for a request or an answer, its id."""
    rng = random.Random(20261125)
    for trial in range(3000):
        limit = rng.randint(5, 60)
        lines = []
        for _ in range(rng.randint(0, 6)):
            body = b"x" * rng.randint(0, 90)
            kind = rng.random()
            if kind < 0.3:
                lines.append(b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"v":"%s"}}' % (trial, body))
            elif kind < 0.6:
                lines.append(b'{"result":{"v":"%s"},"jsonrpc":"2.0","id":%d}' % (body, trial))
            else:
                lines.append(body)
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
        splitter = _Splitter(limit)
        out: list[Any] = []
        start = 0
        while start < len(data):
            step = rng.randint(0, 12)
            out.extend(splitter.feed(data[start : start + step]))
            start += step
        out.extend(splitter.rest())
        expected: list[Any] = []
        for line in data.split(b"\n"):
            if len(line) > limit:
                request, answer = line.startswith(b'{"jsonrpc"'), line.startswith(b'{"result"')
                expected.append(TooLong(len(line), trial if request or answer else None, request))
            elif line:
                expected.append(line)
        assert out == expected, (limit, data)


def test_the_splitter_keeps_at_most_the_limit_of_a_line() -> None:
    splitter = _Splitter(1000)
    for _ in range(1000):
        assert splitter.feed(b"q" * 999) == []
        assert len(splitter.pending) <= 1000
    assert splitter.feed(b"\n") == [TooLong(999_000, None)]


@pytest.mark.parametrize("after", [0.0, 2.0])
def test_sigterm_stops_the_proxy_and_a_server_that_ignores_its_closed_stdin(tmp_path: Path, after: float) -> None:
    """What a client does to a server that did not exit: SIGTERM. Python's default was to die at once,
    which left a server that does not read its stdin running without a parent. ``after`` 0: while the
    proxy still loads (prestart's handler); 2 s: once it relays (the proxy's own)."""
    pid_file = tmp_path / "server.pid"
    server = [sys.executable, "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
              "time.sleep(600)"]  # fmt: skip
    process = subprocess.Popen(
        [*PROXY, "--", *server], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        for _ in range(300):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        server_pid = int(pid_file.read_text())
        time.sleep(after)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
        assert process.stderr is not None
        assert process.stderr.read().decode().strip() == "pflow-structure proxy: terminated"
    finally:
        process.kill()
    assert_gone(server_pid, "the server outlived the proxy")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.run installs its own SIGINT handler from 3.11")
def test_sigterm_inside_asyncio_run_hands_over_to_asyncio_s_own_handler() -> None:
    # asyncio's handler is functools.partial(Runner._on_sigint, ...): a check for the bound method alone
    # never matched, so SIGTERM raised KeyboardInterrupt inside whatever task ran, and 3.13 logged it as
    # "unhandled exception during asyncio.run() shutdown" (CI, stop 41). Handed over, it returns here and
    # asyncio cancels the main task, then raises KeyboardInterrupt from asyncio.run.
    import asyncio

    from pflow_structure.mcp.proxy.run import _TerminateAsInterrupt

    # asyncio.run installs its handler only over Python's default one: a shell running the suite in the background
    # hands it SIGINT ignored (bash does for `cmd &` without job control), and the handover was then never tried
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    terminate = _TerminateAsInterrupt()
    reached: list[str] = []

    async def main() -> None:
        terminate._handle(signal.SIGTERM, None)
        reached.append("returned")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            reached.append("cancelled")
            raise

    try:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(main())
    finally:
        terminate.restore()
        signal.signal(signal.SIGINT, previous)
    assert reached == ["returned", "cancelled"]
    assert terminate.seen


def test_an_interrupt_inside_a_task_group_is_still_an_interrupt() -> None:
    # SIGTERM raises KeyboardInterrupt in whatever runs; inside a task it reaches run() in an exception
    # group, which once made the proxy exit 1 with a traceback instead of 143 (seen under load in CI).
    from pflow_structure.mcp.proxy.run import _interrupts_only

    if sys.version_info >= (3, 11):
        group: Any = BaseExceptionGroup  # noqa: F821 (a builtin from 3.11)
    else:
        from exceptiongroup import BaseExceptionGroup as group
    assert _interrupts_only(group("tasks", [KeyboardInterrupt(), group("inner", [KeyboardInterrupt()])]))
    assert not _interrupts_only(group("tasks", [KeyboardInterrupt(), ValueError("x")]))
    assert not _interrupts_only(ValueError("x"))
