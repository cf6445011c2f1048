"""The benchmarks of issue 2, acceptance item 4: (a) to (e); (f) is issue 3's structure-only wrapper,
(g) issue 4's MCP proxy.

Each ``bench_*`` function takes a :class:`Context` and returns a JSON-safe dict with its raw
numbers and ``rows``: the lines of the summary table (measured, reference measured in the
same run, ratio, target, pass/fail). Times are medians of several runs; absolute times are
context, ratios to a reference measured in the same run are what compare across machines.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tokens
from cold import bench_cold_process
from common import (
    CORPUS,
    ISSUES_FILE,
    PFLOW_PROBE_TOTAL_TOKENS,
    SLACK_FILE,
    Context,
    cli_text,
    median_seconds,
    row,
)
from discovery import bench_discovery
from filtering import bench_filter
from formats import bench_formats
from proxy import bench_proxy
from wrapper import bench_wrapper

# -- (a) tokens of the CLI output for every corpus file ------------------------------------


def bench_corpus_tokens(ctx: Context) -> dict[str, Any]:
    files = sorted(CORPUS.glob("*.json"))
    if ctx.smoke:
        files = [f for f in files if f.stat().st_size < 20_000][:5]
    per_file = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        text, result = cli_text(path, ctx)
        ours = tokens.count_tokens(text)
        pretty = tokens.count_tokens(json.dumps(data, indent=2, ensure_ascii=False))
        compact = tokens.count_tokens(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
        per_file.append(
            {
                "file": path.name,
                "bytes": path.stat().st_size,
                "paths": len(result["structure"]),
                "field_count": result["field_count"],
                "ours": ours,
                "pretty": pretty,
                "compact": compact,
                "larger_than_compact": ours > compact,
            }
        )
    totals = {key: sum(f[key] for f in per_file) for key in ("ours", "pretty", "compact")}
    larger = [f["file"] for f in per_file if f["larger_than_compact"]]
    full_corpus = not ctx.smoke
    label = f"all {len(files)} corpus files" if full_corpus else f"{len(files)} small corpus files (smoke)"
    rows = [
        row(
            f"(a) CLI text tokens, {label}",
            f"{totals['ours']:,} tokens" + ("" if tokens.method() == tokens.ENCODING else f" ({tokens.method()})"),
            "none yet (the filtering issue sets one)",
            None,
            reference=f"pretty JSON {totals['pretty']:,}; compact {totals['compact']:,}"
            + (f"; pflow-cli 0.16 probe {PFLOW_PROBE_TOTAL_TOKENS:,} (quoted)" if full_corpus else ""),
            ratio=f"pretty/ours {totals['pretty'] / max(totals['ours'], 1):,.0f}x",
        ),
        row(
            "(a) files where our text > compact JSON",
            f"{len(larger)} of {len(per_file)}" + (f": {', '.join(larger)}" if larger else ""),
            "none yet (pflow-cli 0.16: 4 of 28)",
            None,
        ),
    ]
    return {
        "token_method": tokens.method(),
        "files": per_file,
        "totals": totals,
        "larger_than_compact": larger,
        "pflow_cli_0_16_probe_total_quoted": PFLOW_PROBE_TOTAL_TOKENS,
        "rows": rows,
    }


# -- (b) an 847-item GitHub issue list ------------------------------------------------------


def build_issue_list(count: int) -> list[dict[str, Any]]:
    """``count`` distinct issues cycled from the corpus's 100, renumbered (number, id, URLs)."""
    base = json.loads((CORPUS / ISSUES_FILE).read_text(encoding="utf-8"))
    items = []
    for i in range(count):
        template = base[i % len(base)]
        number = count - i  # newest first, as GitHub lists them
        text = json.dumps(template, ensure_ascii=False)
        old = template["number"]
        text = re.sub(rf"/(issues|pull|pulls)/{old}\b", rf"/\g<1>/{number}", text)
        item = json.loads(text)
        item["number"] = number
        item["id"] = 900_000_000 + number
        items.append(item)
    return items


def bench_issue_list_ratio(ctx: Context) -> dict[str, Any]:
    count = 120 if ctx.smoke else 847
    items = build_issue_list(count)
    assert len({item["id"] for item in items}) == count
    path = ctx.workdir / f"github_issues_{count}.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    text, result = cli_text(path, ctx)
    ours = tokens.count_tokens(text)
    pretty = tokens.count_tokens(json.dumps(items, indent=2, ensure_ascii=False))
    ratio = pretty / ours
    target = 600
    return {
        "items": count,
        "ours": ours,
        "pretty": pretty,
        "ratio": round(ratio, 1),
        "paths": len(result["structure"]),
        "target_ratio": target,
        "rows": [
            row(
                f"(b) {count} GitHub issues: pretty JSON / our CLI text",
                f"{ours:,} tokens" + ("" if tokens.method() == tokens.ENCODING else f" ({tokens.method()})"),
                f">= {target}x" if not ctx.smoke else f"(>= {target}x applies to 847 items)",
                ratio >= target if not ctx.smoke else None,
                reference=f"pretty JSON {pretty:,} tokens",
                ratio=f"{ratio:,.0f}x",
            )
        ],
    }


# -- (d) one id among many cache entries -------------------------------------------------------


