"""What the filter can see of one field on any API, as named features for a learned score.

Each field of a structure (see :func:`pflow_structure.filtering.tree.fields_of`) gets a few
numbers, none of them a value: what its name reads like (the vocabulary's score, an id, a url, a
time, a flag, the words of the name and of its parent), its type and lengths, where it stands
(depth, inside the main list of records, beside it, its place among its siblings, how often it
is present), what inference counted of its values (constant, all different, a category,
token-like; ``link``: the prefix every value shares is a link to an API or to a web page, a
two-way category, never shown) and whether its object has a name of its own.
:mod:`pflow_structure.filtering.learned` holds weights fitted on labelled responses by
``benchmarks/filter_learn.py``; the score of a field is their sum over its features.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from pflow_structure.filtering import vocabulary
from pflow_structure.filtering.tree import PathNode, Places, kinds_of
from pflow_structure.structure.field_stats import DISTINCT_CAP, FieldSignals

Features = dict[str, float]

_SIZED_VARIANT = re.compile(r"(?:image|thumb|icon|avatar)_\d+(?:_\w+)?\Z")
_URL_SUFFIXES = ("url", "uri", "href", "link", "links")
_COUNT_SUFFIXES = ("_count", "_total", "count", "total", "_size", "_number")
_FLAG_PREFIXES = ("is_", "has_", "can_", "allow_", "enable_", "show_")
MANY = 4  # statistics over fewer values say nothing


@lru_cache(maxsize=8192)
def name_features(name: str) -> tuple[tuple[str, float], ...]:
    """What a (normalised) key name reads like; cached, names repeat across fields and calls."""
    found: list[tuple[str, float]] = []
    business = vocabulary.BUSINESS.get(name, 0)
    if business:
        found.append(("vocab", business / 10))
    last = name.rpartition("_")[2]
    squashed = name.replace("_", "")
    if not business:
        suffix = next((part for part in vocabulary.BUSINESS_SUFFIXES if name.endswith(part)), None)
        if suffix is not None:
            found.append(("vocab_suffix", vocabulary.BUSINESS[suffix[1:]] / 10))
        elif last != name and last in vocabulary.BUSINESS:
            found.append(("vocab_last", vocabulary.BUSINESS[last] / 10))
    if name == "id":
        found.append(("id", 1.0))
    elif name.endswith(("_id", "_ids")):
        found.append(("id_suffix", 1.0))
    if name.endswith(_URL_SUFFIXES):
        found.append(("url", 1.0))
    elif squashed in vocabulary.NOISE_SQUASHED and not business:
        found.append(("noise_name", 1.0))
    elif name.endswith(vocabulary.NOISE_SUFFIXES) and not name.endswith(("_id", "_ids")):
        found.append(("noise_suffix", 1.0))
    if name.endswith(vocabulary.TIME_SUFFIXES) or name in vocabulary.TIME_NAMES:
        found.append(("time", 1.0))
    if name.endswith(("_html", "_text", "_markdown")) and not business:
        found.append(("rendering", 1.0))
    if name.endswith(_COUNT_SUFFIXES):
        found.append(("count", 1.0))
    if name.startswith(_FLAG_PREFIXES):
        found.append(("flag_prefix", 1.0))
    if name.startswith("_"):
        found.append(("underscore", 1.0))
    if _SIZED_VARIANT.match(name) or any(char.isdigit() for char in name):
        found.append(("digits", 1.0))
    if name.count("_") >= 2:
        found.append(("long_name", 1.0))
    if len(name) <= 2:
        found.append(("short_name", 1.0))
    return tuple(found)


def _type_features(entry: Mapping[str, Any], out: Features) -> frozenset[str]:
    type_name = str(entry.get("type", ""))
    kinds = kinds_of(type_name)
    if "null" in type_name.split("|"):
        out["nullable"] = 1.0
    if not kinds:
        out["null_only"] = 1.0
    elif "str" in kinds:
        out["str"] = 1.0
        length = float(entry.get("avg_length") or 0)
        if length == 0:
            out["empty"] = 1.0
        else:
            out["log_length"] = math.log2(1 + length) / 8
            if length >= 40:
                out["long_text"] = 1.0
    elif kinds & {"int", "float"}:
        out["number"] = 1.0
    elif kinds == {"bool"}:
        out["bool"] = 1.0
    if "list" in kinds:
        out["list"] = 1.0
    if entry.get("dynamic_keys"):
        out["dynamic"] = 1.0
    if "same_as" in entry:
        out["same_as"] = 1.0
    present, of = entry.get("present"), entry.get("of")
    if isinstance(present, int) and isinstance(of, int) and of > 0:
        out["absent_share"] = 1 - present / of
    return kinds


def _signal_features(signals: FieldSignals | None, kinds: frozenset[str], out: Features) -> None:
    if signals is not None and signals.link:
        out["link_" + signals.link] = 1.0
    if signals is None or signals.values < MANY:
        if signals is not None and signals.token_like and "str" in kinds:
            out["token_once"] = 1.0
        return
    out["many"] = 1.0
    distinct = signals.distinct
    if distinct == 1:
        out["constant"] = 1.0
        return
    all_differ = distinct > DISTINCT_CAP or distinct == signals.values
    if "str" not in kinds:
        if all_differ:
            out["numbers_differ"] = 1.0
        return
    if signals.token_like:
        out["token_differ" if all_differ else "token_repeat"] = 1.0
    elif all_differ:
        out["text_differ"] = 1.0
    if 2 <= distinct <= max(2, signals.values // 3) and signals.str_max <= 40:
        out["category"] = 1.0
    if signals.prefix >= 3:
        out["prefix"] = 1.0
    if signals.str_min == signals.str_max and signals.str_min >= 8:
        out["fixed_length"] = 1.0


def _place_features(index: int, node: PathNode, places: Places, out: Features) -> None:
    depth = len(node.keys)
    out["depth" + str(min(depth, 5))] = 1.0
    lists = node.path.count("[")
    if lists:
        out["lists" + str(min(lists, 3))] = 1.0
    if places.records < 0:
        out["no_records"] = 1.0
    elif node.parent in (places.records, places.body):
        out["record_field"] = 1.0
    elif node.parent == places.envelope:
        out["envelope"] = 1.0
    elif places.inside_records(index):
        out["record_part"] = 1.0
    rank, count = places.position[index]
    out["log_siblings"] = math.log2(count) / 6
    if rank == 0:
        out["first"] = 1.0
    out["place"] = rank / count
    if node.noisy_above:
        out["noisy_above"] = 1.0
    if node.parent in places.named:
        out["named_object"] = 1.0


def field_features(
    index: int,
    node: PathNode,
    entry: Mapping[str, Any],
    signals: FieldSignals | None,
    places: Places,
    base_score: float,
) -> Features:
    """The features of the field at ``index``; ``base_score``: the vocabulary heuristic's score."""
    out: Features = {"bias": 1.0, "base": max(-1.0, min(1.0, base_score / 10))}
    if base_score > 0:
        out["base_positive"] = 1.0
    name = node.keys[-1] if node.keys else ""
    for feature, value in name_features(name):
        out[feature] = value
    kinds = _type_features(entry, out)
    _signal_features(signals, kinds, out)
    _place_features(index, node, places, out)
    if "id" in out or "id_suffix" in out:
        out["id_unnamed" if node.parent not in places.named else "id_named"] = 1.0
    if len(node.keys) <= 2:
        out["top_base"] = out["base"]
    if "category" in out and "record_field" in out:
        out["record_category"] = 1.0  # a record's own type, status or kind, with a few values over many records
    for word in _words(name):
        out["w:" + word] = 1.0
        if "category" in out:
            out["wk:" + word] = 1.0  # the same word as a category (values vary over the records)
    if len(node.keys) >= 2:
        parent = node.keys[-2]
        for word in _words(parent):
            out["p:" + word] = 1.0
        if ("id" in out or "id_suffix" in out) and name.startswith(parent.rstrip("s")):
            out["id_of_record"] = 1.0  # Instances[0].InstanceId: the id named after its record
    return out


@lru_cache(maxsize=8192)
def _words(name: str) -> tuple[str, ...]:
    """The words of a normalised name (``restart_count`` → restart, count), letters only."""
    return tuple(dict.fromkeys(word for word in re.split(r"[^a-z]+", name) if len(word) >= 2))


class Model(NamedTuple):
    """Weights per feature and the score from which a field is shown (fitted, see the module doc)."""

    weights: Mapping[str, float]
    threshold: float


def learned_score(features: Features, weights: Mapping[str, float]) -> float:
    return sum(value * weights.get(name, 0.0) for name, value in features.items())
