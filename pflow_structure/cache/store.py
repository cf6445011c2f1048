"""The execution cache: one JSON file per execution.

Files are 0600 in a 0700 directory whatever the umask, written to a temporary file in the
same directory and renamed into place, and opened with ``O_NOFOLLOW`` so that a symlink in
place of an entry is never followed. Ids are validated before any path is built. A write
failure never fails a run: the cache falls back to a per-user directory under the system
temp dir, and if that fails too, the caller gets a warning instead of an exception.
"""

from __future__ import annotations

import _thread
import os
import time
from pathlib import Path

from pflow_structure.cache.entry import FORMAT_VERSION, CacheEntry, format_timestamp, parse_entry
from pflow_structure.cache.files import (
    ENTRY_SUFFIX,
    INDEX_SUFFIX,
    EntryInfo,
    ensure_private_dir,
    read_regular_file,
    reason,
    remove_stale_temp_files,
    remove_symlink,
    scan_entries,
    touch_stamp,
    unlink,
)
from pflow_structure.cache.ids import new_execution_id, validate_execution_id
from pflow_structure.errors import ExecutionExpiredError, ExecutionNotFoundError
from pflow_structure.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TTL_HOURS",
    "FORMAT_VERSION",
    "CacheEntry",
    "EntryInfo",
    "ExecutionCache",
    "StoredExecution",
    "default_cache_dir",
    "fallback_cache_dir",
    "hold_execution",
    "release_execution",
]

DEFAULT_TTL_HOURS = 24.0
DEFAULT_MAX_BYTES = 1024**3

# Executions that live objects in this process still read (the lazy views a structure-only
# node leaves in a workflow's shared store): pruning skips them, so a later node's write cannot
# pull the data out from under an earlier node's view. Other processes cannot see this set.
_HELD: dict[str, int] = {}
_HELD_LOCK = _thread.allocate_lock()  # threading.Lock, without importing threading at start-up


def hold_execution(execution_id: str) -> None:
    """Keep ``execution_id`` from pruning by this process until released."""
    with _HELD_LOCK:
        _HELD[execution_id] = _HELD.get(execution_id, 0) + 1


def release_execution(execution_id: str) -> None:
    """Undo one :func:`hold_execution`."""
    with _HELD_LOCK:
        count = _HELD.get(execution_id, 0) - 1
        if count > 0:
            _HELD[execution_id] = count
        else:
            _HELD.pop(execution_id, None)


def is_held(execution_id: str) -> bool:
    """Whether this process holds ``execution_id`` (see :func:`hold_execution`): no store prunes it."""
    return execution_id in _HELD


_MAINTENANCE_STAMP = ".maintenance"
_LOCK_NAME = ".lock"


def default_cache_dir() -> Path:
    """``~/.pflow/cache/node-executions`` (the spec's location)."""
    return Path.home() / ".pflow" / "cache" / "node-executions"


def fallback_cache_dir() -> Path:
    """A per-user directory under the system temp dir, used when the main one is not writable.

    Finding the temp dir may create a probe file, so call this only when about to write or read.
    """
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    import tempfile

    return Path(tempfile.gettempdir()) / f"pflow-structure-{uid}" / "node-executions"


class StoredExecution(NamedTuple):
    """What :meth:`ExecutionCache.put` did: the id, where it went, and any warnings."""

    execution_id: str
    path: Path | None
    warnings: list[str]

    @property
    def cached(self) -> bool:
        return self.path is not None


