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
MCP field service on our cache), ``hooks.py`` (replacing names and putting them back),
``active.py`` (the settings in effect) and this module (version check, install).
A release of a supported line whose internals moved is refused too: every replaced name is
checked before anything is patched, and a missing one names itself in the error.
"""

from __future__ import annotations

import re
import sys

from pflow_structure.errors import PflowVersionError
from pflow_structure.integrations.pflow.active import current_settings as current_settings  # re-exported
from pflow_structure.integrations.pflow.active import set_override
from pflow_structure.integrations.pflow.active import settings_override as settings_override  # re-exported
from pflow_structure.integrations.pflow.hooks import installed as installed  # re-exported
from pflow_structure.integrations.pflow.hooks import uninstall as uninstall  # re-exported
from pflow_structure.settings import Settings

# (first minor, last minor, adapter module) per supported release line.
LINES = (((0, 8), (0, 10), "v08"), ((0, 16), (0, 16), "v16"))
SUPPORTED_TEXT = "pflow-cli 0.8.x to 0.10.x (the wrapper-chain compiler) or 0.16.x (the workflow engine)"
INSTALL_HINT = "pip install 'pflow-cli==0.16.0', or pip install 'pflow-cli>=0.8,<0.11' 'mcp<2'"


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


def install(settings: Settings | None = None) -> None:
    """Patch the installed pflow-cli (once; a second call only updates ``settings``)."""
    found = check_version()
    set_override(settings)
    if installed():
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


def run_pflow(argv: list[str], settings: Settings | None = None) -> None:
    """Run pflow's own CLI (``pflow ARGS...``) with the plugin installed."""
    install(settings)
    from pflow.cli import cli_main

    sys.argv = ["pflow", *argv]
    cli_main()
