"""The picker: the smallest faithful rendering of a value, never larger than compact JSON.

``render_auto`` encodes every candidate that fits the value's shape, counts each in o200k
tokens (:func:`pflow_structure.render.tokens.count_tokens`) and keeps the smallest, compact
JSON included, so it never loses to JSON. With ``exact=True`` (the default) a candidate only
counts when its parser reads back the very same value (types included); ``exact=False``
also admits the summaries of seed 004 (line formats, an outline that drops metadata).

When a renderer raises anything but :class:`NotRepresentable`, the answer is the compact JSON
and one line goes to the failure log (seed 004, R2); a call slower than ``slow_ms`` logs a
slow-render line. The log path is an argument; ``None`` logs nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.failure_log import append_failure, failure_record
from pflow_structure.render.lines import render_lines
from pflow_structure.render.outline import OutlineFields, parse_outline, render_outline
from pflow_structure.render.output_text import format_json
from pflow_structure.render.tables import parse_markdown_table, parse_toon, render_markdown_table
from pflow_structure.render.tables import render_toon as _render_toon
from pflow_structure.render.tokens import count_tokens
from pflow_structure.render.tokens import method as token_method

FORMATS = ("outline", "toon", "table", "lines", "json")
SLOW_MS = 50.0


class Rendered(NamedTuple):
    """What :func:`render_auto` chose: the text, its format name and its o200k tokens.

    ``json_tokens`` is the compact JSON's count (the ceiling); ``fallback`` is True when a
    renderer failed and the compact JSON was returned for that reason.
    """

    text: str
    format: str
    tokens: int
    json_tokens: int
    fallback: bool = False


class _Request(NamedTuple):
    value: Any
    operation: str | None
    query: str | None
    now: dt.datetime | None
    exact: bool


def render_auto(
    value: Any,
    *,
    operation: str | None = None,
    exact: bool = True,
    formats: Iterable[str] | None = None,
    query: str | None = None,
    now: dt.datetime | None = None,
    failure_log: Path | None = None,
    slow_ms: float = SLOW_MS,
    clock: Callable[[], float] = time.perf_counter,
) -> Rendered:
    """The smallest candidate rendering of ``value`` in o200k tokens; compact JSON when nothing beats it.

    ``formats`` limits the candidates (names from ``FORMATS``; compact JSON always competes).
    ``operation`` names the tool for the line formats and the failure log. Never raises.

    >>> render_auto([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}]).format
    'toon'
    """
    token_method()  # builds the vocabulary once per process (about a second): not render time
    started = clock()
    request = _Request(value, operation, query, now, exact)
    json_text, json_failure = _json_or_repr(value)
    label = operation or "render_auto"
    size = len(json_text.encode("utf-8", "surrogatepass"))
    json_tokens = count_tokens(json_text)
    best = Rendered(json_text, "json", json_tokens, json_tokens)
    if json_failure is not None:
        _log(failure_log, failure_record(label, size, json_failure, format="json"))
        return best._replace(fallback=True)
    allowed = set(FORMATS if formats is None else formats)
    for name, build in _CANDIDATES:
        if name not in allowed:
            continue
        try:
            text = _printable(build(request))
        except NotRepresentable:
            continue
        except Exception as error:  # seed 004 R2: any failure shows the raw JSON and is logged
            _log(failure_log, failure_record(label, size, error, format=name))
            return best._replace(fallback=True)
        tokens = count_tokens(text)
        if tokens < best.tokens:
            best = Rendered(text, name, tokens, json_tokens)
    elapsed_ms = (clock() - started) * 1000
    if elapsed_ms > slow_ms:
        message = f"slow render: {elapsed_ms:.1f} ms (over {slow_ms:g} ms)"
        _log(failure_log, failure_record(label, size, message, kind="slow", elapsed_ms=round(elapsed_ms, 1)))
    return best


def render_as(
    value: Any,
    format_name: str,
    *,
    operation: str | None = None,
    query: str | None = None,
    now: dt.datetime | None = None,
) -> str:
    """``value`` in the named format (one of ``FORMATS``), asked for by name, so summaries are allowed.

    Raises :class:`NotRepresentable` with the reason when the value does not fit the format
    (a nested value as a table), and ``ValueError`` for a format name that does not exist.
    """
    if format_name == "json":
        return compact_json(value)
    builders = dict(_CANDIDATES)
    if format_name not in builders:
        raise ValueError(f"unknown format {format_name!r}; use one of {', '.join(FORMATS)}")
    try:
        return _printable(builders[format_name](_Request(value, operation, query, now, False)))
    except RecursionError:
        raise NotRepresentable(f"the value is nested too deeply to show as {format_name}") from None


def render_named(
    value: Any,
    format_name: str,
    *,
    operation: str | None = None,
    exact: bool = True,
    failure_log: Path | None = None,
) -> str:
    """``auto``: :func:`render_auto`'s text (never raises); any other name: :func:`render_as`,
    which raises :class:`NotRepresentable` when the value does not fit that format."""
    if format_name == "auto":
        return render_auto(value, operation=operation, exact=exact, failure_log=failure_log).text
    return render_as(value, format_name, operation=operation)


def _printable(text: str) -> str:
    """``text`` if it can be written as UTF-8; a lone surrogate in it (from a non-UTF-8 key or value)
    would reach the reader as something else, so only JSON, which escapes it, can show that value."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise NotRepresentable("the value holds a lone surrogate, which only JSON's escapes can show") from None
    return text


