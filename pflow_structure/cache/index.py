"""A cache entry's index: byte ranges of its outputs, so that a read parses only the values it returns.

The entry stays one plain JSON document that any tool reads. The index is a hint kept beside it
(``ID.idx``, written the same atomic way, removed with the entry): a missing, stale, malformed or
hostile index is ignored and the read parses the whole entry, as before. Every range is checked
against the bytes around it (a list item sits between ``[`` or ``,`` and ``,`` or ``]``, a value of
key ``k`` right after ``"k":``) before it is parsed, and the slice must parse on its own.

An index document::

    {"v": 1, "id": ID, "size": BYTES, "outputs": NODE}
    NODE = [start, end]                                          a value read whole
         | {"s": start, "e": end, "k": {key: NODE}}               a dict, by key
         | {"s": start, "e": end, "o": [starts..., end], "c": {"i": NODE}}   a list, by item

Offsets are bytes from the start of the entry file, ``end`` exclusive. A list item ``i`` without a
node in ``c`` spans ``o[i]`` to ``o[i + 1] - 1`` (the comma or bracket after it).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from pflow_structure.cache.entry import CacheEntry, StreamedList, entry_document
from pflow_structure.cache.files import (
    ENTRY_SUFFIX,
    INDEX_SUFFIX,
    open_regular_file,
    read_regular_file,
    unlink,
    write_atomically,
    write_atomically_with,
)
from pflow_structure.errors import PathSyntaxError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import IO, Any

__all__ = [
    "INDEX_SUFFIX",
    "INDEX_VERSION",
    "PRESENCE_KEY",
    "UNREAD",
    "Materializer",
    "StaleIndexError",
    "add_presence",
    "paths_needed",
    "read_partial",
    "write_entry",
    "write_indexed_entry",
]

INDEX_VERSION = 1
# The structure's field statistics written at run time ({template path: [type, present, of]}): a page of
# result[*].field counts the items that lack it without reading them (see service/reading.py).
PRESENCE_KEY = "fields"
# A value whose JSON is at most this long is written (and read) whole; a larger container is indexed inside.
SPLIT_BYTES = 64 * 1024
# A container with at least this many children is indexed inside without first writing it whole.
MANY_CHILDREN = 64
_OUTPUTS_KEY = b'"outputs":'
# A container of at most this many children is looked into for a large child before it is written.
_WRAPPER_KEYS = 8
# A list at least this long (bytes) is read a page at a time for result[*].field: the rest stays unparsed.
PAGE_ONLY_BYTES = 4 << 20
# Below this many bytes the standard library parses before orjson has even been imported (it loads
# dataclasses, inspect and uuid): a small read keeps read-fields' start-up short.
_FAST_PARSE_BYTES = 1 << 20


class StaleIndexError(ValueError):
    """The index does not fit the entry: the caller reads the whole entry instead."""


def write_entry(directory: Path, execution_id: str, entry: CacheEntry) -> tuple[Path, int]:
    """Write ``entry`` as ``ID.json`` in ``directory`` (atomically, piece by piece), then its index
    when it has one worth keeping; returns the entry's path and size. An index that cannot be
    written is left out (reads then parse the whole entry)."""
    document = entry_document(entry)
    index_path = directory / (execution_id + INDEX_SUFFIX)
    path, (size, index) = write_atomically_with(
        directory, execution_id + ENTRY_SUFFIX, lambda handle: write_indexed_entry(handle, document)
    )
    unlink(index_path)  # one left by an entry of this id that something else removed (the id is ours now)
    if type(index["outputs"]) is dict:
        from pflow_structure.encoding.jsonio import dumps

        with contextlib.suppress(OSError):
            write_atomically(directory, index_path.name, dumps(index))
    return path, size


def add_presence(index_path: Path, execution_id: str, presence: dict[str, Any]) -> None:
    """Add the structure's field statistics to the index of ``execution_id``, when it has one."""
    from pflow_structure.encoding.jsonio import dumps

    raw = read_regular_file(index_path, [])
    if raw is None:
        return
    try:
        index = _loads(raw)
    except (ValueError, RecursionError):
        return
    if type(index) is dict and index.get("id") == execution_id:
        index[PRESENCE_KEY] = presence
        data = dumps(index)
        unlink(index_path)  # never replaced in place; a read in between parses the whole entry
        write_atomically(index_path.parent, index_path.name, data)


