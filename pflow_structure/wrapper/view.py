"""CachedOutputs: a node's outputs as a read-only ``dict`` whose large values stay in the cache.

A structure-only node leaves one of these at ``shared[node_id]``. It is a real ``dict``
subclass, because pflow's template resolver and most node code test ``isinstance(x, dict)``,
and it behaves like the dict the node wrote: ``view["result"]``, ``"result" in view``,
``len``, iteration, ``items()``, ``json.dumps(view)``, ``==`` with a plain dict. What it keeps
in memory is small: the structure (``_structure``), the execution id (``_execution_id``) and
the short scalar outputs (exit codes, status strings). Everything else is read from the
execution cache through :func:`pflow_structure.service.read_fields` when it is asked for,
and not kept: a 50 MB output costs memory only while a caller holds what it read.

Writes raise ``TypeError``: the cached execution is what downstream nodes and
``read_fields`` see, and a change in memory only would make the two disagree.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, NoReturn

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.cache.store import hold_execution, release_execution

STRUCTURE_KEY = "_structure"
EXECUTION_ID_KEY = "_execution_id"
METADATA_KEYS = (STRUCTURE_KEY, EXECUTION_ID_KEY)

# Scalars up to this many characters stay in memory: reading `exit_code` or `status` should
# not parse a 50 MB cache file, and keeping them costs a few bytes each.
INLINE_MAX_CHARS = 1024


class CachedOutputs(dict):  # type: ignore[type-arg]
    """Read-only view of one execution's outputs (see the module docstring).

    >>> view = shared["fetch"]                        # doctest: +SKIP
    >>> view["_execution_id"], view["result"][0]["title"]    # doctest: +SKIP
    ('exec-1763463202-0cd0c8fe', 'Fix authentication bug')
    >>> view.read("result[*].number")                 # doctest: +SKIP
    {'result[*].number': [101, 100, 99]}
    """

    execution_id: str
    node_id: str | None
    summary: dict[str, Any]
    _cache: CacheBackend
    _order: tuple[str, ...]
    _lazy: frozenset[str]

    def __init__(
        self,
        execution_id: str,
        output_keys: tuple[str, ...],
        *,
        structure: Mapping[str, Any],
        inline: Mapping[str, Any] | None = None,
        cache: CacheBackend,
        node_id: str | None = None,
        summary: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        for key, value in (inline or {}).items():
            dict.__setitem__(self, key, value)
        dict.__setitem__(self, STRUCTURE_KEY, structure)
        dict.__setitem__(self, EXECUTION_ID_KEY, execution_id)
        self.__dict__.update(
            execution_id=execution_id,
            node_id=node_id,
            summary=dict(summary or {}),
            _cache=cache,
            _order=tuple(k for k in output_keys if k not in METADATA_KEYS) + METADATA_KEYS,
            _lazy=frozenset(k for k in output_keys if k not in METADATA_KEYS and k not in (inline or {})),
        )
        hold_execution(execution_id)
        weakref.finalize(self, release_execution, execution_id)

    # -- what it holds ---------------------------------------------------------------------

    @property
    def structure(self) -> dict[str, Any]:
        """The structure of the outputs (template path → type and statistics)."""
        value: dict[str, Any] = dict.__getitem__(self, STRUCTURE_KEY)
        return value

    def read(self, *paths: str) -> dict[str, Any]:
        """``read_fields`` on this execution: ``{path: value}``, only what was asked for."""
        values: dict[str, Any] = self.read_detailed(*paths).values
        return values

    def read_detailed(self, *paths: str) -> Any:
        """``read_fields_detailed`` on this execution (values, and why a value is None).

        The TTL does not apply (the workflow that wrote the entry is still using it); an entry
        deleted meanwhile raises the cache's error with this node's name and the way out.
        """
        from pflow_structure.errors import ExecutionNotFoundError
        from pflow_structure.service import read_fields_detailed

        try:
            return read_fields_detailed(self.execution_id, list(paths), cache=_Unexpiring(self._cache))  # type: ignore[arg-type]
        except ExecutionNotFoundError as exc:
            raise ExecutionNotFoundError(
                self.execution_id,
                f"the cached outputs of structure-only node {self.node_id!r} were deleted while the workflow still "
                "needed them: another process pruned or cleared the cache",
                fix="Raise PFLOW_STRUCTURE_MAX_CACHE_SIZE, or run the node without structure_only.",
            ) from exc

    def materialize(self) -> dict[str, Any]:
        """Every output as a plain, mutable dict (the metadata keys left out)."""
        return {key: value for key, value in self._pairs() if key not in METADATA_KEYS}

    def _read_key(self, key: str) -> Any:
        from pflow_structure.paths import quote_key

        path = quote_key(key)
        readout = self.read_detailed(path)
        if path in readout.errors:  # only if the entry changed on disk since it was written
            raise KeyError(f"{key!r}: {readout.errors[path]}")
        return readout.values[path]

    def _pairs(self) -> Iterator[tuple[str, Any]]:
        """All (key, value) pairs, loading the cache entry once for the lazy ones."""
        if self._lazy:
            from pflow_structure.paths import quote_key

            loaded = self.read(*(quote_key(k) for k in self._lazy))
        for key in self._order:
            if key in self._lazy:
                yield key, loaded[quote_key(key)]
            else:
                yield key, dict.__getitem__(self, key)

    # -- the dict protocol, read side --------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if isinstance(key, str) and key in self._lazy:
            return self._read_key(key)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            return default
        return self[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        return KeysView(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        return _ItemsView(self)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return _ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CachedOutputs) and other.execution_id == self.execution_id:
            return True
        if not isinstance(other, Mapping) or len(other) != len(self) or set(other) != set(self._order):
            return False
        return all(other[key] == value for key, value in self._pairs())

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __or__(self, other: Any) -> Any:
        return dict(self._pairs()) | other

    def __ror__(self, other: Any) -> Any:
        return other | dict(self._pairs())

    def __str__(self) -> str:
        """The text of the plain dict (``print(view)`` shows the data, as for the dict it stands for);
        ``repr`` stays short for logs and debuggers."""
        return repr(dict(self._pairs()))

    def __repr__(self) -> str:
        lazy = sorted(self._lazy)
        shown = ", ".join(repr(k) for k in lazy[:8]) + (", ..." if len(lazy) > 8 else "")
        return f"<CachedOutputs {self.execution_id} node={self.node_id!r} cached=[{shown}]>"

    # -- copies and pickling: another view of the same execution ---------------------------

    def copy(self) -> dict[str, Any]:
        """A plain, mutable dict with every value (as ``dict.copy`` gives)."""
        return dict(self._pairs())

    def __copy__(self) -> CachedOutputs:
        return self._rebuild(dict.__getitem__(self, STRUCTURE_KEY))

    def __deepcopy__(self, memo: dict[int, Any]) -> CachedOutputs:
        clone = self._rebuild(copy.deepcopy(dict.__getitem__(self, STRUCTURE_KEY), memo))
        memo[id(self)] = clone
        return clone

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_view, (self._constructor_arguments(dict.__getitem__(self, STRUCTURE_KEY)),))

    def _rebuild(self, structure: Mapping[str, Any]) -> CachedOutputs:
        return _rebuild_view(self._constructor_arguments(structure))

    def _constructor_arguments(self, structure: Mapping[str, Any]) -> dict[str, Any]:
        inline = {k: dict.__getitem__(self, k) for k in dict.keys(self) if k not in METADATA_KEYS}
        return {
            "execution_id": self.execution_id,
            "output_keys": self._order,
            "structure": structure,
            "inline": inline,
            "cache": self._cache,
            "node_id": self.node_id,
            "summary": self.summary,
        }

    # -- the write side refuses, naming the node and the way out ---------------------------

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError(
            f"the outputs of structure-only node {self.node_id!r} are read-only: they live in the execution cache "
            f"as {self.execution_id}. Copy what you need (view.copy() or view.materialize()) and change the copy, "
            "or run the node without structure_only."
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


class _Unexpiring:
    """The cache as the view reads it: TTL not checked (see :meth:`CachedOutputs.read_detailed`)."""

    def __init__(self, cache: CacheBackend) -> None:
        self.cache = cache

    def get(self, execution_id: str) -> Any:
        return self.cache.get(execution_id, check_ttl=False)


def _rebuild_view(arguments: dict[str, Any]) -> CachedOutputs:
    return CachedOutputs(**arguments)


class _ItemsView(ItemsView[str, Any]):
    """``items()`` that reads the cache entry once, not once per key."""

    _mapping: CachedOutputs

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._mapping._pairs()


class _ValuesView(ValuesView[Any]):
    _mapping: CachedOutputs

    def __iter__(self) -> Iterator[Any]:
        return (value for _, value in self._mapping._pairs())
