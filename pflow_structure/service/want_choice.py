"""Which fields a ``want`` answer shows as values (issue 35): the fields the words name, each record's label.

- :func:`chosen_paths`: the best :data:`MAX_VALUES` fields of the words (:func:`by_word`), each list's rows
  led by their record's label and short handle (:func:`record_label`), a single record's label first.
- A word meets a field by its name (filtering/want.py) or by the few values the field takes
  (:func:`value_words`: "which are open" asks for the ``state`` that says ``open``, not a count named
  ``open_issues``): read from the value itself, a bounded sample of each list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

# Chosen on the tuned-on families only (benchmarks/want_eval.py --answers): more columns cost more in
# wrong values than they save in reads; a third column answers a third more questions in one call.
WORD_MATCH = 1.0  # a word's best field leads when it says the word itself (the same stem)
MAX_VALUES = 3  # the values show at most this many matched fields of lists (and each record's handle)
MAX_PLAIN = 4  # and at most this many outside any list, one line each


def is_value(entry: Mapping[str, Any], path: str = "") -> bool:
    """A field whose value reads as a cell: not an object, not a list, not below a dict of data keys
    (``[*]`` in a template path: its rows would have no one column)."""
    kinds = set(str(entry.get("type", "")).split("|"))
    return not kinds & {"dict", "list"} and "[*]" not in path


SAMPLE = 200  # the items of each list a field's values are read from
FEW = 6  # a field of at most this many distinct short strings names categories ("open", "closed")
WORD_CHARS = 24  # longer strings are text, not a category


def _leaves(value: Any, segments: Sequence[Any]) -> list[Any]:
    """The values at template segments (``0``: each item, the first :data:`SAMPLE` of each list)."""
    found: list[Any] = []
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        here, position = stack.pop()
        if position == len(segments):
            found.append(here)
            continue
        segment = segments[position]
        if segment == 0 and not isinstance(segment, bool) and isinstance(here, list):
            stack.extend((item, position + 1) for item in reversed(here[:SAMPLE]))
        elif isinstance(here, dict) and isinstance(segment, str) and segment in here:
            stack.append((here[segment], position + 1))
    return found


def _tag(path: str) -> bool:
    """Whether the field is a type tag (``object``, ``kind``, ``type``): noise to the filter's vocabulary."""
    from pflow_structure.filtering.tree import key_segments, normalise
    from pflow_structure.filtering.vocabulary import NOISE_NAMES

    keys = key_segments(path)
    return bool(keys) and (normalise(keys[-1]) in NOISE_NAMES or normalise(keys[-1]) == "type")


def value_words(
    outputs: Any, structure: Mapping[str, Mapping[str, Any]], paths: Sequence[str], *, stems: bool = True
) -> dict[str, set[str]]:
    """The word stems (``stems``; else the words as written, lower case) of the few values each of
    ``paths`` takes, for the fields that name categories: strings of at most :data:`WORD_CHARS`, at most
    :data:`FEW` distinct, and repeating across the items of a list (all different, they are names: a
    word that meets one is a record, not a field). One record's type tag (``"object": "charge"``) says
    what it is, not a state: left out."""
    from pflow_structure.filtering.want import stem, words
    from pflow_structure.paths import parse_path

    found: dict[str, set[str]] = {}
    for path in paths:
        segments = parse_path(path)
        if "str" not in str(structure[path].get("type")) or (segments and isinstance(segments[-1], int)):
            continue  # a list's items are tags (a quoted key, ``["os-ext"]``, is a field)
        values = _leaves(outputs, segments)
        strings = [value for value in values if isinstance(value, str)]
        distinct = set(strings)
        if not strings or len(distinct) > FEW or any(len(text) > WORD_CHARS for text in distinct):
            continue
        if len(strings) > 2 and len(distinct) == len(strings):
            continue
        if len(strings) == 1 and _tag(path):  # one record's type tag ("object": "charge") says what it is
            continue
        found[path] = {stem(word) if stems else word for text in distinct for word in words(text.lower())}
    return found


# "each issue", "which hosts": the word after these names the records, not a field of them.
QUANTIFIERS = frozenset({"each", "every", "which", "all", "per", "any"})


