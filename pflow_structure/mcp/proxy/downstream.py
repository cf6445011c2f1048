"""The proxy's client side: one session at a time with the server behind it, over any transport.

A :class:`Downstream` speaks JSON-RPC messages (plain dicts) with the upstream server: a
command started over stdio, or a URL over streamable HTTP or HTTP+SSE. It sends requests
under ids of its own and hands every other incoming message (notifications, the server's own
requests such as ``sampling/createMessage``) to the proxy's ``on_message``.

A session that ends (the process exited, the connection dropped, the server forgot the
session id) fails the requests still waiting with :class:`DownstreamError`, whose message
names the command or the URL (never a header value) and what to check; the next request opens a
new session and repeats the client's ``initialize`` first. Answers written before the end still
arrive: the session reads its messages in order, so an answer is delivered before the end is noticed.

A remote server that has said nothing for a few seconds while requests wait on it is sent a
``ping`` (the specification's liveness check): the SDK's HTTP clients do not always report a
connection that broke under an answer (mcp 1.x drops a POST's event stream that ends early),
so without it a call in flight when the server died would wait forever. A ping that fails, or
that goes unanswered for the network timeout, ends the session.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from pflow_structure.mcp.proxy.remote import Upstream, auth_message, diagnose

DEFAULT_START_TIMEOUT = 60.0
QUIET = 5.0  # seconds a remote server may say nothing while requests wait, before it is pinged
SETTLE_WAIT = 2.0  # seconds to let a failed transport record why, before saying it
CONNECTION_CLOSED = -32000
# Errors the SDK's HTTP transports make up for a failed exchange (the server never said them).
_TRANSPORT_ERRORS = ("Session terminated", "Server returned an error response", "SSE stream", "Connection closed")

MessageHandler = Callable[[dict[str, Any], "Session"], Awaitable[None]]


class DownstreamError(Exception):
    """The upstream server could not be reached, or its session ended; the message names it."""


class Session:
    """One run of the transport, owned by one task (see :meth:`Downstream._own`)."""

    def __init__(self) -> None:
        self.write: Any = None
        self.opened = anyio.Event()  # the transport is up, or failed to come up (then ``error``)
        self.ended = anyio.Event()  # no new request gets this session
        self.closed = anyio.Event()  # the transport is torn down
        self.ready = False  # the handshake is done
        self.error: BaseException | None = None
        self.reason: str | None = None  # why an HTTP exchange failed, in the SDK's words
        self.active = 0.0  # when a message last came in or a request went out (anyio's clock)
        self.waiting: dict[int, list[Any]] = {}  # request id -> [event, answer or None]

    def end(self) -> None:
        self.ended.set()
        for slot in self.waiting.values():
            slot[0].set()


class Downstream:
    """The upstream server: connected on first use, connected again after its session ends."""

    def __init__(self, upstream: Upstream, group: Any, on_message: MessageHandler, *, start_timeout: float) -> None:
        self.upstream = upstream
        self.group = group
        self.on_message = on_message
        self.start_timeout = start_timeout
        self.init_params: dict[str, Any] | None = None  # the client's initialize, repeated for each session
        self.init_result: dict[str, Any] = {}
        self.starts = 0
        self.status: int | None = None  # the last HTTP error status seen (401, 403, 404, 5xx)
        self._session: Session | None = None
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)

    @property
    def name(self) -> str:
        return self.upstream.name

    def prestart(self, process: Any = None) -> None:
        """Start the process (or connect) now, so it starts while the client is still connecting;
        ``process``: the command, already started (``stdio.start``)."""
        if self._session is None:
            self._session = self._launch(process)

    async def session(self) -> Session:
        """The live, initialised session; DownstreamError when it cannot be had."""
        async with self._lock:
            if self._session is None or self._session.ended.is_set():
                self._session = self._launch()
            session = self._session
            if not session.ready:
                await self._handshake(session)
            return session

    def current(self) -> Session | None:
        """The session in use, if it is alive (notifications never start one)."""
        session = self._session
        return session if session is not None and session.ready and not session.ended.is_set() else None

    async def request(
        self, method: str, params: dict[str, Any] | None, *, sent: Callable[[int, Session], None] | None = None
    ) -> dict[str, Any]:
        """Send a request and return the answer message (``result`` or ``error``)."""
        session = await self.session()
        return await self.request_on(session, method, params, sent=sent)

    async def request_on(
        self,
        session: Session,
        method: str,
        params: dict[str, Any] | None,
        *,
        sent: Callable[[int, Session], None] | None = None,
    ) -> dict[str, Any]:
        request_id = next(self._ids)
        slot: list[Any] = [anyio.Event(), None]
        session.waiting[request_id] = slot
        try:
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            if await self.send(session, message):  # else the session has ended: said below
                session.active = anyio.current_time()
                if sent is not None:
                    sent(request_id, session)
                await slot[0].wait()
        finally:
            session.waiting.pop(request_id, None)
        answer: dict[str, Any] | None = slot[1]
        if answer is None:
            await self._settle(session)
            raise self._lost(session)
        if self.upstream.remote and self._made_up(answer):
            session.reason = str(answer["error"].get("message"))
            session.end()  # the server restarted or forgot us: the next request opens a new session
            raise self._lost(session, session.reason)
        return answer

    async def send(self, session: Session, message: dict[str, Any]) -> bool:
        """Write one message; False when the session has ended."""
        if session.ended.is_set() or session.write is None:
            return False
        try:
            await session.write.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            session.end()
            return False
        return True

    async def failed_start(self, wait: float) -> DownstreamError | None:
        """For a client that left before ``initialize``: whether a started command failed (it
        exited within ``wait`` seconds, or never started). A remote server is not asked."""
        session = self._session
        if session is None or self.upstream.remote:
            return None
        with anyio.move_on_after(wait):
            await session.ended.wait()
        return self._start_failure(session) if session.ended.is_set() else None

    async def close(self) -> None:
        session = self._session
        if session is not None:
            session.end()
            with anyio.move_on_after(10):
                await session.closed.wait()

    # -- one session ------------------------------------------------------------------------
    def _launch(self, process: Any = None) -> Session:
        session = Session()
        self.starts += 1
        self.group.start_soon(self._own, session, process)
        return session

    async def _own(self, session: Session, process: Any = None) -> None:
        """Enter the transport, read until it ends or the session is ended, then leave it."""
        try:
            async with self._transport(process) as (read_stream, write_stream):
                session.write = write_stream
                session.active = anyio.current_time()
                session.opened.set()
                async with anyio.create_task_group() as group:
                    group.start_soon(self._read, session, read_stream)
                    if self.upstream.remote:
                        group.start_soon(self._watch, session)
                    await session.ended.wait()
                    group.cancel_scope.cancel()
        except Exception as exc:  # the transport failed: the waiting requests learn it from ``error``
            session.error = exc
        finally:
            session.opened.set()
            session.end()
            session.closed.set()

    def _transport(self, process: Any = None) -> Any:
        upstream = self.upstream
        if upstream.url is None:
            from pflow_structure.mcp.proxy.stdio import spawn

            return spawn(list(upstream.command), process, dict(upstream.env))
        from pflow_structure.mcp.compat import open_http

        async def seen(response: Any) -> None:
            if response.status_code >= 400:
                self.status = response.status_code
            elif response.status_code < 300:
                self.status = None  # the latest exchange worked (credentials included)

        return open_http(upstream.url, upstream.transport, dict(upstream.headers), upstream.timeout, seen)

    async def _read(self, session: Session, read_stream: Any) -> None:
        try:
            async for item in read_stream:
                session.active = anyio.current_time()
                if isinstance(item, Exception):
                    if self.upstream.remote:  # an HTTP failure: this session is gone
                        session.error = item
                        break
                    continue  # a line on stdout that is not JSON-RPC: the SDK's client skips it too
                message: dict[str, Any] = item
                slot = session.waiting.get(message.get("id")) if "method" not in message else None  # type: ignore[arg-type]
                if slot is not None:
                    slot[1] = message
                    slot[0].set()
                else:
                    await self.on_message(message, session)
        finally:
            session.end()

    async def _handshake(self, session: Session) -> None:
        """``initialize`` with the client's own parameters, then ``notifications/initialized``."""
        if self.init_params is None:
            raise DownstreamError("the client has not sent initialize yet")
        try:
            with anyio.fail_after(self.start_timeout):
                await session.opened.wait()
                if session.error is not None or session.ended.is_set():
                    raise self._start_failure(session)
                answer = await self.request_on(session, "initialize", self.init_params)
        except TimeoutError:
            session.end()
            await self._settle(session)
            slow = "it did not answer the MCP handshake in time"  # a remote one: diagnose() says what to check
            if not self.upstream.remote:
                slow = (
                    f"it did not answer the MCP handshake within {self.start_timeout:g} s (slow? raise --start-timeout)"
                )
            raise self._start_failure(session, slow) from None
        except DownstreamError:
            session.end()
            await self._settle(session)
            raise self._start_failure(session) from None
        if "error" in answer:
            session.end()
            raise self._start_failure(session, f"initialize failed: {answer['error'].get('message')}")
        self.init_result = answer.get("result", {})
        await self.send(session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        session.ready = True

    async def _watch(self, session: Session) -> None:
        """Ping the server whenever it has said nothing for ``QUIET`` seconds (or the network
        timeout, if shorter) while requests wait; runs as long as the session."""
        quiet = min(QUIET, self.upstream.timeout)
        while True:
            due = session.active + quiet - anyio.current_time()
            if due <= 0 and session.ready and session.waiting:
                if not await self._alive(session):
                    return
                continue
            await anyio.sleep(due if due > 0 else quiet)

    async def _alive(self, session: Session) -> bool:
        """Whether the server answers a ping within the network timeout; if not, the session ends.
        Any answer will do (a server without ``ping`` says so, and is alive)."""
        try:
            with anyio.fail_after(self.upstream.timeout):
                await self.request_on(session, "ping", None)
        except TimeoutError:
            session.reason = f"it answered neither the call nor a ping for {self.upstream.timeout:g} s"
            session.end()
            return False
        except DownstreamError:  # the session ended; the requests waiting on it say why
            return False
        return True

    async def _settle(self, session: Session) -> None:
        """Give a remote transport that failed a moment to record why (its error arrives after the
        read loop has ended), so that the message can say it."""
        if self.upstream.remote:
            with anyio.move_on_after(SETTLE_WAIT):
                await session.closed.wait()

    # -- what to say --------------------------------------------------------------------------
    def _auth(self) -> str | None:
        if self.upstream.url is not None and self.status in (401, 403):
            return auth_message(self.upstream.url, self.status, self.upstream.header_names)
        return None

    def _scrubbed(self, text: str) -> DownstreamError:
        """The error with the URL's credentials and every header value taken out (an SDK or httpx
        message may quote the request's URL)."""
        upstream = self.upstream
        if upstream.url is not None:
            text = text.replace(upstream.url, upstream.name)
        for value in upstream.headers.values():
            for secret in {value, *value.split()}:
                if len(secret) >= 4 and secret.lower() not in ("bearer", "basic", "token"):
                    text = text.replace(secret, "***")
        return DownstreamError(text)

    def _start_failure(self, session: Session, reason: str | None = None) -> DownstreamError:
        auth = self._auth()
        if auth is not None:
            return DownstreamError(auth)
        if self.upstream.remote:
            what, check = self._diagnosis(session, reason)
            check = check or (
                "is the server running, and is --url its MCP endpoint (often .../mcp), or an HTTP+SSE one "
                "(often .../sse, with --transport sse)?"
            )
            return self._scrubbed(
                f"could not connect to the MCP server at {self.name} over {self.upstream.transport}: {what}. "
                f"Check: {check}"
            )
        reason = reason or (describe(session.error) if session.error else "it exited during start-up")
        return DownstreamError(
            f"could not start the downstream MCP server `{self.name}`: {reason}. Check the command after "
            "`--` (is it installed and on PATH? does it run on its own?)"
        )

    def _lost(self, session: Session, reason: str | None = None) -> DownstreamError:
        auth = self._auth()
        if auth is not None:
            return DownstreamError(auth)
        if not self.upstream.remote:
            return DownstreamError(
                f"the downstream MCP server `{self.name}` exited; it will be started again on the next call"
            )
        what, check = self._diagnosis(session, reason, in_session=True)
        return self._scrubbed(
            f"the session with the MCP server at {self.name} was lost ({what}); "
            "the next call opens a new session" + (f". Check: {check}" if check else "")
        )

    def _diagnosis(self, session: Session, reason: str | None, *, in_session: bool = False) -> tuple[str, str | None]:
        """(what happened, what to check or None) for a remote session that failed."""
        why = reason or session.reason or (describe(session.error) if session.error else "the connection closed")
        assert self.upstream.url is not None
        return diagnose(self.upstream.url, self.upstream.transport, why, self.status, in_session=in_session)

    def _made_up(self, answer: dict[str, Any]) -> bool:
        """An error the HTTP exchange failed with (the SDK's stand-in, or an HTTP error status
        with a JSON-RPC body, as a server that forgot the session answers) rather than the tool's."""
        error = answer.get("error")
        if not isinstance(error, dict):
            return False
        if str(error.get("message", "")).startswith(_TRANSPORT_ERRORS):
            return True
        return error.get("code") == CONNECTION_CLOSED or (self.status is not None and self.status >= 400)


def _exception_group() -> Any:
    import builtins

    found = getattr(builtins, "BaseExceptionGroup", None)
    if found is None:  # Python 3.10: anyio brings the backport
        from exceptiongroup import BaseExceptionGroup as found  # type: ignore[import-not-found,no-redef,unused-ignore]
    return found


def describe(error: BaseException | None) -> str:
    """One line for an exception: the innermost of single-exception groups, its type and words."""
    group = _exception_group()
    while isinstance(error, group) and len(error.exceptions) >= 1:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return "it did not answer the MCP handshake in time"
    if error is None:
        return "unknown error"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
