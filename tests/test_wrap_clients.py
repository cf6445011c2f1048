"""`wrap|unwrap` for the clients that differ (docs/clients.md): Codex's TOML, Gemini CLI's and Windsurf's
remote entries, and each client's own way of writing an environment variable in a header.

The files are in tests/data/client_configs/ (SOURCES.md there); byte-for-byte round trips of every file
are in tests/test_wrap.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from pflow_structure.cli.client_configs import unwrap_text, wrap_text
from pflow_structure.cli.toml_configs import toml_servers
from tests.conftest import REPO
from tests.test_wrap import CONFIGS, PROXY, cli

CODEX = (CONFIGS / "codex.config.toml").read_text()


def copied(tmp_path: Path, name: str, as_name: str | None = None) -> Path:
    target = tmp_path / (as_name or name)
    shutil.copyfile(CONFIGS / name, target)
    return target


def test_codex_entries_are_wrapped_in_place_with_every_comment_kept() -> None:
    rewrite = wrap_text(CODEX, source="config.toml", proxy_command=PROXY)
    assert [(change.name, change.action) for change in rewrite.changes] == [
        ("context7", "wrapped"), ("figma", "wrapped"), ("chrome_devtools", "wrapped"),
    ]  # fmt: skip
    comments = [line for line in CODEX.splitlines() if "#" in line]
    assert [line for line in rewrite.text.splitlines() if "#" in line] == comments
    servers = dict(toml_servers(rewrite.text, "config.toml"))
    assert servers["context7"] == {
        "command": PROXY,
        "args": ["proxy", "--", "npx", "-y", "@upstash/context7-mcp"],
        "startup_timeout_sec": 20,
        "env": {"MY_ENV_VAR": "MY_ENV_VALUE"},
    }
    assert servers["figma"] == {
        "command": PROXY,
        "args": [
            "proxy", "--url", "https://mcp.figma.com/mcp",
            "--header", "X-Figma-Region: us-east-2", "--header", "Authorization: Bearer ${FIGMA_OAUTH_TOKEN}",
        ],
        "env_vars": ["FIGMA_OAUTH_TOKEN"],  # Codex passes a stdio server only the variables it names
    }  # fmt: skip
    assert servers["chrome_devtools"] == {
        "enabled": False,
        "command": PROXY,
        "args": ["proxy", "--url", "http://localhost:3000/mcp", "--header", "X-Api-Key: ${CHROME_API_KEY}"],
        "env_vars": ["CHROME_API_KEY"],
    }
    assert rewrite.text.endswith('[profiles.fast]\nmodel = "gpt-5-mini"\n')


def test_a_codex_config_changed_since_wrap_unwraps_to_the_same_servers() -> None:
    wrapped = wrap_text(CODEX, source="config.toml", proxy_command=PROXY).text
    edited = wrapped.replace('model = "gpt-5-codex"', 'model = "gpt-5"')
    unwrapped = unwrap_text(edited, source="config.toml").text
    assert toml_servers(unwrapped, "config.toml") == toml_servers(CODEX, "config.toml")
    assert unwrapped.startswith(CODEX[: CODEX.index("[mcp_servers.figma]")].replace("gpt-5-codex", "gpt-5"))


def test_a_toml_file_without_servers_or_broken_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "gpt-5"\n')
    result = cli("wrap", str(path))
    assert (result.exit_code, result.stderr) == (
        1,
        f"Error: {path} has no [mcp_servers] table (Codex keeps its MCP servers as [mcp_servers.NAME]); "
        "give the client's MCP configuration file\n",
    )
    path.write_text("[mcp_servers.x\n")
    assert cli("wrap", str(path)).stderr.startswith(f"Error: {path} is not a TOML MCP client configuration: ")
    assert path.read_text() == "[mcp_servers.x\n"


def test_windsurf_server_url_and_its_env_header_are_written_as_the_proxy_reads_them(tmp_path: Path) -> None:
    path = copied(tmp_path, "windsurf.mcp_config.json", "mcp_config.json")
    cli("wrap", str(path), "--command", PROXY)
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["figma"] == {
        "command": PROXY,
        "args": ["proxy", "--url", "https://your-server-url/mcp", "--header", "API_KEY: Bearer ${AUTH_TOKEN}"],
    }
    assert servers["github"]["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}  # Windsurf's to fill


def test_gemini_http_url_url_and_its_variables(tmp_path: Path) -> None:
    path = copied(tmp_path, "gemini.settings.json", "settings.json")
    cli("wrap", str(path), "--command", PROXY)
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["httpServerWithAuth"] == {
        "command": PROXY,
        "args": [
            "proxy", "--url", "http://localhost:3000/mcp",
            "--header", "Authorization: Bearer ${MY_API_TOKEN}", "--header", "X-Custom-Header: ${CUSTOM_VALUE}",
        ],
        "timeout": 5000,
    }  # fmt: skip
    assert servers["sseServer"]["args"] == ["proxy", "--url", "http://localhost:8080/sse", "--transport", "sse"]
    unwrapped = json.loads(unwrap_text(path.read_text(), source=str(path)).text)
    original = json.loads((CONFIGS / "gemini.settings.json").read_text())
    assert unwrapped["mcpServers"]["sseServer"] == original["mcpServers"]["sseServer"]
    assert unwrapped["mcpServers"]["httpServerWithAuth"]["httpUrl"] == "http://localhost:3000/mcp"


def test_what_only_vscode_can_fill_in_is_said_at_wrap_time(tmp_path: Path) -> None:
    path = copied(tmp_path, "vscode.mcp.json", "mcp.json")
    result = cli("wrap", str(path), "--command", PROXY)
    assert result.output.splitlines()[:2] == [
        "  Perplexity: wrapped",
        "  github: wrapped (${input:github-token} is left for vscode to fill in (the proxy reads only ${VAR}))",
    ]


def test_cursors_env_header_becomes_the_proxys_and_comes_back_as_cursors(tmp_path: Path) -> None:
    text = (CONFIGS / "cursor.mcp.json").read_text()
    wrapped = wrap_text(text, source="/home/me/.cursor/mcp.json", proxy_command=PROXY).text
    remote = json.loads(wrapped)["mcpServers"]["server-name-remote"]
    assert remote["args"][-2:] == ["--header", "API_KEY: ${MY_SERVICE_TOKEN}"]
    back = unwrap_text(wrapped, source="/home/me/.cursor/mcp.json").text
    assert json.loads(back) == json.loads(text)


def installed() -> str:
    here = shutil.which("pflow-structure", path=str(Path(sys.executable).parent))
    assert here is not None, "pflow-structure is not installed beside this Python; run: pip install -e ."
    return here


def test_a_wrapped_codex_entry_runs_through_the_proxy(tmp_path: Path) -> None:
    """As Codex would: the rewritten table's command and args started, then tools listed and called."""
    from tests.test_mcp_proxy import in_session, plain

    path = tmp_path / "config.toml"
    echo = str(REPO / "tests" / "servers" / "echo_mcp_server.py")
    path.write_text(
        f"# mine\n[mcp_servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(echo)}]\n"
    )
    cli("wrap", str(path), "--command", installed())
    entry = dict(toml_servers(path.read_text(), str(path)))["echo"]

    async def work(session: Any) -> Any:
        tools = await session.list_tools()
        return [tool.name for tool in tools.tools], plain(await session.call_tool("echo", {"x": 1}))

    names, called = in_session([entry["command"], *entry["args"]], work, env=dict(os.environ))
    assert names == ["echo", "echo_typed", "calls", "echo_own_want", "read_fields", "edit_fields"]
    assert called["content"] == [{"type": "text", "text": 'ARGS {"x":1}'}]