def record_nouns(want: str) -> set[str]:
    """The stems of the words that name the records a question is about (after :data:`QUANTIFIERS` or a
    count, past a superlative and the word "most" grades: "each issue", "top 20 issues", "3 most liked posts")."""
    from itertools import pairwise

    from pflow_structure.filtering.want import STOPWORDS, stem, words

    said = [word.lower() for word in words(want)]
    said = [word for before, word in pairwise(["", *said]) if word not in SUPERLATIVES and before not in GRADING]
    return {
        stem(word)
        for before, word in pairwise(said)
        if (before in QUANTIFIERS or before.isdigit()) and word not in STOPWORDS and not word.isdigit()
    }


def _whole_key(term: str, keys: Sequence[str]) -> bool:
    """Whether ``term`` is a field's whole key (``version``), or its object's whole key when the field
    is that object's label (``owner.name``): a record noun names nothing smaller (not ``open_issues``)."""
    from pflow_structure.filtering.want import stem, words

    def whole(key: str) -> bool:
        return [stem(word) for word in words(key)] == [term]

    return bool(keys) and (whole(keys[-1]) or (len(keys) > 1 and whole(keys[-2]) and keys[-1] in SELF_LABELS))


FEW_MEANT = 2  # a word leads with its best field by meaning only when at most this many fields mean it

# A question word that asks for the answer itself: its best field by meaning leads ("why did the customer
# dispute": ``reason``, not ``customer_name``), where another word leads only with a field it names. "who"
# and "when" are left out: many fields mean a person or a time, and leading with one cost tokens on the
# tuned-on families (benchmarks/want_eval.py --answers).
ASKS = frozenset({"why"})


def by_word(
    structure: Mapping[str, Mapping[str, Any]], wanted: Sequence[str], want: str, outputs: Any = None
) -> list[str]:
    """``wanted`` fields that hold values, led by the field each word names itself (or names among the
    few values it takes, :func:`value_words`), in the order the words come (people name what they want
    first: "title and state of each issue"); of two fields a word names alike, the one nearer its
    record (``title`` before ``milestone.title``)."""
    from pflow_structure.filtering import fields_of
    from pflow_structure.filtering.tree import key_segments
    from pflow_structure.filtering.want import MEANING, term_matches, want_terms

    values = [path for path in wanted if path in structure and is_value(structure[path], path)]
    pool = [path for path in fields_of(structure) if is_value(structure[path], path)]
    keys = {path: key_segments(path) for path in pool}
    said = value_words(outputs, structure, pool) if outputs is not None else {}
    rank = {path: position for position, path in enumerate(values)}
    nouns = record_nouns(want)

    def score(path: str, term: str) -> float:
        if term in nouns and not _whole_key(term, keys[path]):
            return 0.0
        return max(term_matches(term, keys[path]), WORD_MATCH if term in said.get(path, ()) else 0.0)

    first: list[str] = []
    named: set[str] = set()  # the words some field answers to by name
    for term in want_terms(want):
        # Of two fields the word names alike, the one nearer its record, then the one it names whole
        # (``email`` before ``secondEmail``).
        scored = [
            (score(path, term), -len(keys[path]), _whole_key(term, keys[path]), -rank.get(path, len(rank)), path)
            for path in pool
        ]
        best = max(scored, default=(0.0, 0, False, 0, ""))
        if best[0] >= WORD_MATCH:
            named.add(term)
        if best[0] >= (MEANING if term in ASKS else WORD_MATCH) and best[-1] not in first:
            first.append(best[-1])
    # Then each other word's best field by meaning ("how long": ``duration``; "cost": ``price``), the one the
    # filter ranked higher first among equals: one field a word, before fields that meet several words weakly.
    others = [term for term in want_terms(want) if term not in nouns]
    meets = {path: [score(path, term) for term in others] for path in values}
    for term in others:
        if term in named:
            continue
        scored_m = [
            (score(path, term), -len(keys[path]), -rank.get(path, len(rank)), path)
            for path in values
            if path not in first
        ]
        meant = [entry for entry in scored_m if entry[0] >= MEANING]
        if 0 < len(meant) <= FEW_MEANT:
            first.append(max(meant)[-1])
    # A field only a record noun matches ("issue" in ``milestone.open_issues``) comes after the others;
    # the rest by how many of the other words they meet ("who opened": ``user.login`` meets both).
    by_others = sorted(
        (path for path in values if max(meets[path], default=0.0) >= MEANING), key=lambda p: -sum(meets[p])
    )
    return list(dict.fromkeys([*first, *by_others, *values]))