def paths_needed(paths: Sequence[Any]) -> list[Any]:
    """Parsed ``paths`` for :func:`read_partial`: None for one that needs the whole value (JSONPath);
    a path that does not parse is left out (the resolver says what is wrong with it)."""
    from pflow_structure.paths import is_jsonpath, parse_path

    needed: list[Any] = []
    for path in paths:
        if not isinstance(path, str) or is_jsonpath(path):
            needed.append(None)
            continue
        try:
            needed.append(parse_path(path))
        except PathSyntaxError:
            continue
    return needed


def write_indexed_entry(handle: IO[bytes], document: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Write ``document`` (the entry, ``outputs`` last) to ``handle``; return its size and its index.

    Raises ``TypeError``/``ValueError`` (from :func:`dumps`) for a value that is not JSON.
    """
    from pflow_structure.encoding.jsonio import dumps

    outputs = document["outputs"]
    header = dumps({key: value for key, value in document.items() if key != "outputs"})
    writer = _Writer(handle)
    writer.write(header[:-1] + b"," + _OUTPUTS_KEY if len(header) > 2 else b"{" + _OUTPUTS_KEY)
    node = writer.node(outputs, 0)
    writer.write(b"}")
    index = {"v": INDEX_VERSION, "id": document["execution_id"], "size": writer.pos, "outputs": node}
    return writer.pos, index


class _Writer:
    """Writes JSON to a file, one piece at a time, and remembers where each indexed value went."""

    def __init__(self, handle: IO[bytes]) -> None:
        from pflow_structure.encoding.jsonio import dumps

        self.dumps = dumps
        self.handle = handle
        self.pos = 0

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self.pos += len(data)

    def node(self, value: Any, depth: int) -> Any:
        start = self.pos
        if type(value) is StreamedList:  # written as the list's own items would be (see _list)
            value = value.items()
        elif not _split_first(value, depth):
            data = self.dumps(value)
            if len(data) <= SPLIT_BYTES or not _splittable(value):
                self.write(data)
                return [start, self.pos]
            del data  # large: written again piece by piece below
        node = self._dict(value, depth) if type(value) is dict else self._list(value, depth)
        if self.pos - start <= SPLIT_BYTES:
            return [start, self.pos]  # small after all: read whole
        return node

    def _dict(self, value: dict[str, Any], depth: int) -> dict[str, Any]:
        start = self.pos
        keys: dict[str, Any] = {}
        self.write(b"{")
        for number, (key, item) in enumerate(value.items()):
            self.write((b"," if number else b"") + self.dumps(key) + b":")
            keys[key] = self.node(item, depth + 1)
        self.write(b"}")
        return {"s": start, "e": self.pos, "k": keys}

    def _list(self, value: Iterable[Any], depth: int) -> dict[str, Any] | list[int]:
        start = self.pos
        starts: list[int] = []
        children: dict[str, Any] = {}
        self.write(b"[")
        for number, item in enumerate(value):
            if number:
                self.write(b",")
            starts.append(self.pos)
            child = self.node(item, depth + 1)
            if type(child) is dict:
                children[str(number)] = child
        self.write(b"]")
        return {"s": start, "e": self.pos, "o": [*starts, self.pos], "c": children}


def _splittable(value: Any) -> bool:
    """A non-empty list, or a non-empty dict with string keys (the index names keys as written)."""
    if type(value) is list:
        return bool(value)
    return type(value) is dict and bool(value) and all(type(key) is str for key in value)


def _split_first(value: Any, depth: int) -> bool:
    """Index inside without writing it whole first: the outputs, a container of many children, or
    a wrapper of a few keys around such a container (``{"data": [70,000 items]}``): writing those
    whole only to find them large would hold a second copy of the value. Cheap checks first: this
    runs for every list item."""
    kind = type(value)
    if (kind is not dict and kind is not list) or not value:
        return False
    size = len(value)
    if depth == 0 or size >= MANY_CHILDREN:
        return _splittable(value)
    if size > _WRAPPER_KEYS:
        return False
    children = value.values() if kind is dict else value
    for child in children:
        if (type(child) is dict or type(child) is list) and len(child) >= MANY_CHILDREN:
            return _splittable(value)
    return False


class Materializer:
    """Builds the outputs of an entry with only what some paths reach parsed; the rest is never read.

    ``read(start, end)`` returns those bytes of the entry. Containers above the values a path
    reaches are skeletons (every key or item present, unread ones as :data:`UNREAD`), so that an
    index, a negative index and a key resolve as on the whole value. Raises :class:`StaleIndexError`
    when the index does not fit the entry.
    """

    def __init__(self, index: Any, size: int, read: Callable[[int, int], bytes]) -> None:
        self.read = read
        self.size = size
        self.skeletons: set[int] = set()
        self.root: dict[str, Any] = {"outputs": UNREAD}
        self.outputs_node = index
        self.page: tuple[int, int] | None = None

    def fill(self, segments: Sequence[Any], page: tuple[int, int] | None = None) -> None:
        """Parse what ``segments`` (a parsed path; a wildcard reads its whole container) reach."""
        self.page = page
        self._fill(self.root, "outputs", self.outputs_node, segments, 0, (_OUTPUTS_KEY,), b"}")

    @property
    def outputs(self) -> Any:
        return self.root["outputs"]

    def _fill(
        self, holder: Any, key: Any, node: Any, segments: Sequence[Any], i: int, before: tuple[bytes, ...], after: bytes
    ) -> None:
        value = holder[key]
        if value is not UNREAD and id(value) not in self.skeletons:
            return  # parsed already
        start, end = _range(node, self.size)
        if self._paged(node, segments, i):
            self._fill_page(holder, key, node, segments, i)
            return
        if i == len(segments) or type(node) is list or not isinstance(segments[i], (str, int)):
            holder[key] = self._parse(start, end, before, after)
            return
        if value is UNREAD:
            value = holder[key] = self._skeleton(node)
        segment = segments[i]
        if type(segment) is str and "k" in node:
            keys = node["k"]
            if segment in keys:
                self._fill(value, segment, keys[segment], segments, i + 1, (_key_bytes(segment) + b":",), b",}")
        elif type(segment) is int and "o" in node:
            offsets = node["o"]
            count = len(offsets) - 1
            if -count <= segment < count:
                item = segment % count
                self._fill(value, item, self._item_node(node, item), segments, i + 1, (b"[", b","), b",]")
        # Otherwise the path misses here: the resolver says why (on the whole entry, see the caller).

    def _paged(self, node: Any, segments: Sequence[Any], i: int) -> bool:
        """A ``[*]`` over an indexed list followed by names and indices only (``result[*]``,
        ``result[*].user.login``), with a page asked for: only the page's items are read."""
        if self.page is None or type(node) is not dict or "o" not in node or i >= len(segments):
            return False
        if isinstance(segments[i], (str, int)) or not all(isinstance(s, (str, int)) for s in segments[i + 1 :]):
            return False
        # With more after the [*], a list that parses quickly is read whole: the items lacking the rest are
        # then counted exactly over the list; past this size only on the page.
        return i == len(segments) - 1 or _range(node, self.size)[1] - _range(node, self.size)[0] >= PAGE_ONLY_BYTES

    def _fill_page(self, holder: Any, key: Any, node: Any, segments: Sequence[Any], i: int) -> None:
        """The items of one page (``self.page``) of the list at ``node``; the others stay unread."""
        assert self.page is not None
        value = holder[key]
        if value is UNREAD:
            value = holder[key] = self._skeleton(node)
        offset, limit = self.page
        for item in range(offset, min(offset + limit, len(value))):
            self._fill(value, item, self._item_node(node, item), segments, i + 1, (b"[", b","), b",]")

    @staticmethod
    def _item_node(node: Any, item: int) -> Any:
        offsets = node["o"]
        return node["c"].get(str(item)) or [offsets[item], offsets[item + 1] - 1]

    def _skeleton(self, node: Any) -> Any:
        if "k" in node:
            keys = node["k"]
            if not isinstance(keys, dict):
                raise StaleIndexError("a dict node without keys")
            skeleton: Any = dict.fromkeys(keys, UNREAD)
        elif "o" in node:
            offsets = node["o"]
            if not isinstance(offsets, list) or not offsets or not isinstance(node.get("c"), dict):
                raise StaleIndexError("a list node without offsets")
            skeleton = [UNREAD] * (len(offsets) - 1)
        else:
            raise StaleIndexError("a node that is neither a dict nor a list")
        self.skeletons.add(id(skeleton))
        return skeleton

    def _parse(self, start: int, end: int, before: tuple[bytes, ...], after: bytes) -> Any:
        """The value at ``start:end``, after checking that the entry has one of ``before`` just before
        it and one byte of ``after`` just after it."""
        lead = len(before[0])
        if start < lead:
            raise StaleIndexError("a range before the start of the entry")
        data = self.read(start - lead, end + 1)
        if len(data) != lead + end - start + 1 or data[:lead] not in before or data[-1] not in after:
            raise StaleIndexError("a range that does not sit where its value is")
        try:
            return _loads(memoryview(data)[lead:-1])  # a view: no second copy of a large value
        except (ValueError, RecursionError) as exc:
            raise StaleIndexError(f"a range that is not one JSON value ({type(exc).__name__})") from None


def _range(node: Any, size: int) -> tuple[int, int]:
    if type(node) is list and len(node) == 2:
        start, end = node
    elif type(node) is dict:
        start, end = node.get("s"), node.get("e")
    else:
        raise StaleIndexError("a node that is not a range")
    if type(start) is not int or type(end) is not int or not 0 <= start < end < size:
        raise StaleIndexError("a range outside the entry")
    return start, end


class _Unread:
    """A value the read did not need (never returned: a path that reaches one is read whole)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = _Unread()


def _key_bytes(key: str) -> bytes:
    """A key as the writer wrote it (UTF-8 JSON; a lone surrogate escaped)."""
    try:
        return json.dumps(key, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(key).encode("ascii")


def _loads(data: bytes | memoryview) -> Any:
    if len(data) < _FAST_PARSE_BYTES:
        return json.loads(bytes(data).decode("utf-8"))
    from pflow_structure.encoding.jsonio import loads

    return loads(data)


def read_partial(
    entry_path: Path, index_path: Path, execution_id: str, paths: Sequence[Any], page: tuple[int, int] | None = None
) -> tuple[bytes, Any, Any] | None:
    """The entry without its outputs (JSON bytes, ``outputs`` null), the outputs with only what
    ``paths`` (parsed paths; None for one that needs the whole value) reach parsed, and the field
    statistics written at run time (:data:`PRESENCE_KEY`; None when there are none).

    None when there is no usable index, or it does not fit the entry: the caller reads it whole.
    """
    index_raw = read_regular_file(index_path, [])
    fd = open_regular_file(entry_path, []) if index_raw is not None else None
    if fd is None or index_raw is None:
        return None
    try:
        return _read_partial(fd, index_raw, execution_id, paths, page)
    except (StaleIndexError, ValueError, TypeError, KeyError, AttributeError, RecursionError, OSError):
        return None  # a stale, foreign or broken index: the whole entry decides
    finally:
        os.close(fd)


def _read_partial(
    fd: int, index_raw: bytes, execution_id: str, paths: Sequence[Any], page: tuple[int, int] | None
) -> tuple[bytes, Any, Any] | None:
    size = os.fstat(fd).st_size
    if len(index_raw) > max(size, 1 << 16) or None in paths:
        return None
    index = _loads(index_raw)
    if type(index) is not dict or index.get("v") != INDEX_VERSION:
        return None
    if index.get("id") != execution_id or index.get("size") != size:
        return None  # stale: not this entry, or the entry changed since
    node = index.get("outputs")
    start, end = _range(node, size)

    def read(first: int, last: int) -> bytes:
        return os.pread(fd, last - first, first)

    before, after = read(0, start), read(end, size)
    if not before.endswith(_OUTPUTS_KEY) or after != b"}":
        raise StaleIndexError("the outputs are not where the index says")
    header = before + b"null" + after
    materializer = Materializer(node, size, read)
    for segments in paths:
        materializer.fill(segments, page)
    presence = index.get(PRESENCE_KEY)
    return header, materializer.outputs, presence if type(presence) is dict else None
