"""The heuristic field filter: the fields a person would use, from names and statistics only.

Deterministic, no network, no values: it reads what a structure already says about each path
(its key, its type, string lengths, list lengths, ``same_as`` and dynamic-key markers) and
scores each *field* (a leaf path, a list of scalars, a ``same_as`` reference or a dynamic-key
dict, each counted once). Business fields (title, name, body, state, amounts and counts)
score high; links, opaque ids, hashes, timestamps and API metadata score below zero and are
dropped. The best fields are kept up to a target, and every list keeps enough of its item
fields to show its shape; the containers above a kept field are kept with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from pflow_structure.filtering import vocabulary
from pflow_structure.filtering.features import Features, Model, field_features, learned_score
from pflow_structure.filtering.options import DEFAULT_TARGET, DEFAULT_THRESHOLD
from pflow_structure.filtering.signals import DEFAULT_TUNING, Tuning, adjust
from pflow_structure.filtering.tree import (
    PathNode,
    Places,
    field_indices,
    is_inside,
    key_segments,
    kinds_of,
    normalise,
    path_nodes,
    record_body,
)
from pflow_structure.filtering.tree import (
    fields_of as fields_of,
)
from pflow_structure.structure.field_stats import FieldSignals

MIN_ITEM_FIELDS = 2  # a kept list shows at least this many fields of its items (when it has them)
MAX_ITEM_FIELDS = 5  # and the shape top-up adds no more than this many per list

MIN_SCORE = 1.0  # a field must score at least this to be shown
_SIZED_VARIANT = re.compile(r"(?:image|thumb|icon|avatar)_\d+(?:_\w+)?\Z")  # image_24, thumb_360_w


class FieldChoice(NamedTuple):
    """What the filter decided: the kept structure, the fields kept and hidden, each score, and
    the key names of what is hidden (see :func:`pflow_structure.filtering.hidden.hidden_keys`)."""

    structure: dict[str, dict[str, Any]]
    kept_fields: list[str]
    hidden_fields: list[str]
    scores: dict[str, float]
    hidden: dict[str, dict[str, Any]]


def score_field(
    path: str, entry: Mapping[str, Any], signals: FieldSignals | None = None, tuning: Tuning = DEFAULT_TUNING
) -> float:
    """Above zero: worth showing; zero or below: noise. Uses the path's keys, the entry's statistics
    and, when given, the inference's signals for the path."""
    keys = tuple(normalise(key) for key in key_segments(path))
    noisy = any(key.replace("_", "") in vocabulary.NOISE_SEGMENTS_SQUASHED for key in keys[:-1])
    return _score(keys, noisy, entry, signals, tuning)


