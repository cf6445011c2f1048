"""The execution cache: one JSON file per execution.

Files are 0600 in a 0700 directory whatever the umask, written to a temporary file in the
same directory and renamed into place, and opened with ``O_NOFOLLOW`` so that a symlink in
place of an entry is never followed. Ids are validated before any path is built. A write
failure never fails a run: the cache falls back to a per-user directory under the system
temp dir, and if that fails too, the caller gets a warning instead of an exception.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pflow_structure.cache.ids import new_execution_id, validate_execution_id
from pflow_structure.cache.masking import mask_secrets
from pflow_structure.errors import CacheWriteError, ExecutionExpiredError, ExecutionNotFoundError

DEFAULT_TTL_HOURS = 24.0
DEFAULT_MAX_BYTES = 1024**3
FORMAT_VERSION = 1
_MAINTENANCE_STAMP = ".maintenance"
_LOCK_NAME = ".lock"
_SUFFIX = ".json"
_REQUIRED = ("execution_id", "node_type", "timestamp", "ttl_hours", "outputs")


def default_cache_dir() -> Path:
    """``~/.pflow/cache/node-executions`` (the spec's location)."""
    return Path.home() / ".pflow" / "cache" / "node-executions"


def fallback_cache_dir() -> Path:
    """A per-user directory under the system temp dir, used when the main one is not writable."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"pflow-structure-{uid}" / "node-executions"


@dataclass
class CacheEntry:
    """One stored execution."""

    execution_id: str
    node_type: str
    timestamp: str
    ttl_hours: float
    params: Any
    outputs: Any
    binary_paths: list[list[str | int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def age_hours(self, now: float) -> float:
        return (now - _parse_timestamp(self.timestamp)) / 3600.0


@dataclass
class StoredExecution:
    """What :meth:`ExecutionCache.put` did: the id, where it went, and any warnings."""

    execution_id: str
    path: Path | None
    warnings: list[str] = field(default_factory=list)

    @property
    def cached(self) -> bool:
        return self.path is not None


@dataclass
class EntryInfo:
    """A cache file seen by a directory scan (no JSON parsing)."""

    execution_id: str
    path: Path
    size: int
    created: float


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
        self.fallback_directory = Path(fallback_directory) if fallback_directory is not None else fallback_cache_dir()
        self.ttl_hours = float(ttl_hours)
        self.max_bytes = int(max_bytes)
        self.maintenance_interval = maintenance_interval
        self.clock = clock

    # -- writing ---------------------------------------------------------------------------

    def put(
        self,
        node_type: str,
        params: Any,
        outputs: Any,
        *,
        binary_paths: Sequence[Sequence[str | int]] = (),
        notes: Sequence[str] = (),
    ) -> StoredExecution:
        """Store an execution; never raises for filesystem trouble (see ``warnings``)."""
        now = self.clock()
        execution_id = new_execution_id(now)
        entry = {
            "execution_id": execution_id,
            "node_type": node_type,
            "timestamp": _format_timestamp(now),
            "ttl_hours": self.ttl_hours,
            "params": mask_secrets(params),
            "outputs": outputs,
            "binary_paths": [list(p) for p in binary_paths],
            "notes": list(notes),
            "format_version": FORMAT_VERSION,
        }
        data = json.dumps(entry, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        warnings: list[str] = []
        for directory in (self.directory, self.fallback_directory):
            try:
                path = self._write(directory, execution_id, data)
            except OSError as exc:
                warnings.append(f"Cache directory {directory} is not writable ({_reason(exc)}).")
                continue
            if directory != self.directory:
                warnings.append(f"Stored the execution in the fallback directory {directory} instead.")
            self._maybe_maintain(directory, now)
            return StoredExecution(execution_id, path, warnings)
        warnings.append(
            "The execution was not cached, so read_fields cannot read it; "
            "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory."
        )
        return StoredExecution(execution_id, None, warnings)

    def _write(self, directory: Path, execution_id: str, data: bytes) -> Path:
        ensure_private_dir(directory, must_own=directory == self.fallback_directory)
        final = directory / (execution_id + _SUFFIX)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp_name, final)  # atomic: readers see the old name or the whole file
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        return final

    # -- reading ---------------------------------------------------------------------------

    def get(self, execution_id: str) -> CacheEntry:
        """The entry for ``execution_id``; raises ExecutionNotFoundError or ExecutionExpiredError."""
        validate_execution_id(execution_id)
        problems: list[str] = []
        for directory in self._directories():
            raw = _read_regular_file(directory / (execution_id + _SUFFIX), problems)
            if raw is None:
                continue
            entry = _parse_entry(raw, execution_id, problems)
            if entry is None:
                continue
            age = entry.age_hours(self.clock())
            if age > entry.ttl_hours:
                raise ExecutionExpiredError(execution_id, age, entry.ttl_hours)
            return entry
        raise ExecutionNotFoundError(execution_id, "; ".join(problems))

    def _directories(self) -> list[Path]:
        dirs = [self.directory]
        if self.fallback_directory != self.directory:
            dirs.append(self.fallback_directory)
        return dirs

    # -- maintenance -----------------------------------------------------------------------

    def scan(self) -> list[EntryInfo]:
        """Every entry file in the cache directories, oldest first (no JSON parsing)."""
        infos: list[EntryInfo] = []
        for directory in self._directories():
            infos.extend(_scan(directory))
        infos.sort(key=lambda info: (info.created, info.execution_id))
        return infos

    def stats(self) -> dict[str, Any]:
        infos = self.scan()
        now = self.clock()
        expired = sum(1 for info in infos if (now - info.created) / 3600.0 > self.ttl_hours)
        return {
            "directory": str(self.directory),
            "entries": len(infos),
            "expired": expired,
            "total_bytes": sum(info.size for info in infos),
            "max_bytes": self.max_bytes,
            "ttl_hours": self.ttl_hours,
            "oldest": _format_timestamp(infos[0].created) if infos else None,
            "newest": _format_timestamp(infos[-1].created) if infos else None,
        }

    def prune(self) -> dict[str, int]:
        """Delete expired entries, then the oldest ones while the total exceeds ``max_bytes``."""
        now = self.clock()
        infos = self.scan()
        removed_expired = 0
        kept: list[EntryInfo] = []
        for info in infos:
            if (now - info.created) / 3600.0 > self.ttl_hours and _unlink(info.path):
                removed_expired += 1
            else:
                kept.append(info)
        total = sum(info.size for info in kept)
        evicted = 0
        for info in kept:
            if total <= self.max_bytes:
                break
            if _unlink(info.path):
                total -= info.size
                evicted += 1
        for directory in self._directories():
            _remove_stale_temp_files(directory, now)
        return {"expired": removed_expired, "evicted": evicted, "remaining": len(kept) - evicted}

    def clear(self) -> int:
        """Delete every entry; returns how many."""
        return sum(1 for info in self.scan() if _unlink(info.path))

    def delete(self, execution_id: str) -> bool:
        validate_execution_id(execution_id)
        return any(_unlink(d / (execution_id + _SUFFIX)) for d in self._directories())

    def _maybe_maintain(self, directory: Path, now: float) -> None:
        """Prune at most once per ``maintenance_interval`` seconds, under a lock, never blocking."""
        stamp = directory / _MAINTENANCE_STAMP
        try:
            if now - stamp.stat().st_mtime < self.maintenance_interval:
                return
        except FileNotFoundError:
            pass
        except OSError:
            return
        from filelock import FileLock, Timeout  # only the write path pays for this import

        try:
            with FileLock(str(directory / _LOCK_NAME), timeout=0, mode=0o600):
                stamp.touch(mode=0o600)
                os.utime(stamp, (now, now))
                self.prune()
        except (Timeout, OSError):
            return  # another process is pruning, or the lock is not ours to take


def ensure_private_dir(directory: Path, *, must_own: bool = False) -> None:
    """Create ``directory`` as 0700 (whatever the umask); refuse a symlinked or foreign one."""
    if not directory.exists():
        missing = [directory, *(p for p in directory.parents if not p.exists())]
        for path in reversed(missing):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue
            os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask; chmod is not
    info = os.lstat(directory)
    if must_own:
        if stat.S_ISLNK(info.st_mode):
            raise CacheWriteError(f"{directory} is a symlink; refusing to use it as a cache directory")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise CacheWriteError(f"{directory} belongs to another user; refusing to use it")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(directory, 0o700)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", str(directory))


def _read_regular_file(path: Path, problems: list[str]) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            problems.append(f"{path.name} is a symlink and was not followed")
        else:
            problems.append(f"{path.name} could not be opened: {_reason(exc)}")
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            problems.append(f"{path.name} is not a regular file")
            return None
        return handle.read()


def _parse_entry(raw: bytes, execution_id: str, problems: list[str]) -> CacheEntry | None:
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or any(key not in data for key in _REQUIRED):
            raise ValueError("missing fields")
        if data["execution_id"] != execution_id:
            raise ValueError("the id inside does not match the file name")
        _parse_timestamp(data["timestamp"])
        entry = CacheEntry(
            execution_id=execution_id,
            node_type=str(data["node_type"]),
            timestamp=data["timestamp"],
            ttl_hours=float(data["ttl_hours"]),
            params=data.get("params", {}),
            outputs=data["outputs"],
            binary_paths=list(data.get("binary_paths", [])),
            notes=list(data.get("notes", [])),
        )
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        problems.append(f"its cache file is malformed ({_reason(exc)}) and was treated as a miss")
        return None
    return entry


def _scan(directory: Path) -> Iterator[EntryInfo]:
    try:
        iterator = os.scandir(directory)
    except OSError:
        return
    with iterator:
        for item in iterator:
            name = item.name
            if not name.startswith("exec-") or not name.endswith(_SUFFIX):
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            execution_id = name[: -len(_SUFFIX)]
            yield EntryInfo(execution_id, Path(item.path), info.st_size, _created(execution_id, info.st_mtime))


def _created(execution_id: str, fallback: float) -> float:
    try:
        return float(execution_id.split("-")[1])
    except (IndexError, ValueError):
        return fallback


def _remove_stale_temp_files(directory: Path, now: float) -> None:
    try:
        iterator = os.scandir(directory)
    except OSError:
        return
    with iterator:
        for item in iterator:
            if item.name.startswith(".tmp-"):
                try:
                    if now - item.stat(follow_symlinks=False).st_mtime > 3600:
                        os.unlink(item.path)
                except OSError:
                    continue


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _format_timestamp(seconds: float) -> str:
    moment = _dt.datetime.fromtimestamp(int(seconds), tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_timestamp(text: str) -> float:
    if not isinstance(text, str):
        raise ValueError("timestamp is not a string")
    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.timestamp()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
