"""Replacing named pflow functions and putting them back: what every adapter shares.

In a module of its own so that the package (which picks an adapter) and the adapters (which
call :func:`patch`) do not import each other.
"""

from __future__ import annotations

from typing import Any

_ORIGINALS: list[tuple[Any, str, Any]] = []


def installed() -> bool:
    """Whether the plugin's hooks are in effect."""
    return bool(_ORIGINALS)


def uninstall() -> None:
    """Put every replaced pflow function back."""
    while _ORIGINALS:
        owner, name, original = _ORIGINALS.pop()
        setattr(owner, name, original)


def existing(owner: Any, name: str) -> Any:
    """``owner.name`` as pflow defines it; a missing name raises AttributeError naming it in full."""
    if isinstance(owner, type):
        where = f"{owner.__module__}.{owner.__qualname__}"
    else:
        where = getattr(owner, "__name__", None) or f"the {getattr(owner, 'name', '')} {type(owner).__name__.lower()}"
    if not (name in owner.__dict__ if isinstance(owner, type) else hasattr(owner, name)):
        raise AttributeError(f"{where}.{name} is missing")
    return getattr(owner, name)


def patch(owner: Any, name: str, replacement: Any) -> None:
    """Replace ``owner.name`` (recorded for :func:`uninstall`); a missing name raises AttributeError."""
    existing(owner, name)
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    _ORIGINALS.append((owner, name, original))
    setattr(owner, name, replacement)


def accept_structure_only_param() -> None:
    """pflow 0.10 warns (0.16 errs) about params a node's interface does not list; ``structure_only`` is ours."""
    try:
        from pflow.core.workflow.validator import WorkflowValidator
    except ImportError:  # 0.8 has no such check
        return
    original = getattr(WorkflowValidator, "_extract_known_keys", None)
    if original is None:
        return
    from pflow_structure.wrapper import STRUCTURE_ONLY_PARAM

    def _extract_known_keys(interface: dict[str, Any]) -> set[str]:
        known: set[str] = original(interface)
        return known | {STRUCTURE_ONLY_PARAM} if known else known

    patch(WorkflowValidator, "_extract_known_keys", staticmethod(_extract_known_keys))
