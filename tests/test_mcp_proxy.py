"""`pflow-structure proxy` in front of real MCP servers, driven by the SDK's own client.

The npm servers pinned in tests/npm-servers.txt are installed by the suite itself, when npm is on
PATH and they are missing, into `.npm-servers/` (or the directory in PFLOW_STRUCTURE_NPM_SERVERS;
see tests/npm_servers.py); without npm these tests skip with the install line, unless
PFLOW_STRUCTURE_REQUIRE_NPM=1 (as in CI) turns the skip into a failure.
The faulty server is ours (tests/servers/faulty_mcp_server.py), started for real as well.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.render.failure_log import read_failures
from pflow_structure.render.output_text import format_json
from pflow_structure.render.tokens import count_tokens
from tests import npm_servers
from tests.conftest import REPO
from tests.structure_text import cached, cached_id

FAULTY = [sys.executable, str(REPO / "tests" / "servers" / "faulty_mcp_server.py")]
PROXY = [sys.executable, "-m", "pflow_structure", "proxy"]
TIMEOUT = 180


@functools.cache
def _npm_servers_ready() -> str | None:
    """Install the pinned npm servers when missing, once per process (the lock makes it once per run)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    return npm_servers.ensure_installed(npm_servers.servers_dir(), npm_servers.pinned(), run_id=run_id)


def npm_server(name: str) -> str:
    base = npm_servers.servers_dir()
    found = base / "node_modules" / ".bin" / name
    why = _npm_servers_ready()
    if why is not None or not found.exists():
        message = f"{name} is not installed in {base}: {why or 'not among the pins of tests/npm-servers.txt'}"
        if os.environ.get("PFLOW_STRUCTURE_REQUIRE_NPM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return str(found)


def plain(model: Any) -> dict[str, Any]:
    """A protocol object as the wire has it (camelCase), whatever the SDK major."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    dumped.pop("resultType", None)  # mcp 2.x adds it on its side of the wire
    return dumped


def in_session(command: list[str], work: Callable[[Any], Awaitable[Any]], env: dict[str, str] | None = None) -> Any:
    """Start ``command`` as a stdio MCP server, initialise a ClientSession, run ``work`` with it."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> Any:
        server = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, **(env or {})})
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await work(client)

    return asyncio.run(asyncio.wait_for(main(), timeout=TIMEOUT))


def both(command: list[str], work: Callable[[Any], Awaitable[Any]], env: dict[str, str] | None = None) -> Any:
    """``work`` against the server directly, then through the proxy: (direct, proxied)."""
    return in_session(command, work, env), in_session([*PROXY, "--", *command], work, env)


def decoded(text: str) -> Any:
    """A small answer's value: compact JSON, or TOON when that counted fewer tokens (with exact o200k
    counts the JSON of these small values wins; without the vocabulary, chars/4 can pick TOON)."""
    try:
        return json.loads(text)
    except ValueError:
        from pflow_structure.render.toon_reader import parse_toon

        return parse_toon(text)


def texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def failures() -> list[dict[str, Any]]:
    return read_failures(Path(os.environ["PFLOW_STRUCTURE_FAILURE_LOG"]))


