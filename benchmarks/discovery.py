"""(j) Two-phase discovery, issue 7: build time and token sizes of the discovery and planning
contexts over a registry of 250 nodes (nested outputs) and 50 saved workflows.

- Time: ``build_discovery_context`` over the whole registry, median of several runs; the
  parse of one Interface docstring (seed 003: 100 ms per structure parse); loading the 50
  workflows from disk (seed 003: 5 s for all).
- Tokens (o200k): the discovery context and the planning context for 5 chosen nodes and 2
  workflows, against the full interface listing of every node and workflow that a
  single-phase context would paste (each component's planning text, untruncated).
- Sizes: discovery <= 10 KB, planning for 5 nodes <= 50 KB (the seed's limits).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import tokens
from common import Context, median_seconds, row

NODES = 250
WORKFLOWS = 50
CHOSEN_NODES = 5
CHOSEN_WORKFLOWS = 2


def _full_listing(registry: dict[str, Any], workflows: list[dict[str, Any]]) -> str:
    """Every component's full interface, one planning call each so that no group limit cuts it."""
    from pflow_structure.discovery import build_planning_context

    parts = [str(build_planning_context([name], [], registry)) for name in sorted(registry)]
    parts += [str(build_planning_context([], [flow["name"]], registry, workflows)) for flow in workflows]
    return "\n\n".join(parts)


def _load_time(ctx: Context, workflows: list[dict[str, Any]], runs: int) -> tuple[float, int]:
    from pflow_structure.discovery import load_workflows, save_workflow

    directory = ctx.workdir / "discovery-workflows"
    for flow in workflows:
        save_workflow(directory, flow["name"], flow["description"], flow["ir"], inputs=flow["inputs"])
    loaded: list[int] = []
    seconds, _ = median_seconds(lambda: loaded.append(len(load_workflows(directory).workflows)), runs)
    return seconds, loaded[-1]


def _parse_time(registry: dict[str, Any], runs: int) -> float:
    from pflow_structure.discovery import parse_interface

    docstrings = [entry["docstring"] for entry in registry.values()][:50]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for docstring in docstrings:
            parse_interface(docstring)
        times.append((time.perf_counter() - started) / len(docstrings))
    return statistics.median(times)


def bench_discovery(ctx: Context) -> dict[str, Any]:
    from pflow_structure.discovery import build_discovery_context, build_planning_context
    from tests.test_discovery_context import scale_registry

    runs = 3 if ctx.smoke else 21
    registry, workflows = scale_registry(NODES, WORKFLOWS)
    build_seconds, _ = median_seconds(lambda: build_discovery_context(None, None, registry, workflows), runs)
    discovery = build_discovery_context(None, None, registry, workflows)
    chosen = sorted(registry)[:CHOSEN_NODES]
    chosen_flows = [flow["name"] for flow in workflows[:CHOSEN_WORKFLOWS]]
    planning = str(build_planning_context(chosen, chosen_flows, registry, workflows))
    full = _full_listing(registry, workflows)
    load_seconds, loaded = _load_time(ctx, workflows, runs)
    parse_seconds = _parse_time(registry, runs)
    sizes = {"discovery": len(discovery.encode()), "planning": len(planning.encode()), "full": len(full.encode())}
    counts = {name: tokens.count_tokens(text) for name, text in (("discovery", discovery), ("planning", planning))}
    counts["full"] = tokens.count_tokens(full)
    unit = "tokens" if tokens.method() == tokens.ENCODING else f"tokens, {tokens.method()}"
    both = counts["discovery"] + counts["planning"]
    return {
        "build_ms": build_seconds * 1000,
        "load_ms": load_seconds * 1000,
        "parse_ms": parse_seconds * 1000,
        "loaded_workflows": loaded,
        "bytes": sizes,
        "tokens": counts,
        "rows": [
            row(
                f"(j) discovery context build, {NODES} nodes + {WORKFLOWS} workflows",
                f"{build_seconds * 1000:.1f} ms (median of {runs}); {sizes['discovery']:,} bytes",
                "<= 10 KB (10,240 bytes)",
                sizes["discovery"] <= 10 * 1024,
            ),
            row(
                f"(j) discovery + planning ({CHOSEN_NODES} nodes, {CHOSEN_WORKFLOWS} workflows) vs full listing",
                f"{counts['discovery']:,} + {counts['planning']:,} = {both:,} {unit}; "
                f"planning {sizes['planning']:,} bytes",
                "planning <= 50 KB; both together smaller than the full listing",
                sizes["planning"] <= 50 * 1024 and both < counts["full"],
                reference=f"full interface listing {counts['full']:,} {unit} ({sizes['full']:,} bytes)",
                ratio=f"{both / counts['full']:.1%}" if counts["full"] else "",
            ),
            row(
                f"(j) Interface parse per docstring; loading {WORKFLOWS} saved workflows",
                f"{parse_seconds * 1000:.3f} ms per parse; load {load_seconds * 1000:.1f} ms ({loaded} loaded)",
                "<= 100 ms per parse; <= 5 s for all workflows",
                parse_seconds <= 0.1 and load_seconds <= 5 and loaded == WORKFLOWS,
            ),
        ],
    }
