"""Where the proxy's upstream is, and how to reach it without leaking a secret.

An :class:`Upstream` is either a command (a stdio server the proxy starts) or a URL (a remote
server over streamable HTTP or HTTP+SSE) with headers. Header values may hold ``${VAR}``,
read from the environment the caller passes in (the CLI passes ``os.environ``), so a token
stays out of the client's configuration file. What is shown of an upstream (:attr:`name`, in
every message and failure-log line) is the command, or the URL without its user, password,
query and fragment; header values never appear.

No SDK here: parsing, expansion and redaction are plain functions, tested on their own.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pflow_structure.errors import ParameterError

TRANSPORTS = ("streamable-http", "sse")
DEFAULT_TIMEOUT = 30.0
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
# How httpx, anyio and the OS word a failed connection (Linux, macOS and Windows spellings).
_UNRESOLVED = re.compile(
    r"Name or service not known|nodename nor servname|name resolution|getaddrinfo failed|No address associated"
    r"|Errno -[235]\b|Errno 11001\b", re.IGNORECASE,
)  # fmt: skip
_REFUSED = re.compile(r"All connection attempts failed|Connection refused|Errno 111\b|Errno 61\b", re.IGNORECASE)
_TLS = re.compile(r"\bSSL\b|\bTLS\b|certificate", re.IGNORECASE)
_BROKEN = re.compile(
    r"SSE stream ended|peer closed connection|Server disconnected|RemoteProtocolError|ReadError|Connection reset"
    r"|Connection closed",
    re.IGNORECASE,
)  # fmt: skip  (each SDK release words a stream that broke under an answer its own way)
_SLOW = re.compile(r"Timeout|timed out|in time\b|answered neither", re.IGNORECASE)


@dataclass(frozen=True)
class Upstream:
    """The server behind the proxy: a stdio ``command``, or a ``url`` with ``transport`` and headers."""

    command: tuple[str, ...] = ()
    url: str | None = None
    transport: str = "streamable-http"
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # values may be secrets
    timeout: float = DEFAULT_TIMEOUT
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # a stdio server's own variables (a gateway's)
    fault: str | None = None  # a gateway's entry that cannot be used as written: why, and the fix (never started)

    @property
    def remote(self) -> bool:
        return self.url is not None

    @property
    def name(self) -> str:
        """What messages call it: the command line, or the URL without credentials."""
        return redact_url(self.url) if self.url is not None else shlex.join(self.command)

    @property
    def header_names(self) -> list[str]:
        return sorted(self.headers)


def redact_url(url: str) -> str:
    """``url`` without user, password, query and fragment: a token passed there stays out of logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparsable URL>"
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def check_url(url: str) -> str:
    """The URL, or a ParameterError saying what a usable one looks like."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ParameterError(
            f"--url {redact_url(url)!s} is not an http(s) URL: give the server's MCP endpoint, "
            "e.g. --url https://mcp.example.com/mcp (or .../sse with --transport sse)"
        )
    return url


def parse_headers(specs: Iterable[str]) -> dict[str, str]:
    """``['Authorization: Bearer ${TOKEN}', ...]`` as a dict, values still unexpanded."""
    headers: dict[str, str] = {}
    for spec in specs:
        name, colon, value = spec.partition(":")
        name = name.strip()
        if not colon or not _HEADER_NAME.fullmatch(name):
            shown = name[:40] if _HEADER_NAME.fullmatch(name) else "…"
            raise ParameterError(
                f"--header {shown!r}… is not 'Name: value': write it as --header 'Authorization: Bearer ${{TOKEN}}'"
            )
        headers[name] = value.strip()
    return headers


def expand(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Every ``${VAR}`` replaced from ``environ``; a ParameterError naming each missing variable.

    The error names variables and headers, never a value. ``$$`` is not special: a literal
    ``${`` cannot be written (header values that need one are rare enough).
    """
    found = substitute(headers, environ, "--header")
    for name, expanded in found.items():
        if "\r" in expanded or "\n" in expanded:
            raise ParameterError(f"header {name} holds a line break after expanding its variables; remove it")
    return found


def substitute(values: Mapping[str, str], environ: Mapping[str, str], used_in: str) -> dict[str, str]:
    """Every ``${VAR}`` in ``values`` replaced from ``environ``; a ParameterError naming each missing
    variable (and ``used_in``, where it was written), never a value."""
    missing = sorted({name for value in values.values() for name in _VARIABLE.findall(value) if name not in environ})
    if missing:
        which = ", ".join(missing)
        raise ParameterError(
            f"environment variable {which} is not set (used in {used_in}). Set it in the environment the "
            'MCP client starts the proxy with, e.g. "env": {"' + missing[0] + '": "..."} in its configuration'
        )
    return {name: _VARIABLE.sub(lambda match: environ[match.group(1)], value) for name, value in values.items()}