def assert_well_formed(record: dict[str, Any], operation: str, stage: str, error: str) -> None:
    assert set(record) >= {"timestamp", "operation", "input_bytes", "error", "stage", "command"}
    assert (record["operation"], record["stage"], record["error"]) == (operation, stage, error)
    assert record["timestamp"].endswith("Z") and record["timestamp"][:2] == "20"
    assert isinstance(record["input_bytes"], int) and record["input_bytes"] > 0


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A directory of 2,050 entries: 50 folders of 40 files each."""
    root = tmp_path / "tree"
    for folder in range(50):
        (root / f"folder_{folder:02}").mkdir(parents=True)
        for index in range(40):
            (root / f"folder_{folder:02}" / f"file_{index:03}.txt").write_text("x")
    return root


# -- server-filesystem -------------------------------------------------------------------------


def test_the_tool_list_is_the_downstreams_plus_read_fields(tree: Path) -> None:
    command = [npm_server("mcp-server-filesystem"), str(tree)]

    async def work(client: Any) -> Any:
        return [plain(tool) for tool in (await client.list_tools()).tools]

    direct, proxied = both(command, work)
    assert len(direct) >= 10
    assert [tool["name"] for tool in proxied] == [tool["name"] for tool in direct] + ["read_fields", "edit_fields"]
    for ours, theirs in zip(proxied, direct, strict=False):
        assert ours["description"] == theirs["description"]
        # What the proxy adds to every tool: _want and _fields (issue 28), _jq (issue 36).
        added = {key: ours["inputSchema"]["properties"][key] for key in ("_want", "_fields", "_jq")}
        assert added["_want"]["type"] == "string"
        properties = {**theirs["inputSchema"]["properties"], **added}
        assert ours["inputSchema"] == {**theirs["inputSchema"], "properties": properties}
        # ... at a cost of at most 40 o200k tokens a tool, on every tools/list (issue 28).
        schemas = (format_json(schema["inputSchema"], compact=True) for schema in (ours, theirs))
        grown = count_tokens(next(schemas)) - count_tokens(next(schemas))
        assert 0 < grown <= 40, f"{ours['name']}: {grown} tokens"
        assert "outputSchema" in theirs and "outputSchema" not in ours  # a structure answer would not match it
    read_tool, edit_tool = proxied[-2:]
    assert read_tool["inputSchema"]["required"] == ["execution_id"]  # field_paths, or jq
    assert all(spec.get("description") for spec in read_tool["inputSchema"]["properties"].values())
    assert edit_tool["inputSchema"]["required"] == ["execution_id"]
    assert all(spec.get("description") for spec in edit_tool["inputSchema"]["properties"].values())


def test_a_directory_tree_of_2050_entries_comes_back_as_structure_and_reads_back_equal(tree: Path) -> None:
    command = [npm_server("mcp-server-filesystem"), str(tree)]

    async def direct_call(client: Any) -> Any:
        return plain(await client.call_tool("directory_tree", {"path": str(tree)}))

    async def proxied_calls(client: Any) -> Any:
        answer = plain(await client.call_tool("directory_tree", {"path": str(tree)}))
        execution_id = cached_id(answer)
        paths = ["result", "result[*].name", "result[3].children[39].name"]
        arguments = {"execution_id": execution_id, "field_paths": paths, "max_tokens": 100_000}  # all at once
        read = plain(await client.call_tool("read_fields", arguments))
        return answer, read

    direct = in_session(command, direct_call)
    answer, read = in_session([*PROXY, "--", *command], proxied_calls)
    value = json.loads(texts(direct)[0])
    assert sum(1 + len(folder["children"]) for folder in value) == 2050

    # Text only: directory_tree declares an outputSchema, which the proxy's tool list leaves out, so the
    # SDK's client (it checks structuredContent against a listed schema) accepts an answer without one.
    structured = cached(answer)
    assert structured["structure"] == {
        "result": {"type": "list", "length": 50},
        "result[0].name": {"type": "str", "avg_length": 9},
        "result[0].type": {"type": "str", "avg_length": 9},
        "result[0].children": {"type": "list", "length": 40},
        "result[0].children[0].name": {"type": "str", "avg_length": 12},
        "result[0].children[0].type": {"type": "str", "avg_length": 4},
    }
    assert (structured["read_tool"], structured["example"]) == ("read_fields", "result[*].name")
    assert len(texts(answer)[0]) * 20 < len(texts(direct)[0])

    assert read["isError"] is False
    values = read["structuredContent"]
    assert values["result"] == value
    assert values["result[*].name"] == [folder["name"] for folder in value]
    assert values["result[3].children[39].name"] == value[3]["children"][39]["name"]
    assert failures() == []


def test_small_results_come_back_unchanged(tree: Path) -> None:
    command = [npm_server("mcp-server-filesystem"), str(tree)]

    async def work(client: Any) -> Any:
        return [
            plain(await client.call_tool("list_allowed_directories", {})),
            plain(await client.call_tool("get_file_info", {"path": str(tree / "folder_00")})),
            plain(await client.call_tool("list_directory", {"path": str(tree / "folder_07")})),
        ]

    direct, proxied = both(command, work)
    for theirs, ours in zip(direct, proxied, strict=True):
        assert ours == theirs
    assert str(tree) in texts(proxied[0])[0]
    assert texts(proxied[2])[0].startswith("[FILE] file_000.txt")
    assert failures() == []  # "[FILE] ..." lines are plain text, not broken JSON


def test_a_downstream_tool_error_passes_through_with_is_error(tree: Path) -> None:
    command = [npm_server("mcp-server-filesystem"), str(tree)]

    async def work(client: Any) -> Any:
        return plain(await client.call_tool("read_text_file", {"path": "/etc/passwd"}))

    direct, proxied = both(command, work)
    assert direct["isError"] is True
    assert proxied == direct


# -- server-memory -----------------------------------------------------------------------------


def test_read_graph_of_500_entities_is_cached_and_readable(tmp_path: Path) -> None:
    command = [npm_server("mcp-server-memory")]
    entities = [
        {
            "name": f"person_{index:03}",
            "entityType": "person" if index % 4 else "organization",
            "observations": [f"works on project {index % 17}", f"joined in {2000 + index % 25}"],
        }
        for index in range(500)
    ]

    async def direct_call(client: Any) -> Any:
        await client.call_tool("create_entities", {"entities": entities})
        return plain(await client.call_tool("read_graph", {}))

    async def proxied_calls(client: Any) -> Any:
        created = plain(await client.call_tool("create_entities", {"entities": entities}))
        graph = plain(await client.call_tool("read_graph", {}))
        execution_id = cached_id(graph)
        paths = ["result.entities[*].name", "result.entities[499].observations", "result.relations"]
        arguments = {"execution_id": execution_id, "field_paths": paths, "max_tokens": 100_000}  # all at once
        read = plain(await client.call_tool("read_fields", arguments))
        columns = ["result.entities[*].name", "result.entities[*].entityType"]
        arguments = {"execution_id": execution_id, "field_paths": columns, "limit": 3, "format": "auto"}
        table = plain(await client.call_tool("read_fields", arguments))
        resources = plain(await client.list_resources())
        return created, graph, (read, table), resources

    async def direct_resources(client: Any) -> Any:
        return plain(await client.list_resources())

    direct = in_session(command, direct_call, {"MEMORY_FILE_PATH": str(tmp_path / "direct.jsonl")})
    env = {"MEMORY_FILE_PATH": str(tmp_path / "proxied.jsonl")}
    created, graph, (read, table), resources = in_session([*PROXY, "--", *command], proxied_calls, env)
    expected = direct["structuredContent"]
    assert len(expected["entities"]) == 500

    assert cached(created)["structure"]["result"] == {"type": "list", "length": 500}  # echoed back: cached too
    assert cached(graph)["structure"]["result.entities"] == {"type": "list", "length": 500}
    values = read["structuredContent"]
    assert values["result.entities[*].name"] == [entity["name"] for entity in expected["entities"]]
    assert values["result.entities[499].observations"] == expected["entities"][499]["observations"]
    assert values["result.relations"] == []
    assert "structuredContent" not in table and not table["isError"]
    assert texts(table) == [
        "result.entities[*].name, result.entities[*].entityType:  # items 0-2 of 500; offset 3 for more\n"
        "  [3]{name,entityType}:\n    person_000,organization\n    person_001,person\n    person_002,person"
    ]
    assert resources == in_session(command, direct_resources, {"MEMORY_FILE_PATH": str(tmp_path / "direct.jsonl")})


# -- our faulty server: compaction, pass-through and faults ------------------------------------


def test_small_json_comes_back_compact_and_plain_text_as_is() -> None:
    async def work(client: Any) -> Any:
        return [plain(await client.call_tool(name, {})) for name in ("small", "plain", "fail")]

    direct, proxied = both(FAULTY, work)
    small_direct, small_proxied = texts(direct[0])[0], texts(proxied[0])[0]
    assert decoded(small_proxied) == json.loads(small_direct)
    assert len(small_proxied) < len(small_direct)
    assert proxied[1] == direct[1]  # plain text under the budget
    assert proxied[2] == direct[2] and direct[2]["isError"] is True
    assert failures() == []


def test_the_budget_option_decides_what_is_cached() -> None:
    async def work(client: Any) -> Any:
        return plain(await client.call_tool("small", {}))

    answer = in_session([*PROXY, "--budget", "3", "--", *FAULTY], work)
    data, last = texts(answer)[0].rsplit("\n", 1)  # cached, and answered as data: smaller than its structure
    assert decoded(data) == {"ok": True, "items": [1, 2, 3]} and last.startswith("Cached as exec-")
    shown = in_session([*PROXY, "--", *FAULTY], work, {"PFLOW_STRUCTURE_PROXY_BUDGET": "100000"})
    assert decoded(texts(shown)[0]) == {"ok": True, "items": [1, 2, 3]}


def test_concurrent_calls_each_get_their_own_answer() -> None:
    async def work(client: Any) -> Any:
        calls = [client.call_tool("big", {"count": count}) for count in (300, 400, 500)]
        calls += [client.call_tool("small", {}), client.call_tool("plain", {"lines": 3})]
        answers = [plain(answer) for answer in await asyncio.gather(*calls)]
        ids = [cached_id(answer) for answer in answers[:3]]
        reads = [
            plain(
                await client.call_tool(
                    "read_fields", {"execution_id": eid, "field_paths": ["result"], "max_tokens": 50_000}
                )
            )
            for eid in ids
        ]
        return answers, reads

    answers, reads = in_session([*PROXY, "--", *FAULTY], work)
    lengths = [cached(answer)["structure"]["result"]["length"] for answer in answers[:3]]
    assert lengths == [300, 400, 500]
    assert [len(read["structuredContent"]["result"]) for read in reads] == [300, 400, 500]
    assert decoded(texts(answers[3])[0]) == {"ok": True, "items": [1, 2, 3]}
    assert texts(answers[4])[0].splitlines()[2] == "line 2: some plain text"


def test_prompts_and_resources_pass_through_unchanged() -> None:
    async def work(client: Any) -> Any:
        return [
            plain(await client.list_prompts()),
            plain(await client.get_prompt("greet", {"name": "Ada"})),
            plain(await client.list_resources()),
            plain(await client.read_resource("note://hello")),
        ]

    direct, proxied = both(FAULTY, work)
    assert proxied == direct
    assert "Ada" in json.dumps(proxied[1])
    assert proxied[3]["contents"][0]["text"] == "hello from the faulty server"


def test_malformed_json_from_downstream_comes_back_raw_with_one_log_line() -> None:
    async def work(client: Any) -> Any:
        return [plain(await client.call_tool("malformed", {"size": size})) for size in (3, 400)]

    direct, proxied = both(FAULTY, work)
    assert proxied == direct  # small and large alike: the original answer
    records = failures()
    assert len(records) == 2
    quotes = (
        "MalformedJSONError: text starts like JSON but does not parse: "
        "Expecting property name enclosed in double quotes"
    )
    assert_well_formed(records[0], "malformed", "transform", f"{quotes}: line 36 column 8 (char 559)")
    assert_well_formed(records[1], "malformed", "transform", f"{quotes}: line 5197 column 8 (char 81605)")
    assert records[1]["input_bytes"] > records[0]["input_bytes"]


def test_a_downstream_that_dies_is_reported_and_restarted_on_the_next_call() -> None:
    async def work(client: Any) -> Any:
        first = plain(await client.call_tool("pid", {}))
        died = plain(await client.call_tool("die", {}))
        again = plain(await client.call_tool("pid", {}))
        tools = [tool.name for tool in (await client.list_tools()).tools]
        return first, died, again, tools

    first, died, again, tools = in_session([*PROXY, "--", *FAULTY], work)
    assert died["isError"] is True
    (message,) = texts(died)
    said = f"the downstream MCP server `{' '.join(FAULTY)}` exited; it will be started again on the next call"
    assert message == f"Error: {said}"
    assert again["isError"] is False
    assert texts(again)[0] != texts(first)[0]  # a new process answered
    assert "die" in tools and "read_fields" in tools
    (record,) = failures()
    assert record["operation"] == "die" and record["stage"] == "call"
    assert record["timestamp"].endswith("Z") and (record["error"], record["command"]) == (said, " ".join(FAULTY))


def test_a_transformation_that_raises_gives_the_raw_result_and_one_log_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process (so the fault can be forced): the proxy's server side over memory streams."""
    import anyio
    from mcp import ClientSession

    from pflow_structure.mcp.proxy import run as proxy_run
    from pflow_structure.mcp.proxy import shaping
    from pflow_structure.settings import Settings

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced failure in the transformation")

    monkeypatch.setattr(shaping, "shape_result", broken)  # what the proxy's shape_and_store calls

    async def main() -> Any:
        to_server = anyio.create_memory_object_stream[Any](16)
        to_client = anyio.create_memory_object_stream[Any](16)
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: proxy_run.serve(FAULTY, Settings.from_env(), streams=(to_server[1], to_client[0])))
            async with ClientSession(to_client[1], to_server[0]) as client:
                await client.initialize()
                results = [plain(await client.call_tool(name, {})) for name in ("big", "small")]
            group.cancel_scope.cancel()
        return results

    proxied = asyncio.run(asyncio.wait_for(main(), timeout=TIMEOUT))

    async def work(client: Any) -> Any:
        return [plain(await client.call_tool(name, {})) for name in ("big", "small")]

    assert proxied == in_session(FAULTY, work)
    records = failures()
    assert [record["operation"] for record in records] == ["big", "small"]
    for record in records:
        assert_well_formed(
            record, record["operation"], "transform", "RuntimeError: forced failure in the transformation"
        )


