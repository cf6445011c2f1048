"""Value hints: a few tokens that make a field legible where its name says little.

Read from the statistics inference gathered anyway (:class:`FieldStats`), never from one item alone:

- a time: numbers (or digit strings) in the range of epoch seconds, milliseconds, microseconds or
  nanoseconds between 2001-09-09 (10**9 s) and 2100 (``epoch s 2021-03-01..03-09``, ``2012..2017``
  across years), or ISO 8601 strings (``2021-03-01..03-09``); a name that says id, number, count or
  size is never read as a time;
- two to four distinct strings that repeat, listed (``open|closed``);
- the range of numbers seen in many items (``0..6``).

Which kinds are shown is :data:`SHOWN` (``benchmarks/value_hints.py`` measures what each costs on the
corpus and wins on held-out questions; see benchmarks/README.md).
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection

from pflow_structure.structure.field_stats import FieldStats

# "epoch": a time under a name that does not say time (GitHub's ``w``); "epoch-named": under one that does.
KINDS = ("epoch", "epoch-named", "iso", "enum", "range")
SHOWN: tuple[str, ...] = ("epoch",)
ENUM_MAX = 4  # at most this many distinct strings are listed ...
ENUM_CHARS = 32  # ... of at most this many characters in all
_ENUM_VALUE = re.compile(r"[\w.:/-]+( [\w.:/-]+)?\Z")  # a word or two, no separator of ours
# A name that says what the number is (an id, a count) is not read as a time, whatever its range.
_NOT_A_TIME = re.compile(r"(?:id|ids|number|num|count|size|bytes|total|seq|sequence|version)\Z", re.IGNORECASE)
_KEY_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|_|\d)|[A-Z]?[a-z]+|[A-Z]+")
_TIME_WORDS = frozenset(
    "ts at time date created updated modified expires expiry seen read start end since until timestamp".split()  # noqa: SIM905
)
_FIRST = 1_000_000_000  # 2001-09-09: smaller counts (GitHub's plan.space, 976,562,499 bytes) are no time
_YEAR_2100 = 4_102_444_800
_EPOCH_UNITS = (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9))


def value_hint(node: FieldStats, key: str, kinds: Collection[str] = SHOWN) -> str:
    """The hint for one scalar field (``""`` for none): ``epoch s 2021-03-01..03-09``, ``open|closed``, ``0..6``."""
    types = set(node.types) - {"null"}
    if types and types <= {"int", "float"} and node.num_min is not None and node.num_max is not None:
        unit = epoch_unit(node.num_min, node.num_max, key)
        if unit:
            name, per_second = unit
            shown = _epoch_shown(key, kinds)
            return f"epoch {name} {_span(node.num_min / per_second, node.num_max / per_second)}" if shown else ""
        if "range" in kinds and node.scalars >= 2:
            return f"{_number(node.num_min)}..{_number(node.num_max)}"
        return ""
    if types != {"str"}:
        return ""
    if node.times and node.times == node.str_count:
        return _string_time(node, key, kinds)
    if "enum" in kinds:
        return _enum(node)
    return ""


def names_a_time(key: str) -> bool:
    """A key that says it holds a time (``created_at``, ``lastSeen``, ``ts``): the hint adds its unit and span only."""
    return any(word.lower() in _TIME_WORDS for word in _KEY_WORD.findall(key))


def epoch_unit(low: float, high: float, key: str) -> tuple[str, int] | None:
    """The epoch unit (name, per second) that puts both ``low`` and ``high`` between 2000 and 2100."""
    if _NOT_A_TIME.search(key):
        return None
    for name, per_second in _EPOCH_UNITS:
        if _FIRST * per_second <= low and high < _YEAR_2100 * per_second:
            return name, per_second
    return None


def _string_time(node: FieldStats, key: str, kinds: Collection[str]) -> str:
    low, high = node.time_lo, node.time_hi
    if "-" in low:  # ISO 8601: the dates are the strings' first ten characters
        return _dates(low[:10], high[:10]) if "iso" in kinds else ""
    unit = epoch_unit(float(low), float(high), key)
    if unit is None or not _epoch_shown(key, kinds):
        return ""
    return f"epoch {unit[0]} {_span(float(low) / unit[1], float(high) / unit[1])}"


def _epoch_shown(key: str, kinds: Collection[str]) -> bool:
    return ("epoch-named" if names_a_time(key) else "epoch") in kinds


def _enum(node: FieldStats) -> str:
    seen = node.distinct
    if not seen or not 2 <= len(seen) <= ENUM_MAX or node.scalars <= len(seen):
        return ""  # one value (a constant says nothing of states), many, or none repeats
    values = sorted(seen, key=str)
    if not all(isinstance(value, str) and _ENUM_VALUE.match(value) for value in values):
        return ""
    text = "|".join(values)
    return text if len(text) <= ENUM_CHARS else ""


def _span(low: float, high: float) -> str:
    """Epoch seconds → ``2021-03-01..03-09`` (the year once), ``2021-03-01`` for one day, ``2012..2017``."""
    return _dates(time.strftime("%Y-%m-%d", time.gmtime(low)), time.strftime("%Y-%m-%d", time.gmtime(high)))


def _dates(low: str, high: str) -> str:
    if low == high:
        return low
    # Within one year the days (the year once); across years the years alone: 8 tokens fewer.
    return f"{low}..{high[5:]}" if low[:4] == high[:4] else f"{low[:4]}..{high[:4]}"


def _number(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}" if abs(value) < 1e4 else str(round(value))
    return str(int(value))
