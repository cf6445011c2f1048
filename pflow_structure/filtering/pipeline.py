"""The filter as one pipeline over one tree: the steps, in the order they run.

The tree of fields (:class:`~pflow_structure.filtering.tree.FieldTree`) is built once per filter
call, then handed from step to step with the previous step's :class:`~.choice.Choice`:

1. :mod:`.score`: every field's score, and the fields worth showing, best first;
2. :mod:`.choose`: the best of them within a target and a token budget, each list's shape shown;
3. :mod:`.ask_llm`: when an LLM is configured, its choice instead (with ``want``: beside it);
4. :mod:`.embedding`: with ``want`` and the opt-in ``want_model``, the fields whose names read closest;
5. :mod:`.want`: with ``want``, the fields its words name first, then the LLM's, the embedding's,
   and the view of step 2;
6. :mod:`.hidden`: the containers above the kept fields, and the names of everything not shown.

Each step is ``step(tree, choice, request) -> choice`` and does nothing when the request does not
ask for it, so a test can run any step alone, and a reader sees the whole filter in :data:`STEPS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pflow_structure.filtering import ask_llm, choose, embedding, hidden, score, want
from pflow_structure.filtering.choice import START, Choice, Request
from pflow_structure.filtering.options import FilterOutcome
from pflow_structure.filtering.tree import FieldTree, tree_of

if TYPE_CHECKING:
    from pflow_structure.filtering.options import FilterOptions
    from pflow_structure.filtering.tree import StructureOrTree
    from pflow_structure.structure.field_stats import FieldSignals

Step = Callable[[FieldTree, Choice, Request], Choice]
STEPS: tuple[Step, ...] = (score.step, choose.step, ask_llm.step, embedding.step, want.step, hidden.step)


def run(tree: FieldTree, request: Request) -> Choice:
    """Every step of :data:`STEPS` in order, each on the tree and the choice the one before returned."""
    choice = START
    for step in STEPS:
        choice = step(tree, choice, request)
    return choice


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
    """:func:`pflow_structure.filtering.filter_structure`: the tree built once (not at all when
    nothing is filtered), then :func:`run`, or the whole structure when it is short."""
    from pflow_structure.filtering.want import want_terms, wanted_fields

    unfiltered = FilterOutcome(dict(structure), False, None, field_count, 0, [])  # type: ignore[arg-type]
    if not (want and not all_fields and want_terms(want)):
        want = None
        if all_fields or options.mode == "off":
            return unfiltered
    tree = FieldTree.build(structure, signals)
    if shown_whole(tree, field_count, options):  # with want too: a short structure is shown whole
        return unfiltered._replace(wanted=wanted_fields(tree, want)) if want else unfiltered
    request = Request(target=options.target, want=want, options=options, node_type=node_type)
    choice = run(tree, request)
    if choice.method == "heuristic" and not choice.kept:
        return unfiltered._replace(warnings=list(choice.warnings))
    outcome = FilterOutcome(
        choice.shown,
        True,
        choice.method,
        len(choice.kept),
        len(tree.fields) - len(set(choice.kept)),
        list(choice.warnings),
        choice.from_cache,
        choice.hidden,
    )
    return outcome._replace(wanted=list(choice.wanted or ())) if want else outcome


def shown_whole(structure: StructureOrTree, field_count: int, options: FilterOptions) -> bool:
    """Whether a structure (or its tree) is shown unfiltered: at most ``options.threshold`` fields, and
    its lines fit in about ``options.whole_view`` tokens (a 48-field Kubernetes node is 600 tokens of lines)."""
    if field_count > options.threshold:
        return False
    if not options.whole_view:
        return True
    return tree_of(structure).view_cost() <= options.whole_view
