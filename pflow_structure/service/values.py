"""``edit_fields``: change a cached value into a new execution (copy-on-write), for every adapter.

It answers the new execution's structure, as ``registry_run`` does (or only what changed).
The path-setting logic is :mod:`pflow_structure.values.edits`; values in ``set`` may be references,
resolved by :mod:`pflow_structure.service.arguments`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.cache.backend import CacheBackend, StoredExecutionLike
from pflow_structure.errors import CacheWriteError, ParameterError
from pflow_structure.service.arguments import resolve_arguments
from pflow_structure.service.reading import note_read
from pflow_structure.settings import Settings

__all__ = ["edit_fields"]


def edit_fields(
    execution_id: str,
    set_values: Mapping[str, Any] | None = None,
    delete: Sequence[str] = (),
    *,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    all_fields: bool = False,
    changes_only: bool = False,
) -> dict[str, Any]:
    """Apply ``set_values`` (``{path: value}``) and then ``delete`` (paths) to a copy of an
    execution's outputs, store it as a new execution, and return that one's structure.

    The original entry is unchanged. Values in ``set_values`` may be references
    (``"${exec-ID:PATH}"``). Setting a key that does not exist adds it; ``[*]`` sets every
    item; a path through a missing parent raises ``PathNotFoundError`` naming that parent.
    The answer is ``registry_run``'s dict plus ``edited_from``; with ``changes_only`` (what
    the MCP tools answer: the agent has seen the original's structure) the structure holds
    only the paths whose statistics changed or are new, and ``removed_paths`` those now gone.
    """
    from pflow_structure.service import describe_stored
    from pflow_structure.values.edits import apply_edits

    set_values, delete = _checked(set_values, delete)
    settings = settings or Settings.from_env()
    cache = cache or settings.cache()
    entry = cache.get(execution_id)
    note_read(execution_id, entry.node_type)  # for usage counts (pflow-structure stats)
    values = resolve_arguments(set_values, settings=settings, cache=cache)
    edited = apply_edits(entry.outputs, values, delete)
    # A recorded binary or text path follows its value (a deleted item moves the later ones up).
    kept_binary = edited.carry(entry.binary_paths)
    kept_text = edited.carry(entry.text_paths)
    # Only the paths go into params: the values may be large, or secret.
    params = {"edited_from": execution_id, "set": list(set_values), "delete": list(delete)}
    stored = cache.put(entry.node_type, params, edited.value, binary_paths=kept_binary, text_paths=kept_text)
    if not stored.cached:  # the new id is all an edit gives: one that reads nothing would mislead
        raise CacheWriteError("The edited value could not be stored: " + " ".join(stored.warnings))
    from pflow_structure.service.answers import structure_within_budget
    from pflow_structure.service.clients import answer_counter

    count = answer_counter(None, settings)
    if changes_only:
        changes = _changes(entry.outputs, entry.binary_paths, edited.value, kept_binary, stored, execution_id, settings)
        return structure_within_budget(changes, settings.answer_budget, count)
    result = describe_stored(
        entry.node_type, edited.value, stored, kept_binary, [], settings=settings, all_fields=all_fields
    )
    result["edited_from"] = execution_id
    return structure_within_budget(result, settings.answer_budget, count)


def _checked(set_values: Any, delete: Any) -> tuple[dict[str, Any], list[str]]:
    if set_values is None:
        set_values = {}
    if not isinstance(set_values, Mapping):
        raise ParameterError('set must be an object of path: value, e.g. {"result.title": "New title"}')
    if isinstance(delete, str) or not isinstance(delete, Sequence):
        raise ParameterError('delete must be a list of paths, e.g. ["result.draft"]')
    if not all(isinstance(path, str) for path in delete):
        raise ParameterError('delete must be a list of paths (strings), e.g. ["result.draft"]')
    if not set_values and not delete:
        raise ParameterError('nothing to edit: give set ({"path": value}) or delete (["path"]), or both')
    for path, value in set_values.items():
        _check_json(path, value)
    return dict(set_values), list(delete)


def _check_json(path: Any, value: Any) -> None:
    """A value to set must have a JSON form: the cache stores JSON, and a value it cannot write
    would leave the edit with no entry behind its id. (References are strings here.)"""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ParameterError(
            f"the value for {path} is not JSON (NaN, Infinity and objects such as bytes have no JSON form): "
            "give a string, a number, true/false, null, a list or an object"
        ) from None


def _changes(
    before: Any,
    before_binary: Sequence[Sequence[str | int]],
    after: Any,
    after_binary: Sequence[Sequence[str | int]],
    stored: StoredExecutionLike,
    edited_from: str,
    settings: Settings,
) -> dict[str, Any]:
    """The new execution's id and the part of its structure that differs from the original's."""
    from pflow_structure.structure import infer_structure

    old = infer_structure(before, binary_paths=before_binary, max_paths=settings.max_paths)
    new = infer_structure(after, binary_paths=after_binary, max_paths=settings.max_paths)
    result: dict[str, Any] = {
        "execution_id": stored.execution_id,
        "edited_from": edited_from,
        "structure": {path: info for path, info in new.structure.items() if old.structure.get(path) != info},
        "field_count": new.field_count,
    }
    removed = [path for path in old.structure if path not in new.structure]
    if removed:
        result["removed_paths"] = removed
    result["note"] = f"Only what changed; every other path is as in {edited_from}."
    if stored.warnings:
        result["warnings"] = list(stored.warnings)
    return result
