"""``pflow-structure wrap|unwrap CONFIG``: every MCP server of a client configuration behind the proxy."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import click

from pflow_structure.cli.client_configs import PROXY_NAME, Rewrite, unwrap_text, wrap_text
from pflow_structure.cli.common import CONTEXT_SETTINGS, fails_cleanly, main
from pflow_structure.cli.gateway_configs import gateway_text, servers_file_name
from pflow_structure.errors import ParameterError

_CONFIG = click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
_SERVER = click.option(
    "--server", "servers", multiple=True, metavar="NAME", help="Only this server entry (repeatable); default: all."
)
_DRY_RUN = click.option("--dry-run", is_flag=True, help="Print the change as a diff and write nothing.")


@main.command(context_settings=CONTEXT_SETTINGS)
@_CONFIG
@_SERVER
@_DRY_RUN
@click.option(
    "--command",
    "proxy_command",
    metavar="PATH",
    help="The pflow-structure executable the client should start [default: the one running now, by its full path].",
)
@click.option(
    "--gateway",
    is_flag=True,
    help="One entry, pflow-structure, for all the servers (proxy --config CONFIG.pflow-structure-gateway.json, "
    ".toml for Codex's config.toml, "
    "which holds their entries): one connection, tools named SERVER.TOOL, one search.",
)
@fails_cleanly
def wrap(config: Path, servers: Sequence[str], dry_run: bool, proxy_command: str | None, gateway: bool) -> None:
    """Put every MCP server of a client configuration behind the proxy.

    CONFIG is Claude Desktop's claude_desktop_config.json, Claude Code's .mcp.json, Cursor's
    mcp.json, Windsurf's mcp_config.json or Gemini CLI's settings.json ("mcpServers"), VS Code's
    mcp.json ("servers"), or Codex's config.toml ([mcp_servers.NAME]). A stdio entry becomes
    `pflow-structure proxy -- COMMAND ARGS` (its env kept); a URL entry becomes `proxy --url URL`
    with its headers as --header options (the client's ${env:VAR}, $VAR, ... as ${VAR}, which the
    proxy reads from its environment). Entries already behind the
    proxy and every other key are left as they are. The original is kept beside CONFIG as
    CONFIG.pflow-structure-HASH.bak; `pflow-structure unwrap CONFIG` gives it back byte for byte.

    With --gateway, the entries become one, pflow-structure, running them all behind one
    connection (`proxy --config`); their own entries go to CONFIG.pflow-structure-gateway.json
    (.toml for Codex's config.toml).

    \b
      pflow-structure wrap ~/.cursor/mcp.json --dry-run
      pflow-structure wrap .mcp.json --server github
      pflow-structure wrap .mcp.json --gateway
    """
    path, text = _read(config)
    command = proxy_command or _this_executable()
    servers_file = path.with_name(servers_file_name(path.name))
    moved: str | None = None
    if gateway:
        rewrite, moved = gateway_text(
            text, source=str(config), proxy_command=command, servers_file=str(servers_file), names=servers
        )
    else:
        rewrite = wrap_text(text, source=str(config), proxy_command=command, names=servers)
    _report(rewrite)
    if not rewrite.changed:
        click.echo(f"{config}: nothing to wrap; the file is unchanged.")
        return
    if dry_run:
        _diff(config, text, rewrite.text)
        return
    backup = path.with_name(f"{path.name}.pflow-structure-{_digest(rewrite.text)}.bak")
    _write(backup, text, like=path)
    if moved:  # the servers' own entries, which the gateway entry reads (secrets in env too: the file's mode)
        _write(servers_file, moved, like=path)
        click.echo(f"{config}: the servers' entries are in {servers_file}.")
    _write(path, rewrite.text, like=path)
    click.echo(f"{config}: wrapped; the original is in {backup} (`pflow-structure unwrap {config}` restores it).")


@main.command(context_settings=CONTEXT_SETTINGS)
@_CONFIG
@_SERVER
@_DRY_RUN
@fails_cleanly
def unwrap(config: Path, servers: Sequence[str], dry_run: bool) -> None:
    """Undo `pflow-structure wrap`: every server entry runs its own server again.

    When CONFIG is as wrap left it, the backup wrap wrote is restored byte for byte (and removed);
    otherwise each wrapped entry is rebuilt from its proxy arguments and the rest of the file is
    left as it is.

    \b
      pflow-structure unwrap ~/.cursor/mcp.json
    """
    path, text = _read(config)
    backup = path.with_name(f"{path.name}.pflow-structure-{_digest(text)}.bak")
    if not servers and backup.is_file():
        original = backup.read_bytes().decode("utf-8")
        if dry_run:
            _diff(config, text, original)
            return
        _write(path, original, like=path)
        backup.unlink()
        path.with_name(servers_file_name(path.name)).unlink(missing_ok=True)  # wrap --gateway's
        click.echo(f"{config}: unwrapped; restored the original from {backup}.")
        return
    rewrite = unwrap_text(text, source=str(config), names=servers)
    _report(rewrite)
    if not rewrite.changed:
        click.echo(f"{config}: nothing to unwrap; the file is unchanged.")
    elif dry_run:
        _diff(config, text, rewrite.text)
    else:
        _write(path, rewrite.text, like=path)
        click.echo(f"{config}: unwrapped (entries rebuilt from their proxy arguments).")


def _read(config: Path) -> tuple[Path, str]:
    """The file's real path (a symlinked config is edited where it lives) and its text."""
    path = Path(os.path.realpath(config))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParameterError(
            f"cannot read {config}: {exc.strerror or exc}; give an MCP client configuration file"
        ) from None
    try:
        return path, data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"{config} is not UTF-8 text; give an MCP client configuration file (JSON)") from None


def _write(path: Path, text: str, like: Path) -> None:
    """Write atomically (a temporary file renamed over it), with the mode of ``like``."""
    mode = like.stat().st_mode & 0o777 if like.exists() else 0o600
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _report(rewrite: Rewrite) -> None:
    for change in rewrite.changes:
        click.echo(f"  {change.name}: {change.action}" + (f" ({change.reason})" if change.reason else ""))


def _diff(config: Path, before: str, after: str) -> None:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"{config}", f"{config} (new)"
    )
    click.echo("".join(lines), nl=False)


def _this_executable() -> str:
    """The full path of the pflow-structure being run, so a client with another PATH finds it."""
    argv0 = Path(sys.argv[0])
    if argv0.name == PROXY_NAME and argv0.exists():
        return os.path.abspath(argv0)
    return shutil.which(PROXY_NAME) or PROXY_NAME
