"""`pflow-structure serve` started for real over stdio, driven by the SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES_DATA

ISSUES = str(EXAMPLES_DATA / "github_issues.json")
DISCOVERY_DATA = Path(__file__).resolve().parent / "data" / "discovery"


def _in_session(work: Callable[[Any], Awaitable[Any]]) -> Any:
    """Start the server as a subprocess, initialise a ClientSession, run ``work`` with it."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> Any:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "pflow_structure", "serve"], env=dict(os.environ)
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await work(client)

    return asyncio.run(asyncio.wait_for(main(), timeout=120))


def _plain(result: Any) -> dict[str, Any]:
    """A tool result as the wire has it (camelCase), whatever the SDK major."""
    dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def work(client: Any) -> Any:
        return _plain(await client.call_tool(name, arguments))

    result: dict[str, Any] = _in_session(work)
    return result


def test_the_server_lists_five_tools_each_with_a_description_on_every_parameter() -> None:
    async def work(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = {tool["name"]: tool for tool in (_plain(t) for t in _in_session(work))}
    assert sorted(tools) == ["describe_nodes", "edit_fields", "list_nodes", "read_fields", "registry_run"]
    for tool in tools.values():
        assert tool["description"].strip()
        for name, schema in tool["inputSchema"].get("properties", {}).items():
            assert schema.get("description"), f"{tool['name']}.{name} has no description"
        assert "outputSchema" not in tool  # a trimmed answer never breaks a schema


def test_registry_run_returns_what_run_json_prints() -> None:
    result = _call("registry_run", {"node_type": "read-json", "parameters": {"path": ISSUES}})
    cli = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "run", "read-json", f"path={ISSUES}", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(cli.stdout)
    structured = result["structuredContent"]
    assert result["isError"] is False
    assert structured["execution_id"] != expected["execution_id"]  # two runs, two executions
    structured.pop("execution_id"), expected.pop("execution_id")
    assert structured == expected
    (text,) = [block["text"] for block in result["content"]]
    assert json.loads(text)["structure"] == expected["structure"]
    assert "\n" not in text  # compact JSON, not a pretty copy


def test_read_fields_reads_what_registry_run_cached() -> None:
    async def work(client: Any) -> Any:
        ran = _plain(await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": ISSUES}}))
        execution_id = ran["structuredContent"]["execution_id"]
        arguments = {"execution_id": execution_id, "field_paths": ["result[0].title", "result[*].number"], "limit": 3}
        return _plain(await client.call_tool("read_fields", arguments))

    result = _in_session(work)
    assert result["structuredContent"] == {
        "result[0].title": "Different results from Betamax vs Requests",
        "result[*].number": [150, 149, 148],
    }


def test_read_fields_format_auto_answers_with_the_cli_text_and_no_json_copy() -> None:
    paths = ["result[*].number", "result[*].title", "result[*].state", "result[0].user.login"]

    async def work(client: Any) -> Any:
        ran = _plain(await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": ISSUES}}))
        execution_id = ran["structuredContent"]["execution_id"]
        arguments = {"execution_id": execution_id, "field_paths": paths, "limit": 10, "offset": 1}
        as_json = _plain(await client.call_tool("read_fields", arguments))
        as_auto = _plain(await client.call_tool("read_fields", {**arguments, "format": "auto"}))
        return execution_id, as_json, as_auto

    execution_id, as_json, as_auto = _in_session(work)
    assert as_auto["isError"] is False
    assert "structuredContent" not in as_auto  # the values once, in the compact text
    (text,) = [block["text"] for block in as_auto["content"]]
    options = ["--limit", "10", "--offset", "1", "--format", "auto"]
    cli = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "read-fields", execution_id, *paths, *options],
        capture_output=True,
        text=True,
        check=True,
    )
    # The CLI's words, except that paging names the tool's argument instead of the option.
    assert text == cli.stdout.rstrip("\n").replace("--offset 11", "offset 11")
    assert text.startswith("result[*].number, result[*].title, result[*].state:  # items 1-10 of 100; offset 11 ")
    assert text.endswith('result[0].user.login: "facetoe"')
    assert as_json["structuredContent"]["result[0].user.login"] == "facetoe"


def test_read_fields_refuses_an_unknown_format_with_the_choices() -> None:
    result = _call("read_fields", {"execution_id": "exec-1700000000-00000000", "field_paths": ["a"], "format": "xml"})
    assert result["isError"] is True
    (text,) = [block["text"] for block in result["content"]]
    assert "xml" in text and "auto" in text


def test_read_fields_format_names_match_the_cli_choices() -> None:
    import typing

    from pflow_structure.mcp.server import ReadFormat
    from pflow_structure.render.fields_text import READ_FORMATS

    assert sorted(typing.get_args(ReadFormat)) == sorted(READ_FORMATS)


def test_list_nodes_names_the_built_in_nodes() -> None:
    result = _call("list_nodes", {})
    names = [node["name"] for node in result["structuredContent"]["nodes"]]
    assert {"read-json", "shell", "http"} <= set(names)


# -- two-phase discovery: list_nodes, then describe_nodes ---------------------------------------

BUILTIN_DISCOVERY = (
    "## Available Nodes\n\n"
    "- http: Send an HTTP request and capture the response.\n"
    "- read-json: Read a JSON or JSON Lines file into the shared store.\n"
    "- shell: Run a shell command and capture its output."
)
READ_JSON_PLANNING = (
    "## Selected Nodes\n\n### read-json\nRead a JSON or JSON Lines file into the shared store.\n\n"
    "**Inputs**: none\n**Outputs**:\n- `result: any` - The parsed JSON value; a list of values for JSON Lines\n"
    "**Parameters**:\n- `path: str` - File to read (.json, or .jsonl/.ndjson for JSON Lines)\n"
    "- `encoding: str` - Text encoding of the file (optional, default: utf-8)\n**Actions**: default"
)


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Several tool calls in one server session, in order."""

    async def work(client: Any) -> Any:
        return [_plain(await client.call_tool(name, arguments)) for name, arguments in calls]

    results: list[dict[str, Any]] = _in_session(work)
    return results


def _text(result: dict[str, Any]) -> str:
    (text,) = [block["text"] for block in result["content"]]
    return str(text)


@pytest.fixture
def pflow_nodes_and_workflows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake pflow registry.json and two saved workflows, in the environment the server inherits."""
    workflows = tmp_path / "workflows"
    shutil.copytree(DISCOVERY_DATA / "workflows", workflows)
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(DISCOVERY_DATA / "registry.json"))
    monkeypatch.setenv("PFLOW_STRUCTURE_WORKFLOWS_DIR", str(workflows))
    return workflows


