"""Issue 30: a large output at the speed of the disk, measured against ``json.load`` of the same file.

    python benchmarks/large.py            # the 339 MB list (70,000 GitHub issues), a few minutes
    python benchmarks/large.py --smoke    # a few MB, under a minute (CI); no timing assertions
    python benchmarks/large.py --reads-only   # the list's rows only (no cold start, no proxy)

The list is built from ``examples/data/github_issues.json`` (100 issues, repeated, each copy with its
own ``number``) into a temporary directory that is removed afterwards; it is never committed. Each
command runs in a fresh process, and its peak memory is that child's own ``ru_maxrss`` (``os.wait4``).
Times are medians; every ratio is against a reference measured in the same run (``json.load`` of the
file for the large commands, ``python -c pass`` for the cold start). Exit code 1 only when a command
fails; a missed target is printed, never an exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "examples" / "data" / "github_issues.json"
FULL_ITEMS = 70_000
SMOKE_ITEMS = 1_000
PROXY_RECORDS = 490_000  # about 100 MB of pretty JSON in one tool result
PROXY_SMOKE_RECORDS = 10_000


def build_list(path: Path, items: int) -> int:
    """Write ``items`` issues as one JSON list (``json.dumps`` spacing), each with its own number; its size."""
    issues = json.loads(SOURCE.read_text(encoding="utf-8"))
    with path.open("w", encoding="utf-8") as handle:
        handle.write("[")
        for i in range(items):
            issue = dict(issues[i % len(issues)], number=i + 1)
            handle.write((", " if i else "") + json.dumps(issue, ensure_ascii=False))
        handle.write("]")
    return path.stat().st_size


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (bytes) and stdout of one fresh process; raises when it fails."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}: {stderr.strip()[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024, stdout  # ru_maxrss is in KiB on Linux


def measure(argv: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    samples = [run_child(argv, env) for _ in range(runs)]
    return {
        "seconds": statistics.median(s[0] for s in samples),
        "peak_bytes": max(s[1] for s in samples),
        "stdout": samples[-1][2],
        "samples": [round(s[0], 3) for s in samples],
    }


def execution_id(stdout: str) -> str:
    match = re.search(r"^Execution ID: (\S+)", stdout, re.MULTILINE)
    if not match:
        raise RuntimeError(f"no execution id in the output of run:\n{stdout[:500]}")
    return match.group(1)


def cli() -> list[str]:
    script = Path(sys.executable).parent / "pflow-structure"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "pflow_structure"]


def bench(
    items: int, runs: int, cold_rounds: int, workdir: Path, proxy_records: int, reads_only: bool = False
) -> list[dict[str, Any]]:
    data = workdir / "issues.json"
    size = build_list(data, items)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.update(PFLOW_STRUCTURE_CACHE_DIR=str(workdir / "cache"), PYTHONPYCACHEPREFIX=str(workdir / "pycache"))
    load = [sys.executable, "-c", "import json, sys\nwith open(sys.argv[1], 'rb') as f: json.load(f)", str(data)]
    last = f"result[{items - 1}].title"
    full = items >= FULL_ITEMS
    reference = measure(load, env, runs)
    ran = measure([*cli(), "run", "read-json", f"path={data}"], env, runs)
    big_id = execution_id(ran["stdout"])
    read = measure([*cli(), "read-fields", big_id, last], env, runs)
    paging = ["--offset", "100", "--limit", "20"]
    page = measure([*cli(), "read-fields", big_id, "result[*]", *paging], env, runs)
    numbers = measure([*cli(), "read-fields", big_id, "result[*].number", *paging], env, runs)
    small = execution_id(run_child([*cli(), "run", "read-json", f"path={SOURCE}"], env)[2])
    rows = [
        _row(f"json.load of the file ({size / 1e6:.1f} MB, {items:,} items)", reference, reference, None, None),
        # The targets are for the 339 MB list; on the smoke list start-up dominates every time.
        _row(f"run read-json path=FILE ({items:,} items)", ran, reference, *((2.0, 1.5) if full else (None, None))),
        _row(
            f"read-fields ID '{last}'", read, reference, 0.1 if full else None, None, peak_cap=300e6 if full else None
        ),
        _row("read-fields ID 'result[*]' --offset 100 --limit 20", page, reference, None, None),
        # Issue 37.2: a page of a field of every item reads only the page's items.
        _row(
            "read-fields ID 'result[*].number' --offset 100 --limit 20",
            numbers,
            reference,
            0.1 if full else None,
            None,
            peak_cap=300e6 if full else None,
        ),
    ]
    if reads_only:
        return rows
    rows.extend(cold(env, small, cold_rounds))
    proxied = proxy_peak(env, proxy_records)
    rows.append(
        _row(
            f"proxy: one tool result of {proxied['wire_bytes'] / 1e6:.0f} MB (peak of the proxy process)",
            proxied,
            {"seconds": proxied["seconds"], "peak_bytes": proxied["wire_bytes"]},
            None,
            None,
        )
    )
    return rows


def proxy_peak(env: dict[str, str], records: int, tool: str = "big") -> dict[str, Any]:
    """The proxy's own peak memory (VmHWM, read before it exits) for one tool result of ``records``
    records of pretty JSON from tests/servers/faulty_mcp_server.py (the tool ``big``; ``malformed``: the
    same cut 40 characters short, which the proxy passes on; ``big_error``: the same text as an error
    result, passed on too; ``big_structured``: ``{"records": [...]}`` as text and as structuredContent;
    ``plain``: ``records`` lines of plain text),
    the size of that result on the wire (text and structuredContent), and the proxy's resident memory and
    peak before it (after ``initialize`` and a call of 3 records)."""
    server = [sys.executable, str(REPO / "tests" / "servers" / "faulty_mcp_server.py")]
    env = {**env, "FAULTY_SERVER_BIG_ERROR": "1"}
    proxy = subprocess.Popen(
        [*cli(), "proxy", "--", *server],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proxy.stdin is not None and proxy.stdout is not None
    start = time.perf_counter()

    def send(message: dict[str, Any]) -> None:
        assert proxy.stdin is not None
        proxy.stdin.write((json.dumps(message) + "\n").encode())
        proxy.stdin.flush()

    def answer(request_id: int) -> dict[str, Any]:
        assert proxy.stdout is not None
        while line := proxy.stdout.readline():
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)
        raise RuntimeError("the proxy closed its output before answering")

    info = {"name": "large.py", "version": "1"}
    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info},
        }
    )
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "big", "arguments": {"count": 3}}})
    answer(3)
    ready = _memory(proxy.pid)
    argument = {"malformed": "size", "plain": "lines"}.get(tool, "count")
    send(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {argument: records}}}
    )
    reply = answer(2)
    elapsed = time.perf_counter() - start
    peak = _memory(proxy.pid)["VmHWM"]
    proxy.stdin.close()
    proxy.wait(timeout=60)
    text = reply["result"]["content"][0]["text"]
    match = re.search(r"exec-\d+-[0-9a-f]+", text)
    if tool in ("big", "big_structured", "plain") and not match:
        raise RuntimeError(f"the proxy did not cache the result: {text[:300]}")
    if tool == "plain":  # ``records`` lines of plain text: cached as its lines
        wire = len("\n".join(f"line {n}: some plain text" for n in range(records)))
    elif tool == "big_structured":
        structured = {"records": records_like(records)}
        wire = len(json.dumps(structured, indent=2)) + len(json.dumps(structured))
    else:
        wire = len(json.dumps(records_like(records), indent=2))
    passed_length = {"malformed": wire - 40, "big_error": wire}.get(tool)
    if passed_length is not None and (
        len(text) != passed_length or reply["result"].get("isError") != (tool != "malformed")
    ):
        raise RuntimeError(f"the proxy did not pass the result on as it came: {text[:300]}")
    return {
        "seconds": elapsed,
        "peak_bytes": peak,
        "wire_bytes": wire,
        "ready_rss_bytes": ready["VmRSS"],
        "ready_peak_bytes": ready["VmHWM"],
    }


def _memory(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return {name: int(re.search(rf"{name}:\s+(\d+) kB", status).group(1)) * 1024 for name in ("VmRSS", "VmHWM")}  # type: ignore[union-attr]


def records_like(count: int) -> list[dict[str, Any]]:
    """The records tests/servers/faulty_mcp_server.py's ``big`` returns (for their size on the wire)."""
    return [
        {
            "id": index,
            "title": f"Record {index}: a title long enough to count",
            "state": "open" if index % 3 else "closed",
            "labels": [{"name": "bug"}, {"name": f"area-{index % 7}"}],
        }
        for index in range(count)
    ]


