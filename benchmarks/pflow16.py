"""`pflow probe` on the 28 corpus files: pflow-cli 0.16 alone against 0.16 with our plugin.

Run it in a venv with pflow-cli 0.16 and this package (tiktoken comes with pflow's litellm):

    python3 -m venv .venv-pflow16 && .venv-pflow16/bin/pip install pflow-cli==0.16.0 -e .
    .venv-pflow16/bin/python benchmarks/pflow16.py            # all 28 files; prints the README table
    .venv-pflow16/bin/python benchmarks/pflow16.py --smoke    # one file (CI)

Each file is probed with two built-in nodes: `http` (GET from a file server this script starts
on 127.0.0.1; the node parses the JSON body, so `response` is the value itself) and
`read-file` (the file's text as `content`, a JSON string). Each probe runs once with `pflow
probe` (pflow's own output) and once with `pflow-structure pflow probe` (the plugin installed),
each in a fresh process with one temporary HOME and cache directory, no API key (pflow's smart
filter then lists every field; ours uses the heuristic filter). What is counted is stdout as an
agent sees it, with the execution id replaced by a fixed one and the "Execution time" line by a
fixed time, so counts do not vary from run to run. Tokens are o200k_base (see tokens.py).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CORPUS, FIXED_ID
from benchmarks.tokens import count_tokens, method

SMOKE_FILES = ("github__list_issues.json",)
_EXECUTION_ID = re.compile(r"exec-\d+-[0-9a-f]+")
_EXECUTION_TIME = re.compile(r"Execution time: \d+ms")


def _bin(name: str) -> str:
    found = Path(sys.executable).parent / name
    if not found.exists():
        sys.exit(f"{name} is not installed beside {sys.executable}; see this script's docstring")
    return str(found)


def _normalized(text: str) -> str:
    return _EXECUTION_TIME.sub("Execution time: 100ms", _EXECUTION_ID.sub(FIXED_ID, text))


def probe(command: list[str], node: list[str], home: Path) -> str:
    """stdout of one probe (``node``: the node type and its params), normalized; raises if it failed."""
    env = {
        **os.environ,
        "HOME": str(home),
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "utf-8",
        "PFLOW_STRUCTURE_CACHE_DIR": str(home / "cache"),
    }
    ran = subprocess.run(
        [*command, "probe", *node],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if ran.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} probe {' '.join(node)} failed: {ran.stderr[-500:]}")
    return _normalized(ran.stdout)


def measure(files: list[Path]) -> list[dict[str, Any]]:
    rows = []
    alone, ours = [_bin("pflow")], [_bin("pflow-structure"), "pflow"]
    with tempfile.TemporaryDirectory() as tmp, _file_server(CORPUS) as base_url:
        home = Path(tmp)
        for path in files:
            http = ["http", f"url={base_url}/{path.name}"]
            read_file = ["read-file", f"file_path={path}"]
            rows.append(
                {
                    "file": path.name,
                    "compact_json": count_tokens(_compact(path)),
                    "http_pflow": count_tokens(probe(alone, http, home)),
                    "http_plugin": count_tokens(probe(ours, http, home)),
                    "read_file_pflow": count_tokens(probe(alone, read_file, home)),
                    "read_file_plugin": count_tokens(probe(ours, read_file, home)),
                }
            )
    return rows


@contextlib.contextmanager
def _file_server(directory: Path) -> Iterator[str]:
    """The corpus over HTTP on 127.0.0.1 (a free port), for pflow's http node; stopped on exit."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _compact(path: Path) -> str:
    import json

    return json.dumps(json.loads(path.read_text(encoding="utf-8")), separators=(",", ":"), ensure_ascii=False)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| file | compact JSON | `http`: pflow 0.16 | `http`: + plugin | `read-file`: pflow 0.16 "
        "| `read-file`: + plugin |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    keys = ("compact_json", "http_pflow", "http_plugin", "read_file_pflow", "read_file_plugin")
    for r in rows:
        lines.append(f"| {r['file']} | " + " | ".join(f"{r[k]:,}" for k in keys) + " |")
    totals = {k: sum(r[k] for r in rows) for k in keys}
    lines.append(f"| **all {len(rows)} files** | " + " | ".join(f"**{totals[k]:,}**" for k in keys) + " |")
    over = {k: sum(r[k] > r["compact_json"] for r in rows) for k in keys[1:]}
    largest = {k: max(rows, key=lambda r, k=k: r[k]) for k in keys[1:]}
    lines += [
        "",
        f"`http`: {totals['http_pflow']:,} tokens from pflow 0.16 alone, {totals['http_plugin']:,} with the plugin "
        f"({1 - totals['http_plugin'] / totals['http_pflow']:.0%} fewer); larger than the compact JSON on "
        f"{over['http_pflow']} and {over['http_plugin']} of {len(rows)} files; largest single output "
        f"{largest['http_pflow']['http_pflow']:,} ({largest['http_pflow']['file']}) and "
        f"{largest['http_plugin']['http_plugin']:,} ({largest['http_plugin']['file']}).",
        f"`read-file`: {totals['read_file_pflow']:,} and {totals['read_file_plugin']:,} tokens: pflow shows the "
        "content as one truncated string (no template paths inside it), the plugin the structure of the JSON in "
        "it, with template paths such as `${content[0].title}` that pflow's templates resolve.",
        f"Tokens: {method()}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one file only (CI)")
    args = parser.parse_args()
    files = sorted(CORPUS.glob("*.json"))
    if args.smoke:
        files = [f for f in files if f.name in SMOKE_FILES]
    print(table(measure(files)))


if __name__ == "__main__":
    main()
