"""Scoring from what inference saw, on any API: the filter's tunable parameters and signals.

A field's name says something in a known vocabulary; the statistics say something everywhere
(see :mod:`pflow_structure.structure.field_stats`): over the items of a list, a string field with a few
distinct values is a category (type, status, kind, phase), one where every value differs and
looks like a token is an id or a hash, and a value that never changes tells nothing. These
adjust the name score by amounts held in :class:`Tuning`, so that the benchmark can tune them
without one API family and judge on it (``benchmarks/filter_eval.py``).
"""

from __future__ import annotations

from typing import NamedTuple

from pflow_structure.structure.field_stats import DISTINCT_CAP, FieldSignals

# Statistics over fewer values than this say nothing about a field (one object, two items).
MIN_VALUES = 4


class Tuning(NamedTuple):
    """The heuristic's parameters (the defaults are the benchmark's choice over every family).

    - ``budget``: estimated tokens for the shown lines (each kept field and the containers it
      needs); the view stops adding fields there, whatever their count.
    - ``view``: estimated tokens for all the view's lines, the names of what is hidden included:
      those names take what the shown lines leave (the top-level names always have their line).
    - ``category``: added to a short string field with few distinct values over many items.
    - ``token_id``: taken from a string field whose values all differ and look like tokens.
    - ``constant``: taken from a field whose value never changes over many items.
    - ``reference``: the score of a token-valued field that is named, not ``id``/``*_id``
      (``customer: "cus_…"``): the only handle on a related object.
    - ``depth_decay``: each level below the first multiplies a score by this.
    - ``flag``: the score of a boolean the vocabulary does not know (paid, ready, disputed).
    - ``time``: the score of a timestamp (created, created_at, creationTimestamp).
    - ``null_named``: a known name that was always null keeps this share of its score.
    - ``sub_object``: at most this many fields of a dict inside a list item (a message's
      bot_profile), so that the item's own fields are not crowded out.
    - ``nested_list``: at most this many fields of a list inside a list item (a message's files).
    - ``envelope``: multiplies the score of a field beside the main list of records (page,
      page_size, next): the envelope of a list response.
    """

    budget: int = 340
    view: int = 480
    category: float = 0.0
    token_id: float = 0.0
    constant: float = 2.0
    reference: float = 2.0
    depth_decay: float = 0.93
    flag: float = 0.2
    time: float = 2.5
    null_named: float = 0.5
    sub_object: int = 100
    nested_list: int = 100
    envelope: float = 0.5


DEFAULT_TUNING = Tuning()


def adjust(score: float, named: bool, kinds: frozenset[str], signals: FieldSignals | None, tuning: Tuning) -> float:
    """``score`` (from the name) moved by what the statistics say; ``named``: the name is a known one."""
    if signals is None:
        return score
    values = signals.values
    many = values >= MIN_VALUES
    if many and signals.distinct == 1:
        return score - tuning.constant  # the same value every time: a type tag, a flag that never flips
    if "str" not in kinds:
        return score
    all_differ = signals.distinct > DISTINCT_CAP or signals.distinct == values
    if signals.token_like:
        if many and all_differ:
            return min(score, 0.0) - tuning.token_id if not named else score - tuning.token_id / 2
        if not named and score > -3:
            return max(score, tuning.reference)  # one token value, a named field: a related object's handle
        return score
    if many and 2 <= signals.distinct <= max(2, values // 3) and signals.str_max <= 40:
        return score + tuning.category
    return score
