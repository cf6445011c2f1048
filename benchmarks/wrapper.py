"""(f) A structure-only node in a PocketFlow flow: memory left in the shared store, and time.

One node writes a list of issue-like records (about 50 MB of Python objects; 5 MB in smoke).
Measured with tracemalloc after the flow returns and a gc: what the shared store still holds
when the node is wrapped, against the same node unwrapped in the same run. Times: a flow run
with the wrapper (encode, write the cache entry, infer the structure) against the bare run
plus ``json.dumps`` of the same value (what a caller that saves the output pays anyway).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from common import Context, median_seconds, row


def _records(count: int) -> list[dict[str, Any]]:
    return [
        {
            "number": i,
            "title": f"Issue {i}: the cache keeps this out of memory",
            "state": "open" if i % 3 else "closed",
            "body": ("lorem ipsum dolor sit amet " * 36)[: 900 + i % 100],
            "labels": [{"name": "bug", "color": "d73a4a"}] if i % 2 else [],
            "user": {"login": f"user{i % 50}", "id": 1000 + i % 50},
        }
        for i in range(count)
    ]


def _flow(count: int, wrapped: bool, ctx: Context) -> tuple[Any, dict[str, Any]]:
    from pocketflow import Flow, Node

    from pflow_structure import StructureOnlyNodeWrapper

    class LoadIssues(Node):  # type: ignore[misc]
        def exec(self, _prep: Any) -> list[dict[str, Any]]:
            return _records(count)

        def post(self, shared: dict[str, Any], _prep: Any, result: Any) -> str:
            shared["result"] = result
            return "default"

    node: Any = LoadIssues()
    if wrapped:
        node = StructureOnlyNodeWrapper(node, "load", settings=ctx.settings())
    return Flow(start=node), {}


def _retained_bytes(count: int, wrapped: bool, ctx: Context) -> int:
    """Bytes still allocated after the flow ran, with only the shared store kept."""
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        flow, shared = _flow(count, wrapped, ctx)
        flow.run(shared)
        del flow
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - baseline
        del shared
    finally:
        tracemalloc.stop()
    return retained


def bench_wrapper(ctx: Context) -> dict[str, Any]:
    count = 5_000 if ctx.smoke else 50_000
    payload_bytes = len(json.dumps(_records(count)))
    _retained_bytes(10, True, ctx)  # warm-up: first imports would count as retained memory
    wrapped = _retained_bytes(count, True, ctx)
    bare = _retained_bytes(count, False, ctx)

    def run_wrapped() -> None:
        flow, shared = _flow(count, True, ctx)
        flow.run(shared)

    def run_bare_and_dump() -> None:
        flow, shared = _flow(count, False, ctx)
        flow.run(shared)
        json.dumps(shared)

    runs = 1 if ctx.smoke else 3
    wrapped_s, _ = median_seconds(run_wrapped, runs)
    bare_s, _ = median_seconds(run_bare_and_dump, runs)
    mb = 1024 * 1024
    return {
        "records": count,
        "json_bytes": payload_bytes,
        "retained_wrapped_bytes": wrapped,
        "retained_bare_bytes": bare,
        "wrapped_seconds": wrapped_s,
        "bare_plus_dump_seconds": bare_s,
        "rows": [
            row(
                f"(f) shared store after a {payload_bytes / mb:.0f} MB (JSON) node output, structure-only",
                f"{wrapped / 1024:,.0f} KB",
                "under 10 MB for a 50 MB output",
                wrapped < 10 * mb if not ctx.smoke else None,
                reference=f"unwrapped {bare / mb:.1f} MB",
                ratio=f"{bare / max(wrapped, 1):,.0f}x less",
            ),
            row(
                "(f) flow run, structure-only (cache write + structure)",
                f"{wrapped_s:.2f} s",
                "none",
                None,
                reference=f"bare run + json.dumps {bare_s:.2f} s",
                ratio=f"{wrapped_s / max(bare_s, 1e-9):.1f}x",
            ),
        ],
    }