def _score(
    keys: tuple[str, ...],
    noisy_above: bool,
    entry: Mapping[str, Any],
    signals: FieldSignals | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> float:
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


def _spread(
    ranked: list[int],
    nodes: list[PathNode],
    structure: Mapping[str, Mapping[str, Any]],
    target: int,
    scores: Mapping[int, float],
    tuning: Tuning,
    *,
    reweigh: bool = True,
) -> list[int]:
    """The best fields, up to ``target`` of them and ``tuning.budget`` estimated tokens of lines,
    with the lists inside a record (a message's files) and the dicts inside a record (its
    bot_profile) capped, so that the fields of the records themselves are not crowded out by
    the many fields of what each record holds. A dict that holds most of a record's fields
    (Reddit's ``children[0].data``, JSON:API's ``attributes``) is the record's body, not a part."""
    # The record list: the deepest list holding at least half of the candidate fields
    # (messages in a Slack history, Instances in an EC2 answer, not Reservations around them).
    inside: dict[int, int] = {}
    for index in ranked:
        owner = nodes[index].list_owner
        while owner >= 0:
            inside[owner] = inside.get(owner, 0) + 1
            owner = nodes[owner].list_owner
    half = len(ranked) / 2
    records = max(
        (owner for owner, count in inside.items() if count >= half),
        key=lambda owner: len(nodes[owner].keys) + nodes[owner].path.count("["),
        default=-1,
    )
    body = record_body(ranked, nodes, records) if records >= 0 else -1
    if records >= 0 and reweigh:
        # The records' own fields first; what a record holds (its files, its bot_profile) after.
        envelope = nodes[records].parent  # the object around the records: page, page_size, next

        def weight(index: int) -> float:
            if nodes[index].parent in (records, body):
                return 1.5
            if nodes[index].parent == envelope:
                return tuning.envelope
            return 0.6 if is_inside(nodes, index, records) else 1.0

        order = {index: position for position, index in enumerate(ranked)}
        ranked = sorted(ranked, key=lambda index: (-scores[index] * weight(index), order[index]))
    per_list: dict[int, int] = {}
    per_object: dict[int, int] = {}
    kept: list[int] = []
    paid: set[int] = set()  # lines already counted: kept fields and the containers above them
    spent = 0.0
    for index in ranked:
        node = nodes[index]
        owner = node.list_owner
        inner_list = owner >= 0 and owner != records and is_inside(nodes, owner, records)
        if inner_list and per_list.get(owner, 0) >= tuning.nested_list:
            continue
        parent = node.parent
        sub_object = (
            owner >= 0  # inside a record: a top-level object (PyPI's info) is the record itself
            and parent >= 0
            and parent != owner
            and "list" not in str(structure[nodes[parent].path].get("type", ""))
            and nodes[parent].parent >= 0
            and parent != body
        )
        if sub_object and per_object.get(parent, 0) >= tuning.sub_object:
            continue
        cost = 0.0
        step = index
        while step >= 0 and step not in paid:
            cost += _line_cost(nodes, step, structure)
            step = nodes[step].parent
        if spent + cost > tuning.budget:
            continue
        spent += cost
        step = index
        while step >= 0 and step not in paid:
            paid.add(step)
            step = nodes[step].parent
        kept.append(index)
        per_list[owner] = per_list.get(owner, 0) + 1
        if sub_object:
            per_object[parent] = per_object.get(parent, 0) + 1
        if len(kept) >= target:
            break
    return kept


def _line_cost(nodes: list[PathNode], index: int, structure: Mapping[str, Mapping[str, Any]]) -> float:
    """Estimated o200k tokens of the field's tree line: 2.2 + characters / 3.2 (fitted by least squares
    on the tree lines of the 28 corpus files, 20,615 tokens, mean error 1.3 tokens a line)."""
    from pflow_structure.render.structure_text import describe_entry

    node = nodes[index]
    own = len(node.path) - (len(nodes[node.parent].path) if node.parent >= 0 else 0)
    return 2.2 + (own + len(describe_entry(structure[node.path], short=True))) / 3.2


def view_cost(structure: Mapping[str, Mapping[str, Any]]) -> float:
    """Estimated o200k tokens of the tree lines of the whole ``structure``."""
    nodes = path_nodes(structure)
    return sum(_line_cost(nodes, index, structure) for index in range(len(nodes)))


def _label_records_by_id(nodes: list[PathNode], indices: list[int], scores: dict[int, float]) -> None:
    """A record without a name or title (an EC2 instance without tags) is known by its id: keep it."""
    labelled = {nodes[index].parent for index in indices if scores[index] >= 6}
    for index in indices:
        keys = nodes[index].keys
        if not keys or nodes[index].parent in labelled:
            continue
        if keys[-1] == "id" or (keys[-1].endswith("_id") and _owner_named(nodes, index)):
            scores[index] = 3.0


def _owner_named(nodes: list[PathNode], index: int) -> bool:
    """``Instances[0].InstanceId``: the id is named after the record it is in."""
    keys = nodes[index].keys
    if len(keys) < 2:
        return False
    owner = keys[-2].rstrip("s")
    return keys[-1] == f"{owner}_id"


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
    from pflow_structure.filtering.hidden import hidden_keys

    nodes = path_nodes(structure)
    indices = field_indices(structure, nodes)
    found = signals or {}
    scores = base_scores(structure, nodes, indices, found, tuning)
    if model == "default":
        from pflow_structure.filtering.learned import shipped_model

        model = shipped_model()
    floor = MIN_SCORE
    if model is not None:
        scores = _learned(structure, nodes, indices, found, scores, model)
        floor = 0.0
    ranked = sorted((index for index in indices if scores[index] >= floor), key=lambda index: (-scores[index], index))
    if not ranked and model is not None and len(indices) > DEFAULT_THRESHOLD:
        # nothing reached the threshold in a long structure: the best few, rather than all of it unfiltered
        ranked = sorted(indices, key=lambda index: (-scores[index], index))[:MAX_ITEM_FIELDS]
    if keep is None:
        kept = _spread(ranked, nodes, structure, target, scores, tuning, reweigh=model is None)
    else:
        wanted = set(keep)
        kept = [index for index in indices if nodes[index].path in wanted]
    _complete_lists(kept, ranked, nodes)
    chosen: set[int] = set()
    for index in kept:
        while index >= 0 and index not in chosen:
            chosen.add(index)
            index = nodes[index].parent
    filtered = {node.path: dict(structure[node.path]) for position, node in enumerate(nodes) if position in chosen}
    room = tuning.view - sum(_line_cost(nodes, index, structure) for index in chosen)
    kept_set = set(kept)
    return FieldChoice(
        filtered,
        [nodes[index].path for index in indices if index in kept_set],
        [nodes[index].path for index in indices if index not in kept_set],
        {nodes[index].path: scores[index] for index in indices},
        hidden_keys(structure, [(node.path, node.parent) for node in nodes], chosen, scores, room),
    )


def base_scores(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: list[PathNode],
    indices: list[int],
    signals: Mapping[str, FieldSignals],
    tuning: Tuning = DEFAULT_TUNING,
) -> dict[int, float]:
    """The hand-made score of each field (the vocabulary's, with the records' id labels)."""
    scores = {
        index: _score(
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
    nodes: list[PathNode],
    indices: list[int],
    signals: Mapping[str, FieldSignals],
    base: Mapping[int, float],
) -> dict[int, Features]:
    """The learned score's features of each field: what the filter scores and what the fit learns from
    (``benchmarks/filter_learn.py``), computed in this one place so the two cannot drift apart."""
    places = Places(nodes, indices)
    return {
        index: field_features(
            index, nodes[index], structure[nodes[index].path], signals.get(nodes[index].path), places, base[index]
        )
        for index in indices
    }


def _learned(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: list[PathNode],
    indices: list[int],
    signals: Mapping[str, FieldSignals],
    base: Mapping[int, float],
    model: Model,
) -> dict[int, float]:
    """The fitted score of each field, less the model's threshold (shown from zero up)."""
    return {
        index: learned_score(features, model.weights) - model.threshold
        for index, features in features_by_field(structure, nodes, indices, signals, base).items()
    }


def _complete_lists(kept: list[int], ranked: list[int], nodes: list[PathNode]) -> None:
    """Every list with a kept field shows at least MIN_ITEM_FIELDS of its item fields."""
    members: dict[int, int] = {}
    for index in kept:
        owner = nodes[index].list_owner
        if owner >= 0:
            members[owner] = members.get(owner, 0) + 1
    short = {owner for owner, count in members.items() if count < MIN_ITEM_FIELDS}
    if not short:
        return
    kept_set = set(kept)
    for index in ranked:
        owner = nodes[index].list_owner
        if owner in short and index not in kept_set:
            kept.append(index)
            kept_set.add(index)
            members[owner] += 1
            if members[owner] >= min(MAX_ITEM_FIELDS, MIN_ITEM_FIELDS):
                short.discard(owner)
            if not short:
                break
