"""Markdown for benchmarks/README.md from the results dict that run.py writes."""

from __future__ import annotations

from typing import Any

INTRO = """\
# Benchmarks

Issue 2, acceptance item 4: what an agent's context pays for our output, and how fast the
paths an agent takes are. Everything here is produced by one command; the tables below are
the latest full run, rewritten by it.

```
python benchmarks/run.py           # full run: writes benchmarks/results.json and this README
python benchmarks/run.py --smoke   # small inputs, a few seconds (CI); exits 1 if a benchmark crashes
```

How it measures (see `DESIGN.md`, "Measuring"):

- Tokens are o200k_base, counted with tiktoken from the vocabulary file that litellm's wheel
  ships (found with `importlib.util.find_spec`, checked against tiktoken's pinned SHA-256; no
  network). Without it, counts are "estimated (chars/4)" and the tables say so.
- "Our output" is the default CLI text of `pflow-structure run read-json path=FILE`
  (`render_structure_text(registry_run(...))`), with the random execution id replaced by a fixed
  one of the same length so counts are reproducible. Pretty JSON is `json.dumps(value, indent=2,
  ensure_ascii=False)`, compact JSON the same with `separators=(",", ":")`.
- Times are medians of several runs; each is shown beside a reference measured in the same run
  (`python -c pass` for processes, `json.loads` of the same file for inference, a plain
  open+read of the same file for cache lookups). Absolute times are context: the ratio is what
  carries to other machines. CI runs `--smoke` and never asserts a time.
- Cold processes run with a bytecode cache, as after `pip install` (`PYTHONPYCACHEPREFIX` in a
  temporary directory, filled by a warm-up round, so nothing is written into the checkout and
  `PYTHONDONTWRITEBYTECODE` in the environment does not turn every start into a compile).
  `read-fields` reads an entry of `github__list_issues.json` (0.5 MB) made by `run` just before.
- The cache lives in a temporary directory (`PFLOW_STRUCTURE_CACHE_DIR`); `~/.pflow` is never
  touched. The 100,000 cache entries of (d) are small files written directly in the store's
  format and naming (`exec-{seconds}-{hex}.json`, 0600).
- (g) runs two npm MCP servers (`@modelcontextprotocol/server-filesystem` and `server-memory`,
  2026.8.31, from `.npm-servers/node_modules/.bin` or `$PFLOW_STRUCTURE_NPM_SERVERS`; without
  them the row says how to install them) through the MCP Python SDK's client, once directly and
  once behind `python -m pflow_structure proxy --`, both connected at once. Tokens are
  `visible_tokens` of the result's JSON form, counted as the agent reads it; times are medians
  of interleaved repeats after one untimed call, shown as proxied / direct.
- (h) runs the heuristic field filter (issue 5) on the 15 corpus files over 50 fields against
  `tests/data/filter_labels.json`, times it on every corpus structure, and counts the default
  CLI text (filtering on, no LLM) over the corpus.
"""


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|") if text not in (None, "") else "-"


def _verdict(passed: bool | None) -> str:
    return "n/a" if passed is None else ("pass" if passed else "**MISSED**")


