"""Load on scaled-out ``serve --http``: 1, 2 and 4 instances, file cache vs one Redis, plus two fault runs.

A client on the official MCP SDK (``streamable_http_client`` + ``ClientSession``, one session per
worker and instance) sends a fixed number of mixed calls at fixed concurrency, round-robin over the
instances: ``registry_run`` of ``read-json`` on real corpus responses (/work/shared/corpus, files up
to 200 kB), and ``read_fields`` of ids acknowledged earlier, on another instance than the one that
made them. Each read is checked against the value in the file. Afterwards every acknowledged id is
read back once: "lost" counts those that are missing or differ (must be 0).

File store: the instances share one directory (processes on one host: the most the file store can
share). Redis: each instance has its own directory (as on separate hosts), so only Redis carries an
id from one to another; what Redis cannot take is kept in the instance's directory and counted as
"local" (readable on that instance only; the check reads it there).

Fault runs (4 instances, Redis, AOF with appendfsync always, so a restart keeps what was acknowledged):
one instance killed when half the calls were sent (the client, like a load balancer, marks it down
and resends to the next instance), and Redis stopped at half-way and started again 2 s later (runs
in between are kept on their instance).

Then one id among 100,000 entries in Redis: median ``RedisExecutionCache.get`` over loopback, next to
a raw ``GET`` of the same key. Only 127.0.0.1; every loop is bounded in count and time.

    python benchmarks/redis_load.py            # full run (13 minutes on a busy 2-core machine)
    python benchmarks/redis_load.py --smoke    # CI: a few calls, 1 and 2 instances, 2,000 entries
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.redis_servers import RedisServer, free_port  # noqa: E402  # the tests' private redis-server

CORPUS = Path("/work/shared/corpus") if Path("/work/shared/corpus").is_dir() else REPO / "tests" / "corpus"
MAX_FILE = 200_000
CALL_TIMEOUT = 60.0
OUTAGE_SECONDS = 2.0  # Redis is down this long in the restart run
RUN_SHARE = 0.4  # of the calls are registry_run, the rest read_fields


def corpus_cases() -> list[tuple[Path, str, Any]]:
    """(file, a path to a leaf, its value) for each corpus file up to MAX_FILE bytes."""
    from pflow_structure.paths import format_path

    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        if path.stat().st_size > MAX_FILE:
            continue
        value: Any = json.loads(path.read_text(encoding="utf-8"))
        parts: list[str | int] = ["result"]
        while isinstance(value, (dict, list)) and value:
            key: str | int = next(iter(value)) if isinstance(value, dict) else 0
            parts.append(key)
            value = value[key]
        cases.append((path, format_path(parts), value))
    return cases


def start_instance(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pflow_structure", "serve", "--http", "--port", str(port)],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("an instance did not start within 60 s")


class Load:
    """One load run: workers, sessions, what was acknowledged, and what the client saw."""

    def __init__(self, urls: list[str], cases: list[tuple[Path, str, Any]], calls: int, concurrency: int) -> None:
        self.urls = urls
        self.cases = cases
        self.calls = calls
        self.concurrency = concurrency
        self.sent = 0
        self.down: set[int] = set()
        self.acked: list[tuple[str, int, int, bool]] = []  # (id, case, origin instance, kept only locally)
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.resent = 0
        self.halfway = asyncio.Event()  # set when half the calls were sent: the fault runs inject then
        self.rng = random.Random(7)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    async def run(self) -> float:
        started = time.perf_counter()
        await asyncio.gather(*(self.worker(w) for w in range(self.concurrency)))
        return time.perf_counter() - started

    async def worker(self, number: int) -> None:
        """Send calls until the count is reached; a transport that breaks (the server closed the
        connection under it) costs the call in flight, counted as an error, and new sessions."""
        from contextlib import AsyncExitStack

        while self.sent < self.calls:
            try:
                async with AsyncExitStack() as stack:
                    sessions: dict[int, Any] = {}
                    while self.sent < self.calls:
                        index = self.sent
                        self.sent += 1
                        if self.sent >= self.calls // 2:
                            self.halfway.set()
                        await self.one_call(stack, sessions, index)
            except Exception as exc:  # an ExceptionGroup from the SDK's task group: the call in flight is lost
                self.error(f"transport broke, call lost: {leaf(exc)}")
                self.down.update(i for i, url in enumerate(self.urls) if not is_listening(url))

    async def one_call(self, stack: Any, sessions: dict[int, Any], index: int) -> None:
        target = index % len(self.urls)
        readable = [a for a in self.acked if len(self.urls) == 1 or (a[2] != target and not a[3])]
        is_run = not readable or self.rng.random() < RUN_SHARE
        case = index % len(self.cases)
        for _attempt in range(len(self.urls)):
            if target in self.down:
                target = (target + 1) % len(self.urls)
                continue
            started = time.perf_counter()
            try:
                if target not in sessions:
                    sessions[target] = await open_session(stack, self.urls[target])
                if is_run:
                    args = {"node_type": "read-json", "parameters": {"path": str(self.cases[case][0])}}
                    result = await call(sessions[target], "registry_run", args)
                else:
                    result = await self.read(sessions[target], self.rng.choice(readable))
            except (OSError, asyncio.TimeoutError) as exc:  # refused: mark the instance down, resend to the next
                self.down.add(target)
                self.resent += 1
                self.error(f"instance down, resent ({type(exc).__name__})")
                target = (target + 1) % len(self.urls)
                continue
            self.latencies.append(time.perf_counter() - started)
            if result.get("isError"):
                self.error(result["content"][0]["text"][:60])
            elif is_run:
                warnings = result["structuredContent"].get("warnings", [])
                local = any("kept in this host's file cache" in w for w in warnings)
                self.acked.append((result["structuredContent"]["execution_id"], case, target, local))
            return

    async def read(self, session: Any, acked: tuple[str, int, int, bool]) -> Any:
        execution_id, case, _, _ = acked
        path, expected = self.cases[case][1], self.cases[case][2]
        result = await call(session, "read_fields", {"execution_id": execution_id, "field_paths": [path]})
        if not result.get("isError") and result.get("structuredContent") != {path: expected}:
            self.error("wrong value")
        return result

    async def lost(self) -> int:
        """Read every acknowledged id back (a local-only one on its own instance): missing or different."""
        from contextlib import AsyncExitStack

        missing = 0
        async with AsyncExitStack() as stack:
            sessions = {i: await open_session(stack, url) for i, url in enumerate(self.urls) if i not in self.down}
            alive = sorted(sessions)
            for n, (execution_id, case, origin, local) in enumerate(self.acked):
                where = origin if local else alive[n % len(alive)]
                if where not in sessions:
                    continue  # kept only on an instance that was killed: counted in the report
                path, expected = self.cases[case][1], self.cases[case][2]
                result = await call(
                    sessions[where], "read_fields", {"execution_id": execution_id, "field_paths": [path]}
                )
                missing += int(bool(result.get("isError")) or result.get("structuredContent") != {path: expected})
        return missing


async def open_session(stack: Any, url: str) -> Any:
    from mcp import ClientSession
    from mcp.client import streamable_http

    if hasattr(streamable_http, "streamable_http_client"):
        streams = await stack.enter_async_context(streamable_http.streamable_http_client(url))
    else:  # mcp < 1.24
        streams = await stack.enter_async_context(streamable_http.streamablehttp_client(url))
    session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
    await session.initialize()
    return session


async def call(session: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The result as its JSON form (camelCase in mcp 1.x and 2.x alike)."""
    from pflow_structure.mcp.compat import to_dict

    return to_dict(await asyncio.wait_for(session.call_tool(name, arguments), timeout=CALL_TIMEOUT))


