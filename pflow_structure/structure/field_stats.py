"""What inference sees at each path: :class:`FieldStats`, gathered in one walk over a value.

Besides types, counts and lengths (shown in the structure), each scalar path keeps a few
statistics that are never shown but tell the filter what kind of field it is, on any API:
how many distinct values it had (counted up to :data:`DISTINCT_CAP`, so memory stays
bounded), whether every string had one length or one prefix (ids, hashes: ``cus_…``), and
whether every string looked like a token (letters and digits, no spaces). Values themselves
are kept only inside the bounded distinct-value set, the range of the numbers and the range of
the strings shaped like a time: the filter gets :class:`FieldSignals`, which are counts and
flags, and the structure gets a few tokens of them (structure/hints.py: ``int 0..6``,
``open|closed``, ``epoch s 2021-03-01..03-09``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths import parse_json_text

# Distinct values are counted up to this many per path; past it a field is "many-valued".
DISTINCT_CAP = 64
# A string longer than this is counted by its hash, not kept.
_DISTINCT_KEEP_CHARS = 64
# A common prefix is followed over at most this many characters.
_PREFIX_CHARS = 40  # enough for a link's host and first path segment (https://gitlab.com/api/)
# An id or a hash: letters and digits (and _ -), at least 6 characters, a digit somewhere.
_TOKEN_SHAPE = re.compile(r"(?=[^\d]*\d)[A-Za-z0-9_\-]{6,80}\Z")
# A time held in a string: an ISO 8601 date (and time), or epoch digits (Slack's "1614556800.000200").
_TIME_SHAPE = re.compile(r"\d{4}-\d\d-\d\d(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?\Z|\d{9,19}(?:\.\d+)?\Z")

# Exact types first (a dict lookup); subclasses fall back to classify().
_EXACT_KINDS: dict[type, str] = {
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    dict: "dict",
    list: "list",
    type(None): "null",
}
_JSON_TEXT_FIRST = frozenset("{[ \t\r\n")
_BINARY_LEAF = "\x00binary"


class FieldSignals(NamedTuple):
    """Statistics of one scalar path that the filter may score with; never shown, never values.

    ``distinct`` is the number of distinct values, or ``DISTINCT_CAP + 1`` for "more than the
    cap"; ``values`` the number of scalar values seen; ``str_min``/``str_max`` string lengths;
    ``prefix`` the length of the prefix every string shared; ``token_like`` whether every
    string was letters and digits without spaces (an id, a hash, a key); ``link`` whether every
    string was a link, and to what: read from the shared prefix, never from one value.
    """

    values: int
    distinct: int
    str_min: int
    str_max: int
    prefix: int
    token_like: bool
    link: str = ""  # every string was a link: "api" (an API endpoint: api. or /api/ in it) or "web"


def _link(prefix: str) -> str:
    """``https://api.github.com/repos/`` → "api"; ``https://github.com/`` → "web"; else ""."""
    if not prefix.startswith(("http://", "https://")):
        return ""
    host_and_path = prefix.split("://", 1)[1]
    return "api" if host_and_path.startswith("api.") or "/api/" in host_and_path or ".api." in host_and_path else "web"


