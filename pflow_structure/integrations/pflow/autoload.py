"""Imported at start-up by the ``.pth`` file of ``pflow-structure pflow enable``, in a process started as ``pflow``.

Start-up is too early to load pflow (site-packages are still being set up, and pflow's plugins
import each other half-initialised), so this only puts a finder in front of the import system
that waits for ``pflow.cli``: the first import of it installs the plugin, then lets the import
go on, which is the order ``pflow-structure pflow`` uses. Never worse than no plugin: if it
cannot be installed (a pflow-cli release it does not support, say), pflow runs as it is and one
line on stderr says why and how to remove the start-up file.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

TRIGGER = "pflow.cli"


class _InstallBeforePflowCli:
    """A meta path finder that finds nothing: it installs the plugin when ``pflow.cli`` is first imported."""

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None) -> None:
        if name == TRIGGER:
            sys.meta_path.remove(self)  # once, and never in the way of the imports install() makes
            _install()


def _install() -> None:
    try:
        from pflow_structure.integrations.pflow import install

        install()
    except Exception as exc:  # pflow must still start; the reason goes to stderr
        sys.stderr.write(
            f"pflow-structure: the pflow plugin is not active in this pflow ({exc}); "
            "`pflow-structure pflow disable` stops this message.\n"
        )


if not any(isinstance(finder, _InstallBeforePflowCli) for finder in sys.meta_path):
    sys.meta_path.insert(0, _InstallBeforePflowCli())
