"""Repeats said once: a value whose identical sub-objects are stated in full once and referred to after.

An API answer often repeats one object in every item: each code-scanning alert carries its rule
with the rule's whole help text, each issue its author. :func:`share_repeats` keeps the first
occurrence (in document order) of every object or list of at least ``min_chars`` characters of
compact JSON that occurs again, and writes each later occurrence as the string ``"=PATH"``, the
path of the first one (``"=result[0].rule"``), which is also a path ``read_fields`` reads.
:func:`expand_shared` gives back the very same value (key order, ``1`` against ``1.0`` and
``true`` kept: occurrences are compared by their JSON text).

A value holding a string that starts with ``=`` is left as it is (no reference could then be told
from data), so every ``"=..."`` string of a shared value is a reference. The text that shows a
shared value says so in one line (:data:`LEGEND`); a JSON answer (``--format json``) never holds
references.

>>> rule = {"id": "js/xss", "help": "x" * 80}
>>> alerts = [{"n": 1, "rule": rule}, {"n": 2, "rule": dict(rule)}]
>>> shared, count = share_repeats(alerts, "result")
>>> shared[1], count
({'n': 2, 'rule': '=result[0].rule'}, 1)
>>> expand_shared(shared, "result") == alerts
True
"""

from __future__ import annotations

import json

from pflow_structure.paths.grammar import is_jsonpath, is_plain_key, parse_path, quote_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

MARKER = "="
MIN_SHARED_CHARS = 80  # a reference costs about 8 tokens: an object this long saves at least twice that
LEGEND = '# A string "=PATH" stands for the value stated in full at PATH above (each repeat said once).'


def share_repeats(
    value: Any, root: str = "", *, first_index: int = 0, min_chars: int = MIN_SHARED_CHARS
) -> tuple[Any, int]:
    """``(value with repeats as references, how many)``; ``(value, 0)`` when nothing repeats.

    ``root`` is the path the value was read at (references are written from it); ``first_index`` the
    index of the first item when ``value`` is a page of a longer list (``offset``), so a reference
    names the item's index in the whole list.
    """
    if not isinstance(value, (dict, list)) or not value or not _named_from(root, value):
        return value, 0
    texts: dict[int, str] = {}
    counts: dict[str, int] = {}
    try:
        if _json_text(value, texts, counts, min_chars) is None:
            return value, 0  # a string that starts with "=": a reference could not be told from it
    except (TypeError, ValueError):
        return value, 0  # bytes or another value JSON cannot write: shown as it is
    if not any(count > 1 for count in counts.values()):
        return value, 0
    first: dict[str, str] = {}
    shared = _rebuild(value, (root, first_index), (), texts, counts, first)
    return shared, _count_references(shared)


def _json_text(node: Any, texts: dict[int, str], counts: dict[str, int], min_chars: int) -> str | None:
    """Compact JSON of ``node`` (built from its children's), counting each container long enough to
    share; None when a string in it starts with the marker."""
    if isinstance(node, dict):
        parts = []
        for key, item in node.items():
            inner = _json_text(item, texts, counts, min_chars)
            if inner is None or not isinstance(key, str):
                return None
            parts.append(json.dumps(key, ensure_ascii=False) + ":" + inner)
        text = "{" + ",".join(parts) + "}"
    elif isinstance(node, list):
        items = [_json_text(item, texts, counts, min_chars) for item in node]
        if any(item is None for item in items):
            return None
        text = "[" + ",".join(items) + "]"  # type: ignore[arg-type]
    elif isinstance(node, str) and node.startswith(MARKER):
        return None
    else:
        return json.dumps(node, ensure_ascii=False, allow_nan=False)
    if len(text) >= min_chars:
        texts[id(node)] = text
        counts[text] = counts.get(text, 0) + 1
    return text


def _rebuild(
    node: Any,
    where: tuple[str, int],
    segments: tuple[str | int, ...],
    texts: dict[int, str],
    counts: dict[str, int],
    first: dict[str, str],
) -> Any:
    text = texts.get(id(node))
    if text is not None and counts[text] > 1:
        if text in first:
            return MARKER + first[text]
        first[text] = reference_path(where[0], segments, where[1])
    if isinstance(node, dict):
        return {key: _rebuild(item, where, (*segments, key), texts, counts, first) for key, item in node.items()}
    if isinstance(node, list):
        return [_rebuild(item, where, (*segments, index), texts, counts, first) for index, item in enumerate(node)]
    return node


def _count_references(node: Any) -> int:
    if isinstance(node, str):
        return int(node.startswith(MARKER))
    items = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return sum(_count_references(item) for item in items)


def _named_from(root: str, value: Any) -> bool:
    """Whether a path can name each place of ``value`` read at ``root``: a template path, or one with a
    single ``[*]`` over a list (item ``i`` of ``result[*].rule`` is ``result[i].rule``); not JSONPath."""
    if is_jsonpath(root):
        return False
    wildcards = root.count("[*]")
    return wildcards == 0 or (wildcards == 1 and isinstance(value, list))


def reference_path(root: str, segments: Sequence[str | int], first_index: int = 0) -> str:
    """The path of ``segments`` below ``root``: ``result[0].rule`` (a page's indices counted from
    ``first_index``; a ``[*]`` in ``root`` takes the item's index: ``result[*].rule`` -> ``result[3].rule``)."""
    if "[*]" in root and segments and isinstance(segments[0], int):
        root = root.replace("[*]", f"[{segments[0] + first_index}]", 1)
        segments, first_index = segments[1:], 0
    parts = []
    for position, segment in enumerate(segments):
        if isinstance(segment, int):
            parts.append(f"[{segment + (first_index if position == 0 else 0)}]")
        elif is_plain_key(segment):
            parts.append("." + segment)
        else:
            parts.append(quote_key(segment))
    text = "".join(parts)
    return root + text if root else text.removeprefix(".")


def expand_shared(value: Any, root: str = "", *, first_index: int = 0) -> Any:
    """The value :func:`share_repeats` was given: every ``"=PATH"`` replaced by the value at PATH."""

    def resolve(reference: str) -> Any:
        rest = reference[len(MARKER) :]
        if "[*]" in root:  # "=result[3].rule" under "result[*].rule": item 3, then what follows
            head, tail = root.split("[*]", 1)
            index, _, after = rest[len(head) + 1 :].partition("]")
            if not rest.startswith(head + "[") or not after.startswith(tail):
                raise ValueError(f"reference {reference!r} does not name a place under {root!r}")
            return walk(value[int(index) - first_index], parse_path("x" + after[len(tail) :])[1:], 0)
        if root:
            if not rest.startswith(root):
                raise ValueError(f"reference {reference!r} does not start with {root!r}")
            rest = rest[len(root) :]
        elif not rest.startswith("["):
            rest = "." + rest
        return walk(value, parse_path("x" + rest)[1:], first_index)

    def walk(node: Any, segments: Sequence[Any], base: int) -> Any:
        for position, segment in enumerate(segments):
            node = node[segment - base if isinstance(segment, int) and position == 0 else segment]
        return expand(node)

    def expand(node: Any) -> Any:
        if isinstance(node, str) and node.startswith(MARKER):
            return resolve(node)
        if isinstance(node, dict):
            return {key: expand(item) for key, item in node.items()}
        if isinstance(node, list):
            return [expand(item) for item in node]
        return node

    return expand(value)