def cold(env: dict[str, str], small_id: str, rounds: int) -> list[dict[str, Any]]:
    """Cold ``read-fields`` on a small entry beside ``python -c pass``, interleaved rounds."""
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    commands["read-fields ID 'result[0].title' (small entry)"] = [*cli(), "read-fields", small_id, "result[0].title"]
    for argv in commands.values():
        run_child(argv, env)  # warm-up: bytecode and file caches
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            times[name].append(run_child(argv, env)[0])
    ref = {"seconds": statistics.median(times["python -c pass"]), "peak_bytes": 0}
    name = "read-fields ID 'result[0].title' (small entry)"
    read = {"seconds": statistics.median(times[name]), "peak_bytes": 0}
    return [_row("python -c pass", ref, ref, None, None), _row(f"cold {name}", read, ref, 1.5, None)]


def _row(
    name: str,
    m: dict[str, Any],
    ref: dict[str, Any],
    time_target: float | None,
    peak_target: float | None,
    peak_cap: float | None = None,
) -> dict[str, Any]:
    ratio = m["seconds"] / ref["seconds"]
    peak_ratio = m["peak_bytes"] / ref["peak_bytes"] if ref["peak_bytes"] else None
    ok = []
    if time_target is not None:
        ok.append(ratio <= time_target)
    if peak_target is not None and peak_ratio is not None:
        ok.append(peak_ratio <= peak_target)
    if peak_cap is not None:
        ok.append(m["peak_bytes"] <= peak_cap)
    return {
        "name": name,
        "seconds": round(m["seconds"], 3),
        "ratio": round(ratio, 3),
        "peak_mb": round(m["peak_bytes"] / 1e6, 1),
        "peak_ratio": None if peak_ratio is None else round(peak_ratio, 2),
        "target": _target(time_target, peak_target, peak_cap),
        "passed": all(ok) if ok else None,
    }


