"""Usage counts in Redis: the same numbers as :class:`pflow_structure.cache.usage.UsageLog`, shared
by every instance.

One hash per UTC day, ``{namespace}:usage:{YYYY-MM-DD}``, with a field per count and tool
(``raw_tokens|mcp:list_issues``) raised by ``HINCRBY`` in one pipeline round trip, and an expiry of
:data:`~pflow_structure.cache.usage.RETENTION_DAYS`. Every command touches one key, so it works on a
Redis Cluster too. Bounded size: a day's hash holds one field per count and tool, whatever the
number of answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pflow_structure.cache.redis_store import DEFAULT_NAMESPACE, DEFAULT_TIMEOUT, connect
from pflow_structure.cache.usage import FIELDS, MAX_NAME_CHARS, RETENTION_DAYS, day_of, days_back, summed

__all__ = ["RedisUsageLog"]

_SCAN_BATCH = 1000


class RedisUsageLog:
    """Usage counts in Redis (see the module docstring); errors are redis-py's, for the caller to log."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = connect(url, timeout=timeout)
        self.namespace = namespace
        self.clock = clock

    def _key(self, day: str) -> str:
        return f"{self.namespace}:usage:{day}"

    def record(self, tool: str, counts: Mapping[str, int]) -> bool:
        """Add one answer's counts to today's hash."""
        key = self._key(day_of(self.clock()))
        name = str(tool)[:MAX_NAME_CHARS]
        pipe = self._client.pipeline(transaction=False)
        for field in FIELDS:
            if counts.get(field):
                pipe.hincrby(key, f"{field}|{name}", int(counts[field]))
        pipe.expire(key, RETENTION_DAYS * 86400)
        pipe.execute()
        return True

    def totals(self, days: int | None = None) -> tuple[dict[str, dict[str, int]], list[str]]:
        """(tool -> summed counts, []) over every kept day or the last ``days`` (a hash never fills)."""
        if days is None:
            keys = [_text(key) for key in self._client.scan_iter(match=self._key("*"), count=_SCAN_BATCH)]
        else:
            keys = [self._key(day) for day in days_back(self.clock(), days)]
        rows: list[tuple[str, dict[str, int]]] = []
        for key in sorted(keys):
            for field, value in self._client.hgetall(key).items():
                name, _, tool = _text(field).partition("|")
                if name in FIELDS and tool:
                    rows.append((tool, {name: int(value)}))
        return summed(rows), []


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
