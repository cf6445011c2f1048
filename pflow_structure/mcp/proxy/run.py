"""Running ``pflow-structure proxy``: start the server behind it, relay until the client leaves.

:func:`run` is the CLI's blocking entry point (a stdio server is started before the event loop);
:func:`serve` runs one :class:`~pflow_structure.mcp.proxy.Proxy` over this process's stdin and
stdout (or given streams). When the client closes its input, the calls still in flight are
answered before the proxy exits, within the upstream's network timeout (30 s by default).
A proxy that cannot start (its server exits, cannot be reached, refuses the credentials, or does
not answer the handshake; an unset header variable) answers the client's ``initialize`` with why,
as a JSON-RPC error, and exits 1 at once, without waiting for its input to close.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from pflow_structure.errors import ParameterError, StructureError
from pflow_structure.mcp.proxy.downstream import DEFAULT_START_TIMEOUT, DownstreamError
from pflow_structure.mcp.proxy.relay import Proxy
from pflow_structure.mcp.proxy.remote import Upstream
from pflow_structure.mcp.proxy.shaping import DEFAULT_BUDGET

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

__all__ = ["run", "serve"]

LEAVING_CHECK = 2.0  # seconds to tell a command that failed from a client that left before initialize
INTERNAL_ERROR = -32603
REFUSE_WAIT = 30.0  # seconds a proxy that cannot start waits for the client's initialize, to answer why


async def serve(
    upstream: Upstream | list[str] | dict[str, Upstream],
    settings: Settings | Callable[[], Settings],
    *,
    budget: int = DEFAULT_BUDGET,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    streams: tuple[Any, Any] | None = None,
    ready: Any = None,
    process: Any = None,
    tools: str = "full",
    separator: str = ".",
) -> None:
    """Run the proxy until the client leaves (stdio, or the given server-side ``streams``).

    The server is started (or connected to) at once, so it starts while the client connects;
    its ``initialize`` waits for the client's, whose capabilities it carries."""
    if isinstance(upstream, list):
        upstream = Upstream(command=tuple(upstream))
    if isinstance(upstream, Upstream) and not upstream.remote and not upstream.command:
        raise ParameterError("no downstream command: put it after --, e.g. proxy -- npx -y some-mcp-server")
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        proxy = Proxy(
            upstream, None, group, budget=budget, start_timeout=start_timeout, tools=tools, separator=separator
        )
        proxy.downstream.prestart(process)
        await anyio.sleep(0)  # the server starts now; the rest of the set-up runs meanwhile
        try:
            proxy._settings = settings() if callable(settings) else settings
        except StructureError as exc:  # a bad setting in the environment: said at start, and to initialize
            failure = exc
            await refuse(str(exc), streams)
        else:
            if ready is not None:
                ready(proxy)
            finish_within = upstream.timeout if isinstance(upstream, Upstream) else proxy.downstream.timeout
            await _relay(proxy, streams, finish_within)
            if proxy.start_failure is not None:
                failure = proxy.start_failure
            elif not proxy.initialized:
                failure = await proxy.downstream.failed_start(LEAVING_CHECK)
        await proxy.downstream.close()
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _relay(proxy: Proxy, streams: tuple[Any, Any] | None, finish_within: float) -> None:
    """Relay until the client's input ends, then let the calls in flight be answered (for at most
    ``finish_within`` seconds) while the output is still open: a client that closes its input
    first and reads on still gets its answers."""
    proxy.files_to_client = streams is None  # our stdio writes a text left in a file from it; the SDK's do not
    async with _client(streams) as (read_stream, write_stream):
        await proxy.run(read_stream, write_stream)
        await proxy.finish(finish_within)


def _client(streams: tuple[Any, Any] | None) -> Any:
    """The client's (receive, send) message streams: this process's stdio, or the SDK's message
    streams (tests run the proxy in process this way)."""
    if streams is None:
        from pflow_structure.mcp.proxy.stdio import own_stdio

        return own_stdio()
    from pflow_structure.mcp.compat import as_dicts

    return as_dicts(*streams)


async def refuse(text: str, streams: tuple[Any, Any] | None = None) -> None:
    """For a proxy that cannot start (an unset header variable, a bad setting): answer the client's
    ``initialize`` (and any request before it) with ``text`` as a JSON-RPC error, so that the client
    shows why, not just "Connection closed". Waits at most ``REFUSE_WAIT`` seconds for it; returns at
    once when stdin is a terminal (a person, who reads the error on stderr)."""
    if streams is None and sys.stdin.isatty():
        return
    async with _client(streams) as (read_stream, write_stream):
        with anyio.move_on_after(REFUSE_WAIT):
            async for message in read_stream:
                if isinstance(message, dict) and "method" in message and "id" in message:
                    error = {"code": INTERNAL_ERROR, "message": text}
                    await write_stream.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
                    if message["method"] == "initialize":
                        return


