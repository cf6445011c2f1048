"""(c) Cold-process times of the CLI, beside ``python -c pass`` measured in the same run."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import CORPUS, FIXED_ID, ISSUES_FILE, REPO, Context, median_seconds, row


def console_script() -> list[str] | None:
    candidate = Path(sys.executable).parent / "pflow-structure"
    return [str(candidate)] if candidate.is_file() else None


@dataclass
class Command:
    name: str
    argv: list[str]
    target_ms: float | None = None  # None: context only, not in the summary table
    bytecode: bool = True  # False: the package is compiled from source on every start


def _child_cpu() -> float:
    try:
        import resource
    except ImportError:  # not on Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_child(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and its stdout; raises when it fails."""
    cpu_before = _child_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    cpu = _child_cpu() - cpu_before
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return elapsed, cpu, done.stdout


def _child_envs(ctx: Context) -> dict[bool, dict[str, str]]:
    """Environments with and without a bytecode cache (kept out of the checkout either way)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    base["PFLOW_STRUCTURE_CACHE_DIR"] = str(ctx.cache_dir)
    cached = dict(base, PYTHONPYCACHEPREFIX=str(ctx.workdir / "pycache"))
    uncached = dict(base, PYTHONDONTWRITEBYTECODE="1")
    return {True: cached, False: uncached}


def cold_commands(ctx: Context, envs: dict[bool, dict[str, str]]) -> list[Command]:
    script = console_script()
    module = [sys.executable, "-m", "pflow_structure"]
    cli = script or module
    run_args = ["run", "read-json", f"path=tests/corpus/{ISSUES_FILE}"]
    out = _run_child([*cli, *run_args], envs[True])[2]
    match = re.search(r"^Execution ID: (\S+)", out, re.MULTILINE)
    if not match:
        raise RuntimeError(f"no execution id in the output of run:\n{out[:500]}")
    read_args = ["read-fields", match.group(1), "result[0].title"]
    read_name = "read-fields ID 'result[0].title'"
    commands = [Command("python -c pass", [sys.executable, "-c", "pass"])]
    if script:
        commands.append(Command(f"pflow-structure {read_name}", [*script, *read_args], 150))
    commands += [
        Command(f"python -m pflow_structure {read_name}", [*module, *read_args], 150),
        Command(f"pflow-structure run read-json path=tests/corpus/{ISSUES_FILE}", [*cli, *run_args], 500),
    ]
    if not ctx.smoke:  # context: without a bytecode cache, and where start-up goes (imports alone)
        commands.append(
            Command(f"python -m pflow_structure {read_name} (no bytecode cache)", [*module, *read_args], bytecode=False)
        )
        for modules in (
            "click",
            "pflow_structure.cli",
            "pflow_structure.service",
            "pflow_structure.cli, pflow_structure.service",
        ):
            commands.append(Command(f"python -c 'import {modules}'", [sys.executable, "-c", f"import {modules}"]))
    return commands


def bench_cold_process(ctx: Context) -> dict[str, Any]:
    envs = _child_envs(ctx)
    commands = cold_commands(ctx, envs)
    rounds = 2 if ctx.smoke else 11
    for command in commands:  # warm-up: bytecode and file caches
        _run_child(command.argv, envs[command.bytecode])
    wall: dict[str, list[float]] = {c.name: [] for c in commands}
    cpu: dict[str, list[float]] = {c.name: [] for c in commands}
    for _ in range(rounds):  # interleaved, so that load on the machine hits every command alike
        for command in commands:
            elapsed, used, _ = _run_child(command.argv, envs[command.bytecode])
            wall[command.name].append(elapsed)
            cpu[command.name].append(used)
    medians = {name: statistics.median(values) for name, values in wall.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    reference = medians["python -c pass"]
    reference_text = f"`python -c pass` {reference * 1000:.0f} ms (CPU {cpu_medians['python -c pass'] * 1000:.0f})"
    rows = []
    for command in commands:
        if command.target_ms is None:
            continue
        value = medians[command.name]
        rows.append(
            row(
                f"(c) cold `{command.name}`",
                f"{value * 1000:.0f} ms (median of {rounds}; CPU {cpu_medians[command.name] * 1000:.0f} ms)",
                f"<= {command.target_ms:g} ms",
                value * 1000 <= command.target_ms,
                reference=reference_text,
                ratio=f"{value / reference:.1f}x",
            )
        )
    return {
        "rounds": rounds,
        "bytecode_cache": "PYTHONPYCACHEPREFIX in a temporary directory, filled by one warm-up round",
        "median_ms": {name: round(v * 1000, 1) for name, v in medians.items()},
        "cpu_median_ms": {name: round(v * 1000, 1) for name, v in cpu_medians.items()},
        "min_ms": {name: round(min(v) * 1000, 1) for name, v in wall.items()},
        "ratio_to_python_c_pass": {name: round(v / reference, 2) for name, v in medians.items()},
        "samples_ms": {name: [round(s * 1000, 1) for s in v] for name, v in wall.items()},
        "breakdown_ms": run_breakdown(ctx, 1 if ctx.smoke else 5),
        "rows": rows,
    }


def run_breakdown(ctx: Context, runs: int) -> dict[str, float]:
    """In-process medians of the steps ``run read-json`` takes on the issue list (diagnostics)."""
    from pflow_structure import ExecutionCache, encode_value, infer_structure
    from pflow_structure.render.structure_text import render_structure_text

    path = CORPUS / ISSUES_FILE
    cache = ExecutionCache(ctx.workdir / "breakdown", fallback_directory=ctx.workdir / "breakdown-fallback")
    raw = path.read_text(encoding="utf-8")
    value = {"result": json.loads(raw)}
    encoded = encode_value(value)
    inferred = infer_structure(encoded.value)
    result = {"execution_id": FIXED_ID, "node_type": "read-json", "structure": inferred.structure}
    steps: dict[str, Callable[[], Any]] = {
        "read + json.loads": lambda: json.loads(path.read_text(encoding="utf-8")),
        "encode_value": lambda: encode_value(value),
        "ExecutionCache.put": lambda: cache.put("read-json", {"path": str(path)}, encoded.value),
        "infer_structure": lambda: infer_structure(encoded.value),
        "render_structure_text": lambda: render_structure_text(result),
    }
    return {name: round(median_seconds(step, runs)[0] * 1000, 1) for name, step in steps.items()}
