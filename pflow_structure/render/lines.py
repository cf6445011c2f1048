"""One line per entity, with a formatter per kind of operation (seed 004, R4).

    Found 2 entities for "Graphiti":
    1. Graphiti [Framework] - Knowledge graph framework with temporal context
    2. FalkorDB [Database] - Graph database backend for Graphiti

These formats are summaries, not encodings: they keep names, types, summaries and relation
types (what seed 004 says must survive) and shorten what it says may go: long ids to their
last 8 characters, timestamps to ``2h ago``, metadata left out. The registry maps an
operation name to its formatter; anything else gets :func:`format_entities`, one line per
dict with its identifying fields.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.errors import NotRepresentable


class LineContext(NamedTuple):
    """What a formatter may use besides the value: the operation, the query, the current time."""

    operation: str
    query: str | None
    now: dt.datetime


LineFormatter = Callable[[Any, LineContext], str]

NAME_KEYS = ("name", "title", "full_name", "login", "label", "key", "path", "filename", "subject")
TYPE_KEYS = ("entityType", "entity_type", "type", "kind", "category")
STATE_KEYS = ("state", "status")
ID_KEYS = ("uuid", "id", "number", "node_id", "sha")
TIME_KEYS = ("updated_at", "created_at", "valid_at", "timestamp", "date", "created", "updated", "time")
SUMMARY_KEYS = ("summary", "description", "fact", "observations", "source_description", "content", "body", "text")
SUMMARY_CHARS = 120
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?")


def render_lines(
    value: Any, operation: str | None = None, *, query: str | None = None, now: dt.datetime | None = None
) -> str:
    """``value`` in the line format registered for ``operation`` (the generic one when none is).

    ``now`` makes relative times such as ``2h ago`` deterministic (default: the current time).

    >>> render_lines([{"name": "Ada", "type": "person"}])
    '- Ada [person]'
    """
    context = LineContext(operation or "", query, now or dt.datetime.now(dt.timezone.utc))
    return formatter_for(operation)(value, context)


def formatter_for(operation: str | None) -> LineFormatter:
    """The formatter registered for ``operation``; ``delete_*`` are mutations; else the generic one."""
    if operation in FORMATTERS:
        return FORMATTERS[operation]
    if operation and operation.startswith(("delete_", "add_", "create_", "update_", "remove_")):
        return format_mutation
    return format_entities


def register_formatter(operation: str, formatter: LineFormatter) -> None:
    """Use ``formatter`` for ``operation`` from now on (replacing any earlier one)."""
    FORMATTERS[operation] = formatter


# -- shared pieces ---------------------------------------------------------------------------


def short_id(value: Any) -> str:
    """Ids longer than 12 characters shortened to ``...`` and their last 8 (seed 004)."""
    text = _text(value)
    return f"...{text[-8:]}" if len(text) > 12 else text


def relative_time(value: Any, now: dt.datetime) -> str | None:
    """``2h ago``, ``3d ago``, ``in 5m``; None when ``value`` is not an ISO 8601 timestamp."""
    moment = parse_timestamp(value)
    if moment is None:
        return None
    seconds = (now if now.tzinfo else now.replace(tzinfo=dt.timezone.utc)).timestamp() - moment.timestamp()
    span = abs(seconds)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if span >= size:
            amount = f"{int(span // size)}{unit}"
            break
    else:
        return "just now"
    return f"{amount} ago" if seconds >= 0 else f"in {amount}"


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An aware datetime from an ISO 8601 string (``Z``, offsets, any fraction; naive taken as UTC)."""
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value.strip()):
        return None
    text = value.strip().replace("Z", "+00:00")
    text = re.sub(r"\.(\d+)", lambda m: "." + (m[1] + "000000")[:6], text)  # Python 3.10 takes 6 digits only
    text = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", text)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _first(item: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        value = item.get(key)
        if value not in (None, "", [], {}):
            return value
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, list):
        text = "; ".join(_text(v) for v in value)
    elif value is None or isinstance(value, bool):
        text = {None: "null", True: "true", False: "false"}[value]
    else:
        text = str(value)
    return " ".join(text.split())  # one line: newlines and runs of spaces become one space


