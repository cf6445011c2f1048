"""What the filter's steps hand on (see :mod:`pflow_structure.filtering.pipeline`).

- :class:`Request`: what one filter call asks (target, tuning, the learned model, ``want``, the
  options the LLM step needs); the same for every step.
- :class:`Choice`: the filter's choice so far. Each step takes the tree, the previous step's
  choice and the request, and returns a new choice (``_replace``); :data:`START` is the first.
- :class:`FieldChoice`: the choice as the heuristic filter's callers get it (paths, not indices).

Indices are positions in ``FieldTree.nodes`` (:class:`pflow_structure.filtering.tree.FieldTree`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pflow_structure.filtering.options import DEFAULT_TARGET
from pflow_structure.filtering.signals import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:
    from pflow_structure.filtering.features import Model
    from pflow_structure.filtering.options import FilterOptions
    from pflow_structure.filtering.tree import FieldTree


class Request(NamedTuple):
    """What one filter call asks of the steps."""

    target: int = DEFAULT_TARGET  # at most this many fields from the ranking (choose)
    keep: tuple[str, ...] | None = None  # a choice made elsewhere, used instead of the ranking (choose)
    tuning: Tuning = DEFAULT_TUNING
    model: Model | Literal["default"] | None = "default"  # the learned score; None: the hand-made one
    want: str | None = None  # the agent's words (want); None: no want step
    extra: tuple[str, ...] = ()  # fields the want view lists besides its matches (an LLM's answer)
    options: FilterOptions | None = None  # the LLM step runs only with options (filter_structure)
    node_type: str = ""  # for the LLM's prompt and its decision key


class Choice(NamedTuple):
    """The filter's choice as it passes from step to step."""

    scores: Mapping[int, float]  # score: each field's score, by index
    ranked: tuple[int, ...]  # score: the fields worth showing, best first
    learned: bool  # score: the learned model scored them (the spread then keeps the ranking's order)
    kept: tuple[int, ...]  # choose, LLM, want: the fields shown, each kept list's shape completed
    method: str | None  # "heuristic", "llm" or "want"
    advice: tuple[int, ...]  # with want, the models' choice (LLM, embedding), which the want step adds
    wanted: tuple[str, ...] | None  # want: the fields matching the words, best first
    warnings: tuple[str, ...]
    from_cache: bool  # LLM: the answer came from the decision cache
    shown: dict[str, dict[str, Any]]  # hidden keys: the filtered structure (kept fields and their containers)
    hidden: dict[str, dict[str, Any]]  # hidden keys: the names of what is not shown, per object


START = Choice(MappingProxyType({}), (), False, (), None, (), None, (), False, {}, {})


class FieldChoice(NamedTuple):
    """What the filter decided: the kept structure, the fields kept and hidden, each score, and
    the key names of what is hidden (see :func:`pflow_structure.filtering.hidden.hidden_keys`)."""

    structure: dict[str, dict[str, Any]]
    kept_fields: list[str]
    hidden_fields: list[str]
    scores: dict[str, float]
    hidden: dict[str, dict[str, Any]]


def field_choice(tree: FieldTree, choice: Choice) -> FieldChoice:
    """``choice`` by path: what ``choose_fields`` returns."""
    kept = set(choice.kept)
    nodes, fields = tree.nodes, tree.fields
    return FieldChoice(
        choice.shown,
        [nodes[index].path for index in fields if index in kept],
        [nodes[index].path for index in fields if index not in kept],
        {nodes[index].path: choice.scores[index] for index in fields},
        choice.hidden,
    )
