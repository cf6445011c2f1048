"""How each MCP client writes its configuration: which client a file is, its URL keys, and how it
writes an environment variable, so that a wrapped entry resolves its variables as the client would
have (``client_configs.py`` edits the files; no click here).

- VS Code, Cursor and Windsurf write ``${env:VAR}`` (and fill in their own ``${input:ID}``,
  ``${workspaceFolder}``, ...);
- Gemini CLI writes ``$VAR`` or ``${VAR}``;
- Claude Code writes ``${VAR}`` and ``${VAR:-default}``, and fills them in ``args`` too;
- Codex names variables: ``bearer_token_env_var`` and ``env_http_headers``, and starts a stdio server
  with only the variables it lists in ``env_vars`` (beside a few of its own).

The proxy reads ``${VAR}`` in a header from its environment (``mcp/proxy/remote.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pflow_structure.errors import ParameterError

URL_KEYS = ("url", "serverUrl", "httpUrl")  # most clients / Windsurf / Gemini CLI's streamable HTTP
ENV_SYNTAX = ("vscode", "cursor", "windsurf")  # clients that write an environment variable ${env:VAR}
REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")  # Gemini CLI's $VAR


def client_of(source: str, section: str, entries: Iterable[Any]) -> str:
    """Which client's file this is (how it writes variables, which URL key it reads): its name and
    place, else its entries' keys; "other" when none of those tells."""
    path = source.replace("\\", "/").lower()
    name = path.rsplit("/", 1)[-1]
    keys = {key for entry in entries if isinstance(entry, dict) for key in entry}
    if path.endswith(".toml"):
        return "codex"
    if section == "servers":
        return "vscode"
    # By name first: a wrapped file has no httpUrl or serverUrl left, and unwrap writes them back.
    if name == "settings.json" or "gemini" in name or "/.gemini/" in path or "httpUrl" in keys:
        return "gemini"
    if name == "mcp_config.json" or "windsurf" in path or "serverUrl" in keys:
        return "windsurf"
    if "/.cursor/" in path or "cursor" in name:
        return "cursor"
    if name.endswith(".mcp.json") or name == ".claude.json":
        return "claude-code"
    return "other"


def proxy_header(value: str, client: str, notes: list[str]) -> str:
    """A header value as the proxy reads it: the client's environment variables as ``${VAR}``; what only
    the client can fill in is left as written, with a note."""
    if client == "gemini":
        return _BARE_REFERENCE.sub(r"${\1}", value)

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        if client in ENV_SYNTAX:
            found = _ENV_REFERENCE.fullmatch(inner)
            if found:
                return "${" + found.group(1) + "}"
        elif _NAME.fullmatch(inner) or client == "claude-code":
            return match.group(0)  # ${VAR} (Claude Code's ${VAR:-default} too: it fills in args as well)
        notes.append(f"{match.group(0)} is left for {client} to fill in (the proxy reads only ${{VAR}})")
        return match.group(0)

    return REFERENCE.sub(one, value)


def client_header(value: str, client: str) -> str:
    """:func:`proxy_header` undone: ``${VAR}`` in the client's own syntax."""
    if client not in ENV_SYNTAX:
        return value
    return REFERENCE.sub(
        lambda match: "${env:" + match.group(1) + "}" if _NAME.fullmatch(match.group(1)) else match.group(0), value
    )


def entry_headers(entry: Mapping[str, Any], client: str) -> tuple[dict[str, str], list[str]]:
    """The entry's headers (Codex: its literal, bearer-token and environment headers), and the
    variables the client must pass on to the proxy (Codex starts a server with few of its own)."""
    if client != "codex":
        headers = entry.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(value, str) for value in headers.values()):
            raise ParameterError('its "headers" is not an object of strings')
        return dict(headers), []
    headers, variables = dict(entry.get("http_headers") or {}), []
    if isinstance(entry.get("bearer_token_env_var"), str):
        variables.append(entry["bearer_token_env_var"])
        headers["Authorization"] = "Bearer ${" + entry["bearer_token_env_var"] + "}"
    for name, variable in (entry.get("env_http_headers") or {}).items():
        variables.append(variable)
        headers[name] = "${" + variable + "}"
    if not all(isinstance(value, str) for value in [*headers.values(), *variables]):
        raise ParameterError("its headers are not strings")
    return headers, variables


def codex_headers(headers: dict[str, str]) -> dict[str, Any]:
    """Headers as Codex writes them: a bearer token's variable, variables by header, literal headers."""
    found: dict[str, Any] = {}
    bearer = re.fullmatch(r"Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}", headers.get("Authorization", ""))
    if bearer:
        found["bearer_token_env_var"] = bearer.group(1)
    literal = {
        name: value
        for name, value in headers.items()
        if not REFERENCE.fullmatch(value) and not (bearer and name == "Authorization")
    }
    variables = {name: match.group(1) for name, value in headers.items() if (match := REFERENCE.fullmatch(value))}
    if literal:
        found["http_headers"] = literal
    if variables:
        found["env_http_headers"] = variables
    return found