def _summary(item: Mapping[str, Any], limit: int | None = SUMMARY_CHARS) -> str:
    text = _text(_first(item, SUMMARY_KEYS) or "")
    return text if limit is None or len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _type(item: Mapping[str, Any]) -> str:
    kind = _first(item, TYPE_KEYS)
    if kind is None and isinstance(item.get("labels"), list):
        labels = [label for label in item["labels"] if label != "Entity"]
        kind = labels[0] if labels else None
    return _text(kind) if kind is not None else ""


def _items(value: Any, keys: Sequence[str]) -> list[Any]:
    """The list inside an answer: the value itself, or the first of ``keys`` holding a list."""
    if isinstance(value, list):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), list):
                return list(value[key])
    raise NotRepresentable(f"expected a list or a dict with one of {', '.join(keys)}")


def _for(query: str | None) -> str:
    return f' for "{query}"' if query else ""


# -- per-operation formatters ----------------------------------------------------------------


def format_search_results(value: Any, context: LineContext) -> str:
    """``Found N entities for "q":`` and numbered ``name [type] - summary`` lines; relations after."""
    entities = _items(value, ("entities", "nodes", "results", "items"))
    lines = [f"Found {len(entities)} {'entity' if len(entities) == 1 else 'entities'}{_for(context.query)}:"]
    for number, entity in enumerate(entities, 1):
        lines.append(f"{number}. {_entity_text(entity)}")
    relations = value.get("relations") if isinstance(value, Mapping) else None
    if isinstance(relations, list):
        lines.append(f"Relations ({len(relations)}):")
        lines += [f"{number}. {_relation_text(r)}" for number, r in enumerate(relations, 1)]
    return "\n".join(lines)


def _entity_text(entity: Any) -> str:
    if not isinstance(entity, Mapping):
        return _text(entity)
    name = _text(_first(entity, NAME_KEYS) or short_id(_first(entity, ID_KEYS) or "?"))
    kind, summary = _type(entity), _summary(entity, None)
    return name + (f" [{kind}]" if kind else "") + (f" - {summary}" if summary else "")


def format_relationships(value: Any, context: LineContext) -> str:
    """``Found N relationships for "q":`` and ``A --relation--> B (confidence: 0.95)`` lines."""
    relations = _items(value, ("facts", "relations", "edges", "relationships", "results"))
    noun = "relationship" if len(relations) == 1 else "relationships"
    lines = [f"Found {len(relations)} {noun}{_for(context.query)}:"]
    lines += [f"{number}. {_relation_text(r)}" for number, r in enumerate(relations, 1)]
    return "\n".join(lines)


def _relation_text(relation: Any) -> str:
    if not isinstance(relation, Mapping):
        return _text(relation)
    source = _first(relation, ("from", "source", "source_name", "source_node_name", "subject"))
    target = _first(relation, ("to", "target", "target_name", "target_node_name", "object"))
    kind = _first(relation, ("relationType", "relation_type", "relation", "name", "type"))
    text = f"{_text(source or '?')} --{_text(kind or 'related')}--> {_text(target or '?')}"
    confidence = _first(relation, ("confidence", "score", "weight"))
    if isinstance(confidence, (int, float)) and not isinstance(confidence, bool):
        text += f" (confidence: {confidence:g})"
    fact = relation.get("fact")
    return text + (f" - {_text(fact)}" if isinstance(fact, str) and fact else "")


def format_episodes(value: Any, context: LineContext) -> str:
    """``Recent episodes (N):`` and ``- [2h ago] Name - description`` lines."""
    episodes = _items(value, ("episodes", "results", "items"))
    lines = [f"Recent episodes ({len(episodes)}):"]
    for episode in episodes:
        if not isinstance(episode, Mapping):
            lines.append(f"- {_text(episode)}")
            continue
        when = relative_time(_first(episode, TIME_KEYS), context.now)
        name = _text(_first(episode, NAME_KEYS) or short_id(_first(episode, ID_KEYS) or "?"))
        summary = _summary(episode)
        lines.append("- " + (f"[{when}] " if when else "") + name + (f" - {summary}" if summary else ""))
    return "\n".join(lines)


