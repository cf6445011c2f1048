"""The one import site of PocketFlow for our nodes, the registry and the service."""

from __future__ import annotations

from typing import Any

from pocketflow import AsyncNode, BaseNode, Node

__all__ = ["AsyncNode", "BaseNode", "Node", "positive_seconds", "require_param"]


def require_param(node: Any, name: str, node_type: str, example: str) -> Any:
    """The parameter ``name`` of ``node`` or a ParameterError that shows how to pass it."""
    from pflow_structure.errors import ParameterError

    params = getattr(node, "params", None) or {}
    if name not in params or params[name] in (None, ""):
        raise ParameterError(f"missing parameter {name!r}; pass it as: pflow-structure run {node_type} {example}")
    return params[name]


def positive_seconds(node: Any, name: str, default: float) -> float:
    """A timeout parameter as seconds, or a ParameterError that says what was given."""
    from pflow_structure.errors import ParameterError

    value = (getattr(node, "params", None) or {}).get(name, default)
    try:
        # Templates may pass "30" as text; True is not a number of seconds.
        seconds = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
    except (ValueError, OverflowError):
        seconds = None
    if seconds is None or not 0 < seconds < float("inf"):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise ParameterError(f"{name} must be a positive number of seconds, e.g. {name}={default:g}; got {shown}")
    return seconds
