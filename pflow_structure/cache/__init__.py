"""The execution cache: ids, secret masking, the backend interface and the filesystem store (Redis: redis_store)."""

from __future__ import annotations

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.cache.ids import is_valid_execution_id, new_execution_id, validate_execution_id
from pflow_structure.cache.masking import is_secret_key, mask_secrets
from pflow_structure.cache.store import (
    CacheEntry,
    EntryInfo,
    ExecutionCache,
    StoredExecution,
    default_cache_dir,
    fallback_cache_dir,
)

__all__ = [
    "CacheBackend",
    "CacheEntry",
    "EntryInfo",
    "ExecutionCache",
    "StoredExecution",
    "default_cache_dir",
    "fallback_cache_dir",
    "is_secret_key",
    "is_valid_execution_id",
    "mask_secrets",
    "new_execution_id",
    "validate_execution_id",
]
