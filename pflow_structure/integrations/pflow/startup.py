"""``pflow-structure pflow enable|disable|status``: plain ``pflow`` runs with the plugin, by a ``.pth`` file.

Python runs each ``import`` line of a ``.pth`` file in site-packages when it starts. The line
:func:`enable` writes does nothing unless the process was started as ``pflow`` (its
``sys.argv[0]``); then it imports :mod:`.autoload`, which installs the plugin as
``pflow-structure pflow`` does, before pflow's CLI loads. Nothing is patched in an environment
that did not ask, nor in any other program of one that did; :func:`disable` removes the file.
"""

from __future__ import annotations

import os
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

PTH_NAME = "pflow_structure_plugin.pth"  # sorts after __editable__*.pth, so an editable install is importable
PTH_TEXT = (
    "# Written by `pflow-structure pflow enable`; `pflow-structure pflow disable` removes it.\n"
    "import os, sys; os.path.basename(sys.argv[0] if sys.argv else '').lower().removesuffix('.exe') == 'pflow' "
    "and __import__('pflow_structure.integrations.pflow.autoload')\n"
)


@dataclass(frozen=True)
class Status:
    """Where the start-up file goes, whether it is there, and the pflow-cli it would serve."""

    path: Path
    enabled: bool
    pflow_version: str | None
    supported: bool


def pth_path() -> Path:
    """The start-up file of this environment (the site-packages pflow-structure is installed in)."""
    return Path(sysconfig.get_paths()["purelib"]) / PTH_NAME


def status() -> Status:
    from pflow_structure.integrations.pflow import adapter_name, pflow_version

    path = pth_path()
    found = pflow_version()
    enabled = path.is_file() and path.read_text(encoding="utf-8", errors="replace") == PTH_TEXT
    return Status(path, enabled, found, found is not None and adapter_name(found) is not None)


def enable() -> tuple[Path, bool]:
    """Write the start-up file (after checking the installed pflow-cli); ``(path, changed)``."""
    from pflow_structure.integrations.pflow import check_version

    check_version()  # a PflowVersionError that says what to install
    path = pth_path()
    if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == PTH_TEXT:
        return path, False
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".pflow_structure_plugin.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(PTH_TEXT)
        os.chmod(temporary, 0o644)  # read by every user of the environment, as site-packages is
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path, True


def disable() -> tuple[Path, bool]:
    """Remove the start-up file; ``(path, changed)``."""
    path = pth_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return path, False
    return path, True
