"""Imported at start-up by the ``.pth`` file of ``pflow-structure pflow enable``, in a process started as ``pflow``.

Installs the plugin before pflow's CLI loads, as ``pflow-structure pflow`` does. Never worse than
no plugin: if it cannot be installed (a pflow-cli release it does not support, say), pflow runs
as it is and one line on stderr says why and how to remove the start-up file.
"""

from __future__ import annotations

import sys


def _install() -> None:
    try:
        from pflow_structure.integrations.pflow import install

        install()
    except Exception as exc:  # pflow must still start; the reason goes to stderr
        sys.stderr.write(
            f"pflow-structure: the pflow plugin is not active in this pflow ({exc}); "
            "`pflow-structure pflow disable` stops this message.\n"
        )


_install()
