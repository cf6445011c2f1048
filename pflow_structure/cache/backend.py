"""What every execution cache offers (the parts of its URL that are safe to show: :mod:`.urls`).

Two stores implement :class:`CacheBackend`: :class:`~pflow_structure.cache.store.ExecutionCache`
(files in this host's home, the default) and
:class:`~pflow_structure.cache.redis_store.RedisExecutionCache` (one cache shared by many
instances, chosen with a ``redis://`` URL). Adapters type their cache as ``CacheBackend`` and
never ask which one they have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pflow_structure.cache.entry import CacheEntry
from pflow_structure.cache.files import EntryInfo

__all__ = ["CacheBackend", "StoredExecutionLike"]


class StoredExecutionLike(Protocol):
    """What ``put`` returns: the id, whether the entry reached the cache, and warnings for the user."""

    @property
    def execution_id(self) -> str: ...

    @property
    def warnings(self) -> list[str]: ...

    @property
    def cached(self) -> bool: ...


class CacheBackend(Protocol):
    """The execution cache as the service, the CLI and the adapters use it."""

    ttl_hours: float
    max_bytes: int

    @property
    def location(self) -> str:
        """Where entries live, fit to print: a directory, or a Redis URL without its password."""

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
    ) -> StoredExecutionLike: ...

    def get(self, execution_id: str, *, check_ttl: bool = True) -> CacheEntry: ...

    def scan(self) -> list[EntryInfo]: ...

    def stats(self) -> dict[str, Any]: ...

    def prune(self, *, keep: str | None = None) -> dict[str, int]: ...

    def is_expired(self, info: EntryInfo, now: float) -> bool: ...

    def clear(self) -> int: ...

    def delete(self, execution_id: str) -> bool: ...
