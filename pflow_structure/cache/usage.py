"""Usage counts: per tool or node, how many results were answered and their tokens, raw against answered.

No value is ever recorded: a record is a tool or node name (the cache entry's ``node_type``, such
as ``mcp:list_issues`` or ``read-json``) and whole numbers (:data:`FIELDS`). The file store keeps
one JSON line per answer in ``{cache directory}/usage/YYYY-MM-DD.jsonl`` (UTC days), appended with
one ``write`` on a file opened ``O_APPEND``: lines from concurrent processes never interleave, and
recording costs one open and one write. Files are 0600 in a 0700 directory, never followed through
a symlink.

Bounded size: a day's file stops growing at :data:`MAX_DAY_BYTES` (about 100,000 answers; the
report names such a day, whose later answers are not counted). When a process opens a new day's
file it folds every earlier day except yesterday (whose writers may still be finishing) into one
line per tool (``YYYY-MM-DD.sum.jsonl``) and deletes days older than :data:`RETENTION_DAYS`: the
directory holds at most two days of single records and a line per tool for each older day.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "FIELDS",
    "MAX_DAY_BYTES",
    "RETENTION_DAYS",
    "UsageLog",
    "day_of",
    "days_back",
    "report",
    "usage_counts",
]

# results: tool or node results answered; cached: those answered as structure (the value kept in the
# cache); raw_tokens: their tokens as they came; structure_tokens / inline_tokens: what the agent was
# answered for them (a structure, or the result itself, compacted or as it was); reads: read_fields
# and edit_fields answers on their cached values; read_tokens: the tokens of those answers.
FIELDS = ("results", "cached", "raw_tokens", "structure_tokens", "inline_tokens", "reads", "read_tokens")
MAX_DAY_BYTES = 16 * 1024**2
RETENTION_DAYS = 400
MAX_NAME_CHARS = 200
SUFFIX = ".jsonl"
SUM_SUFFIX = ".sum.jsonl"
_DAY = 86400
_DAY_NAME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted in place of a day file must not hang


def usage_counts(kind: str, *, raw: int = 0, answered: int = 0) -> dict[str, int]:
    """The counts of one answer: ``kind`` is ``structure``, ``inline`` or ``read``."""
    if kind == "read":
        return {"reads": 1, "read_tokens": answered}
    if kind == "structure":
        return {"results": 1, "cached": 1, "raw_tokens": raw, "structure_tokens": answered}
    if kind == "inline":
        return {"results": 1, "raw_tokens": raw, "inline_tokens": answered}
    raise ValueError(f"usage kind must be structure, inline or read, not {kind!r}")


def day_of(seconds: float) -> str:
    """The UTC day of a Unix time: ``2026-11-26``."""
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


def days_back(now: float, days: int) -> list[str]:
    """The last ``days`` UTC days up to and including today's, newest first."""
    return [day_of(now - back * _DAY) for back in range(days)]


