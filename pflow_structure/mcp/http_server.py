"""``serve --http``: the MCP server of :mod:`pflow_structure.mcp.server` over streamable HTTP, behind an
optional bearer token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pflow_structure.mcp.server import build_server

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

LOOPBACK = ("127.0.0.1", "localhost", "::1")
KEEP_ALIVE_SECONDS = 75


def serve_http(settings: Settings | None, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp``; a bearer token is required when ``token`` is set."""
    import uvicorn

    from pflow_structure.mcp.compat import http_app

    app = http_app(build_server(settings, host=host), host)
    # Keep-alive longer than a client's idle pool (httpx: 5 s) and a load balancer's idle timeout (often
    # 60 s): with uvicorn's 5 s default, a reused connection can close under a request in flight.
    uvicorn.run(
        BearerAuth(app, token) if token else app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer TOKEN`` get 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "http":
            given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                body = b'{"error": "send Authorization: Bearer <the token in PFLOW_STRUCTURE_MCP_TOKEN>"}'
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