def test_read_fields_errors_come_back_as_tool_errors_with_the_cli_words() -> None:
    async def work(client: Any) -> Any:
        return [
            plain(await client.call_tool("read_fields", {"execution_id": "exec-1-deadbeef", "field_paths": ["a"]})),
            plain(await client.call_tool("read_fields", {"execution_id": "exec-1-deadbeef", "field_paths": 3})),
            plain(await client.call_tool("read_fields", {"field_paths": ["a"]})),
            plain(
                await client.call_tool(
                    "read_fields", {"execution_id": "exec-1-deadbeef", "field_paths": ["a"], "format": "xml"}
                )
            ),
        ]

    missing, bad_paths, no_id, bad_format = in_session([*PROXY, "--", *FAULTY], work)
    assert [(answer["isError"], texts(answer)) for answer in (missing, bad_paths, no_id, bad_format)] == [
        (
            True,
            [
                "Error: Execution not found: exec-1-deadbeef. "
                "Call the tool that answered with it again to get a new execution id."
            ],
        ),
        (True, ['Error: field_paths must be a list of paths, e.g. ["result[0].name"]']),
        (True, ["Error: execution_id is required: the execution_id from the cached answer"]),
        (True, ["Error: format must be one of text, json, auto, outline, lines, table, toon, not 'xml'"]),
    ]


