"""MCP client configurations, wrapped so that every server runs behind the proxy (no click here).

The documented formats, told apart by their top-level key (and by file and entry keys, for how
each client writes a variable):

- ``mcpServers``: Claude Desktop (``claude_desktop_config.json``), Claude Code (``.mcp.json``),
  Cursor (``mcp.json``), Windsurf (``mcp_config.json``, remote entries as ``serverUrl``) and Gemini
  CLI (``settings.json``: ``httpUrl`` for streamable HTTP, ``url`` for SSE);
- ``servers``: VS Code (``.vscode/mcp.json`` or the profile's ``mcp.json``), beside its ``inputs``;
- ``[mcp_servers.NAME]`` tables: Codex (``~/.codex/config.toml``), edited by ``toml_configs.py``.

A stdio entry ``{"command": C, "args": A, ...}`` becomes ``{"command": PROXY, "args": ["proxy",
"--", C, *A], ...}`` (``env`` and every other key kept); a URL entry ``{"url": U, "headers": H,
...}`` becomes ``{"command": PROXY, "args": ["proxy", "--url", U, "--header", "Name: value",
...]}``. A header's environment variable is written as the proxy reads it, ``${VAR}`` (the proxy
reads it from its environment when it starts, so nothing is expanded into the file): VS Code's,
Cursor's and Windsurf's ``${env:VAR}``, Gemini CLI's ``$VAR`` and ``${VAR}``, Claude Code's
``${VAR}`` as it stands, Codex's ``bearer_token_env_var`` and ``env_http_headers`` (the wrapped
entry passes those variables on with ``env_vars``). What the proxy cannot read (VS Code's
``${input:ID}``, a client's own ``${workspaceFolder}``) is left as written, for the client to fill
in, and the change says so.

Only the text of the entries that change is replaced: every other byte of the file (other keys,
comments, indentation) stays as it was. An entry that already runs through the proxy is left
alone, so wrapping twice changes nothing. ``unwrap`` rebuilds each entry from its proxy
arguments; the command line restores the exact original bytes from the backup ``wrap`` wrote
when the file has not changed since.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pflow_structure.cli.client_dialects import (
    REFERENCE,
    URL_KEYS,
    client_header,
    client_of,
    codex_headers,
    entry_headers,
    proxy_header,
)
from pflow_structure.errors import ParameterError

SECTIONS = ("mcpServers", "servers")  # Claude Desktop, Claude Code, Cursor, Windsurf, Gemini CLI / VS Code
PROXY_NAME = "pflow-structure"
_WHITESPACE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)  # JSONC: VS Code allows comments
_DECODER = json.JSONDecoder()


@dataclass
class Change:
    """What happened to one server entry."""

    name: str
    action: str  # "wrapped", "unwrapped", "already wrapped", "not wrapped", "skipped"
    reason: str = ""


@dataclass
class Rewrite:
    """The new text of a configuration and what changed in it."""

    text: str
    section: str
    changes: list[Change] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(change.action in ("wrapped", "unwrapped") for change in self.changes)


class _Scanner:
    """Positions of an object's members in JSON(C) text: ``(key, value, start, end)`` of each value."""

    def __init__(self, text: str, source: str) -> None:
        self.text, self.source = text, source

    def skip(self, index: int) -> int:
        match = _WHITESPACE.match(self.text, index)
        return match.end() if match else index

    def fail(self, index: int, what: str) -> ParameterError:
        line = self.text.count("\n", 0, index) + 1
        column = index - (self.text.rfind("\n", 0, index) + 1) + 1
        return ParameterError(
            f"{self.source} is not a JSON MCP client configuration: {what} at line {line}, column {column}; "
            'fix the file (it should be an object with "mcpServers" or "servers") and run again'
        )

    def members(self, start: int) -> list[tuple[str, Any, int, int]]:
        index = self.skip(start)
        if self.text[index : index + 1] != "{":
            raise self.fail(index, "expected an object")
        found: list[tuple[str, Any, int, int]] = []
        index = self.skip(index + 1)
        while self.text[index : index + 1] != "}":
            if self.text[index : index + 1] != '"':
                raise self.fail(index, "expected a quoted key")
            key, index = json.decoder.scanstring(self.text, index + 1)  # type: ignore[attr-defined]
            index = self.skip(index)
            if self.text[index : index + 1] != ":":
                raise self.fail(index, "expected ':'")
            value_start = self.skip(index + 1)
            value, value_end = self.value(value_start)
            found.append((key, value, value_start, value_end))
            index = self.skip(value_end)
            if self.text[index : index + 1] == ",":
                index = self.skip(index + 1)  # a trailing comma before '}' is JSONC
            elif self.text[index : index + 1] != "}":
                raise self.fail(index, "expected ',' or '}'")
        return found

    def value(self, start: int) -> tuple[Any, int]:
        """A value and where it ends; an object or array may hold comments (read without them)."""
        try:
            return _DECODER.raw_decode(self.text, start)
        except json.JSONDecodeError:
            end = _matching_end(self.text, start)
            if end is None:
                raise self.fail(start, "a value that does not end") from None
            try:
                return json.loads(_without_comments(self.text[start:end])), end
            except json.JSONDecodeError as exc:
                raise self.fail(start + exc.pos, exc.msg.lower()) from None


