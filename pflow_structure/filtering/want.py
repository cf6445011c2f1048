"""``want``: plain words from the agent that steer the view to the fields they name.

Names and the structure's value hints (a listed value, a time's unit), never raw values. The words of the text
and of each field's keys are split (snake, camel, kebab), stemmed (``titles`` → ``title``, ``created`` →
``creat``, ``qty`` → ``quantity``) and compared: the same stem counts most, one stem the start of the other
(``assign`` and ``assignee``) or two forms of one root (``collaborator`` and ``collaboration``) a little less,
and two words of one everyday meaning (:data:`MEANINGS`: ``paid`` and ``financial``, ``who wrote`` and
``author``, ``owed`` and ``due``) less again. A field's own key counts fully, the keys of the containers above
it by half (``user.login`` answers "which user"); a small object whose own key the words name is listed whole
(:func:`named_objects`: "which ports" gets each port's type too). The view then lists the matching fields
first and fills the rest of a smaller budget with the usual view (:func:`choose_wanted`).

Deterministic, pure Python, no model: wordllama and a learned word-to-name table were measured as
candidates (``benchmarks/want_eval.py``) and are not used; see docs/want.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pflow_structure.filtering import vocabulary
from pflow_structure.filtering.choice import START, Choice, Request, field_choice
from pflow_structure.filtering.choose import complete_lists, picked
from pflow_structure.filtering.tree import FieldTree, StructureOrTree, tree_of

if TYPE_CHECKING:
    from pflow_structure.filtering.choice import FieldChoice
    from pflow_structure.structure.field_stats import FieldSignals

_ACRONYM_PLURAL = re.compile(r"([A-Z]{2,})s(?=\b|_|\d|[A-Z])")  # ``PRs``, ``userIDs``: the s is the plural
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|_|\d)|[A-Z]?[a-z]+|[A-Z]+|\d+")

# Words that carry no field meaning in a question ("what is the ... of this ...").
STOPWORDS = frozenset(
    """a an the is are was were be been being do does did of in on at to for from with and or not no
    what which whose whom this that these those it its there their they them i me my we our you your
    he she his her has have had can could should would will shall may might must any all each every
    some than then so if as into about over per get got give show list tell find see me please also
    just only one ones thing things value values field fields there here out
    response result results data object objects how by yet""".split()  # noqa: SIM905 (a word list reads better as text)
)

# Everyday words of one meaning, the links a name list alone misses. General English, no API's
# field names: ``paid`` finds ``financial_status`` through ``financial``, ``owed`` finds
# ``amount_due`` through ``due``, ``who`` and ``wrote`` find ``author`` and ``user``.
MEANINGS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "paid pay payment payments financial charge charged billing invoice refund refunded captured settled",
        "much amount price cost owe owed due balance total fee bill spend spent currency subtotal revenue tax "
        "discount money",
        "who author wrote write writer creator owner user login username sender poster posted opened reporter "
        "submitter committer actor member person assignee assigned",
        "when date time timestamp created updated started start finished finish ended end age ago since "
        "last recent latest newest oldest modified",
        "long took take duration elapsed millis seconds minutes time",
        "status state phase condition succeed success successful fail failed failure error open closed "
        "conclusion outcome healthy health ready running active done complete completed pass passing "
        "alive live stopped run up down available availability provisioned pending suspended deleted "
        "green yellow red enabled disabled",
        "many count number total size length quantity num amount often frequency times",
        "name title label called named display subject headline",
        "say says said text body content message description comment note mention wording write wrote written "
        "answer answered reply",
        "where location region zone address country city host place located",
        "kind type category class sort",
        "version release tag revision",
        "link url href web page site see view visit clone",
        "big large size bytes memory disk storage store stored",
        "left remain remaining free available used usage utilization capacity",
        "contact email phone mail",
        "urgent priority severity important critical warning warn level",
        "commit sha hash revision",
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

# Short forms of names that are not the start of the word they stand for (``desc``, ``repo`` and
# ``addr`` are, and need no entry), and plurals no suffix rule undoes.
SHORT = {
    "qty": "quantity",
    "ts": "timestamp",
    "dt": "date",
    "tz": "timezone",
    "msg": "message",
    "img": "image",
    "pkg": "package",
    "txn": "transaction",
    "tx": "transaction",
    "acct": "account",
    "usr": "user",
    "pwd": "password",
    "idx": "index",
    "src": "source",
    "dst": "destination",
    "cfg": "configuration",
    "avg": "average",
    "pct": "percent",
    "amt": "amount",
    "cnt": "count",
    "sz": "size",
    "db": "database",
    "ns": "namespace",
    "lng": "longitude",
    "indices": "index",
    "children": "child",
    "people": "person",
    "criteria": "criterion",
    "analyses": "analysis",
}

EXACT = 1.0
PREFIX = 0.8
MEANING = 0.6
CONTAINER = 0.5  # a container's key counts half of the field's own
MATCH = 0.6  # a field matches the words from this score on
MAX_WANTED = 12  # the view lists at most this many matching fields
PER_WORD = 3  # and first the best this many of each word of the text
LABEL = 6  # a key the vocabulary scores this high (name, title, login) is its object's label
SMALL = 5  # an object the words name is listed whole when it holds at most this many fields
HANDLES = ("key", "number", "iid", "id")  # what a record is called by, when it has no name to show


def words(text: str) -> list[str]:
    """The lower-case words of a text or a key: ``financialStatus`` → financial, status; ``SKUs`` → sku."""
    return [word.lower() for word in _WORD.findall(_ACRONYM_PLURAL.sub(r"\1", text))]


_SHORTEST = {"s": 2, "ly": 5}  # what a suffix leaves at least: ids → id, recently → recent, not reply → rep
_DOUBLED = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")  # a doubled last consonant, l, s and z aside


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A light stem, enough to meet a key: ``titles`` → ``title``, ``created`` → ``creat``, ``qty`` →
    ``quantity`` (:data:`SHORT`)."""
    word = SHORT.get(word, word)
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("ly", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= _SHORTEST.get(suffix, 3):  # ids → id
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + replacement
            if suffix in ("ing", "ed") and _DOUBLED.search(word) and len(word) > 3:
                word = word[:-1]  # logged → log, running → run (not called, passed)
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


_STEMMED_MEANINGS: tuple[frozenset[str], ...] = tuple(frozenset(stem(word) for word in group) for group in MEANINGS)


_CONTRACTION = re.compile(r"n['’]t\b|['’](?:s|re|ll|d|ve|m)\b", re.IGNORECASE)  # "what's", "don't": no "s", "t"

# "from whom", "to which number": the sender and the recipient, fields named by the word itself.
DIRECTIONS = frozenset({"from", "to"})
ASKING = frozenset({"who", "whom", "which", "what", "where"})


def want_terms(text: str) -> tuple[str, ...]:
    """The stems of the words of ``text`` that can name a field (stopwords left out, but for "from" and
    "to" before a question word: "from whom to whom"), in order."""
    seen: dict[str, None] = {}
    said = words(_CONTRACTION.sub("", text))
    for word, after in zip(said, [*said[1:], ""], strict=True):
        if word not in STOPWORDS or (word in DIRECTIONS and after in ASKING):
            seen[stem(word)] = None
    return tuple(seen)


@lru_cache(maxsize=65536)
def _pair(term: str, word: str) -> float:
    if term == word:
        return EXACT
    if min(len(term), len(word)) >= 3 and (term.startswith(word) or word.startswith(term)):
        return PREFIX
    if _one_root(term, word):
        return PREFIX
    if any(term in group and word in group for group in _STEMMED_MEANINGS):
        return MEANING
    return 0.0


ROOT = 6  # two words that share this many first letters, and differ in at most two more, are one word


def _one_root(term: str, word: str) -> bool:
    """Two forms of one word that the stem leaves apart: ``collaborator`` and ``collaboration``,
    ``describ`` and ``description`` (their first six letters and all but two of the shorter)."""
    shorter = min(len(term), len(word))
    shared = next((i for i in range(shorter) if term[i] != word[i]), shorter)
    return shared >= ROOT and shared >= shorter - 2


@lru_cache(maxsize=8192)
def _stems(key: str) -> tuple[str, ...]:
    return tuple(stem(word) for word in words(key))


def _best(term: str, stems: Sequence[str]) -> float:
    return max((_pair(term, word) for word in stems), default=0.0)


def term_matches(term: str, keys: Sequence[str]) -> float:
    """How well one term matches one field (keys root first): its own key's words fully, its
    containers' words by half; its parent's fully when the field is its object's label (the ``name``
    of the ``owner`` that "who owns it" asks for)."""
    if not keys:
        return 0.0
    own = _best(term, _stems(keys[-1]))
    above = max((_best(term, _stems(key)) for key in keys[:-1]), default=0.0)
    parent = _best(term, _stems(keys[-2])) if len(keys) > 1 else 0.0
    label = vocabulary.BUSINESS.get(keys[-1], 0) >= LABEL
    return max(own, CONTAINER * above, parent if label else 0.0)


def want_score(terms: Sequence[str], keys: Sequence[str]) -> float:
    """The sum over ``terms`` of :func:`term_matches` (unweighted)."""
    return sum(term_matches(term, keys) for term in terms)


def _weights(matches: Mapping[str, Mapping[str, float]], fields: int) -> dict[str, float]:
    """Per term, how much it tells (as in tf-idf): one that matches every field (``build`` in a CI
    build) counts less than one that matches a few (``pass``, only ``status``)."""
    weights = {}
    for term, found in matches.items():
        count = sum(1 for value in found.values() if value >= MEANING)
        weights[term] = math.log(1 + fields / count) / math.log(1 + fields) if count and fields > 1 else 1.0
    return weights


def want_scores(structure: StructureOrTree, want: str) -> dict[str, float]:
    """The weighted score of every field of ``structure`` for ``want``, by path."""
    return _scored(structure, want)[0]


def _scored(
    structure: StructureOrTree, want: str
) -> tuple[dict[str, float], dict[str, dict[str, float]], dict[str, float]]:
    """(score by path, match by term and path, weight by term)."""
    tree = tree_of(structure)
    fields = [tree.nodes[index] for index in tree.fields]
    hinted = {node.path: _hint_stems(tree.structure[node.path].get("hint")) for node in fields}
    matches = {
        term: {node.path: max(term_matches(term, node.keys), _hint_match(term, hinted[node.path])) for node in fields}
        for term in want_terms(want)
    }
    weights = _weights(matches, len(fields))
    scores = {node.path: sum(weights[term] * found[node.path] for term, found in matches.items()) for node in fields}
    return scores, matches, weights


def _hint_stems(hint: Any) -> tuple[str, ...]:
    """The words of a field's value hint (structure/hints.py) a term may meet: the values it lists
    (``open|closed``), and "time" for an epoch time; never a number."""
    if not hint:
        return ()
    found = [stem(word) for word in words(str(hint)) if len(word) > 1 and not word.isdigit()]
    return tuple([stem("time"), *found] if str(hint).startswith("epoch ") else found)


def _hint_match(term: str, stems: Sequence[str]) -> float:
    """A term that meets a hint's word counts as one of the same meaning, never more: a value is not a name."""
    return min(_best(term, stems), MEANING) if stems else 0.0


def wanted_fields(structure: StructureOrTree, want: str, usual: Mapping[str, float] | None = None) -> list[str]:
    """The fields that match ``want``, at most :data:`MAX_WANTED`: first the best few of each word
    (so that every part of a question is answered), then the best over all; ties go to the usual
    score, then to the order listed."""
    tree = tree_of(structure)
    scores, matches, weights = _scored(tree, want)
    usual = usual or {}
    order = {path: position for position, path in enumerate(scores)}

    def rank(path: str, term: str | None = None) -> tuple[float, float, float, int]:
        own = matches[term][path] if term else 0.0
        return (-own, -scores[path], -usual.get(path, 0.0), order[path])

    chosen: dict[str, None] = {}
    for term in sorted(matches, key=lambda term: -weights[term]):
        found = sorted((path for path, value in matches[term].items() if value >= MEANING), key=lambda p: rank(p, term))
        for path in _each_kind_first(found, matches[term])[:PER_WORD]:
            chosen[path] = None
    matched = (path for path in scores if max((found[path] for found in matches.values()), default=0.0) >= MATCH)
    rest = sorted(matched, key=rank)
    for path in rest:
        chosen[path] = None
    best = list(chosen)[:MAX_WANTED]
    return best + [path for path in named_objects(tree, tuple(matches)) if path not in best]


def named_objects(structure: StructureOrTree, terms: Sequence[str]) -> list[str]:
    """The fields of each small object (at most :data:`SMALL` fields) whose own key one of ``terms``
    names (the same stem, one the start of the other, or one meaning: "how much" names ``price``):
    "which ports" asks for all of ``Ports[0]``, its type and address too, not only the ``PrivatePort``
    that says port."""
    tree = tree_of(structure)
    nodes = tree.nodes
    under: dict[int, list[str]] = {}
    for index in tree.fields:
        above = nodes[index].parent
        while above >= 0 and nodes[above].parent >= 0:  # the top object is never small enough to matter
            under.setdefault(above, []).append(nodes[index].path)
            above = nodes[above].parent
    found: dict[str, None] = {}
    for above, paths in under.items():
        key = nodes[above].keys[-1] if nodes[above].keys else ""
        if len(paths) <= SMALL and any(_best(term, _stems(key)) >= MEANING for term in terms):
            found.update(dict.fromkeys(paths))
    return list(found)


def _each_kind_first(ranked: Sequence[str], match: Mapping[str, float]) -> list[str]:
    """``ranked`` with the best of each kind of match (same word, prefix, same meaning) first: an API
    often names a thing by another word (``sha``, ``revision`` for "commit"), and the fields that
    say the word itself (``commits_url``) may all be about something else."""
    kinds: dict[float, str] = {}
    for path in ranked:
        kinds.setdefault(match[path], path)  # the best-ranked path of each kind
    return list(dict.fromkeys([*kinds.values(), *ranked]))


def record_handles(structure: StructureOrTree, paths: Sequence[str]) -> list[str]:
    """The handle (``key``, ``number``, ``iid`` or ``id``, in that order) of each record that holds one of
    ``paths``: "which issues are open" needs to say which, and a status alone does not."""
    tree = tree_of(structure)
    nodes, index_of = tree.nodes, tree.index_of
    handles: dict[int, tuple[int, str]] = {}  # record (list index, -1: the top object) -> (rank, path)
    for index in tree.fields:
        node = nodes[index]
        rank = HANDLES.index(node.keys[-1]) if node.keys and node.keys[-1] in HANDLES else -1
        top = node.list_owner < 0 and node.parent >= 0 and nodes[node.parent].parent < 0
        plain = "dict" not in str(tree.entry(index).get("type"))
        better = node.list_owner not in handles or rank < handles[node.list_owner][0]
        if rank >= 0 and (node.parent == node.list_owner or top) and plain and better:
            handles[node.list_owner] = (rank, node.path)
    owners = [nodes[index_of[path]].list_owner for path in paths if path in index_of]
    found = [handles[owner][1] for owner in owners if owner in handles]
    return list(dict.fromkeys(path for path in found if path not in paths))


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """With ``request.want``: the fields matching the words (:func:`wanted_fields`), the handles of
    their records (:func:`record_handles`), the models' choice (``choice.advice``: the LLM's, the
    embedding's) and ``request.extra`` listed first, then the choose step's view, whole (a smaller
    one lost 4 points of questions listed, see docs/want.md)."""
    if not request.want:
        return choice
    advice = set(choice.advice)
    extra = [*(tree.nodes[index].path for index in tree.fields if index in advice), *request.extra]
    wanted = wanted_fields(tree, request.want, {tree.nodes[index].path: choice.scores[index] for index in tree.fields})
    keep = {*wanted, *record_handles(tree, wanted), *extra, *(tree.nodes[index].path for index in choice.kept)}
    kept = complete_lists(tree, picked(tree, keep), choice.ranked)
    method = "llm" if choice.method == "llm" else "want"
    return choice._replace(kept=kept, wanted=tuple(wanted), method=method)


def choose_wanted(
    structure: StructureOrTree,
    want: str,
    *,
    signals: Mapping[str, FieldSignals] | None = None,
    extra: Sequence[str] = (),
    target: int = 40,
) -> tuple[FieldChoice, list[str]]:
    """The view for ``want``: ``(FieldChoice, the matching fields best first)``: the pipeline's steps
    but the LLM's (see :func:`step`); ``extra``: fields to list beside the matches (an LLM's choice)."""
    from pflow_structure.filtering import choose, hidden, score

    tree = tree_of(structure, signals)
    request = Request(target=target, want=want, extra=tuple(extra))
    choice = START
    for each in (score.step, choose.step, step, hidden.step):  # pipeline.STEPS without ask_llm
        choice = each(tree, choice, request)
    return field_choice(tree, choice), list(choice.wanted or ())
