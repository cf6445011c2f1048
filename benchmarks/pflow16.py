"""`pflow probe` on the 28 corpus files: pflow-cli 0.16 alone against 0.16 with our plugin.

Run it in a venv with pflow-cli 0.16 and this package (tiktoken comes with pflow's litellm):

    python3 -m venv .venv-pflow16 && .venv-pflow16/bin/pip install pflow-cli==0.16.0 -e .
    .venv-pflow16/bin/python benchmarks/pflow16.py            # all 28 files; prints the README table
    .venv-pflow16/bin/python benchmarks/pflow16.py --smoke    # 3 files

Each file is probed with the built-in `read-file` node, once with `pflow probe` (pflow's own
output) and once with `pflow-structure pflow probe` (the plugin installed), each in a fresh
process with its own HOME and cache directory. What is counted is stdout as an agent sees it,
with the execution id replaced by a fixed one and the "Execution time" line by a fixed time,
so counts do not vary from run to run. Tokens are o200k_base (see tokens.py).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CORPUS, FIXED_ID
from benchmarks.tokens import count_tokens, method

SMOKE_FILES = ("github__get_repo.json", "github__list_issues.json", "slack__conversations_history_masked.json")
_EXECUTION_ID = re.compile(r"exec-\d+-[0-9a-f]+")
_EXECUTION_TIME = re.compile(r"Execution time: \d+ms")


def _bin(name: str) -> str:
    found = Path(sys.executable).parent / name
    if not found.exists():
        sys.exit(f"{name} is not installed beside {sys.executable}; see this script's docstring")
    return str(found)


def _normalized(text: str) -> str:
    return _EXECUTION_TIME.sub("Execution time: 100ms", _EXECUTION_ID.sub(FIXED_ID, text))


def probe(command: list[str], path: Path, home: Path) -> str:
    """stdout of one probe of ``path`` with read-file, normalized; raises if the probe failed."""
    env = {
        **os.environ,
        "HOME": str(home),
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "utf-8",
        "PFLOW_STRUCTURE_CACHE_DIR": str(home / "cache"),
    }
    ran = subprocess.run(
        [*command, "probe", "read-file", f"file_path={path}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if ran.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} probe {path.name} failed: {ran.stderr[-500:]}")
    return _normalized(ran.stdout)


def measure(files: list[Path]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        alone, ours = [_bin("pflow")], [_bin("pflow-structure"), "pflow"]
        for path in files:
            theirs_text, ours_text = probe(alone, path, home), probe(ours, path, home)
            compact = count_tokens(_compact(path))
            rows.append(
                {
                    "file": path.name,
                    "compact_json": compact,
                    "pflow": count_tokens(theirs_text),
                    "plugin": count_tokens(ours_text),
                }
            )
    return rows


def _compact(path: Path) -> str:
    import json

    return json.dumps(json.loads(path.read_text(encoding="utf-8")), separators=(",", ":"), ensure_ascii=False)


def table(rows: list[dict[str, Any]]) -> str:
    total_pflow = sum(r["pflow"] for r in rows)
    total_ours = sum(r["plugin"] for r in rows)
    over_pflow = sum(r["pflow"] > r["compact_json"] for r in rows)
    over_ours = sum(r["plugin"] > r["compact_json"] for r in rows)
    lines = [
        "| file | compact JSON | pflow 0.16 `probe` | 0.16 + pflow-structure | saved |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        saved = 1 - r["plugin"] / r["pflow"] if r["pflow"] else 0.0
        lines.append(f"| {r['file']} | {r['compact_json']:,} | {r['pflow']:,} | {r['plugin']:,} | {saved:.0%} |")
    saved_total = 1 - total_ours / total_pflow if total_pflow else 0.0
    lines.append(
        f"| **all {len(rows)} files** | {sum(r['compact_json'] for r in rows):,} | **{total_pflow:,}** | "
        f"**{total_ours:,}** | **{saved_total:.0%}** |"
    )
    lines.append("")
    lines.append(
        f"Output larger than the compact JSON it describes: pflow 0.16 alone on {over_pflow} of {len(rows)} files, "
        f"with the plugin on {over_ours}. Tokens: {method()}."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="three files only (CI)")
    args = parser.parse_args()
    files = sorted(CORPUS.glob("*.json"))
    if args.smoke:
        files = [f for f in files if f.name in SMOKE_FILES]
    print(table(measure(files)))


if __name__ == "__main__":
    main()