def _matching_end(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at ``start`` (strings and comments skipped)."""
    depth, index, length = 0, start, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if text.startswith("//", index) or text.startswith("/*", index):
            index = _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _string_end(text: str, start: int) -> int:
    index = start + 1
    while index < len(text) and text[index] != '"':
        index += 2 if text[index] == "\\" else 1
    return index + 1


def _without_comments(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        if text[index] == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
        elif text.startswith("//", index) or text.startswith("/*", index):
            index = _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]
            out.append(" ")
        else:
            out.append(text[index])
            index += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))  # trailing commas


def servers_of(text: str, source: str) -> tuple[str, list[tuple[str, Any, int, int]]]:
    """The servers' section of a JSON configuration and its entries: ``(name, entry, start, end)``."""
    scanner = _Scanner(text, source)
    top = scanner.members(0)
    if scanner.skip(_top_end(scanner)) != len(text):
        raise scanner.fail(scanner.skip(_top_end(scanner)), "text after the top-level object")
    for section in SECTIONS:
        for key, value, start, _end in top:
            if key == section:
                if not isinstance(value, dict):
                    raise scanner.fail(start, f'"{section}" is not an object')
                return section, scanner.members(start)
    names = ", ".join(f'"{key}"' for key, *_ in top) or "none"
    raise ParameterError(
        f'{source} has no "mcpServers" (Claude Desktop, Claude Code, Cursor) or "servers" (VS Code) object '
        f"(its top-level keys: {names}); give the client's MCP configuration file"
    )


def server_entries(text: str, *, source: str) -> tuple[str, dict[str, Any]]:
    """Which client's file it is (:func:`client_of`) and every server entry, by name (what
    ``proxy --config`` serves as a gateway)."""
    if source.lower().endswith(".toml"):  # Codex's config.toml
        from pflow_structure.cli.toml_configs import toml_servers

        return "codex", dict(toml_servers(text, source))
    section, members = servers_of(text, source)
    entries = {name: value for name, value, _start, _end in members}
    return client_of(source, section, entries.values()), entries


def _top_end(scanner: _Scanner) -> int:
    end = _matching_end(scanner.text, scanner.skip(0))
    return end if end is not None else len(scanner.text)


def is_wrapped(entry: Mapping[str, Any]) -> bool:
    """Whether a server entry already runs through ``pflow-structure proxy``."""
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or not args:
        return False
    runs_us = re.sub(r"\.exe$", "", command.replace("\\", "/").rsplit("/", 1)[-1]) == PROXY_NAME
    return runs_us and args[0] == "proxy"


def wrap_entry(
    entry: Mapping[str, Any], proxy_command: str, client: str = "other", notes: list[str] | None = None
) -> dict[str, Any]:
    """The entry that runs ``entry``'s server through the proxy; ParameterError for one it cannot.
    ``notes`` collects what could not be carried over as it stands."""
    notes = [] if notes is None else notes
    if isinstance(entry.get("command"), str):
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise ParameterError('its "args" is not a list of strings')
        wrapped = dict(entry)
        wrapped["command"] = proxy_command
        wrapped["args"] = ["proxy", "--", entry["command"], *args]
        return wrapped
    for key in URL_KEYS:
        if isinstance(entry.get(key), str):
            return _wrap_url(entry, key, proxy_command, client, notes)
    raise ParameterError('it has neither "command" (a stdio server) nor "url" (a remote server)')


CODEX_REMOTE = ("bearer_token_env_var", "http_headers", "env_http_headers")


def _wrap_url(
    entry: Mapping[str, Any], url_key: str, proxy_command: str, client: str, notes: list[str]
) -> dict[str, Any]:
    headers, variables = entry_headers(entry, client)
    url = entry[url_key]
    variable = REFERENCE.search(url)
    if variable and client not in ("claude-code", "codex"):  # the proxy reads no variable in a URL
        notes.append(f"the URL's {variable.group(0)} is left for {client} to fill in")
    if any(key in entry for key in ("oauth", "scopes", "oauth_resource")):
        notes.append(f"its OAuth settings stay for {client}: the proxy signs in with none, only the headers")
    args = ["proxy", "--url", url]
    sse = entry.get("type") == "sse" or entry.get("transport") == "sse"
    if sse or (client == "gemini" and url_key == "url"):  # Gemini CLI's url is an SSE endpoint
        args += ["--transport", "sse"]
    for name, value in headers.items():
        args += ["--header", f"{name}: {proxy_header(value, client, notes)}"]
    wrapped: dict[str, Any] = {}
    for key, value in entry.items():  # keep the entry's order and its other keys
        if key == "type":
            wrapped["type"] = "stdio"
        elif key == url_key:
            wrapped["command"], wrapped["args"] = proxy_command, args
            if variables:
                wrapped["env_vars"] = variables
        elif key not in ("headers", "transport", *URL_KEYS, *(CODEX_REMOTE if client == "codex" else ())):
            wrapped[key] = value
    return wrapped


def unwrap_entry(entry: Mapping[str, Any], client: str = "other") -> dict[str, Any]:
    """The entry as it was before :func:`wrap_entry` (from its proxy arguments)."""
    args = list(entry["args"][1:])
    if args[:1] == ["--"] and len(args) > 1:
        unwrapped = dict(entry)
        unwrapped["command"], unwrapped["args"] = args[1], args[2:]
        return unwrapped
    if args[:1] == ["--url"] and len(args) > 1:
        return _unwrap_url(entry, args, client)
    if args[:1] == ["--config"] and len(args) > 1:  # wrap --gateway's entry
        raise ParameterError(f"it runs the gateway over the servers in {args[1]}: copy their entries back from there")
    raise ParameterError("its proxy arguments name neither -- COMMAND nor --url URL")


def _unwrap_url(entry: Mapping[str, Any], args: list[str], client: str) -> dict[str, Any]:
    url, rest = args[1], args[2:]
    headers: dict[str, str] = {}
    sse = False
    while rest:
        option, value, rest = rest[0], rest[1] if len(rest) > 1 else "", rest[2:]
        if option == "--header" and ":" in value:
            name, _, header = value.partition(":")
            headers[name.strip()] = client_header(header.strip(), client)
        elif option == "--transport":
            sse = value == "sse"
        else:
            raise ParameterError(f"its proxy arguments hold {option!r}, which unwrap does not know")
    url_key = {"windsurf": "serverUrl", "gemini": "url" if sse else "httpUrl"}.get(client, "url")
    unwrapped: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "type":
            unwrapped["type"] = "sse" if sse else "http"
        elif key == "command":
            unwrapped[url_key] = url
            unwrapped.update(codex_headers(headers) if client == "codex" else {"headers": headers} if headers else {})
        elif key not in ("args", "env_vars"):
            unwrapped[key] = value
    return unwrapped


def wrap_text(text: str, *, source: str, proxy_command: str, names: Iterable[str] = ()) -> Rewrite:
    """``text`` with every (or every named) server entry running through the proxy."""
    return _rewrite(text, source, names, proxy_command=proxy_command)


def unwrap_text(text: str, *, source: str, names: Iterable[str] = ()) -> Rewrite:
    """``text`` with every (or every named) wrapped entry back to its own server."""
    return _rewrite(text, source, names, proxy_command=None)


def _rewrite(text: str, source: str, names: Iterable[str], proxy_command: str | None) -> Rewrite:
    if source.lower().endswith(".toml"):
        return _rewrite_toml(text, source, names, proxy_command)
    section, entries = servers_of(text, source)
    client = client_of(source, section, [entry for _, entry, *_ in entries])
    wanted = _wanted(names, [name for name, *_ in entries], source)
    rewrite = Rewrite(text, section)
    for name, entry, start, end in reversed(entries):  # from the end, so earlier offsets stay right
        if wanted and name not in wanted:
            continue
        change, new = _one(name, entry, proxy_command, client)
        rewrite.changes.insert(0, change)
        if new is not None:
            rewrite.text = rewrite.text[:start] + _dump(new, text, start) + rewrite.text[end:]
    return rewrite


def _wanted(names: Iterable[str], known: list[str], source: str) -> set[str]:
    wanted = set(names)
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ParameterError(
            f"{source} has no server named {', '.join(unknown)} (its servers: {', '.join(known) or 'none'})"
        )
    return wanted


def _rewrite_toml(text: str, source: str, names: Iterable[str], proxy_command: str | None) -> Rewrite:
    """Codex's config.toml: the same changes, written by tomlkit (comments and formatting kept)."""
    from pflow_structure.cli.toml_configs import SECTION, replace_servers, toml_servers

    entries = toml_servers(text, source)
    wanted = _wanted(names, [name for name, _ in entries], source)
    rewrite, new_entries = Rewrite(text, SECTION), {}
    for name, entry in entries:
        if wanted and name not in wanted:
            continue
        change, new = _one(name, entry, proxy_command, "codex")
        rewrite.changes.append(change)
        if new is not None:
            new_entries[name] = new
    if new_entries:
        rewrite.text = replace_servers(text, source, new_entries)
    return rewrite


def _one(name: str, entry: Any, proxy_command: str | None, client: str) -> tuple[Change, dict[str, Any] | None]:
    if not isinstance(entry, dict):
        return Change(name, "skipped", "its entry is not an object"), None
    try:
        if proxy_command is None:
            if not is_wrapped(entry):
                return Change(name, "not wrapped"), None
            return Change(name, "unwrapped"), unwrap_entry(entry, client)
        if is_wrapped(entry):
            return Change(name, "already wrapped"), None
        notes: list[str] = []
        wrapped = wrap_entry(entry, proxy_command, client, notes)
        return Change(name, "wrapped", "; ".join(notes)), wrapped
    except ParameterError as exc:
        return Change(name, "skipped", str(exc)), None


def _dump(entry: dict[str, Any], text: str, start: int) -> str:
    """``entry`` as JSON indented like the line it starts on (one level deeper inside)."""
    if "\n" not in text:  # a one-line file stays on one line
        return json.dumps(entry, ensure_ascii=False)
    line_start = text.rfind("\n", 0, start) + 1
    indent = re.match(r"[ \t]*", text[line_start:start]).group(0)  # type: ignore[union-attr]
    step = _indent_step(text)
    dumped = json.dumps(entry, indent=step, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _indent_step(text: str) -> int | str:
    """The file's own indentation unit (tabs or N spaces), 2 when it has none."""
    match = re.search(r"\n([ \t]+)\S", text)
    if not match:
        return 2
    unit = match.group(1)
    return "\t" if unit.startswith("\t") else len(unit)


def replace_section(text: str, source: str, section: str, entries: dict[str, Any]) -> str:
    """``text`` with its servers' section (``section``) written anew as ``entries``, indented as the file is."""
    scanner = _Scanner(text, source)
    [(start, end)] = [(start, end) for key, _value, start, end in scanner.members(0) if key == section]
    return text[:start] + _dump(entries, text, start) + text[end:]
