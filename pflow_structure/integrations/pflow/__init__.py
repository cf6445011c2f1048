"""The pflow plugin: the only package that touches pflow-cli's internals.

pflow has no plugin hooks, so :func:`install` replaces named functions of the installed
pflow-cli and :func:`uninstall` puts every original back. Which functions depends on the
release line, so there is one adapter per line, chosen by the installed version:

========================  ===================  ==================================================
pflow-cli                 adapter              what changed
========================  ===================  ==================================================
0.8.x to 0.10.x           :mod:`.v08`          the wrapper-chain compiler, ``registry run``
0.16.x                    :mod:`.v16`          one ``WorkflowEngine``, ``pflow probe``
0.11.x to 0.15.x, later   none                 refused by name, with the supported lines
========================  ===================  ==================================================

Each adapter's docstring lists what it replaces and why. What is not version-specific is
shared: ``readers.py`` (pflow's execution cache, structure formatter, ``read-fields`` and the
MCP field service on our cache) and this module (version check, patch bookkeeping, settings).
A release of a supported line whose internals moved is refused too: every replaced name is
checked before anything is patched, and a missing one names itself in the error.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from pflow_structure.errors import PflowVersionError
from pflow_structure.settings import Settings

# (first minor, last minor, adapter module) per supported release line.
LINES = (((0, 8), (0, 10), "v08"), ((0, 16), (0, 16), "v16"))
SUPPORTED_TEXT = "pflow-cli 0.8.x to 0.10.x (the wrapper-chain compiler) or 0.16.x (the workflow engine)"
INSTALL_HINT = "pip install 'pflow-cli==0.16.0', or pip install 'pflow-cli>=0.8,<0.11' 'mcp<2'"

_ORIGINALS: list[tuple[Any, str, Any]] = []
_settings_override: Settings | None = None


# -- version ---------------------------------------------------------------------------------


def pflow_version() -> str | None:
    """The installed pflow-cli version, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pflow-cli")
    except PackageNotFoundError:
        return None


def adapter_name(found: str) -> str | None:
    """The adapter module for a pflow-cli version (``"v08"``, ``"v16"``), or None if unsupported."""
    match = re.match(r"(\d+)\.(\d+)", found)
    if match is None:
        return None
    minor = (int(match.group(1)), int(match.group(2)))
    return next((name for first, last, name in LINES if first <= minor <= last), None)


def check_version(found: str | None = None) -> str:
    """The installed version if supported, else a PflowVersionError that says what to do."""
    found = found if found is not None else pflow_version()
    if found is None:
        raise PflowVersionError(f"pflow-cli is not installed; the pflow plugin needs {SUPPORTED_TEXT}: {INSTALL_HINT}")
    if adapter_name(found) is None:
        raise PflowVersionError(
            f"pflow-cli {found} is installed, but the pflow plugin supports {SUPPORTED_TEXT}; other releases "
            f"moved the internals it hooks. Install a supported release ({INSTALL_HINT}), or use "
            "pflow-structure's own CLI and MCP server, which need no pflow."
        )
    return found


# -- install / uninstall ---------------------------------------------------------------------


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_ORIGINALS)


def install(settings: Settings | None = None) -> None:
    """Patch the installed pflow-cli (once; a second call only updates ``settings``)."""
    global _settings_override
    found = check_version()
    _settings_override = settings
    if _ORIGINALS:
        return
    if adapter_name(found) == "v16":
        from pflow_structure.integrations.pflow.v16 import install_hooks
    else:
        from pflow_structure.integrations.pflow.v08 import install_hooks
    try:
        install_hooks()
    except (AttributeError, ImportError, KeyError) as exc:
        uninstall()  # all or nothing
        raise PflowVersionError(
            f"pflow-cli {found} does not have the internals the pflow plugin hooks ({exc}); this build of the "
            f"release line differs from the one the plugin was tested with. Install a tested build: {INSTALL_HINT}."
        ) from exc


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


def current_settings() -> Settings:
    """The settings install() was given, else the environment's (read at each call)."""
    return _settings_override or Settings.from_env()


def settings_override() -> Settings | None:
    """The settings install() was given, if any (structure-only nodes fall back to the environment)."""
    return _settings_override


def run_pflow(argv: list[str], settings: Settings | None = None) -> None:
    """Run pflow's own CLI (``pflow ARGS...``) with the plugin installed."""
    install(settings)
    from pflow.cli import cli_main

    sys.argv = ["pflow", *argv]
    cli_main()
