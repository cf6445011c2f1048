"""Budgets per client (docs/budgets.md): the name a client sends in ``initialize`` sets its session's budget.

Through a real proxy process in front of the real server-filesystem, a session that initializes as
Codex gets answers of at most 10,000 bytes and 256 lines, Claude Code of at most 8,000 tokens and
50,000 bytes (with the size declared on our tools), any other client of at most 8,000 tokens; each
page says how to read on.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from pflow_structure.render.limits import limited_counter
from pflow_structure.render.output_text import format_json
from pflow_structure.render.tokens import count_tokens
from pflow_structure.service.clients import RESULT_SIZE_META, declared_size, session_settings
from pflow_structure.settings import Settings
from tests.conftest import EXAMPLES_DATA
from tests.structure_text import cached_id
from tests.test_mcp_budget import ISSUES
from tests.test_mcp_proxy import PROXY, TIMEOUT, npm_server, plain, texts

ISSUES_VALUE = json.loads((EXAMPLES_DATA / "github_issues.json").read_text())


def as_client(name: str, command: list[str], work: Any) -> Any:
    """Start ``command`` over stdio, initialize as the client ``name``, run ``work``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import Implementation

    async def main() -> Any:
        server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        info = Implementation(name=name, version="1.0")
        async with stdio_client(server) as (read, write), ClientSession(read, write, client_info=info) as client:
            await client.initialize()
            return await work(client)

    return asyncio.run(asyncio.wait_for(main(), timeout=TIMEOUT))


async def pages(client: Any) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """``read_fields(result)`` of the cached issues, then each call its ``_more`` names (``next``, then
    ``then``): (those answers, every answer's text with the cached one first, read_fields' listed ``_meta``)."""
    listed = {tool.name: plain(tool) for tool in (await client.list_tools()).tools}
    cached = plain(await client.call_tool("read_text_file", {"path": ISSUES}))
    first = {"execution_id": cached_id(cached), "field_paths": ["result"]}
    answer_texts = [texts(plain(await client.call_tool("read_fields", first)))[0]]
    more = json.loads(answer_texts[0])["_more"]["result"]
    for arguments in (more["next"], more.get("then")):
        if arguments is not None:
            answer_texts.append(texts(plain(await client.call_tool("read_fields", arguments)))[0])
    answers = [json.loads(text) for text in answer_texts]
    return answers, [texts(cached)[0], *answer_texts], listed["read_fields"].get("_meta", {})


def filesystem() -> list[str]:
    return [*PROXY, "--", npm_server("mcp-server-filesystem"), str(EXAMPLES_DATA)]


def assert_pages_on(answers: list[dict[str, Any]]) -> None:
    """The first page holds the first issues and names the call that reads on; that call reads the next ones."""
    first, second = answers
    shown = len(first["result"])
    assert first["_more"]["result"]["shown"] == f"items 0-{shown - 1} of 100"
    assert first["_more"]["result"]["next"]["field_paths"] == ["result[*]"]
    assert first["_more"]["result"]["next"]["offset"] == shown
    assert first["result"] + second["result[*]"] == ISSUES_VALUE[: shown + len(second["result[*]"])]


def test_a_codex_session_answers_within_10_000_bytes_and_256_lines_and_pages_on() -> None:
    answers, answer_texts, meta = as_client("codex-mcp-client", filesystem(), pages)
    assert [len(text.encode("utf-8")) <= 10_000 for text in answer_texts] == [True] * 4  # the cached one too
    assert [text.count("\n") + 1 <= 256 for text in answer_texts] == [True] * 4
    first, item, rest = answers
    execution_id = first["_more"]["result"]["next"]["execution_id"]
    # Issue 0 alone is 19,514 bytes: the page names it by its path, then the list after it.
    assert first["_more"]["result"] == {
        "shown": "item 0 of 100 alone is larger than this answer's share",
        "next": {"execution_id": execution_id, "field_paths": ["result[0]"]},
        "then": {"execution_id": execution_id, "field_paths": ["result[*]"], "offset": 1},
    }
    assert item["_more"]["result[0]"]["next"]["field_paths"][:2] == ["result[0].url", "result[0].repository_url"]
    shown = len(rest["result[*]"])
    assert rest["result[*]"] == ISSUES_VALUE[1 : 1 + shown]
    assert rest["_more"]["result[*]"]["next"]["offset"] == 1 + shown
    assert meta == {RESULT_SIZE_META: 50_000}  # declared for Claude Code; Codex ignores the key


def test_a_claude_code_session_answers_within_8_000_tokens_and_50_000_bytes_and_pages_on() -> None:
    answers, answer_texts, meta = as_client("claude-code", filesystem(), pages)
    sizes = [(count_tokens(text), len(text.encode("utf-8"))) for text in answer_texts]
    assert [tokens <= 8000 and size <= 50_000 for tokens, size in sizes] == [True] * 3
    assert [size > 10_000 for _, size in sizes[1:]] == [True, True]  # not Codex's budget
    assert_pages_on(answers)
    assert meta == {RESULT_SIZE_META: 50_000}


def test_an_unknown_client_gets_8_000_tokens() -> None:
    answers, answer_texts, _ = as_client("some-agent", filesystem(), pages)
    assert [7000 < count_tokens(text) <= 8000 for text in answer_texts[1:]] == [True, True]
    assert count_tokens(answer_texts[0]) <= 8000
    assert_pages_on(answers)


