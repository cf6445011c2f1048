"""Issue 36.1: a ``$`` expression read on the 28 corpus files, RFC 9535 (our read path now) against
jsonpath-ng (the read path before, its parse cached as it would be).

    python benchmarks/jsonpath_read.py            # 7 runs per file and expression
    python benchmarks/jsonpath_read.py --smoke    # 1 run on the 5 smallest files (CI); no timing assertions
    python benchmarks/jsonpath_read.py --large 22 # pages of $..* on a 22 MB value (the corpus repeated)

Per file two expressions: ``$..KEY`` (KEY the file's most frequent key: a descendant name query, what
agents write) and ``$..*`` (every node: the most work a query can ask). Each is timed through
``pflow_structure.paths.resolve`` (what read-fields, ``fields`` and references call) and through
jsonpath-ng's ``find`` on the same parsed value, medians summed over the files; the ratio is ours/theirs.

``--large MB`` (the review fix): the 28 files repeated into one value of about MB megabytes, cached, then
``read-fields ID '$..*' --limit 20`` and ``read-fields ID '$..*'`` (what the CLI and MCP answer, within the
budget) timed against ``json.loads`` of the same text, medians of 3 runs.
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


def large_pages(megabytes: float, runs: int) -> None:
    """Pages of ``$..*`` on one large cached value against ``json.loads`` of its text."""
    import tempfile

    from pflow_structure import Settings
    from pflow_structure.service import store_outputs
    from pflow_structure.service.answers import read_fields_answer, read_fields_text_call

    files = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(CORPUS.glob("*.json"))]
    value: list[Any] = []
    size = 0
    while size < megabytes * 1_000_000:
        value.extend(files)
        size += sum(len(json.dumps(item)) for item in files)
    text = json.dumps(value)
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(cache_dir=Path(directory))
        execution_id = str(store_outputs("read-json", {}, value, settings=settings)["execution_id"])
        rows = [
            ("`json.loads` of the value's text (reference)", lambda: json.loads(text)),
            (
                "`read-fields ID '$..*' --limit 20`",
                lambda: read_fields_text_call(execution_id, ["$..*"], "text", limit=20, style="cli", settings=settings),
            ),
            (
                "`read-fields ID '$..*'` (text, the budget pages)",
                lambda: read_fields_text_call(execution_id, ["$..*"], "text", style="cli", settings=settings),
            ),
            (
                "MCP `read_fields(ID, ['$..*'])` (JSON)",
                lambda: read_fields_answer(execution_id, ["$..*"], settings=settings),
            ),
        ]
        print(f"| {len(text) / 1e6:.1f} MB value, {len(value)} files | median of {runs} | ratio to json.loads |")
        print("|---|---|---|")
        reference = 0.0
        for label, call in rows:
            seconds = median_seconds(call, runs)
            reference = reference or seconds
            print(f"| {label} | {seconds:.2f} s | {seconds / reference:.1f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one run per expression on the 5 smallest files")
    parser.add_argument("--large", type=float, metavar="MB", help="pages of $..* on a value of about MB megabytes")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else 7
    if args.large:
        large_pages(args.large, 1 if args.smoke else 3)
        return 0
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
