"""The proxy over the network and at start-up: tokens, added latency per call, start-up times.

    python benchmarks/proxy_remote.py             # full: 7 start-ups per server, 50 calls per tool
    python benchmarks/proxy_remote.py --smoke     # 2 start-ups, 5 calls (CI): prints the same table

Three measurements, each as a ratio against a reference taken in the same run:

1. Start-up, spawn to ``initialize`` answered: server-filesystem and server-memory started
   directly vs through ``pflow-structure proxy --``, alternating, median of N; and our own
   ``pflow-structure serve`` (stdio) beside ``python -c pass``.
2. Per call, the same tool calls on @modelcontextprotocol/server-everything, once over stdio and
   once over streamable HTTP on 127.0.0.1: tokens the client sees (``visible_tokens``) and the
   latency p50/p95 over a fixed number of calls, direct vs through the proxy, the calls of the
   two clients interleaved. ``get-env`` answers with the server's environment, made large by one
   variable of 2,000 words (so its token count depends a little on the machine's environment).
3. Proxy start-up to the first ``tools/list`` answered against the running HTTP server, vs the
   SDK's client connecting directly from an already running Python.

npm servers from ``$PFLOW_STRUCTURE_NPM_SERVERS/node_modules/.bin`` (default
``<repo>/.npm-servers``); without them the script says how to install them and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
LOOPBACK = REPO / "tests" / "servers" / "loopback.cjs"
PROXY = [sys.executable, "-m", "pflow_structure", "proxy"]
INSTALL = (
    "npm install --prefix .npm-servers @modelcontextprotocol/server-filesystem@2026.8.31 "
    "@modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31"
)
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}  # fmt: skip
BULK = {"PFLOW_BENCH_BULK": " ".join(f"word{index}" for index in range(2000))}
CALLS = [("echo", {"message": "hello from the benchmark"}), ("get-sum", {"a": 2, "b": 3}), ("get-env", {})]


def npm_bin(name: str) -> Path:
    base = os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or str(REPO / ".npm-servers")
    return Path(base).expanduser() / "node_modules" / ".bin" / name


def spawn_to_initialize(command: list[str]) -> float:
    """Seconds from starting ``command`` to its answer to ``initialize`` on stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(INIT) + "\n").encode())
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if not line.startswith(b"{"):
        raise RuntimeError(f"{command[0]} did not answer initialize")
    return elapsed


