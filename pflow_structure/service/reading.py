"""Reading values from a cached execution: each path resolved, and why each ``None`` is ``None``.

Below :mod:`pflow_structure.service` and :mod:`pflow_structure.service.answers`, which both read
through :func:`read_fields_detailed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.encoding.binary import restore_binary
from pflow_structure.errors import ParameterError, PathNotFoundError, PathSyntaxError
from pflow_structure.paths import resolve
from pflow_structure.settings import Settings


class FieldReadout(NamedTuple):
    """Values read from one execution, why some are None, totals for paged wildcards,
    how many items of a wildcard lack the path, and where each value sits (a concrete path,
    one per item of a wildcard's page)."""

    execution_id: str
    values: dict[str, Any]
    errors: dict[str, str]
    totals: dict[str, int]
    missing: dict[str, int]
    where: dict[str, list[Any]] = {}  # noqa: RUF012 (read_fields_detailed always gives its own)


def read_fields_detailed(
    execution_id: str,
    field_paths: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    char_offset: int = 0,
) -> FieldReadout:
    """Like :func:`read_fields`, and says why each ``None`` is ``None``.

    ``char_offset`` skips that many characters of a path that names one string (a long string
    is read in parts; see :mod:`pflow_structure.render.budget`)."""
    if isinstance(field_paths, (str, bytes)):
        raise ParameterError(f"field_paths must be a list of paths, not one string; pass [{str(field_paths)[:80]!r}]")
    if offset < 0 or (limit is not None and limit < 0):
        raise ParameterError(f"offset ({offset}) and limit ({limit}) must not be negative")
    if char_offset < 0:
        raise ParameterError(f"char_offset ({char_offset}) must not be negative")
    if cache is None:
        cache = (settings or Settings.from_env()).cache()
    entry = cache.get(execution_id)
    readout = FieldReadout(execution_id, {}, {}, {}, {}, {})
    for path in field_paths:
        key = path if isinstance(path, str) else repr(path)
        try:
            matches, multi = resolve(entry.outputs, path)
        except (PathSyntaxError, PathNotFoundError) as exc:
            readout.values[key] = None
            readout.errors[key] = str(exc)
            continue
        values = [restore_binary(m.value, m.path, entry.binary_paths) for m in matches]
        if multi:
            readout.totals[key] = len(values)
            lacking = sum(1 for m in matches if m.missing)
            if lacking:
                readout.missing[key] = lacking
            end = None if limit is None else offset + limit
            readout.values[key] = values[offset:end]
            readout.where[key] = [m.path for m in matches[offset:end]]
        else:
            value = values[0] if values else None
            if char_offset and isinstance(value, str):
                value = value[char_offset:]
            readout.values[key] = value
            readout.where[key] = [m.path for m in matches[:1]]
    return readout
