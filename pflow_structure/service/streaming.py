"""A large JSON list (a tool result's text) cached and described one item at a time, never held whole;
a plain text's lines too (:func:`capture_text_lines`).

``capture_outputs(node_type, params, {"result": loads(text)})`` holds the parsed list: for 100 MB of
JSON that is about 460 MB of Python objects. :func:`capture_list_text` gives the same entry, byte for
byte, and the same structure answer from the text itself: the cache entry is written item by item
(:class:`~pflow_structure.cache.entry.StreamedList`), then the structure is inferred item by item
(:func:`~pflow_structure.structure.infer_result_items`), then, when some field is missing from some
items, the items that hold it are named in one more pass. Each pass parses the items again from the
text (the standard library's scanner, :func:`~pflow_structure.encoding.jsonio.list_items`): a few
tenths of a second for 100 MB, and one item in memory at a time.

It declines (None: the caller parses the text whole, as before) where the whole value's way would do
something an item at a time cannot: text that is not one JSON list, an item the encoder would change
(NaN, a huge integer: notes and rewritten values), a ``want`` (its answer reads values), a cache that
is not the filesystem store, or an entry that could not be written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

STREAM_CHARS = 1 << 20  # a text shorter than this is parsed whole: it costs little either way


class StreamedOutputs(NamedTuple):
    """What :func:`capture_list_text` did: the structure answer, the whole structure, and the outputs read
    back from the cache when a data answer is possible (None when the list is far larger than any view)."""

    result: dict[str, Any]
    structure: dict[str, Any]
    outputs: dict[str, Any] | None


class TextInFile(Protocol):
    """A text kept in a file (the proxy's spilled tool result, mcp/proxy/spill.py): its length in
    characters, its first characters, and the whole of it a piece at a time."""

    head: str

    def __len__(self) -> int: ...

    def pieces(self) -> Iterator[str]: ...


class NotOneListError(ValueError):
    """A text that starts like a JSON list and is not one: its items, scanned in turn, break off
    (``capture_list_text(strict=True)``; found without parsing the text whole)."""


class _TakeWholeError(Exception):
    """The list is not for this way (not a ValueError: the cache must not take it for unwritable outputs)."""


class _NotOneList(_TakeWholeError):
    """The items do not scan as one JSON list."""


def list_bounds(text: str) -> tuple[int, int] | None:
    """Where the JSON list in ``text`` starts and ends (surrounding whitespace left out, as ``str.strip``
    leaves it out), when the text starts like one; else None."""
    end = len(text)
    start = 0
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if text.startswith("[", start) else None


def capture_list_text(
    node_type: str,
    params: Mapping[str, Any],
    text: str | TextInFile,
    *,
    settings: Settings,
    want: str | None = None,
    strict: bool = False,
) -> StreamedOutputs | None:
    """``capture_outputs(node_type, params, {"result": loads(text)})`` for a text that is one JSON list
    (or a text in a file, read a piece at a time), without the list ever held whole; None when it
    declines (see the module docstring). ``strict``: a text whose items break off before the list ends
    raises :class:`NotOneListError` rather than returning None (the proxy then knows it broken without
    parsing it whole)."""
    items = _items_of(text)
    if want is not None or items is None or len(text) < STREAM_CHARS:
        return None
    try:
        return _captured(node_type, params, items, settings, ())
    except _NotOneList:
        if strict:
            raise NotOneListError("its items, read in turn, break off before the list ends") from None
        return None  # nothing was left in the cache (the entry is written to a temporary file first)


def capture_text_lines(
    node_type: str, params: Mapping[str, Any], text: str | TextInFile, *, settings: Settings, want: str | None = None
) -> StreamedOutputs | None:
    """``capture_outputs(node_type, params, {"result": text.split("\\n")}, text_paths=[["result"]])`` (a plain
    text kept as its lines, so that a reference to ``result`` passes the text on) for a text in a file or a
    long one, one line at a time; None when it declines (a ``want``, a short text, another cache)."""
    if want is not None or len(text) < STREAM_CHARS:
        return None

    def lines() -> Iterator[str]:
        return _lines_in(text.pieces() if not isinstance(text, str) else iter((text,)))

    return _captured(node_type, params, lines, settings, [["result"]])  # lines always read: no _NotOneList


def _lines_in(pieces: Iterator[str]) -> Iterator[str]:
    """``"".join(pieces).split("\\n")``, a line at a time (a line cut by the end of a piece is joined once)."""
    held: list[str] = []
    for piece in pieces:
        lines = piece.split("\n")
        if len(lines) == 1:
            held.append(piece)
            continue
        held.append(lines[0])
        yield "".join(held)
        yield from lines[1:-1]
        held = [lines[-1]]
    yield "".join(held)


def _captured(
    node_type: str,
    params: Mapping[str, Any],
    items: Callable[[], Iterator[Any]],
    settings: Settings,
    text_paths: Any,
) -> StreamedOutputs | None:
    """The list ``items()`` gives written to the cache item by item and described; None when it declines.
    Raises ``_NotOneList`` when the items break off."""
    from pflow_structure.cache.entry import StreamedList
    from pflow_structure.cache.store import ExecutionCache
    from pflow_structure.encoding.encode import is_plain_json

    cache = settings.cache()
    if type(cache) is not ExecutionCache:
        return None

    def plain_items() -> Iterator[Any]:
        try:
            for item in items():
                if not is_plain_json(item, 2):  # an item of {"result": [...]}: depth 2
                    raise _TakeWholeError
                yield item
        except ValueError:  # not one JSON list: the whole way says what is wrong with it
            raise _NotOneList from None

    try:
        stored = cache.put(node_type, dict(params), {"result": StreamedList(plain_items)}, text_paths=text_paths)
    except _NotOneList:  # a _TakeWholeError too: the caller tells it apart
        raise
    except _TakeWholeError:
        return None
    if not stored.cached:
        return None
    result, structure = _described(node_type, params, stored, items, settings)
    return StreamedOutputs(result, structure, _outputs_if_small(stored, params, result, cache))


def _items_of(text: str | TextInFile) -> Callable[[], Iterator[Any]] | None:
    """What reads the items of the list ``text`` holds, each time it is called; None when it is no list."""
    from pflow_structure.encoding.jsonio import list_items, list_items_in

    if not isinstance(text, str):
        in_file = text
        return (lambda: list_items_in(in_file.pieces())) if in_file.head.lstrip().startswith("[") else None
    bounds = list_bounds(text)
    if bounds is None:
        return None
    start, end = bounds
    return lambda: list_items(text, start, end)


def _described(
    node_type: str, params: Mapping[str, Any], stored: Any, items: Any, settings: Settings
) -> tuple[dict[str, Any], dict[str, Any]]:
    from pflow_structure.service.describing import Observed, describe_value
    from pflow_structure.structure import infer_result_items
    from pflow_structure.structure.paging import paging_line
    from pflow_structure.structure.presence import add_present_at_items

    length = 0

    def counted() -> Iterator[Any]:
        nonlocal length
        for item in items():
            length += 1
            yield item

    inferred = infer_result_items(counted(), max_paths=settings.max_paths)
    # The paging of {"result": [...]} reads the list's length only (lists are not entered): a stand-in of that length.
    page = paging_line({"result": [None] * length}, params)
    observed = Observed(inferred, lambda structure: add_present_at_items(structure, items()), page)
    cache = settings.cache()
    return describe_value(
        node_type, None, stored, [], [], settings=settings, cache=cache, params=params, observed=observed
    )


def _outputs_if_small(
    stored: Any, params: Mapping[str, Any], described: dict[str, Any], cache: Any
) -> dict[str, Any] | None:
    """The outputs read back when their compact JSON might cost no more than a view (a data answer, see
    service/want_answer.py ``sized_answer``); None when the entry is far larger than that."""
    from pflow_structure.encoding.jsonio import dumps
    from pflow_structure.service.want_answer import CHARS_PER_TOKEN, view_tokens

    size = stored.path.stat().st_size - len(dumps(dict(params))) - 1024  # the entry's fields around the outputs
    # A character is at most four bytes of UTF-8; twice that leaves room for numbers written another way.
    if size > 2 * 4 * CHARS_PER_TOKEN * view_tokens(described):
        return None
    outputs: dict[str, Any] = cache.get(stored.execution_id).outputs
    return outputs