class FieldStats:
    """What was seen at one path, over every value observed there."""

    __slots__ = (
        "children",
        "count",
        "depth_cut",
        "dict_count",
        "distinct",
        "items",
        "json_kinds",
        "list_count",
        "list_max",
        "list_min",
        "list_total",
        "num_max",
        "num_min",
        "prefix",
        "scalars",
        "str_count",
        "str_max",
        "str_min",
        "str_total",
        "time_hi",
        "time_lo",
        "times",
        "tokens",
        "types",
    )

    def __init__(self) -> None:
        self.count = 0
        self.types: dict[str, int] = {}
        self.str_count = 0
        self.str_total = 0
        self.str_min = 0
        self.str_max = 0
        self.list_count = 0
        self.list_total = 0
        self.list_min = 0
        self.list_max = 0
        self.dict_count = 0
        self.children: dict[str, FieldStats] = {}
        self.items: FieldStats | None = None
        self.json_kinds: dict[str, int] = {}
        self.depth_cut = False
        self.scalars = 0  # values counted into ``distinct``
        self.distinct: set[Any] | None = set()  # None: more than DISTINCT_CAP
        self.prefix: str | None = None
        self.tokens = 0  # strings shaped like a token
        # For the value hints (structure/hints.py): the range of the numbers, and of the strings
        # shaped like a time (an ISO date or epoch digits) while every string so far was one.
        self.num_min: float | None = None
        self.num_max: float | None = None
        self.times = 0
        self.time_lo = ""
        self.time_hi = ""

    def add_type(self, name: str) -> None:
        self.types[name] = self.types.get(name, 0) + 1

    def add_length(self, length: int) -> None:
        if self.list_count == 0:
            self.list_min = self.list_max = length
        else:
            self.list_min = min(self.list_min, length)
            self.list_max = max(self.list_max, length)
        self.list_count += 1
        self.list_total += length

    def add_string(self, value: str) -> None:
        length = len(value)
        count = self.str_count
        if count == 0:
            self.str_min = self.str_max = length
            self.prefix = value[:_PREFIX_CHARS]
        else:
            if length < self.str_min:
                self.str_min = length
            elif length > self.str_max:
                self.str_max = length
            prefix = self.prefix
            if prefix and not value.startswith(prefix):
                self.prefix = _common_prefix(prefix, value)
        # Only "every string is a token" is ever asked: after the first that is not, stop matching.
        if self.tokens == count and length <= 80 and _TOKEN_SHAPE.match(value):
            self.tokens += 1
        if self.times == count and 9 <= length <= 35 and value[:1].isdigit() and _TIME_SHAPE.match(value):
            if not count or value < self.time_lo:
                self.time_lo = value
            if not count or value > self.time_hi:
                self.time_hi = value
            self.times += 1
        self.str_count = count + 1
        self.str_total += length
        self.scalars += 1
        seen = self.distinct
        if seen is not None:
            seen.add(value if length <= _DISTINCT_KEEP_CHARS else hash(value))
            if len(seen) > DISTINCT_CAP:
                self.distinct = None

    def add_scalar(self, value: Any) -> None:
        self.scalars += 1
        if type(value) is not bool:  # a bool is an int to Python, and has no range worth showing
            if self.num_min is None or value < self.num_min:
                self.num_min = value
            if self.num_max is None or value > self.num_max:
                self.num_max = value
        seen = self.distinct
        if seen is not None:
            seen.add(value)
            if len(seen) > DISTINCT_CAP:
                self.distinct = None

    def signals(self) -> FieldSignals:
        """The statistics the filter may use (see :class:`FieldSignals`)."""
        distinct = DISTINCT_CAP + 1 if self.distinct is None else len(self.distinct)
        return FieldSignals(
            self.scalars,
            distinct,
            self.str_min,
            self.str_max,
            len(self.prefix or ""),
            bool(self.str_count) and self.tokens == self.str_count,
            _link(self.prefix or ""),
        )

    def merge(self, other: FieldStats) -> None:
        """Fold ``other`` into this node (used to summarise dynamic-key dicts)."""
        if other.str_count:
            if self.str_count:
                self.str_min = min(self.str_min, other.str_min)
                self.str_max = max(self.str_max, other.str_max)
                self.prefix = _common_prefix(self.prefix or "", other.prefix or "")
            else:
                self.str_min, self.str_max, self.prefix = other.str_min, other.str_max, other.prefix
        self.count += other.count
        for name, n in other.types.items():
            self.types[name] = self.types.get(name, 0) + n
        self.str_count += other.str_count
        self.str_total += other.str_total
        self.tokens += other.tokens
        self.scalars += other.scalars
        for number in (other.num_min, other.num_max):
            if number is not None:
                self.num_min = number if self.num_min is None else min(self.num_min, number)
                self.num_max = number if self.num_max is None else max(self.num_max, number)
        own = self.str_count - other.str_count  # str_count already holds both
        if other.str_count and (self.times != own or other.times != other.str_count):
            self.times = 0  # a string that is no time, on one side or the other
        elif other.str_count:
            self.time_lo = min(self.time_lo, other.time_lo) if own else other.time_lo
            self.time_hi = max(self.time_hi, other.time_hi) if own else other.time_hi
            self.times += other.times
        if self.distinct is not None:
            if other.distinct is None:
                self.distinct = None
            else:
                self.distinct |= other.distinct
                if len(self.distinct) > DISTINCT_CAP:
                    self.distinct = None
        if other.list_count:
            if self.list_count:
                self.list_min = min(self.list_min, other.list_min)
                self.list_max = max(self.list_max, other.list_max)
            else:
                self.list_min, self.list_max = other.list_min, other.list_max
            self.list_count += other.list_count
            self.list_total += other.list_total
        self.dict_count += other.dict_count
        for key, child in other.children.items():
            self.children.setdefault(key, FieldStats()).merge(child)
        if other.items is not None:
            if self.items is None:
                self.items = FieldStats()
            self.items.merge(other.items)
        for kind, n in other.json_kinds.items():
            self.json_kinds[kind] = self.json_kinds.get(kind, 0) + n
        self.depth_cut = self.depth_cut or other.depth_cut

    def kind(self) -> str:
        """The most common type seen here."""
        return max(self.types.items(), key=lambda item: item[1])[0] if self.types else "null"


