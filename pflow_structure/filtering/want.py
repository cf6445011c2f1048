"""``want``: plain words from the agent that steer the view to the fields they name.

Names only, never values. The words of the text and of each field's keys are split (snake, camel,
kebab), stemmed (``titles`` → ``title``, ``created`` → ``creat``) and compared: the same stem counts
most, one stem the start of the other (``assign`` and ``assignee``) a little less, and two words of
one everyday meaning (:data:`MEANINGS`: ``paid`` and ``financial``, ``who wrote`` and ``author``,
``owed`` and ``due``) less again. A field's own key counts fully, the keys of the containers
above it by half (``user.login`` answers "which user"). The view then lists the matching fields
first and fills the rest of a smaller budget with the usual view (:func:`choose_wanted`).

Deterministic, pure Python, no model: wordllama and a learned word-to-name table were measured as
candidates (``benchmarks/want_eval.py``) and are not used; see docs/want.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from pflow_structure.filtering.tree import _field_indices, _nodes
from pflow_structure.structure.field_stats import FieldSignals

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|_|\d)|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Words that carry no field meaning in a question ("what is the ... of this ...").
STOPWORDS = frozenset(
    """a an the is are was were be been being do does did of in on at to for from with and or not no
    what which whose whom this that these those it its there their they them i me my we our you your
    he she his her has have had can could should would will shall may might must any all each every
    some than then so if as into about over per get got give show list tell find see me please also
    just only item items one ones thing things value values field fields there here out up down
    response result results data object objects entry entries record records""".split()  # noqa: SIM905 (a word list reads better as text)
)

# Everyday words of one meaning, the links a name list alone misses. General English, no API's
# field names: ``paid`` finds ``financial_status`` through ``financial``, ``owed`` finds
# ``amount_due`` through ``due``, ``who`` and ``wrote`` find ``author`` and ``user``.
MEANINGS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "money amount price cost paid pay payment charge owe owed due balance total fee bill billing invoice "
        "financial spend spent much currency subtotal refund revenue tax discount",
        "who author wrote write writer creator owner user login username sender poster posted opened reporter "
        "submitter committer actor member person assignee assigned by",
        "when date time timestamp created updated started start finished finish ended end age ago since "
        "last recent latest newest oldest modified duration",
        "status state phase condition succeed success successful fail failed failure error open closed "
        "conclusion outcome healthy health ready running active done complete completed pass passing "
        "alive live stopped",
        "many count number total size length quantity num amount",
        "name title label called named display subject headline",
        "say says said text body content message description comment note mention wording",
        "where location region zone address country city host place located",
        "kind type category class sort",
        "version release tag revision",
        "link url href web page site",
        "big large size bytes memory disk storage",
        "contact email phone mail",
        "urgent priority severity important critical",
        "tag label topic keyword category",
        "star stars popular popularity stargazers like likes favorite score rating rank",
        "download downloads install installs",
        "language lang locale",
        "why reason cause explanation",
        "repo repository project",
        "image container docker",
        "cpu memory resource resources limit limits request requests",
        "ip address network",
    )
)

EXACT = 1.0
PREFIX = 0.8
MEANING = 0.6
CONTAINER = 0.5  # a container's key counts half of the field's own
MATCH = 0.6  # a field matches the words from this score on
MAX_WANTED = 12  # the view lists at most this many matching fields
WHOLE_TOKENS = 150  # a structure whose lines take at most this (estimated) is shown whole, want or not
WANT_BUDGET = 120  # estimated tokens of lines for the usual view's part of a view with ``want``


def words(text: str) -> list[str]:
    """The lower-case words of a text or a key: ``financialStatus`` → financial, status."""
    return [word.lower() for word in _WORD.findall(text)]


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A light stem, enough to meet a key: ``titles`` → ``title``, ``created`` → ``creat``."""
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


_STEMMED_MEANINGS: tuple[frozenset[str], ...] = tuple(frozenset(stem(word) for word in group) for group in MEANINGS)


def want_terms(text: str) -> tuple[str, ...]:
    """The stems of the words of ``text`` that can name a field (stopwords left out), in order."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS:
            seen[stem(word)] = None
    return tuple(seen)


@lru_cache(maxsize=65536)
def _pair(term: str, word: str) -> float:
    if term == word:
        return EXACT
    if min(len(term), len(word)) >= 4 and (term.startswith(word) or word.startswith(term)):
        return PREFIX
    if any(term in group and word in group for group in _STEMMED_MEANINGS):
        return MEANING
    return 0.0


def _best(term: str, stems: Sequence[str]) -> float:
    return max((_pair(term, word) for word in stems), default=0.0)


def want_score(terms: Sequence[str], keys: Sequence[str]) -> float:
    """How well the keys of one field (root first) match the terms: per term, the best of its own
    key's words and half of its containers' words, summed."""
    if not terms or not keys:
        return 0.0
    own = [stem(word) for word in words(keys[-1])]
    above = [stem(word) for key in keys[:-1] for word in words(key)]
    return sum(max(_best(term, own), CONTAINER * _best(term, above)) for term in terms)


def want_scores(structure: Mapping[str, Mapping[str, Any]], want: str) -> dict[str, float]:
    """The score of every field of ``structure`` (see :func:`want_score`), by path."""
    terms = want_terms(want)
    nodes = _nodes(structure)
    return {nodes[index].path: want_score(terms, nodes[index].keys) for index in _field_indices(structure, nodes)}


def wanted_fields(
    structure: Mapping[str, Mapping[str, Any]], want: str, usual: Mapping[str, float] | None = None
) -> list[str]:
    """The fields that match ``want``, best first (ties: the usual score, then the order listed),
    at most :data:`MAX_WANTED`."""
    scores = want_scores(structure, want)
    matched = [path for path, score in scores.items() if score >= MATCH]
    best = max((scores[path] for path in matched), default=0.0)
    order = {path: position for position, path in enumerate(scores)}
    usual = usual or {}
    matched = [path for path in matched if scores[path] >= best / 2]  # the weakest echoes of a strong match go
    matched.sort(key=lambda path: (-scores[path], -usual.get(path, 0.0), order[path]))
    return matched[:MAX_WANTED]


def choose_wanted(
    structure: Mapping[str, Mapping[str, Any]],
    want: str,
    *,
    signals: Mapping[str, FieldSignals] | None = None,
    target: int = 10,
    extra: Sequence[str] = (),
) -> tuple[Any, list[str]]:
    """The view for ``want``: ``(FieldChoice, the matching fields best first)``. The matching fields
    (and ``extra``, an LLM's choice) come first, then the usual view's best fields up to ``target``
    in all; the rest is named in ``hidden`` as in every filtered view."""
    from pflow_structure.filtering.heuristic import choose_fields
    from pflow_structure.filtering.signals import DEFAULT_TUNING

    small = DEFAULT_TUNING._replace(budget=WANT_BUDGET)
    usual = choose_fields(structure, target=target, signals=signals, tuning=small)
    wanted = wanted_fields(structure, want, usual.scores)
    keep = list(dict.fromkeys([*wanted, *extra]))
    room = max(0, target - len(keep))
    ranked = sorted(usual.kept_fields, key=lambda path: -usual.scores.get(path, 0.0))
    keep += [path for path in ranked if path not in keep][:room]
    return choose_fields(structure, target=len(keep), keep=keep, signals=signals, tuning=small), wanted
