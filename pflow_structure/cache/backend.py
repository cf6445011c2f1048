"""What every execution cache offers, and the cache URL's parts that are safe to show.

Two stores implement :class:`CacheBackend`: :class:`~pflow_structure.cache.store.ExecutionCache`
(files in this host's home, the default) and
:class:`~pflow_structure.cache.redis_store.RedisExecutionCache` (one cache shared by many
instances, chosen with a ``redis://`` URL). Adapters type their cache as ``CacheBackend`` and
never ask which one they have. This module imports no Redis client: parsing a URL for a message
must not load one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from pflow_structure.cache.entry import CacheEntry
from pflow_structure.cache.files import EntryInfo

__all__ = ["CLUSTER_SCHEMES", "SCHEMES", "CacheBackend", "StoredExecutionLike", "is_cluster_url", "redact_url"]

# ``redis+cluster://`` (and ``rediss+cluster://`` for TLS) selects redis-py's cluster client, the
# spelling go-redis and pomerium use; ``?cluster=true`` on a plain URL does the same (redis-url-py's).
SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


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
    ) -> StoredExecutionLike: ...

    def get(self, execution_id: str, *, check_ttl: bool = True) -> CacheEntry: ...

    def scan(self) -> list[EntryInfo]: ...

    def stats(self) -> dict[str, Any]: ...

    def prune(self, *, keep: str | None = None) -> dict[str, int]: ...

    def is_expired(self, info: EntryInfo, now: float) -> bool: ...

    def clear(self) -> int: ...

    def delete(self, execution_id: str) -> bool: ...


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` asks for the cluster client (``redis+cluster://`` or ``?cluster=true``)."""
    parts = urlsplit(url)
    if parts.scheme.lower() in CLUSTER_SCHEMES:
        return True
    query = [item.partition("=") for item in parts.query.split("&") if item]
    return any(key.lower() == "cluster" and value.lower() in ("1", "true", "yes") for key, _, value in query)


def redact_url(url: str) -> str:
    """``url`` as it may be printed or logged: scheme, user, host, port and database; never the password.

    >>> redact_url("redis://app:s3cret@cache.internal:6380/2?socket_timeout=1")
    'redis://app@cache.internal:6380/2'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or 6379
        user = parts.username
    except ValueError:  # a port that is not a number: show nothing that could be a secret
        return "(an unparsable cache URL)"
    if ":" in host:
        host = f"[{host}]"
    who = f"{user}@" if user else ""
    return f"{parts.scheme}://{who}{host}:{port}{parts.path}"