def read_config(path: Path) -> dict[str, Any]:
    """``{"url": ..., "transport": ..., "headers": {...}, "timeout": ...}`` from a JSON file.

    The shape MCP clients use for a remote server (``"type": "http"`` or ``"sse"`` is read as
    the transport), so an entry can be moved from a client's configuration as it is.
    """
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ParameterError(f"cannot read --config {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ParameterError(f"--config {path} is not JSON: {exc}") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("url"), str):
        raise ParameterError(f'--config {path} needs an object with a "url", e.g. {{"url": "https://host/mcp"}}')
    headers = loaded.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise ParameterError(f'"headers" in --config {path} must map names to strings')
    transport = loaded.get("transport") or {"sse": "sse"}.get(str(loaded.get("type")), "streamable-http")
    if transport not in TRANSPORTS:
        raise ParameterError(f'"transport" in --config {path} must be one of {", ".join(TRANSPORTS)}')
    timeout = loaded.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ParameterError(f'"timeout" in --config {path} must be a number of seconds above 0')
    return {"url": loaded["url"], "transport": transport, "headers": headers, "timeout": float(timeout)}


def auth_message(url: str, status: int, header_names: list[str]) -> str:
    """What a 401 or 403 from ``url`` means and what to pass; names headers, never their values."""
    shown = redact_url(url)
    if status == 403:
        what = "refused access (HTTP 403 Forbidden): the credentials were accepted but do not allow this"
        fix = "use a token with the scopes this server needs"
    else:
        what = "asked for credentials (HTTP 401 Unauthorized)"
        fix = "pass a valid token"
    sent = f"the proxy sent the header(s) {', '.join(header_names)}" if header_names else "the proxy sent no header"
    return (
        f"the MCP server at {shown} {what}; {sent}. Fix: {fix}, e.g. "
        "--header 'Authorization: Bearer ${TOKEN}' with TOKEN set in the proxy's environment "
        "(OAuth-only servers: get a token from the vendor's settings page, see the README's Remote servers)"
    )


def diagnose(
    url: str, transport: str, error: str, status: int | None, *, in_session: bool = False
) -> tuple[str, str | None]:
    """Why a connection to ``url`` failed, in a person's words, and what to check (None when there
    is nothing specific to say). ``error`` is the failure in one line (an exception's type and
    words), ``status`` the last HTTP error status the server answered (401 and 403 are said
    elsewhere: :func:`auth_message`); ``in_session``: a session that worked was lost."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        where = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    except ValueError:
        where = host
    if _UNRESOLVED.search(error):
        return f"the host name {host} does not resolve ({error})", "the host name in --url (a typo? VPN or DNS?)"
    if _REFUSED.search(error):
        return (
            f"nothing accepts connections at {where}",
            "is the server running, and listening on that host and port? Is the port in --url right?",
        )
    if _TLS.search(error):
        return (
            f"the TLS handshake with {where} failed ({re.sub(r' [(]_ssl[.]c:[0-9]+[)]', '', error)})",
            "http:// or https:// in --url (a server on this machine usually speaks plain http://), and whether "
            "this machine trusts the server's certificate",
        )
    if _BROKEN.search(error):
        return "the server closed the connection before it answered", None
    if status is not None and status >= 400:
        if in_session and status in (400, 404):  # what servers answer for a session id they do not know
            return f"the server answered HTTP {status} for the session: it restarted, or the session expired", None
        return _status(status, transport)
    if _SLOW.search(error):
        return error, (
            "is the server up and reachable from here? If it is only slow, raise --timeout (--start-timeout for "
            "the handshake)"
        )
    return error, None


def _status(status: int, transport: str) -> tuple[str, str]:
    try:
        what = f"it answered HTTP {status} ({HTTPStatus(status).phrase})"
    except ValueError:
        what = f"it answered HTTP {status}"
    if status >= 500 and status != 501:
        return what, "the server's own logs or status page: it failed, or a gateway in front of it could not reach it"
    if transport == "sse":
        return what, (
            "that --url is the server's event-stream endpoint (often .../sse); a server that speaks streamable "
            "HTTP needs its endpoint (often .../mcp) without --transport sse"
        )
    return what, (
        "that --url is the server's MCP endpoint (often .../mcp); a server that speaks only the older HTTP+SSE "
        "transport needs --transport sse and its event-stream URL (often .../sse)"
    )
