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
from typing import TYPE_CHECKING, Any, NamedTuple

from pflow_structure.filtering.options import (
    DEFAULT_TARGET,
    DEFAULT_THRESHOLD,
    DEFAULT_TIMEOUT,
    MODES,
    WHOLE_VIEW_TOKENS,
    FilterOptions,
)

if TYPE_CHECKING:
    from pflow_structure.filtering.decisions import DecisionStore
    from pflow_structure.filtering.heuristic import FieldChoice
    from pflow_structure.structure.field_stats import FieldSignals


class FilterOutcome(NamedTuple):
    """The structure to show and what the filter did."""

    structure: dict[str, dict[str, Any]]
    filtered: bool
    method: str | None  # "heuristic", "llm" or None
    kept_fields: int
    hidden_fields: int
    warnings: list[str]
    from_cache: bool = False
    hidden: dict[str, dict[str, Any]] | None = None  # names of what is hidden (filtering/hidden.py)
    wanted: list[str] | None = None  # with ``want``: the fields matching its words, best first


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
    """Filter ``structure`` when it has more than ``options.threshold`` fields (see the module doc).

    ``signals``: the inference's statistics per path (``InferredStructure.signals``), for the heuristic.
    ``want``: the agent's words; the fields they name come first, in a smaller view (:mod:`.want`),
    whatever the size of the structure and the mode (``all_fields`` still lists everything)."""
    from pflow_structure.filtering.heuristic import choose_fields

    unfiltered = FilterOutcome(dict(structure), False, None, field_count, 0, [])  # type: ignore[arg-type]
    if want and not all_fields and _has_terms(want):
        return _wanted(structure, field_count, node_type, options, signals, want)
    if all_fields or options.mode == "off" or shown_whole(structure, field_count, options):
        return unfiltered
    warnings: list[str] = []
    if options.mode in ("auto", "llm"):
        ready, missing = llm_status(options)
        if ready:
            choice, from_cache, problem = _llm_choice(structure, node_type, options, signals)
            if choice is not None:
                return _outcome(choice, "llm", warnings, from_cache=from_cache)
            warnings.append(f"LLM filter: {problem}; used the heuristic filter instead.")
        elif options.mode == "llm":
            warnings.append(f"Filter mode is llm but no LLM is configured ({missing}); used the heuristic filter.")
    choice = choose_fields(structure, target=options.target, signals=signals)
    if not choice.kept_fields:
        return unfiltered._replace(warnings=warnings)
    return _outcome(choice, "heuristic", warnings)


def _has_terms(want: str) -> bool:
    from pflow_structure.filtering.want import want_terms

    return bool(want_terms(want))


def _wanted(
    structure: Mapping[str, Mapping[str, Any]],
    field_count: int,
    node_type: str,
    options: FilterOptions,
    signals: Mapping[str, FieldSignals] | None,
    want: str,
) -> FilterOutcome:
    """The view for ``want``: the LLM's choice (asked with the words) when one is configured, and the
    fields whose names match the words, first; then the usual view's best, in a smaller budget."""
    from pflow_structure.filtering.want import choose_wanted, wanted_fields

    if shown_whole(structure, field_count, options):  # as without want: a short structure is shown whole
        wanted = wanted_fields(structure, want)
        return FilterOutcome(dict(structure), False, None, field_count, 0, [], wanted=wanted)  # type: ignore[arg-type]
    warnings: list[str] = []
    extra: list[str] = []
    method = "want"
    from_cache = False
    if options.mode in ("auto", "llm") and llm_status(options)[0]:
        choice, from_cache, problem = _llm_choice(structure, node_type, options, signals, want=want)
        if choice is not None:
            extra, method = choice.kept_fields, "llm"
        else:
            warnings.append(f"LLM filter: {problem}; matched the words by name only.")
    if options.want_model:
        from pflow_structure.filtering.embedding import EmbeddingUnavailable, closest_fields

        try:
            extra = [*extra, *closest_fields(structure, want)]
        except EmbeddingUnavailable as exc:
            warnings.append(f"want model {options.want_model}: {exc}; matched the words by name only.")
    choice, wanted = choose_wanted(structure, want, signals=signals, extra=extra, target=options.target)
    return _outcome(choice, method, warnings, from_cache=from_cache)._replace(wanted=wanted)


