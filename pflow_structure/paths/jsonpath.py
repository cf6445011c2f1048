"""JSONPath: ``$`` expressions (and filters such as ``result[?@.state=='open']``) resolved by an
RFC 9535 engine (jsonpath-rfc9535, this module its one home), with jsonpath-ng for today's
extensions the RFC does not have (docs/paths.md lists them).

An expression is compiled once per process (a bounded cache). Every match names its node (its
concrete path, written as a Normalized Path by :func:`normalized_path`). After the last selector
that can match many nodes (wildcard, slice, filter, descendants), a node that lacks the rest of
the path gives a ``None`` placeholder (``missing``), so two filtered paths line up item by item,
as ``[*]`` paths do. A query with two or more such selectors can be read grouped: one list per
node of the first, parents without values as empty lists (:func:`find_grouped`). A query that
finds nothing raises :class:`PathNotFoundError` saying why: how many items a filter tested, and
the near keys when it names a key no item has.
"""

from __future__ import annotations

import re

from pflow_structure.errors import PathNotFoundError, PathSyntaxError
from pflow_structure.paths.grammar import Match, first_matches
from pflow_structure.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any


__all__ = ["Query", "compile_query", "find", "find_grouped", "many_selectors", "normalized_path", "singular_segments"]

_COMPILED: dict[str, Query] = {}
_COMPILED_MAX = 256
# What only jsonpath-ng reads (docs/paths.md): its named operators in backticks (`len`, `sorted`,
# `parent`, `sub(...)`, `split(...)`, `str()`), regex filters (=~) and a single & for "and". An
# expression the RFC refuses goes to jsonpath-ng only with one of them (else the suite's invalid
# queries would pass as extensions).
_EXTENSION = re.compile(r"`|=~|[^&]&[^&]")
_FILTER_NAMES = re.compile(r"@(?:\.([A-Za-z_][\w-]*)|\['((?:[^'\\]|\\.)*)'\])")


class Query(NamedTuple):
    """A compiled expression: the RFC 9535 query, or jsonpath-ng's for an extension (``rfc`` None)."""

    text: str
    rfc: Any
    extension: Any


def expression_of(path: str) -> tuple[str, int]:
    """``path`` as a ``$`` expression and the columns added in front (a filter path gets ``$.``)."""
    if path.startswith("$"):
        return path, 0
    prefix = "$" if path.startswith("[") else "$."
    return prefix + path, len(prefix)


def compile_query(path: str) -> Query:
    """Compile ``path`` (RFC 9535 first; jsonpath-ng when only it reads the expression);
    :class:`PathSyntaxError` with the RFC engine's reason and column when neither does."""
    cached = _COMPILED.get(path)
    if cached is not None:
        return cached
    expression, offset = expression_of(path)
    import jsonpath_rfc9535

    try:
        query = Query(path, jsonpath_rfc9535.compile(expression), None)
    except RecursionError:
        raise _too_deep(path) from None
    except jsonpath_rfc9535.JSONPathError as exc:
        query = Query(path, None, _extension(expression) if _EXTENSION.search(expression) else None)
        if query.extension is None:
            token = getattr(exc, "token", None)
            column = max(0, min(getattr(token, "index", 0) - offset, max(len(path) - 1, 0)))
            reason = str(exc).split(", line ")[0]
            raise PathSyntaxError(path, column, f"JSONPath (RFC 9535): {reason}") from None
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[path] = query
    return query


def _too_deep(path: str) -> PathSyntaxError:
    """An expression nested deeper than Python's recursion limit lets the engine compile or evaluate."""
    return PathSyntaxError(
        path, 0, "JSONPath (RFC 9535): filters or parentheses nested too deeply to evaluate; nest fewer levels"
    )


def _extension(expression: str) -> Any:
    """jsonpath-ng's parse of an expression the RFC does not read (``len``, ``sorted``, ``=~``...), or None."""
    try:
        from jsonpath_ng.ext.parser import parse as jsonpath_parse

        return jsonpath_parse(expression)
    except Exception:  # jsonpath-ng raises bare Exception subclasses for syntax errors
        return None


