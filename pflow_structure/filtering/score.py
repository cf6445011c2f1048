"""Step 1, score: every field's score, and the fields worth showing, best first.

Deterministic, no network, no values: a field's score comes from what the structure says about
it (its keys, its type, string lengths, list lengths, ``same_as`` and dynamic-key markers) and the
inference's signals. :func:`keyed_score` is the hand-made score: business fields (title, name,
body, state, amounts and counts) score high; links, opaque ids, hashes, timestamps and API metadata
score below zero. The learned score (the default, :mod:`pflow_structure.filtering.learned`) sums
fitted weights over each field's features (:mod:`pflow_structure.filtering.features`), the
hand-made score among them. :func:`step` ranks the fields from :data:`MIN_SCORE` (hand-made) or
zero (learned) up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.filtering import vocabulary
from pflow_structure.filtering.choice import Choice, Request
from pflow_structure.filtering.features import Features, Model, field_features, learned_score
from pflow_structure.filtering.options import DEFAULT_THRESHOLD
from pflow_structure.filtering.signals import DEFAULT_TUNING, Tuning, adjust
from pflow_structure.filtering.tree import FieldTree, PathNode, Places, key_segments, kinds_of, normalise
from pflow_structure.structure.field_stats import FieldSignals

MIN_SCORE = 1.0  # a field must score at least this to be shown (the hand-made score)
FALLBACK_FIELDS = 5  # a long structure where no field reaches the learned threshold shows its best this many
_SIZED_VARIANT = re.compile(r"(?:image|thumb|icon|avatar)_\d+(?:_\w+)?\Z")  # image_24, thumb_360_w


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """Score every field of ``tree`` (learned unless ``request.model`` is None) and rank the ones
    worth showing."""
    model = request.model
    scores = base_scores(tree.structure, tree.nodes, tree.fields, tree.signals, request.tuning)
    if model == "default":
        from pflow_structure.filtering.learned import shipped_model

        model = shipped_model()
    floor = MIN_SCORE
    if model is not None:
        scores = _learned(tree, scores, model)
        floor = 0.0
    fields = tree.fields
    ranked = sorted((index for index in fields if scores[index] >= floor), key=lambda index: (-scores[index], index))
    if not ranked and model is not None and len(fields) > DEFAULT_THRESHOLD:
        # nothing reached the threshold in a long structure: the best few, rather than all of it unfiltered
        ranked = sorted(fields, key=lambda index: (-scores[index], index))[:FALLBACK_FIELDS]
    return choice._replace(scores=scores, ranked=tuple(ranked), learned=model is not None)


def score_field(
    path: str, entry: Mapping[str, Any], signals: FieldSignals | None = None, tuning: Tuning = DEFAULT_TUNING
) -> float:
    """Above zero: worth showing; zero or below: noise. Uses the path's keys, the entry's statistics
    and, when given, the inference's signals for the path."""
    keys = tuple(normalise(key) for key in key_segments(path))
    noisy = any(key.replace("_", "") in vocabulary.NOISE_SEGMENTS_SQUASHED for key in keys[:-1])
    return keyed_score(keys, noisy, entry, signals, tuning)