# What a record is called by people (its label), best first: a row reads "fix login", not "4711".
SELF_LABELS = ("title", "name", "full_name", "display_name", "summary", "subject", "hostname", "label", "headline")
HANDLES = ("number", "key", "iid", "id")  # what it is called by when it has no label
# Keys that make an object another entity (``user``, ``project``): its name is not the record's label.
REFERENCES = frozenset({"id", "uuid", "key", "login", "account_id", "username", "email", "self"})


def _children(structure: Mapping[str, Mapping[str, Any]]) -> dict[tuple[Any, ...], dict[str, str]]:
    """Each object's template segments -> {its normalised key: the child's template path}."""
    from pflow_structure.filtering.tree import normalise
    from pflow_structure.paths import parse_path

    found: dict[tuple[Any, ...], dict[str, str]] = {}
    for path in structure:
        segments = tuple(parse_path(path))
        if segments and isinstance(segments[-1], str):
            found.setdefault(segments[:-1], {}).setdefault(normalise(segments[-1]), path)
    return found


def record_label(
    structure: Mapping[str, Mapping[str, Any]],
    owner: tuple[Any, ...],
    children: Mapping[tuple[Any, ...], Mapping[str, str]],
    *,
    handles: bool = True,
) -> str | None:
    """The label of the record at ``owner`` (template segments: ``("result", 0)``): its own
    :data:`SELF_LABELS` field, else one of a part of it (an object with no key of another entity:
    ``profile.name``, ``attributes.title``, ``Spec.Name``; any object of a record that is only a
    wrapper, ``data.title``), else (``handles``) its number, key or id."""
    from pflow_structure.paths import parse_path

    own = children.get(owner, {})

    def text(path: str | None) -> bool:
        return path is not None and is_value(structure[path], path) and "str" in str(structure[path].get("type"))

    def best(keys: Mapping[str, str], names: Sequence[str]) -> str | None:
        return next((keys[name] for name in names if text(keys.get(name))), None)

    found = best(own, SELF_LABELS)
    if found:
        return found
    plain = [path for path in own.values() if is_value(structure[path], path)]
    parts = [
        children.get(tuple(parse_path(path)), {}) for path in own.values() if "dict" in str(structure[path].get("type"))
    ]
    nested = [keys for keys in parts if len(plain) <= 2 or not REFERENCES & set(keys)]
    for name in SELF_LABELS:
        found = next((keys[name] for keys in nested if text(keys.get(name))), None)
        if found:
            return found
    if handles:
        return next((own[name] for name in HANDLES if name in own and is_value(structure[own[name]])), None)
    return None


SHORT_HANDLE = 12  # a number, key or id at most this long on average leads its row beside the label


def _short_handle(structure: Mapping[str, Mapping[str, Any]], own: Mapping[str, str]) -> str | None:
    """A record's number, key or id when it is short (``4711``, ``PROJ-12``): what the agent acts on."""
    for name in HANDLES:
        path = own.get(name)
        if path is None or not is_value(structure[path]):
            continue
        entry = structure[path]
        kinds = str(entry.get("type"))
        if "int" in kinds or ("str" in kinds and float(entry.get("avg_length", 99)) <= SHORT_HANDLE):
            return path
        return None
    return None


def _fitting(ranked: Sequence[str]) -> list[str]:
    """The best :data:`MAX_VALUES` columns of lists and the best :data:`MAX_PLAIN` fields outside any list
    (one line each, where a column is a line per row), in ``ranked``'s order."""
    columns = [path for path in ranked if "[0]" in path][:MAX_VALUES]
    plain = [path for path in ranked if "[0]" not in path][:MAX_PLAIN]
    return [path for path in ranked if path in columns or path in plain]


def chosen_paths(
    structure: Mapping[str, Mapping[str, Any]], wanted: Sequence[str], want: str = "", outputs: Any = None
) -> list[str]:
    """The fields whose values a want answer shows: the best :data:`MAX_VALUES` of ``wanted`` that hold
    values (:func:`by_word`), each list's rows led by their record's label (:func:`record_label`),
    and a single record's label before its fields."""
    from pflow_structure.paths import parse_path

    best = _fitting(by_word(structure, wanted, want, outputs))
    children = _children(structure)
    labels: list[str] = []
    for path in best:
        segments = tuple(parse_path(path))
        cut = next((i for i, segment in enumerate(segments) if segment == 0 and not isinstance(segment, bool)), -1)
        owner = segments[: cut + 1] if cut >= 0 else segments[:1]
        label = record_label(structure, owner, children, handles=cut >= 0)
        if label is not None:
            labels.append(label)
        handle = _short_handle(structure, children.get(owner, {}))
        if handle is not None:
            labels.insert(len(labels) - (label is not None), handle)
    return list(dict.fromkeys([*labels, *best]))