def summary_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| Benchmark | Measured | Reference (same run) | Ratio | Target | Result |",
        "|---|---|---|---|---|---|",
    ]
    for key, bench in results["benchmarks"].items():
        if "error" in bench:
            lines.append(f"| {key} | crashed: {_cell(bench['error'].splitlines()[-1])} | - | - | - | **CRASHED** |")
            continue
        for r in bench["rows"]:
            cells = [r["benchmark"], r["measured"], r["reference"], r["ratio"], r["target"], _verdict(r["passed"])]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def corpus_table(bench: dict[str, Any]) -> list[str]:
    method = bench["token_method"]
    unit = "" if method == "o200k_base" else f" ({method})"
    lines = [
        f"Tokens: {method}. `>` marks files where our text is larger than the compact JSON it describes.",
        "",
        f"| File | Bytes | Paths listed | Our CLI text{unit} | Pretty JSON{unit} | Compact JSON{unit} "
        "| Pretty / ours | |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for f in bench["files"]:
        ratio = f["pretty"] / max(f["ours"], 1)
        flag = ">" if f["larger_than_compact"] else ""
        lines.append(
            f"| {f['file']} | {f['bytes']:,} | {f['paths']} | {f['ours']:,} | {f['pretty']:,} | "
            f"{f['compact']:,} | {ratio:,.1f}x | {flag} |"
        )
    t = bench["totals"]
    lines.append(
        f"| **total ({len(bench['files'])} files)** | | | **{t['ours']:,}** | **{t['pretty']:,}** | "
        f"**{t['compact']:,}** | {t['pretty'] / max(t['ours'], 1):,.1f}x | |"
    )
    lines += [
        "",
        f"pflow-cli 0.16's `probe` prints {bench['pflow_cli_0_16_probe_total_quoted']:,} tokens in all on the same "
        "28 files, and is larger than the compact JSON on 4 of them (quoted from DESIGN.md, not measured here).",
    ]
    return lines


def cold_table(bench: dict[str, Any]) -> list[str]:
    lines = [
        f"Medians of {bench['rounds']} interleaved rounds after one warm-up round, with a bytecode cache "
        "(as after `pip install`) unless the row says otherwise. CPU is the child's user+system time, which "
        "other load on the machine disturbs less than the wall-clock time.",
        "",
        "| Command | Median | Min | CPU (median) | Ratio to `python -c pass` |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, median in bench["median_ms"].items():
        lines.append(
            f"| `{name}` | {median:.0f} ms | {bench['min_ms'][name]:.0f} ms | "
            f"{bench['cpu_median_ms'][name]:.0f} ms | {bench['ratio_to_python_c_pass'][name]:.1f}x |"
        )
    lines += [
        "",
        "Where `run read-json` spends its time in-process (medians, ms; start-up and imports come on top):",
        "",
        "| Step | ms |",
        "|---|---:|",
    ]
    lines += [f"| {step} | {ms} |" for step, ms in bench["breakdown_ms"].items()]
    return lines


def proxy_table(bench: dict[str, Any]) -> list[str]:
    built = bench["built"]
    lines = [
        f"Each call ran once untimed and then {bench['repeats']} times timed on each side, interleaved; times are "
        "medians of the timed runs; the untimed first call is in the last column. Tokens are what the agent "
        "reads (`visible_tokens`: text blocks, plus "
        "structuredContent when it does not repeat the text), with execution ids and the temporary directory "
        "replaced by fixed strings. Proxy answer: `cached` (execution id + structure), `compacted` (compact JSON), "
        f"`passed` (unchanged). Inputs: a generated project tree of {built['tree_entries']:,} entries, a directory "
        f"of {built['flat_entries']} entries, {built['data_file']} ({built['data_bytes']:,} bytes) copied from the "
        f"corpus, and a knowledge graph of {built['entities']} made-up entities and {built['relations']} relations "
        "(created with create_relations, untimed, after the create_entities runs; create_entities runs after a "
        "delete_entities of the same names, untimed, so each run creates all of them).",
        "",
        "| Server | Call | Direct tokens | Proxy tokens | Direct / proxy | Proxy answer | Direct ms | Proxy ms "
        "| Proxy / direct time | First call ms, direct / proxy |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for e in bench["calls"]:
        ratio = e["tokens_direct"] / max(e["tokens_proxy"], 1)
        lines.append(
            f"| {e['server']} | {_cell(e['call'])} | {e['tokens_direct']:,} | {e['tokens_proxy']:,} | {ratio:,.1f}x "
            f"| {_cell(e['kind'])} | {e['median_ms_direct']:,.1f} | {e['median_ms_proxy']:,.1f} "
            f"| {e['latency_ratio']:.1f}x | {e['first_ms_direct']:,.0f} / {e['first_ms_proxy']:,.0f} |"
        )
    calls = bench["calls"]
    direct = sum(e["tokens_direct"] for e in calls)
    proxied = sum(e["tokens_proxy"] for e in calls)
    ms_direct = sum(e["median_ms_direct"] for e in calls)
    ms_proxy = sum(e["median_ms_proxy"] for e in calls)
    lines.append(
        f"| **total** | {len(calls)} calls | **{direct:,}** | **{proxied:,}** | {direct / max(proxied, 1):,.1f}x | "
        f"| {ms_direct:,.1f} | {ms_proxy:,.1f} | {ms_proxy / max(ms_direct, 1e-9):.1f}x | |"
    )
    follow_ups = [e for e in calls if "tokens" in e.get("follow_up", {})]
    if follow_ups:
        lines += ["", "A cached answer is usually followed by a `read_fields` call; one typical follow-up each:", ""]
        lines += ["| Call | Follow-up | Follow-up tokens | Proxy answer + follow-up | Direct | Follow-up ms |"]
        lines += ["|---|---|---:|---:|---:|---:|"]
        for e in follow_ups:
            f = e["follow_up"]
            args = f"`{f['tool']}` {', '.join(f['arguments']['field_paths'])}, limit {f['arguments']['limit']}"
            lines.append(
                f"| {e['server']} {e['tool']} | {_cell(args)} ({f['values_returned']} values) | {f['tokens']:,} "
                f"| {e['tokens_proxy'] + f['tokens']:,} | {e['tokens_direct']:,} | {f['median_ms']:,.1f} |"
            )
    startup = bench["startup_ms"]
    starts = [f"{name} direct {ms['direct']:,.0f} ms, proxy {ms['proxy']:,.0f} ms" for name, ms in startup.items()]
    lines += [
        "",
        "Start-up, from spawning the process to its answer to `initialize` (one start each): "
        + "; ".join(starts)
        + ".",
    ]
    return lines


START = "<!-- results: written by benchmarks/run.py; edits between these markers are replaced -->"
END = "<!-- end of results -->"


def filter_table(bench: dict[str, Any]) -> list[str]:
    lines = [
        "| File | Fields | Kept | Must-keep kept | Must-drop dropped | Filter ms | CLI text tokens |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in bench["files"]:
        if "keep_total" not in entry:
            continue
        lines.append(
            f"| {entry['file']} | {entry['fields']:,} | {entry['kept']} | {entry['keep_right']}/{entry['keep_total']} "
            f"| {entry['drop_right']}/{entry['drop_total']} | {entry['ms']:.1f} | {entry.get('cli_tokens', '-')} |"
        )
    return lines


def update_readme(existing: str | None, results: dict[str, Any]) -> str:
    """Replace the results between the markers; keep everything else (hand-written notes)."""
    block = f"{START}\n{render_results(results)}\n{END}"
    if existing and START in existing and END in existing:
        head, _, rest = existing.partition(START)
        _, _, tail = rest.partition(END)
        return head + block + tail
    return f"{INTRO}\n{block}\n"


def render_results(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        "## Latest results",
        "",
        f"- Command: `{meta['command']}`",
        f"- Date: {meta['date']}",
        f"- Machine: {meta['machine']}",
        f"- Python: {meta['python']}",
        f"- Tokens: {meta['token_method']}",
        f"- Load average at start / end: {meta['load_start']} / {meta['load_end']}",
        *(
            f"- Run again since: {name}, `{rerun['command']}`, {rerun['date']} "
            f"(load average {rerun['load_start']} / {rerun['load_end']})"
            for name, rerun in sorted(meta.get("reruns", {}).items())
        ),
        "",
        *summary_table(results),
        "",
    ]
    benches = results["benchmarks"]
    if "rows" in benches.get("a_corpus_tokens", {}):
        lines += ["## (a) Tokens per corpus file", "", *corpus_table(benches["a_corpus_tokens"]), ""]
    if "rows" in benches.get("c_cold_process", {}):
        lines += ["## (c) Cold-process times", "", *cold_table(benches["c_cold_process"]), ""]
    if "calls" in benches.get("g_mcp_proxy", {}):
        lines += ["## (g) MCP proxy, per call", "", *proxy_table(benches["g_mcp_proxy"]), ""]
    if "files" in benches.get("h_filter", {}):
        lines += ["## (h) Field filter, per labelled file", "", *filter_table(benches["h_filter"]), ""]
    missed = [r["benchmark"] for b in benches.values() for r in b.get("rows", []) if r["passed"] is False]
    crashed = [key for key, b in benches.items() if "error" in b]
    if missed or crashed:
        lines.append(f"Missed targets: {'; '.join(missed) or 'none'}. Crashed: {', '.join(crashed) or 'none'}.")
    return "\n".join(lines).rstrip() + "\n"
