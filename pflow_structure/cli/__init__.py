"""The ``pflow-structure`` command line (the only package that imports click).

- :mod:`~pflow_structure.cli.entry`: the console entry point; answers plain ``read-fields``
  calls without importing click and hands everything else to the click command.
- :mod:`~pflow_structure.cli.read_fields`: what ``read-fields`` prints (click-free, shared).
- :mod:`~pflow_structure.cli.common`: the click group and what every command shares.
- :mod:`~pflow_structure.cli.app`: the core commands, and the whole command line assembled.
- ``cache_commands``, ``discovery_commands``, ``format_commands``, ``value_commands``: command groups;
  ``proxy_command``: ``proxy`` (a stdio or remote MCP server behind structure-first answers);
  ``wrap_commands``: ``wrap``/``unwrap`` a client's MCP configuration (``client_configs`` edits the text,
  ``toml_configs`` Codex's TOML, ``client_dialects`` knows how each client writes a variable).

This module imports nothing, so the entry point stays click-free; ``pflow_structure.cli.main``
(the click group, for ``CliRunner``) loads the command line on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# `from pflow_structure.cli import entry` asks this module for the name before importing the
# submodule: answer "no such attribute" for submodules, so that importing one never loads click.
_SUBMODULES = frozenset(
    (
        "app",
        "cache_commands",
        "common",
        "discovery_commands",
        "entry",
        "format_commands",
        "proxy_command",
        "read_fields",
        "value_commands",
        "wrap_commands",
        "client_configs",
        "client_dialects",
        "toml_configs",
    )
)


def __getattr__(name: str) -> Any:
    if name.startswith("__") or name in _SUBMODULES:
        raise AttributeError(f"module 'pflow_structure.cli' has no attribute {name!r}")
    import pflow_structure.cli.app

    return getattr(pflow_structure.cli.app, name)
