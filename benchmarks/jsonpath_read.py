"""Issue 36.1: a ``$`` expression read on the 28 corpus files, RFC 9535 (our read path now) against
jsonpath-ng (the read path before, its parse cached as it would be).

    python benchmarks/jsonpath_read.py            # 7 runs per file and expression
    python benchmarks/jsonpath_read.py --smoke    # 1 run on the 5 smallest files (CI); no timing assertions

Per file two expressions: ``$..KEY`` (KEY the file's most frequent key: a descendant name query, what
agents write) and ``$..*`` (every node: the most work a query can ask). Each is timed through
``pflow_structure.paths.resolve`` (what read-fields, ``fields`` and references call) and through
jsonpath-ng's ``find`` on the same parsed value, medians summed over the files; the ratio is ours/theirs.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CORPUS


def most_frequent_key(value: Any) -> str:
    counts: collections.Counter[str] = collections.Counter()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            counts.update(k for k in item if isinstance(k, str) and k.isidentifier())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return counts.most_common(1)[0][0] if counts else "id"


def median_seconds(call: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one run per expression on the 5 smallest files")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else 7
    from jsonpath_ng.ext.parser import parse as ng_parse

    from pflow_structure.errors import PathNotFoundError
    from pflow_structure.paths import resolve

    totals = {"$..KEY": [0.0, 0.0], "$..*": [0.0, 0.0]}
    files = sorted(CORPUS.glob("*.json"))
    if args.smoke:
        files = sorted(files, key=lambda file: file.stat().st_size)[:5]
    for path in files:
        root = {"result": json.loads(path.read_text(encoding="utf-8"))}
        for label, expression in (("$..KEY", f"$..{most_frequent_key(root)}"), ("$..*", "$..*")):
            compiled = ng_parse(expression)  # parse cached: only find is timed, as our compile cache does

            def ours(expression: str = expression, root: Any = root) -> None:
                with contextlib.suppress(PathNotFoundError):  # a query that finds nothing says why
                    resolve(root, expression)

            def theirs(compiled: Any = compiled, root: Any = root) -> None:
                [(datum.full_path, datum.value) for datum in compiled.find(root)]

            ours()  # compile once, as a process that reads twice does
            totals[label][0] += median_seconds(ours, runs)
            totals[label][1] += median_seconds(theirs, runs)
    print(f"| expression (summed over {len(files)} corpus files) | RFC 9535 (ours) | jsonpath-ng | ratio |")
    print("|---|---|---|---|")
    for label, (ours_s, theirs_s) in totals.items():
        print(f"| `{label}` | {ours_s * 1000:.1f} ms | {theirs_s * 1000:.1f} ms | {ours_s / theirs_s:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