def _is_singular(segment: Any) -> bool:
    from jsonpath_rfc9535.segments import JSONPathChildSegment
    from jsonpath_rfc9535.selectors import IndexSelector, NameSelector

    return (
        type(segment) is JSONPathChildSegment
        and len(segment.selectors) == 1
        and isinstance(segment.selectors[0], (NameSelector, IndexSelector))
    )


def singular_segments(path: str) -> tuple[str | int, ...] | None:
    """The names and indices of a singular query (``$.a['b'][0]``, RFC 9535 §2.3.5), else None."""
    query = compile_query(path)
    if query.rfc is None or not all(_is_singular(segment) for segment in query.rfc.segments):
        return None
    steps: list[str | int] = []
    for segment in query.rfc.segments:
        selector = segment.selectors[0]
        steps.append(selector.name if hasattr(selector, "name") else selector.index)
    return tuple(steps)


def normalized_path(steps: Sequence[str | int]) -> str:
    """A concrete path as an RFC 9535 Normalized Path: ``$['result'][3]['name']``."""
    from jsonpath_rfc9535.serialize import canonical_string

    return "$" + "".join(f"[{step}]" if isinstance(step, int) else f"[{canonical_string(step)}]" for step in steps)


def find(root: Any, path: str, stop: int | None = None) -> list[Match]:
    """Every node ``path`` matches, in order, with a placeholder for each node of the last
    many-node selector that lacks the rest; :class:`PathNotFoundError` when none is found.
    ``stop``: only the first ``stop`` (:func:`first_matches`): the engine yields its nodes one by
    one, so a page of a large value is read without visiting the rest."""
    query = compile_query(path)
    if query.rfc is None:
        return _find_extension(root, query)
    segments = query.rfc.segments
    last = max((i for i, s in enumerate(segments) if not _is_singular(s)), default=-1)
    try:
        matches = first_matches(_walk(_root_node(root), segments, 0, last, None), stop)
        if not matches or all(m.missing for m in matches):
            raise PathNotFoundError(path, 0, _why_empty(root, segments))
    except RecursionError:  # a filter inside a filter... evaluates recursively
        raise _too_deep(path) from None
    return matches


def many_selectors(path: str) -> int:
    """How many selectors of ``path`` can match many nodes (two or more: it reads grouped)."""
    query = compile_query(path)
    return 0 if query.rfc is None else sum(1 for s in query.rfc.segments if not _is_singular(s))


def find_grouped(root: Any, path: str) -> list[Any] | None:
    """Nested lists of matches, one level per many-node selector, for a query with at least two
    (``$.result[*].labels[*].name``: a list per item); None for fewer. A parent without values
    is an empty list."""
    query = compile_query(path)
    if query.rfc is None:
        return None
    segments = query.rfc.segments
    many = [i for i, s in enumerate(segments) if not _is_singular(s)]
    if len(many) < 2:
        return None
    find(root, path)  # raises, saying why, when nothing is found (or nested too deeply)
    grouped = _nest(_root_node(root), segments, 0, many)
    return grouped if grouped is not None else []


def _root_node(root: Any) -> Any:
    from jsonpath_rfc9535 import JSONPathNode

    return JSONPathNode(value=root, location=(), parent=None, root=root)


def _walk(node: Any, segments: Sequence[Any], index: int, last: int, item: Any) -> Iterator[Match]:
    for i in range(index, len(segments)):
        segment = segments[i]
        children = segment.resolve([node])  # a generator: nodes are made as they are read
        if i > last:  # singular from here: one child or none
            child = next(iter(children), None)
            if child is None:
                if item is None:  # a singular query: no node, and no item to hold a place for
                    return
                reason = PathNotFoundError("", i, "this item lacks the rest of the path.")
                yield Match(item.location, None, missing=True, reason=reason)
                return
            node = child
            continue
        for child in children:
            yield from _walk(child, segments, i + 1, last, child if i == last else item)
        return
    yield Match(node.location, node.value)


def _nest(node: Any, segments: Sequence[Any], index: int, many: Sequence[int]) -> list[Any] | None:
    """The values under ``node`` as nested lists; None when a singular step before the next
    many-node selector finds nothing (the parent is then shown empty)."""
    first = many[0]
    for i in range(index, first):
        children = list(segments[i].resolve([node]))
        if not children:
            return None
        node = children[0]
    children = list(segments[first].resolve([node]))
    if len(many) == 1:
        return [match for child in children for match in _walk(child, segments, first + 1, first, child)]
    return [_nest(child, segments, first + 1, many[1:]) or [] for child in children]


