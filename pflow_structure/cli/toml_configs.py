"""Codex's ``config.toml``: its ``[mcp_servers.NAME]`` tables read and rewritten with tomlkit (its one home).

tomlkit keeps a document's comments, key order, quoting and blank lines as they were, and writes
back only the keys that change, so the rest of the file stays byte for byte. No click here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflow_structure.errors import ParameterError

SECTION = "mcp_servers"


def _parse(text: str, source: str) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise ParameterError(
            f"{source} is not a TOML MCP client configuration: {exc}; fix the file (Codex's config.toml, "
            f"with [{SECTION}.NAME] tables) and run again"
        ) from None


def _section(document: Any, source: str) -> Any:
    servers = document.get(SECTION)
    if servers is None:
        raise ParameterError(
            f"{source} has no [{SECTION}] table (Codex keeps its MCP servers as [{SECTION}.NAME]); "
            "give the client's MCP configuration file"
        )
    if not isinstance(servers, Mapping):
        raise ParameterError(f"{source}: {SECTION} is not a table; fix the file and run again")
    return servers


def toml_servers(text: str, source: str) -> list[tuple[str, Any]]:
    """``(name, entry)`` of every server, in the file's order, as plain Python values."""
    servers = _section(_parse(text, source), source)
    return [(str(name), _plain(entry)) for name, entry in servers.items()]


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def replace_servers(text: str, source: str, entries: Mapping[str, Mapping[str, Any]]) -> str:
    """``text`` with the servers named in ``entries`` made equal to them: a key that differs is
    replaced where it stands, a key that is gone is removed, a new key is added to its table."""
    document = _parse(text, source)
    servers = _section(document, source)
    for name, entry in entries.items():
        table = servers[name]
        for key in [key for key in table if key not in entry]:
            del table[key]
        for key, value in entry.items():
            if key not in table or _plain(table[key]) != value:
                table[key] = _inline(value)
    import tomlkit

    return tomlkit.dumps(document)


def _inline(value: Any) -> Any:
    """A dict as an inline table (``{ "X-Team" = "x" }``), as a server's small tables are written,
    rather than a ``[mcp_servers.NAME.KEY]`` section of its own."""
    if not isinstance(value, Mapping):
        return value
    import tomlkit

    table = tomlkit.inline_table()
    table.update(value)
    return table


def gateway_servers(text: str, source: str, moved: list[str], name: str, entry: Mapping[str, Any]) -> str:
    """``text`` with the servers in ``moved`` taken out and one server, ``name`` (``entry``), in their place:
    ``wrap --gateway`` on Codex's config.toml. The rest of the file stays as it was."""
    import tomlkit

    document = _parse(text, source)
    servers = _section(document, source)
    for server in moved:
        del servers[server]
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = _inline(value)
    table.add(tomlkit.nl())  # a blank line before the next table, as the file's own tables have
    servers[name] = table
    return tomlkit.dumps(document)


def servers_text(entries: Mapping[str, Any]) -> str:
    """``entries`` as a config.toml of their own (``[mcp_servers.NAME]`` tables): a Codex gateway's servers."""
    import tomlkit

    return tomlkit.dumps({SECTION: {name: dict(entry) for name, entry in entries.items()}})
