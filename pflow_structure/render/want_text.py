"""A ``want`` answer as text, and its map: what the values did not show, in about 100 tokens.

::

    exec-1763463202-0cd0c8fe: matching values (columns are paths):
    result[*] (100 items): number, user.login
      101,alice
    Rest: result list, 100 items, each 58 more fields; your words also match: result[*].assignee, .closed_by
    Full structure: pflow-structure structure exec-1763463202-0cd0c8fe

The map names the top-level containers with their counts and how many fields they hold beyond
the values shown, and lists by name every other field the words matched: a count alone would
hide the one the agent needs (issue 35).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.render.want_values import CallText, value_lines

MAX_CONTAINERS = 3  # the map names at most this many containers (about 100 tokens in all)
MAX_NAMED = 40  # and at most this many matching fields by name (a bound: a question names about 12)
MAP_TOKENS = 100  # and, given a counter, as many as keep the map within this many tokens
MAP_SHARE = 5  # and within this share of a smaller answer budget (1/5 of 300 tokens: 60)


class WantMap(NamedTuple):
    """The map's text and the structure entries it names (the answer dict's ``structure``)."""

    text: str
    structure: dict[str, dict[str, Any]]


def _inside(path: str, container: str) -> bool:
    return path.startswith(container) and path[len(container) : len(container) + 1] in (".", "[")


def _containers(structure: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The outputs' containers a reader starts from: each output key, and a dict output's own containers."""
    found: list[str] = []
    for path, entry in structure.items():
        kinds = set(str(entry.get("type", "")).split("|"))
        if not kinds & {"list", "dict"} or "[" in path:
            continue
        depth = path.count(".")
        top = depth == 0
        under_dict = depth == 1 and "dict" in str(structure.get(path.rsplit(".", 1)[0], {}).get("type", ""))
        if top or under_dict:
            found.append(path)
    return found


def _own_fields(container: str, fields: Sequence[str], containers: Sequence[str]) -> bool:
    """Whether ``container`` holds a field that none of its inner containers holds."""
    inner = [c for c in containers if c != container and _inside(c, container)]
    return any(_inside(f, container) and not any(_inside(f, c) for c in inner) for f in fields)


def _describe(path: str, entry: Mapping[str, Any], others: int, inner: bool) -> str:
    kind = "list" if "list" in str(entry.get("type")) else "dict"
    size = f", {entry['length']} items" if kind == "list" and "length" in entry else ""
    fields = f"{others} more field{'s' if others != 1 else ''}"
    return f"{path} {kind}{size}, {'each ' if kind == 'list' else ''}{fields}" if inner else f"{path} {kind}{size}"


def want_map(
    structure: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str],
    shown: Sequence[str],
    matched: Sequence[str],
    count: Callable[[str], int] | None = None,
    tokens: int = MAP_TOKENS,
) -> WantMap:
    """The map of ``structure`` (the whole one) beside the values ``shown`` (template paths): its
    containers, how many of ``fields`` each holds beyond those, and ``matched`` (fields the words
    matched, not shown) by name, as many as keep it within ``tokens`` (given a counter)."""
    containers = _containers(structure)
    rest = [field for field in fields if field not in shown]
    innermost = {c for c in containers if not any(o != c and _inside(o, c) for o in containers)}
    parts = []
    named: dict[str, dict[str, Any]] = {}
    # A container that holds another says nothing the inner one does not (``result dict``), unless
    # it has fields of its own beside it.
    telling = [
        c
        for c in containers
        if (c in innermost and any(_inside(field, c) for field in rest)) or _own_fields(c, rest, containers)
    ]  # an innermost container with nothing more to read is not worth naming
    for container in telling[:MAX_CONTAINERS]:
        others = sum(1 for field in rest if _inside(field, container))
        if container not in innermost and "list" not in str(structure[container].get("type")) and len(telling) > 1:
            continue  # "result dict" beside its inner containers says nothing they do not
        parts.append(_describe(container, structure[container], others, container in innermost))
        named[container] = dict(structure[container])
    left = len(telling) - MAX_CONTAINERS
    if left > 0:
        parts.append(f"+{left} more containers")
    text = "Rest: " + ("; ".join(parts) if parts else f"{len(rest)} more fields") if parts or rest else ""
    words = [path for path in matched if path not in shown][:MAX_NAMED]
    if words and count is not None:  # as many names as keep the map within its tokens: none when none fits
        room = tokens - count(text + "; your words also match: ")
        fits = [n for n in range(1, len(words) + 1) if count(_names(words[:n])) <= room]
        words = words[: max(fits, default=0)]
    if words:
        text = (f"{text}; " if text else "Rest: ") + "your words also match: " + _names(words)
        named.update({path: dict(structure[path]) for path in words if path in structure})
    return WantMap(text, named)


def _names(paths: Sequence[str]) -> str:
    """Paths as read paths, each written after the list item it shares with the one before
    (``result[*].payload.ref, .payload.push_id``)."""
    from pflow_structure.paths import parse_path
    from pflow_structure.render.want_values import read_path

    written: list[str] = []
    before = ""
    for path in paths:
        text = read_path(parse_path(path))
        owner = text[: text.rfind("[*]") + 3] if "[*]" in text else ""
        written.append(text[len(owner) :] if owner and owner == before else text)
        before = owner
    return ", ".join(written)


def want_answer_text(answer: Mapping[str, Any], call: CallText, structure_call: str) -> str:
    """The text of a want answer dict (:func:`pflow_structure.service.want_answer.want_answer`)."""
    values = answer.get("values") or {}
    if values:
        lines = [f"{answer['execution_id']}: matching values (columns are paths):"]
        from pflow_structure.render.tokens import count_tokens

        lines.extend(value_lines(values, answer.get("_more") or {}, call, count_tokens, answer.get("alike")))
    elif answer.get("wanted"):  # matches that hold no single value (objects, lists): named in the map
        lines = [f"{answer['execution_id']}: your words match the fields named below; read-fields reads them."]
    else:
        want = json.dumps(" ".join(str(answer.get("want", "")).split())[:120], ensure_ascii=False)
        lines = [f"{answer['execution_id']}: no field name matches {want}."]
    lines.append(answer.get("map", ""))
    lines.extend(f"Warning: {warning}" for warning in answer.get("warnings", []))
    lines.append(f"Full structure: {structure_call}")
    return "\n".join(line for line in lines if line)