def test_list_nodes_returns_the_discovery_context_as_text() -> None:
    (result,) = _calls(("list_nodes", {}))
    assert result["isError"] is False
    assert _text(result) == BUILTIN_DISCOVERY
    structured = result["structuredContent"]
    assert structured["context"] == BUILTIN_DISCOVERY
    assert (structured["node_count"], structured["workflow_count"], structured["warnings"]) == (3, 0, [])
    assert structured["nodes"][1] == {
        "name": "read-json",
        "description": "Read a JSON or JSON Lines file into the shared store.",
        "source": "builtin",
    }


def test_list_nodes_adds_pflow_nodes_and_saved_workflows(pflow_nodes_and_workflows: Path) -> None:
    (result,) = _calls(("list_nodes", {}))
    text = _text(result)
    assert "- code: Execute Python code with typed inputs and result capture.\n" in text
    assert text.endswith(
        "## Available Workflows\n\n"
        "- issue-report: Fetches one issue and writes a Markdown report of it.\n"
        "- triage-issues: Lists open issues and summarises each in one line with Python."
    )
    structured = result["structuredContent"]
    assert (structured["node_count"], structured["workflow_count"]) == (9, 2)
    assert {
        "name": "code",
        "description": "Execute Python code with typed inputs and result capture.",
        "source": "pflow",
    } in structured["nodes"]


def test_list_nodes_reports_an_unreadable_pflow_registry_as_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "registry.json"
    broken.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(broken))
    (result,) = _calls(("list_nodes", {}))
    warning = (
        f"pflow registry {broken} is not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)); run `pflow registry list` to rebuild it."
    )
    assert result["isError"] is False
    assert result["structuredContent"]["warnings"] == [warning]
    assert _text(result) == f"{BUILTIN_DISCOVERY}\n\nWarnings:\n- {warning}"


def test_describe_nodes_returns_the_planning_context_of_the_chosen_nodes() -> None:
    (result,) = _calls(("describe_nodes", {"node_ids": ["read-json"]}))
    assert result["isError"] is False
    assert _text(result) == READ_JSON_PLANNING
    assert result["structuredContent"] == {
        "context": READ_JSON_PLANNING,
        "nodes": ["read-json"],
        "workflows": [],
        "warnings": [],
    }