def _find_extension(root: Any, query: Query) -> list[Match]:
    matches = [Match(_concrete(datum.full_path), datum.value) for datum in query.extension.find(root)]
    if not matches:
        raise PathNotFoundError(query.text, 0, "the JSONPath (a jsonpath-ng extension, not RFC 9535) finds nothing.")
    return matches


def _concrete(full_path: Any) -> tuple[str | int, ...]:
    """Turn a jsonpath-ng full path (Child/Fields/Index) into a tuple; () when unknown."""
    out: list[str | int] = []

    def visit(node: Any) -> bool:
        name = type(node).__name__
        if name == "Child":
            return visit(node.left) and visit(node.right)
        if name == "Fields" and len(node.fields) == 1:
            out.append(node.fields[0])
            return True
        if name == "Index":
            indices = getattr(node, "indices", None) or (getattr(node, "index", None),)
            if len(indices) == 1 and isinstance(indices[0], int):
                out.append(indices[0])
                return True
            return False
        return name == "Root" or name == "This"

    return tuple(out) if visit(full_path) else ()


def _why_empty(root: Any, segments: Sequence[Any]) -> str:
    """Where a query stopped finding nodes, and for a filter, how many items it tested and
    which of the keys it names no item has (with the near ones)."""
    from jsonpath_rfc9535.segments import JSONPathRecursiveDescentSegment
    from jsonpath_rfc9535.selectors import FilterSelector, NameSelector

    nodes = [_root_node(root)]
    for segment in segments:
        found = list(segment.resolve(nodes))
        if found:
            nodes = found
            continue
        filters = [s for s in segment.selectors if isinstance(s, FilterSelector)]
        if filters:
            return _why_filter_empty(nodes, filters[0])
        names = [s.name for s in segment.selectors if isinstance(s, NameSelector)]
        if isinstance(segment, JSONPathRecursiveDescentSegment):  # keys at any depth below
            keys = _keys_of(_descendants(node.value for node in nodes))
            return f"{segment} matched nothing at any depth.{_near(names, keys)}"
        keys = _keys_of(node.value for node in nodes)
        where = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}"
        return f"{segment} matched nothing in {where}.{_near(names, keys)}"
    return "every node it reaches lacks the rest of the path."


def _why_filter_empty(nodes: Sequence[Any], selector: Any) -> str:
    items: list[Any] = []
    for node in nodes:
        value = node.value
        items.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else ())
    names = [a or b for a, b in _FILTER_NAMES.findall(str(selector.expression))]
    keys = _keys_of(items)
    absent = [name for name in dict.fromkeys(names) if name not in keys]
    noun = "item" if len(items) == 1 else "items"
    reason = f"the filter [?{selector.expression}] tested {len(items)} {noun} and none matched."
    if absent:
        listed = ", ".join(repr(name) for name in absent)
        reason += f" No item has the key {listed}.{_near(absent, keys)}"
    return reason


def _descendants(values: Any, limit: int = 100_000) -> Iterator[Any]:
    """The values and every value below them, breadth first, at most ``limit`` (for near keys)."""
    queue = list(values)
    for count, value in enumerate(queue):
        if count >= limit:
            return
        yield value
        if isinstance(value, dict):
            queue.extend(value.values())
        elif isinstance(value, list):
            queue.extend(value)


def _keys_of(values: Any) -> list[str]:
    keys: dict[str, None] = {}
    for value in values:
        if isinstance(value, dict):
            keys.update(dict.fromkeys(k for k in value if isinstance(k, str)))
    return list(keys)


def _near(names: Sequence[str], keys: Sequence[str]) -> str:
    import difflib

    close = [near for name in names for near in difflib.get_close_matches(name, keys, n=3, cutoff=0.6)]
    if close:
        return " Near keys: " + ", ".join(dict.fromkeys(close)) + "."
    return " Keys there: " + ", ".join(keys[:8]) + ("..." if len(keys) > 8 else "") + "." if keys else ""
