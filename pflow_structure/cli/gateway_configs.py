"""``wrap --gateway``: the servers of a client configuration moved into one entry, ``pflow-structure``,
that runs them all behind one gateway (``proxy --config SERVERS_FILE``), for JSON configurations and
Codex's config.toml alike (no click here).

The servers' own entries go to the servers file beside the configuration, in the configuration's own
format (JSON, or for Codex a TOML file of ``[mcp_servers.NAME]`` tables, so that ``proxy --config``
reads Codex's keys as Codex does). A Codex gateway entry passes on, with ``env_vars``, every variable
its servers read (Codex starts a server with only those of its own environment).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pflow_structure.cli.client_configs import (
    PROXY_NAME,
    Change,
    Rewrite,
    is_wrapped,
    replace_section,
    servers_of,
    unwrap_entry,
)
from pflow_structure.cli.client_dialects import entry_headers
from pflow_structure.errors import ParameterError


def is_toml(source: str) -> bool:
    return source.lower().endswith(".toml")


def servers_file_name(config_name: str) -> str:
    """Where ``wrap --gateway`` puts the servers' entries: beside the configuration, in its format."""
    return f"{config_name}.pflow-structure-gateway.{'toml' if is_toml(config_name) else 'json'}"


def gateway_text(
    text: str, *, source: str, proxy_command: str, servers_file: str, names: Iterable[str] = ()
) -> tuple[Rewrite, str | None]:
    """``text`` with every (or every named) server entry replaced by one entry, ``pflow-structure``,
    that runs them all behind one gateway (``proxy --config servers_file``), and the text of
    ``servers_file``: those entries as they were (an entry already behind the proxy unwrapped), or
    None when no entry moves. In a JSON file the servers' section is written anew (its comments go);
    the rest of the file stays as it was."""
    if is_toml(source):
        from pflow_structure.cli.toml_configs import SECTION, toml_servers

        section, entries = SECTION, toml_servers(text, source)
    else:
        section, members = servers_of(text, source)
        entries = [(name, entry) for name, entry, _start, _end in members]
    wanted = set(names)
    known = {name for name, _ in entries}
    if wanted - known:
        listed = ", ".join(sorted(known)) or "none"
        raise ParameterError(
            f"{source} has no server named {', '.join(sorted(wanted - known))} (its servers: {listed})"
        )
    rewrite = Rewrite(text, section)
    moved: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for name, entry in entries:
        if (wanted and name not in wanted) or name == PROXY_NAME:
            kept[name] = entry
            continue
        wrapped = isinstance(entry, dict) and is_wrapped(entry)
        moved[name] = unwrap_entry(entry, "codex" if is_toml(source) else "other") if wrapped else entry
        rewrite.changes.append(Change(name, "wrapped", "into the gateway"))
    if not moved:
        return rewrite, None
    _refuse_a_second_gateway(kept, source)
    gateway: dict[str, Any] = {"command": proxy_command, "args": ["proxy", "--config", servers_file]}
    if is_toml(source):
        from pflow_structure.cli.toml_configs import gateway_servers, servers_text

        variables = _codex_variables(moved.values())
        if variables:
            gateway["env_vars"] = variables
        rewrite.text = gateway_servers(text, source, list(moved), PROXY_NAME, gateway)
        return rewrite, servers_text(moved)
    import json

    kept[PROXY_NAME] = gateway
    rewrite.text = replace_section(text, source, section, kept)
    return rewrite, json.dumps({section: moved}, indent=2, ensure_ascii=False) + "\n"


def _refuse_a_second_gateway(kept: dict[str, Any], source: str) -> None:
    """An entry named pflow-structure is never replaced: a gateway's servers, or the user's server, would be lost."""
    if PROXY_NAME not in kept:
        return
    args = kept[PROXY_NAME].get("args") if isinstance(kept[PROXY_NAME], dict) else None
    if isinstance(args, list) and args[:2] == ["proxy", "--config"]:
        raise ParameterError(
            f"{source} already has a gateway ({PROXY_NAME}): run `pflow-structure unwrap {source}`, then "
            "wrap --gateway again to put every server behind one gateway"
        )
    raise ParameterError(
        f'{source} already has a server named "{PROXY_NAME}", the name of the gateway\'s entry: rename it, then '
        "run again"
    )


def _codex_variables(entries: Iterable[Any]) -> list[str]:
    """The variables Codex must pass on to the gateway: each server's ``env_vars`` and the ones its
    headers read (``bearer_token_env_var``, ``env_http_headers``)."""
    found: dict[str, None] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        listed = entry.get("env_vars") or []
        found.update(dict.fromkeys(name for name in listed if isinstance(name, str)))
        try:
            found.update(dict.fromkeys(entry_headers(entry, "codex")[1]))
        except ParameterError:  # headers that are not strings: the gateway lists that server as not started
            continue
    return list(found)
