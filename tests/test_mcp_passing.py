"""Passing values on through MCP: references in proxied tool calls and in registry_run, and
edit_fields, against real servers (server-filesystem, server-memory, our raw echo server).

See tests/test_mcp_proxy.py for how the npm servers are found.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.settings import Settings
from tests.conftest import CORPUS, REPO
from tests.structure_text import cached, cached_id, edited
from tests.test_mcp_proxy import PROXY, failures, in_session, npm_server, plain, texts

ECHO = [sys.executable, str(REPO / "tests" / "servers" / "echo_mcp_server.py")]
UNKNOWN = "exec-1763463202-0cd0c8fe"
SERVE = [sys.executable, "-m", "pflow_structure", "serve"]


def ref(execution_id: str, path: str) -> str:
    return "${" + execution_id + ":" + path + "}"


def stored(value: Any, text_paths: list[list[str | int]] | None = None) -> str:
    """Put ``{"result": value}`` in the cache the proxy (a child process) reads too."""
    cache = Settings.from_env().cache()
    return cache.put("test", {}, {"result": value}, text_paths=text_paths or []).execution_id


def echoed(answer: dict[str, Any]) -> Any:
    (text,) = texts(answer)
    assert text.startswith("ARGS ")
    return json.loads(text[5:])


# -- the echo server: what reaches the downstream ---------------------------------------------------


def test_arguments_without_references_reach_the_downstream_byte_for_byte() -> None:
    arguments = {
        "text": "plain ${HOME} $${HOME} ${exec-1:x} ${exec-12-zz:x} ${exec-1763463202-0cd0c8fe",
        "escaped_looking": "$$ {exec} ${ exec-1763463202-0cd0c8fe:result}",
        "unicode": 'żółw 🐢 \u2028 tab\t"quote" \\ back',
        "numbers": [0, -1, 1.5, 1e-07, 12345678901234567890, 0.1],
        "nested": {"deep": [[{"a": None, "b": True, "c": False}]], "": "empty key"},
        "empty": {},
    }

    async def work(client: Any) -> Any:
        return [plain(await client.call_tool(name, arguments)) for name in ("echo", "echo_typed")]

    direct = in_session(ECHO, work)
    proxied = in_session([*PROXY, "--", *ECHO], work)
    assert [texts(answer) for answer in proxied] == [texts(answer) for answer in direct]
    assert echoed(proxied[0]) == arguments


def test_references_reach_the_downstream_as_values_typed_by_its_schema() -> None:
    doc = {"title": "Report", "items": [{"name": "alpha"}, {"name": "beta"}], "count": 2}
    execution_id = stored(doc)
    arguments = {
        "text": ref(execution_id, "result.items[0]"),
        "items": ref(execution_id, "result.items[*].name"),
        "count": ref(execution_id, "result.count"),
        "nested": {"note": "count=" + ref(execution_id, "result.count") + ", $" + ref(execution_id, "x")},
    }

    async def work(client: Any) -> Any:
        return [plain(await client.call_tool(name, arguments)) for name in ("echo_typed", "echo")]

    typed, untyped = in_session([*PROXY, "--", *ECHO], work)
    assert texts(typed) == [
        'ARGS {"text":"{\\"name\\":\\"alpha\\"}","items":["alpha","beta"],"count":2,'
        f'"nested":{{"note":"count=2, ${{{execution_id}:x}}"}}}}'
    ]
    assert echoed(untyped)["text"] == {"name": "alpha"}  # no schema: the value with its own type


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"text": ref(UNKNOWN, "result")},
            f"Error: Cannot pass ${{{UNKNOWN}:result}} (in text): Execution not found: {UNKNOWN}. "
            "Call the tool that answered with it again to get a new execution id.",
        ),
        (
            {"nested": {"note": "see " + ref("ID", "result.titel")}},
            "Error: Cannot pass ${ID:result.titel} (in nested.note): result.titel: no key 'titel' here. "
            "Did you mean result.title?",
        ),
    ],
)
def test_a_reference_that_does_not_resolve_is_a_tool_error_and_the_downstream_never_sees_it(
    arguments: dict[str, Any], message: str
) -> None:
    execution_id = stored({"title": "Report"})
    arguments = json.loads(json.dumps(arguments).replace("ID", execution_id))
    message = message.replace("ID", execution_id)

    async def work(client: Any) -> Any:
        answer = plain(await client.call_tool("echo_typed", arguments))
        return answer, plain(await client.call_tool("calls", {}))

    answer, calls = in_session([*PROXY, "--", *ECHO], work)
    assert answer["isError"] is True
    assert texts(answer) == [message]
    assert texts(calls) == ["0 calls before"]
    assert failures() == []  # a refused reference is the caller's error: nothing logged


def test_a_reference_over_the_size_cap_is_refused_with_the_setting_named() -> None:
    execution_id = stored("x" * 5000)

    async def work(client: Any) -> Any:
        answer = plain(await client.call_tool("echo", {"a": ref(execution_id, "result")}))
        return answer, plain(await client.call_tool("calls", {}))

    answer, calls = in_session([*PROXY, "--", *ECHO], work, {"PFLOW_STRUCTURE_MAX_REFERENCE_SIZE": "4KB"})
    assert texts(answer) == [
        f"Error: Values passed by reference come to at least 5,000 bytes at ${{{execution_id}:result}} (in a), over "
        "the cap of 4,096 bytes. Pass a smaller part (a longer path), or raise PFLOW_STRUCTURE_MAX_REFERENCE_SIZE."
    ]
    assert texts(calls) == ["0 calls before"]


def test_edit_fields_errors_through_the_proxy_have_the_exact_words() -> None:
    execution_id = stored({"title": "Report"})

    async def work(client: Any) -> Any:
        return [
            plain(await client.call_tool("edit_fields", {"execution_id": execution_id, "set": {"result.a.b": 1}})),
            plain(await client.call_tool("edit_fields", {"execution_id": execution_id})),
            plain(await client.call_tool("edit_fields", {"set": {"result.a": 1}})),
            plain(await client.call_tool("edit_fields", {"execution_id": execution_id, "delete": "result.title"})),
        ]

    answers = in_session([*PROXY, "--", *ECHO], work)
    assert all(answer["isError"] for answer in answers)
    assert [texts(answer)[0] for answer in answers] == [
        "Error: result.a.b: the parent result.a does not exist (no key 'a' here). Set result.a first, e.g. to {}.",
        'Error: nothing to edit: give set ({"path": value}) or delete (["path"]), or both',
        "Error: execution_id is required: the execution_id of the value to change",
        'Error: delete must be a list of paths, e.g. ["result.draft"]',
    ]


# -- server-filesystem: the round trip --------------------------------------------------------------


def test_read_a_large_json_file_edit_one_field_and_write_it_back_without_reading_it(tmp_path: Path) -> None:
    source = CORPUS / "github__list_pull_requests.json"
    original = json.loads(source.read_text(encoding="utf-8"))
    work_dir = tmp_path / "files"
    work_dir.mkdir()
    (work_dir / "in.json").write_bytes(source.read_bytes())
    command = [npm_server("mcp-server-filesystem"), str(work_dir)]

    async def work(client: Any) -> Any:
        read = plain(await client.call_tool("read_text_file", {"path": str(work_dir / "in.json")}))
        execution_id = cached_id(read)
        edit = {"execution_id": execution_id, "set": {"result[3].title": "Edited by reference"}}
        changed = plain(await client.call_tool("edit_fields", edit))
        content = ref(edited(changed)["execution_id"], "result")
        written = plain(await client.call_tool("write_file", {"path": str(work_dir / "out.json"), "content": content}))
        return read, changed, written

    read, changed, written = in_session([*PROXY, "--", *command], work)
    assert cached(read)["structure"]["result"] == {"type": "list", "length": len(original)}
    new_id = edited(changed)["execution_id"]
    assert texts(changed) == [
        f"Edited into {new_id}; every path not listed here is as before. Changed paths:\n"
        "  result[0].title str ~39"  # (447 - 42 + 19) / 11 characters: the average moved from ~41
    ]
    assert new_id != cached_id(read)
    assert written["isError"] is False
    expected = json.loads(json.dumps(original))
    expected[3]["title"] = "Edited by reference"
    assert original[3]["title"] != "Edited by reference"
    assert json.loads((work_dir / "out.json").read_text(encoding="utf-8")) == expected
    visible = sum(len(json.dumps(answer)) for answer in (read, changed, written))
    assert visible * 20 < source.stat().st_size  # the agent saw a small fraction of the document
    assert failures() == []


def test_copy_a_large_text_file_by_reference_exactly(tmp_path: Path) -> None:
    work_dir = tmp_path / "files"
    work_dir.mkdir()
    lines = [f'line {index}: żółw ${{HOME}} "quoted"\tand a tab' for index in range(4000)]
    text = "\n".join(lines[:2000]) + "\r\n\n" + "\n".join(lines[2000:]) + "\n"
    (work_dir / "big.txt").write_text(text, encoding="utf-8", newline="")
    command = [npm_server("mcp-server-filesystem"), str(work_dir)]

    async def work(client: Any) -> Any:
        read = plain(await client.call_tool("read_text_file", {"path": str(work_dir / "big.txt")}))
        content = ref(cached_id(read), "result")
        written = plain(await client.call_tool("write_file", {"path": str(work_dir / "copy.txt"), "content": content}))
        return read, written

    read, written = in_session([*PROXY, "--", *command], work)
    assert cached(read)["structure"]["result"] == {"type": "list", "length": 4002}
    assert written["isError"] is False
    assert (work_dir / "copy.txt").read_bytes() == (work_dir / "big.txt").read_bytes()


# -- server-memory: a list from one tool into another ---------------------------------------------


def test_names_from_one_answer_go_into_another_tools_list_argument(tmp_path: Path) -> None:
    command = [npm_server("mcp-server-memory")]
    entities = [
        {"name": f"entity_{index:03}", "entityType": "thing", "observations": [f"observation {index}"]}
        for index in range(300)
    ]

    async def work(client: Any) -> Any:
        await client.call_tool("create_entities", {"entities": entities})
        graph = plain(await client.call_tool("read_graph", {}))
        names = ref(cached_id(graph), "result.entities[*].name")
        opened = plain(await client.call_tool("open_nodes", {"names": names}))
        read = {"execution_id": cached_id(opened), "field_paths": ["result.entities"]}
        return opened, plain(await client.call_tool("read_fields", read))

    opened, read = in_session([*PROXY, "--", *command], work, {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    assert cached(opened)["structure"]["result.entities"] == {"type": "list", "length": 300}
    assert read["structuredContent"]["result.entities"] == entities


# -- our own server: registry_run parameters and edit_fields ------------------------------------------


def test_the_server_passes_references_in_registry_run_and_edits_fields(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"items": [{"id": 1}, {"id": 2}]}), encoding="utf-8")

    async def work(client: Any) -> Any:
        ran = plain(
            await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": str(data)}})
        )
        execution_id = ran["structuredContent"]["execution_id"]
        edit = {"execution_id": execution_id, "set": {"result.items[*].done": True}, "delete": ["result.items[0]"]}
        edit_answer = plain(await client.call_tool("edit_fields", edit))
        new = edit_answer["structuredContent"]["execution_id"]
        shell = {"node_type": "shell", "parameters": {"command": "echo '" + ref(new, "result.items") + "'"}}
        echoed_run = plain(await client.call_tool("registry_run", shell))
        read = {"execution_id": echoed_run["structuredContent"]["execution_id"], "field_paths": ["stdout"]}
        bad = {"node_type": "shell", "parameters": {"command": "echo " + ref(UNKNOWN, "result")}}
        return plain(await client.call_tool("read_fields", read)), plain(await client.call_tool("registry_run", bad))

    read, bad = in_session(SERVE, work)
    assert read["structuredContent"] == {"stdout": [{"id": 2, "done": True}]}
    assert bad["isError"] is True
    assert texts(bad) == [
        f"Error: Cannot pass ${{{UNKNOWN}:result}} (in command): Execution not found: {UNKNOWN}. "
        "Call registry_run again to get a new execution id."
    ]
