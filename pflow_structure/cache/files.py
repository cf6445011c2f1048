"""Filesystem primitives of the cache: private directories, atomic writes, reads that never follow a symlink.

Every function takes paths built from validated ids only; none of them reads the environment.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from pflow_structure.cache.ids import is_valid_execution_id
from pflow_structure.errors import CacheWriteError
from pflow_structure.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import IO, TypeVar

    T = TypeVar("T")

ENTRY_SUFFIX = ".json"
INDEX_SUFFIX = ".idx"  # an entry's index of byte ranges (see index.py), beside it
TEMP_PREFIX = ".tmp-"
_STALE_TEMP_SECONDS = 3600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a FIFO planted in place of an entry must not hang; regular files ignore it.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class EntryInfo(NamedTuple):
    """A cache entry seen by a scan (no JSON parsing); ``path`` is None for an entry in Redis."""

    execution_id: str
    path: Path | None
    size: int
    created: float


def ensure_private_dir(directory: Path, *, private_root: Path | None = None, tighten: bool = False) -> None:
    """Create ``directory`` (and missing parents) as 0700, whatever the umask.

    With ``private_root`` (the fallback under the shared temp dir), every directory from
    ``private_root`` down to ``directory`` must be a real directory owned by this user: a
    symlink or a directory planted by someone else is refused with :class:`CacheWriteError`.
    With ``tighten`` (the default cache directory, which pflow-cli may have made 0755), an
    existing directory of ours is set to 0700; a directory the user chose is left as it is.
    """
    if private_root is None:
        if not os.path.isdir(directory):
            _make_dirs(directory)
        elif tighten:
            _tighten(directory)
    else:
        for path in _chain(private_root, directory):
            if not os.path.lexists(path):
                _make_dirs(path)
            _check_private(path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "Permission denied", str(directory))


def _make_dirs(directory: Path) -> None:
    missing = [directory, *(p for p in directory.parents if not os.path.lexists(p))]
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue  # another process made it; its mode is that process's business
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask; chmod is not


def _tighten(directory: Path) -> None:
    info = os.lstat(directory)
    owned = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    if stat.S_ISDIR(info.st_mode) and owned and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)


def _chain(root: Path, directory: Path) -> list[Path]:
    """``root`` and every directory below it down to ``directory``, top first."""
    chain = [directory]
    while chain[-1] != root:
        parent = chain[-1].parent
        if parent == chain[-1]:
            return [directory]  # not below root: check the directory alone
        chain.append(parent)
    return list(reversed(chain))


def _check_private(path: Path) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise CacheWriteError(f"{path} is a symlink; refusing to use it as a cache directory")
    if not stat.S_ISDIR(info.st_mode):
        raise CacheWriteError(f"{path} is not a directory; refusing to use it as a cache directory")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise CacheWriteError(f"{path} belongs to another user; refusing to use it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def write_atomically(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to a 0600 temporary file in ``directory`` and move it to ``name``.

    The move is a hard link, which never follows a symlink and never replaces an existing
    entry (``FileExistsError``: the caller picks a new id), then the temporary name is
    removed; readers see either no file or the whole file. Where hard links are not
    supported, an atomic rename is used instead.
    """
    return write_atomically_with(directory, name, lambda handle: handle.write(data))[0]


def write_atomically_with(directory: Path, name: str, write: Callable[[IO[bytes]], T]) -> tuple[Path, T]:
    """:func:`write_atomically` with the content written by ``write(handle)`` piece by piece (no
    copy of it in memory); what ``write`` returns comes back. If it raises, nothing is left behind."""
    final = directory / name
    import tempfile  # write path only: keeps read-fields start-up short

    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=TEMP_PREFIX, suffix=ENTRY_SUFFIX)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            written = write(handle)
        try:
            os.link(tmp_name, final)
        except FileExistsError:
            raise
        except OSError:
            os.replace(tmp_name, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    with contextlib.suppress(OSError):
        os.unlink(tmp_name)
    return final, written


def open_regular_file(path: Path, problems: list[str]) -> int | None:
    """A read-only descriptor of ``path`` (the caller closes it); ``None`` as :func:`read_regular_file` says."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            problems.append(f"{path.name} is a symlink and was not followed")
        else:
            problems.append(f"{path.name} could not be opened: {reason(exc)}")
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        problems.append(f"{path.name} is not a regular file")
        return None
    return fd


def read_regular_file(path: Path, problems: list[str]) -> bytes | None:
    """The bytes of ``path``; ``None`` when it is missing, or (with a note in ``problems``)
    when it is a symlink, not a regular file, or cannot be opened."""
    fd = open_regular_file(path, problems)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def touch_stamp(path: Path, now: float) -> None:
    """Create or update a 0600 marker file, replacing (never following) a symlink there."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK, 0o600)
    try:
        os.fchmod(fd, 0o600)
        if os.utime in os.supports_fd:
            os.utime(fd, (now, now))
        else:  # pragma: no cover - platforms without futimens
            os.utime(path, (now, now))
    finally:
        os.close(fd)


def remove_symlink(path: Path) -> None:
    """Remove ``path`` if it is a symlink (so that a lock library cannot be led through it)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            os.unlink(path)


def scan_entries(directory: Path) -> Iterator[EntryInfo]:
    """Every regular entry file in ``directory`` whose name is a valid id (symlinks skipped)."""
    for item, info in _listing(directory):
        execution_id = item.name[: -len(ENTRY_SUFFIX)]
        if item.name.endswith(ENTRY_SUFFIX) and is_valid_execution_id(execution_id) and stat.S_ISREG(info.st_mode):
            yield EntryInfo(execution_id, Path(item.path), info.st_size, float(execution_id.split("-")[1]))


def remove_stale_temp_files(directory: Path, now: float) -> None:
    """Delete temporary files left behind by a writer that died more than an hour ago, and indexes
    whose entry is gone (removed by something other than this cache)."""
    for item, info in _listing(directory):
        if _is_leftover(item.name, item.path, info, now):
            unlink(Path(item.path))


def _is_leftover(name: str, path: str, info: os.stat_result, now: float) -> bool:
    if name.startswith(TEMP_PREFIX):
        return now - info.st_mtime > _STALE_TEMP_SECONDS
    # An index is written after its entry, so one without an entry was left behind.
    return name.endswith(INDEX_SUFFIX) and not os.path.lexists(path[: -len(INDEX_SUFFIX)] + ENTRY_SUFFIX)


def _listing(directory: Path) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """The entries of ``directory`` with their lstat; nothing when it cannot be read."""
    try:
        iterator = os.scandir(directory)
    except OSError:
        return
    with iterator:
        for item in iterator:
            try:
                yield item, item.stat(follow_symlinks=False)
            except OSError:
                continue


def unlink(path: Path) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def reason(exc: BaseException) -> str:
    """A short reason for an error, without a traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