def startup_rows(runs: int, workdir: Path) -> list[str]:
    rows = []
    servers = {
        "server-filesystem": [str(npm_bin("mcp-server-filesystem")), str(workdir)],
        "server-memory": [str(npm_bin("mcp-server-memory"))],
    }
    for name, command in servers.items():
        direct, proxied = [], []
        for index in range(runs):  # alternate the order so a warming cache favours neither
            pair = [("direct", command), ("proxy", [*PROXY, "--", *command])]
            for side, cmd in pair if index % 2 == 0 else pair[::-1]:
                (direct if side == "direct" else proxied).append(spawn_to_initialize(cmd))
        d, p = statistics.median(direct) * 1000, statistics.median(proxied) * 1000
        rows.append(f"| start-up, {name}: spawn to initialize (median of {runs}) | {p:,.0f} ms through the proxy "
                    f"| {d:,.0f} ms direct | {p / d:.2f}x | <= 1.5x |")  # fmt: skip
    serve, bare = [], []
    for _ in range(runs):
        serve.append(spawn_to_initialize([sys.executable, "-m", "pflow_structure", "serve"]))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    s, b = statistics.median(serve) * 1000, statistics.median(bare) * 1000
    rows.append(f"| start-up, `pflow-structure serve` (stdio): spawn to initialize (median of {runs}) | {s:,.0f} ms "
                f"| `python -c pass` {b:,.0f} ms | {s / b:.1f}x | none |")  # fmt: skip
    return rows


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def everything_http() -> Any:
    port = free_port()
    script = os.path.realpath(npm_bin("mcp-server-everything"))
    process = subprocess.Popen(
        ["node", "--require", str(LOOPBACK), script, "streamableHttp"], env={**os.environ, **BULK, "PORT": str(port)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.asynccontextmanager
async def stdio_session(command: list[str], env: dict[str, str]) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, **env})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(parameters, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client import streamable_http

    if hasattr(streamable_http, "streamable_http_client"):
        opened: Any = streamable_http.streamable_http_client(url)
    else:  # mcp 1.x
        opened = streamable_http.streamablehttp_client(url)  # type: ignore[attr-defined,unused-ignore]
    async with opened as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


def visible(result: Any) -> int:
    from pflow_structure.mcp.proxy.shaping import visible_tokens
    from pflow_structure.render.tokens import count_tokens

    return visible_tokens(result.model_dump(by_alias=True, exclude_none=True, mode="json"), count_tokens)


async def measure_calls(direct: Any, proxied: Any, calls: int) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for tool, arguments in CALLS:
        times: dict[str, list[float]] = {"direct": [], "proxy": []}
        tokens: dict[str, int] = {}
        for index in range(calls + 1):  # the first call of each is a warm-up, not timed
            pair = [("direct", direct), ("proxy", proxied)]
            for side, session in pair if index % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                result = await session.call_tool(tool, arguments)
                elapsed = time.perf_counter() - started
                if index:
                    times[side].append(elapsed * 1000)
                tokens[side] = visible(result)
        found[tool] = {"times": times, "tokens": tokens}
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def call_rows(label: str, found: dict[str, dict[str, Any]], calls: int) -> list[str]:
    rows = []
    for tool, entry in found.items():
        d, p = entry["times"]["direct"], entry["times"]["proxy"]
        added50 = percentile(p, 0.5) - percentile(d, 0.5)
        added95 = percentile(p, 0.95) - percentile(d, 0.95)
        td, tp = entry["tokens"]["direct"], entry["tokens"]["proxy"]
        rows.append(
            f"| {label} `{tool}` ({calls} calls) | {tp:,} tokens; p50 {percentile(p, 0.5):.1f} ms, "
            f"p95 {percentile(p, 0.95):.1f} ms | {td:,} tokens; p50 {percentile(d, 0.5):.1f} ms, "
            f"p95 {percentile(d, 0.95):.1f} ms | tokens direct/proxy {td / max(tp, 1):.1f}x; added p50 "
            f"{added50:+.1f} ms, p95 {added95:+.1f} ms | none |"
        )
    return rows


async def network_rows(calls: int, runs: int) -> list[str]:
    rows: list[str] = []
    everything = [
        "node", "--require", str(LOOPBACK), os.path.realpath(npm_bin("mcp-server-everything")), "stdio",
    ]  # fmt: skip
    async with stdio_session(everything, BULK) as direct, stdio_session([*PROXY, "--", *everything], BULK) as proxied:
        rows += call_rows("stdio:", await measure_calls(direct, proxied, calls), calls)
    with everything_http() as url:
        async with http_session(url) as direct, stdio_session([*PROXY, "--url", url], {}) as proxied:
            rows += call_rows("streamable HTTP:", await measure_calls(direct, proxied, calls), calls)
        proxy_times, direct_times = [], []
        for _ in range(runs):
            started = time.perf_counter()
            async with stdio_session([*PROXY, "--url", url], {}) as session:
                await session.list_tools()
                proxy_times.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            async with http_session(url) as session:
                await session.list_tools()
                direct_times.append((time.perf_counter() - started) * 1000)
        p, d = statistics.median(proxy_times), statistics.median(direct_times)
        rows.append(f"| start-up, `proxy --url` (streamable HTTP) to the first tools/list answered (median of {runs}) "
                    f"| {p:,.0f} ms | SDK client in a running Python, connect + tools/list {d:,.0f} ms | "
                    f"+{p - d:,.0f} ms | none |")  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="2 start-ups and 5 calls per tool")
    args = parser.parse_args()
    missing = [name for name in ("mcp-server-filesystem", "mcp-server-memory", "mcp-server-everything")
               if not npm_bin(name).exists()]  # fmt: skip
    if missing:
        print(f"skipped: {', '.join(missing)} not installed; run: {INSTALL}")
        return 0
    runs, calls = (2, 5) if args.smoke else (7, 50)
    with tempfile.TemporaryDirectory(prefix="pflow-structure-bench-") as workdir:
        os.environ["PFLOW_STRUCTURE_CACHE_DIR"] = str(Path(workdir) / "cache")
        os.environ["PFLOW_STRUCTURE_FAILURE_LOG"] = str(Path(workdir) / "failures.jsonl")
        rows = startup_rows(runs, Path(workdir))
        rows += asyncio.run(asyncio.wait_for(network_rows(calls, runs), timeout=900))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| Measurement | Through the proxy | Reference (same run) | Ratio | Target |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