def run(
    upstream: Upstream | list[str] | dict[str, Upstream],
    settings: Settings | Callable[[], Settings],
    *,
    budget: int,
    start_timeout: float,
    tools: str = "full",
    separator: str = ".",
) -> None:
    """Blocking entry point for the CLI: a stdio server is started first, before the event loop."""
    process = None
    command = (
        upstream.command if isinstance(upstream, Upstream) else tuple(upstream) if isinstance(upstream, list) else ()
    )
    if command and not (isinstance(upstream, Upstream) and upstream.remote):
        from pflow_structure.mcp.proxy.startup import start, take

        process = take(list(command))  # started by the console entry point, before click loaded
        if process is None:
            with contextlib.suppress(OSError):  # else started again in serve, which says why it cannot
                process = start(list(command))
    if process is not None:
        from pflow_structure.mcp.proxy.stdio import track

        track(process)  # stopped on the way out, even if the event loop never reached it
    terminated = _TerminateAsInterrupt()
    failure: Exception | None = None
    try:
        anyio.run(
            lambda: serve(
                upstream,
                settings,
                budget=budget,
                start_timeout=start_timeout,
                process=process,
                tools=tools,
                separator=separator,
            )
        )
    except (DownstreamError, StructureError) as exc:  # a start-up failure, already answered to initialize
        failure = exc
        interrupted = False
    except BaseException as exc:  # Ctrl-C or SIGTERM; inside a task it comes wrapped in an exception group
        if not _interrupts_only(exc):
            raise
        print(f"pflow-structure proxy: {'terminated' if terminated.seen else 'interrupted'}", file=sys.stderr)
        interrupted = True
    else:
        interrupted = False
    finally:
        terminated.restore()
        from pflow_structure.mcp.proxy.stdio import stop_all

        stop_all()
    if interrupted:  # a thread may still block on reading stdin, which Python would wait for at exit
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(128 + (signal.SIGTERM if terminated.seen else signal.SIGINT))
    if failure is not None:
        leave(str(failure))


def _interrupts_only(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or a group (from a task group) of nothing else."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner = getattr(exc, "exceptions", None)
    return isinstance(inner, tuple) and bool(inner) and all(_interrupts_only(each) for each in inner)


def refuse_and_leave(text: str) -> NoReturn:
    """The CLI's way out for a proxy that cannot start before it runs (an unset header variable):
    the client's ``initialize`` is answered with ``text`` (:func:`refuse`), then exit 1."""
    anyio.run(refuse, text)
    leave(text)


def leave(text: str) -> NoReturn:
    """``Error: text`` on stderr and exit 1 now, as the CLI's errors do; without waiting for the
    input (a thread may still block on reading stdin, which Python would wait for at exit)."""
    print(f"Error: {text}", file=sys.stderr)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(1)


class _TerminateAsInterrupt:
    """SIGTERM (what a client sends a server that did not exit) ends the proxy as Ctrl-C does: the
    event loop stops and the server behind it is stopped too (:func:`~pflow_structure.mcp.proxy.stdio.stop_all`).
    Python's default for SIGTERM is to die at once, which left a server that ignores its closed
    stdin running without a parent."""

    def __init__(self) -> None:
        self.seen = False
        self.previous: Any = None
        with contextlib.suppress(ValueError, OSError, AttributeError):  # not the main thread, or no SIGTERM
            self.previous = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, number: int, frame: Any) -> None:
        self.seen = True
        handler = signal.getsignal(signal.SIGINT)
        runner = getattr(sys.modules.get("asyncio"), "Runner", None)  # 3.11+: asyncio.run installs its handler
        method = getattr(handler, "func", handler)  # asyncio installs functools.partial(self._on_sigint, ...)
        if callable(handler) and getattr(method, "__func__", None) is getattr(runner, "_on_sigint", object()):
            # asyncio's own (3.11+): it cancels the main task and raises KeyboardInterrupt once the loop has
            # wound down. Raised here, inside a task, the loop would log it as unhandled on its way out.
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt

    def restore(self) -> None:
        if self.previous is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signal.SIGTERM, self.previous)
