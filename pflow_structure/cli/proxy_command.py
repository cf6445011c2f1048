"""``pflow-structure proxy``: any MCP server (a stdio command or a remote URL) behind structure-first answers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from pflow_structure.cli.common import CONTEXT_SETTINGS, fails_cleanly, main, settings_for


@main.command(context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--budget",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    envvar="PFLOW_STRUCTURE_PROXY_BUDGET",
    help="Inline threshold: largest result shown as is, in o200k tokens [env PFLOW_STRUCTURE_PROXY_BUDGET]; "
    "larger ones are cached and answered with their structure. Every answer also stays under the answer "
    "budget (PFLOW_STRUCTURE_ANSWER_BUDGET, default 8000).",
)
@click.option(
    "--start-timeout",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="Seconds the downstream server may take to start and answer the MCP handshake.",
)
@click.option(
    "--url", metavar="URL", help="A remote MCP server's endpoint instead of a COMMAND, e.g. https://host/mcp."
)
@click.option(
    "--transport",
    type=click.Choice(["streamable-http", "sse"]),
    default=None,
    help="How to speak to --url: streamable-http (default) or sse (the older HTTP+SSE transport).",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="An HTTP header for --url, repeatable; ${VAR} in VALUE is read from the environment, e.g. "
    "--header 'Authorization: Bearer ${GITHUB_TOKEN}'.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help='A JSON file {"url": ..., "headers": {...}, "transport": ..., "timeout": ...} (the shape MCP clients '
    "use for a remote server) instead of --url and --header; or a client's configuration (mcpServers or servers, "
    "or Codex's config.toml): "
    "then every server in it, behind one connection, each tool named SERVER.TOOL.",
)
@click.option(
    "--tools",
    "tools_mode",
    type=click.Choice(["full", "compact", "light"]),
    default=None,
    help="How tools/list shows the tools: full (the server's definitions with _want and _fields), compact (the "
    "same interface in fewer tokens) or light (each tool's name and a few words); compact and light add "
    "describe_tools and search_tools  [default: full; compact with a client configuration].",
)
@click.option(
    "--separator",
    type=click.Choice([".", "__", "_", "-"]),
    default=".",
    show_default=True,
    help="With a client configuration: what joins a server's name and its tool's (files.read_text_file); __ for "
    "a client that takes only letters, digits, _ and - in tool names.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=None,
    help="Seconds each network operation with --url may take (connect, send, wait for an answer), and calls in "
    "flight may take to finish once the client has closed its input  [default: 30].",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARGS]...]")
@click.pass_context
@fails_cleanly
def proxy(
    ctx: click.Context,
    budget: int,
    start_timeout: float,
    url: str | None,
    transport: str | None,
    headers: Sequence[str],
    config_file: Path | None,
    timeout: float | None,
    tools_mode: str | None,
    separator: str,
    command: Sequence[str],
) -> None:
    """Put any MCP server behind structure-first answers: a stdio COMMAND, or a remote --url.

    Offers the server's tools (same names, descriptions, input schemas) plus read_fields;
    everything else (prompts, resources, progress, logging, list changes, sampling, roots,
    elicitation) passes through both ways. A result of at most --budget tokens comes back as
    is (JSON re-encoded compactly when smaller); a larger one is cached and answered with an
    execution id and its structure. Every tool also takes _fields (paths): then the answer is
    the values at those paths, the rest cached. read_fields answers stay under the answer
    budget, paging past it. If shaping a result fails, the original comes back and a
    line goes to the failure log (PFLOW_STRUCTURE_FAILURE_LOG, default
    ~/.pflow/logs/pflow-structure-failures.jsonl). --tools compact or light shortens the tool
    list (describe_tools and search_tools give the rest); --config CLIENT_CONFIG serves every
    server of a client configuration behind one connection, each tool named SERVER.TOOL. In an
    MCP client's configuration:

    \b
      {"command": "pflow-structure",
       "args": ["proxy", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/path/to/dir"]}
      {"command": "pflow-structure",
       "args": ["proxy", "--url", "https://api.githubcopilot.com/mcp/",
                "--header", "Authorization: Bearer ${GITHUB_TOKEN}"],
       "env": {"GITHUB_TOKEN": "..."}}
    """
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.proxy.remote import Upstream
    from pflow_structure.mcp.proxy.run import refuse_and_leave, run

    try:
        upstream = _upstream(list(command), url, transport, headers, config_file, timeout)
    except ParameterError as exc:  # an unset ${VAR}, a bad --config: the client's initialize is told why
        refuse_and_leave(str(exc))
    tools = tools_mode or ("full" if isinstance(upstream, Upstream) else "compact")
    run(
        upstream,
        lambda: settings_for(ctx),
        budget=budget,
        start_timeout=start_timeout,
        tools=tools,
        separator=separator,
    )


def _upstream(
    command: list[str],
    url: str | None,
    transport: str | None,
    headers: Sequence[str],
    config_file: Path | None,
    timeout: float | None,
) -> Any:
    """The proxy's upstream from its options; a usage error for a mix that cannot work."""
    import os

    from pflow_structure.mcp.proxy.remote import (
        DEFAULT_TIMEOUT,
        Upstream,
        check_url,
        expand,
        parse_headers,
        read_config,
    )

    remote = url is not None or config_file is not None
    if command and remote:
        raise click.UsageError("give either -- COMMAND (a stdio server) or --url/--config (a remote one), not both")
    if not remote:
        if not command:
            raise click.UsageError("give the server to proxy: -- COMMAND [ARGS]... or --url URL")
        if headers or transport:
            raise click.UsageError("--header and --transport go with --url (a remote server)")
        return Upstream(command=tuple(command), timeout=timeout or DEFAULT_TIMEOUT)
    found: dict[str, Any] = {"url": url, "transport": transport, "headers": {}, "timeout": timeout}
    if config_file is not None:
        if url is not None:
            raise click.UsageError("give either --url or --config, not both")
        gateway = _gateway_upstreams(config_file, timeout)
        if gateway is not None:
            return gateway
        loaded = read_config(config_file)
        found = {**loaded, **{key: value for key, value in found.items() if value and key != "url"}}
    merged = {**found["headers"], **parse_headers(headers)}
    return Upstream(
        url=check_url(found["url"]),
        transport=found["transport"] or "streamable-http",
        headers=expand(merged, os.environ),
        timeout=found["timeout"] or DEFAULT_TIMEOUT,
    )


def _gateway_upstreams(config_file: Path, timeout: float | None) -> dict[str, Any] | None:
    """Every server of a client configuration (``mcpServers`` or ``servers``) by name, each as the
    proxy would reach it alone (an entry already behind the proxy unwrapped first); None for a file
    of another shape (a remote server's ``{"url": ...}``)."""
    import json

    from pflow_structure.cli.client_configs import SECTIONS, server_entries
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.proxy.remote import DEFAULT_TIMEOUT, Upstream

    try:
        text = config_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"cannot read --config {config_file}: {exc.strerror or exc}") from None
    try:
        top = json.loads(text)
    except ValueError:  # JSONC (VS Code's comments): the client configuration reader reads it
        top = None
    if top is not None and not (isinstance(top, dict) and any(key in top for key in SECTIONS)):
        return None  # a remote server's {"url": ...}, or what read_config says is wrong
    upstreams: dict[str, Any] = {}
    client, entries = server_entries(text, source=str(config_file))
    for name, entry in entries.items():
        if isinstance(entry, dict) and (
            entry.get("disabled") is True or entry.get("enabled") is False
        ):  # Cline's, Codex's
            continue
        try:
            upstreams[name] = _entry_upstream(entry, client, timeout or DEFAULT_TIMEOUT)
        except ParameterError as exc:  # listed as NAME.not_started with why and the fix; the rest serve
            why = str(exc).rstrip(".")
            upstreams[name] = Upstream(
                fault=f'server "{name}" of --config {config_file}: {why}; then restart the proxy.'
            )
    if not upstreams:
        raise ParameterError(f"--config {config_file} names no server")
    if all(upstream.fault for upstream in upstreams.values()):
        raise ParameterError("no server of the gateway can start: " + " ".join(u.fault for u in upstreams.values()))
    return upstreams


def _entry_upstream(entry: Any, client: str, seconds: float) -> Any:
    """One server of a client configuration as the proxy reaches it alone (an entry already behind the
    proxy unwrapped first), its variables filled in as the client would; ParameterError saying what is
    wrong with the entry."""
    import contextlib
    import os

    from pflow_structure.cli.client_configs import is_wrapped, unwrap_entry, wrap_entry
    from pflow_structure.cli.client_dialects import proxy_header
    from pflow_structure.errors import ParameterError
    from pflow_structure.mcp.proxy.remote import Upstream, check_url, expand, parse_headers, substitute

    if not isinstance(entry, dict):
        raise ParameterError('it is not an object: write it as {"command": ...} or {"url": ...}')
    if is_wrapped(entry):  # run once, not through a proxy behind the proxy
        with contextlib.suppress(ParameterError):  # proxy options unwrap does not know: run it as it is
            entry = unwrap_entry(entry)
    if isinstance(entry.get("command"), str):
        args, env = entry.get("args") or [], entry.get("env") or {}
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise ParameterError('its "args" is not a list of strings: write it as ["ARG", ...]')
        if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
            raise ParameterError('its "env" is not an object of strings: write it as {"NAME": "value"}')
        if client != "codex":  # the client fills in its variables (Codex passes env as written)
            words = [entry["command"], *args]
            line = substitute({str(i): proxy_header(w, client, []) for i, w in enumerate(words)}, os.environ, "command")
            words = [line[str(i)] for i in range(len(words))]
            env = substitute({key: proxy_header(value, client, []) for key, value in env.items()}, os.environ, "env")
            return Upstream(command=tuple(words), env=env, timeout=seconds)
        return Upstream(command=(entry["command"], *args), env=env, timeout=seconds)
    # a remote entry read as `wrap` reads it: the client's URL key, transport and variables
    args = wrap_entry(entry, "pflow-structure", client)["args"]  # proxy --url URL [--transport T] ...
    options = list(zip(args[1::2], args[2::2], strict=True))
    headers = expand(parse_headers(value for key, value in options if key == "--header"), os.environ)
    transport = dict(options).get("--transport", "streamable-http")
    return Upstream(url=check_url(args[2]), transport=transport, headers=headers, timeout=seconds)
