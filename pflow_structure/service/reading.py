"""Reading values from a cached execution: each path resolved, and why each ``None`` is ``None``.

Below :mod:`pflow_structure.service` and :mod:`pflow_structure.service.answers`, which both read
through :func:`read_fields_detailed`.
"""

from __future__ import annotations

from pflow_structure.errors import ParameterError, PathNotFoundError, PathSyntaxError
from pflow_structure.paths import (
    AtLeast,
    format_path,
    is_jsonpath,
    parse_json_text,
    parse_path,
    resolve,
    resolve_grouped,
)
from pflow_structure.records import NamedTuple
from pflow_structure.settings import Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend

# Execution id -> node_type of the entries this process read lately, so that the adapter answering
# a read_fields call can attribute it without reading the entry again (bounded; cleared when full).
# Here rather than in cache/usage.py: every read notes one, and read-fields' start-up should not
# load the usage log for it.
_READ: dict[str, str] = {}
_READ_MAX = 1024
COUNTED_MATCHES = 10_000  # a page of a JSONPath read counts its matches up to this many (cheap), then "at least"


def note_read(execution_id: str, node_type: str) -> None:
    """Remember which tool or node wrote ``execution_id`` (called on each read, for usage counts)."""
    if len(_READ) >= _READ_MAX:
        _READ.clear()
    _READ[execution_id] = node_type


def node_type_read(execution_id: Any) -> str | None:
    """The node_type of an entry this process read, or None."""
    return _READ.get(execution_id) if isinstance(execution_id, str) else None


class FieldReadout(NamedTuple):
    """Values read from one execution, why some are None, totals for paged wildcards,
    how many items of a wildcard lack the path, and where each value sits (a concrete path,
    one per item of a wildcard's page). A path with two or more wildcards answers nested lists, one
    per parent (an empty list for a parent without values); with ``names`` each value of a wildcard or
    JSONPath path comes as ``{concrete path: value}`` instead, only the values found."""

    execution_id: str
    values: dict[str, Any]
    errors: dict[str, str]
    totals: dict[str, int]
    missing: dict[str, int]
    where: dict[str, list[Any]] = {}  # noqa: RUF012 (read_fields_detailed always gives its own)
    names: str | None = None  # "template" or "normalized": each value of a multi path as {its path: value}
    page_counts: dict[str, int] = {}  # noqa: RUF012 (path -> page length: its missing count covers the page only)


