"""The filter's saved decisions in Redis: one LLM answer serves every instance that shares the cache.

The same records as :class:`pflow_structure.filtering.decisions.DecisionCache`, one key each,
``{namespace}:decision:{sha256}``, with the decision TTL as Redis expiry. Redis trouble is a miss
(the filter asks again) or an unsaved decision, never an error: a decision is only an optimisation.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pflow_structure.cache.redis_store import DEFAULT_NAMESPACE, DEFAULT_TIMEOUT, connect, redis_error

__all__ = ["RedisDecisionCache"]


class RedisDecisionCache:
    """The filter's saved decisions in Redis, so every instance reuses one LLM answer (see filtering.decisions)."""

    def __init__(
        self, url: str, *, ttl_days: float, namespace: str = DEFAULT_NAMESPACE, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._client = connect(url, timeout=timeout)
        self.namespace = namespace
        self.ttl_seconds = max(1, round(ttl_days * 86400))

    def _key(self, key: str) -> str:
        if len(key) != 64 or any(char not in "0123456789abcdef" for char in key):
            raise ValueError(f"not a decision key: {key[:80]!r}")
        return f"{self.namespace}:decision:{key}"

    def get(self, key: str) -> list[str] | None:
        """The kept paths, or None (also when Redis does not answer: the filter then asks again)."""
        import json

        try:
            raw = self._client.get(self._key(key))
        except redis_error():
            return None
        try:
            record = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        kept = record.get("kept") if isinstance(record, dict) and record.get("key") == key else None
        if not isinstance(kept, list) or not kept or not all(isinstance(item, str) for item in kept):
            return None
        return kept

    def put(self, key: str, kept: Sequence[str], **about: Any) -> bool:
        import json

        record = {"key": key, "created": time.time(), "kept": list(kept), **about}
        try:
            return bool(self._client.set(self._key(key), json.dumps(record, ensure_ascii=True), ex=self.ttl_seconds))
        except redis_error():
            return False
