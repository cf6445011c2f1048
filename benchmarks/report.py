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


START = "<!-- results: written by benchmarks/run.py; edits between these markers are replaced -->"
END = "<!-- end of results -->"


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
        "",
        *summary_table(results),
        "",
    ]
    benches = results["benchmarks"]
    if "rows" in benches.get("a_corpus_tokens", {}):
        lines += ["## (a) Tokens per corpus file", "", *corpus_table(benches["a_corpus_tokens"]), ""]
    if "rows" in benches.get("c_cold_process", {}):
        lines += ["## (c) Cold-process times", "", *cold_table(benches["c_cold_process"]), ""]
    missed = [r["benchmark"] for b in benches.values() for r in b.get("rows", []) if r["passed"] is False]
    crashed = [key for key, b in benches.items() if "error" in b]
    if missed or crashed:
        lines.append(f"Missed targets: {'; '.join(missed) or 'none'}. Crashed: {', '.join(crashed) or 'none'}.")
    return "\n".join(lines).rstrip() + "\n"
