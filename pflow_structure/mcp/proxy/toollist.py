"""The proxy's tool list in three sizes, and the two tools that give the rest on demand.

``--tools full`` lists every tool as the server does, with ``_want``, ``_fields`` and ``_jq`` added (as before
issue 39). ``--tools compact`` keeps every tool's whole interface in fewer tokens
(:func:`compact_tool`: each description cut to its first sentence, ``$schema``, titles, defaults,
examples and ``additionalProperties: false`` left out; never a property, a ``required`` entry, a type
or an ``enum``). ``--tools light`` lists each tool by its name and a few words in at most
:data:`LIGHT_TOKENS` o200k tokens, 20 with the comma between two (:func:`light_tool`, its input schema an
open object), the two phases our own ``list_nodes``/``describe_nodes`` follow. In both,
``describe_tools`` answers the full definitions of the named tools and ``search_tools`` ranks the
tools for a few words with the word matching of ``want`` (:mod:`pflow_structure.filtering.want`:
stems, one root, everyday meanings, each word weighted by how few tools it finds), plus the verbs
``want`` drops and a few groups of action synonyms (:data:`_ACTIONS`). A call never
needs a describe first: the proxy forwards it, and the server's own error says what is wrong with its
arguments.

Plain functions on plain dicts: no SDK types here.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

TOOL_MODES = ("full", "compact", "light")
DESCRIBE_TOOL = "describe_tools"
SEARCH_TOOL = "search_tools"
WHOLE = "pflow-structure/whole"  # a tool's _meta key: listed whole in every mode (a gateway's not_started)
LIGHT_TOKENS = 19  # most o200k tokens of one tool in the light list: 20 with the comma between tools
SEARCH_LIMIT = 5
DEPRECATED = re.compile(r"\bdeprecated\b", re.IGNORECASE)

DESCRIBE_DESCRIPTION = (
    "Full definitions (description, input schema) of the named tools. The tool list gives each in short; "
    "any tool can be called without this."
)
DESCRIBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"names": {"type": "array", "items": {"type": "string"}, "description": "Tool names, as listed."}},
    "required": ["names"],
}
SEARCH_DESCRIPTION = "The tools that best match a few words (what you want to do), best first, each in one line."
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "A few words, e.g. 'read a file'."},
        "limit": {"type": "integer", "minimum": 1, "description": f"Most tools answered (default {SEARCH_LIMIT})."},
    },
    "required": ["query"],
}
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!etc\.)(?<!vs\.)\s|\n\s*\n")  # not after e.g.
_DROPPED = frozenset({"$schema", "title", "default", "examples", "$comment"})
_NAMED = frozenset({"properties", "$defs", "definitions", "patternProperties"})  # maps of name -> schema
# Left out of a light line.
_FILLER = frozenset(
    {"the", "a", "an", "of", "from", "as", "to", "for", "with", "in", "on", "its", "this", "that", "and"}
)
_KEPT = frozenset({"enum", "const", "required"})  # values kept exactly as they are


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (up to the first ``. ``, ``! ``, ``? `` or blank line), one line."""
    return " ".join(_SENTENCE_END.split(text.strip(), maxsplit=1)[0].split())