def fill_cache(directory: Path, count: int) -> list[str]:
    """``count`` small entries in the store's file format, written directly (put is slower)."""
    directory.mkdir(mode=0o700, parents=True)
    now = int(time.time())
    ids = []
    for i in range(count):
        seconds = now - (i % 3600)  # all within the last hour, so none has expired
        execution_id = f"exec-{seconds}-{secrets.token_hex(4)}"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
        entry = {
            "execution_id": execution_id,
            "node_type": "read-json",
            "timestamp": stamp,
            "ttl_hours": 24.0,
            "params": {"path": f"data/{i}.json"},
            "outputs": {"result": [{"number": i, "title": f"Issue {i}"}]},
            "binary_paths": [],
            "notes": [],
            "format_version": 1,
        }
        fd = os.open(directory / f"{execution_id}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle, separators=(",", ":"))
        ids.append(execution_id)
    return ids


def _lookup_times(get: Callable[[str], Any], ids: Sequence[str]) -> list[float]:
    times = []
    for execution_id in ids:
        start = time.perf_counter()
        get(execution_id)
        times.append(time.perf_counter() - start)
    return times


def bench_cache_lookup(ctx: Context) -> dict[str, Any]:
    from pflow_structure import ExecutionCache, ExecutionNotFoundError

    sizes = [(1_000, 100.0, "spec criterion 20")] + ([] if ctx.smoke else [(100_000, 5.0, "issue 2 (d)")])
    out: dict[str, Any] = {"rows": []}
    for count, target_ms, source in sizes:
        directory = ctx.workdir / f"cache-{count}"
        start = time.perf_counter()
        ids = fill_cache(directory, count)
        fill_seconds = time.perf_counter() - start
        cache = ExecutionCache(directory, fallback_directory=ctx.workdir / f"cache-{count}-fallback")
        probe = ids[:: max(1, count // 1000)][:1000]
        cache.get(probe[0])  # warm the code path once
        hits = _lookup_times(cache.get, probe)

        def read_raw(execution_id: str, directory: Path = directory) -> bytes:
            with open(directory / f"{execution_id}.json", "rb") as handle:
                return handle.read()

        raw = _lookup_times(read_raw, probe)

        def miss(execution_id: str, cache: Any = cache) -> None:
            try:
                cache.get(execution_id)
            except ExecutionNotFoundError:
                return
            raise AssertionError(f"{execution_id} should not exist")

        misses = _lookup_times(miss, [f"exec-{int(time.time())}-{secrets.token_hex(4)}" for _ in range(200)])
        hit_ms = statistics.median(hits) * 1000
        raw_ms = statistics.median(raw) * 1000
        out[str(count)] = {
            "entries": count,
            "fill_seconds": round(fill_seconds, 2),
            "lookups": len(hits),
            "hit_median_ms": round(hit_ms, 4),
            "hit_p95_ms": round(sorted(hits)[int(len(hits) * 0.95)] * 1000, 4),
            "hit_max_ms": round(max(hits) * 1000, 4),
            "miss_median_ms": round(statistics.median(misses) * 1000, 4),
            "open_read_median_ms": round(raw_ms, 4),
            "target_ms": target_ms,
        }
        out["rows"].append(
            row(
                f"(d) ExecutionCache.get, one id among {count:,} entries ({source})",
                f"{hit_ms:.3f} ms (median of {len(hits)}; p95 {out[str(count)]['hit_p95_ms']:.3f})",
                f"<= {target_ms:g} ms",
                hit_ms <= target_ms,
                reference=f"open+read of the file {raw_ms:.3f} ms",
                ratio=f"{hit_ms / raw_ms:.1f}x",
            )
        )
    return out


# -- (e) structure inference of a 2.6 MB file --------------------------------------------------


def bench_inference(ctx: Context) -> dict[str, Any]:
    from pflow_structure import infer_structure

    name = "slack__status_history.json" if ctx.smoke else SLACK_FILE
    path = CORPUS / name
    raw = path.read_text(encoding="utf-8")
    value = {"result": json.loads(raw)}
    runs = 2 if ctx.smoke else 7
    infer_median, infer_times = median_seconds(lambda: infer_structure(value), runs)
    loads_median, _ = median_seconds(lambda: json.loads(raw), runs)
    target = 0.5
    inferred = infer_structure(value)
    return {
        "file": name,
        "bytes": path.stat().st_size,
        "runs": runs,
        "infer_median_s": round(infer_median, 4),
        "infer_times_s": [round(t, 4) for t in infer_times],
        "json_loads_median_s": round(loads_median, 4),
        "ratio_to_json_loads": round(infer_median / loads_median, 2),
        "paths": len(inferred.structure),
        "rows": [
            row(
                f"(e) infer_structure on {name} ({path.stat().st_size / 1e6:.1f} MB, parsed beforehand)",
                f"{infer_median * 1000:.0f} ms (median of {runs})",
                f"<= {target * 1000:.0f} ms"
                if not ctx.smoke
                else f"(<= {target * 1000:.0f} ms applies to {SLACK_FILE})",
                infer_median <= target if not ctx.smoke else None,
                reference=f"json.loads of the same file {loads_median * 1000:.0f} ms",
                ratio=f"{infer_median / loads_median:.1f}x",
            )
        ],
    }


BENCHMARKS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "a_corpus_tokens": bench_corpus_tokens,
    "b_issue_list_ratio": bench_issue_list_ratio,
    "c_cold_process": bench_cold_process,
    "d_cache_lookup": bench_cache_lookup,
    "e_inference": bench_inference,
    "f_wrapper": bench_wrapper,
    "g_mcp_proxy": bench_proxy,
    "h_filter": bench_filter,
    "i_formats": bench_formats,
    "j_discovery": bench_discovery,
}