def record_line(tool: str, counts: Mapping[str, int]) -> bytes:
    """One JSON line: the name (cut to :data:`MAX_NAME_CHARS`) and the counts that are not zero."""
    record: dict[str, Any] = {"tool": str(tool)[:MAX_NAME_CHARS]}
    record.update((name, int(counts[name])) for name in FIELDS if counts.get(name))
    return (json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def add_line(totals: dict[str, dict[str, int]], line: bytes | str) -> None:
    """Add one line's counts to ``totals`` (tool -> counts); a line that is not a record is skipped."""
    try:
        record = json.loads(line)
    except ValueError:
        return
    tool = record.get("tool") if isinstance(record, dict) else None
    if not isinstance(tool, str):
        return
    row = totals.setdefault(tool, dict.fromkeys(FIELDS, 0))
    for name in FIELDS:
        value = record.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            row[name] += value


def report(totals: Mapping[str, Mapping[str, int]], **about: Any) -> dict[str, Any]:
    """The report ``stats`` prints: a row per tool (most raw tokens first) and the total.

    ``answered_tokens`` is structure + inline + read tokens; ``saved_tokens`` is raw minus answered
    (negative when the reads cost more than the results would have)."""
    rows = [_row(tool, counts) for tool, counts in totals.items()]
    rows.sort(key=lambda row: (-row["raw_tokens"], row["tool"]))
    total = _row("total", {name: sum(row[name] for row in rows) for name in FIELDS})
    del total["tool"]
    return {**about, "tools": rows, "total": total}


def _row(tool: str, counts: Mapping[str, int]) -> dict[str, Any]:
    row: dict[str, Any] = {"tool": tool, **{name: int(counts.get(name, 0)) for name in FIELDS}}
    row["answered_tokens"] = row["structure_tokens"] + row["inline_tokens"] + row["read_tokens"]
    row["saved_tokens"] = row["raw_tokens"] - row["answered_tokens"]
    return row


class UsageLog:
    """Usage counts in files beside the execution cache (see the module docstring).

    >>> log = UsageLog(tmp / "usage")                                     # doctest: +SKIP
    >>> log.record("mcp:list_issues", usage_counts("structure", raw=5000, answered=300))  # doctest: +SKIP
    """

    def __init__(self, directory: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.clock = clock

    def record(self, tool: str, counts: Mapping[str, int]) -> bool:
        """Append one record to today's file; False when the day's file is full. Raises OSError."""
        from pflow_structure.cache.files import ensure_private_dir

        now = self.clock()
        path = self.directory / (day_of(now) + SUFFIX)
        flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC | _NONBLOCK
        created = False
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            ensure_private_dir(self.directory)
            try:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:  # another process created it just now
                fd = os.open(path, flags)
        try:
            if created:
                os.fchmod(fd, 0o600)  # the mode given to open is filtered by the umask
            if os.fstat(fd).st_size >= MAX_DAY_BYTES:
                return False
            os.write(fd, record_line(tool, counts))
        finally:
            os.close(fd)
        if created:  # once a day: the record is written first, whatever folding meets
            self._fold_old_days(now)
        return True

    def totals(self, days: int | None = None) -> tuple[dict[str, dict[str, int]], list[str]]:
        """(tool -> summed counts, days whose file reached :data:`MAX_DAY_BYTES`), over every kept day
        or the last ``days``."""
        wanted = None if days is None else set(days_back(self.clock(), days))
        totals: dict[str, dict[str, int]] = {}
        full: list[str] = []
        for day, path in sorted(self._day_files().items()):
            if wanted is not None and day not in wanted:
                continue
            data = _read(path)
            if path.name.endswith(SUFFIX) and not path.name.endswith(SUM_SUFFIX) and len(data) >= MAX_DAY_BYTES:
                full.append(day)
            for line in data.splitlines():
                add_line(totals, line)
        return totals, full

    def _day_files(self) -> dict[str, Path]:
        """Day -> its file: the folded one when there is one (a crash may leave both)."""
        found: dict[str, Path] = {}
        with contextlib.suppress(OSError):
            for item in sorted(os.scandir(self.directory), key=lambda item: item.name):
                day = item.name[:10]
                ours = (
                    _DAY_NAME.fullmatch(day) is not None
                    and item.name in (day + SUFFIX, day + SUM_SUFFIX)
                    and item.is_file(follow_symlinks=False)
                )
                if ours and (item.name.endswith(SUM_SUFFIX) or day not in found):
                    found[day] = Path(item.path)
        return found

    def _fold_old_days(self, now: float) -> None:
        """Fold each day before yesterday into a line per tool; delete days past the retention."""
        from pflow_structure.cache.files import write_atomically

        recent = set(days_back(now, 2))
        oldest = day_of(now - RETENTION_DAYS * _DAY)
        for day, path in self._day_files().items():
            raw = self.directory / (day + SUFFIX)
            if day < oldest:
                _unlink(path)
                _unlink(raw)
            elif day not in recent and path.name.endswith(SUFFIX) and not path.name.endswith(SUM_SUFFIX):
                totals: dict[str, dict[str, int]] = {}
                for line in _read(path).splitlines():
                    add_line(totals, line)
                folded = b"".join(record_line(tool, counts) for tool, counts in sorted(totals.items()))
                with contextlib.suppress(FileExistsError):
                    write_atomically(self.directory, day + SUM_SUFFIX, folded)
                _unlink(raw)
            elif path.name.endswith(SUM_SUFFIX):
                _unlink(raw)  # left behind by a fold that stopped half-way


def _read(path: Path) -> bytes:
    from pflow_structure.cache.files import read_regular_file

    return read_regular_file(path, []) or b""


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def summed(records: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Tool -> summed counts of ``(tool, counts)`` pairs (the Redis store's rows)."""
    totals: dict[str, dict[str, int]] = {}
    for tool, counts in records:
        row = totals.setdefault(tool, dict.fromkeys(FIELDS, 0))
        for name in FIELDS:
            row[name] += int(counts.get(name, 0))
    return totals
