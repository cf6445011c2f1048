"""The execution cache: ids, secret masking, the backend interface and the filesystem store (Redis: redis_store).

The names below load on first use: ``read-fields`` imports the store and the ids, not the
write path's masking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "CacheBackend": "backend",
    "is_valid_execution_id": "ids",
    "new_execution_id": "ids",
    "validate_execution_id": "ids",
    "is_secret_key": "masking",
    "mask_secrets": "masking",
    "CacheEntry": "store",
    "EntryInfo": "store",
    "ExecutionCache": "store",
    "StoredExecution": "store",
    "default_cache_dir": "store",
    "fallback_cache_dir": "store",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
