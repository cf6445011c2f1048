"""Two-phase tool lists and the gateway (issue 39), in process: the proxy's server side over memory
streams, real stdio servers behind it (tests/servers/, no SDK in them, so each starts in a few
tens of milliseconds).

The measured side (server-filesystem and server-everything, tokens per mode) is in
benchmarks/tool_lists.py; the gateway over three npm servers under the MCP Inspector is in
tests/test_inspector.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from pflow_structure.errors import ParameterError
from pflow_structure.mcp.proxy.remote import Upstream
from pflow_structure.mcp.proxy.toollist import LIGHT_TOKENS, compact_schema, first_sentence, light_tool, search_tools
from pflow_structure.render.tokens import count_tokens
from tests.conftest import REPO
from tests.structure_text import cached_id
from tests.test_mcp_proxy import plain

FAULTY = (sys.executable, str(REPO / "tests" / "servers" / "faulty_mcp_server.py"))
ECHO = (sys.executable, str(REPO / "tests" / "servers" / "echo_mcp_server.py"))
FAULTY_TOOLS = [
    "small", "big", "malformed", "die", "fail", "add_tool", "plain", "pid", "sleep", "last_words", "surrogate",
]  # fmt: skip
TIMEOUT = 120


def through_proxy(
    upstream: Upstream | dict[str, Upstream],
    tools: str,
    work: Callable[[Any], Awaitable[Any]],
    separator: str = ".",
    **session: Any,
) -> Any:
    """``work(client)`` with a ClientSession on an in-process proxy (``--tools tools``, ``--separator``)."""
    from mcp import ClientSession

    from pflow_structure.mcp.proxy import run as proxy_run
    from pflow_structure.settings import Settings

    async def main() -> Any:
        to_server = anyio.create_memory_object_stream[Any](16)
        to_client = anyio.create_memory_object_stream[Any](16)
        streams = (to_server[1], to_client[0])
        async with anyio.create_task_group() as group:
            serve = proxy_run.serve
            group.start_soon(
                lambda: serve(upstream, Settings.from_env(), streams=streams, tools=tools, separator=separator)
            )
            async with ClientSession(to_client[1], to_server[0], **session) as client:
                await client.initialize()
                result = await work(client)
            group.cancel_scope.cancel()
        return result

    return asyncio.run(asyncio.wait_for(main(), timeout=TIMEOUT))


async def listed(client: Any) -> list[dict[str, Any]]:
    return [plain(tool) for tool in (await client.list_tools()).tools]


def text(result: Any) -> str:
    [block] = plain(result)["content"]
    found: str = block["text"]
    return found


# -- the pure parts -------------------------------------------------------------------------------


def test_compact_schema_keeps_every_property_required_entry_and_enum() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string", "title": "Title", "description": "The title. Shown in bold, e.g. in lists."},
            "default": {"type": "integer", "default": 3, "examples": [1, 2]},
            "mode": {"type": "string", "enum": ["a", "b"], "description": "How.\n\nMore words."},
            "items": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {}}}},
        },
        "required": ["title", "mode"],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "The title."},
            "default": {"type": "integer"},
            "mode": {"type": "string", "enum": ["a", "b"], "description": "How."},
            "items": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {}}}},
        },
        "required": ["title", "mode"],
    }


def test_first_sentence_does_not_end_at_an_abbreviation() -> None:
    assert first_sentence("Paths to read, e.g. ['a.b']: [*] for every item. More.") == (
        "Paths to read, e.g. ['a.b']: [*] for every item."
    )


def test_a_light_entry_fits_its_token_limit_and_keeps_the_first_words() -> None:
    tool = {
        "name": "read_text_file",
        "description": "Read the complete contents of a file from the file system as text. Handles encodings.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    entry = light_tool(tool)
    assert entry == {
        "name": "read_text_file",
        "description": "Read complete",
        "inputSchema": {"type": "object"},
    }
    assert count_tokens(json.dumps(entry, separators=(",", ":"))) <= LIGHT_TOKENS


SOME_TOOLS = [  # descriptions as server-filesystem and server-memory give them
    {"name": name, "description": description}
    for name, description in {
        "files.read_file": "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
        "files.read_text_file": "Read the complete contents of a file from the file system as text.",
        "files.list_directory": "Get a detailed listing of all files and directories in a specified path.",
        "files.create_directory": "Create a new directory or ensure a directory exists.",
        "memory.create_entities": "Create multiple new entities in the knowledge graph",
        "memory.delete_entities": "Delete multiple entities and their associated relations from the knowledge graph",
    }.items()
]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("read a file", "files.read_text_file"),  # read_file ties on words, and says it is deprecated
        ("list a directory", "files.list_directory"),  # "list" is a question word to want, a verb here
        ("forget an entity", "memory.delete_entities"),  # forget and delete: one action
    ],
)
def test_search_ranks_the_tool_a_person_would_pick_first(query: str, first: str) -> None:
    assert search_tools(SOME_TOOLS, query)[0]["name"] == first


# -- one server behind the proxy ----------------------------------------------------------------------


def test_the_light_list_is_each_tool_in_short_then_ours_and_a_first_call_needs_no_describe() -> None:
    async def work(client: Any) -> Any:
        return await listed(client), await client.call_tool("big", {"count": 2})

    tools, called = through_proxy(Upstream(command=FAULTY), "light", work)
    names = [tool["name"] for tool in tools]
    assert names == [*FAULTY_TOOLS, "read_fields", "edit_fields", "describe_tools", "search_tools"]
    for tool in tools[: len(FAULTY_TOOLS)]:
        assert tool["inputSchema"] == {"type": "object"}
        assert count_tokens(json.dumps(tool, separators=(",", ":"))) <= LIGHT_TOKENS, tool
    assert json.loads(text(called))[1]["title"] == "Record 1: a title long enough to count"


def test_describe_tools_gives_the_full_definition_and_an_unknown_name_its_near_tools() -> None:
    async def work(client: Any) -> Any:
        known = await client.call_tool("describe_tools", {"names": ["big", "bigg"]})
        unknown = await client.call_tool("describe_tools", {"names": ["sleeep"]})
        return plain(known), plain(unknown)

    known, unknown = through_proxy(Upstream(command=FAULTY), "compact", work)
    [big] = known["structuredContent"]["tools"]
    assert big["description"] == "count records as pretty-printed JSON text."
    assert big["inputSchema"]["properties"]["count"] == {"type": "integer", "default": 500}
    assert known["structuredContent"]["_missing"] == {"bigg": "no tool of that name; near: big"}
    assert unknown == {
        "content": [{"type": "text", "text": "Error: sleeep: no tool of that name; near: sleep"}],
        "isError": True,
    }


@pytest.mark.parametrize("prefix", ["", "one."], ids=["one server", "a gateway"])
def test_search_and_the_light_list_follow_a_list_change(prefix: str) -> None:
    upstream = Upstream(command=FAULTY) if not prefix else {"one": Upstream(command=FAULTY)}
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if "ToolListChanged" in type(getattr(message, "root", message)).__name__:
            changed.set()

    async def work(client: Any) -> Any:
        before = await client.call_tool("search_tools", {"query": "added while the session ran"})
        await client.call_tool(f"{prefix}add_tool", {})
        with anyio.fail_after(30):
            await changed.wait()
        after = await client.call_tool("search_tools", {"query": "added while the session ran"})
        return plain(before), plain(after), [tool["name"] for tool in await listed(client)]

    before, after, names = through_proxy(upstream, "light", work, message_handler=on_message)
    assert f"{prefix}added" not in [tool["name"] for tool in before["structuredContent"]["tools"]]
    assert after["structuredContent"]["tools"][0] == {
        "name": f"{prefix}added",
        "description": "A tool add_tool added while the session ran.",
    }
    assert names[: len(FAULTY_TOOLS) + 1] == [*(prefix + name for name in FAULTY_TOOLS), f"{prefix}added"]


# -- the gateway ------------------------------------------------------------------------------------


def test_a_gateway_namespaces_clashing_names_and_each_call_reaches_its_own_server() -> None:
    servers = {"x.y": Upstream(command=FAULTY), "x_y": Upstream(command=FAULTY)}

    async def work(client: Any) -> Any:
        pids = [text(await client.call_tool(name, {})) for name in ("x_y.pid", "x_y_2.pid")]
        return await listed(client), pids

    tools, pids = through_proxy(servers, "compact", work)
    names = [tool["name"] for tool in tools]
    assert names == [
        *(f"x_y.{name}" for name in FAULTY_TOOLS),
        *(f"x_y_2.{name}" for name in FAULTY_TOOLS),
        "read_fields", "edit_fields", "describe_tools", "search_tools",
    ]  # fmt: skip
    assert pids[0] != pids[1] and all(pid.isdigit() for pid in pids)


def test_with_an_underscore_separator_a_call_goes_to_the_longest_namespace_it_starts_with() -> None:
    servers = {"my": Upstream(command=FAULTY), "my_files": Upstream(command=FAULTY)}

    async def work(client: Any) -> Any:
        names = [tool["name"] for tool in await listed(client)]
        return names, [text(await client.call_tool(name, {})) for name in ("my_pid", "my_files_pid", "my_files_pid")]

    names, pids = through_proxy(servers, "light", work, separator="_")
    assert names[: len(FAULTY_TOOLS) + 1] == [*(f"my_{name}" for name in FAULTY_TOOLS), "my_files_small"]
    assert pids[0] != pids[1] and pids[1] == pids[2]


def test_a_gateway_tool_named_as_one_of_ours_renames_ours_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    servers = {"read": Upstream(command=FAULTY, env={"FAULTY_SERVER_EXTRA_TOOL": "fields"})}

    async def work(client: Any) -> Any:
        names = [tool["name"] for tool in await listed(client)]
        return names[len(FAULTY_TOOLS) :], text(await client.call_tool("read_fields", {}))

    assert through_proxy(servers, "light", work, separator="_") == (
        ["read_fields", "pflow_structure_read_fields", "edit_fields", "describe_tools", "search_tools"],
        "downstream fields",
    )
    assert capsys.readouterr().err == (
        "pflow-structure proxy: read_fields is server read's tool fields under --separator _, so the proxy's own "
        "read_fields is listed as pflow_structure_read_fields; choose --separator . or __ to keep both names\n"
    )


def test_a_server_that_cannot_start_is_listed_in_its_tools_place_and_the_others_serve(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-server")
    servers = {"bad": Upstream(command=(missing,)), "good": Upstream(command=FAULTY)}

    async def work(client: Any) -> Any:
        return await listed(client), plain(await client.call_tool("good.small", {}))

    tools, small = through_proxy(servers, "light", work)
    assert tools[0]["name"] == "bad.not_started"
    assert tools[0]["description"].startswith(
        f"Server bad did not start, so its tools are missing: could not start the downstream MCP server `{missing}`"
    )
    assert [tool["name"] for tool in tools[1:3]] == ["good.small", "good.big"]
    assert small["content"] == [{"type": "text", "text": '{"ok":true,"items":[1,2,3]}'}]


def test_calling_not_started_starts_the_server_again_and_its_tools_are_listed(tmp_path: Path) -> None:
    script = tmp_path / "later.py"  # absent at first: python exits at once
    servers = {"later": Upstream(command=(sys.executable, str(script))), "good": Upstream(command=FAULTY)}
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if "ToolListChanged" in type(getattr(message, "root", message)).__name__:
            changed.set()

    async def work(client: Any) -> Any:
        before = [tool["name"] for tool in await listed(client)]
        script.write_bytes((REPO / "tests" / "servers" / "faulty_mcp_server.py").read_bytes())
        started = text(await client.call_tool("later.not_started", {}))
        with anyio.fail_after(30):
            await changed.wait()
        return before, started, [tool["name"] for tool in await listed(client)]

    before, started, after = through_proxy(servers, "light", work, message_handler=on_message)
    assert before[:2] == ["later.not_started", "good.small"]
    assert started == "later started: list the tools again for its tools"
    assert after[:2] == ["later.small", "later.big"]


def test_a_reference_from_one_servers_result_goes_into_another_servers_tool() -> None:
    servers = {"records": Upstream(command=FAULTY), "echo": Upstream(command=ECHO)}

    async def work(client: Any) -> Any:
        execution_id = cached_id(plain(await client.call_tool("records.big", {"count": 40})))
        echoed = await client.call_tool("echo.echo", {"title": f"${{{execution_id}:result[4].title}}"})
        return text(echoed)

    assert through_proxy(servers, "compact", work) == 'ARGS {"title":"Record 4: a title long enough to count"}'


@pytest.mark.parametrize(
    ("name", "near"),
    [("smal", "one.small"), ("one.smal", "one.small, one.fail, one.sleep")],
    ids=["no namespace", "a tool its server does not list"],
)
def test_an_unknown_tool_of_a_gateway_names_the_near_tools(name: str, near: str) -> None:
    async def work(client: Any) -> Any:
        return plain(await client.call_tool(name, {}))

    assert through_proxy({"one": Upstream(command=FAULTY)}, "light", work) == {
        "content": [{"type": "text", "text": f"Error: no tool named {name}; near: {near}"}],
        "isError": True,
    }


def test_a_client_configuration_gives_one_upstream_per_server(tmp_path: Path) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams

    config = tmp_path / "mcp.json"
    config.write_text(
        '{\n  // VS Code allows comments\n  "servers": {\n'
        '    "files": {"command": "pflow-structure", "args": ["proxy", "--", "npx", "server", "/tmp"]},\n'
        '    "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "${GW_KEY}"}},\n'
        '    "tool": {"command": "tool-server", "env": {"MODE": "x"}},\n'
        '    "off": {"command": "off-server", "disabled": true},\n  }\n}\n',
        encoding="utf-8",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GW_KEY", "k")
        upstreams = _gateway_upstreams(config, None)
    assert upstreams == {
        "files": Upstream(command=("npx", "server", "/tmp")),
        "api": Upstream(url="https://example.com/mcp", headers={"X-Key": "k"}),
        "tool": Upstream(command=("tool-server",), env={"MODE": "x"}),
    }
    remote = tmp_path / "remote.json"
    remote.write_text('{"url": "https://example.com/mcp"}', encoding="utf-8")
    assert _gateway_upstreams(remote, None) is None  # the one-remote-server shape, as before


@pytest.mark.parametrize(
    ("name", "entry", "expected"),
    [
        ("settings.json", '{"httpUrl": "https://g.example/mcp", "headers": {"K": "$GW_KEY"}}', "streamable-http"),
        ("settings.json", '{"url": "https://g.example/mcp", "headers": {"K": "$GW_KEY"}}', "sse"),
        ("mcp_config.json", '{"serverUrl": "https://g.example/mcp", "headers": {"K": "${env:GW_KEY}"}}', None),
    ],
    ids=["gemini httpUrl", "gemini url (SSE)", "windsurf serverUrl"],
)
def test_a_gateway_reads_each_clients_remote_entry_as_wrap_does(
    tmp_path: Path, name: str, entry: str, expected: str | None
) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams

    config = tmp_path / name
    config.write_text('{"mcpServers": {"api": ' + entry + "}}", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GW_KEY", "k")
        upstreams = _gateway_upstreams(config, None)
    assert upstreams == {
        "api": Upstream(url="https://g.example/mcp", transport=expected or "streamable-http", headers={"K": "k"})
    }


UNSET_FAULT = (
    'server "{name}" of --config {config}: environment variable GW_UNSET is not set (used in {where}). Set it in the '
    'environment the MCP client starts the proxy with, e.g. "env": {{"GW_UNSET": "..."}} in its configuration; '
    "then restart the proxy."
)


def test_a_gateway_whose_every_entry_is_unusable_is_refused_naming_each(tmp_path: Path) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams

    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"api": {"url": "https://e.example/mcp", "headers": {"K": "${GW_UNSET}"}}}}')
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GW_UNSET", raising=False)
        with pytest.raises(ParameterError) as caught:
            _gateway_upstreams(config, None)
    fault = UNSET_FAULT.format(name="api", config=config, where="--header")
    assert str(caught.value) == f"no server of the gateway can start: {fault}"


def test_an_unusable_gateway_entry_is_listed_as_not_started_and_the_rest_serve(tmp_path: Path) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams

    config = tmp_path / "mcp.json"  # VS Code's: ${env:VAR}, filled in as VS Code would
    entries = {
        "env": {"command": FAULTY[0], "args": list(FAULTY[1:]), "env": {"TOKEN": "${env:GW_UNSET}"}},
        "args": {"command": "server", "args": "--port 1"},
        "good": {"command": FAULTY[0], "args": list(FAULTY[1:]), "env": {"MODE": "${env:GW_MODE}"}},
    }
    config.write_text(json.dumps({"servers": entries}), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GW_UNSET", raising=False)
        patch.setenv("GW_MODE", "m")
        upstreams = _gateway_upstreams(config, None)
    args_fault = (
        f'server "args" of --config {config}: its "args" is not a list of strings: write it as ["ARG", ...]; '
        "then restart the proxy."
    )
    assert upstreams == {
        "env": Upstream(fault=UNSET_FAULT.format(name="env", config=config, where="env")),
        "args": Upstream(fault=args_fault),
        "good": Upstream(command=FAULTY, env={"MODE": "m"}),
    }

    async def work(client: Any) -> Any:
        return await listed(client), plain(await client.call_tool("good.small", {}))

    tools, small = through_proxy(upstreams, "light", work)
    assert [(tool["name"], tool["description"]) for tool in tools[:3]] == [
        ("env.not_started", "Server env did not start, so its tools are missing: " + upstreams["env"].fault),
        ("args.not_started", f"Server args did not start, so its tools are missing: {args_fault}"),
        ("good.small", tools[2]["description"]),
    ]
    assert small["content"] == [{"type": "text", "text": '{"ok":true,"items":[1,2,3]}'}]


def test_describe_tools_answers_the_definitions_that_fit_and_names_the_rest() -> None:
    from pflow_structure.mcp.proxy.toollist import describe_answer

    tools = [{"name": f"t{number}", "description": "x" * 100, "inputSchema": {"type": "object"}} for number in range(4)]
    answer = describe_answer(tools, ["t0", "t1", "t2", "t3"], "search_tools", lambda text: len(text) <= 500)
    assert [tool["name"] for tool in answer["structuredContent"]["tools"]] == ["t0", "t1"]
    assert answer["structuredContent"]["_more"] == {
        "shown": "2 of 4 tools: the answer budget",
        "describe_tools": ["t2", "t3"],
    }
    assert len(answer["content"][0]["text"]) == 418
