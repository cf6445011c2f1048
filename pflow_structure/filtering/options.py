"""How to filter and what it did: the modes, the defaults, :class:`FilterOptions` (built by the
adapter) and :class:`FilterOutcome` (what ``filter_structure`` returns).

Apart from the logic so that the steps (:mod:`~pflow_structure.filtering.pipeline`) and the
package both import them from here, without importing each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pflow_structure.filtering.decisions import DecisionStore

MODES = ("auto", "llm", "heuristic", "off")
DEFAULT_TARGET = 40
DEFAULT_THRESHOLD = 50
WHOLE_VIEW_TOKENS = 400  # and a structure is shown whole only when its lines take about this (estimated)
DEFAULT_TIMEOUT = 2.0


class FilterOptions(NamedTuple):
    """How to filter; built by the adapter (``Settings.from_env``)."""

    mode: str = "auto"
    threshold: int = DEFAULT_THRESHOLD
    target: int = DEFAULT_TARGET
    model: str = ""  # "" means the LLM module's default
    keys_set: frozenset[str] = frozenset()  # names of the *_API_KEY variables that are set
    timeout: float = DEFAULT_TIMEOUT
    api_base: str | None = None
    decisions_dir: Path | None = None
    decision_store: DecisionStore | None = None  # wins over decisions_dir (Redis, shared by instances)
    whole_view: int = WHOLE_VIEW_TOKENS  # estimated tokens a structure's lines may take to be shown whole; 0: any
    want_model: str = ""  # "wordllama": embeddings add to want's name matching (filtering/embedding.py); "": off


class FilterOutcome(NamedTuple):
    """The structure to show and what the filter did."""

    structure: dict[str, dict[str, Any]]
    filtered: bool
    method: str | None  # "heuristic", "llm", "want" or None
    kept_fields: int
    hidden_fields: int
    warnings: list[str]
    from_cache: bool = False
    hidden: dict[str, dict[str, Any]] | None = None  # names of what is hidden (filtering/hidden.py)
    wanted: list[str] | None = None  # with ``want``: the fields matching its words, best first
