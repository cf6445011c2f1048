"""Bytes back from the cache: base64 strings at recorded paths become bytes again.

Kept apart from :mod:`pflow_structure.encoding` so the read path (``read-fields``) does not
import what only encoding needs (datetime, decimal, uuid, dataclasses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def restore_binary(value: Any, where: Sequence[str | int], binary_paths: Sequence[Sequence[str | int]]) -> Any:
    """Turn the base64 strings under ``where`` that were bytes back into bytes.

    ``value`` is what sits at the concrete path ``where``; the stored value is not changed.
    """
    depth = len(where)
    inside = [tuple(p[depth:]) for p in binary_paths if len(p) >= depth and tuple(p[:depth]) == tuple(where)]
    if not inside:
        return value
    if () in inside:
        return _b64(value)
    import copy  # only an entry that holds bytes gets here: keeps read-fields start-up short

    value = copy.deepcopy(value)
    for relative in inside:
        parent = value
        try:
            for step in relative[:-1]:
                parent = parent[step]
            parent[relative[-1]] = _b64(parent[relative[-1]])
        except (KeyError, IndexError, TypeError):
            continue
    return value


def _b64(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    import base64

    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError:
        return text
