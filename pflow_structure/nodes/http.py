"""The ``http`` node: one HTTP request; JSON bodies are parsed."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.nodes.base import Node, positive_seconds, require_param
from pflow_structure.nodes.shell import decode_output

_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_MAX_ERROR_BODY = 300


class HttpNode(Node):  # type: ignore[misc]
    """Send an HTTP request and capture the response.

    Interface:
    - Writes: shared["response"]: any  # Response body: parsed JSON when it is JSON, text, or bytes
    - Writes: shared["status_code"]: int  # HTTP status code
    - Writes: shared["response_headers"]: dict  # Response headers (lower-case names)
    - Params: url: str  # http:// or https:// address
    - Params: method: str  # HTTP method (optional, default: GET)
    - Params: headers: dict  # Request headers (optional)
    - Params: params: dict  # Query parameters added to the URL (optional)
    - Params: body: any  # Request body; dicts and lists are sent as JSON (optional)
    - Params: timeout: float  # Seconds to wait for the server (optional, default: 30)
    - Params: raise_for_status: bool  # Fail on a 4xx/5xx status (optional, default: true)
    - Actions: default
    """

    def prep(self, shared: dict[str, Any]) -> dict[str, Any]:
        url = str(require_param(self, "url", "http", "url=https://api.example.com/items"))
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ParameterError(f"url must start with http:// or https://, got {url[:200]!r}")
        query = _json_object(self.params.get("params"), "params", "params='{\"page\": 2}'")
        if query:
            url += ("&" if parsed.query else "?") + urllib.parse.urlencode(query, doseq=True)
        headers = {
            str(k): str(v)
            for k, v in _json_object(
                self.params.get("headers"), "headers", 'headers=\'{"Accept": "application/json"}\''
            ).items()
        }
        body = self.params.get("body")
        data: bytes | None = None
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = str(body).encode("utf-8")
        method = str(self.params.get("method") or ("POST" if data is not None else "GET")).upper()
        return {
            "url": url,
            "method": method,
            "headers": headers,
            "data": data,
            "timeout": positive_seconds(self, "timeout", 30),
            "raise_for_status": self.params.get("raise_for_status", True) not in (False, "false", 0),
            "loopback": parsed.hostname in _LOOPBACK,
        }

    def exec(self, prep_res: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            prep_res["url"], data=prep_res["data"], headers=prep_res["headers"], method=prep_res["method"]
        )
        # Loopback requests never go through a proxy from the environment.
        handlers = [urllib.request.ProxyHandler({})] if prep_res["loopback"] else []
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(request, timeout=prep_res["timeout"]) as reply:
                status, headers, raw = reply.status, dict(reply.headers.items()), reply.read()
        except urllib.error.HTTPError as exc:
            status, headers, raw = exc.code, dict(exc.headers.items()), exc.read()
        except urllib.error.URLError as exc:
            raise ConnectionError(f"{prep_res['method']} {prep_res['url'][:200]} failed: {exc.reason}") from None
        if status >= 400 and prep_res["raise_for_status"]:
            snippet = raw[:_MAX_ERROR_BODY].decode("utf-8", errors="replace")
            raise RuntimeError(
                f"HTTP {status} from {prep_res['method']} {prep_res['url'][:200]}: {snippet} "
                "(pass raise_for_status=false to keep the response)"
            )
        return {
            "response": decode_output(raw),
            "status_code": status,
            "response_headers": {k.lower(): v for k, v in headers.items()},
        }

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: dict[str, Any]) -> str:
        shared.update(exec_res)
        return "default"


def _json_object(value: Any, name: str, example: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        raise ParameterError(f"{name} must be a JSON object, got {type(value).__name__}; e.g. {example}")
    return value
