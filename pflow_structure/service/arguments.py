"""References in arguments: what every adapter calls before a tool or node runs.

The proxy (before a downstream tool call), the MCP server's ``registry_run`` and the CLI's
``run KEY=VALUE`` all pass their arguments through :func:`resolve_arguments`; the logic is in
:mod:`pflow_structure.values.references`, this module ties it to the settings and the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.settings import Settings
from pflow_structure.values.references import has_references, resolve_references

__all__ = ["has_references", "resolve_arguments"]


def resolve_arguments(
    arguments: Any,
    *,
    schema: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> Any:
    """``arguments`` with every ``${exec-ID:PATH}`` replaced by the cached value it names.

    Arguments without a reference come back as the very same object. ``schema`` is the
    tool's JSON Schema for its arguments (a value goes as compact JSON text where it wants a
    string). Raises ``UnresolvedReferenceError`` or ``ReferenceTooLargeError`` (see
    :mod:`pflow_structure.values.references`); nothing is logged, so no value reaches a log.

    >>> resolve_arguments({"content": "${exec-1763463202-0cd0c8fe:result}"})  # doctest: +SKIP
    {'content': {'title': 'Fix authentication bug', ...}}
    """
    if not has_references(arguments):
        return arguments
    settings = settings or Settings.from_env()
    cache = cache or settings.cache()
    return resolve_references(arguments, cache.get, schema=schema, max_bytes=settings.max_reference_bytes)