# -- the command line --------------------------------------------------------------------------


def test_a_command_that_cannot_start_is_a_clear_error() -> None:
    done = subprocess.run(
        [*PROXY, "--", "no-such-mcp-server-xyz", "--flag"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    assert "could not start the downstream MCP server `no-such-mcp-server-xyz --flag`" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_command_that_exits_at_once_is_a_clear_error() -> None:
    done = subprocess.run(
        [*PROXY, "--start-timeout", "20", "--", sys.executable, "-c", "import sys; sys.exit(4)"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    assert "could not start the downstream MCP server" in done.stderr
    assert "Traceback" not in done.stderr


def test_proxy_needs_a_command_and_explains_itself() -> None:
    missing = subprocess.run([*PROXY], capture_output=True, text=True, timeout=TIMEOUT)
    assert missing.returncode == 2 and "COMMAND" in missing.stderr
    shown = subprocess.run([*PROXY, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    assert shown.returncode == 0
    for words in ("--budget", "--start-timeout", "read_fields", "failure log", "server-filesystem"):
        assert words in shown.stdout


def test_the_example_client_configuration_runs(tmp_path: Path) -> None:
    """examples/mcp/proxy.json as a client would start it (npx finds the server installed by CI)."""
    npm_server("mcp-server-filesystem")
    config = json.loads((REPO / "examples" / "mcp" / "proxy.json").read_text())
    (server,) = config["mcpServers"].values()
    assert server["command"] == "pflow-structure" and server["args"][:3] == ["proxy", "--", "npx"]
    assert shutil.which("npx"), "npx is needed to run the example"
    args = [*server["args"][:-1], str(tmp_path)]  # the placeholder directory, set to a real one

    async def work(client: Any) -> Any:
        return plain(await client.call_tool("list_allowed_directories", {}))

    npm_dir = str(Path(npm_server("mcp-server-filesystem")).parents[2])
    previous = os.getcwd()
    os.chdir(npm_dir)  # npx resolves the package from ./node_modules, without the network
    try:
        result = in_session([sys.executable, "-m", "pflow_structure", *args], work, server.get("env"))
    finally:
        os.chdir(previous)
    assert result["isError"] is False
    assert str(tmp_path) in texts(result)[0]


# -- found in review: answers that must survive ------------------------------------------------


def test_compacting_keeps_every_number_key_and_escape_exactly_and_a_lone_surrogate_does_not_crash() -> None:
    async def work(client: Any) -> Any:
        return [plain(await client.call_tool("surrogate", {})), plain(await client.call_tool("small", {}))]

    direct, proxied = both(FAULTY, work)
    assert texts(proxied[0])[0] == '{"name":"bad \\ud800 char","price":19.90,"big":1e400,"dup":1,"dup":2}'
    assert texts(direct[0])[0].replace(" ", "") == texts(proxied[0])[0].replace(" ", "")
    assert proxied[1]["isError"] is False  # the proxy is still there for the next call
    assert failures() == []


def test_an_answer_written_just_before_the_downstream_exits_still_arrives() -> None:
    async def work(client: Any) -> Any:
        answers = []
        for _ in range(3):
            answers.append(plain(await client.call_tool("last_words", {})))
            await asyncio.sleep(0.5)  # the process is gone now; the next call starts a new one
        return answers

    answers = in_session([*PROXY, "--", *FAULTY], work)
    assert [texts(answer)[0] for answer in answers] == ["my last words"] * 3


def test_a_downstream_tool_named_read_fields_keeps_its_name_and_ours_moves_aside() -> None:
    env = {"FAULTY_SERVER_READ_FIELDS": "1"}

    async def work(client: Any) -> Any:
        names = [tool.name for tool in (await client.list_tools()).tools]
        big = plain(await client.call_tool("big", {}))
        theirs = plain(await client.call_tool("read_fields", {"execution_id": "x"}))
        execution_id = cached_id(big)
        ours = plain(
            await client.call_tool(
                "pflow_structure_read_fields", {"execution_id": execution_id, "field_paths": ["result[0].id"]}
            )
        )
        return names, big, theirs, ours

    names, big, theirs, ours = in_session([*PROXY, "--", *FAULTY], work, env)
    assert names.count("read_fields") == 1 and names[-2:] == ["pflow_structure_read_fields", "edit_fields"]
    assert cached(big)["read_tool"] == "pflow_structure_read_fields"
    assert texts(theirs)[0] == "downstream read_fields got x"
    assert ours["structuredContent"] == {"result[0].id": 0}


def test_the_proxy_and_its_downstream_exit_when_the_client_leaves_during_a_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "downstream.pid"
    downstream = [sys.executable, "-c", f"import os, runpy, sys; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                  f"sys.argv = [{FAULTY[1]!r}]; runpy.run_path({FAULTY[1]!r}, run_name='__main__')"]  # fmt: skip
    # --timeout 1: the call in flight gets 1 s to finish once the client has left (it takes 300)
    process = subprocess.Popen(
        [*PROXY, "--timeout", "1", "--", *downstream], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleep", "arguments": {"seconds": 300}}},
    ]  # fmt: skip
    process.stdin.write((json.dumps(messages[0]) + "\n").encode())
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    for message in messages[1:]:
        process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()
    import time

    time.sleep(1.5)  # the call is running downstream
    process.stdin.close()
    try:
        assert process.wait(timeout=30) is not None
    finally:
        process.kill()
    assert_gone(int(pid_file.read_text()), "the downstream server outlived the proxy")


def assert_gone(pid: int, message: str, within: float = 10.0) -> None:
    """``pid`` exits within ``within`` seconds; else it is killed and the test fails with ``message``."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError(message)


def test_downstream_options_after_the_command_are_not_taken_by_the_proxy() -> None:
    async def work(client: Any) -> Any:
        return plain(await client.call_tool("small", {}))

    # without "--", options after COMMAND are its own (--help here; the test server ignores argv)
    answer = in_session([*PROXY, "--budget", "3", *FAULTY, "--help"], work)
    data, last = texts(answer)[0].rsplit("\n", 1)  # cached, and answered as data: smaller than its structure
    assert decoded(data) == {"ok": True, "items": [1, 2, 3]} and last.startswith("Cached as exec-")
