"""Passing values on by reference: tokens an agent sees, through the proxy vs directly (issue 21).

Two tasks on corpus files of several sizes, with the real ``@modelcontextprotocol/server-filesystem``:

- **edit**: read a JSON document, change one field, write it back. Directly, the agent reads the
  whole file (``read_text_file``) and writes it back whole (``write_file`` with the changed text as
  ``content``). Through ``pflow-structure proxy``, it reads the structure, reads the one field
  (``read_fields``), changes it with ``edit_fields``, and writes ``content="${NEW_ID:result}"``.
- **copy**: read a file and write it to another path. Directly: the whole text in, the whole text
  out. Through the proxy: the structure in, ``content="${ID:result}"`` out.

Agent-visible tokens are what enters the model's context: every answer (``visible_tokens`` of the
result as the wire has it: text blocks, plus structuredContent unless it repeats the text) plus
every call the model writes (the compact JSON of ``{"name", "arguments"}``). The document's tokens
are its compact JSON (fewer than the file's own pretty text, so the ratio is the stricter one).
Execution ids are replaced by a fixed id and the temporary directory by a fixed path before
counting, so counts repeat from run to run. Each run checks that the written file is right.

    python benchmarks/refs.py            # the table below in benchmarks/README.md
    python benchmarks/refs.py --smoke    # one small file (CI)
    python benchmarks/refs.py --large    # every real response in the repository of 100 KB or more
    python benchmarks/refs.py --files A.json B.json   # these JSON documents (absolute or relative paths)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.structure_text import cached, edited  # noqa: E402  # the answers read back as the tests read them

CORPUS = Path("/work/shared/corpus") if Path("/work/shared/corpus").is_dir() else REPO / "tests" / "corpus"
FILES = [
    "github__get_repo.json",
    "npm__package_document.json",
    "google__calendar_discovery_rest.json",
    "aws__securityhub_get_findings.json",
    "github__list_pull_requests.json",
    "slack__status_history.json",
    "github__get_gist.json",
]
SMOKE_FILES = ["github__get_repo.json"]
LARGE = 100 * 1024  # --large: every real response in the repository of at least this size, none chosen by hand


def large_files() -> list[str]:
    """Every corpus file and labelled response (tests/data/filter_eval) of 100 KB or more, by size."""
    found = [*CORPUS.glob("*.json"), *(REPO / "tests" / "data" / "filter_eval").glob("*/*.json")]
    big = [path for path in found if path.name != "labels.json" and path.stat().st_size >= LARGE]
    return [str(path) for path in sorted(big, key=lambda path: (path.stat().st_size, path.name))]


FIXED_ID = "exec-1763463202-0cd0c8fe"
SHOWN_DIR = "/tmp/pflow-structure-bench-0a1b2c3d"
EXECUTION_ID = re.compile(r"exec-\d+-[0-9a-f]{8}")
NEW_VALUE = "Changed by reference"


def npm_server() -> Path:
    base = os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or str(REPO / ".npm-servers")
    return Path(base).expanduser() / "node_modules" / ".bin" / "mcp-server-filesystem"


class Agent:
    """One MCP client session that counts what the model would read and write."""

    def __init__(self, session: Any, workdir: Path) -> None:
        self.session = session
        self.workdir = str(workdir)
        self.tokens = 0
        self.calls = 0

    def _count(self, text: str) -> int:
        from pflow_structure.render.tokens import count_tokens

        return count_tokens(EXECUTION_ID.sub(FIXED_ID, text.replace(self.workdir, SHOWN_DIR)))

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from pflow_structure.mcp.proxy.shaping import visible_tokens

        self.tokens += self._count(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False))
        answer = await self.session.call_tool(name, arguments)
        result: dict[str, Any] = answer.model_dump(by_alias=True, exclude_none=True, mode="json")
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result['content'][0]['text'][:300]}")
        self.tokens += visible_tokens(result, self._count)
        self.calls += 1
        return result


async def in_session(command: list[str], task: Any) -> tuple[int, int]:
    from mcp import StdioServerParameters

    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ), cwd=str(REPO))
    with open(os.devnull, "w") as quiet:  # the servers' start-up banners
        return await _run(server, quiet, Path(command[-1]), task)


async def _run(server: Any, errlog: Any, workdir: Path, task: Any) -> tuple[int, int]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        agent = Agent(session, workdir)
        await task(agent)
        return agent.tokens, agent.calls


def first_string_path(document: Any) -> tuple[str, list[str | int]]:
    """The first string leaf (depth first): the field both agents change."""
    from pflow_structure.paths import format_path

    def walk(value: Any, where: list[str | int]) -> list[str | int] | None:
        if isinstance(value, str) and where:
            return where
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
        for key, item in items:
            found = walk(item, [*where, key])
            if found is not None:
                return found
        return None

    steps = walk(document, []) or []
    return format_path(["result", *steps]), steps


def changed(document: Any, steps: list[str | int]) -> Any:
    copy = json.loads(json.dumps(document))
    target = copy
    for step in steps[:-1]:
        target = target[step]
    target[steps[-1]] = NEW_VALUE
    return copy


def measure(name: str, workdir: Path) -> dict[str, Any]:
    from pflow_structure.render.tokens import count_tokens

    source = CORPUS / name  # a bare name is a corpus file; an absolute path is taken as it is
    document = json.loads(source.read_text(encoding="utf-8"))
    path, steps = first_string_path(document)
    expected = changed(document, steps)
    (workdir / "in.json").write_bytes(source.read_bytes())
    inp, out = str(workdir / "in.json"), str(workdir / "out.json")
    direct_cmd = [str(npm_server()), str(workdir)]
    proxy_cmd = [sys.executable, "-m", "pflow_structure", "proxy", "--", *direct_cmd]

    read_step: list[int] = []

    async def edit_direct(agent: Agent) -> None:
        await agent.call("read_text_file", {"path": inp})
        await agent.call("write_file", {"path": out, "content": json.dumps(expected, ensure_ascii=False)})

    async def edit_proxied(agent: Agent) -> None:
        read = await agent.call("read_text_file", {"path": inp})
        execution_id = cached(read)["execution_id"]
        before = agent.tokens
        await agent.call("read_fields", {"execution_id": execution_id, "field_paths": [path]})
        read_step.append(agent.tokens - before)  # issue 21 item 4's round trip has no read_fields
        changed = await agent.call("edit_fields", {"execution_id": execution_id, "set": {path: NEW_VALUE}})
        new = edited(changed)["execution_id"]
        await agent.call("write_file", {"path": out, "content": "${" + new + ":result}"})

    async def copy_direct(agent: Agent) -> None:
        read = await agent.call("read_text_file", {"path": inp})
        await agent.call("write_file", {"path": out, "content": read["content"][0]["text"]})

    async def copy_proxied(agent: Agent) -> None:
        read = await agent.call("read_text_file", {"path": inp})
        await agent.call("write_file", {"path": out, "content": "${" + cached(read)["execution_id"] + ":result}"})

    row: dict[str, Any] = {
        "file": source.name if source.parent == CORPUS else f"{source.parent.name}/{source.name}",
        "kb": round(source.stat().st_size / 1024),
        "document_tokens": count_tokens(json.dumps(document, ensure_ascii=False, separators=(",", ":"))),
        "field": path,
    }
    for task, pair in (("edit", (edit_direct, edit_proxied)), ("copy", (copy_direct, copy_proxied))):
        for side, command, work in (("direct", direct_cmd, pair[0]), ("proxy", proxy_cmd, pair[1])):
            tokens, calls = asyncio.run(in_session(command, work))
            written = json.loads(Path(out).read_text(encoding="utf-8"))
            assert written == (expected if task == "edit" else document), f"{task} {side}: wrong file written"
            Path(out).unlink()
            row[f"{task}_{side}"] = tokens
            row[f"{task}_{side}_calls"] = calls
    row["edit_proxy_item4"] = row["edit_proxy"] - read_step[0]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| File | Size | Document (compact JSON) | Edit: direct | Edit: proxy | Edit: proxy / document "
        "| Copy: direct | Copy: proxy | Copy: proxy / document | Edit without read_fields (item 4) / document |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        doc = r["document_tokens"]
        lines.append(
            f"| {r['file']} | {r['kb']} KB | {doc:,} | {r['edit_direct']:,} | {r['edit_proxy']:,} "
            f"| {100 * r['edit_proxy'] / doc:.2f}% | {r['copy_direct']:,} | {r['copy_proxy']:,} "
            f"| {100 * r['copy_proxy'] / doc:.2f}% "
            f"| {r['edit_proxy_item4']:,} ({100 * r['edit_proxy_item4'] / doc:.2f}%) |"
        )
    return "\n".join(lines)


def main() -> int:
    args = sys.argv[1:]
    smoke = "--smoke" in args
    files = SMOKE_FILES if smoke else large_files() if "--large" in args else FILES
    if "--files" in args:
        files = [str(Path(name).resolve()) for name in args[args.index("--files") + 1 :]]
    if not npm_server().exists():
        print(
            f"skipped: {npm_server()} is missing; run npm install --prefix .npm-servers "
            "@modelcontextprotocol/server-filesystem@2026.8.31"
        )
        return 0
    from pflow_structure.render.tokens import method as token_method

    workdir = Path(tempfile.mkdtemp(prefix="pflow-structure-refs-"))
    os.environ["PFLOW_STRUCTURE_CACHE_DIR"] = str(workdir / "cache")
    os.environ["PFLOW_STRUCTURE_FAILURE_LOG"] = str(workdir / "failures.jsonl")
    files_dir = workdir / "files"
    files_dir.mkdir()
    try:
        rows = []
        for number, name in enumerate(files, 1):
            print(f"[{number}/{len(files)}] {Path(name).name}", file=sys.stderr, flush=True)
            rows.append(measure(name, files_dir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"Tokens: {token_method()}; fields changed: " + ", ".join(f"{r['file']}: {r['field']}" for r in rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