def test_describe_nodes_describes_pflow_nodes_and_saved_workflows(pflow_nodes_and_workflows: Path) -> None:
    (result,) = _calls(("describe_nodes", {"node_ids": ["github-list-issues"], "workflow_names": ["issue-report"]}))
    text = _text(result)
    assert result["isError"] is False
    assert text.startswith("## Selected Nodes\n\n### github-list-issues\nList GitHub repository issues.\n")
    assert "## Selected Workflows\n\n### issue-report (workflow)\n" in text
    assert "**Nodes**: github-get-issue, code, write-file\n" in text


def test_describe_nodes_with_an_unknown_name_is_an_error_with_close_matches() -> None:
    (result,) = _calls(("describe_nodes", {"node_ids": ["read_json", "shel"], "workflow_names": ["nope"]}))
    assert result["isError"] is True
    assert _text(result) == (
        "Error: Missing components detected:\n"
        "- Unknown nodes: read_json (did you mean read-json?), shel (did you mean shell?)\n"
        "  (Check spelling, use hyphens not underscores)\n"
        "- Unknown workflows: nope\n"
        "Choose again from the names in the discovery context."
    )
    structured = result["structuredContent"]
    assert structured["suggestions"] == {"read_json": ["read-json"], "shel": ["shell"], "nope": []}
    assert (structured["missing_nodes"], structured["missing_workflows"]) == (["read_json", "shel"], ["nope"])


def test_two_phases_in_one_session_list_then_describe_two_nodes() -> None:
    listed, described = _calls(("list_nodes", {}), ("describe_nodes", {"node_ids": ["read-json", "shell"]}))
    names = [node["name"] for node in listed["structuredContent"]["nodes"]]
    assert names == ["http", "read-json", "shell"]
    text = _text(described)
    assert text.startswith(READ_JSON_PLANNING + "\n\n### shell\nRun a shell command and capture its output.\n")


@pytest.mark.parametrize(
    ("tool", "arguments", "words"),
    [
        ("registry_run", {"node_type": "read-jsn"}, "Error: Unknown node type 'read-jsn'. Did you mean read-json?"),
        (
            "read_fields",
            {"execution_id": "exec-1700000000-00000000", "field_paths": ["a"]},
            "Error: Execution not found",
        ),
        ("read_fields", {"execution_id": "../../etc/passwd", "field_paths": ["a"]}, "is not a valid execution id"),
        ("registry_run", {"node_type": "read-json", "parameters": {}}, "Error: Node 'read-json' failed: missing"),
    ],
)
def test_errors_come_back_as_tool_errors_with_the_cli_words(tool: str, arguments: dict[str, Any], words: str) -> None:
    result = _call(tool, arguments)
    assert result["isError"] is True
    (text,) = [block["text"] for block in result["content"]]
    assert words in text


# -- streamable HTTP ---------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_http(*extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    import socket
    import time

    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pflow_structure", "serve", "--http", "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError("the HTTP server did not start listening within 60 s")


