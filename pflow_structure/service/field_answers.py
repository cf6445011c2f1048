"""The answer of a run with ``fields`` (``run --field``, ``registry_run(fields=...)``, ``_fields`` on a
proxied tool): the values at those paths instead of the structure, within the answer budget."""

from __future__ import annotations

from pflow_structure.render.output_text import compact
from pflow_structure.service.answers import (
    CUT_NOTE,
    answer_budget,
    answer_from_readout,
    o200k_counter,
    paging_of,
    read_on,
)
from pflow_structure.service.clients import answer_counter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend
    from pflow_structure.render.budget import TokenCounter
    from pflow_structure.service.reading import FieldReadout
    from pflow_structure.settings import Settings

REST_LINE = (
    "The whole output is cached as {execution_id}: read_fields with that execution_id reads any other path, "
    '"${{{execution_id}:PATH}}" passes a value on unread.'
)


def fields_answer(
    described: dict[str, Any],
    fields: Sequence[str],
    *,
    max_tokens: int | None = None,
    settings: Settings,
    cache: CacheBackend | None = None,
) -> dict[str, Any]:
    """The answer of a run with ``fields``: the values at those paths instead of the structure.

    ``{"execution_id", "node_type", "values": <read_fields' answer dict>, "rest": <one line>}``;
    when a path misses, ``structure`` (the usual view) comes too, so the misses can be corrected.
    Within the answer budget: the structure first (cut to half the budget), the values in the rest.
    """
    from pflow_structure.render.budget import MORE_KEY

    budget = answer_budget(max_tokens, settings)
    count = answer_counter(max_tokens, settings) or o200k_counter()
    execution_id = described["execution_id"]
    head: dict[str, Any] = {"execution_id": execution_id, "node_type": described["node_type"]}
    rest = REST_LINE.format(execution_id=execution_id)
    readout = _read(execution_id, fields, settings, cache)
    extra: dict[str, Any] = {}
    if readout.errors:
        extra["structure"] = _structure_within(described["structure"], budget // 2, count)
    overhead = count(compact({**head, **extra, "rest": rest})) + 10
    values = answer_from_readout(readout, max(budget - overhead, 1), paging_of(readout, 0, None, 0), count).value
    if MORE_KEY in values:  # the values were cut: the note names the call's budget, not their share
        from pflow_structure.render.limits import budget_words

        values["_note"] = CUT_NOTE.format(budget=budget_words(budget, count))
    return {**head, "values": values, **extra, "rest": rest}


def _read(execution_id: str, fields: Sequence[str], settings: Settings, cache: CacheBackend | None) -> FieldReadout:
    from pflow_structure.service.reading import read_fields_detailed

    return read_fields_detailed(execution_id, list(fields), settings=settings, cache=cache)


def _structure_within(structure: dict[str, Any], budget: int, count: TokenCounter) -> dict[str, Any]:
    """The first paths of ``structure`` that fit ``budget`` tokens."""
    if count is o200k_counter() and len(compact(structure).encode("utf-8")) <= budget:
        return structure
    kept: dict[str, Any] = {}
    used = 0
    for path, info in structure.items():
        used += count(compact({path: info}))
        if used > budget:
            break
        kept[path] = info
    return kept


def fields_found(answer: dict[str, Any]) -> bool:
    """Whether any path of a ``fields`` answer found a value."""
    values = answer.get("values", {})
    missing = values.get("_missing", {})
    return any(path not in missing for path in values if not path.startswith("_"))


def fields_text(answer: dict[str, Any]) -> str:
    """A ``fields`` answer as the command line prints it: a ``path: JSON`` line per path (a miss with its
    reason), a line per cut with the arguments that read on, the structure when a path missed, the rest line."""
    from pflow_structure.render.budget import MISSING_KEY, MORE_KEY
    from pflow_structure.render.fields_text import render_fields_text

    values = answer["values"]
    shown = {path: value for path, value in values.items() if not path.startswith("_")}
    lines = [render_fields_text(shown, values.get(MISSING_KEY), max_items=None)]
    lines += [f"# {path}: {more['shown']}{read_on(more, 'cli')}" for path, more in values.get(MORE_KEY, {}).items()]
    if "structure" in answer:
        lines.append("Structure (to correct the paths that missed):")
        lines += [f"  {path}: {compact(info)}" for path, info in answer["structure"].items()]
    execution_id = answer["execution_id"]
    lines.append(f"Cached as {execution_id}: pflow-structure read-fields {execution_id} PATH reads any other path.")
    return "\n".join(line for line in lines if line)
