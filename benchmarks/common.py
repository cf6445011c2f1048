"""What the benchmarks share: paths, the run context, table rows, medians, the CLI text."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"
ISSUES_FILE = "github__list_issues.json"
SLACK_FILE = "slack__conversations_history_masked.json"
# Shown in place of the random execution id, so that token counts do not vary from run to run.
FIXED_ID = "exec-1763463202-0cd0c8fe"
PFLOW_PROBE_TOTAL_TOKENS = 24_273  # pflow-cli 0.16 `probe` on the same 28 files, quoted from DESIGN.md


@dataclass
class Context:
    smoke: bool
    workdir: Path  # a temporary directory, removed by the caller
    cache_dir: Path  # PFLOW_STRUCTURE_CACHE_DIR for in-process and child runs

    def settings(self) -> Any:
        from pflow_structure import Settings

        return Settings(cache_dir=self.cache_dir)


def row(
    name: str, measured: str, target: str, passed: bool | None, reference: str = "", ratio: str = ""
) -> dict[str, Any]:
    return {
        "benchmark": name,
        "measured": measured,
        "reference": reference,
        "ratio": ratio,
        "target": target,
        "passed": passed,
    }


def median_seconds(func: Callable[[], Any], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def cli_text(path: Path, ctx: Context) -> tuple[str, dict[str, Any]]:
    """What ``pflow-structure run read-json path=...`` prints, with a fixed execution id, and the structure
    dict (for an output answered as data, the structure of its cached copy)."""
    from pflow_structure import registry_run
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.service import cached_structure
    from pflow_structure.service.want_answer import answer_text

    settings = ctx.settings()
    result = registry_run("read-json", {"path": str(path)}, settings=settings, style="cli")
    if "data" in result:  # smaller as data than as structure (issue 35)
        text = answer_text(result, settings).replace(result["execution_id"], FIXED_ID)
        return text, cached_structure(result["execution_id"], settings=settings)
    shown = dict(result, execution_id=FIXED_ID)
    return render_structure_text(shown), result