def format_status(value: Any, context: LineContext) -> str:
    """``Knowledge Graph Status: HEALTHY``, the message, then ``Key: value | Key: value``.

    Field names as the seed's server sends them read as the seed prints them: ``entity_count``
    becomes ``Entities``, ``last_updated`` ``Last update``; timestamps become ``5m ago``.
    """
    if not isinstance(value, Mapping):
        raise NotRepresentable("a status is a dict")
    status = value.get("status")
    subject = _text(value.get("name") or "Knowledge Graph")
    lines = [f"{subject} Status: {_text(status).upper()}"] if status is not None else []
    message = value.get("message")
    if isinstance(message, str) and message:
        lines.append(_text(message))
    pairs = []
    for key, item in value.items():
        if key in ("status", "name") or (key == "message" and isinstance(item, str) and item):
            continue
        shown = relative_time(item, context.now) or _text(item)
        pairs.append(f"{_status_label(str(key))}: {shown}")
    if pairs:
        lines.append(" | ".join(pairs))
    return "\n".join(lines)


_STATUS_LABELS = {"last_updated": "Last update", "lastUpdated": "Last update", "updated_at": "Last update"}
_COUNT_KEY = re.compile(r"^(.+?)(?:_count|Count|_total)$")


def _status_label(key: str) -> str:
    """``entity_count`` -> ``Entities``; ``last_updated`` -> ``Last update``; else :func:`_label`."""
    if key in _STATUS_LABELS:
        return _STATUS_LABELS[key]
    counted = _COUNT_KEY.match(key)
    if counted:
        words = _label(counted.group(1)).split(" ")
        return " ".join([*words[:-1], _plural(words[-1])])
    return _label(key)


def _plural(word: str) -> str:
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if re.search(r"(?:s|x|z|ch|sh)$", word):
        return word + "es"
    return word + "s"


def _label(key: str) -> str:
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else key


_MUTATIONS: Mapping[str, tuple[str, str]] = {
    "add_memory": ("Episode", "added"),
    "add_episode": ("Episode", "added"),
    "delete_episode": ("Episode", "deleted"),
    "delete_entity_edge": ("Entity edge", "deleted"),
    "clear_graph": ("Graph", "cleared"),
}


def format_mutation(value: Any, context: LineContext) -> str:
    """One confirmation line: ``✓ Episode added: "New Learning" (id: ...a1b2c3d4)``; ``✗`` on failure."""
    item = value if isinstance(value, Mapping) else {"message": value}
    kind, action = _MUTATIONS.get(context.operation, ("", ""))
    kind = _text(item.get("kind") or kind or _label(context.operation.split("_", 1)[-1]) or "Item")
    action = _text(item.get("action") or action or "done")
    failed = item.get("success") is False or item.get("error") not in (None, "", False)
    line = f"{'✗' if failed else '✓'} {kind} {'not ' if failed else ''}{action}"
    name = _first(item, NAME_KEYS)
    if name is not None:
        line += f': "{_text(name)}"'
    ident = _first(item, ID_KEYS)
    if ident is not None:
        line += f" (id: {short_id(ident)})"
    detail = item.get("error") if failed else None
    return line + (f" - {_text(detail)}" if detail else "")


def format_entities(value: Any, context: LineContext) -> str:
    """One line per item: ``- name [type] (state) - summary (id: ...a1b2c3d4, 2h ago)``."""
    items = _items(value, ("entities", "nodes", "items", "results", "data", "records"))
    return "\n".join(f"- {entity_line(item, context.now)}" for item in items)


def entity_line(item: Any, now: dt.datetime) -> str:
    """The identifying fields of one dict on one line (any other value as its text)."""
    if not isinstance(item, Mapping):
        return _text(item)
    ident = _first(item, ID_KEYS)
    name = _first(item, NAME_KEYS)
    line = _text(name) if name is not None else (short_id(ident) if ident is not None else "?")
    kind, state, summary = _type(item), _first(item, STATE_KEYS), _summary(item)
    line += (f" [{kind}]" if kind else "") + (f" ({_text(state)})" if state is not None else "")
    line += f" - {summary}" if summary else ""
    extras = [f"id: {short_id(ident)}"] if ident is not None and name is not None else []
    when = relative_time(_first(item, TIME_KEYS), now)
    extras += [when] if when else []
    return line + (f" ({', '.join(extras)})" if extras else "")


FORMATTERS: dict[str, LineFormatter] = {
    "search_nodes": format_search_results,
    "search_memory_nodes": format_search_results,
    "open_nodes": format_search_results,
    "read_graph": format_search_results,
    "search_facts": format_relationships,
    "search_memory_facts": format_relationships,
    "get_entity_edge": format_relationships,
    "get_episodes": format_episodes,
    "get_status": format_status,
    "add_memory": format_mutation,
    "clear_graph": format_mutation,
    "entities": format_entities,
}