def _target(time_target: float | None, peak_target: float | None, peak_cap: float | None) -> str:
    parts = []
    if time_target is not None:
        parts.append(f"time <= {time_target:g}x")
    if peak_target is not None:
        parts.append(f"peak <= {peak_target:g}x")
    if peak_cap is not None:
        parts.append(f"peak <= {peak_cap / 1e6:.0f} MB")
    return ", ".join(parts)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| command | median time | time ratio | peak RSS | peak ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        met = "" if r["passed"] is None else ("yes" if r["passed"] else "no")
        peak = f"{r['peak_mb']:.0f} MB" if r["peak_mb"] else ""
        peak_ratio = "" if r["peak_ratio"] is None else f"{r['peak_ratio']:.2f}x"
        lines.append(
            f"| {r['name']} | {r['seconds'] * 1000:.0f} ms | {r['ratio']:.2f}x | {peak} | {peak_ratio} "
            f"| {r['target']} | {met} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_ITEMS:,} items and few runs")
    parser.add_argument("--items", type=int, help=f"list length (default {FULL_ITEMS:,}, smoke {SMOKE_ITEMS:,})")
    parser.add_argument("--runs", type=int, help="runs per large command (default 3, smoke 1)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    parser.add_argument("--reads-only", action="store_true", help="only the list's rows: no cold start, no proxy")
    args = parser.parse_args(argv)
    items = args.items or (SMOKE_ITEMS if args.smoke else FULL_ITEMS)
    runs = args.runs or (1 if args.smoke else 3)
    workdir = Path(tempfile.mkdtemp(prefix="pflow-structure-large-"))
    try:
        proxy_records = PROXY_SMOKE_RECORDS if args.smoke else PROXY_RECORDS
        rows = bench(items, runs, 3 if args.smoke else 21, workdir, proxy_records, args.reads_only)
    except RuntimeError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
