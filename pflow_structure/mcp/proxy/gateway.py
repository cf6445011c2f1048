"""One proxy in front of many servers: ``pflow-structure proxy --config CLIENT_CONFIG``.

A :class:`Gateway` stands where the proxy's one :class:`~pflow_structure.mcp.proxy.downstream.Downstream`
stands and answers what the proxy asks of it, so everything the proxy does (shaping, the cache,
``read_fields``, references, ``_want``/``_fields``, the short tool lists and ``search_tools``) works
across servers unchanged:

- the servers start in parallel, each with the client's ``initialize``; one that cannot start is
  listed in its tools' place as ``SERVER.not_started`` (its description says why; a call tries it
  again) and the others serve on, as is an entry of the configuration that cannot be used as written
  (``Upstream.fault``: why and the fix; never started). Only when none starts is ``initialize`` refused;
- ``tools/list`` is every server's tools under its namespace, ``files.read_text_file`` (the server's
  name from the configuration, every character that is not a letter, digit, ``_`` or ``-`` as ``_``,
  and ``_2``, ``_3`` after a name already taken), so names never clash across servers;
- ``tools/call`` goes to the server of the namespace, under the tool's own name; its answer comes back
  as that server gave it. An unknown name is a tool error naming the near tools;
- a server's ``notifications/tools/list_changed`` lists that server again and tells the client; its
  other messages (logging, progress, its requests to the client) pass as they do through the proxy;
  the client's notifications go to every server;
- the gateway offers tools only: prompts and resources lists are empty, other methods are refused.

One cache for all: a ``${exec-ID:PATH}`` reference read from one server's result goes into another
server's tool like any other argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from pflow_structure.mcp.proxy.downstream import Downstream, DownstreamError, MessageHandler, Session
from pflow_structure.mcp.proxy.remote import Upstream

NOT_STARTED = "not_started"
METHOD_NOT_FOUND = -32601
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_EMPTY_LISTS = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
_EVERY: Any = object()  # what current() answers: the client's notifications go to every live server


def namespaces(names: list[str]) -> dict[str, str]:
    """Each configuration name's namespace: ``my.files`` → ``my_files``; a second ``my_files`` → ``my_files_2``."""
    found: dict[str, str] = {}
    for name in names:
        base = _NOT_A_NAME.sub("_", name).strip("_") or "server"
        namespace, number = base, 1
        while namespace in found.values():
            number += 1
            namespace = f"{base}_{number}"
        found[name] = namespace
    return found


def _answer(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "result": result}


def _tool_error(text: str) -> dict[str, Any]:
    return _answer({"content": [{"type": "text", "text": f"Error: {text}"}], "isError": True})


