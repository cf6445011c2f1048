"""Start-up of ``pflow-structure serve`` (stdio): spawn to the ``initialize`` answer.

    python benchmarks/startup.py            # 7 starts of each command, medians
    python benchmarks/startup.py --runs 3   # quicker (CI smoke: --runs 1)

Each start writes one ``initialize`` request to the child's stdin and stops the clock when the
answer line arrives, as an MCP client does at every session. Three commands, measured in the
same run and interleaved, so the ratios hold on a busy machine:

- ``python -c pass``: the interpreter alone.
- a minimal server on the same MCP SDK (one tool, ``MCPServer``/``FastMCP``): the floor any
  Python MCP server on this SDK pays, mostly for importing it.
- ``pflow-structure serve``.

Times are wall-clock medians; the ratio ``serve / minimal SDK server`` is the number to watch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
MINIMAL_SERVER = """
try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server
app = Server("floor")

@app.tool()
def echo(text: str) -> str:
    '''Echo the text.'''
    return text

app.run()
"""


def commands() -> dict[str, list[str]]:
    script = Path(sys.executable).parent / "pflow-structure"
    serve = [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "pflow_structure", "serve"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "minimal MCP server (same SDK)": [sys.executable, "-c", MINIMAL_SERVER],
        "pflow-structure serve": serve,
    }


def start_once(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from spawn to the initialize answer (to exit, for a command that is no server)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        child.stdin.flush()
    except BrokenPipeError:  # python -c pass may be gone already
        pass
    line = child.stdout.readline()
    elapsed = time.perf_counter() - started
    if argv[-1] != "pass" and b'"result"' not in line:
        child.kill()
        raise RuntimeError(f"{argv[-1]!r} gave no initialize answer: {line[:200]!r} {child.stderr.read()[-500:]!r}")
    child.stdin.close()
    child.wait(timeout=60)
    return elapsed


def measure(runs: int) -> dict[str, float]:
    env = dict(os.environ)
    env.setdefault("PFLOW_STRUCTURE_CACHE_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "pflow-structure-bench"))
    named = commands()
    for argv in named.values():  # one untimed start each: bytecode compiled, files in the page cache
        start_once(argv, env)
    times: dict[str, list[float]] = {name: [] for name in named}
    for run in range(runs):
        order = list(named.items()) if run % 2 == 0 else list(named.items())[::-1]
        for name, argv in order:
            times[name].append(start_once(argv, env))
    return {name: statistics.median(values) * 1000 for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed starts per command (default 7)")
    args = parser.parse_args(argv)
    from importlib.metadata import version

    medians = measure(max(1, args.runs))
    floor = medians["minimal MCP server (same SDK)"]
    print(f"python {sys.version.split()[0]}, mcp {version('mcp')}, {args.runs} runs, load {os.getloadavg()[0]:.1f}")
    print("| command | median ms | vs minimal SDK server |")
    print("|---|---:|---:|")
    for name, ms in medians.items():
        print(f"| `{name}` | {ms:,.0f} | {ms / floor:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