# "the highest-scoring post", "the newest release": a superlative asks for the rows ranked, not all of them.
HIGHEST = frozenset({"highest", "most", "top", "largest", "biggest", "greatest", "best"})  # not "max": max_size
LOWEST = frozenset({"lowest", "least", "smallest", "fewest", "cheapest", "shortest"})
NEWEST = frozenset({"latest", "newest"})  # not "recently": "what did they do recently" lists them all
OLDEST = frozenset({"oldest", "earliest"})
SUPERLATIVES = HIGHEST | LOWEST | NEWEST | OLDEST
GRADING = frozenset({"most", "least"})  # a superlative of the next word: "most commented", "least recent"
COUNTING = frozenset({"first", "last", "next", "limit", "max", "maximum"})  # a count follows: "newest, first 10"
MAX_COUNT = 10_000  # the most rows a count beside the superlative asks for (the budget shows what fits)
TIME_SPANS = frozenset({"second", "minut", "hour", "day", "week", "month", "year"})  # stems: "30 days" is no count


class Order(NamedTuple):
    """Rows ranked by one column (a template path), highest first unless ``descending`` is false."""

    path: str
    descending: bool
    rows: int = 5  # "the highest": a few; "top 10", "the 3 largest": as many as it says


def _timelike(path: str, entry: Mapping[str, Any]) -> bool:
    from pflow_structure.filtering.tree import key_segments, normalise
    from pflow_structure.filtering.vocabulary import TIME_NAMES, TIME_SUFFIXES

    keys = key_segments(path)
    name = normalise(keys[-1]) if keys else ""
    return name.endswith(TIME_SUFFIXES) or name in TIME_NAMES or str(entry.get("hint", "")).startswith("epoch")


def _numeric(entry: Mapping[str, Any]) -> bool:
    kinds = set(str(entry.get("type", "")).split("|")) - {"null"}
    return bool(kinds) and kinds <= {"int", "float"}


def _names_one(said: Sequence[str], i: int) -> bool:
    """Whether the number at ``i`` names a thing, not a count of rows: after a singular noun, ending the phrase
    ("in milestone 3", "on issue 42 with"; counts: "list 3 issues", "issues, 6 of them", "first 10")."""
    from pflow_structure.filtering.want import STOPWORDS

    before, after = (said[i - 1] if i else "0"), (said[i + 1] if i + 1 < len(said) else "")
    plain = STOPWORDS | QUANTIFIERS | SUPERLATIVES | COUNTING
    plural = before.endswith("s") and not before.endswith(("ss", "us", "is"))
    return before not in plain and not before.isdigit() and not plural and (not after or after in plain)


