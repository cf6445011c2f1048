"""The proxy's ``tools/call``: a call of the server's tool forwarded and its result shaped, or a call of
one of our own tools (``read_fields``, ``edit_fields``, ``describe_tools``, ``search_tools``) answered here
(mixed into :class:`~pflow_structure.mcp.proxy.relay.Proxy`).

On the way to the server, ``_want``, ``_fields`` and ``_jq`` are taken off the arguments
(:mod:`.selection`) and ``${exec-ID:PATH}`` references are replaced by cached values; on the way back
the result goes through :func:`~pflow_structure.mcp.proxy.shaping.shape_and_store` in a worker thread,
a repeat of the same call said once (:mod:`.repeats`). Never worse than no proxy: a failure while
shaping answers with the result unchanged and appends a line to the failure log.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import anyio

from pflow_structure.errors import ParameterError
from pflow_structure.mcp.proxy.downstream import DownstreamError
from pflow_structure.mcp.proxy.listing import Listing
from pflow_structure.mcp.proxy.selection import Selection, pop_want, take_fields
from pflow_structure.mcp.tools import EDIT_TOOL, READ_TOOL

if TYPE_CHECKING:
    from pflow_structure.mcp.proxy.repeats import Repeats
    from pflow_structure.settings import Settings


def rpc_result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class ToolCalls(Listing):
    """The tools/call half of the proxy; its state is the relay's (:class:`~.relay.Proxy` sets it)."""

    budget: int
    repeats: Repeats  # the last result of each call this session (ids and digests)
    shaped: list[str]  # kinds of the answers given, for tests and benchmarks

    if TYPE_CHECKING:

        @property
        def settings(self) -> Settings: ...

        async def _forward(self, request: dict[str, Any], *, spilled: bool = False) -> dict[str, Any]: ...

    async def _call_tool(self, request: dict[str, Any]) -> dict[str, Any]:
        from pflow_structure.mcp.compat import to_dict

        params = request.get("params") or {}
        name = params.get("name")
        arguments = dict(params.get("arguments") or {})
        ours = (READ_TOOL, f"pflow_structure_{READ_TOOL}", EDIT_TOOL, f"pflow_structure_{EDIT_TOOL}")
        if not self.names_known and name in ours:
            await self.choose_names()
        if name in (self.read_tool, self.edit_tool):
            return rpc_result(request["id"], await self._answer_ours(str(name), arguments))
        if self.tools_mode != "full" and name in (self.describe_tool, self.search_tool):
            return rpc_result(request["id"], await self.discover(str(name), arguments))
        ours_named = any(word in key for key in arguments for word in ("want", "fields", "jq"))
        if name not in self.schemas and not self.names_known and ours_named:
            with contextlib.suppress(DownstreamError):
                await self.choose_names()  # whether the tool has a _want or _fields of its own decides ours
        arguments, want = pop_want(arguments, self.schemas.get(str(name)))
        try:
            arguments, fields = take_fields(arguments, self.schemas.get(str(name)))  # _fields and _jq are ours
        except ParameterError as exc:
            return rpc_result(request["id"], _tool_error(f"Error: {exc}"))
        sent, failed = await self._resolve(str(name), arguments)  # ${exec-ID:PATH}, before the server sees it
        if failed is not None:
            return rpc_result(request["id"], to_dict(failed))
        if sent is not arguments or want is not None or fields is not None:
            request = {**request, "params": {**params, "arguments": sent}}
        try:
            answer = await self._forward(request, spilled=True)
        except DownstreamError as exc:
            self._log(str(name), len(_json_bytes(sent)), str(exc), stage="call")
            return rpc_result(request["id"], _tool_error(f"Error: {exc}"))
        return await self._shaped_answer(str(name), arguments, answer, want, fields)

    async def _shaped_answer(
        self, name: str, arguments: dict[str, Any], answer: dict[str, Any], want: str | None, fields: Selection | None
    ) -> dict[str, Any]:
        """The client's answer for the server's. A text of it left in a file (mcp/proxy/spill.py) stays there
        when the result is passed on (an error result, broken JSON): the client's writer writes it from
        the file a piece at a time and closes it (mcp/proxy/stdio.py); any other file is gone when this returns."""
        from pflow_structure.mcp.proxy.messages import check_encodes
        from pflow_structure.mcp.proxy.spill import close_message, json_size, plain_result, spilled_texts

        if "error" in answer:
            return answer
        result = answer["result"]
        reply = answer
        try:
            shaped = await anyio.to_thread.run_sync(self._shape, name, arguments, result, want, fields)
            if shaped.kind == "passed":
                reply = {**answer, "result": shaped.result}
            else:
                reply = rpc_result(answer["id"], await anyio.to_thread.run_sync(plain_result, shaped.result))
            check_encodes(reply)  # it must reach the client: it has to encode
        except Exception as exc:
            self._log(name, json_size(result, _json_bytes), exc, stage="transform")
            self.shaped.append("fallback")
            reply = answer  # as the server sent it
            return reply
        finally:
            close_message(answer, keep=spilled_texts(reply))
        self.shaped.append(shaped.kind)
        return reply

    # -- work ---------------------------------------------------------------------------------
    async def _answer_ours(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from pflow_structure.mcp.compat import to_dict
        from pflow_structure.mcp.proxy.answer_text import edit_answer
        from pflow_structure.mcp.server import answer_edit, answer_read_fields
        from pflow_structure.service.usage import record_read

        if name == self.read_tool:
            answer = await answer_read_fields(arguments, self.settings)
        else:
            answer = edit_answer(to_dict(await answer_edit(arguments, self.settings, "proxy")))
        await anyio.to_thread.run_sync(record_read, self.settings, arguments.get("execution_id"), answer)
        return answer

    async def _resolve(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """``(arguments to send, None)``, or ``(arguments, tool error)`` when a reference does not resolve;
        without a reference, the very same object. The input schema comes from the tool list (listed
        once here when the client never asked)."""
        from pflow_structure.mcp.server import resolved_or_error
        from pflow_structure.values.references import has_references

        if not has_references(arguments):
            return arguments, None
        if name not in self.schemas and not self.names_known:
            with contextlib.suppress(DownstreamError):
                await self.choose_names()  # lists every page of tools, with their input schemas
        return await resolved_or_error(arguments, self.schemas.get(name), self.settings, "proxy")

    def _shape(
        self, tool: str, arguments: dict[str, Any], result: dict[str, Any], want: str | None, fields: Selection | None
    ) -> Any:
        from pflow_structure.mcp.proxy.selection import fields_result
        from pflow_structure.mcp.proxy.shaping import Shaped, shape_and_store
        from pflow_structure.mcp.proxy.spill import plain_result
        from pflow_structure.service.usage import record_result

        if fields is not None:
            result = plain_result(result)
        selected = None if fields is None else fields_result(tool, arguments, result, fields, self.settings)
        if selected is not None:
            return Shaped(selected, "fields", 0, 0)
        # Shown inline up to the inline threshold, and never past the answer budget.
        inline = min(self.budget, self.settings.answer_budget)
        options = {
            "settings": self.settings,
            "budget": inline,
            "read_tool": self.read_tool,
            "want": want,
            "schema": self.schemas.get(tool),
        }
        shaped = self.repeats.answer(shape_and_store, tool, arguments, result, **options)  # a repeat said once
        cached = shaped.kind == "cached"
        record_result(self.settings, f"mcp:{tool}", cached=cached, raw=shaped.tokens_in, answered=shaped.tokens_out)
        return shaped

    def _log(self, tool: str, input_bytes: int, error: BaseException | str, *, stage: str) -> None:
        from pflow_structure.render.failure_log import append_failure, failure_record

        record = failure_record(tool, input_bytes, error, stage=stage, source="mcp-proxy", command=self.downstream.name)
        append_failure(self.settings.failure_log, record)


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, default=repr, ensure_ascii=False).encode("utf-8", "replace")
