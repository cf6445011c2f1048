"""``pflow-structure proxy``: any MCP server, answering structure first, transparent otherwise.

The proxy relays JSON-RPC messages between its client (on its own stdin/stdout) and the
server behind it (:mod:`pflow_structure.mcp.proxy.downstream`: a command over stdio, or a URL over
streamable HTTP or HTTP+SSE; or every server of a client configuration, :mod:`.gateway`). It shapes
three things and passes everything else on as it is, both ways:

- ``initialize``: the client's own parameters (capabilities included) go to the server, whose
  answer comes back with our name, instructions and the ``tools`` capability added;
- ``tools/list``: the server's tools (declared output schemas removed: a structure answer would
  not match them) plus ``read_fields`` and ``edit_fields``, in full or, with ``--tools compact|light``,
  shorter and with ``describe_tools`` and ``search_tools`` (:mod:`.listing`, :mod:`.toollist`);
- ``tools/call`` (:mod:`.calls`): each result goes through :func:`pflow_structure.mcp.proxy.shaping.shape_result`
  (small ones as they are or compact, large ones cached and answered with an execution id and
  their structure); ``read_fields`` and ``edit_fields`` are answered here, and ``${exec-ID:PATH}``
  references in the arguments are replaced by cached values before the server sees the call.

Everything else passes through (progress, cancellations with their ids translated, logging,
resource updates, list changes, the server's sampling, roots and elicitation requests), as each
peer's declared capabilities decide. On ``tools/list_changed`` the proxy lists the tools again
(to keep its read tool's name free), then tells the client.

Never worse than no proxy: a failure while shaping a result answers with the result unchanged
and appends a line to the failure log. A server that exits or drops its session is reported
as a tool error naming it, and reached again on the next request.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import TYPE_CHECKING, Any

import anyio

from pflow_structure.mcp.proxy.calls import ToolCalls, rpc_result
from pflow_structure.mcp.proxy.downstream import DEFAULT_START_TIMEOUT, Downstream, DownstreamError, Session
from pflow_structure.mcp.proxy.gateway import Gateway
from pflow_structure.mcp.proxy.remote import Upstream
from pflow_structure.mcp.proxy.repeats import Repeats
from pflow_structure.mcp.proxy.shaping import DEFAULT_BUDGET, tool_schemas
from pflow_structure.mcp.proxy.spill import close_message, plain_message, spilled_texts
from pflow_structure.mcp.proxy.toollist import listed_tools, our_tools, proxied_tool

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

__all__ = ["DEFAULT_START_TIMEOUT", "DownstreamError", "Proxy"]  # run and serve: mcp/proxy/run.py

INTERNAL_ERROR = -32603
CLIENT_LEFT = "the client disconnected"  # the answer to what the server asks a client that has left

INSTRUCTIONS = (
    "Answers from this server come through pflow-structure {version}: a result too large to show comes back as an "
    "execution_id and its structure (template paths such as result[0].name with types and counts); call "
    "{read_tool} with that execution_id and only the paths you need. Any tool also takes _want (plain words for "
    "the fields you need: their values come back, and a short map), _fields (paths you know already: their "
    "values come back in the same call, the rest stays cached) and _jq (a jq expression: its result comes back "
    "instead, for counting, sorting and grouping)."
)
SHORT_LIST = (
    "The tool list is short: {describe} gives the full definition of the tools you name, {search} finds tools for a "
    "few words; any listed tool can be called at once."
)


def _error(request_id: Any, message: str, code: int = INTERNAL_ERROR) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class Proxy(ToolCalls):
    """The relay: the client's messages to the server and back, shaping what it shapes."""

    def __init__(
        self,
        upstream: Upstream | dict[str, Upstream],
        settings: Settings | None,
        group: Any,
        *,
        budget: int = DEFAULT_BUDGET,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        tools: str = "full",
        separator: str = ".",
    ) -> None:
        self._settings = settings
        self.start_listing(tools)
        self.budget = budget
        self.group = group
        self.downstream: Any = (  # many servers (--config CLIENT_CONFIG) behind one: mcp/proxy/gateway.py
            Gateway(upstream, group, self._from_downstream, start_timeout=start_timeout, separator=separator)
            if isinstance(upstream, dict)
            else Downstream(upstream, group, self._from_downstream, start_timeout=start_timeout)
        )
        self.schemas: dict[str, Any] = {}  # input schema by tool name, for arguments that hold references
        self.shaped: list[str] = []  # kinds of the answers given, for tests and benchmarks
        self.repeats = Repeats()  # the last result of each call this session (ids and digests)
        self.to_client: Any = None
        self.files_to_client = True  # the client's writer writes a text left in a file from it (stdio.py)
        self.initialized = False
        self._forwarded: dict[Any, tuple[Session, int]] = {}  # client's request id -> where it went
        self._asked: dict[int, tuple[Session, Any]] = {}  # our id towards the client -> the server's request
        self._ask_ids = itertools.count(1)
        self._scopes: dict[Any, anyio.CancelScope] = {}  # client's request id -> its handler's scope
        self._in_flight = 0  # client requests not yet answered
        self._answered = anyio.Event()  # set each time one is
        self.client_left = False  # the client's input ended: what the server asks it gets an error
        self.start_failure: DownstreamError | None = None  # why initialize failed (the proxy then exits 1)
        self._reading = anyio.CancelScope()

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from pflow_structure.settings import Settings

            self._settings = Settings.from_env()
        return self._settings

    def session_settings(self) -> Settings:
        return self.settings

    # -- the client's side ----------------------------------------------------------------------
    async def run(self, read_stream: Any, write_stream: Any) -> None:
        """Relay until the client's input ends."""
        self.to_client = write_stream
        with self._reading:  # cancelled when initialize failed: the proxy leaves without waiting for its input
            async for message in read_stream:
                if isinstance(message, Exception):
                    continue  # a line that is not JSON-RPC: the SDK's server skips it too
                if "method" in message and "id" in message:
                    self.group.start_soon(self._answer, message)
                elif "method" in message:
                    await self._client_notification(message)
                elif message.get("id") is not None:
                    await self._client_answer(message)
        self.client_left = True
        for ask_id in list(self._asked):  # the server's questions the client can no longer answer
            await self._client_answer(_error(ask_id, CLIENT_LEFT))

    async def finish(self, seconds: float) -> None:
        """Wait until every request the client sent is answered, for at most ``seconds``."""
        with anyio.move_on_after(seconds):
            while self._in_flight:
                self._answered = anyio.Event()
                await self._answered.wait()

    async def send_client(self, message: dict[str, Any]) -> None:
        if not self.files_to_client and spilled_texts(message):  # the SDK's streams: a text in a file read back
            plain = await anyio.to_thread.run_sync(plain_message, message)
            close_message(message)
            message = plain
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # the client left
            await self.to_client.send(message)

    async def _answer(self, request: dict[str, Any]) -> None:
        handlers = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
        }
        handler = handlers.get(request["method"], self._forward)
        answer: dict[str, Any] | None = None
        self._in_flight += 1
        try:
            with anyio.CancelScope() as scope:  # cancelled when the client cancels the request
                self._scopes[request["id"]] = scope
                try:
                    answer = await handler(request)
                except DownstreamError as exc:
                    answer = _error(request["id"], str(exc))
                    if request["method"] == "initialize":  # no session can follow: answer, then leave (exit 1)
                        self.start_failure = exc
                finally:
                    self._forwarded.pop(request["id"], None)
                    self._scopes.pop(request["id"], None)
            if answer is not None:  # none for a cancelled request, as the protocol asks
                await self.send_client(answer)
            if self.start_failure is not None:
                self._reading.cancel()
        finally:
            self._in_flight -= 1
            self._answered.set()

    async def _client_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "notifications/initialized":
            return  # the server got its own right after initialize (and again after each reconnect)
        if method == "notifications/cancelled":
            params = dict(message.get("params") or {})
            target = self._forwarded.get(params.get("requestId"))
            scope = self._scopes.get(params.get("requestId"))
            if scope is not None:
                scope.cancel()  # no answer goes out for it
            if target is not None:  # else ours (read_fields), or already answered
                session, request_id = target
                await self.downstream.send(session, {**message, "params": {**params, "requestId": request_id}})
            return
        current = self.downstream.current()
        if current is not None:  # progress for a request of the server's, roots/list_changed, ...
            await self.downstream.send(current, message)

    async def _client_answer(self, message: dict[str, Any]) -> None:
        """The client's answer to a request the server sent it (sampling, elicitation, roots)."""
        target = self._asked.pop(message["id"], None)
        if target is not None:
            session, request_id = target
            await self.downstream.send(session, {**message, "id": request_id})

    # -- the server's side ----------------------------------------------------------------------
    async def _from_downstream(self, message: dict[str, Any], session: Session) -> None:
        """A message from the server that is not an answer to us; called in its read loop, so
        anything that needs another answer from the server runs in a task of its own."""
        method = message.get("method")
        if method is None:
            return  # an answer to a request that is no longer waiting
        if "id" in message and self.client_left:
            await self.downstream.send(session, _error(message["id"], CLIENT_LEFT))
        elif "id" in message:
            ask_id = next(self._ask_ids)
            self._asked[ask_id] = (session, message["id"])
            await self.send_client({**message, "id": ask_id})
        elif method == "notifications/tools/list_changed":
            self.group.start_soon(self._tools_changed, message)
        elif method == "notifications/cancelled":
            params = dict(message.get("params") or {})
            for ask_id, (asked_session, request_id) in list(self._asked.items()):
                if asked_session is session and request_id == params.get("requestId"):
                    del self._asked[ask_id]
                    await self.send_client({**message, "params": {**params, "requestId": ask_id}})
        else:
            await self.send_client(message)

    async def _tools_changed(self, message: dict[str, Any]) -> None:
        self.names_known = False
        self.catalog = None
        with contextlib.suppress(DownstreamError):  # else decided on the next listing
            await self.choose_names()
        await self.send_client(message)

    # -- requests -------------------------------------------------------------------------------
    async def _initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        from pflow_structure import __version__
        from pflow_structure.service.clients import session_settings

        self.downstream.init_params = request.get("params") or {}
        # The budget of this session: what the client keeps of a result (clientInfo names it), unless set.
        self._settings = session_settings(self.settings, self.downstream.init_params.get("clientInfo"))
        await self.downstream.session()
        if not self.initialized:  # now the server has started: load what a first answer needs
            self.group.start_soon(_warm_up)
        self.initialized = True
        result = dict(self.downstream.init_result)
        result["capabilities"] = {"tools": {}, **(result.get("capabilities") or {})}
        # serverInfo stays the server's own (name, title, version): clients show it and key settings by it;
        # that pflow-structure answers in front of it is said in the instructions.
        parts: tuple[Any, ...] = (
            result.get("instructions"),
            INSTRUCTIONS.format(read_tool=self.read_tool, version=__version__),
        )
        if self.tools_mode != "full":
            parts += (SHORT_LIST.format(describe=self.describe_tool, search=self.search_tool),)
        result["instructions"] = "\n\n".join(part for part in parts if part)
        return rpc_result(request["id"], result)

    async def _ping(self, request: dict[str, Any]) -> dict[str, Any]:
        return rpc_result(request["id"], {})

    async def _forward(self, request: dict[str, Any], *, spilled: bool = False) -> dict[str, Any]:
        """The server's answer under the client's id; ``spilled``: a large text may stay in its file."""

        def sent(request_id: int, session: Session) -> None:
            self._forwarded[request["id"]] = (session, request_id)

        answer = await self.downstream.request(request["method"], request.get("params"), sent=sent)
        if not spilled:
            plain = plain_message(answer)
            close_message(answer)
            answer = plain
        return {**answer, "id": request["id"]}

    async def _list_tools(self, request: dict[str, Any]) -> dict[str, Any]:
        params = request.get("params") or {}
        if self.tools_mode != "full":  # one page: every tool, in short, then ours
            discovery = our_tools(self.describe_tool, self.search_tool)
            listed = listed_tools(self.tools_mode, await self.tool_catalog(), self.ours(), discovery)
            return rpc_result(request["id"], {"tools": listed})
        await self.downstream.session()
        pages = await self.choose_names()
        if not self.has_tools():
            listing: dict[str, Any] = {"tools": []}
        elif pages and not params.get("cursor"):
            listing = pages[0]  # just listed for the name: no second round trip
        else:
            answer = await self._forward(request)
            if "error" in answer:
                return answer
            listing = answer["result"]
        self.schemas.update(tool_schemas(listing))
        tools = [proxied_tool(tool) for tool in listing.get("tools", [])]
        return rpc_result(request["id"], {**listing, "tools": tools + ([] if params.get("cursor") else self.ours())})


async def _warm_up() -> None:
    """Load the o200k vocabulary (about a second) and the modules a first answer needs while the
    client is still connecting; a call arriving meanwhile waits for the same load, not a second one."""

    def load() -> None:
        import pflow_structure.service
        import pflow_structure.structure  # noqa: F401
        from pflow_structure.render.tokens import count_tokens

        count_tokens("")

    await anyio.to_thread.run_sync(load)