def test_a_windsurf_env_header_reaches_the_upstream_with_the_variables_value(tmp_path: Path) -> None:
    """Our serve --http wants a bearer token: the wrapped entry, started with the variable set, gets in."""
    from tests.test_mcp_proxy import in_session
    from tests.test_mcp_proxy_remote import TOKEN, our_server

    path = tmp_path / "mcp_config.json"
    with our_server() as url:
        entry = {"serverUrl": url, "headers": {"Authorization": "Bearer ${env:UPSTREAM_TOKEN}"}}
        path.write_text(json.dumps({"mcpServers": {"ours": entry}}, indent=2))
        cli("wrap", str(path), "--command", installed())
        wrapped = json.loads(path.read_text())["mcpServers"]["ours"]

        async def work(session: Any) -> list[str]:
            return [tool.name for tool in (await session.list_tools()).tools]

        names = in_session([wrapped["command"], *wrapped["args"]], work, env={"UPSTREAM_TOKEN": TOKEN})
    assert wrapped["args"][-1] == "Authorization: Bearer ${UPSTREAM_TOKEN}"
    assert names[:2] == ["registry_run", "read_fields"]


def test_oauth_settings_are_said_not_to_carry_over() -> None:
    text = '[mcp_servers.linear]\nurl = "https://mcp.linear.app/mcp"\nscopes = ["read"]\n'
    rewrite = wrap_text(text, source="config.toml", proxy_command=PROXY)
    assert (
        rewrite.changes[0].reason == "its OAuth settings stay for codex: the proxy signs in with none, only the headers"
    )
    assert dict(toml_servers(rewrite.text, "config.toml"))["linear"]["scopes"] == ["read"]


def test_proxy_config_reads_a_codex_config_as_codex_does(tmp_path: Path, monkeypatch: Any) -> None:
    from pflow_structure.cli.proxy_command import _gateway_upstreams
    from pflow_structure.mcp.proxy.remote import Upstream

    monkeypatch.setenv("FIGMA_OAUTH_TOKEN", "t")
    assert _gateway_upstreams(copied(tmp_path, "codex.config.toml", "config.toml"), None) == {
        "context7": Upstream(command=("npx", "-y", "@upstash/context7-mcp"), env={"MY_ENV_VAR": "MY_ENV_VALUE"}),
        "figma": Upstream(
            url="https://mcp.figma.com/mcp", headers={"X-Figma-Region": "us-east-2", "Authorization": "Bearer t"}
        ),
    }  # chrome_devtools has enabled = false


def test_wrap_gateway_on_a_codex_config_keeps_the_servers_in_toml_and_unwrap_gives_it_back(tmp_path: Path) -> None:
    path = copied(tmp_path, "codex.config.toml", "config.toml")
    assert cli("wrap", str(path), "--command", PROXY, "--gateway").exit_code == 0
    servers_file = tmp_path / "config.toml.pflow-structure-gateway.toml"
    gateway = {
        "command": PROXY,
        "args": ["proxy", "--config", str(servers_file)],
        "env_vars": ["FIGMA_OAUTH_TOKEN", "CHROME_API_KEY"],
    }
    assert toml_servers(path.read_text(), str(path)) == [("pflow-structure", gateway)]
    assert path.read_text().endswith(
        'env_vars = ["FIGMA_OAUTH_TOKEN", "CHROME_API_KEY"]\n\n[profiles.fast]\nmodel = "gpt-5-mini"\n'
    )
    assert toml_servers(servers_file.read_text(), str(servers_file)) == toml_servers(CODEX, "config.toml")
    assert cli("unwrap", str(path)).exit_code == 0
    assert path.read_text() == CODEX
    assert sorted(child.name for child in tmp_path.iterdir()) == ["config.toml"]
