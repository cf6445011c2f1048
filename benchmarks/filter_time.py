"""The filter's time, this checkout against another one, interleaved (issue 37.1: no slower after the refactor).

    git archive d7bd0bc | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    python benchmarks/filter_time.py --before /tmp/before

Each round runs one process per checkout, the other checkout first, then this one; each process infers
the structure of a corpus file (by default the slowest to filter, the Slack history) and times
``filter_structure`` with the default options (the heuristic: no LLM key is read here), without and
with ``want``, as the median of ``--runs`` calls. Printed: each round's medians, then the median over
the rounds of each and the ratio this checkout / the other, in wall time and in the process's CPU time
(``cpu``: the number least moved by other work on a shared machine). Numbers are only comparable within a run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"
SLOWEST = "slack__conversations_history_masked.json"
WANT = "who wrote each message and what did it say"


def measure(root: str, name: str, runs: int) -> dict[str, float]:
    """Median milliseconds of one filter call on ``name``, with the package under ``root``."""
    sys.path.insert(0, root)
    from pflow_structure.encoding import encode_value
    from pflow_structure.filtering import FilterOptions, filter_structure
    from pflow_structure.structure import infer_structure

    if not str(Path(sys.modules["pflow_structure"].__file__ or "").resolve()).startswith(str(Path(root).resolve())):
        raise SystemExit(f"pflow_structure was not imported from {root}")
    inferred = infer_structure(encode_value({"result": json.loads((CORPUS / name).read_text("utf-8"))}).value)
    out = {}
    for label, want in (("heuristic", None), ("want", WANT)):
        times, cpu = [], []
        for _ in range(runs):
            started, started_cpu = time.perf_counter(), time.process_time()
            filter_structure(
                inferred.structure, inferred.field_count, "n", FilterOptions(), signals=inferred.signals, want=want
            )
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        out[label] = statistics.median(times) * 1000
        out[label + " cpu"] = statistics.median(cpu) * 1000  # this process's CPU time: less moved by others' work
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the root of the other checkout (holding pflow_structure/)")
    parser.add_argument("--file", default=SLOWEST, help="a file of tests/corpus (default: the slowest to filter)")
    parser.add_argument("--rounds", type=int, default=7, help="processes per checkout, interleaved")
    parser.add_argument("--runs", type=int, default=31, help="filter calls per process (their median is kept)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a child process: the root to measure
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.file, args.runs)))
        return 0
    rows: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for round_number in range(args.rounds):
        for label, root in (("before", args.before), ("after", str(REPO))):
            command = [sys.executable, __file__, "--before", args.before, "--file", args.file]
            command += ["--runs", str(args.runs), "--measure", root]
            found = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
            rows[label].append(found)
            print(f"round {round_number + 1} {label}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in found.items()))
    for mode in ("heuristic", "want", "heuristic cpu", "want cpu"):
        before = statistics.median(row[mode] for row in rows["before"])
        after = statistics.median(row[mode] for row in rows["after"])
        print(f"{args.file}, {mode}: before {before:.2f} ms, after {after:.2f} ms, after/before {after / before:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
