"""StructureOnlyNodeWrapper: run any PocketFlow node, keep its outputs in the execution cache.

The wrapper follows the contract of pflow's wrapper chain (DESIGN.md, "pflow seams"), so the
same class works in a plain PocketFlow ``Flow`` and inside pflow's compiler:

- the wrapped node is ``inner_node``; unknown attributes are read from and written to it,
  except the copy protocol's ``__getstate__``/``__setstate__``/``__getnewargs*__``;
- ``>>``, ``-``, ``next`` and ``successors`` are the inner node's, so wiring is unchanged;
- ``__copy__``/``__deepcopy__`` are its own (Flow copies a node per step; a wrapper without
  them is silently dropped from the copy);
- ``set_params`` drops the ``structure_only`` flag and passes the rest on;
- retries and ``exec_fallback`` belong to the inner node's ``_exec`` and are not touched.

After the inner node's ``post`` returns, what it wrote for this node goes to the cache and
``shared[node_id]`` becomes a :class:`CachedOutputs` view; the action is returned unchanged.
A node that raises caches nothing.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, MutableMapping
from typing import Any, TypeGuard

from pflow_structure.errors import ParameterError
from pflow_structure.settings import Settings
from pflow_structure.wrapper.namespace import NodeNamespace
from pflow_structure.wrapper.view import INLINE_MAX_CHARS, METADATA_KEYS, CachedOutputs

STRUCTURE_ONLY_PARAM = "structure_only"
_OWN = frozenset({"inner_node", "node_id", "node_type", "namespace", "settings", "cache"})
_NO_DELEGATION = frozenset({"__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__"})


class StructureOnlyNodeWrapper:
    """Wrap ``node`` so that its outputs are cached and only their structure stays in memory.

    ``node_id`` names the node's slot in the shared store (default: the node's class name).
    With ``namespace=True`` (plain PocketFlow) the node's writes are collected for it as
    pflow's namespacing does: ``shared["result"] = x`` ends up at ``shared[node_id]["result"]``.
    With ``namespace=False`` the node (or a wrapper inside, such as pflow's
    ``NamespacedNodeWrapper``) writes ``shared[node_id]`` itself, and that dict is cached.

    >>> fetch = StructureOnlyNodeWrapper(FetchIssues(), node_id="fetch")   # doctest: +SKIP
    >>> fetch >> Summarise()                                             # doctest: +SKIP
    """

    def __new__(cls, node: Any, *args: Any, **kwargs: Any) -> StructureOnlyNodeWrapper:
        if cls is StructureOnlyNodeWrapper:
            base = _async_node_base(node)
            if base is not None:
                cls = _async_wrapper_class(base)
        return object.__new__(cls)

    def __init__(
        self,
        node: Any,
        node_id: str | None = None,
        *,
        node_type: str | None = None,
        namespace: bool = True,
        settings: Settings | None = None,
        cache: Any = None,
    ) -> None:
        own = object.__setattr__
        class_name = type(_innermost(node)).__name__
        own(self, "inner_node", node)
        own(self, "node_id", node_id or class_name)
        own(self, "node_type", node_type or class_name)
        own(self, "namespace", namespace)
        own(self, "settings", settings)
        own(self, "cache", cache)

    # -- running -----------------------------------------------------------------------------

    def _run(self, shared: MutableMapping[str, Any]) -> Any:
        previous = shared.get(self.node_id)
        store = self._before(shared)
        try:
            action = self.inner_node._run(store)
        except BaseException:
            _put_back_view(shared, self.node_id, previous)
            raise
        self._after(shared, store)
        return action

    def run(self, shared: MutableMapping[str, Any]) -> Any:
        if self.successors:
            warnings.warn("Node won't run successors. Use Flow.", stacklevel=2)
        return self._run(shared)

    def _before(self, shared: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        """The store the inner node runs against; a revisited node starts from its old outputs."""
        previous = shared.get(self.node_id)
        if _left_by_wrapper(previous):  # a loop came back: the node updates its outputs in place
            previous = _without_metadata(previous)
            shared[self.node_id] = previous
        if not self.namespace:
            return shared
        if previous is None:
            previous = {}
        elif not isinstance(previous, dict):
            raise ParameterError(
                f"shared[{self.node_id!r}] already holds a {type(previous).__name__}, so structure-only node "
                f"{self.node_id!r} cannot keep its outputs there; give the wrapper another node_id"
            )
        return NodeNamespace(shared, self.node_id, previous)

    def _after(self, shared: MutableMapping[str, Any], store: MutableMapping[str, Any]) -> None:
        outputs = store.outputs if isinstance(store, NodeNamespace) else shared.get(self.node_id)
        shared[self.node_id] = self.capture(outputs if outputs is not None else {})

    def capture(self, outputs: Any, *, keep_scalars: bool = True) -> dict[str, Any]:
        """Cache ``outputs`` and return what goes to ``shared[node_id]``.

        ``keep_scalars=False`` keeps no output in memory, not even short scalars (an exit code):
        the view then holds only ``_structure`` and ``_execution_id``.

        A :class:`CachedOutputs` view normally; the outputs themselves (with ``_structure`` and
        ``_execution_id`` added) when the cache could not store them or could store them only
        changed (nested deeper than the encoder keeps, cycles), with a warning, since dropping
        them would lose data.
        """
        from pflow_structure.service import capture_outputs

        settings = self.settings or Settings.from_env()
        cache = self.cache or settings.cache()
        captured = capture_outputs(self.node_type, self._params_to_record(), outputs, settings=settings, cache=cache)
        result = captured.result
        if not captured.cached or captured.notes:
            # Not readable back, or readable only as changed (a cut, a cycle, a huge int as hex):
            # the node's own values stay in memory, so downstream nodes see what they would without us.
            why = " ".join(result.get("warnings", [])) if not captured.cached else "; ".join(captured.notes[:3])
            warnings.warn(
                f"structure-only node {self.node_id!r} keeps its outputs in memory: {why}",
                RuntimeWarning,
                stacklevel=3,
            )
            kept = dict(outputs) if isinstance(outputs, dict) else {"result": outputs}
            return {**kept, "_structure": result["structure"], "_execution_id": result["execution_id"]}
        stored = captured.outputs
        top_level_binary = {p[0] for p in captured.binary_paths if p}
        inline = {k: v for k, v in stored.items() if keep_scalars and k not in top_level_binary and _is_small_scalar(v)}
        summary = {k: v for k, v in result.items() if k != "structure"}
        return CachedOutputs(
            result["execution_id"],
            tuple(stored),
            structure=result["structure"],
            inline=inline,
            cache=cache,
            node_id=self.node_id,
            summary=summary,
        )

    def _params_to_record(self) -> dict[str, Any]:
        """The node's params for the cache entry, without framework injections (``__registry__``)."""
        params = getattr(self.inner_node, "params", None)
        if not isinstance(params, Mapping):
            return {}
        return {
            k: v
            for k, v in params.items()
            if k != STRUCTURE_ONLY_PARAM and not (isinstance(k, str) and k.startswith("__") and k.endswith("__"))
        }

    # -- the node protocol, delegated ---------------------------------------------------------

    def set_params(self, params: Any) -> None:
        if isinstance(params, Mapping) and STRUCTURE_ONLY_PARAM in params:
            params = {k: v for k, v in params.items() if k != STRUCTURE_ONLY_PARAM}
        self.inner_node.set_params(params)

    def next(self, node: Any, action: str = "default") -> Any:
        return self.inner_node.next(node, action)

    def __rshift__(self, other: Any) -> Any:
        return self.inner_node >> other

    def __sub__(self, action: Any) -> Any:
        return self.inner_node - action

    def __getattr__(self, name: str) -> Any:
        if name in _NO_DELEGATION:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(object.__getattribute__(self, "inner_node"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner_node, name, value)

    def __copy__(self) -> StructureOnlyNodeWrapper:
        return self._clone(copy.copy(self.inner_node))

    def __deepcopy__(self, memo: dict[int, Any]) -> StructureOnlyNodeWrapper:
        clone = self._clone(None)
        memo[id(self)] = clone
        object.__setattr__(clone, "inner_node", copy.deepcopy(self.inner_node, memo))
        return clone

    def __reduce__(self) -> tuple[Any, ...]:
        # State after construction, so a flow whose successors loop back to this node pickles.
        state = {name: object.__getattribute__(self, name) for name in _OWN}
        return (_empty_wrapper, (_async_node_base(self.inner_node),), state)

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def _clone(self, inner: Any) -> StructureOnlyNodeWrapper:
        clone = object.__new__(type(self))
        for name in _OWN:
            object.__setattr__(clone, name, object.__getattribute__(self, name))
        object.__setattr__(clone, "inner_node", inner)
        return clone

    def __repr__(self) -> str:
        return f"StructureOnlyNodeWrapper(node_id={self.node_id!r}, inner={self.inner_node!r})"


class AsyncStructureOnlyNodeWrapper(StructureOnlyNodeWrapper):
    """The wrapper for an ``AsyncNode``; its concrete class also derives from that node's
    ``AsyncNode`` base, so ``AsyncFlow`` awaits it (it checks ``isinstance(node, AsyncNode)``)."""

    async def _run_async(self, shared: MutableMapping[str, Any]) -> Any:
        previous = shared.get(self.node_id)
        store = self._before(shared)
        try:
            action = await self.inner_node._run_async(store)
        except BaseException:
            _put_back_view(shared, self.node_id, previous)
            raise
        self._after(shared, store)
        return action

    async def run_async(self, shared: MutableMapping[str, Any]) -> Any:
        if self.successors:
            warnings.warn("Node won't run successors. Use AsyncFlow.", stacklevel=2)
        return await self._run_async(shared)


_ASYNC_CLASSES: dict[type, type] = {}


def _async_node_base(node: Any) -> type | None:
    """The ``AsyncNode`` class ``node`` derives from (PyPI pocketflow or a vendored copy), if any."""
    for klass in type(node).__mro__:
        if klass.__name__ == "AsyncNode" and "_run_async" in vars(klass):
            return klass
    return None


def _async_wrapper_class(base: type) -> type:
    """A wrapper class that is also an instance of ``base``; the methods ``base`` defines and
    the wrapper does not are delegated to the inner node rather than inherited."""
    if base not in _ASYNC_CLASSES:
        ours = {name for klass in AsyncStructureOnlyNodeWrapper.__mro__ for name in vars(klass)}
        delegated = {
            name: _delegated_attribute(name)
            for klass in base.__mro__
            if klass is not object
            for name in vars(klass)
            if not name.startswith("__") and name not in ours
        }
        _ASYNC_CLASSES[base] = type("AsyncStructureOnlyNodeWrapper", (AsyncStructureOnlyNodeWrapper, base), delegated)
    return _ASYNC_CLASSES[base]


def _empty_wrapper(async_base: type | None) -> StructureOnlyNodeWrapper:
    """An uninitialised wrapper of the right class, for unpickling."""
    cls = _async_wrapper_class(async_base) if async_base is not None else StructureOnlyNodeWrapper
    wrapper: StructureOnlyNodeWrapper = object.__new__(cls)
    return wrapper


def _delegated_attribute(name: str) -> property:
    def read(self: StructureOnlyNodeWrapper) -> Any:
        return getattr(self.inner_node, name)

    return property(read)


def _left_by_wrapper(value: Any) -> TypeGuard[dict[str, Any]]:
    """Whether ``value`` is what a wrapper leaves at ``shared[node_id]``: a view, or the outputs
    kept in memory (with the metadata keys) when the cache could not store them."""
    return isinstance(value, CachedOutputs) or (isinstance(value, dict) and all(k in value for k in METADATA_KEYS))


def _without_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """A plain, mutable copy of earlier outputs, so a revisit does not cache old metadata as outputs."""
    if isinstance(value, CachedOutputs):
        return value.materialize()
    return {k: v for k, v in value.items() if k not in METADATA_KEYS}


def _put_back_view(shared: MutableMapping[str, Any], node_id: str, previous: Any) -> None:
    """A revisit that raised caches nothing: leave what the earlier visit left (the view, still
    in the cache) at ``shared[node_id]``, not the in-memory copy the failed run started from."""
    if _left_by_wrapper(previous):
        shared[node_id] = previous


def _innermost(node: Any) -> Any:
    """The node at the end of a wrapper chain (pflow wrappers use ``inner_node``/``_inner_node``)."""
    seen = set()
    while id(node) not in seen:
        seen.add(id(node))
        inner = getattr(node, "__dict__", {}).get("inner_node", getattr(node, "__dict__", {}).get("_inner_node"))
        if inner is None:
            return node
        node = inner
    return node


def _is_small_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= INLINE_MAX_CHARS
    return value is None or isinstance(value, (bool, int, float))


def structure_only_requested(params: Mapping[str, Any] | None, node_id: str = "") -> bool:
    """Whether ``params`` turn structure-only on: ``true`` (or the text "true"); ``false``,
    absent, "false" and "" turn it off; anything else is a ParameterError naming the node."""
    if not params or STRUCTURE_ONLY_PARAM not in params:
        return False
    value = params[STRUCTURE_ONLY_PARAM]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", ""):
        return value.strip().lower() == "true"
    where = f" of node {node_id!r}" if node_id else ""
    raise ParameterError(
        f"the {STRUCTURE_ONLY_PARAM} param{where} must be true or false, not {value!r}; "
        f'write "{STRUCTURE_ONLY_PARAM}": true'
    )


def wrap_if_structure_only(node: Any, node_id: str, params: Mapping[str, Any] | None, **options: Any) -> Any:
    """For compilers: ``node`` wrapped when ``params`` has ``structure_only: true``, else ``node``.

    The flag is never passed on: the wrapper's ``set_params`` drops it.
    """
    if not structure_only_requested(params, node_id):
        return node
    return StructureOnlyNodeWrapper(node, node_id, **options)
