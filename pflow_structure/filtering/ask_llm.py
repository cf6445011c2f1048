"""Step 3, the LLM when one is configured: a model's choice of fields, from the decision cache or asked.

Runs only for ``filter_structure`` in mode ``auto`` or ``llm`` with a ready LLM
(:func:`pflow_structure.filtering.llm_status`). The decision cache (:mod:`.decisions`) is read
first; a fresh answer (:func:`pflow_structure.filtering.llm.llm_choose_fields`) is kept there. The
model's fields replace the choose step's (each kept list's shape completed from the ranking); with
``want`` they are kept aside (``Choice.advice``) for the want step to list beside the matches. A
failed or slow answer leaves the choice as it was, with a warning, and is not kept. The LLM client
and the decision cache are imported when a call needs them (the cache's ``tempfile`` alone takes
tens of milliseconds), so a heuristic filter never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pflow_structure.filtering.choice import Choice, Request
from pflow_structure.filtering.choose import complete_lists, picked
from pflow_structure.filtering.tree import FieldTree

if TYPE_CHECKING:
    from pflow_structure.filtering.decisions import DecisionStore
    from pflow_structure.filtering.options import FilterOptions


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """The LLM's choice in place of the ranking's (with ``want``: beside it, in ``advice``)."""
    options = request.options
    if options is None or options.mode not in ("auto", "llm"):
        return choice
    ready, missing = llm_status(options)
    if not ready:
        if options.mode == "llm" and not request.want:
            problem = f"Filter mode is llm but no LLM is configured ({missing}); used the heuristic filter."
            return choice._replace(warnings=(*choice.warnings, problem))
        return choice
    keep, from_cache, problem = ask(tree, options, request.node_type, request.want)
    if keep is None:
        instead = "matched the words by name only." if request.want else "used the heuristic filter instead."
        return choice._replace(warnings=(*choice.warnings, f"LLM filter: {problem}; {instead}"))
    kept = complete_lists(tree, picked(tree, keep), choice.ranked)
    if request.want:
        return choice._replace(advice=(*choice.advice, *kept), method="llm", from_cache=from_cache)
    return choice._replace(kept=kept, method="llm", from_cache=from_cache)


def ask(
    tree: FieldTree, options: FilterOptions, node_type: str, want: str | None = None
) -> tuple[list[str] | None, bool, str]:
    """(the paths the model keeps, whether they came from the decision cache, why there are none);
    ``want`` goes into the prompt and the key."""
    from pflow_structure.filtering import llm
    from pflow_structure.filtering.decisions import DecisionCache, decision_key

    model = llm.resolve_model(options.model or llm.DEFAULT_MODEL)
    fields = list(tree.field_paths)
    cache: DecisionStore | None = options.decision_store
    if cache is None and options.decisions_dir is not None:
        cache = DecisionCache(options.decisions_dir)
    key = decision_key(node_type, model, llm.PROMPT_VERSION, tree.structure, fields, want=want)
    if cache is not None:
        kept = cache.get(key)
        if kept is not None:
            valid = [path for path in kept if path in tree.structure]
            if valid:
                return valid, True, ""
    try:
        kept = llm.llm_choose_fields(
            tree.structure,
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
    return kept, False, ""


def llm_status(options: FilterOptions, *, litellm_installed: bool | None = None) -> tuple[bool, str]:
    """(whether the LLM filter can run, what to do when it cannot): the model's provider key (or an
    API base) is set and litellm is installed. Called only when a structure is over the threshold,
    so commands that never filter (read-fields) do not pay for it."""
    import importlib.util

    from pflow_structure.filtering import llm

    key = llm.provider_key_env(options.model or llm.DEFAULT_MODEL)
    if options.api_base is None and (key is None or key not in options.keys_set):
        return False, f"set {key}" if key else "set the model's API key or PFLOW_STRUCTURE_FILTER_API_BASE"
    if litellm_installed is None:
        litellm_installed = importlib.util.find_spec("litellm") is not None
    if not litellm_installed:
        return False, "pip install 'pflow-structure[llm]' for litellm"
    return True, ""