def compact_schema(schema: Any, *, descriptions: bool = True) -> Any:
    """``schema`` in fewer tokens, its meaning for a caller kept: descriptions cut to their first
    sentence (or left out, ``descriptions=False``); ``$schema``, ``title``, ``default``, ``examples``
    and ``additionalProperties: false`` left out; property names, ``required``, types and ``enum``
    kept exactly."""
    if isinstance(schema, list):
        return [compact_schema(item, descriptions=descriptions) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    compacted: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or (key == "additionalProperties" and value is False):
            continue
        if key == "description" and isinstance(value, str):
            value = first_sentence(value) if descriptions else ""
            if not value:
                continue
        elif key in _NAMED and isinstance(value, Mapping):
            value = {name: compact_schema(child, descriptions=descriptions) for name, child in value.items()}
        elif key not in _KEPT:
            value = compact_schema(value, descriptions=descriptions)
        compacted[key] = value
    return compacted


def compact_tool(tool: Mapping[str, Any], *, descriptions: bool = True) -> dict[str, Any]:
    """``tool`` with its description cut to the first sentence and its input schema compacted (without
    the arguments' descriptions when ``descriptions`` is False)."""
    compacted = {key: value for key, value in tool.items() if key not in ("outputSchema", "title")}
    if isinstance(tool.get("description"), str):
        compacted["description"] = first_sentence(tool["description"])
    if "inputSchema" in tool:
        compacted["inputSchema"] = compact_schema(tool["inputSchema"], descriptions=descriptions)
    return compacted


def _tokens(value: Any) -> int:
    from pflow_structure.render.tokens import count_tokens

    return count_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def light_tool(tool: Mapping[str, Any], limit: int = LIGHT_TOKENS) -> dict[str, Any]:
    """``tool`` by its name and the first words of its description, in at most ``limit`` tokens
    (when its name alone fits); its input schema an open object, so any arguments go through."""
    entry: dict[str, Any] = {"name": tool.get("name"), "inputSchema": {"type": "object"}}
    words = first_sentence(str(tool.get("description") or "")).rstrip(".").split()
    words = [word for word in words if word.lower() not in _FILLER]
    while words:
        described = {"name": entry["name"], "description": " ".join(words), "inputSchema": entry["inputSchema"]}
        if _tokens(described) <= limit:
            return described
        words.pop()
    return entry


def our_tools(describe: str, search: str) -> list[dict[str, Any]]:
    """``describe_tools`` and ``search_tools`` as listed (under the names the proxy chose)."""
    return [
        {"name": describe, "description": DESCRIBE_DESCRIPTION, "inputSchema": DESCRIBE_SCHEMA},
        {"name": search, "description": SEARCH_DESCRIPTION, "inputSchema": SEARCH_SCHEMA},
    ]


def listed_tools(
    mode: str, tools: Sequence[Mapping[str, Any]], ours: Sequence[Mapping[str, Any]], discovery: Sequence[Any]
) -> list[dict[str, Any]]:
    """The tool list for ``mode``: the server's ``tools`` (as ``full`` lists them), then ``ours``
    (read_fields, edit_fields), then, when not full, the ``discovery`` tools (describe, search), ours
    compacted (in the light list without their arguments' descriptions: a cached answer shows the
    exact read_fields call, and describe_tools gives ours in full too)."""
    if mode == "full":
        return [dict(tool) for tool in [*tools, *ours]]
    shown = [
        dict(tool)
        if (tool.get("_meta") or {}).get(WHOLE)
        else light_tool(tool)
        if mode == "light"
        else compact_tool(tool)
        for tool in tools
    ]
    return [*shown, *(compact_tool(tool, descriptions=mode != "light") for tool in [*ours, *discovery])]


# -- search and describe --------------------------------------------------------------------------


# What a request for a tool says that ``want`` (made for questions about fields) leaves out or does not
# link: the verbs it drops as question words, and everyday synonyms of actions (a synonym counts as
# ``want``'s everyday meanings do).
_VERBS = frozenset({"list", "get", "show", "find", "see", "give", "tell"})
_ACTIONS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "find search look locate query lookup match",
        "delete remove forget erase drop destroy",
        "create make new insert",
        "link links relation relations relate connect connection",
        "sum add total plus",
        "move rename",
        "compress zip gzip archive",
        "image picture photo",
        "write save store remember keep",
        "read open load view",
        "edit modify change update replace",
        "run execute trigger start launch",
    )
)


def _search_terms(query: str) -> list[tuple[str, frozenset[str]]]:
    """Each word of ``query`` that can name a tool, stemmed, with the stems of its synonyms."""
    from pflow_structure.filtering.want import STOPWORDS, stem, words

    terms: dict[str, frozenset[str]] = {}
    for word in words(query):
        if word in STOPWORDS and word not in _VERBS:
            continue
        synonyms = frozenset(stem(other) for group in _ACTIONS if word in group for other in group if other != word)
        terms[stem(word)] = synonyms - {stem(word)}
    return list(terms.items())


def _match(term: str, synonyms: frozenset[str], keys: tuple[str, ...]) -> float:
    from pflow_structure.filtering.want import MEANING, term_matches

    found = term_matches(term, keys)
    return max(found, MEANING * max((term_matches(other, keys) for other in synonyms), default=0.0))