def _http_call(url: str, name: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    import importlib

    from mcp import ClientSession
    from mcp.client import streamable_http

    # mcp 2.x ships its own httpx fork (httpx2); 1.x uses httpx.
    try:
        httpx: Any = importlib.import_module("httpx2")
    except ImportError:
        httpx = importlib.import_module("httpx")

    async def main() -> Any:
        if not hasattr(streamable_http, "streamable_http_client"):  # mcp < 1.24 names it differently
            async with (
                streamable_http.streamablehttp_client(url, headers=headers) as streams,
                ClientSession(streams[0], streams[1]) as client,
            ):
                await client.initialize()
                return _plain(await client.call_tool(name, arguments))
        async with (
            httpx.AsyncClient(headers=headers or {}) as http,
            streamable_http.streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as client,
        ):
            await client.initialize()
            return _plain(await client.call_tool(name, arguments))

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def test_http_serves_the_same_tools_on_loopback() -> None:
    process, url = _start_http()
    try:
        result = _http_call(url, "list_nodes", {})
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "read-json" in [node["name"] for node in result["structuredContent"]["nodes"]]


def test_http_with_a_token_refuses_requests_without_it() -> None:
    import urllib.error
    import urllib.request

    process, url = _start_http(env={"PFLOW_STRUCTURE_MCP_TOKEN": "s3cret-token"})
    try:
        request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        result = _http_call(url, "list_nodes", {}, headers={"Authorization": "Bearer s3cret-token"})
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert result["isError"] is False


def test_http_refuses_a_non_loopback_address_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PFLOW_STRUCTURE_MCP_TOKEN"}
    refused = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "serve", "--http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "--host 0.0.0.0 is not a loopback address" in refused.stderr
    assert "PFLOW_STRUCTURE_MCP_TOKEN" in refused.stderr


def test_a_node_that_prints_cannot_corrupt_the_stdio_channel(capsys: pytest.CaptureFixture[str]) -> None:
    from pflow_structure.mcp.server import answer_from

    def noisy() -> dict[str, int]:
        print("debug output from a node")
        return {"ok": 1}

    result = _plain(asyncio.run(answer_from(noisy)))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "debug output from a node" in captured.err
    assert result["structuredContent"] == {"ok": 1}


# -- review defects: bad text and odd files must not break discovery; list_nodes can narrow ------


def test_a_lone_surrogate_in_a_workflow_or_the_registry_does_not_break_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "sur.json").write_text(
        '{"name": "sur", "description": "bad \\ud800 desc", "ir": {"nodes": []}}', encoding="utf-8"
    )
    registry = tmp_path / "registry.json"
    registry.write_text(
        '{"nodes":{"y":{"interface":{"description":"ok","inputs":[{"key":"k","type":"str","description":"\\udfff"}]}}}}',
        encoding="utf-8",
    )
    monkeypatch.setenv("PFLOW_STRUCTURE_WORKFLOWS_DIR", str(workflows))
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(registry))
    listed, described = _calls(
        ("list_nodes", {}),
        ("describe_nodes", {"node_ids": ["y"], "workflow_names": ["sur"]}),
    )
    assert listed["isError"] is False
    assert "- y: ok\n" in _text(listed) and "- sur: bad \ufffd desc" in _text(listed)
    assert len(listed["structuredContent"]["warnings"]) == 2
    assert described["isError"] is False
    assert "- `k: str` - \ufffd\n" in _text(described) and "### sur (workflow)\nbad \ufffd desc\n" in _text(described)


def test_an_unknown_name_with_a_lone_surrogate_is_echoed_as_u_fffd() -> None:
    """A raw JSON client can send "\\ud800"; the SDK's client cannot, so this calls the answer builder."""
    from pflow_structure.mcp.server import answer_with_context

    result = _plain(
        asyncio.run(answer_with_context(lambda: {"error": "Unknown nodes: \ud800x\n", "missing_nodes": ["\ud800x"]}))
    )
    assert result["isError"] is True
    assert _text(result) == "Error: Unknown nodes: \ufffdx"
    assert result["structuredContent"]["missing_nodes"] == ["\ufffdx"]
    json.dumps(result, ensure_ascii=False).encode("utf-8")


def test_a_fifo_at_the_registry_path_does_not_hang_list_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "registry.json"
    os.mkfifo(fifo)
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(fifo))
    (result,) = _calls(("list_nodes", {}))  # the session times out if the read blocks
    assert result["structuredContent"]["warnings"] == [
        f"pflow registry {fifo} cannot be read (not a regular file); its nodes are left out."
    ]
    assert _text(result).startswith(BUILTIN_DISCOVERY)


def test_list_nodes_narrows_with_query_and_kind_as_its_marker_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry.json"
    nodes = {f"pflow-node-{index:04d}": {"docstring": f"Pflow node number {index}."} for index in range(1500)}
    registry.write_text(json.dumps({"nodes": nodes}), encoding="utf-8")
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(registry))
    workflows = tmp_path / "workflows"
    shutil.copytree(DISCOVERY_DATA / "workflows", workflows)
    monkeypatch.setenv("PFLOW_STRUCTURE_WORKFLOWS_DIR", str(workflows))
    everything, queried, flows_only, bad_kind = _calls(
        ("list_nodes", {}),
        ("list_nodes", {"query": "NUMBER 1499"}),
        ("list_nodes", {"kind": "workflows"}),
        ("list_nodes", {"kind": "edges"}),
    )
    text = _text(everything)
    assert len(everything["structuredContent"]["context"].encode()) <= 10 * 1024
    assert "- issue-report\n" in text and "- triage-issues\n" in text  # the nodes cannot take all the room
    assert text.splitlines()[-1].endswith(
        'Call list_nodes with query="words" (found in names and descriptions) or kind="nodes" or kind="workflows" '
        "to see the rest.]"
    )
    assert _text(queried) == "## Available Nodes\n\n- pflow-node-1499: Pflow node number 1499."
    assert [flow["name"] for flow in flows_only["structuredContent"]["workflows"]] == ["issue-report", "triage-issues"]
    assert flows_only["structuredContent"]["nodes"] == []
    assert bad_kind["isError"] is True
