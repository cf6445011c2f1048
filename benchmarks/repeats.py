"""Issue 38.4's numbers: repeats said once, in value answers and through the proxy.

1. Value answers: ``read_fields(["result"])`` of a real code-scanning alert list
   (tests/data/repeats/github_code_scanning_alerts.json, each alert repeating its rule) in the text and
   auto formats, with each repeated object stated once (``"=PATH"``) against the same answer with sharing
   switched off in this very run (today's answer), and whether the shared answer reads back equal.
2. The proxy in front of the real server-filesystem (from .npm-servers or PFLOW_STRUCTURE_NPM_SERVERS):
   ``read_text_file`` of a file, the same call again (unchanged), then again after one field of the file
   changed; o200k tokens of each answer and of the raw result.

    .venv/bin/python benchmarks/repeats.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ALERTS = REPO / "tests" / "data" / "repeats" / "github_code_scanning_alerts.json"
ISSUES = REPO / "examples" / "data" / "github_issues.json"


def value_answers() -> list[tuple[str, int, int, bool]]:
    """(format, tokens today, tokens shared, reads back equal) for read_fields(["result"]) of the alerts."""
    import pflow_structure.render.shared as shared
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import store_outputs
    from pflow_structure.service.answers import read_fields_text_call

    alerts = json.loads(ALERTS.read_text(encoding="utf-8"))
    execution_id = store_outputs("benchmark:code-scanning-alerts", {}, {"result": alerts})["execution_id"]
    rows = []
    share = shared.share_repeats
    for format_name in ("text", "auto"):
        with_sharing = read_fields_text_call(execution_id, ["result"], format_name, max_tokens=100_000).text
        shared.share_repeats = lambda value, *args, **kwargs: (value, 0)  # today's answer: nothing shared
        try:
            today = read_fields_text_call(execution_id, ["result"], format_name, max_tokens=100_000).text
        finally:
            shared.share_repeats = share
        equal = read_back(with_sharing) == alerts
        rows.append((format_name, count_tokens(today), count_tokens(with_sharing), equal))
    return rows


def read_back(text: str) -> Any:
    """The value of an answer (the legend line, then ``result: JSON`` or ``result:`` over the value as
    compact JSON, auto's choice here), references expanded."""
    from pflow_structure.render.shared import LEGEND, expand_shared

    legend, body = text.split("\n", 1)
    assert legend == LEGEND
    written = body.removeprefix("result: ") if body.startswith("result: ") else body.removeprefix("result:\n  ")
    return expand_shared(json.loads(written), "result")


def filesystem() -> Path:
    base = Path(os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or REPO / ".npm-servers")
    return base / "node_modules" / ".bin" / "mcp-server-filesystem"


async def polled(source: Path, change: Any) -> dict[str, int]:
    """Tokens of the raw result and of each of three answers: first call, the same again, after ``change``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from pflow_structure.render.tokens import count_tokens

    folder = Path(tempfile.mkdtemp(prefix="repeats-"))
    target = folder / source.name
    shutil.copyfile(source, target)
    proxy = [sys.executable, "-m", "pflow_structure", "proxy", "--", str(filesystem()), str(folder)]
    server = StdioServerParameters(command=proxy[0], args=proxy[1:], env=dict(os.environ))

    async def text_of(client: Any) -> str:
        answer = await client.call_tool("read_text_file", {"path": str(target)})
        return "".join(block.text for block in answer.content if block.type == "text")

    try:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            first, again = await text_of(client), await text_of(client)
            value = json.loads(target.read_text(encoding="utf-8"))
            change(value)
            target.write_text(json.dumps(value, indent=2), encoding="utf-8")
            changed = await text_of(client)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    raw = count_tokens(source.read_text(encoding="utf-8"))
    return {"raw": raw, "first": count_tokens(first), "again": count_tokens(again), "changed": count_tokens(changed)}


def dismiss(alerts: Any) -> None:
    alerts[3]["state"] = "dismissed"


def reopen(issues: Any) -> None:
    issues[0]["state"] = "open"


def main() -> None:
    print("read_fields(['result']) of the code-scanning alerts (5 alerts, 2 rules):")
    print("| format | today (tokens) | repeats said once (tokens) | ratio | reads back equal |")
    for format_name, today, shared, equal in value_answers():
        print(f"| {format_name} | {today:,} | {shared:,} | {shared / today:.2f} | {equal} |")
    if not filesystem().exists():
        print(f"server-filesystem is not installed at {filesystem()}: the proxy part is skipped")
        return
    print("\nThrough the proxy, read_text_file called three times (the file changed before the third):")
    print("| file | raw result | first answer | same call again | after one field changed |")
    for source, change in ((ALERTS, dismiss), (ISSUES, reopen)):
        sizes = asyncio.run(polled(source, change))
        print(f"| {source.name} | {sizes['raw']:,} | {sizes['first']:,} | {sizes['again']:,} | {sizes['changed']:,} |")


if __name__ == "__main__":
    main()