def read_fields_detailed(
    execution_id: str,
    field_paths: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    char_offset: int = 0,
    names: str | None = None,
    most: int | None = None,
) -> FieldReadout:
    """Like :func:`read_fields`, and says why each ``None`` is ``None``.

    ``char_offset`` skips that many characters of a path that names one string (a long string
    is read in parts; see :mod:`pflow_structure.render.budget`). ``names`` ("template" or
    "normalized") answers each value of a wildcard or JSONPath path with the path of its node.
    ``most``: the most items an answer can show of one path (from its budget): a JSONPath read
    without a ``limit`` then stops past them too, its total possibly :class:`AtLeast`."""
    if isinstance(field_paths, (str, bytes)):
        raise ParameterError(f"field_paths must be a list of paths, not one string; pass [{str(field_paths)[:80]!r}]")
    if offset < 0 or (limit is not None and limit < 0):
        raise ParameterError(f"offset ({offset}) and limit ({limit}) must not be negative")
    if char_offset < 0:
        raise ParameterError(f"char_offset ({char_offset}) must not be negative")
    if names not in (None, "template", "normalized"):
        raise ParameterError(f"names must be template or normalized, not {names!r}")
    if cache is None:
        cache = (settings or Settings.from_env()).cache()
    entry = _entry_for(cache, execution_id, field_paths, None if limit is None else (offset, limit))
    note_read(execution_id, entry.node_type)  # for usage counts (pflow-structure stats)
    readout = FieldReadout(execution_id, {}, {}, {}, {}, {}, names, {})
    for path in field_paths:
        key = path if isinstance(path, str) else repr(path)
        if (
            limit is not None
            and not entry.complete
            and names is None
            and _read_page(readout, key, entry, offset, limit)
        ):
            continue
        stop = _stop(path, offset, limit if limit is not None else most, names)
        try:
            try:
                matches, multi = resolve(entry.outputs, path, stop=stop)
            except PathNotFoundError:
                if entry.complete:
                    raise
                # A miss on a partly read entry is judged (and its reason worded) on the whole entry.
                entry = cache.get(execution_id)
                matches, multi = resolve(entry.outputs, path, stop=stop)
        except (PathSyntaxError, PathNotFoundError) as exc:
            readout.values[key] = None
            readout.errors[key] = str(exc)
            continue
        if multi:
            end = None if limit is None else offset + limit
            if names is not None:
                _read_named(readout, key, matches, (offset, end), entry.binary_paths)
                continue
            grouped = resolve_grouped(entry.outputs, path) if _may_group(path) else None
            if grouped is not None:
                readout.totals[key] = len(grouped)
                readout.values[key] = [_nested_values(group, entry.binary_paths) for group in grouped[offset:end]]
                readout.where[key] = [_nested_paths(group) for group in grouped[offset:end]]
                continue
            counted = stop is None or len(matches) < stop  # else the read stopped past the page
            readout.totals[key] = len(matches) if counted else AtLeast(len(matches))
            page = matches[offset:end]  # only the page is restored (and, from an index, was read)
            lacking = sum(1 for m in (matches if counted else page) if m.missing)
            if lacking:
                readout.missing[key] = lacking
                if not counted:
                    readout.page_counts[key] = len(page)
            matches = page
            readout.values[key] = [_restored(m.value, m.path, entry.binary_paths) for m in matches]
            readout.where[key] = [m.path for m in matches]
        else:
            values = [_restored(m.value, m.path, entry.binary_paths) for m in matches[:1]]
            value = values[0] if values else None
            if char_offset and isinstance(value, str):
                value = value[char_offset:]
            readout.values[key] = value
            readout.where[key] = [m.path for m in matches[:1]]
    return readout


def _read_page(readout: FieldReadout, key: str, entry: Any, offset: int, limit: int) -> bool:
    """``X[*].a.b`` on an entry read in part: only the page's items were parsed, so only they are
    resolved, and the items that lack the path are counted on the page. False when ``key`` is not
    such a path (then it is resolved as usual)."""
    try:
        segments = parse_path(key) if not is_jsonpath(key) else ()
    except PathSyntaxError:
        return False
    star = [i for i, segment in enumerate(segments) if not isinstance(segment, (str, int))]
    if len(star) != 1 or star[0] == len(segments) - 1:
        return False
    head = segments[: star[0]]
    rest = [segment for segment in segments[star[0] + 1 :] if isinstance(segment, (str, int))]
    try:
        containers = resolve(entry.outputs, format_path(head))[0] if head else []
    except PathNotFoundError:
        return False
    if len(containers) != 1 or not isinstance(containers[0].value, list):
        return False
    from pflow_structure.cache.index import UNREAD  # loaded already: the entry was read through its index

    if all(item is not UNREAD for item in containers[0].value):
        return False  # the whole list was read: resolved as usual, the lacking items counted over all of it
    container = containers[0]
    total = len(container.value)
    values: list[Any] = []
    where: list[Any] = []
    lacking = 0
    for index in range(offset, min(offset + limit, total)):
        value, found = _step_in(container.value[index], rest)
        if not found:
            values.append(None)
            where.append((*container.path, index))
            lacking += 1
            continue
        concrete = (*container.path, index, *rest)
        values.append(_restored(value, concrete, entry.binary_paths))
        where.append(concrete)
    readout.totals[key], readout.values[key], readout.where[key] = total, values, where
    exact = _lacking(entry.field_presence, head, rest, total)
    if exact is not None and (exact or not lacking):  # the run's structure counts every item
        lacking = exact
    elif lacking:
        readout.page_counts[key] = len(values)
    if lacking:
        readout.missing[key] = lacking
    return True


