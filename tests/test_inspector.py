"""The official MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned) as the client.

In front of `serve` (stdio and `--http`) and the proxy (server-filesystem over stdio, and
server-everything over streamable HTTP on 127.0.0.1): tools/list, a call of each of our tools,
resources and prompts passed through, and every start-up failure answered to `initialize`
with its cause and fix. A few checks need the wire itself (fields the Inspector's client would
hide, an exit while stdin is still open): those speak JSON-RPC lines to the proxy directly.

`.ci/run` installs the Inspector into `.npm-servers/` (or PFLOW_STRUCTURE_NPM_SERVERS) with the
other npm servers; without it these tests skip, unless PFLOW_STRUCTURE_REQUIRE_NPM=1 (as in CI)
turns the skip into a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import REPO
from tests.structure_text import TREE_HEADER, cached_id
from tests.test_mcp_proxy import PROXY, npm_server
from tests.test_mcp_proxy_remote import TOKEN, everything, free_port, wait_for_port

# What differs here from the server and proxy tests is the client, a Node program, not the Python
# running our side: .ci/run's Python 3.10 and 3.13 runs leave these out (pyproject's markers).
pytestmark = pytest.mark.interop

SERVE = [sys.executable, "-m", "pflow_structure", "serve"]
ISSUES = REPO / "examples" / "data" / "github_issues.json"
UNKNOWN = "exec-1700000000-0badc0de"
TIMEOUT = 180
CONNECT_MS = 120_000  # the Inspector gives up on a connection after 15 s by default: too short on a busy machine
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
OUR_TOOLS = ["registry_run", "read_fields", "edit_fields", "list_nodes", "describe_nodes"]
NOT_STARTED = (
    "could not start the downstream MCP server `{}`: {}. Check the command after `--` (is it installed and on "
)
NOT_STARTED += "PATH? does it run on its own?)"


def inspector() -> str:
    """The pinned Inspector CLI (tests/npm-servers.txt), installed by the suite when npm is here."""
    return npm_server("mcp-inspector")


class Inspected(NamedTuple):
    code: int
    answer: Any  # the JSON the Inspector printed, or its error's message
    stderr: str


def inspect(target: list[str], *options: str, env: dict[str, str] | None = None) -> Inspected:
    """One Inspector CLI run (``--cli OPTIONS -- TARGET``): its exit code, and the answer it printed
    (stdout's JSON) or, when there is none, the message of the error it printed last on stderr."""
    done = subprocess.run(
        [inspector(), "--cli", "--connect-timeout", str(CONNECT_MS), *options, "--", *target],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )  # fmt: skip
    if done.stdout.strip():  # an answer (a tool error too: exit code 5)
        return Inspected(done.returncode, json.loads(done.stdout), done.stderr)
    # the proxy's stderr is the Inspector's too, and its last words may come after the Inspector's
    [last] = [line for line in done.stderr.split("\n") if line.startswith('{"error":')][-1:]
    return Inspected(done.returncode, json.loads(last)["error"]["message"], done.stderr)


def call(target: list[str], tool: str, **arguments: Any) -> dict[str, Any]:
    pairs = [f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in arguments.items()]
    found = inspect(target, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs)
    answer: dict[str, Any] = found.answer
    assert found.code == (5 if answer.get("isError") else 0), found  # the Inspector's exit code for a tool error
    return answer


def text_of(answer: dict[str, Any]) -> str:
    [block] = answer["content"]
    text: str = block["text"]
    return text


# -- serve ------------------------------------------------------------------------------------------


def check_our_tools(target: list[str]) -> None:
    """tools/list and one call of each tool, as the Inspector shows them."""
    listed = inspect(target, "--method", "tools/list")
    assert listed.code == 0
    assert [tool["name"] for tool in listed.answer["tools"]] == OUR_TOOLS
    run = listed.answer["tools"][0]["description"]
    assert run.startswith("Run a node and get its execution_id and the structure of its output, not the values.\n\n")
    assert "\n " not in run  # the docstring's indentation is not sent
    ran = call(target, "registry_run", node_type="read-json", parameters={"path": str(ISSUES)})
    execution_id = ran["structuredContent"]["execution_id"]
    assert ran["isError"] is False and ran["structuredContent"]["structure"]["result"] == {
        "type": "list",
        "length": 100,
    }
    read = call(target, "read_fields", execution_id=execution_id, field_paths=["result[0].title"])
    assert read == {
        "content": [{"type": "text", "text": '{"result[0].title":"Different results from Betamax vs Requests"}'}],
        "structuredContent": {"result[0].title": "Different results from Betamax vs Requests"},
        "isError": False,
    }
    edited = call(target, "edit_fields", execution_id=execution_id, set={"result[0].title": "New"})
    assert edited["isError"] is False and edited["structuredContent"]["execution_id"] != execution_id
    listed_nodes = call(target, "list_nodes", query="json")
    assert listed_nodes["isError"] is False and "read-json" in text_of(listed_nodes)
    described = call(target, "describe_nodes", node_ids=["read-json"])
    assert described["isError"] is False and "### read-json" in text_of(described)


def test_serve_over_stdio_lists_its_tools_and_answers_each_one_under_the_inspector() -> None:
    check_our_tools(SERVE)


def test_errors_from_serve_name_the_tool_to_call_not_a_shell_command() -> None:
    unknown = call(SERVE, "read_fields", execution_id=UNKNOWN, field_paths=["result"])
    assert unknown == {
        "content": [
            {
                "type": "text",
                "text": f"Error: Execution not found: {UNKNOWN}. Call registry_run again to get a new execution id.",
            }
        ],
        "isError": True,
    }
    invalid = call(SERVE, "read_fields", execution_id="../x", field_paths=["result"])
    assert text_of(invalid) == (
        "Error: Execution not found: '../x' is not a valid execution id. Ids look like exec-1763463202-0cd0c8fe; "
        "copy the execution_id registry_run answered."
    )
    node = call(SERVE, "registry_run", node_type="read_json")
    assert (
        text_of(node) == "Error: Unknown node type 'read_json'. Did you mean read-json? Call list_nodes to list them."
    )


@contextlib.contextmanager
def serve_http(tmp_path: Path, token: str | None = None) -> Iterator[tuple[str, Path]]:
    """``serve --http`` on a free loopback port: its URL, and the file its stderr goes to."""
    port = free_port()
    err = tmp_path / "serve.err"
    env = {key: value for key, value in os.environ.items() if key != "PFLOW_STRUCTURE_MCP_TOKEN"}
    if token is not None:
        env["PFLOW_STRUCTURE_MCP_TOKEN"] = token
    with err.open("wb") as sink:
        process = subprocess.Popen(
            [*SERVE, "--http", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=sink,
            start_new_session=True,
        )  # fmt: skip
        try:
            wait_for_port(port, process)
            yield f"http://127.0.0.1:{port}/mcp", err
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def test_serve_over_http_answers_the_inspector_and_logs_nothing_per_request(tmp_path: Path) -> None:
    with serve_http(tmp_path) as (url, err):
        check_our_tools([url])
    assert err.read_text() == f"pflow-structure MCP server at {url}\n"  # no "Terminating session: None" per request


# -- the proxy: server-filesystem over stdio --------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    rows = [{"id": index, "title": f"title {index:03}", "body": "b" * 300} for index in range(100)]
    (root / "big.json").write_text(json.dumps(rows))
    return root


def filesystem(folder: Path) -> list[str]:
    return [*PROXY, "--", npm_server("mcp-server-filesystem"), str(folder)]


def test_the_proxy_keeps_the_servers_own_server_info(folder: Path) -> None:
    found = inspect(filesystem(folder), "--method", "initialize")
    assert found.code == 0
    assert found.answer["serverInfo"] == {"name": "secure-filesystem-server", "version": "0.2.0"}
    assert found.answer["instructions"].startswith("Answers from this server come through pflow-structure ")


def test_the_proxy_in_front_of_server_filesystem_lists_and_answers_under_the_inspector(folder: Path) -> None:
    target = filesystem(folder)
    listed = inspect(target, "--method", "tools/list")
    assert listed.code == 0
    names = [tool["name"] for tool in listed.answer["tools"]]
    assert names[-2:] == ["read_fields", "edit_fields"] and "read_text_file" in names
    big = call(target, "read_text_file", path=str(folder / "big.json"))
    lines = text_of(big).split("\n")
    execution_id = lines[0].split("cached as ")[1].split(". ")[0]
    assert lines[0].endswith(f"cached as {execution_id}. {TREE_HEADER}")
    assert lines[1:6] == [
        "  result list, 100 items; each [0]:",
        "    .id int",
        "    .title str ~9",
        "    .body str ~300",
        "Fields: 3",
    ]
    read = call(target, "read_fields", execution_id=execution_id, field_paths=["result[99].title"])
    assert read == {
        "content": [{"type": "text", "text": '{"result[99].title":"title 099"}'}],
        "structuredContent": {"result[99].title": "title 099"},
        "isError": False,
    }
    edited = call(target, "edit_fields", execution_id=execution_id, delete=["result[0]"])
    assert text_of(edited).startswith("Edited into exec-")
    assert text_of(edited).endswith("\n  result list, 99 items")
    unknown = call(target, "read_fields", execution_id=UNKNOWN, field_paths=["result"])
    assert unknown == {
        "content": [
            {
                "type": "text",
                "text": f"Error: Execution not found: {UNKNOWN}. Call the tool that answered with it again to get a "
                "new execution id.",
            }
        ],
        "isError": True,
    }


def wire(command: list[str], *messages: dict[str, Any]) -> tuple[int, list[dict[str, Any]], str]:
    """JSON-RPC lines to ``command`` over stdio, its input then closed: (exit code, messages out, stderr)."""
    lines = "".join(json.dumps(message) + "\n" for message in messages)
    done = subprocess.run(command, input=lines, capture_output=True, text=True, timeout=TIMEOUT)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_the_proxys_read_fields_answer_carries_only_fields_mcp_defines(folder: Path) -> None:
    """On the wire (the Inspector's client would not show an extra field): no "resultType"."""
    read = {"name": "read_fields", "arguments": {"execution_id": UNKNOWN, "field_paths": ["result"]}}
    code, out, _ = wire(
        filesystem(folder),
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": read},
    )
    assert code == 0
    answers = {message["id"]: message for message in out}
    assert answers[1]["result"]["serverInfo"] == {"name": "secure-filesystem-server", "version": "0.2.0"}
    assert sorted(answers[2]["result"]) == ["content", "isError"]


# -- the gateway: three npm servers behind one connection (issue 39) -------------------------------


def test_a_gateway_over_three_npm_servers_lists_searches_and_passes_a_value_between_servers(tmp_path: Path) -> None:
    """One tools/list with namespaced names and a server that did not start in its tools' place;
    search_tools ranks the filesystem's read tool first; a title read by reference from a
    filesystem result goes into a memory-server call."""
    records = [{"id": index, "title": f"Record {index}: a title", "body": "x" * 40} for index in range(60)]
    (tmp_path / "records.json").write_text(json.dumps(records), encoding="utf-8")
    servers = {
        "files": {"command": npm_server("mcp-server-filesystem"), "args": [str(tmp_path)]},
        "memory": {"command": npm_server("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}},
        "everything": {"command": npm_server("mcp-server-everything")},
        "broken": {"command": str(tmp_path / "no-such-server")},
    }
    config = tmp_path / "client.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    gateway = [*PROXY, "--config", str(config)]
    listed = inspect(gateway, "--method", "tools/list")
    names = [tool["name"] for tool in listed.answer["tools"]]
    assert listed.code == 0 and names[-4:] == ["read_fields", "edit_fields", "describe_tools", "search_tools"]
    assert {name.split(".")[0] for name in names[:-4]} == {"files", "memory", "everything", "broken"}
    assert {"files.read_text_file", "memory.create_entities", "everything.echo", "broken.not_started"} < set(names)
    [broken] = [tool for tool in listed.answer["tools"] if tool["name"] == "broken.not_started"]
    assert f"could not start the downstream MCP server `{tmp_path / 'no-such-server'}`" in broken["description"]
    found = call(gateway, "search_tools", query="read a file")
    assert found["structuredContent"]["tools"][0]["name"] == "files.read_text_file"
    read = call(gateway, "files.read_text_file", path=str(tmp_path / "records.json"))
    entity = {"name": f"${{{cached_id(read)}:result[7].title}}", "entityType": "record", "observations": ["read"]}
    created = call(gateway, "memory.create_entities", entities=[entity])
    assert created["structuredContent"]["entities"][0]["name"] == "Record 7: a title"


# -- the proxy: server-everything over streamable HTTP ----------------------------------------------


def test_the_proxy_passes_resources_prompts_and_server_info_through_as_server_everything_gives_them() -> None:
    with everything("streamableHttp") as url:
        proxied = [*PROXY, "--url", url]
        initialized = inspect(proxied, "--method", "initialize")
        assert initialized.code == 0
        assert initialized.answer["serverInfo"] == {
            "name": "mcp-servers/everything",
            "title": "Everything Reference Server",
            "version": "2.0.0",
        }
        uri = "demo://resource/static/document/architecture.md"
        for options in (
            ["--method", "resources/list"],
            ["--method", "resources/read", "--uri", uri],
            ["--method", "prompts/list"],
            ["--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris"],
        ):
            direct, through = inspect([url], *options), inspect(proxied, *options)
            assert through.code == direct.code == 0, options
            assert through.answer == direct.answer, options
        tools = inspect(proxied, "--method", "tools/list")
        assert [tool["name"] for tool in tools.answer["tools"]][-2:] == ["read_fields", "edit_fields"]


# -- start-up failures: a JSON-RPC error to initialize, then exit 1 ---------------------------------

NOBODY = "http://127.0.0.1:9/mcp"  # the discard port: nothing listens there


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--", "/bin/false"], NOT_STARTED.format("/bin/false", "it exited during start-up")),
        (
            ["--start-timeout", "1", "--", "sleep", "60"],
            NOT_STARTED.format(
                "sleep 60", "it did not answer the MCP handshake within 1 s (slow? raise --start-timeout)"
            ),
        ),
        (
            ["--url", NOBODY],
            f"could not connect to the MCP server at {NOBODY} over streamable-http: nothing accepts connections at "
            "127.0.0.1:9. Check: is the server running, and listening on that host and port? Is the port in --url "
            "right?",
        ),
        (
            ["--url", NOBODY, "--header", "Authorization: Bearer ${PFS_UNSET_TOKEN_VAR}"],
            "environment variable PFS_UNSET_TOKEN_VAR is not set (used in --header). Set it in the environment the "
            'MCP client starts the proxy with, e.g. "env": {"PFS_UNSET_TOKEN_VAR": "..."} in its configuration',
        ),
    ],
    ids=["command-exits", "handshake-timeout", "nothing-listening", "unset-variable"],
)
def test_a_proxy_that_cannot_start_answers_initialize_with_the_cause_and_the_fix(
    options: list[str], message: str
) -> None:
    found = inspect([*PROXY, *options], "--method", "tools/list")
    assert found.code == 1
    assert found.answer == message
    assert f"Error: {message}\n" in found.stderr  # the proxy's own last words, in the client's log

    code, out, stderr = wire([*PROXY, *options], INIT)
    assert (code, out) == (1, [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": message}}])
    assert stderr.endswith(f"Error: {message}\n")


def test_refused_credentials_are_answered_to_initialize_naming_the_header(tmp_path: Path) -> None:
    with serve_http(tmp_path, token=TOKEN) as (url, _):
        found = inspect([*PROXY, "--url", url, "--header", "Authorization: Bearer wrong-token-1234"], "--method",
                        "tools/list")  # fmt: skip
    assert found.code == 1
    assert found.answer == (
        f"the MCP server at {url} asked for credentials (HTTP 401 Unauthorized); the proxy sent the header(s) "
        "Authorization. Fix: pass a valid token, e.g. --header 'Authorization: Bearer ${TOKEN}' with TOKEN set in "
        "the proxy's environment (OAuth-only servers: get a token from the vendor's settings page, see the "
        "README's Remote servers)"
    )


def test_a_proxy_that_cannot_reach_its_url_exits_1_while_its_input_is_still_open() -> None:
    """A client keeps stdin open after initialize failed: the proxy leaves anyway, with exit code 1."""
    process = subprocess.Popen(
        [*PROXY, "--url", NOBODY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(INIT) + "\n").encode())
    process.stdin.flush()
    try:
        answer = json.loads(process.stdout.readline())
        code = process.wait(timeout=TIMEOUT)  # stdin is still open here
    finally:
        process.kill()
        process.stdin.close()
    assert answer["id"] == 1 and answer["error"]["message"].startswith("could not connect to the MCP server")
    assert code == 1


def test_a_command_that_exits_at_once_is_said_the_same_way_every_time() -> None:
    """The race with `/bin/false` (its stdin closed under the proxy's write of initialize gave
    "ValueError: flush of closed file" or "write to closed file"): initialize sent at once and
    after growing delays, ten times."""
    message = NOT_STARTED.format("/bin/false", "it exited during start-up")
    script = (
        "import json, subprocess, sys, time\n"
        "delay, command = float(sys.argv[1]), sys.argv[2:]\n"
        "p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "time.sleep(delay)\n"
        "try:\n"
        f"    p.stdin.write({json.dumps(json.dumps(INIT) + chr(10))}.encode()); p.stdin.flush()\n"
        "except BrokenPipeError:\n"
        "    pass\n"
        "out, err = p.stdout.read(), p.stderr.read(); p.wait()\n"
        "print(json.dumps([p.returncode, out.decode(), err.decode()]))\n"
    )
    for run in range(10):
        done = subprocess.run(
            [sys.executable, "-c", script, str(run * 0.05), *PROXY, "--", "/bin/false"],
            capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        code, out, err = json.loads(done.stdout)
        assert code == 1, (run, err)
        assert err.strip().split("\n")[-1] == f"Error: {message}", (run, err)
        assert "ValueError" not in err and "Traceback" not in err, (run, err)
        # the proxy waits for the client's initialize to answer why (run.py's REFUSE_WAIT): always answered
        assert json.loads(out)["error"]["message"] == message, (run, out, err)