def leaf(exc: BaseException) -> str:
    """The first plain exception inside (nested) exception groups."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return type(exc).__name__


def is_listening(url: str) -> bool:
    """The load balancer's health check: does the instance's port accept a connection?"""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2).close()
    except OSError:
        return False
    return True


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def scenario(
    store: str, instances: int, args: argparse.Namespace, cases: list[Any], workdir: Path, fault: str = ""
) -> dict[str, Any]:
    """Start Redis (if used) and the instances, run the load (with a fault at half-way), stop everything."""
    base = Path(tempfile.mkdtemp(dir=workdir))
    server = None
    if store == "redis":
        persist = {"appendonly": "yes", "appendfsync": "always"} if fault == "redis-restart" else {}
        server = RedisServer(base / "redis", **persist).start()
    processes = []
    try:
        urls = []
        for n in range(instances):
            env = {"PFLOW_STRUCTURE_CACHE_DIR": str(base / ("cache" if store == "file" else f"cache-{n}"))}
            if server is not None:
                env["PFLOW_STRUCTURE_CACHE_URL"] = server.url
            process, url = start_instance(env)
            processes.append(process)
            urls.append(url)
        load = Load(urls, cases, args.calls, args.concurrency)

        async def with_fault() -> tuple[float, int]:
            async def inject() -> None:
                await load.halfway.wait()
                if fault == "kill":
                    processes[-1].kill()
                elif fault == "redis-restart" and server is not None:
                    await asyncio.to_thread(server.stop)
                    await asyncio.sleep(OUTAGE_SECONDS)
                    await asyncio.to_thread(server.start)

            injector = asyncio.create_task(inject())
            seconds = await load.run()
            injector.cancel()
            return seconds, await load.lost()

        seconds, lost = asyncio.run(with_fault())
    finally:
        for process in processes:
            process.kill()
            process.wait(timeout=30)
        if server is not None:
            server.stop()
    latencies = load.latencies
    return {
        "store": store,
        "instances": instances,
        "fault": fault or "none",
        "calls": args.calls,
        "concurrency": args.concurrency,
        "acknowledged_runs": len(load.acked),
        "kept_locally": sum(1 for a in load.acked if a[3]),
        "throughput": round(len(latencies) / seconds, 1),
        "p50_ms": round(1000 * percentile(latencies, 0.50), 1),
        "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
        "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
        "errors": dict(sorted(load.errors.items())),
        "resent": load.resent,
        "lost": lost,
    }


def lookup(entries: int, workdir: Path) -> dict[str, Any]:
    """Median RedisExecutionCache.get of one id among ``entries`` (written by pipeline in the store's format)."""
    from pflow_structure.cache.entry import CacheEntry, format_timestamp, serialise_entry
    from pflow_structure.cache.redis_store import RedisExecutionCache, connect
    from pflow_structure.cache.store import ExecutionCache

    server = RedisServer(workdir / "redis-lookup").start()
    try:
        client = connect(server.url)
        now = int(time.time())
        ids = [f"exec-{now}-{n:08x}" for n in range(entries)]
        for start in range(0, entries, 5000):
            pipe = client.pipeline(transaction=False)
            for execution_id in ids[start : start + 5000]:
                entry = CacheEntry(execution_id, "n", format_timestamp(now), 24.0, {}, {"result": {"n": execution_id}})
                pipe.set(f"pflow-structure:exec:{execution_id}", serialise_entry(entry), ex=86400)
            pipe.execute()
        cache = RedisExecutionCache(server.url, local=ExecutionCache(workdir / "lookup-local"))
        wanted = ids[entries // 2]
        ours, raw = [], []
        for _ in range(1000):
            started = time.perf_counter()
            cache.get(wanted)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            client.get(f"pflow-structure:exec:{wanted}")
            raw.append(time.perf_counter() - started)
        keys = int(server.cli("dbsize"))
    finally:
        server.stop()
    return {
        "entries": keys,
        "median_ms": round(1000 * statistics.median(ours), 3),
        "p95_ms": round(1000 * percentile(ours, 0.95), 3),
        "raw_get_median_ms": round(1000 * statistics.median(raw), 3),
    }


def compression(cases: list[Any]) -> dict[str, Any]:
    """What zlib level 1 (the store's choice over 16 kB) does to the largest corpus responses."""
    import zlib

    sizes, packed, seconds = 0, 0, 0.0
    for path in sorted(CORPUS.glob("*.json"), key=lambda p: p.stat().st_size)[-5:]:
        data = json.dumps(json.loads(path.read_bytes()), separators=(",", ":")).encode()
        started = time.perf_counter()
        squeezed = zlib.compress(data, 1)
        zlib.decompress(squeezed)
        seconds += time.perf_counter() - started
        sizes += len(data)
        packed += len(squeezed)
    return {
        "bytes": sizes,
        "compressed": packed,
        "ratio": round(sizes / packed, 1),
        "mb_per_s": round(sizes / 1e6 / seconds),
    }


def markdown(results: dict[str, Any]) -> str:
    """The tables for benchmarks/README.md."""
    lines = [
        "| store | instances | fault | calls | throughput (calls/s) | p50 ms | p95 ms | p99 ms "
        "| errors seen by the client | acknowledged runs (kept on one host) | lost |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        errors = "; ".join(f"{count} x {kind}" for kind, count in r["errors"].items()) or "0"
        if r["resent"]:
            errors += f" ({r['resent']} resent to another instance)"
        lines.append(
            f"| {r['store']} | {r['instances']} | {r['fault']} | {r['calls']:,} | {r['throughput']} "
            f"| {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {errors} "
            f"| {r['acknowledged_runs']} ({r['kept_locally']}) | {r['lost']} |"
        )
    look, packed = results["lookup"], results["compression"]
    lines += [
        "",
        f"- One id among {look['entries']:,} entries in Redis: `RedisExecutionCache.get` median {look['median_ms']} ms "
        f"(p95 {look['p95_ms']} ms) over loopback; a raw `GET` of the same key {look['raw_get_median_ms']} ms "
        "(target <= 1 ms).",
        f"- zlib level 1 on the five largest corpus responses (compact JSON): {packed['bytes']:,} -> "
        f"{packed['compressed']:,} bytes ({packed['ratio']}x), compress + decompress at {packed['mb_per_s']} MB/s.",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="A few calls, 1 and 2 instances (CI).")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "redis_load.json")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.concurrency, args.entries = 60, 4, 2000
    importlib.import_module("redis")
    cases = corpus_cases()
    results: dict[str, Any] = {"command": " ".join(["python", "benchmarks/redis_load.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="pflow-redis-load-") as tmp:
        workdir = Path(tmp)
        rows = []
        for instances in (1, 2) if args.smoke else (1, 2, 4):
            for store in ("file", "redis"):
                rows.append(scenario(store, instances, args, cases, workdir))
                print(json.dumps(rows[-1]), flush=True)
        if not args.smoke:
            for fault in ("kill", "redis-restart"):
                rows.append(scenario("redis", 4, args, cases, workdir, fault))
                print(json.dumps(rows[-1]), flush=True)
        results["rows"] = rows
        results["lookup"] = lookup(args.entries, workdir)
        print(json.dumps(results["lookup"]), flush=True)
        results["compression"] = compression(cases)
        print(json.dumps(results["compression"]), flush=True)
    bad = [r for r in rows if r["lost"]]
    print(markdown(results))
    if not args.smoke:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
