"""Issue 28's acceptance numbers: every answer within the budget, and what `_fields` adds to the tool list.

Through the proxy in front of the real server-filesystem (from .npm-servers), on
examples/data/github_issues.json: the tokens of read_text_file's answer, of each page of
read_fields(["result"]) and read_fields(["result[*].body"]) (every page read, the parts compared
with the file), of a call with _fields, and of the tool list with and without the proxy.

    .venv/bin/python benchmarks/answer_budget.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "examples" / "data"
ISSUES = str(DATA / "github_issues.json")
FILESYSTEM = REPO / ".npm-servers" / "node_modules" / ".bin" / "mcp-server-filesystem"


def tokens(value: Any) -> int:
    from pflow_structure.render.tokens import count_tokens

    return count_tokens(
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )


async def session(command: list[str], work: Any) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        return await work(client)


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def read_every_page(
    client: Any, execution_id: str, path: str, measure: Callable[[str], Any] | None = None
) -> tuple[Any, list[Any]]:
    """The whole value at ``path``, following each answer's _more as an agent would, and each answer's size
    (``measure`` of its text; o200k tokens by default)."""
    measure = measure or tokens
    sizes: list[Any] = []

    async def read_all(arguments: dict[str, Any]) -> Any:
        text = text_of(await client.call_tool("read_fields", arguments))
        sizes.append(measure(text))
        answer = json.loads(text)
        key = arguments["field_paths"][0]
        more = answer.get("_more", {}).get(key)
        if more is None:
            return answer[key]
        if "structure" in more:
            from pflow_structure.paths import parse_path

            children = more["next"]["field_paths"]
            return {parse_path(c)[-1]: await read_all({**more["next"], "field_paths": [c]}) for c in children}
        if more["shown"].startswith("item "):  # one item larger than a page: by its own path, then the list on
            rest = await read_all(more["then"]) if "then" in more else []
            return [await read_all(more["next"]), *rest]
        if key not in answer:
            return await read_all(more["next"])
        return answer[key] + await read_all(more["next"])

    whole = await read_all({"execution_id": execution_id, "field_paths": [path]})
    return whole, sizes


async def proxied(client: Any) -> dict[str, Any]:
    tools = [
        tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in (await client.list_tools()).tools
    ]
    cached = text_of(await client.call_tool("read_text_file", {"path": ISSUES}))
    execution_id = cached.split("cached as ", 1)[1].split(".", 1)[0]
    rows: dict[str, Any] = {"tools": tools, "cached": tokens(cached)}
    for path in ("result", "result[*].body"):
        rows[path] = await read_every_page(client, execution_id, path)
    fields = text_of(await client.call_tool("read_text_file", {"path": ISSUES, "_fields": ["result[*].number"]}))
    rows["fields"] = (tokens(fields), json.loads(fields)["values"]["result[*].number"])
    return rows


async def direct(client: Any) -> dict[str, Any]:
    tools = [
        tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in (await client.list_tools()).tools
    ]
    raw = text_of(await client.call_tool("read_text_file", {"path": ISSUES}))
    return {"tools": tools, "raw": tokens(raw)}


def main() -> None:
    if not FILESYSTEM.exists():
        raise SystemExit(
            f"{FILESYSTEM} is missing: npm install --prefix .npm-servers @modelcontextprotocol/server-filesystem"
        )
    server = [str(FILESYSTEM), str(DATA)]
    plain = asyncio.run(session(server, direct))
    shaped = asyncio.run(session([sys.executable, "-m", "pflow_structure", "proxy", "--", *server], proxied))
    value = json.loads(Path(ISSUES).read_text())
    print(f"read_text_file without the proxy: {plain['raw']:,} tokens; through it (cached): {shaped['cached']:,}")
    for path, expected in (("result", value), ("result[*].body", [issue["body"] for issue in value])):
        whole, sizes = shaped[path]
        same = "equal to the file" if whole == expected else "DIFFERENT from the file"
        print(
            f'read_fields(["{path}"]): first answer {sizes[0]:,} tokens; {len(sizes)} pages, largest {max(sizes):,}, '
            f"all {sum(sizes):,}; the pages together are {same}"
        )
    fields_tokens, numbers = shaped["fields"]
    same = numbers == [issue["number"] for issue in value]
    print(f'read_text_file with _fields ["result[*].number"]: {fields_tokens:,} tokens, the 100 numbers: {same}')
    theirs = {tool["name"]: tool for tool in plain["tools"]}
    ours = [tool for tool in shaped["tools"] if tool["name"] in theirs]
    growth = [
        tokens(tool) - tokens({k: v for k, v in theirs[tool["name"]].items() if k != "outputSchema"}) for tool in ours
    ]
    print(
        f"tool list: {len(ours)} proxied tools, _fields adds {min(growth)} to {max(growth)} tokens each "
        f"({sum(growth):,} in all; outputSchema removal not counted)"
    )


if __name__ == "__main__":
    main()
