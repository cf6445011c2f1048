"""`pflow-structure wrap|unwrap CONFIG` on each MCP client's documented configuration format.

The files in tests/data/client_configs/ follow each client's documentation (SOURCES.md there). A
wrapped entry is then started as its client would start it and answers a real MCP client.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from pflow_structure.cli import main
from tests.conftest import REPO, cli_runner

CONFIGS = REPO / "tests" / "data" / "client_configs"
FILES = sorted(path.name for path in [*CONFIGS.glob("*.json"), *CONFIGS.glob("*.toml")])
PROXY = "/opt/bin/pflow-structure"


def cli(*args: str) -> Result:
    runner = cli_runner()
    return runner.invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def config(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    name = getattr(request, "param", "claude_desktop_config.json")
    target = tmp_path / name
    shutil.copyfile(CONFIGS / name, target)
    return target


def test_the_seven_formats_are_all_here() -> None:
    assert FILES == [
        "claude_code.mcp.json", "claude_desktop_config.json", "codex.config.toml", "cursor.mcp.json",
        "gemini.settings.json", "vscode.mcp.json", "windsurf.mcp_config.json",
    ]  # fmt: skip


@pytest.mark.parametrize("config", FILES, indirect=True)
def test_wrap_then_unwrap_gives_the_original_bytes(config: Path) -> None:
    original = config.read_bytes()
    wrapped = cli("wrap", str(config), "--command", PROXY)
    assert wrapped.exit_code == 0, wrapped.output
    assert config.read_bytes() != original
    unwrapped = cli("unwrap", str(config))
    assert unwrapped.exit_code == 0, unwrapped.output
    assert config.read_bytes() == original
    assert [path.name for path in config.parent.iterdir()] == [config.name]  # the backup is used up


def test_wrap_gateway_puts_every_server_behind_one_entry_and_unwrap_gives_the_original_back(config: Path) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams
    from pflow_structure.mcp.proxy.remote import Upstream

    original = config.read_bytes()
    assert cli("wrap", str(config), "--command", PROXY, "--gateway").exit_code == 0
    servers_file = config.with_name(f"{config.name}.pflow-structure-gateway.json")
    args = ["proxy", "--config", str(servers_file)]
    assert json.loads(config.read_text(encoding="utf-8")) == {
        "mcpServers": {"pflow-structure": {"command": PROXY, "args": args}}
    }
    assert json.loads(servers_file.read_text(encoding="utf-8")) == json.loads(original)
    assert _gateway_upstreams(servers_file, None) == {
        "filesystem": Upstream(
            command=(
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/Users/username/Desktop",
                "/Users/username/Downloads",
            )
        ),
        "memory": Upstream(
            command=("npx", "-y", "@modelcontextprotocol/server-memory"),
            env={"MEMORY_FILE_PATH": "/Users/username/memory.json"},
        ),
    }
    assert cli("unwrap", str(config)).exit_code == 0
    assert config.read_bytes() == original
    assert [path.name for path in config.parent.iterdir()] == [config.name]


def test_unwrap_of_a_gateway_entry_changed_since_wrap_names_the_file_that_holds_the_servers(config: Path) -> None:
    cli("wrap", str(config), "--command", PROXY, "--gateway")
    config.write_text(config.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # not as wrap left it
    unwrapped = cli("unwrap", str(config))
    servers_file = config.with_name(f"{config.name}.pflow-structure-gateway.json")
    reason = f"it runs the gateway over the servers in {servers_file}: copy their entries back from there"
    assert unwrapped.output.splitlines()[0] == f"  pflow-structure: skipped ({reason})"


@pytest.mark.parametrize("config", FILES, indirect=True)
def test_wrapping_twice_changes_nothing_the_second_time(config: Path) -> None:
    cli("wrap", str(config), "--command", PROXY)
    once = config.read_bytes()
    again = cli("wrap", str(config), "--command", PROXY)
    assert again.exit_code == 0
    assert again.output.endswith(f"{config}: nothing to wrap; the file is unchanged.\n")
    assert config.read_bytes() == once
    assert len(list(config.parent.glob("*.bak"))) == 1


def test_a_stdio_entry_runs_through_the_proxy_with_its_env_kept(config: Path) -> None:
    result = cli("wrap", str(config), "--command", PROXY)
    assert result.output.splitlines()[:2] == ["  filesystem: wrapped", "  memory: wrapped"]
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["memory"] == {
        "command": PROXY,
        "args": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-memory"],
        "env": {"MEMORY_FILE_PATH": "/Users/username/memory.json"},
    }
    assert servers["filesystem"]["args"][:4] == ["proxy", "--", "npx", "-y"]


@pytest.mark.parametrize("config", ["claude_code.mcp.json"], indirect=True)
def test_url_entries_keep_their_headers_as_references(config: Path) -> None:
    cli("wrap", str(config), "--command", PROXY)
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["api-server"] == {
        "type": "stdio",
        "command": PROXY,
        "args": [
            "proxy",
            "--url",
            "${API_BASE_URL:-https://api.example.com}/mcp",
            "--header",
            "Authorization: Bearer ${API_KEY}",
        ],
    }
    assert servers["events"]["args"] == ["proxy", "--url", "https://mcp.example.com/sse", "--transport", "sse"]


@pytest.mark.parametrize("config", ["vscode.mcp.json"], indirect=True)
def test_vscode_comments_inputs_and_tabs_are_left_as_they_are(config: Path) -> None:
    before = config.read_text()
    cli("wrap", str(config), "--command", PROXY)
    after = config.read_text()
    head = before[: before.index('"Perplexity": {')]
    assert after.startswith(head)  # comments, inputs and the servers' own comment, byte for byte
    assert '\t\t\t"command": "/opt/bin/pflow-structure",\n' in after  # indented with the file's tabs
    assert after.endswith("\t\t},\n\t}\n}\n")  # the trailing comma VS Code allows is kept


def test_server_picks_entries_and_an_unknown_name_is_refused(config: Path) -> None:
    result = cli("wrap", str(config), "--server", "memory", "--command", PROXY)
    assert result.exit_code == 0
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["filesystem"]["command"] == "npx"
    assert servers["memory"]["command"] == PROXY
    refused = cli("wrap", str(config), "--server", "githb")
    assert refused.exit_code == 1
    assert refused.stderr == f"Error: {config} has no server named githb (its servers: filesystem, memory)\n"


def test_dry_run_prints_the_diff_and_writes_nothing(config: Path) -> None:
    original = config.read_bytes()
    result = cli("wrap", str(config), "--dry-run", "--command", PROXY)
    assert result.exit_code == 0
    assert f"--- {config}\n+++ {config} (new)\n" in result.output
    assert '-      "command": "npx",\n+      "command": "/opt/bin/pflow-structure",\n' in result.output
    assert config.read_bytes() == original
    assert list(config.parent.glob("*.bak")) == []


def test_unwrap_rebuilds_entries_when_the_file_changed_since_wrap(config: Path) -> None:
    cli("wrap", str(config), "--command", PROXY)
    edited = config.read_text().replace('"mcpServers": {', '"theme": "dark",\n  "mcpServers": {', 1)
    config.write_text(edited)
    result = cli("unwrap", str(config))
    assert result.exit_code == 0
    assert result.output.endswith(f"{config}: unwrapped (entries rebuilt from their proxy arguments).\n")
    loaded = json.loads(config.read_text())
    original = json.loads((CONFIGS / "claude_desktop_config.json").read_text())
    assert loaded == {"theme": "dark", **original}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "",
            "{path} is not a JSON MCP client configuration: expected an object at line 1, column 1; fix the file "
            '(it should be an object with "mcpServers" or "servers") and run again',
        ),
        (
            '{"mcpServers": {"a": {"command": "x"}',
            "{path} is not a JSON MCP client configuration: a value that does not end at line 1, column 16; "
            'fix the file (it should be an object with "mcpServers" or "servers") and run again',
        ),
        (
            '{"theme": "dark"}',
            '{path} has no "mcpServers" (Claude Desktop, Claude Code, Cursor) or "servers" (VS Code) '
            'object (its top-level keys: "theme"); give the client\'s MCP configuration file',
        ),
        (
            '{"mcpServers": []}',
            '{path} is not a JSON MCP client configuration: "mcpServers" is not an object at line '
            '1, column 16; fix the file (it should be an object with "mcpServers" or "servers") and run again',
        ),
    ],
)
def test_a_file_it_does_not_understand_is_refused_and_left_alone(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    result = cli("wrap", str(path))
    assert result.exit_code == 1
    assert result.stderr == "Error: " + message.replace("{path}", str(path)) + "\n"
    assert path.read_text() == text


def test_binary_and_missing_files_are_refused(tmp_path: Path) -> None:
    binary = tmp_path / "mcp.json"
    binary.write_bytes(b"\xff\xfe{\x00")
    assert cli("wrap", str(binary)).stderr == (
        f"Error: {binary} is not UTF-8 text; give an MCP client configuration file (JSON)\n"
    )
    missing = tmp_path / "none.json"
    result = cli("wrap", str(missing))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: cannot read {missing}: No such file or directory; give an MCP client configuration file\n"
    )


def test_an_entry_it_cannot_wrap_is_skipped_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"odd": {"disabled": true}, "ok": {"command": "srv"}}}')
    result = cli("wrap", str(path), "--command", PROXY)
    assert result.exit_code == 0
    assert result.output.splitlines()[:2] == [
        '  odd: skipped (it has neither "command" (a stdio server) nor "url" (a remote server))',
        "  ok: wrapped",
    ]


@pytest.mark.parametrize(
    ("ours", "message"),
    [
        (
            '{"command": "pflow-structure", "args": ["proxy", "--config", "gw.json"]}',
            "already has a gateway (pflow-structure): run `pflow-structure unwrap {path}`, then wrap --gateway again "
            "to put every server behind one gateway",
        ),
        (
            '{"command": "pflow-structure", "args": ["serve"]}',
            'already has a server named "pflow-structure", the name of the gateway\'s entry: rename it, then run again',
        ),
    ],
    ids=["a gateway", "our serve"],
)
def test_wrap_gateway_never_replaces_an_entry_named_pflow_structure(tmp_path: Path, ours: str, message: str) -> None:
    path = tmp_path / "mcp.json"
    text = '{"mcpServers": {"pflow-structure": ' + ours + ', "new": {"command": "srv"}}}'
    path.write_text(text)
    result = cli("wrap", str(path), "--gateway", "--command", PROXY)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {path} " + message.format(path=path) + "\n"
    assert path.read_text() == text
    assert sorted(tmp_path.iterdir()) == [path]


def test_a_symlinked_config_is_edited_where_it_lives_and_keeps_its_mode(config: Path) -> None:
    config.chmod(0o600)
    link = config.parent / "link.json"
    link.symlink_to(config)
    cli("wrap", str(link), "--command", PROXY)
    assert link.is_symlink()
    assert json.loads(config.read_text())["mcpServers"]["memory"]["command"] == PROXY
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    backup = next(config.parent.glob("*.bak"))
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_a_wrapped_entry_starts_and_answers_a_real_client(tmp_path: Path) -> None:
    """As a client would: start the entry's command with its args and env, then list and call tools."""
    from tests.test_mcp_proxy import in_session, plain

    path = tmp_path / "mcp.json"
    echo = str(REPO / "tests" / "servers" / "echo_mcp_server.py")
    path.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [echo]}}}, indent=2))
    here = shutil.which("pflow-structure", path=str(Path(sys.executable).parent))
    assert here is not None, "pflow-structure is not installed beside this Python; run: pip install -e ."
    cli("wrap", str(path), "--command", here)
    entry = json.loads(path.read_text())["mcpServers"]["echo"]

    async def work(session: Any) -> Any:
        tools = await session.list_tools()
        called = await session.call_tool("echo", {"x": 1})
        return [tool.name for tool in tools.tools], plain(called)

    names, called = in_session([entry["command"], *entry["args"]], work, env=dict(os.environ))
    assert names == ["echo", "echo_typed", "calls", "echo_own_want", "read_fields", "edit_fields"]
    assert called["content"] == [{"type": "text", "text": 'ARGS {"x":1}'}]


