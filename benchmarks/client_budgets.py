"""Issue 38.1's acceptance numbers: the answers each client gets, by the name it sends in ``initialize``.

Through the proxy in front of the real server-filesystem (from .npm-servers or PFLOW_STRUCTURE_NPM_SERVERS),
on examples/data/github_issues.json, once per client name: the cached answer of read_text_file, then
read_fields(["result"]) read page by page as an agent would (each answer's _more followed), and the
largest answer in bytes, lines and o200k tokens against that client's budget (service/clients.py).

    .venv/bin/python benchmarks/client_budgets.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "examples" / "data"
ISSUES = str(DATA / "github_issues.json")
CLIENTS = ("codex-mcp-client", "claude-code", "some-agent")
sys.path.insert(0, str(REPO / "benchmarks"))


def filesystem() -> Path:
    base = Path(os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or REPO / ".npm-servers")
    return base / "node_modules" / ".bin" / "mcp-server-filesystem"


async def session(name: str, command: list[str], work: Any) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import Implementation

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    info = Implementation(name=name, version="1.0")
    async with stdio_client(server) as (read, write), ClientSession(read, write, client_info=info) as client:
        await client.initialize()
        return await work(client)


def measured(text: str) -> tuple[int, int, int]:
    from pflow_structure.render.tokens import count_tokens

    return len(text.encode("utf-8")), text.count("\n") + 1, count_tokens(text)


async def read_pages(client: Any) -> dict[str, Any]:
    """Every answer an agent gets reading the whole of ``result``, following each _more."""
    from answer_budget import read_every_page, text_of

    cached = text_of(await client.call_tool("read_text_file", {"path": ISSUES}))
    execution_id = cached.split("cached as ", 1)[1].split(".", 1)[0]
    whole, sizes = await read_every_page(client, execution_id, "result", measured)
    return {"sizes": [measured(cached), *sizes], "whole": whole}


def main() -> None:
    from pflow_structure.service.clients import client_budget

    if not filesystem().exists():
        raise SystemExit(
            f"{filesystem()} is missing: npm install --prefix .npm-servers @modelcontextprotocol/server-filesystem"
        )
    command = [sys.executable, "-m", "pflow_structure", "proxy", "--", str(filesystem()), str(DATA)]
    value = json.loads(Path(ISSUES).read_text())
    for name in CLIENTS:
        row = client_budget(name)
        found = asyncio.run(session(name, command, read_pages))
        sizes = found["sizes"]
        limit = f"{row.tokens:,} tokens" + "".join(
            f", {number:,} {unit}" for number, unit in ((row.max_bytes, "bytes"), (row.max_lines, "lines")) if number
        )
        same = "equal to the file" if found["whole"] == value else "DIFFERENT from the file"
        largest = [max(size[index] for size in sizes) for index in range(3)]
        print(
            f"{name} ({limit}): {len(sizes)} answers (the cached one, then {len(sizes) - 1} read_fields pages), "
            f"largest {largest[0]:,} bytes, {largest[1]:,} lines, {largest[2]:,} tokens; the pages together are {same}"
        )


if __name__ == "__main__":
    main()