def test_a_codex_session_of_serve_reads_within_10_000_bytes_and_declares_the_size() -> None:
    import sys

    async def work(client: Any) -> tuple[str, Any]:
        listed = {tool.name: plain(tool) for tool in (await client.list_tools()).tools}
        ran = plain(await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": ISSUES}}))
        arguments = {"execution_id": ran["structuredContent"]["execution_id"], "field_paths": ["result"]}
        return texts(plain(await client.call_tool("read_fields", arguments)))[0], listed["read_fields"].get("_meta")

    text, meta = as_client("codex-mcp-client", [sys.executable, "-m", "pflow_structure", "serve"], work)
    assert len(text.encode("utf-8")) <= 10_000
    assert meta == {RESULT_SIZE_META: 50_000}
    more = json.loads(text)["_more"]["result"]
    assert (more["shown"], more["then"]["offset"]) == ("item 0 of 100 alone is larger than this answer's share", 1)


# -- the table, in process ------------------------------------------------------------------------------------
def test_codex_gets_its_bytes_and_lines() -> None:
    session = session_settings(Settings(), {"name": "codex-mcp-client", "version": "0.56.0"})
    assert (session.answer_budget, session.answer_max_bytes, session.answer_max_lines) == (8000, 10_000, 256)


def test_an_unknown_client_keeps_the_settings_as_they_are() -> None:
    settings = Settings()
    assert session_settings(settings, {"name": "some-agent"}) is settings
    assert session_settings(settings, None) is settings


def test_a_budget_the_caller_chose_wins_over_the_clients_row() -> None:
    session = session_settings(Settings().replace(answer_budget=8000), {"name": "codex-mcp-client"})
    assert (session.answer_budget, session.answer_max_bytes) == (8000, None)


def test_a_budget_set_in_the_environment_wins_over_the_clients_row() -> None:
    settings = Settings.from_env({"PFLOW_STRUCTURE_ANSWER_BUDGET": "8000"})
    session = session_settings(settings, {"name": "codex-mcp-client"})
    assert (session.answer_budget, session.answer_max_bytes, session.answer_max_lines) == (8000, None, None)


def test_a_budget_set_in_tokens_only_declares_claude_codes_ceiling() -> None:
    assert declared_size(Settings(answer_budget=20_000)) == {RESULT_SIZE_META: 500_000}
    assert declared_size(Settings()) == {RESULT_SIZE_META: 50_000}


def test_a_limited_counter_counts_the_largest_of_tokens_bytes_and_lines() -> None:
    measure = limited_counter(count_tokens, 8000, 10_000, 256)
    assert measure("x" * 10_000) == 8000  # bytes: 10,000 of them are the whole budget
    assert measure("a\n" * 255 + "a") == 8000  # lines: 256 of them too
    assert measure('{"a": 1}') == max(count_tokens('{"a": 1}'), -(-8 * 8000 // 10_000), -(-8000 // 256))


def test_a_limited_answer_dict_fits_the_bytes() -> None:
    text = format_json({"a": "é" * 10}, compact=True)
    assert limited_counter(count_tokens, 100, 10, None)(text) == -(-len(text.encode("utf-8")) * 100 // 10)


def test_a_small_result_with_more_lines_than_codex_keeps_is_cached_not_shown() -> None:
    from pflow_structure.mcp.proxy.shaping import shape_and_store

    lines = "\n".join(f"[FILE] f{index}.txt" for index in range(300))  # 300 lines, 4,689 bytes
    assert count_tokens(lines) == 2099  # under the inline threshold of 4,000 tokens
    result = {"content": [{"type": "text", "text": lines}], "isError": False}
    codex = session_settings(Settings.from_env(), {"name": "codex-mcp-client"})
    shown = shape_and_store("list", {}, result, settings=Settings.from_env(), budget=4000, read_tool="read_fields")
    cut = shape_and_store("list", {}, result, settings=codex, budget=4000, read_tool="read_fields")
    assert (shown.kind, cut.kind) == ("passed", "cached")


def test_a_codex_sessions_note_names_its_bytes_and_lines() -> None:
    from pflow_structure.service import store_outputs
    from pflow_structure.service.answers import read_fields_answer

    codex = session_settings(Settings.from_env(), {"name": "codex-mcp-client"})
    execution_id = str(store_outputs("read-json", {}, ISSUES_VALUE, settings=codex)["execution_id"])
    answer = read_fields_answer(execution_id, ["result[*].body"], settings=codex).value
    assert answer["_note"] == (
        "Answer kept under 8,000 tokens, 10,000 bytes and 256 lines: each _more entry gives the arguments (next) "
        "that read on."
    )


def test_a_codex_sessions_cut_structure_names_its_bytes_and_lines() -> None:
    from pflow_structure.service.answers import structure_within_budget

    described = {"structure": {f"result[0].field_{index}": {"type": "str"} for index in range(400)}}
    cut = structure_within_budget(described, 8000, limited_counter(count_tokens, 8000, 10_000, 256))
    left_out = 400 - len(cut["structure"])
    assert cut["warnings"] == [
        f"{left_out} more paths not shown to stay under 8,000 tokens, 10,000 bytes and 256 lines: read a parent "
        "path, or raise max_tokens"
    ]
