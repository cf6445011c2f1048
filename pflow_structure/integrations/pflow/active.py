"""The settings the pflow plugin runs with: what ``install()`` was given, else the environment's.

In a module of its own so that the package (which installs the hooks) and the hooks
(:mod:`.readers`) both read it without importing each other.
"""

from __future__ import annotations

from pflow_structure.settings import Settings

_override: Settings | None = None


def set_override(settings: Settings | None) -> None:
    global _override
    _override = settings


def settings_override() -> Settings | None:
    """The settings ``install()`` was given (None: read the environment at each call)."""
    return _override


def current_settings() -> Settings:
    """The settings install() was given, else the environment's (read at each call)."""
    return _override or Settings.from_env()
