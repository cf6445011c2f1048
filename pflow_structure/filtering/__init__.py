"""Field filtering: a structure of more than ``threshold`` fields cut to the ones that matter.

Modes: ``auto`` (the LLM when one is configured, else the heuristic), ``llm``, ``heuristic``
and ``off``. The LLM's decisions are kept on disk (:mod:`.decisions`), so a node with the same
shape asks once; a failed or slow LLM answer falls back to the heuristic with a warning and is
not kept. Values never reach the LLM: only paths, types and statistics. Hidden fields stay in
the cache, readable with ``read_fields``. Core: the adapter reads the environment and passes
:class:`FilterOptions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pflow_structure.filtering.options import (
    DEFAULT_TARGET,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT,
    MODES,
    WHOLE_VIEW_TOKENS,
    FilterOptions,
    FilterOutcome,
)

if TYPE_CHECKING:
    from pflow_structure.filtering.choice import FieldChoice
    from pflow_structure.filtering.tree import StructureOrTree
    from pflow_structure.structure.field_stats import FieldSignals


def filter_structure(
    structure: Mapping[str, Mapping[str, Any]],
    field_count: int,
    node_type: str,
    options: FilterOptions,
    *,
    all_fields: bool = False,
    signals: Mapping[str, FieldSignals] | None = None,
    want: str | None = None,
) -> FilterOutcome:
    """Filter ``structure`` when it has more than ``options.threshold`` fields (see the module doc),
    through the steps of :mod:`.pipeline` (score → choose → the LLM → want → hidden keys).

    ``signals``: the inference's statistics per path (``InferredStructure.signals``), for the heuristic.
    ``want``: the agent's words; the fields they name come first, in a smaller view (:mod:`.want`),
    whatever the size of the structure and the mode (``all_fields`` still lists everything)."""
    from pflow_structure.filtering import pipeline

    return pipeline.filter_structure(
        structure, field_count, node_type, options, all_fields=all_fields, signals=signals, want=want
    )


def shown_whole(structure: StructureOrTree, field_count: int, options: FilterOptions) -> bool:
    """Whether a structure (or its tree) is shown unfiltered: at most ``options.threshold`` fields, and
    its lines fit in about ``options.whole_view`` tokens (a 48-field Kubernetes node is 600 tokens of lines)."""
    from pflow_structure.filtering import pipeline

    return pipeline.shown_whole(structure, field_count, options)


def llm_status(options: FilterOptions, *, litellm_installed: bool | None = None) -> tuple[bool, str]:
    """(whether the LLM filter can run, what to do when it cannot): see
    :func:`pflow_structure.filtering.ask_llm.llm_status`."""
    from pflow_structure.filtering import ask_llm

    return ask_llm.llm_status(options, litellm_installed=litellm_installed)


def __getattr__(name: str) -> Any:
    """The heuristic's functions, imported on first use (Settings imports this package on every
    command, read-fields included, and needs only the options)."""
    if name in ("FieldChoice", "choose_fields", "fields_of", "score_field"):
        from pflow_structure.filtering import heuristic

        return getattr(heuristic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_TARGET",
    "DEFAULT_THRESHOLD",
    "DEFAULT_TIMEOUT",
    "MODES",
    "WHOLE_VIEW_TOKENS",
    "FieldChoice",
    "FilterOptions",
    "FilterOutcome",
    "choose_fields",
    "fields_of",
    "filter_structure",
    "llm_status",
    "score_field",
    "shown_whole",
]
