"""Field paths: resolving them against a value, with the reason and near keys when one misses.

Our own paths walk the value segment by segment (``[*]`` every item, negative indices); a
JSONPath (``$...`` or a filter) goes to :mod:`.jsonpath` (RFC 9535), imported only then.
"""

from __future__ import annotations

import json

from pflow_structure.errors import PathNotFoundError, PathSyntaxError
from pflow_structure.paths.grammar import (
    WILDCARD,
    ConcretePath,
    Match,
    Segment,
    Wildcard,
    first_matches,
    format_path,
    is_jsonpath,
    parse_path,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

_JSON_TEXT_FIRST = frozenset("{[ \t\r\n")
_JSON_TEXT_LAST = frozenset("}] \t\r\n")


def resolve(root: Any, path: str, *, stop: int | None = None) -> tuple[list[Match], bool]:
    """Resolve ``path`` against ``root``.

    Returns the matches and whether the path can match many values (a wildcard or
    JSONPath), in which case the caller returns a list. Raises :class:`PathSyntaxError`
    or :class:`PathNotFoundError`. ``stop``: resolve only the first ``stop`` matches (on past
    them until one is found); ``stop`` or more back means there may be more.
    """
    if not isinstance(path, str):
        raise PathSyntaxError(repr(path)[:100], 0, f"a path must be a string, not {type(path).__name__}")
    if is_jsonpath(path):
        return _resolve_jsonpath(root, path, stop), True
    segments = parse_path(path)
    multi = any(isinstance(s, Wildcard) for s in segments)
    try:
        matches = first_matches(_walk(root, segments, 0, (), path), stop)
        if matches and all(m.missing for m in matches):
            # Every item lacks the path: say why (and suggest) instead of a list of nulls.
            raise matches[0].reason or _not_found(path, segments, 0, "no item has this path.")
    except PathNotFoundError as exc:
        raise _with_every_item_hint(root, segments, exc) from None
    return matches, multi


def resolve_grouped(root: Any, path: str) -> list[Any] | None:
    """The matches of a path with two or more wildcards (or JSONPath selectors that match many
    nodes) as nested lists, one level per wildcard: ``result[*].labels[*].name`` gives a list per
    item of ``result``, an item without values an empty list. None for fewer wildcards.

    Call after :func:`resolve` found something (it raises, saying why, when nothing is found).
    """
    if is_jsonpath(path):
        from pflow_structure.paths.jsonpath import find_grouped

        return find_grouped(root, path)
    segments = parse_path(path)
    wildcards = [i for i, s in enumerate(segments) if isinstance(s, Wildcard)]
    if len(wildcards) < 2:
        return None
    return _nest(root, segments, 0, wildcards, (), path) or []


def _nest(
    value: Any, segments: Sequence[Segment], index: int, wildcards: Sequence[int], where: ConcretePath, text: str
) -> list[Any] | None:
    """Nested lists of matches under ``value``; None when the steps before the next wildcard miss."""
    first = wildcards[0]
    try:
        head = list(_walk(value, segments[:first], index, where, text))
    except PathNotFoundError:
        return None
    parent = head[0]
    if isinstance(parent.value, str) and parent.value:
        parsed = parse_json_text(parent.value)  # strings holding JSON are read through, as _walk does
        parent = parent._replace(value=parent.value if parsed is None else parsed)
    if isinstance(parent.value, list):
        items: list[tuple[str | int, Any]] = list(enumerate(parent.value))
    elif isinstance(parent.value, dict):
        items = list(parent.value.items())
    else:
        return None
    if len(wildcards) == 1:
        return list(_walk_wildcard(parent.value, segments, first, parent.path, text))
    return [_nest(item, segments, first + 1, wildcards[1:], (*parent.path, key), text) or [] for key, item in items]


def _with_every_item_hint(root: Any, segments: Sequence[Segment], exc: PathNotFoundError) -> PathNotFoundError:
    """In a structure ``[0]`` stands for every item; when item 0 lacks what others have, say so."""
    if not any(isinstance(s, int) for s in segments[: exc.segment_index]):
        return exc
    # Only the indices before the failing step stand for "every item"; [5] where it failed stays.
    every = [WILDCARD if isinstance(s, int) and i < exc.segment_index else s for i, s in enumerate(segments)]
    try:
        found = [m for m in _walk(root, every, 0, (), exc.path) if not m.missing]
    except PathNotFoundError:
        return exc
    if not found:
        return exc
    alternative = format_path(every)
    reason = exc.reason if exc.reason.endswith((".", "...")) else exc.reason + "."
    reason = f"{reason} Other items have it: {alternative} finds {len(found)}."
    return PathNotFoundError(exc.path, exc.segment_index, reason, [alternative, *exc.suggestions])


def _walk(value: Any, segments: Sequence[Segment], index: int, where: ConcretePath, text: str) -> Iterator[Match]:
    if index == len(segments):
        yield Match(where, value)
        return
    segment = segments[index]
    if isinstance(value, str) and value:
        # Strings holding JSON (common in MCP and shell outputs) are read through.
        parsed = parse_json_text(value)
        if parsed is not None:
            value = parsed
    if isinstance(segment, Wildcard):
        yield from _walk_wildcard(value, segments, index, where, text)
        return
    child_key, child = _step(value, segment, segments, index, text)
    yield from _walk(child, segments, index + 1, (*where, child_key), text)


def _walk_wildcard(
    value: Any, segments: Sequence[Segment], index: int, where: ConcretePath, text: str
) -> Iterator[Match]:
    if isinstance(value, list):
        items: list[tuple[str | int, Any]] = list(enumerate(value))
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        raise _not_found(text, segments, index, f"{describe_value(value)} has no items for [*].")
    # Items that lack the rest of the path give None, as jq does, so that two [*] paths over
    # the same list line up item by item (result[*].number beside result[*].milestone.title),
    # also when wildcards nest; resolve() raises when every value is missing.
    for key, item in items:
        try:
            yield from _walk(item, segments, index + 1, (*where, key), text)
        except PathNotFoundError as exc:
            yield Match((*where, key), None, missing=True, reason=exc)


def _step(value: Any, segment: str | int, segments: Sequence[Segment], index: int, text: str) -> tuple[Any, Any]:
    if isinstance(segment, int):
        if not isinstance(value, list):
            hint = _keys_hint(value)
            suggestions = []
            if isinstance(value, dict) and str(segment) in value:
                suggestions = [format_path([*segments[:index], str(segment)])]  # the key "0", quoted
            raise _not_found(
                text, segments, index, f"[{segment}] needs a list but found {describe_value(value)}.{hint}", suggestions
            )
        if -len(value) <= segment < len(value):
            concrete = segment % len(value)
            return concrete, value[concrete]
        raise _not_found(
            text, segments, index, f"index {segment} is out of range: the list has {_count(len(value), 'item')}."
        )
    if isinstance(value, dict):
        if segment in value:
            return segment, value[segment]
        keys = [k for k in value if isinstance(k, str)]
        import difflib  # only when a key is missing

        close = difflib.get_close_matches(segment, keys, n=3, cutoff=0.6)
        suggestions = [format_path([*segments[:index], k]) for k in close]
        # Near keys as paths to copy; when none is near, the keys that do exist (as glom does).
        hint = "" if suggestions else _keys_hint(value)
        raise _not_found(text, segments, index, f"no key {segment!r} here.{hint}", suggestions)
    if isinstance(value, list):
        base = format_path(segments[:index])
        rest = format_path(["x", *segments[index:]])[1:]
        # A path cannot start with an index, so a list at the root gets no suggestions.
        suggestions = [f"{base}[0]{rest}", f"{base}[*]{rest}"] if base else []
        raise _not_found(
            text,
            segments,
            index,
            f"{base or 'the value'} is a list of {_count(len(value), 'item')}, not a dict.",
            suggestions,
        )
    raise _not_found(text, segments, index, f"no key {segment!r}: found {describe_value(value)}.")


def _not_found(
    text: str, segments: Sequence[Segment], index: int, reason: str, suggestions: Sequence[str] = ()
) -> PathNotFoundError:
    return PathNotFoundError(text, index, reason, suggestions)


def _keys_hint(value: Any) -> str:
    if isinstance(value, dict):
        keys = [k for k in value if isinstance(k, str)][:5]
        return " Keys here: " + ", ".join(keys) + ("..." if len(value) > 5 else "") if keys else ""
    return ""


def describe_value(value: Any) -> str:
    """What a value is, in a few words for an error message (``a dict of 3 keys``), never the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, dict):
        return f"a dict of {_count(len(value), 'key')}"
    if isinstance(value, list):
        return f"a list of {_count(len(value), 'item')}"
    if isinstance(value, str):
        return f"a string of {len(value)} chars"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def parse_json_text(text: str) -> Any:
    """Parse a string that holds a JSON object or array (surrounding whitespace allowed).

    None when it does not. Structure inference and path resolution both use this, so a
    string the structure lists as JSON is always read through by a path.
    """
    if text[:1] not in _JSON_TEXT_FIRST or text[-1:] not in _JSON_TEXT_LAST:
        return None  # the cheap test first: most strings are not JSON
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):  # RecursionError: text nested deeper than the parser's stack
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _resolve_jsonpath(root: Any, path: str, stop: int | None) -> list[Match]:
    from pflow_structure.paths.jsonpath import find

    return [m._replace(path=_non_negative(root, m.path)) if not m.missing else m for m in find(root, path, stop)]


def _non_negative(root: Any, path: ConcretePath) -> ConcretePath:
    """``("result", -1)`` → ``("result", 99)``: the form the stored ``binary_paths`` use."""
    if not any(isinstance(step, int) and step < 0 for step in path):
        return path
    out: list[str | int] = []
    value = root
    for step in path:
        if isinstance(step, int) and step < 0 and isinstance(value, list):
            step += len(value)
        try:
            value = value[step]
        except (LookupError, TypeError):
            return path
        out.append(step)
    return tuple(out)


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
