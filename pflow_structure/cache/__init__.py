"""The execution cache: ids, secret masking, the backend interface and the filesystem store (Redis: redis_store).

The names below load on first use: ``read-fields`` imports the store and the ids, not the
write path's masking.
"""

from __future__ import annotations

from pflow_structure.lazy import lazy_names

TYPE_CHECKING = False
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


__getattr__ = lazy_names(__name__, {name: f"{__name__}.{home}" for name, home in _HOMES.items()}, globals())
