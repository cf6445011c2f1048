"""The cache entry: the spec's JSON format, written and checked field by field when read."""

from __future__ import annotations

import json

from pflow_structure.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

FORMAT_VERSION = 1
_INFINITY = float("inf")  # not math.inf: importing math is about 0.3 ms of read-fields' start-up
_REQUIRED = ("execution_id", "node_type", "timestamp", "ttl_hours", "outputs")


class CacheEntry(NamedTuple):
    """One stored execution."""

    execution_id: str
    node_type: str
    timestamp: str
    ttl_hours: float
    params: Any
    outputs: Any
    binary_paths: Sequence[Sequence[str | int]] = ()
    notes: Sequence[str] = ()
    # Lists of strings that hold a text answer split into lines: a reference there passes the text.
    text_paths: Sequence[Sequence[str | int]] = ()
    # False when ``outputs`` holds only what some paths reach (see ExecutionCache.get_fields):
    # the values no path reached are UNREAD placeholders, and a miss is judged on the whole entry.
    complete: bool = True
    # With a partly read entry: the structure's field statistics written at run time, if any (cache/index.py).
    field_presence: Any = None

    def age_hours(self, now: float) -> float:
        return (now - parse_timestamp(self.timestamp)) / 3600.0


class StreamedList:
    """A list in ``outputs`` that is written item by item as ``items()`` yields them, never held whole
    (a large tool result's text, parsed one item at a time). The entry holds the same bytes as for the
    list itself. ``items`` is called again when a write is tried again (another directory)."""

    __slots__ = ("items",)

    def __init__(self, items: Callable[[], Iterable[Any]]) -> None:
        self.items = items


def entry_document(entry: CacheEntry) -> dict[str, Any]:
    """The JSON object of ``entry``, ``outputs`` last (so that the rest can be read without it)."""
    document = {
        "execution_id": entry.execution_id,
        "node_type": entry.node_type,
        "timestamp": entry.timestamp,
        "ttl_hours": entry.ttl_hours,
        "params": entry.params,
        "binary_paths": entry.binary_paths,
        "notes": entry.notes,
        "format_version": FORMAT_VERSION,
    }
    if entry.text_paths:
        document["text_paths"] = entry.text_paths
    document["outputs"] = entry.outputs
    return document


def serialise_entry(entry: CacheEntry) -> bytes:
    """UTF-8 JSON of ``entry``; ``outputs`` must already be JSON-safe (see ``encode_value``).

    Raises ``TypeError`` or ``ValueError`` for outputs that are not (a programming error). A lone
    surrogate (e.g. a file name decoded with surrogateescape) has no UTF-8 form: it is escaped as
    ``\\udcxx``, so it still round-trips and the file stays valid UTF-8.
    """
    from pflow_structure.encoding.jsonio import dumps  # write path only

    return dumps(entry_document(entry))


def parse_entry(raw: bytes, execution_id: str) -> CacheEntry:
    """Check every field of a stored entry; raises ``ValueError`` saying what is wrong."""
    parsed, data = _parse_large(raw)
    try:
        if not parsed:
            data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise ValueError("missing " + ", ".join(missing))
    if data["execution_id"] != execution_id:
        raise ValueError("the id inside does not match the file name")
    if not isinstance(data["node_type"], str):
        raise ValueError("node_type is not a string")
    parse_timestamp(data["timestamp"])
    ttl = data["ttl_hours"]
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < _INFINITY:
        raise ValueError("ttl_hours is not a positive number")
    binary_paths = data.get("binary_paths", [])
    if not isinstance(binary_paths, list) or not all(_is_path(p) for p in binary_paths):
        raise ValueError("binary_paths is not a list of paths")
    text_paths = data.get("text_paths", [])
    if not isinstance(text_paths, list) or not all(_is_path(p) for p in text_paths):
        raise ValueError("text_paths is not a list of paths")
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        raise ValueError("notes is not a list of strings")
    return CacheEntry(
        execution_id=execution_id,
        node_type=data["node_type"],
        timestamp=data["timestamp"],
        ttl_hours=float(ttl),
        params=data.get("params", {}),
        outputs=data["outputs"],
        binary_paths=binary_paths,
        notes=notes,
        text_paths=text_paths,
    )


def _parse_large(raw: bytes) -> tuple[bool, Any]:
    """orjson for a large entry (no text copy, three times faster); a small one is parsed before
    orjson would even have loaded, so it never pays for its import."""
    if len(raw) < 1 << 20:
        return False, None
    from pflow_structure.encoding.jsonio import parse_fast

    return parse_fast(raw)


def _is_path(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(part, str) or (isinstance(part, int) and not isinstance(part, bool)) for part in value
    )


def format_timestamp(seconds: float) -> str:
    """ISO 8601 in UTC, to the second: ``2025-11-18T10:53:22Z``."""
    import datetime as _dt

    moment = _dt.datetime.fromtimestamp(int(seconds), tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: Any) -> float:
    """Seconds since the epoch; a timestamp without a zone is taken as UTC."""
    if not isinstance(text, str):
        raise ValueError("timestamp is not a string")
    seconds = _written_form_seconds(text)
    if seconds is not None:
        return seconds
    import datetime as _dt

    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestamp {text[:40]!r} is not ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.timestamp()


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _written_form_seconds(text: str) -> float | None:
    """The seconds of a timestamp in the form :func:`format_timestamp` writes (``2025-11-18T10:53:22Z``),
    read without importing datetime (a tenth of read-fields' start-up); None for any other form (or an
    impossible date), which datetime reads or rejects. The same number as datetime's."""
    if len(text) != 20 or text[4::3] != "--T::Z":  # the separators, at 4, 7, 10, 13, 16 and 19
        return None
    digits = text[0:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19]
    if not (digits.isascii() and digits.isdigit()):
        return None
    year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
    hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= _MONTH_DAYS[month - 1] + leap:
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    # Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
    shifted = year - (month <= 2)
    era, year_of_era = divmod(shifted, 400)
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    days = era * 146097 + day_of_era - 719468
    return float(days * 86400 + hour * 3600 + minute * 60 + second)