def _words_of(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """What a tool is searched by, as ``want`` reads keys: its description (the first 600 characters:
    metadata "with size and modified time" is often past the first sentence) as a container (half
    weight), the name as the field's own key."""
    name = str(tool.get("name") or "")
    return (str(tool.get("description") or "")[:600], name.rsplit(".", 1)[-1])


def search_tools(tools: Sequence[Mapping[str, Any]], query: str, limit: int = SEARCH_LIMIT) -> list[dict[str, Any]]:
    """The tools that match ``query``, best first: ``[{"name", "description"}]`` (one line each)."""
    from pflow_structure.filtering.want import MEANING, term_matches, words

    terms = _search_terms(query)
    matches = [[_match(term, synonyms, _words_of(tool)) for tool in tools] for term, synonyms in terms]
    count = len(tools)
    weights = []  # as want weighs its words: one that finds every tool tells less than one that finds a few
    for found in matches:
        hits = sum(1 for value in found if value >= MEANING)
        weights.append(math.log(1 + count / hits) / math.log(1 + count) if hits and count > 1 else 1.0)
    scored = []
    for index, tool in enumerate(tools):
        score = sum(weight * found[index] for weight, found in zip(weights, matches, strict=True))
        if score <= 0:
            continue
        name_words = words(str(tool.get("name") or "").rsplit(".", 1)[-1]) or [""]
        covered = sum(1 for word in name_words if any(term_matches(t, (word,)) for t, _ in terms)) / len(name_words)
        stale = bool(DEPRECATED.search(str(tool.get("description") or "")))
        scored.append(((-score, stale, -covered, index), tool))
    scored.sort(key=lambda pair: pair[0])
    return [{"name": tool["name"], "description": first_sentence(str(tool.get("description") or ""))}
            for _, tool in scored[:limit]]  # fmt: skip


def near_names(name: str, known: Sequence[str]) -> list[str]:
    """Up to three listed names close to ``name``: the same tool under a server's namespace first
    (``read_text_file`` → ``files.read_text_file``), then close spellings, with or without the namespace."""
    by_bare: dict[str, list[str]] = {}
    for candidate in known:
        by_bare.setdefault(candidate.rsplit(".", 1)[-1].casefold(), []).append(candidate)
    bare = name.rsplit(".", 1)[-1].casefold()
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6) if len(name) <= 200 else []
    close_bare = difflib.get_close_matches(bare, list(by_bare), n=3, cutoff=0.6) if len(bare) <= 200 else []
    found = [*by_bare.get(bare, []), *close, *(candidate for match in close_bare for candidate in by_bare[match])]
    return list(dict.fromkeys(found))[:3]


def describe_answer(
    tools: Sequence[Mapping[str, Any]],
    names: Any,
    search_tool: str,
    fits: Callable[[str], bool] = lambda text: True,
    describe_tool: str = DESCRIBE_TOOL,
) -> dict[str, Any]:
    """The ``describe_tools`` result: the full definitions of ``names``, as many as ``fits`` the answer
    (at least one; ``_more`` names the rest, to describe next); for a name no tool has, ``_missing``
    says so with the near names (a tool error when no name was found)."""
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        return _error('names must be a list of tool names, e.g. ["read_text_file"]')
    by_name = {str(tool.get("name")): tool for tool in tools}
    found = [by_name[name] for name in dict.fromkeys(names) if name in by_name]
    missing = {}
    for name in names:
        if name not in by_name:
            near = near_names(name, list(by_name))
            hint = f"; near: {', '.join(near)}" if near else f"; call {search_tool} with a few words to find it"
            missing[name[:80]] = f"no tool of that name{hint}"
    if not found:
        return _error("; ".join(f"{name}: {why}" for name, why in missing.items()))
    answer: dict[str, Any] = {"tools": found, **({"_missing": missing} if missing else {})}
    if fits(json.dumps(answer, ensure_ascii=False, separators=(",", ":"))):
        return _text(answer)
    shown = 1  # the most definitions that fit, at least one; the texts measured stay within the budget
    while shown < len(found) and fits(json.dumps(_part(answer, shown), ensure_ascii=False, separators=(",", ":"))):
        shown += 1
    return _text(_part(answer, max(shown - 1, 1), describe_tool))


def _part(answer: dict[str, Any], shown: int, describe_tool: str = DESCRIBE_TOOL) -> dict[str, Any]:
    """``answer`` with its first ``shown`` definitions, and ``_more`` naming the rest to describe next."""
    found = answer["tools"]
    rest = [str(tool.get("name")) for tool in found[shown:]]
    more = {"shown": f"{shown} of {len(found)} tools: the answer budget", describe_tool: rest}
    return {**answer, "tools": found[:shown], "_more": more}


def search_answer(
    tools: Sequence[Mapping[str, Any]], arguments: Mapping[str, Any], describe_tool: str
) -> dict[str, Any]:
    """The ``search_tools`` result: ``{"tools": [{name, description}], ...}``, or why none matched."""
    query, limit = arguments.get("query"), arguments.get("limit", SEARCH_LIMIT)
    if not isinstance(query, str) or not query.strip():
        return _error("query is required: a few words for what you want to do, e.g. 'read a file'")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return _error(f"limit must be a whole number of at least 1, not {limit!r}")
    ranked = search_tools(tools, query, limit)
    if not ranked:
        return _text({"tools": [], "_missing": f"no tool's name or description matches {query[:80]!r}; the tool "
                      "list names every tool"})  # fmt: skip
    return _text({"tools": ranked, "_more": f"{describe_tool} gives a tool's full definition"})


def _text(value: Any) -> dict[str, Any]:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"Error: {text}"}], "isError": True}


def proxied_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """``tool`` as ``--tools full`` lists it: ``_want``, ``_fields`` and ``_jq`` added, no output schema (a
    structure answer would not match it)."""
    from pflow_structure.mcp.proxy.selection import with_fields_argument, with_want

    return with_fields_argument(with_want({key: value for key, value in tool.items() if key != "outputSchema"}))
