"""The execution cache in Redis (or Valkey): one cache for many instances; the only importer of ``redis``.

Each entry is one key, ``{namespace}:exec:{id}``, written with one ``SET key value EX ttl NX``: a
reader sees the whole entry or none, an id is never reused, and expiry is Redis's job. Every
command touches one key, so the same keys work on a Redis Cluster (no cross-slot command; nothing
needs a hash tag). Listing uses ``SCAN`` (per primary on a cluster), never ``KEYS``.

Large outputs: an entry over ``COMPRESS_OVER`` bytes is stored zlib-compressed (level 1: JSON
outputs shrink 5-20x at hundreds of MB/s, see benchmarks/README.md); an entry still larger than
the size cap after that is not sent to Redis. Whatever Redis cannot take (down, full, too large)
is kept in this host's file cache with a warning saying other instances cannot read that id, so
a node that ran never loses its output. Every call has a socket timeout and at most one retry.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from pflow_structure.cache.entry import CacheEntry, format_timestamp, parse_entry, serialise_entry
from pflow_structure.cache.files import EntryInfo
from pflow_structure.cache.ids import is_valid_execution_id, new_execution_id, validate_execution_id
from pflow_structure.cache.masking import mask_secrets
from pflow_structure.cache.store import ExecutionCache, is_held
from pflow_structure.cache.urls import is_cluster_url, redact_url
from pflow_structure.errors import CacheUnavailableError, ExecutionExpiredError, ExecutionNotFoundError

__all__ = ["COMPRESS_OVER", "DEFAULT_NAMESPACE", "RedisExecutionCache", "connect", "redis_error"]

DEFAULT_NAMESPACE = "pflow-structure"
DEFAULT_TIMEOUT = 2.0
COMPRESS_OVER = 16 * 1024
MAX_VALUE_BYTES = 512 * 1024**2  # Redis's proto-max-bulk-len: no single value can be larger
_ZLIB_MARK = b"Z"  # an entry is JSON (starts with "{") or this byte and zlib data
_SCAN_BATCH = 1000

_CLIENTS: dict[tuple[str, float], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def connect(url: str, *, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """One client per URL per process (a pool inside): every cache object of this process shares it.

    ``timeout`` bounds connecting and each reply; ``socket_timeout`` and ``socket_connect_timeout``
    in the URL's query win. A broken connection (Redis restarted) is retried once on a new one.
    """
    with _CLIENTS_LOCK:
        client = _CLIENTS.get((url, timeout))
        if client is None:
            client = _CLIENTS[(url, timeout)] = _new_client(url, timeout)
        return client


def _new_client(url: str, timeout: float) -> Any:
    import redis
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": Retry(ExponentialBackoff(cap=0.2, base=0.05), 1),
    }
    if not is_cluster_url(url):
        return redis.Redis.from_url(url, retry_on_error=[redis.ConnectionError, redis.TimeoutError], **options)
    from urllib.parse import urlsplit, urlunsplit

    from redis.cluster import RedisCluster

    parts = urlsplit(url)
    query = "&".join(item for item in parts.query.split("&") if item and not item.lower().startswith("cluster="))
    plain = urlunsplit((parts.scheme.replace("+cluster", ""), parts.netloc, parts.path, query, parts.fragment))
    return RedisCluster.from_url(plain, **options)


class RedisStored(NamedTuple):
    """What :meth:`RedisExecutionCache.put` did: the id, where it went and any warnings."""

    execution_id: str
    where: str | None  # "redis", "local" (this host's file cache only) or None (not cached)
    warnings: list[str]

    @property
    def cached(self) -> bool:
        return self.where is not None


class RedisExecutionCache:
    """The execution cache in Redis, with this host's file cache (``local``) for what Redis cannot take.

    >>> cache = RedisExecutionCache("redis://127.0.0.1:6379/0", local=ExecutionCache(tmp))  # doctest: +SKIP
    >>> cache.get(cache.put("read-json", {}, {"result": 1}).execution_id).outputs           # doctest: +SKIP
    {'result': 1}
    """

    def __init__(
        self,
        url: str,
        *,
        local: ExecutionCache,
        namespace: str = DEFAULT_NAMESPACE,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url
        self.local = local
        self.namespace = namespace
        self.clock = clock
        self.ttl_hours = local.ttl_hours
        self.max_bytes = local.max_bytes
        self._client = connect(url, timeout=timeout)

    @property
    def location(self) -> str:
        return redact_url(self.url)

    def key(self, execution_id: str) -> str:
        return f"{self.namespace}:exec:{validate_execution_id(execution_id)}"

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
    ) -> RedisStored:
        """Store an execution in Redis; never raises for Redis trouble (the entry goes to ``local``)."""
        from pflow_structure.encoding import encode_value  # write path only

        now = self.clock()
        if execution_id is not None:
            validate_execution_id(execution_id)
        masked = mask_secrets(encode_value(params).value)
        for _attempt in range(5):
            chosen = execution_id or new_execution_id(now)
            try:
                data = _pack(
                    serialise_entry(
                        CacheEntry(
                            chosen,
                            node_type,
                            format_timestamp(now),
                            self.ttl_hours,
                            masked,
                            outputs,
                            [list(p) for p in binary_paths],
                            list(notes),
                            [list(p) for p in text_paths],
                        )
                    )
                )
            except ValueError as exc:
                return RedisStored(
                    chosen, None, [f"The execution was not cached: its outputs cannot be written as JSON ({exc})."]
                )
            problem = self._too_large(data)
            if problem is None:
                try:
                    if self._client.set(self.key(chosen), data, ex=self._expiry_seconds(), nx=True):
                        return RedisStored(chosen, "redis", [])
                except Exception as exc:
                    problem = self._write_problem(exc)
                else:
                    if execution_id is not None:
                        return RedisStored(
                            chosen, None, [f"The execution was not cached: the execution id {chosen} is already taken."]
                        )
                    continue  # the id is taken (same second, same random part): try another
            return self._keep_locally(node_type, params, outputs, binary_paths, (notes, text_paths), chosen, problem)
        return RedisStored(
            new_execution_id(now), None, ["The execution was not cached: every execution id tried was already taken."]
        )

    def _expiry_seconds(self) -> int:
        return max(1, round(self.ttl_hours * 3600))

    def _too_large(self, data: bytes) -> str | None:
        limit = min(self.max_bytes, MAX_VALUE_BYTES)
        if len(data) <= limit:
            return None
        return (
            f"the entry is {len(data)} bytes compressed, over the limit of {limit} bytes for one entry "
            "(the size cap, PFLOW_STRUCTURE_MAX_CACHE_SIZE, and at most 512 MB, Redis's largest value)"
        )

    def _write_problem(self, exc: Exception) -> str:
        import redis

        if isinstance(exc, redis.exceptions.OutOfMemoryError) or "OOM" in str(exc)[:40]:
            return (
                "Redis is full (maxmemory reached with the noeviction policy): raise maxmemory, "
                "or set maxmemory-policy volatile-ttl or allkeys-lru so old entries make room"
            )
        if isinstance(exc, redis.RedisError):
            return f"Redis did not take it: {_reason(exc)}"
        raise exc  # not Redis trouble: a bug of ours, never swallowed

    def _keep_locally(
        self,
        node_type: str,
        params: Any,
        outputs: Any,
        binary_paths: Sequence[Sequence[str | int]],
        extra: tuple[Sequence[str], Sequence[Sequence[str | int]]],
        execution_id: str,
        problem: str,
    ) -> RedisStored:
        """Keep what Redis could not take in this host's file cache, and say so plainly.

        ``extra`` is the entry's notes and text paths."""
        notes, text_paths = extra
        stored = self.local.put(
            node_type,
            params,
            outputs,
            binary_paths=binary_paths,
            notes=notes,
            execution_id=execution_id,
            text_paths=text_paths,
        )
        head = f"The execution was not stored in the shared cache at {self.location}: {problem}."
        if not stored.cached:
            return RedisStored(stored.execution_id, None, [head, *stored.warnings])
        tail = (
            f"It is kept in this host's file cache ({self.local.directory}) instead: read_fields works here, "
            "but other instances cannot read this execution id."
        )
        return RedisStored(stored.execution_id, "local", [head, tail, *stored.warnings])

    # -- reading ---------------------------------------------------------------------------

    def get(self, execution_id: str, *, check_ttl: bool = True) -> CacheEntry:
        """The entry: from Redis, else from this host's file cache; raises the cache's errors.

        A miss says "Execution expired" when the id is older than the TTL (Redis expired it), else
        "Execution not found or evicted". With Redis down, an entry kept on this host still reads;
        anything else raises :class:`CacheUnavailableError` naming host:port and the fix.
        """
        key = self.key(execution_id)
        try:
            raw = self._client.get(key)
        except Exception as exc:
            down = self._read_problem(exc)
            try:
                return self.local.get(execution_id, check_ttl=check_ttl)
            except ExecutionNotFoundError:
                raise down from None
        if raw is None:
            return self._miss(execution_id, check_ttl)
        try:
            entry = parse_entry(_unpack(raw), execution_id)
        except ValueError as exc:
            raise ExecutionNotFoundError(execution_id, f"its entry in {self.location} is malformed ({exc})") from None
        age = entry.age_hours(self.clock())
        ttl = min(entry.ttl_hours, self.ttl_hours)
        if check_ttl and age > ttl:
            raise ExecutionExpiredError(execution_id, age, ttl)
        return entry

    def _read_problem(self, exc: Exception) -> CacheUnavailableError:
        import redis

        if isinstance(exc, redis.RedisError):
            return CacheUnavailableError(self.location, _reason(exc))
        raise exc

    def _miss(self, execution_id: str, check_ttl: bool) -> CacheEntry:
        try:
            return self.local.get(execution_id, check_ttl=check_ttl)
        except ExecutionNotFoundError:
            pass
        age = (self.clock() - _created(execution_id)) / 3600.0
        if check_ttl and age > self.ttl_hours:
            raise ExecutionExpiredError(execution_id, age, self.ttl_hours) from None
        raise ExecutionNotFoundError(
            execution_id,
            f"not in the shared cache at {self.location}: evicted to make room, deleted, or never stored there",
            headline="Execution not found or evicted",
        ) from None

    # -- maintenance -----------------------------------------------------------------------

    def _keys(self) -> Iterator[tuple[str, str]]:
        """(key, id) of every entry in Redis, by SCAN."""
        prefix = f"{self.namespace}:exec:"
        for key in self._client.scan_iter(match=prefix + "*", count=_SCAN_BATCH):
            text = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
            execution_id = text[len(prefix) :]
            if is_valid_execution_id(execution_id):
                yield text, execution_id

    def scan(self) -> list[EntryInfo]:
        """Every entry in Redis (path None) and in this host's file cache, oldest first."""
        try:
            keys = list(self._keys())
            sizes: list[Any] = []
            for start in range(0, len(keys), _SCAN_BATCH):
                pipe = self._client.pipeline(transaction=False)
                for key, _ in keys[start : start + _SCAN_BATCH]:
                    pipe.strlen(key)
                sizes.extend(pipe.execute())
        except Exception as exc:
            raise self._read_problem(exc) from None
        infos = [
            EntryInfo(i, None, int(size), float(_created(i))) for (_, i), size in zip(keys, sizes, strict=True) if size
        ]
        infos.extend(self.local.scan())
        infos.sort(key=lambda info: (info.created, info.execution_id))
        return infos

    def stats(self) -> dict[str, Any]:
        infos = self.scan()
        now = self.clock()
        return {
            "store": "redis",
            "location": self.location,
            "local_directory": str(self.local.directory),
            "entries": len(infos),
            "local_entries": sum(1 for info in infos if info.path is not None),
            "expired": sum(1 for info in infos if self.is_expired(info, now)),
            "total_bytes": sum(info.size for info in infos),
            "max_bytes": self.max_bytes,
            "ttl_hours": self.ttl_hours,
            "oldest": format_timestamp(infos[0].created) if infos else None,
            "newest": format_timestamp(infos[-1].created) if infos else None,
        }

    def is_expired(self, info: EntryInfo, now: float) -> bool:
        return (now - info.created) / 3600.0 > self.ttl_hours

    def prune(self, *, keep: str | None = None) -> dict[str, int]:
        """Delete expired entries, then the oldest while the total exceeds ``max_bytes`` (Redis and local)."""
        now = self.clock()
        removed = evicted = 0
        kept: list[EntryInfo] = []
        for info in self.scan():
            if self.is_expired(info, now) and not is_held(info.execution_id) and self._remove(info):
                removed += 1
            else:
                kept.append(info)
        total = sum(info.size for info in kept)
        for info in kept:
            if total <= self.max_bytes:
                break
            if info.execution_id != keep and not is_held(info.execution_id) and self._remove(info):
                total -= info.size
                evicted += 1
        return {"expired": removed, "evicted": evicted, "remaining": len(kept) - evicted}

    def clear(self) -> int:
        return sum(1 for info in self.scan() if self._remove(info))

    def delete(self, execution_id: str) -> bool:
        key = self.key(execution_id)
        try:
            gone = bool(self._client.delete(key))
        except Exception as exc:
            raise self._read_problem(exc) from None
        return self.local.delete(execution_id) or gone

    def _remove(self, info: EntryInfo) -> bool:
        if info.path is not None:
            return self.local.delete(info.execution_id)
        try:
            return bool(self._client.delete(self.key(info.execution_id)))
        except Exception as exc:
            raise self._read_problem(exc) from None


def redis_error() -> type[Exception]:
    """redis-py's base error, for modules that use :func:`connect` without importing redis themselves."""
    import redis

    error: type[Exception] = redis.RedisError
    return error


def _pack(data: bytes) -> bytes:
    if len(data) <= COMPRESS_OVER:
        return data
    return _ZLIB_MARK + zlib.compress(data, 1)


def _unpack(raw: bytes) -> bytes:
    if raw[:1] == _ZLIB_MARK:
        try:
            return zlib.decompress(raw[1:])
        except zlib.error as exc:
            raise ValueError(f"its compressed data is damaged ({exc})") from None
    return bytes(raw)


def _created(execution_id: str) -> int:
    return int(execution_id.split("-")[1])


def _reason(exc: BaseException) -> str:
    """A short reason without the URL (redis-py's messages name host:port, never the password)."""
    text = str(exc).rstrip(". ") or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "..."