class Gateway:
    """Many servers behind the interface of one :class:`Downstream` (what :class:`Proxy` uses of it)."""

    def __init__(
        self,
        upstreams: Mapping[str, Upstream],
        group: Any,
        on_message: MessageHandler,
        *,
        start_timeout: float,
        separator: str = ".",
    ) -> None:
        named = namespaces(list(upstreams))
        self.separator = separator  # between a server's namespace and its tool's name
        self.on_message = on_message
        self.servers = {
            named[name]: Downstream(upstream, group, self._messages_of(named[name]), start_timeout=start_timeout)
            for name, upstream in upstreams.items()
        }
        self.timeout = max((upstream.timeout for upstream in upstreams.values()), default=30.0)
        self.init_params: dict[str, Any] | None = None
        self.init_result: dict[str, Any] = {}
        self.failures: dict[str, str] = {}  # namespace -> why it did not start
        self.listed: dict[str, list[dict[str, Any]]] = {}  # namespace -> its tools (as it names them)
        self._started = False
        self._lock = anyio.Lock()

    @property
    def name(self) -> str:
        return "gateway (" + ", ".join(self.servers) + ")"

    def prestart(self, process: Any = None) -> None:
        for downstream in self.servers.values():
            if downstream.upstream.fault is None:
                downstream.prestart()

    async def session(self) -> None:
        """Every server started (in parallel) and initialised, once; DownstreamError when none could be."""
        async with self._lock:
            if not self._started:
                async with anyio.create_task_group() as group:
                    for namespace in self.servers:
                        group.start_soon(self._start, namespace)
                self.init_result = self._merged_init()
                self._started = True
        if self.failures and len(self.failures) == len(self.servers):
            raise DownstreamError("no server of the gateway started: " + "; ".join(self._failure_lines()))

    async def _start(self, namespace: str) -> bool:
        downstream = self.servers[namespace]
        if downstream.upstream.fault is not None:  # its entry in the configuration cannot be used as written
            self.failures[namespace] = downstream.upstream.fault
            return False
        downstream.init_params = self.init_params
        try:
            await downstream.session()
        except DownstreamError as exc:
            self.failures[namespace] = str(exc)
            return False
        self.failures.pop(namespace, None)
        return True

    def _failure_lines(self) -> list[str]:
        return [f"{namespace}: {why}" for namespace, why in self.failures.items()]

    def _merged_init(self) -> dict[str, Any]:
        from pflow_structure import __version__

        started = [(name, server.init_result) for name, server in self.servers.items() if name not in self.failures]
        versions = [str(result.get("protocolVersion")) for _, result in started if result.get("protocolVersion")]
        wanted = str((self.init_params or {}).get("protocolVersion") or "")
        lines = [f"One connection to {len(self.servers)} MCP servers: each tool's name starts with its server's "
                 "(server.tool)."]  # fmt: skip
        lines += [f"{name}: {result['instructions']}" for name, result in started if result.get("instructions")]
        lines += [f"{name} did not start (see {name}{self.separator}{NOT_STARTED})." for name in self.failures]
        return {
            "protocolVersion": min(versions) if versions else wanted,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "pflow-structure-gateway", "version": __version__},
            "instructions": "\n".join(lines),
        }

    def current(self) -> Session | None:
        live = any(downstream.current() is not None for downstream in self.servers.values())
        return _EVERY if live else None

    async def send(self, session: Session, message: dict[str, Any]) -> bool:
        if session is _EVERY:
            for downstream in self.servers.values():
                current = downstream.current()
                if current is not None:
                    await downstream.send(current, message)
            return True
        return await next(iter(self.servers.values())).send(session, message)  # a write on that session alone

    async def request(
        self, method: str, params: dict[str, Any] | None, *, sent: Callable[[int, Session], None] | None = None
    ) -> dict[str, Any]:
        await self.session()
        if method == "tools/list":
            return _answer({"tools": await self._tools()})
        if method == "tools/call":
            return await self._call(dict(params or {}), sent)
        if method == "ping":
            return _answer({})
        if method in _EMPTY_LISTS:
            return _answer({_EMPTY_LISTS[method]: []})
        message = f"the gateway offers its servers' tools only: {method} is not passed on"
        return {"jsonrpc": "2.0", "id": 0, "error": {"code": METHOD_NOT_FOUND, "message": message}}

    async def _tools(self) -> list[dict[str, Any]]:
        async def list_one(namespace: str) -> None:
            if namespace not in self.failures and namespace not in self.listed:
                try:
                    self.listed[namespace] = await self._list(self.servers[namespace])
                except DownstreamError as exc:
                    self.failures[namespace] = str(exc)

        async with anyio.create_task_group() as group:
            for namespace in self.servers:
                group.start_soon(list_one, namespace)
        tools: list[dict[str, Any]] = []
        for namespace in self.servers:
            if namespace in self.failures:
                tools.append(self._not_started(namespace))
                continue
            prefix = namespace + self.separator
            tools += [{**tool, "name": f"{prefix}{tool.get('name')}"} for tool in self.listed.get(namespace, [])]
        return tools

    async def _list(self, downstream: Downstream) -> list[dict[str, Any]]:
        if "tools" not in (downstream.init_result.get("capabilities") or {}):
            return []
        tools: list[dict[str, Any]] = []
        cursor = None
        for _ in range(100):
            answer = await downstream.request("tools/list", {"cursor": cursor} if cursor else None)
            if "error" in answer:
                break
            tools += [tool for tool in answer["result"].get("tools", []) if isinstance(tool, dict)]
            cursor = answer["result"].get("nextCursor")
            if not cursor:
                break
        return tools

    def _not_started(self, namespace: str) -> dict[str, Any]:
        why = self.failures[namespace]
        again = "" if self.servers[namespace].upstream.fault else " Call this to try again."  # a fault stays
        description = f"Server {namespace} did not start, so its tools are missing: {why}{again}"
        from pflow_structure.mcp.proxy.toollist import WHOLE

        name = f"{namespace}{self.separator}{NOT_STARTED}"
        tool = {"name": name, "description": description, "inputSchema": {"type": "object"}}
        return {**tool, "_meta": {WHOLE: True}}

    async def _call(self, params: dict[str, Any], sent: Callable[[int, Session], None] | None) -> dict[str, Any]:
        name = str(params.get("name"))
        # the longest namespace the name starts with: with "_" as the separator, "my_files_x" is my_files's x
        namespace = max(
            (known for known in self.servers if name.startswith(known + self.separator)), key=len, default=""
        )
        tool = name[len(namespace) + len(self.separator) :] if namespace else ""
        downstream = self.servers.get(namespace)
        if namespace and namespace not in self.listed and namespace not in self.failures:
            await self._tools()  # listed once: a name the server does not have is answered here, with near names
        listed = self.listed.get(namespace)
        if downstream is None or not tool or (listed is not None and tool not in {t.get("name") for t in listed}):
            from pflow_structure.mcp.proxy.toollist import near_names

            near = near_names(name, [str(known["name"]) for known in await self._tools()])
            servers = ", ".join(self.servers)
            hint = f"; near: {', '.join(near)}" if near else f"; tool names start with a server's: {servers}"
            return _tool_error(f"no tool named {name[:80]}{hint}")
        if namespace in self.failures and tool == NOT_STARTED:
            return await self._restart(namespace)
        try:
            return await downstream.request("tools/call", {**params, "name": tool}, sent=sent)
        except DownstreamError as exc:
            raise DownstreamError(f"{namespace}: {exc}") from None

    async def _restart(self, namespace: str) -> dict[str, Any]:
        if not await self._start(namespace):
            raise DownstreamError(f"{namespace} did not start again: {self.failures[namespace]}")
        self.listed.pop(namespace, None)
        current = self.servers[namespace].current()
        if current is not None:  # the client lists again, now with its tools
            await self.on_message({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, current)
        text = f"{namespace} started: list the tools again for its tools"
        return _answer({"content": [{"type": "text", "text": text}], "isError": False})

    def _messages_of(self, namespace: str) -> MessageHandler:
        async def relay(message: dict[str, Any], session: Session) -> None:
            if message.get("method") == "notifications/tools/list_changed":
                self.listed.pop(namespace, None)  # listed again when the proxy asks
            await self.on_message(message, session)

        return relay

    async def failed_start(self, wait: float) -> DownstreamError | None:
        return None  # each server's failure is reported in its tools' place

    async def close(self) -> None:
        async with anyio.create_task_group() as group:
            for downstream in self.servers.values():
                group.start_soon(downstream.close)
