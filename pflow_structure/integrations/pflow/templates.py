"""pflow's template resolver, answered from the execution cache for structure-only nodes.

``${load.stdout[0].title}`` on a node whose outputs are a :class:`CachedOutputs` view is read
with ``read_fields`` (that one value, not the whole output); any other template goes to pflow's
own resolver unchanged. Paths are split with pflow's own grammar, so they mean what they mean
without the plugin.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

_PFLOW_PART = re.compile(r"^([^\[\]]+)((?:\[\d+\])*)$")
_MISSING = object()
# pflow asks both resolve_value and variable_exists for a template; each read of the cache
# parses the whole entry, so per thread we keep whether a path exists (a bool) and the last
# value read by an existence check (until the next call), never the entry.
_last_answer = threading.local()


def pflow_segments(parts: list[str]) -> list[str | int] | None:
    """Dot-split parts in pflow's grammar (``name`` or ``name[0][1]``) as path segments; None if not."""
    segments: list[str | int] = []
    for part in parts:
        match = _PFLOW_PART.match(part)
        if match is None:
            return None
        segments.append(match.group(1))
        segments.extend(int(index) for index in re.findall(r"\d+", match.group(2)))
    return segments


def pflow_split(path: str) -> list[str]:
    return re.split(r"\.(?![^\[]*\])", path)  # pflow's own split: dots outside brackets


def resolver_hook(original: Callable[[str, dict[str, Any]], Any], existence: bool) -> Callable[..., Any]:
    def hooked(var_name: str, context: dict[str, Any]) -> Any:
        answer = _through_view(var_name, context, existence)
        return original(var_name, context) if answer is _MISSING else answer

    hooked.__name__ = original.__name__
    hooked.__doc__ = original.__doc__
    return hooked


def _through_view(var_name: str, context: Any, existence: bool) -> Any:
    """Resolve ``node.path`` with read_fields when ``node`` is a structure-only view; else _MISSING."""
    from pflow_structure.wrapper import CachedOutputs

    if not isinstance(var_name, str) or not isinstance(context, Mapping):
        return _MISSING
    parts = pflow_split(var_name)
    head = _PFLOW_PART.match(parts[0])
    if len(parts) < 2 or head is None or head.group(2):
        return _MISSING
    view = context.get(head.group(1))
    if not isinstance(view, CachedOutputs):
        return _MISSING
    segments = pflow_segments(parts[1:])
    if segments is None:
        return _MISSING  # not pflow's grammar: let pflow walk the view as a dict
    if segments[0] in view and segments[0] not in view._lazy:
        return _MISSING  # metadata or a small value held in memory: no cache read needed
    # An execution never changes, so an answer for (execution id, path) stays true.
    key = (view.execution_id, var_name)
    memo = _answers()
    if existence and key in memo.found:
        return memo.found[key]
    if not existence and memo.last is not None and memo.last[0] == key:
        value = memo.last[1]
        memo.last = None
        return value
    from pflow_structure.paths import format_path

    path = format_path(segments)
    readout = view.read_detailed(path)
    found, value = path not in readout.errors, readout.values[path]
    if len(memo.found) >= _FOUND_MAX:
        memo.found.clear()
    memo.found[key] = found
    memo.last = (key, value) if existence else None  # the value only until the next call
    return found if existence else value


_FOUND_MAX = 1024


def _answers() -> Any:
    if not hasattr(_last_answer, "found"):
        _last_answer.found = {}
        _last_answer.last = None
    return _last_answer