def _common_prefix(a: str, b: str) -> str:
    cut = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        cut += 1
    return a[:cut]


def classify(value: Any) -> str:
    """The structure type name of a JSON-safe value.

    ``bool`` is checked before ``int`` because ``True`` is an ``int`` in Python and
    would otherwise be reported as one.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return type(value).__name__


class Collector:
    """Walks a value once, feeding every item of a list into one shared child (as GenSON does)."""

    def __init__(self, max_depth: int, binary_paths: Sequence[Sequence[str | int]]) -> None:
        self.max_depth = max_depth
        self.binary: dict[Any, Any] = {}
        for path in binary_paths:
            node = self.binary
            for step in path:
                node = node.setdefault(step, {})
            node[_BINARY_LEAF] = True

    def observe(self, node: FieldStats, value: Any, depth: int, binary: dict[Any, Any] | None) -> None:
        node.count += 1
        if binary is not None and _BINARY_LEAF in binary and isinstance(value, str):
            node.add_type("bytes")
            node.str_count += 1
            node.str_total += _decoded_length(value)
            return
        kind = _EXACT_KINDS.get(type(value)) or classify(value)
        types = node.types
        types[kind] = types.get(kind, 0) + 1
        if kind == "str":
            node.add_string(value)
            if value[:1] in _JSON_TEXT_FIRST:
                parsed = parse_json_text(value)
                if parsed is not None:
                    node.json_kinds[classify(parsed)] = node.json_kinds.get(classify(parsed), 0) + 1
                    self.observe_container(node, parsed, depth, None)
        elif kind == "dict" or kind == "list":
            self.observe_container(node, value, depth, binary)
        elif kind != "null":
            node.add_scalar(value)

    def observe_container(self, node: FieldStats, value: Any, depth: int, binary: dict[Any, Any] | None) -> None:
        if depth >= self.max_depth:
            node.depth_cut = True
            return
        if isinstance(value, dict):
            node.dict_count += 1
            children = node.children
            if binary:
                for key, item in value.items():
                    child = children.get(key)
                    if child is None:
                        child = children[key] = FieldStats()
                    self.observe(child, item, depth + 1, binary.get(key))
                return
            for key, item in value.items():
                child = children.get(key)
                if child is None:
                    child = children[key] = FieldStats()
                # _observe_leaf written out: a record's fields are most of the values, and mostly leaves.
                kind = _LEAF_KINDS.get(type(item))
                if kind is None or (kind == "str" and item[:1] in _JSON_TEXT_FIRST):
                    self.observe(child, item, depth + 1, None)
                    continue
                child.count += 1
                types = child.types
                types[kind] = types.get(kind, 0) + 1
                if kind == "str":
                    child.add_string(item)
                elif kind != "null":
                    child.add_scalar(item)
        else:
            node.add_length(len(value))
            if value and node.items is None:
                node.items = FieldStats()
            items = node.items
            for index, item in enumerate(value):
                assert items is not None
                if binary or not _observe_leaf(items, item):
                    self.observe(items, item, depth + 1, binary.get(index) if binary else None)

    def observe_items(self, node: FieldStats, values: Iterable[Any], depth: int) -> None:
        """:meth:`observe` of a list at ``depth`` (no bytes in it) given as its items, one at a time:
        what the list itself would add, without holding it."""
        node.count += 1
        node.add_type("list")
        if depth >= self.max_depth:
            node.depth_cut = True
            return
        length = 0
        for item in values:
            if node.items is None:
                node.items = FieldStats()
            if not _observe_leaf(node.items, item):
                self.observe(node.items, item, depth + 1, None)
            length += 1
        node.add_length(length)


def _observe_leaf(node: FieldStats, value: Any) -> bool:
    """:meth:`Collector.observe` for the common leaves (a string that is not JSON text, null, a
    number, a bool) without its call: most values are leaves. False: observe it in full."""
    kind = _LEAF_KINDS.get(type(value))
    if kind is None or (kind == "str" and value[:1] in _JSON_TEXT_FIRST):
        return False
    node.count += 1
    types = node.types
    types[kind] = types.get(kind, 0) + 1
    if kind == "str":
        node.add_string(value)
    elif kind != "null":
        node.add_scalar(value)
    return True


_LEAF_KINDS = {kind: name for kind, name in _EXACT_KINDS.items() if name not in ("dict", "list")}


def _decoded_length(text: str) -> int:
    return len(text) * 3 // 4 - text[-2:].count("=")
