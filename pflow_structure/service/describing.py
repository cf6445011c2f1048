"""The structure answer for a value just stored: inference, the filter, the paging line and the warnings,
shared by every way a value reaches the cache (a whole value, or a large list seen item by item)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pflow_structure.cache.backend import CacheBackend, StoredExecutionLike
    from pflow_structure.settings import Settings
    from pflow_structure.structure import InferredStructure


class Observed(NamedTuple):
    """What the answer needs of the value: its inferred structure, how to name the items that hold a field
    only some have (``present_at``, added to the structure in place), and the API's paging line."""

    inferred: InferredStructure
    add_present_at: Callable[[dict[str, dict[str, Any]]], None]
    page: str


def _observed(
    value: Any, binary_paths: Sequence[Sequence[str | int]], settings: Settings, params: Mapping[str, Any] | None
) -> Observed:
    from pflow_structure.structure import infer_structure
    from pflow_structure.structure.paging import paging_line
    from pflow_structure.structure.presence import add_present_at

    inferred = infer_structure(value, binary_paths=binary_paths, max_paths=settings.max_paths)
    return Observed(inferred, lambda structure: add_present_at(structure, value), paging_line(value, params))


def describe_value(
    node_type: str,
    value: Any,
    stored: StoredExecutionLike,
    binary_paths: Sequence[Sequence[str | int]],
    notes: Sequence[str],
    *,
    settings: Settings,
    all_fields: bool = False,
    want: str | None = None,
    cache: CacheBackend | None = None,
    params: Mapping[str, Any] | None = None,
    observed: Observed | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`~pflow_structure.service.describe_stored`'s dict, and the whole structure it was filtered
    from. ``observed``: what was seen of a value never held whole (:mod:`.streaming`), instead of ``value``."""
    if observed is None:
        observed = _observed(value, binary_paths, settings, params)
    inferred = observed.inferred
    note = getattr(cache, "note_presence", None) if stored.cached else None
    if note is not None:
        fields = inferred.structure.items()
        note(stored.execution_id, {path: [i.get("type"), i.get("present"), i.get("of")] for path, i in fields})
    observed.add_present_at(inferred.structure)  # "in 1 of 4" names the items: [2]
    chosen = _filter(inferred, node_type, settings, all_fields, want)
    result: dict[str, Any] = {
        "execution_id": stored.execution_id,
        "node_type": node_type,
        "structure": chosen.structure,
        "field_count": chosen.kept_fields if chosen.filtered else inferred.field_count,
        "original_field_count": inferred.field_count,
        "filtered": chosen.filtered,
    }
    page = observed.page
    if page:
        result["page"] = page
    if chosen.filtered:
        result["filter"] = chosen.method
        result["hidden_fields"] = max(0, inferred.field_count - chosen.kept_fields)
        result["filter_note"] = f"{result['hidden_fields']} fields hidden: --all-fields (all_fields) lists them"
        if chosen.hidden:
            result["hidden"] = chosen.hidden
    if chosen.wanted is not None:
        result["want"], result["wanted"] = want, chosen.wanted
    if inferred.omitted_paths and not chosen.filtered:
        result["omitted_paths"] = inferred.omitted_paths
    warnings = list(stored.warnings) + list(chosen.warnings) + _summarise(notes, stored.execution_id)
    if not inferred.total_paths:
        warnings.append(f"Node {node_type!r} wrote no outputs.")
    if warnings:
        result["warnings"] = warnings
    return result, inferred.structure


def _filter(inferred: Any, node_type: str, settings: Settings, all_fields: bool, want: str | None) -> Any:
    from pflow_structure.filtering import filter_structure

    options = settings.filter_options()
    if options.mode in ("auto", "llm") and inferred.field_count > options.threshold and not all_fields:
        # litellm fetches its model price map from the network at import unless told not to.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return filter_structure(
        inferred.structure,
        inferred.field_count,
        node_type,
        options,
        all_fields=all_fields,
        signals=inferred.signals,
        want=want,
    )


MAX_NOTES_SHOWN = 5


def _summarise(notes: Sequence[str], execution_id: str) -> list[str]:
    """At most a few encoding notes (a list of 2,000 objects with cycles makes 2,000 of them)."""
    if len(notes) <= MAX_NOTES_SHOWN:
        return list(notes)
    rest = len(notes) - MAX_NOTES_SHOWN
    return [*notes[:MAX_NOTES_SHOWN], f"... and {rest} more like these (all are in the cache entry {execution_id})"]