def render_auto_text(value: Any, **options: Any) -> str:
    """Just the text of :func:`render_auto` (same options)."""
    return render_auto(value, **options).text


def compact_json(value: Any) -> str:
    """JSON without spaces (bytes as base64, a lone surrogate escaped), as the CLI's ``--json`` compact."""
    return format_json(value, compact=True)


def _json_or_repr(value: Any) -> tuple[str, BaseException | None]:
    """Compact JSON, or for a value JSON cannot hold (a set, a cycle, too deep) the best text there is."""
    try:
        return compact_json(value), None
    except (TypeError, ValueError, RecursionError) as error:
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr), error
        except (TypeError, ValueError, RecursionError):
            return f"<value that cannot be shown as JSON: {type(error).__name__}>", error


def _log(path: Path | None, record: Mapping[str, Any]) -> None:
    if path is not None:
        append_failure(path, record)


# -- candidates ------------------------------------------------------------------------------


def _toon(request: _Request) -> str:
    if not isinstance(request.value, (dict, list)):  # a bare scalar is its JSON: nothing to compact
        raise NotRepresentable("a scalar is shown as JSON")
    text = _render_toon(request.value)
    _check_same(parse_toon(text), request.value)
    return text


def _table(request: _Request) -> str:
    text = render_markdown_table(request.value)
    _check_same(parse_markdown_table(text), request.value)
    return text


def _outline(request: _Request) -> str:
    records, fields = request.value, OutlineFields()
    if not isinstance(records, list) or not records:
        raise NotRepresentable("an outline needs a non-empty list of records")
    if not all(isinstance(r, Mapping) and fields.id in r and fields.title in r for r in records):
        raise NotRepresentable("outline records need an id and a title")
    text = render_outline(records, open_children=True)
    if request.exact:
        _check_outline(records, parse_outline(text), fields)
    return text


def _lines(request: _Request) -> str:
    if request.exact:
        raise NotRepresentable("line formats are summaries; exact=False admits them")
    if not isinstance(request.value, (list, Mapping)):
        raise NotRepresentable("line formats need a list or a dict")
    if not request.value:
        raise NotRepresentable(f"an empty {'list' if isinstance(request.value, list) else 'dict'} has no lines")
    if request.operation is None and not _is_list_of_dicts(request.value):
        raise NotRepresentable("the generic line format needs a list of dicts")
    return render_lines(request.value, request.operation, query=request.query, now=request.now)


def _is_list_of_dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, Mapping) for item in value)


_CANDIDATES: tuple[tuple[str, Callable[[_Request], str]], ...] = (
    ("outline", _outline),
    ("toon", _toon),
    ("table", _table),
    ("lines", _lines),
)


# -- exactness -------------------------------------------------------------------------------


def _check_outline(records: list[Any], parsed: list[dict[str, Any]], fields: OutlineFields) -> None:
    """Nested input must parse back as it is; flat input as the same records in the same order."""
    if any(fields.children in r for r in records):
        _check_same(parsed, records)
        return
    flat: list[dict[str, Any]] = []
    _flatten(parsed, None, fields, flat)
    # A root's parent written as null or left out reads back the same: there is none.
    originals = [{k: v for k, v in r.items() if not (k == fields.parent and v is None)} for r in records]
    _check_same(flat, originals)


def _flatten(records: list[dict[str, Any]], parent: Any, fields: OutlineFields, out: list[dict[str, Any]]) -> None:
    for record in records:
        children = record.pop(fields.children, [])
        out.append(record if parent is None else {**record, fields.parent: parent})
        _flatten(children, record[fields.id], fields, out)


def _check_same(decoded: Any, original: Any) -> None:
    if not same_value(decoded, original):
        raise NotRepresentable("the rendering does not read back as the same value")


def same_value(a: Any, b: Any) -> bool:
    """Equal with types compared too (``1``, ``1.0`` and ``True`` differ); dict order ignored."""
    if type(a) is not type(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return False
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
