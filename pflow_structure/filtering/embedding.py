"""wordllama's one home: the fields whose names read closest to the agent's words, by embedding.

The pipeline's step after the LLM's (:func:`step`): with ``want``, when configured.

Opt-in (``PFLOW_STRUCTURE_WANT_MODEL=wordllama`` and ``pip install 'pflow-structure[want]'``): on the
labelled questions it lists 9 more of 524 than the name matching alone (benchmarks/want_eval.py
--candidates), for a 19 MB wheel and a model load of a few seconds per process. Its weights ship
inside its wheel: nothing is downloaded. Names only, never values.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pflow_structure.filtering.choice import Choice, Request
    from pflow_structure.filtering.tree import FieldTree, StructureOrTree

BEST = 5  # the view gets this many of the closest fields


class EmbeddingUnavailable(RuntimeError):
    """The model was asked for and cannot be loaded; the message says what to install."""


@lru_cache(maxsize=1)
def _model() -> Any:
    import importlib
    import importlib.util
    import os

    if importlib.util.find_spec("wordllama") is None:
        raise EmbeddingUnavailable("wordllama is not installed; pip install 'pflow-structure[want]'")
    wordllama = importlib.import_module("wordllama")  # untyped: loaded by name, used through Any
    folder = os.path.dirname(str(wordllama.__file__))  # the weights inside its wheel, never a download
    return wordllama.WordLlama.load(cache_dir=folder, disable_download=True)


def field_text(keys: Sequence[str]) -> str:
    """What a field's name says, in words: its last two keys (``owner.display_name`` → owner display name)."""
    from pflow_structure.filtering.want import words

    return " ".join(word for key in keys[-2:] for word in words(key))


def closest_fields(structure: StructureOrTree, want: str, best: int = BEST) -> list[str]:
    """The ``best`` fields whose names read closest to ``want`` (``structure``: a mapping or its
    :class:`~pflow_structure.filtering.tree.FieldTree`). Raises :class:`EmbeddingUnavailable`."""
    from pflow_structure.filtering.tree import tree_of

    tree = tree_of(structure)
    fields = [tree.nodes[index] for index in tree.fields]
    if not fields:
        return []
    texts = [field_text(node.keys) or node.path for node in fields]
    ranked = _model().rank(want, texts, sort=False)
    order = sorted(range(len(fields)), key=lambda i: (-float(ranked[i][1]), i))
    return [fields[i].path for i in order[:best]]


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """With ``want`` and ``want_model``: the closest fields, added to the models' choice (``advice``)
    that the want step lists beside the words' matches; a warning when the model cannot load."""
    options = request.options
    if not request.want or options is None or not options.want_model:
        return choice
    from pflow_structure.filtering.choose import picked

    try:
        closest = closest_fields(tree, request.want)
    except EmbeddingUnavailable as exc:
        problem = f"want model {options.want_model}: {exc}; matched the words by name only."
        return choice._replace(warnings=(*choice.warnings, problem))
    return choice._replace(advice=(*choice.advice, *picked(tree, closest)))