def sort_order(structure: Mapping[str, Mapping[str, Any]], shown: Sequence[str], want: str) -> Order | None:
    """The column a superlative of ``want`` ranks the rows by, among the ``shown`` columns of a list: a
    number the word after it names ("highest-scoring": ``score``), else the first number shown; for
    "newest", "oldest" the first time shown. None without a superlative ("at most 2" is none) or such a column."""
    from pflow_structure.filtering.tree import key_segments
    from pflow_structure.filtering.want import stem, term_matches, words

    said = [word.lower() for word in words(want)]
    found = next(((i, w) for i, w in enumerate(said) if w in SUPERLATIVES and said[i - 1 : i] != ["at"]), None)
    if found is None:
        return None
    position, word = found
    if word in {"most", "least"} and said[position + 1 : position + 2] == ["recent"]:  # "the most recent": newest
        word = "latest" if word == "most" else "earliest"
    # "top 20", "which 20 issues have the most", "most recent 20": the count nearest ("last 30 days": a time)
    spans = [stem(w) for w in said[1:]] + [""]
    counts = sorted(
        (abs(i - position), int(w))
        for i, w in enumerate(said)
        if w.isdigit()
        and 0 < int(w) <= (MAX_COUNT if abs(i - position) == 1 else 100)
        and spans[i] not in TIME_SPANS
        and (abs(i - position) == 1 or i == position + 2 or not _names_one(said, i))
    )  # past 100 only beside the superlative ("top 1000"): elsewhere a larger number is a year or an id
    rows = counts[0][1] if counts else Order._field_defaults["rows"]
    columns = [path for path in shown if "[0]" in path and path in structure]
    if word in NEWEST | OLDEST:  # the first time shown; a time of the record's own before a nested one's
        times = [path for path in columns if _timelike(path, structure[path])]
        if not times:
            return None
        item = times[0][: times[0].index("[0]") + 3]
        own = [path for path in structure if path.startswith(item) and _timelike(path, structure[path])]
        times = sorted([*times, *(path for path in own if path not in times)], key=lambda p: len(key_segments(p)))
        return Order(times[0], word in NEWEST, rows)
    numbers = [path for path in columns if _numeric(structure[path])]
    # the words that name the column, first to last: those after "by" when it follows ("top 20 issues by
    # comments"), then the next two ("the most commented issues opened by octocat": not a column)
    rest = said[position + 1 :]
    by = rest[rest.index("by") + 1 :] if "by" in rest else []
    after = [stem(w) for w in by if not w.isdigit()][:2] + [stem(w) for w in rest if not w.isdigit()][:2]

    nouns = record_nouns(want)

    def names(path: str, term: str) -> bool:  # a word that names the records names only a whole key
        keys = key_segments(path)
        return term_matches(term, keys) >= WORD_MATCH and (term not in nouns or _whole_key(term, keys))

    for term in after:
        named = [path for path in numbers if names(path, term)]
        # "the most starred": a number of the records the word names, shown or not (it joins the columns)
        unshown = [path for path in structure if "[0]" in path and _numeric(structure[path]) and names(path, term)]
        chosen = (named or sorted(unshown, key=lambda path: path.count(".")))[:1]
        if chosen:
            return Order(chosen[0], word in HIGHEST, rows)
    return Order(numbers[0], word in HIGHEST, rows) if numbers else None


class Where(NamedTuple):
    """Rows picked by one column's values (a template path): those whose value holds one of ``words``
    as written ("which one is pending": ``status`` is ``pending``; not "opened" for ``open``)."""

    path: str
    words: frozenset[str]


# "not pending", "other than open", "didn't fail", "non-pending": a question that excludes a value asks for
# the other rows, and picking the rows that hold it would answer the opposite.
NEGATION = re.compile(r"\b(?:not|no|non|never|except|without|other\s+than|besides)\b|n['’]t\b", re.IGNORECASE)


def row_filter(
    outputs: Any, structure: Mapping[str, Mapping[str, Any]], shown: Sequence[str], want: str
) -> Where | None:
    """The first column of a list among ``shown`` whose few values hold a word of ``want`` as written
    (or its plural), and those words; None when no such column, when the want asks for each or all, or
    when it negates (:data:`NEGATION`). A column inside a list of the item (``labels[*].name``) picks
    nothing: an item holds several of its values."""
    from pflow_structure.filtering.want import STOPWORDS, words

    every = words(want.lower())
    said = [word for word in every if word not in STOPWORDS]
    if {"each", "every", "all"} & set(every) or NEGATION.search(want):
        return None  # "on which node does each task run": every row
    columns = [path for path in shown if path.count("[0]") == 1 and path in structure]
    values = value_words(outputs, structure, columns, stems=False)
    for path in columns:
        found = {word for word in said if _written(word, values.get(path, set()))}
        if found:
            return Where(path, frozenset(found))
    return None


def _written(word: str, among: set[str] | frozenset[str]) -> bool:
    """Whether ``word`` is among ``among`` as written, or as its plural or singular (``tickets``)."""
    return word in among or f"{word}s" in among or (word.endswith("s") and word[:-1] in among)


def holds(value: Any, words_: frozenset[str]) -> bool:
    """Whether a cell holds one of ``words_`` (``LOCKED_OUT`` holds "locked"), not after "not", "no" or
    "non" within it (``Not started`` does not hold "started")."""
    from pflow_structure.filtering.want import words

    if not isinstance(value, str):
        return False
    cell = words(value.lower())
    return any(
        _written(word, words_) and (index == 0 or cell[index - 1] not in {"not", "no", "non"})
        for index, word in enumerate(cell)
    )
