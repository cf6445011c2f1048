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
from pathlib import Path
from typing import Any, NamedTuple

from pflow_structure.filtering.heuristic import DEFAULT_TARGET, FieldChoice, choose_fields, fields_of, score_field

MODES = ("auto", "llm", "heuristic", "off")
DEFAULT_THRESHOLD = 50
DEFAULT_TIMEOUT = 2.0


class FilterOptions(NamedTuple):
    """How to filter; built by the adapter (``Settings.from_env``)."""

    mode: str = "auto"
    threshold: int = DEFAULT_THRESHOLD
    target: int = DEFAULT_TARGET
    model: str = ""  # "" means the LLM module's default
    llm_ready: bool = False  # the provider's API key (or an api_base) is configured
    timeout: float = DEFAULT_TIMEOUT
    api_base: str | None = None
    missing_key: str | None = None  # the variable to set, for the warning when mode is "llm"
    missing_package: str | None = None  # a key is set but litellm is not installed
    decisions_dir: Path | None = None


class FilterOutcome(NamedTuple):
    """The structure to show and what the filter did."""

    structure: dict[str, dict[str, Any]]
    filtered: bool
    method: str | None  # "heuristic", "llm" or None
    kept_fields: int
    hidden_fields: int
    warnings: list[str]
    from_cache: bool = False


def filter_structure(
    structure: Mapping[str, Mapping[str, Any]],
    field_count: int,
    node_type: str,
    options: FilterOptions,
    *,
    all_fields: bool = False,
) -> FilterOutcome:
    """Filter ``structure`` when it has more than ``options.threshold`` fields (see the module doc)."""
    unfiltered = FilterOutcome(dict(structure), False, None, field_count, 0, [])  # type: ignore[arg-type]
    if all_fields or options.mode == "off" or field_count <= options.threshold:
        return unfiltered
    warnings: list[str] = []
    if options.mode in ("auto", "llm"):
        if options.llm_ready:
            choice, from_cache, problem = _llm_choice(structure, node_type, options)
            if choice is not None:
                return _outcome(choice, "llm", warnings, from_cache=from_cache)
            warnings.append(f"LLM filter: {problem}; used the heuristic filter instead.")
        elif options.mode == "llm":
            if options.missing_package:
                need = f"pip install 'pflow-structure[llm]' for {options.missing_package}"
            elif options.missing_key:
                need = f"set {options.missing_key}"
            else:
                need = "configure the model's API key"
            warnings.append(f"Filter mode is llm but no LLM is configured ({need}); used the heuristic filter.")
    choice = choose_fields(structure, target=options.target)
    if not choice.kept_fields:
        return unfiltered._replace(warnings=warnings)
    return _outcome(choice, "heuristic", warnings)


def _outcome(choice: FieldChoice, method: str, warnings: list[str], *, from_cache: bool = False) -> FilterOutcome:
    return FilterOutcome(
        choice.structure, True, method, len(choice.kept_fields), len(choice.hidden_fields), warnings, from_cache
    )


def _llm_choice(
    structure: Mapping[str, Mapping[str, Any]], node_type: str, options: FilterOptions
) -> tuple[FieldChoice | None, bool, str]:
    """(choice, came from the decision cache, why there is none)."""
    from pflow_structure.filtering import llm
    from pflow_structure.filtering.decisions import DecisionCache, decision_key

    model = llm.resolve_model(options.model or llm.DEFAULT_MODEL)
    fields = fields_of(structure)
    cache = DecisionCache(options.decisions_dir) if options.decisions_dir is not None else None
    key = decision_key(node_type, model, llm.PROMPT_VERSION, structure, fields)
    if cache is not None:
        kept = cache.get(key)
        if kept is not None:
            valid = [path for path in kept if path in structure]
            if valid:
                return choose_fields(structure, target=options.target, keep=valid), True, ""
    try:
        kept = llm.llm_choose_fields(
            structure,
            fields,
            node_type=node_type,
            model=model,
            timeout=options.timeout,
            api_base=options.api_base,
            target=options.target,
        )
    except llm.LLMFilterError as exc:
        return None, False, str(exc)
    except ImportError as exc:  # litellm went missing after the settings looked
        return None, False, f"litellm cannot be imported ({exc}); pip install 'pflow-structure[llm]'"
    if cache is not None:
        cache.put(key, kept, node_type=node_type, model=model, prompt_version=llm.PROMPT_VERSION)
    return choose_fields(structure, target=options.target, keep=kept), False, ""


__all__ = [
    "DEFAULT_TARGET",
    "DEFAULT_THRESHOLD",
    "MODES",
    "FieldChoice",
    "FilterOptions",
    "FilterOutcome",
    "choose_fields",
    "fields_of",
    "filter_structure",
    "score_field",
]