class ExecutionCache:
    """Filesystem store of node executions.

    >>> cache = ExecutionCache(tmp_path)                     # doctest: +SKIP
    >>> stored = cache.put("read-json", {"path": "x.json"}, {"result": [1, 2]})  # doctest: +SKIP
    >>> cache.get(stored.execution_id).outputs               # doctest: +SKIP
    {'result': [1, 2]}
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        ttl_hours: float = DEFAULT_TTL_HOURS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        fallback_directory: str | os.PathLike[str] | None = None,
        maintenance_interval: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self._fallback_directory = Path(fallback_directory) if fallback_directory is not None else None
        self._fallback_is_default = fallback_directory is None
        self.ttl_hours = float(ttl_hours)
        self.max_bytes = int(max_bytes)
        self.maintenance_interval = maintenance_interval
        self.clock = clock

    @property
    def location(self) -> str:
        """Where entries live, fit to print (the directory)."""
        return str(self.directory)

    @property
    def fallback_directory(self) -> Path:
        """Where entries go when :attr:`directory` is not writable (resolved on first use)."""
        if self._fallback_directory is None:
            self._fallback_directory = fallback_cache_dir()
        return self._fallback_directory

    # -- writing ---------------------------------------------------------------------------

    def put(
        self,
        node_type: str,
        params: Any,
        outputs: Any,
        *,
        binary_paths: Sequence[Sequence[str | int]] = (),
        notes: Sequence[str] = (),
        execution_id: str | None = None,
        text_paths: Sequence[Sequence[str | int]] = (),
    ) -> StoredExecution:
        """Store an execution; never raises for filesystem trouble (see ``warnings``).

        ``params`` are stored with secrets masked; ``outputs`` must be JSON-safe (what
        ``encode_value`` returns), or ``TypeError``/``ValueError`` is raised. ``execution_id``
        asks for a given id (a caller that announced it before the run, as pflow's
        ``registry run`` does); it must match the id pattern and is never reused.
        ``text_paths`` marks lists of lines that hold a text answer (see :mod:`pflow_structure.values.references`).
        """
        extra = {"notes": notes, "text_paths": text_paths}
        now = self.clock()
        warnings: list[str] = []
        if execution_id is not None:
            validate_execution_id(execution_id)
            stored = self._put_once(node_type, params, outputs, binary_paths, extra, now, warnings, execution_id)
            if stored is not None:
                return stored
            warnings.append(f"The execution was not cached: the execution id {execution_id} is already taken.")
            return StoredExecution(execution_id, None, warnings)
        for _attempt in range(5):
            stored = self._put_once(node_type, params, outputs, binary_paths, extra, now, warnings)
            if stored is not None:
                return stored
        warnings.append("The execution was not cached: every execution id tried was already taken.")
        return StoredExecution(new_execution_id(now), None, warnings)

    def _put_once(
        self,
        node_type: str,
        params: Any,
        outputs: Any,
        binary_paths: Sequence[Sequence[str | int]],
        extra: dict[str, Any],
        now: float,
        warnings: list[str],
        execution_id: str | None = None,
    ) -> StoredExecution | None:
        """One attempt with a fresh id (or the one asked for); None when that id is already taken."""
        execution_id = execution_id or new_execution_id(now)
        from pflow_structure.cache.index import write_entry  # the write path only
        from pflow_structure.cache.masking import mask_secrets
        from pflow_structure.encoding import encode_value

        entry = CacheEntry(
            execution_id=execution_id,
            node_type=node_type,
            timestamp=format_timestamp(now),
            ttl_hours=self.ttl_hours,
            # Params are stored for reference: any value becomes JSON (one encoder for
            # params and outputs), then secrets are masked on the plain JSON.
            params=mask_secrets(encode_value(params).value),
            outputs=outputs,
            binary_paths=[list(p) for p in binary_paths],
            notes=list(extra["notes"]),
            text_paths=[list(p) for p in extra["text_paths"]],
        )
        for directory in self._directories():
            try:
                tighten = directory == self.directory and self._is_default_directory()
                ensure_private_dir(directory, private_root=self._private_root(directory), tighten=tighten)
                path, size = write_entry(directory, execution_id, entry)
            except FileExistsError:
                return None  # the id is taken (same second, same random part): try another
            except OSError as exc:
                warnings.append(f"Cache directory {directory} is not writable ({reason(exc)}).")
                continue
            except ValueError as exc:  # TypeError (not JSON-safe at all) is the caller's bug and propagates
                warnings.append(f"The execution was not cached: its outputs cannot be written as JSON ({exc}).")
                return StoredExecution(execution_id, None, warnings)
            if directory != self.directory:
                warnings.append(f"Stored the execution in the fallback directory {directory} instead.")
            if size > self.max_bytes:
                warnings.append(
                    f"This execution ({size} bytes) is larger than the cache size cap ({self.max_bytes} bytes); "
                    "it is kept, but the next run will evict it. Raise PFLOW_STRUCTURE_MAX_CACHE_SIZE to keep more."
                )
            self._maybe_maintain(directory, now, keep=execution_id)
            return StoredExecution(execution_id, path, warnings)
        warnings.append(
            "The execution was not cached, so read_fields cannot read it; "
            "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory."
        )
        return StoredExecution(execution_id, None, warnings)

    def _is_default_directory(self) -> bool:
        """Whether this cache uses ~/.pflow/cache/node-executions (which pflow-cli may have made 0755)."""
        try:
            return self.directory == default_cache_dir()
        except RuntimeError:  # no home directory (no HOME, a uid without a passwd entry)
            return False

    def _private_root(self, directory: Path) -> Path | None:
        """The fallback lives in the shared temp dir: it and its per-user parent must be ours."""
        if directory == self.directory:
            return None
        return directory.parent if self._fallback_is_default else directory

    # -- reading ---------------------------------------------------------------------------

    def get(self, execution_id: str, *, check_ttl: bool = True) -> CacheEntry:
        """The entry for ``execution_id``; raises ExecutionNotFoundError or ExecutionExpiredError.

        An entry is expired when older than its own ``ttl_hours`` or this cache's, whichever
        is shorter. A malformed entry is a miss whose error says why. ``check_ttl=False`` is
        for the process that wrote the entry and still uses it (a workflow's lazy view): the
        TTL keeps later readers from stale data, not a running workflow from its own.
        """
        validate_execution_id(execution_id)
        problems: list[str] = []
        for directory in self._directories():
            raw = read_regular_file(directory / (execution_id + ENTRY_SUFFIX), problems)
            if raw is None:
                continue
            try:
                entry = parse_entry(raw, execution_id)
            except ValueError as exc:
                problems.append(f"its cache file is malformed ({exc}) and was treated as a miss")
                continue
            return self._fresh(entry, check_ttl)
        raise ExecutionNotFoundError(execution_id, "; ".join(problems))

    def get_fields(
        self,
        execution_id: str,
        paths: Sequence[str],
        *,
        page: tuple[int, int] | None = None,
        check_ttl: bool = True,
    ) -> CacheEntry:
        """:meth:`get` for reading ``paths``: with the entry's index, only the values they reach are
        parsed (``complete`` is False, the rest are ``UNREAD``); without one, the whole entry.

        ``page`` (offset, limit): a path ending in ``[*]`` over a list reads only those items."""
        validate_execution_id(execution_id)
        for directory in self._directories():
            entry_path = directory / (execution_id + ENTRY_SUFFIX)
            if not os.path.lexists(entry_path):
                continue
            if not os.path.lexists(directory / (execution_id + INDEX_SUFFIX)):
                break  # a small entry (no index): read whole
            from pflow_structure.cache.index import paths_needed, read_partial

            partial = read_partial(
                entry_path, directory / (execution_id + INDEX_SUFFIX), execution_id, paths_needed(paths), page
            )
            if partial is None:
                break
            try:
                entry = parse_entry(partial[0], execution_id)
            except ValueError:
                break  # get() words what is wrong with it
            partly = entry._replace(outputs=partial[1], complete=False, field_presence=partial[2])
            return self._fresh(partly, check_ttl)
        return self.get(execution_id, check_ttl=check_ttl)

    def note_presence(self, execution_id: str, presence: dict[str, Any]) -> None:
        """Keep the structure's field statistics beside an entry that has an index (never raises for the disk)."""
        for directory in self._directories():
            index_path = directory / (execution_id + INDEX_SUFFIX)
            if os.path.lexists(index_path):
                import contextlib

                from pflow_structure.cache.index import add_presence

                with contextlib.suppress(OSError):
                    add_presence(index_path, execution_id, presence)
                return

    def _fresh(self, entry: CacheEntry, check_ttl: bool) -> CacheEntry:
        """``entry``, or ExecutionExpiredError when older than its own TTL or this cache's."""
        ttl = min(entry.ttl_hours, self.ttl_hours)
        age = entry.age_hours(self.clock())
        if check_ttl and age > ttl:
            raise ExecutionExpiredError(entry.execution_id, age, ttl)
        return entry

    def _directories(self) -> Iterator[Path]:
        """The main directory, then the fallback (resolved only if the main one did not answer)."""
        yield self.directory
        if self.fallback_directory != self.directory:
            yield self.fallback_directory

    # -- maintenance -----------------------------------------------------------------------

    def scan(self) -> list[EntryInfo]:
        """Every entry file in the cache directories, oldest first (no JSON parsing)."""
        infos: list[EntryInfo] = []
        for directory in self._directories():
            infos.extend(scan_entries(directory))
        infos.sort(key=lambda info: (info.created, info.execution_id))
        return infos

    def stats(self) -> dict[str, Any]:
        infos = self.scan()
        now = self.clock()
        return {
            "directory": str(self.directory),
            "entries": len(infos),
            "expired": sum(1 for info in infos if self.is_expired(info, now)),
            "total_bytes": sum(info.size for info in infos),
            "max_bytes": self.max_bytes,
            "ttl_hours": self.ttl_hours,
            "oldest": format_timestamp(infos[0].created) if infos else None,
            "newest": format_timestamp(infos[-1].created) if infos else None,
            "store": "file",
        }

    def prune(self, *, keep: str | None = None) -> dict[str, int]:
        """Delete expired entries, then the oldest ones while the total exceeds ``max_bytes``.

        ``keep`` is never evicted: a run does not delete the entry it just wrote; nor is an
        entry this process holds (:func:`hold_execution`), expired or not.
        """
        now = self.clock()
        removed_expired = 0
        kept: list[EntryInfo] = []
        for info in self.scan():
            if self.is_expired(info, now) and info.execution_id not in _HELD and _unlink(info):
                removed_expired += 1
            else:
                kept.append(info)
        total = sum(info.size for info in kept)
        evicted = 0
        for info in kept:
            if total <= self.max_bytes:
                break
            if info.execution_id != keep and info.execution_id not in _HELD and _unlink(info):
                total -= info.size
                evicted += 1
        for directory in self._directories():
            remove_stale_temp_files(directory, now)
        return {"expired": removed_expired, "evicted": evicted, "remaining": len(kept) - evicted}

    def is_expired(self, info: EntryInfo, now: float) -> bool:
        """Whether a scanned entry is past this cache's TTL (by the time in its id)."""
        return (now - info.created) / 3600.0 > self.ttl_hours

    def clear(self) -> int:
        """Delete every entry; returns how many."""
        return sum(1 for info in self.scan() if _unlink(info))

    def delete(self, execution_id: str) -> bool:
        validate_execution_id(execution_id)
        return any([_unlink_pair(d / (execution_id + ENTRY_SUFFIX)) for d in self._directories()])

    def _maybe_maintain(self, directory: Path, now: float, *, keep: str | None = None) -> None:
        """Prune at most once per ``maintenance_interval`` seconds, under a lock, never blocking."""
        stamp = directory / _MAINTENANCE_STAMP
        try:
            if now - os.lstat(stamp).st_mtime < self.maintenance_interval:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return
        from filelock import FileLock, Timeout  # only the write path pays for this import

        lock_path = directory / _LOCK_NAME
        try:
            remove_symlink(lock_path)  # older filelock releases open the lock file through a symlink
            with FileLock(str(lock_path), timeout=0, mode=0o600):
                touch_stamp(stamp, now)
                self.prune(keep=keep)
        except (Timeout, OSError):
            return  # another process is pruning, or the lock is not ours to take


def _unlink(info: EntryInfo) -> bool:
    return info.path is not None and _unlink_pair(info.path)


def _unlink_pair(entry_path: Path) -> bool:
    """Remove an entry file and its index (which is useless without it)."""
    unlink(entry_path.with_suffix(INDEX_SUFFIX))
    return unlink(entry_path)
