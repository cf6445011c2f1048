"""Repeats said once: the proxy remembers the last result of each tool call of its session.

An agent that polls (a build, a deployment, a queue) calls the same tool with the same arguments
again and again, and the answer is mostly what it was. :class:`Repeats` keeps, per (tool, arguments),
the execution id of the last result and a digest of it (never the result: the execution cache holds
the data), for the last :data:`MAX_CALLS` calls. When the same call (with the same ``want``, which
asks for another view) comes again:

- an identical result answers in one line, "unchanged since exec-ID", with the id that reads it
  (under 60 o200k tokens, whatever the result's size);
- a changed one answers the paths that changed and their new values
  (:func:`pflow_structure.values.changes.changed_paths`) with the new result's id, when that is
  smaller than the usual answer and within the answer budget; when most of it changed, the usual
  answer (the structure, or the small result itself).

A result small enough that "unchanged" would not be shorter is neither stored nor remembered. An
error result is answered as usual and forgets nothing. Plain dicts (no SDK types), as in
:mod:`pflow_structure.mcp.proxy.shaping`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pflow_structure.mcp.proxy.shaping import MalformedJSONError, Shaped, is_text_lines, payload, visible_tokens
from pflow_structure.mcp.proxy.spill import SpilledText, plain_result

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

MAX_CALLS = 256  # (tool, arguments) pairs remembered per session: two short strings each
WORTH_REMEMBERING = 60  # tokens: an answer this small is no longer than "unchanged since ..."
MAX_CHANGES = 50  # more changed paths than this: most changed, the usual answer says it better
UNCHANGED = "Unchanged since {execution_id}: the same result as the last {tool} call with these arguments."
CHANGED = "Changed since {old}: {count} {paths}; the whole new result is cached as {new}."
SHAPED_KINDS = ("passed", "compacted", "formatted", "cached")
_DIGEST_CHARS = 1 << 20


class Repeats:
    """The last result of each call in one session: ``(tool, arguments) digest -> (execution id, result digest)``."""

    def __init__(self, max_calls: int = MAX_CALLS) -> None:
        self.max_calls = max_calls
        self._last: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()  # calls are shaped in worker threads, several at a time

    def answer(
        self, shape: Callable[..., Shaped], tool: str, arguments: dict[str, Any], result: dict[str, Any], **options: Any
    ) -> Shaped:
        """The answer for ``result``: "unchanged", the changed paths, or the usual answer,
        ``shape(tool, arguments, result, **options)`` (``options`` hold the session's ``settings``)."""
        settings: Settings = options["settings"]
        digest = result_digest(result)
        if digest is None:
            return shape(tool, arguments, result, **options)
        key = call_key(tool, {"arguments": arguments, "want": options.get("want")})  # another want, another view
        with self._lock:
            last = self._last.get(key)
        if last is not None and last[1] == digest and _still_cached(settings, last[0]):
            self._remember(key, last[0], digest)
            return _said(UNCHANGED.format(execution_id=last[0], tool=tool), result)
        shaped = shape(tool, arguments, result, **options)
        if shaped.kind not in SHAPED_KINDS or shaped.tokens_out <= WORTH_REMEMBERING:
            return shaped
        if shaped.execution_id is not None and last is None:  # cached, and nothing to compare: the value is not parsed
            self._remember(key, shaped.execution_id, digest)
            return shaped
        result = plain_result(result)  # to compare, the value is parsed: a text left in a file is read
        value = _value(result)
        if value is None:
            return shaped
        execution_id = shaped.execution_id or _store(tool, arguments, result, value, settings)
        if execution_id is None:
            return shaped
        self._remember(key, execution_id, digest)
        if last is None:
            return shaped
        changed = _changes(last[0], execution_id, value, settings)
        if changed is None:
            return shaped
        if not changed[1]:  # the same values, written differently: as good as unchanged
            return _said(UNCHANGED.format(execution_id=last[0], tool=tool), result)
        text = changes_text(last[0], execution_id, changed[1])
        within = _counter(settings)
        if within(text) > settings.answer_budget or within(text) >= shaped.tokens_out:
            return shaped
        answer = _said(text, result)
        return answer._replace(execution_id=execution_id, kind="changed")

    def _remember(self, key: str, execution_id: str, digest: str) -> None:
        with self._lock:
            self._last[key] = (execution_id, digest)
            self._last.move_to_end(key)
            while len(self._last) > self.max_calls:
                self._last.popitem(last=False)


def call_key(tool: str, arguments: dict[str, Any]) -> str:
    """One call's key: the tool and its arguments (key order does not matter)."""
    text = json.dumps([tool, arguments], sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def result_digest(result: dict[str, Any]) -> str | None:
    """A digest of what the agent would read (text blocks as sent, other blocks and structuredContent
    as JSON); None for an error result."""
    if result.get("isError"):
        return None
    digest = hashlib.sha256()
    for block in result.get("content", []):
        if block.get("type") == "text":
            text = block.get("text", "")
            digest.update(b"text\x00")
            if isinstance(text, SpilledText):  # its file holds these very bytes
                for piece in text.utf8_pieces():
                    digest.update(piece)
            else:
                text = str(text)
                for start in range(0, len(text), _DIGEST_CHARS):  # a megabyte at a time: no copy of a large text
                    digest.update(text[start : start + _DIGEST_CHARS].encode("utf-8", "surrogatepass"))
            digest.update(b"\x00")
        else:
            digest.update(json.dumps(block, sort_keys=True, default=repr).encode("utf-8", "surrogatepass") + b"\x00")
    structured = result.get("structuredContent")
    if structured is not None:
        digest.update(json.dumps(structured, sort_keys=True, default=repr).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def changes_text(old: str, new: str, changes: list[Any]) -> str:
    """The changed answer: one line naming both ids, then ``path: new JSON value`` (or ``removed``) per change."""
    from pflow_structure.render.output_text import format_json

    paths = "path differs" if len(changes) == 1 else "paths differ"
    lines = [CHANGED.format(old=old, count=len(changes), paths=paths, new=new)]
    for change in changes:
        shown = "removed" if change.removed else format_json(change.value, compact=True)
        lines.append(f"{change.path}: {shown}")
    return "\n".join(lines)


def _said(text: str, result: dict[str, Any]) -> Shaped:
    answer: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if "_meta" in result:
        answer["_meta"] = result["_meta"]
    count = _counter(None)
    tokens_in = visible_tokens(result, _bounded(count))
    return Shaped(answer, "unchanged", tokens_in, count(text))


def _value(result: dict[str, Any]) -> Any:
    """The value the result carries (JSON, or its text as lines); None for other content."""
    try:
        found = payload(result)
    except MalformedJSONError:
        return None
    return None if found is None else found[0]


def _store(tool: str, arguments: dict[str, Any], result: dict[str, Any], value: Any, settings: Settings) -> str | None:
    """Cache a result answered inline, so that a later call can name it and compare with it; None when
    the cache cannot hold it (the answer stays as it is: remembering is never worth a failed call)."""
    from pflow_structure.errors import StructureError
    from pflow_structure.service import capture_outputs

    text = [["result"]] if is_text_lines(result, value) else []
    try:
        captured = capture_outputs(f"mcp:{tool}", arguments, {"result": value}, settings=settings, text_paths=text)
    except StructureError:
        return None
    return str(captured.result["execution_id"]) if captured.cached else None


def _still_cached(settings: Settings, execution_id: str) -> bool:
    from pflow_structure.errors import StructureError

    cache = settings.cache()
    try:
        getter = getattr(cache, "get_fields", None)
        if getter is not None:
            getter(execution_id, [])  # with an index, only the entry's head is read
        else:
            cache.get(execution_id)
    except StructureError:
        return False
    return True


def _changes(old_id: str, new_id: str, value: Any, settings: Settings) -> tuple[str, list[Any]] | None:
    """``(new id, changes)`` against the cached earlier result; None when it is gone or most changed."""
    from pflow_structure.errors import StructureError
    from pflow_structure.values.changes import changed_paths

    try:
        old = settings.cache().get(old_id).outputs
    except StructureError:
        return None
    if not isinstance(old, dict) or "result" not in old:
        return None
    changes = changed_paths(old["result"], value, "result", limit=MAX_CHANGES)
    return None if changes is None else (new_id, changes)


def _counter(settings: Settings | None) -> Callable[[str], int]:
    """o200k tokens; with ``settings``, what the client keeps counts too (bytes and lines, Codex)."""
    from pflow_structure.render.tokens import count_tokens

    if settings is not None:
        from pflow_structure.service.clients import answer_counter

        limited = answer_counter(None, settings)
        if limited is not None:
            return limited
    return count_tokens


def _bounded(count: Callable[[str], int]) -> Callable[[str], int]:
    from pflow_structure.mcp.proxy.shaping import bounded

    return bounded(count)