def keyed_score(
    keys: tuple[str, ...],
    noisy_above: bool,
    entry: Mapping[str, Any],
    signals: FieldSignals | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> float:
    """The hand-made score of a field from its normalised ``keys`` (root first), whether a key above it
    is metadata, its entry and its signals (see the module doc)."""
    if not keys:
        return 1.0
    name = keys[-1]
    kinds = kinds_of(str(entry.get("type", "")))
    business = float(vocabulary.BUSINESS.get(name, 0))
    if not kinds:  # always null: nothing to read here, though a named field may hold something elsewhere
        return business * tuning.null_named if business else -5.0
    if "str" in kinds and entry.get("avg_length") == 0 and len(kinds) == 1 and not business:
        return -4.0  # always empty
    score = business
    if business:
        pass  # named as a business field (base_url, display_name): its score stands
    elif (
        name.replace("_", "") in vocabulary.NOISE_SQUASHED
        or name.endswith(vocabulary.NOISE_SUFFIXES)
        or name == "id"
        or name.startswith("_")
        or _SIZED_VARIANT.match(name)
    ):
        score = min(score, 0) - 6
    elif name.endswith(("_html", "_text")) and name not in vocabulary.BUSINESS:
        score = -2  # body_html, body_text: other renderings of a field listed beside them
    elif name.endswith(vocabulary.TIME_SUFFIXES) or name in vocabulary.TIME_NAMES:
        score = tuning.time  # below business fields: a time matters for some questions, not most
    elif not score:
        suffix = next((part for part in vocabulary.BUSINESS_SUFFIXES if name.endswith(part)), None)
        last = name.rpartition("_")[2]
        if suffix is not None and "str" in kinds:
            score = vocabulary.BUSINESS[suffix[1:]] * (0.3 if suffix == "_type" else 0.7)
        elif last != name and last in vocabulary.BUSINESS:
            score = vocabulary.BUSINESS[last] * 0.6  # ready_replicas, restart_count read like their last word
        elif name.endswith(("_count", "_total", "count", "total")) and kinds & {"int", "float"}:
            score = 4
        elif name.startswith(("is_", "has_", "can_", "allow_")):
            score = -1
        elif kinds == {"bool"}:
            score = tuning.flag
        elif "str" in kinds and (entry.get("avg_length") or 0) >= 40:
            score = 4  # long free text reads like content
        elif "str" in kinds:
            score = 1.5
        elif kinds & {"int", "float"}:
            score = 1.3
        else:
            score = 0
    score = adjust(score, bool(business), kinds, signals, tuning)
    if noisy_above:
        score = min(score, 0) - 3
    if entry.get("dynamic_keys"):
        score = max(score, 2.0)  # a dict of versions, files, members: one field that says what is there
    if "same_as" in entry:
        score = min(score, 1.0)  # a repeat of a shape listed elsewhere
    if score <= 0:
        return score
    depth = len(keys) - 1
    return max(0.05, score * tuning.depth_decay ** max(0, depth - 1))  # shallower first, never pushed below zero


def _label_records_by_id(nodes: Sequence[PathNode], indices: Sequence[int], scores: dict[int, float]) -> None:
    """A record without a name or title (an EC2 instance without tags) is known by its id: keep it."""
    labelled = {nodes[index].parent for index in indices if scores[index] >= 6}
    for index in indices:
        keys = nodes[index].keys
        if not keys or nodes[index].parent in labelled:
            continue
        if keys[-1] == "id" or (keys[-1].endswith("_id") and _owner_named(nodes, index)):
            scores[index] = 3.0


def _owner_named(nodes: Sequence[PathNode], index: int) -> bool:
    """``Instances[0].InstanceId``: the id is named after the record it is in."""
    keys = nodes[index].keys
    if len(keys) < 2:
        return False
    owner = keys[-2].rstrip("s")
    return keys[-1] == f"{owner}_id"


def base_scores(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: Sequence[PathNode],
    indices: Sequence[int],
    signals: Mapping[str, FieldSignals],
    tuning: Tuning = DEFAULT_TUNING,
) -> dict[int, float]:
    """The hand-made score of each field (the vocabulary's, with the records' id labels)."""
    scores = {
        index: keyed_score(
            nodes[index].keys,
            nodes[index].noisy_above,
            structure[nodes[index].path],
            signals.get(nodes[index].path),
            tuning,
        )
        for index in indices
    }
    _label_records_by_id(nodes, indices, scores)
    return scores


def features_by_field(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: Sequence[PathNode],
    indices: Sequence[int],
    signals: Mapping[str, FieldSignals],
    base: Mapping[int, float],
    places: Places | None = None,
) -> dict[int, Features]:
    """The learned score's features of each field: what the filter scores and what the fit learns from
    (``benchmarks/filter_learn.py``), computed in this one place so the two cannot drift apart."""
    places = Places(nodes, indices) if places is None else places
    return {
        index: field_features(
            index, nodes[index], structure[nodes[index].path], signals.get(nodes[index].path), places, base[index]
        )
        for index in indices
    }


def _learned(tree: FieldTree, base: Mapping[int, float], model: Model) -> dict[int, float]:
    """The fitted score of each field, less the model's threshold (shown from zero up)."""
    features = features_by_field(tree.structure, tree.nodes, tree.fields, tree.signals, base, tree.places)
    return {index: learned_score(found, model.weights) - model.threshold for index, found in features.items()}