def shown_whole(structure: Mapping[str, Mapping[str, Any]], field_count: int, options: FilterOptions) -> bool:
    """Whether a structure is shown unfiltered: at most ``options.threshold`` fields, and its lines
    fit in about ``options.whole_view`` tokens (a 48-field Kubernetes node is 600 tokens of lines)."""
    if field_count > options.threshold:
        return False
    if not options.whole_view:
        return True
    from pflow_structure.filtering.heuristic import view_cost

    return view_cost(structure) <= options.whole_view


def llm_status(options: FilterOptions, *, litellm_installed: bool | None = None) -> tuple[bool, str]:
    """(whether the LLM filter can run, what to do when it cannot): the model's provider key (or an
    API base) is set and litellm is installed. Called only when a structure is over the threshold,
    so commands that never filter (read-fields) do not pay for it."""
    import importlib.util

    from pflow_structure.filtering.llm import DEFAULT_MODEL, provider_key_env

    key = provider_key_env(options.model or DEFAULT_MODEL)
    if options.api_base is None and (key is None or key not in options.keys_set):
        return False, f"set {key}" if key else "set the model's API key or PFLOW_STRUCTURE_FILTER_API_BASE"
    if litellm_installed is None:
        litellm_installed = importlib.util.find_spec("litellm") is not None
    if not litellm_installed:
        return False, "pip install 'pflow-structure[llm]' for litellm"
    return True, ""


def _outcome(choice: FieldChoice, method: str, warnings: list[str], *, from_cache: bool = False) -> FilterOutcome:
    return FilterOutcome(
        choice.structure,
        True,
        method,
        len(choice.kept_fields),
        len(choice.hidden_fields),
        warnings,
        from_cache,
        choice.hidden,
    )


def _llm_choice(
    structure: Mapping[str, Mapping[str, Any]],
    node_type: str,
    options: FilterOptions,
    signals: Mapping[str, FieldSignals] | None = None,
    *,
    want: str | None = None,
) -> tuple[FieldChoice | None, bool, str]:
    """(choice, came from the decision cache, why there is none); ``want`` goes into the prompt and the key."""
    from pflow_structure.filtering import llm
    from pflow_structure.filtering.decisions import DecisionCache, decision_key
    from pflow_structure.filtering.heuristic import choose_fields, fields_of

    model = llm.resolve_model(options.model or llm.DEFAULT_MODEL)
    fields = fields_of(structure)
    cache: DecisionStore | None = options.decision_store
    if cache is None and options.decisions_dir is not None:
        cache = DecisionCache(options.decisions_dir)
    key = decision_key(node_type, model, llm.PROMPT_VERSION, structure, fields, want=want)
    if cache is not None:
        kept = cache.get(key)
        if kept is not None:
            valid = [path for path in kept if path in structure]
            if valid:
                return choose_fields(structure, target=options.target, keep=valid, signals=signals), True, ""
    try:
        kept = llm.llm_choose_fields(
            structure,
            fields,
            node_type=node_type,
            model=model,
            timeout=options.timeout,
            api_base=options.api_base,
            target=options.target,
            want=want,
        )
    except llm.LLMFilterError as exc:
        return None, False, str(exc)
    except ImportError as exc:  # litellm went missing after the settings looked
        return None, False, f"litellm cannot be imported ({exc}); pip install 'pflow-structure[llm]'"
    if cache is not None:
        cache.put(key, kept, node_type=node_type, model=model, prompt_version=llm.PROMPT_VERSION)
    return choose_fields(structure, target=options.target, keep=kept, signals=signals), False, ""


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
