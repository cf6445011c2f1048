"""Issue 39: what ``tools/list`` costs, direct and through the proxy in each ``--tools`` mode.

For server-filesystem and server-everything (the pinned npm servers, tests/npm-servers.txt): one
MCP Python SDK client on the server directly, and one on ``python -m pflow_structure proxy --tools
MODE -- <the same command>`` for each of full (as before issue 39), compact and light. Tokens are
o200k_base tokens of the answer's ``{"tools": [...]}`` as compact JSON (the wire's protocol objects,
``model_dump(by_alias=True, exclude_none=True, mode="json")``). Each ratio is against the direct
list of the same run. For the light list: its most expensive upstream tool, and the first call of an
upstream tool in that session, made without a describe first. Then ``search_tools`` for "read a
file" on server-filesystem through the light list, and 16 requests in plain words over a gateway of
server-filesystem, server-memory and server-everything (``proxy --config``), each with the tool a
person would pick (written down before the ranking was tuned on them: these are not held out).

Run: ``PFLOW_STRUCTURE_NPM_SERVERS=/path/to/npm-servers python benchmarks/tool_lists.py``
(prints a markdown table).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("full", "compact", "light")
OUR_TOOLS = ("read_fields", "edit_fields", "describe_tools", "search_tools")


def npm_bin(name: str) -> str:
    base = Path(os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or REPO / ".npm-servers")
    return str(base / "node_modules" / ".bin" / name)


def tokens(value: Any) -> int:
    from pflow_structure.render.tokens import count_tokens

    return count_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


async def session_work(command: list[str], work: Any) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        return await work(client)


def plain(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    dumped.pop("resultType", None)
    return dumped


async def measure(label: str, command: list[str], first_call: tuple[str, dict[str, Any]]) -> list[str]:
    async def listing(client: Any) -> list[dict[str, Any]]:
        return [plain(tool) for tool in (await client.list_tools()).tools]

    direct = await session_work(command, listing)
    reference = tokens({"tools": direct})
    rows = [f"| {label} | direct | {len(direct)} | {reference:,} | 1.00 | {reference:,} | |"]
    for mode in MODES:
        proxy = [sys.executable, "-m", "pflow_structure", "proxy", "--tools", mode, "--", *command]

        async def work(client: Any) -> Any:
            tools = await listing(client)
            called = plain(await client.call_tool(*first_call))
            return tools, called

        tools, called = await session_work(proxy, work)
        total = tokens({"tools": tools})
        upstream = [tool for tool in tools if tool["name"] not in OUR_TOOLS]
        ours = total - tokens({"tools": upstream})
        note = ""
        if mode == "light":
            worst = max(tokens(tool) for tool in upstream)
            ok = "succeeded" if not called.get("isError") else "failed"
            note = (
                f"our 4 tools {ours:,}; {(total - ours) / len(upstream):.1f} a tool, at most {worst}; "
                f"first call `{first_call[0]}` without a describe: {ok}"
            )
        rows.append(
            f"| {label} | proxy --tools {mode} | {len(tools)} | {total:,} | {total / reference:.2f} "
            f"| {total - ours:,} ({(total - ours) / reference:.2f}) | {note} |"
        )
    return rows


async def search_row(command: list[str]) -> str:
    proxy = [sys.executable, "-m", "pflow_structure", "proxy", "--tools", "light", "--", *command]

    async def work(client: Any) -> Any:
        return plain(await client.call_tool("search_tools", {"query": "read a file", "limit": 3}))

    found = await session_work(proxy, work)
    names = [tool["name"] for tool in found["structuredContent"]["tools"]]
    return f"search_tools 'read a file' on server-filesystem: {', '.join(names)}"


QUERIES = (
    ("read a file", "files.read_text_file"),
    ("write a file", "files.write_file"),
    ("list a directory", "files.list_directory"),
    ("move or rename a file", "files.move_file"),
    ("find files by name", "files.search_files"),
    ("file size and modification time", "files.get_file_info"),
    ("remember a fact about a person", "memory.create_entities"),
    ("link two entities", "memory.create_relations"),
    ("search the knowledge graph", "memory.search_nodes"),
    ("forget an entity", "memory.delete_entities"),
    ("add two numbers", "everything.get-sum"),
    ("echo a message", "everything.echo"),
    ("get an image", "everything.get-tiny-image"),
    ("environment variables", "everything.get-env"),
    ("long running task with progress", "everything.trigger-long-running-operation"),
    ("compress a file", "everything.gzip-file-as-resource"),
)


async def gateway_search(folder: Path) -> list[str]:
    """search_tools over a gateway of server-filesystem, server-memory and server-everything: for each
    query, the top three and whether the expected tool is first."""
    servers = {
        "files": {"command": npm_bin("mcp-server-filesystem"), "args": [str(folder)]},
        "memory": {"command": npm_bin("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(folder / "m.jsonl")}},
        "everything": {"command": npm_bin("mcp-server-everything")},
    }
    config = folder / "client.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    gateway = [sys.executable, "-m", "pflow_structure", "proxy", "--tools", "light", "--config", str(config)]

    async def work(client: Any) -> list[str]:
        rows = []
        for query, expected in QUERIES:
            found = plain(await client.call_tool("search_tools", {"query": query, "limit": 3}))
            names = [tool["name"] for tool in found["structuredContent"]["tools"]]
            rows.append(f"| {query} | {expected} | {', '.join(names)} | {'yes' if names[:1] == [expected] else 'no'} |")
        return rows

    return list(await session_work(gateway, work))


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "notes.txt").write_text("hello\n", encoding="utf-8")
        os.environ.setdefault("PFLOW_STRUCTURE_CACHE_DIR", str(Path(folder) / "cache"))
        filesystem = [npm_bin("mcp-server-filesystem"), folder]
        everything = [npm_bin("mcp-server-everything")]
        print(
            "| server | tools/list through | tools | o200k tokens | vs direct | the server's tools alone | light list |"
        )
        print("|---|---|---:|---:|---:|---:|---|")
        read = ("read_text_file", {"path": str(Path(folder) / "notes.txt")})
        for row in await measure("server-filesystem", filesystem, read):
            print(row)
        for row in await measure("server-everything", everything, ("echo", {"message": "hello"})):
            print(row)
        print()
        print(await search_row(filesystem))
        print()
        print("| query (gateway, 36 tools) | expected first | search_tools top 3 | first |")
        print("|---|---|---|---|")
        rows = await gateway_search(Path(folder))
        for row in rows:
            print(row)
        print(f"first right: {sum(row.endswith('| yes |') for row in rows)} of {len(rows)}")


if __name__ == "__main__":
    asyncio.run(main())
