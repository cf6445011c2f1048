"""Run a node on a fresh shared store (sync or async, also from inside a running event loop)."""

from __future__ import annotations

from pflow_structure.errors import NodeExecutionError

TYPE_CHECKING = False  # typing is not imported at run time: read-fields loads this package (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any


def run_node(node_type: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run ``node_type`` with ``params`` on a fresh shared store; return what it wrote."""
    from pflow_structure.nodes.base import AsyncNode
    from pflow_structure.registry import find_node

    spec = find_node(node_type)
    try:
        node = spec.load()()
    except Exception as exc:  # a broken plugin: name where it comes from
        raise NodeExecutionError(
            node_type, exc, context=f"cannot load {spec.target} (from {spec.source}); reinstall or fix that package"
        ) from exc
    shared: dict[str, Any] = {}
    try:
        node.set_params(params)
        if isinstance(node, AsyncNode):
            run_coroutine(node._run_async(shared))
        else:
            node._run(shared)
    except NodeExecutionError:
        raise
    except Exception as exc:
        raise NodeExecutionError(node_type, exc) from exc
    return shared


def run_coroutine(coroutine: Any) -> Any:
    """Run a coroutine to completion, also when called from inside a running event loop."""
    import asyncio
    import threading

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="pflow-structure-async-node")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
