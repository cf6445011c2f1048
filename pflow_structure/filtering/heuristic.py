"""The heuristic field filter in one call: :func:`choose_fields`, the fields a person would use.

Deterministic, no network, no values. It is the pipeline (:mod:`pflow_structure.filtering.pipeline`)
without the LLM and without ``want``: :mod:`.score` scores each *field* (a leaf path, a list of
scalars, a ``same_as`` reference or a dynamic-key dict, each counted once), :mod:`.choose` keeps
the best up to a target and shows every kept list's shape, and :mod:`.hidden` adds the containers
above each kept field and names what is hidden. The names the filter's callers and benchmarks
import from here stay here: the step modules hold the code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pflow_structure.filtering.choice import FieldChoice, Request, field_choice
from pflow_structure.filtering.choose import MAX_ITEM_FIELDS, MIN_ITEM_FIELDS
from pflow_structure.filtering.features import Model
from pflow_structure.filtering.options import DEFAULT_TARGET
from pflow_structure.filtering.score import MIN_SCORE, base_scores, features_by_field, keyed_score, score_field
from pflow_structure.filtering.signals import DEFAULT_TUNING, Tuning
from pflow_structure.filtering.tree import FieldTree, StructureOrTree, fields_of, tree_of
from pflow_structure.structure.field_stats import FieldSignals

_score = keyed_score  # its name before the steps had modules of their own (the tests read it)


def choose_fields(
    structure: Mapping[str, Mapping[str, Any]],
    *,
    target: int = DEFAULT_TARGET,
    keep: Sequence[str] | None = None,
    signals: Mapping[str, FieldSignals] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    model: Model | Literal["default"] | None = "default",
) -> FieldChoice:
    """Keep the best fields (score above zero) up to ``target`` and ``tuning.budget`` tokens; show
    every kept list's shape, and name what is hidden (``FieldChoice.hidden``).

    ``keep`` (an LLM's answer) replaces the ranking's choice; the shape of each list is still
    completed from the ranking, and the containers above each kept field are listed.
    ``signals`` are the inference's statistics per path (``InferredStructure.signals``).
    """
    from pflow_structure.filtering.pipeline import run

    tree = FieldTree.build(structure, signals)
    request = Request(target=target, keep=None if keep is None else tuple(keep), tuning=tuning, model=model)
    return field_choice(tree, run(tree, request))


def view_cost(structure: StructureOrTree) -> float:
    """Estimated o200k tokens of the tree lines of the whole ``structure`` (see ``FieldTree.line_cost``)."""
    return tree_of(structure).view_cost()


__all__ = [
    "MAX_ITEM_FIELDS",
    "MIN_ITEM_FIELDS",
    "MIN_SCORE",
    "FieldChoice",
    "base_scores",
    "choose_fields",
    "features_by_field",
    "fields_of",
    "score_field",
    "view_cost",
]