def _lacking(presence: Any, head: Sequence[Any], rest: Sequence[str | int], total: int) -> int | None:
    """How many of the ``total`` items of ``head[*]`` lack ``rest``, from the structure's statistics
    written at run time; None where they do not say exactly (an index before, a null or a string on the
    way, a key missing in some items below another that is, or no statistics)."""
    if not isinstance(presence, dict) or not all(isinstance(step, str) for step in [*head, *rest]):
        return None
    lacking = 0
    for depth in range(len(rest)):
        info = presence.get(format_path([*head, 0, *rest[: depth + 1]]))
        if not isinstance(info, list) or len(info) != 3:
            return None
        kind, present, of = info
        if depth < len(rest) - 1 and kind != "dict":
            return None  # a null, a list or a JSON string on the way: not counted exactly
        if present is not None:
            if lacking or of != total or not isinstance(present, int):
                return None
            lacking = total - present
    return lacking


def _step_in(value: Any, steps: Sequence[str | int]) -> tuple[Any, bool]:
    """The value at ``steps`` (names and indices) below ``value``, as the resolver reads it, and whether
    it is there."""
    for step in steps:
        if isinstance(value, str) and value:
            parsed = parse_json_text(value)  # strings holding JSON are read through
            value = value if parsed is None else parsed
        in_dict = isinstance(value, dict) and isinstance(step, str) and step in value
        in_list = isinstance(value, list) and isinstance(step, int) and -len(value) <= step < len(value)
        if not (in_dict or in_list):
            return None, False
        value = value[step]
    return value, True


def _stop(path: Any, offset: int, limit: int | None, names: str | None) -> int | None:
    """How many matches a page of ``limit`` items of a JSONPath read resolves (None: all). The engine yields its nodes
    one by one, so a page of ``$..*`` on a large value stops past the page, its total counted up to
    ``COUNTED_MATCHES`` and past that said as "at least" (template paths count their list whole)."""
    if limit is None or names is not None or not isinstance(path, str) or not is_jsonpath(path) or _groups(path):
        return None
    return max(offset + limit + 1, COUNTED_MATCHES)


def _groups(path: str) -> bool:
    """Whether ``path`` is read grouped (two or more wildcards or many-node JSONPath selectors)."""
    if not _may_group(path):
        return False
    if not is_jsonpath(path):
        return True
    from pflow_structure.paths.jsonpath import many_selectors

    try:
        return many_selectors(path) >= 2
    except PathSyntaxError:
        return False


def _may_group(path: str) -> bool:
    """Whether ``path`` may hold two wildcards (or many-node JSONPath selectors): worth grouping."""
    return path.count("[*]") >= 2 or is_jsonpath(path)


def _nested_values(group: Any, binary_paths: Sequence[Sequence[str | int]]) -> Any:
    if isinstance(group, list):
        return [_nested_values(item, binary_paths) for item in group]
    return None if group.missing else _restored(group.value, group.path, binary_paths)


def _nested_paths(group: Any) -> Any:
    return [_nested_paths(item) for item in group] if isinstance(group, list) else group.path


def _read_named(
    readout: FieldReadout,
    key: str,
    matches: Sequence[Any],
    page: tuple[int, int | None],
    binary_paths: Sequence[Sequence[str | int]],
) -> None:
    """The values found, each as ``{its path: value}`` (the template grammar, or RFC 9535's Normalized Paths)."""
    found = [m for m in matches if not m.missing]
    readout.totals[key] = len(found)
    if len(found) < len(matches):
        readout.missing[key] = len(matches) - len(found)
    shown = found[page[0] : page[1]]
    from pflow_structure.paths.jsonpath import normalized_path

    name_of = normalized_path if readout.names == "normalized" else format_path
    readout.values[key] = [{name_of(m.path): _restored(m.value, m.path, binary_paths)} for m in shown]
    readout.where[key] = [m.path for m in shown]


def _entry_for(cache: CacheBackend, execution_id: str, field_paths: Sequence[str], page: tuple[int, int] | None) -> Any:
    """The entry, with only what ``field_paths`` (of a last ``[*]``, the page) reach parsed if the store can."""
    get_fields = getattr(cache, "get_fields", None)
    return get_fields(execution_id, field_paths, page=page) if get_fields is not None else cache.get(execution_id)


def _restored(value: Any, where: Sequence[str | int], binary_paths: Sequence[Sequence[str | int]]) -> Any:
    """``restore_binary``, loaded only for an entry that holds bytes (few do)."""
    if not binary_paths:
        return value
    from pflow_structure.encoding.binary import restore_binary

    return restore_binary(value, where, binary_paths)