def test_a_wrapped_entry_lists_read_fields_under_the_mcp_inspector(tmp_path: Path) -> None:
    """The official MCP Inspector CLI (npm), started on the wrapped file with --config and --server."""
    import subprocess

    from tests.test_mcp_proxy import npm_server

    inspector = npm_server("mcp-inspector")
    path = tmp_path / "claude_desktop_config.json"
    echo = str(REPO / "tests" / "servers" / "echo_mcp_server.py")
    path.write_text(json.dumps({"mcpServers": {"echo": {"command": sys.executable, "args": [echo]}}}))
    here = shutil.which("pflow-structure", path=str(Path(sys.executable).parent))
    assert here is not None, "pflow-structure is not installed beside this Python; run: pip install -e ."
    cli("wrap", str(path), "--command", here)
    assert json.loads(path.read_text())["mcpServers"]["echo"]["args"] == ["proxy", "--", sys.executable, echo]
    env = {**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"}
    listed = subprocess.run(
        [inspector, "--cli", "--config", str(path), "--server", "echo", "--method", "tools/list"],
        capture_output=True, text=True, timeout=180, env=env, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    names = [tool["name"] for tool in json.loads(listed.stdout)["tools"]]
    assert names == ["echo", "echo_typed", "calls", "echo_own_want", "read_fields", "edit_fields"]
