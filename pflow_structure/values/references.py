"""Values passed on by reference: ``${exec-ID:PATH}`` in tool arguments.

An agent that saw a structure can hand a cached value to the next tool without reading it.
Any string in the arguments (at any depth) may hold references; :func:`resolve_references`
replaces them, against the execution cache only, before the tool runs:

- a string that is exactly one reference becomes the value, with its JSON type; when the tool's
  input schema wants a string there and the value is not one, it is passed as compact JSON text;
- a reference inside longer text is replaced by the value's text (a string as it is, anything
  else as compact JSON);
- ``$${exec-ID:`` stands for a literal ``${exec-ID:``; text that is not ``${exec-<valid id>:PATH}``
  (another ``${...}``, an id of the wrong shape, a reference never closed) is left as it is.

PATH is any path ``read_fields`` accepts. A reference to a text answer's lines (an entry's
``text_paths``, as the proxy records for a plain-text result) passes the text itself.
Only an entry's ``outputs`` are reachable: parameters, where secrets are masked, never are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from pflow_structure.cache.entry import CacheEntry
from pflow_structure.cache.ids import is_valid_execution_id
from pflow_structure.errors import (
    ExecutionExpiredError,
    ExecutionNotFoundError,
    ParameterError,
    PathNotFoundError,
    PathSyntaxError,
    ReferenceTooLargeError,
    UnresolvedReferenceError,
)
from pflow_structure.paths import format_path, resolve
from pflow_structure.render.output_text import format_json

__all__ = ["DEFAULT_MAX_REFERENCE_BYTES", "has_references", "resolve_references"]

DEFAULT_MAX_REFERENCE_BYTES = 20 * 1024**2
# A longer "${exec-ID:..." is not taken as a reference: it bounds the scan for the closing brace,
# so text with many unclosed starts costs linear time, not quadratic.
MAX_PATH_CHARS = 1024
_SPECIAL = re.compile(r"[\"'{}\\]")
MARKER = "${exec-"
# Schemas nest anyOf/oneOf/allOf; this many branches are looked at for one argument, no more.
MAX_SCHEMA_BRANCHES = 32
# "$" before "${exec-" escapes it; the id's shape is checked again (length) in _references.
_START = re.compile(r"(\$?)\$\{(exec-[0-9]{1,12}-[0-9a-f]{8,16}):")

EntryLookup = Callable[[str], CacheEntry]
Location = tuple[str | int, ...]


class _Reference(NamedTuple):
    start: int
    end: int  # after the closing "}"
    execution_id: str
    path: str

    @property
    def text(self) -> str:
        return "${" + self.execution_id + ":" + self.path + "}"


def has_references(value: Any) -> bool:
    """Whether any string in ``value`` (at any depth) holds ``${exec-``: the cheap test first.

    Iterative, so arguments nested deeper than Python's recursion limit still pass untouched.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if MARKER in item:
                return True
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def resolve_references(
    arguments: Any,
    lookup: EntryLookup,
    *,
    schema: Mapping[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_REFERENCE_BYTES,
) -> Any:
    """``arguments`` with every reference replaced; the input is not changed.

    ``lookup(execution_id)`` returns the cache entry (and raises the cache's errors);
    ``schema`` is the tool's JSON Schema for the arguments. Raises
    :class:`UnresolvedReferenceError` (unknown or expired id, a path that finds nothing) and
    :class:`ReferenceTooLargeError` when the values passed come to more than ``max_bytes``.
    """
    root_schema = schema if isinstance(schema, Mapping) else {}  # a server's schema may be anything
    resolver = _Resolver(lookup, max_bytes, root_schema)
    try:
        return resolver.walk(arguments, (), root_schema)
    except RecursionError:
        raise ParameterError("the arguments are nested too deeply to resolve references in them") from None


class _Resolver:
    def __init__(self, lookup: EntryLookup, max_bytes: int, root_schema: Mapping[str, Any]) -> None:
        self.lookup = lookup
        self.max_bytes = max_bytes
        self.root_schema = root_schema
        self.entries: dict[str, CacheEntry] = {}
        self.total = 0

    def walk(self, value: Any, where: Location, schema: Mapping[str, Any]) -> Any:
        if isinstance(value, str):
            return self.string(value, where, schema) if MARKER in value else value
        if isinstance(value, dict):
            return {key: self.item(item, (*where, key), schema, key) for key, item in value.items()}
        if isinstance(value, list):
            return [self.item(item, (*where, index), schema, index) for index, item in enumerate(value)]
        return value

    def item(self, value: Any, where: Location, schema: Mapping[str, Any], step: str | int) -> Any:
        """One item of a container: a scalar or a string without a reference is passed as it is,
        without looking up its schema (most items of a large argument hold no reference)."""
        if isinstance(value, (dict, list)) or (isinstance(value, str) and MARKER in value):
            return self.walk(value, where, self.child(schema, step))
        return value

    def child(self, schema: Mapping[str, Any], step: str | int) -> Mapping[str, Any]:
        """The schema of ``step`` inside ``schema`` (through anyOf/oneOf/allOf branches, as in
        an optional object); ``{}`` when there is none. A schema from a server may be malformed:
        anything that is not the JSON Schema shape counts as no schema, never as an error."""
        for branch in self.branches(schema):
            if isinstance(step, str):
                properties = branch.get("properties")
                found = properties.get(step) if isinstance(properties, Mapping) else None
                if not isinstance(found, Mapping):
                    found = branch.get("additionalProperties")
            else:
                prefix = branch.get("prefixItems")
                found = prefix[step] if isinstance(prefix, list) and step < len(prefix) else branch.get("items")
            if isinstance(found, Mapping):
                return found
        return {}

    def branches(self, schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """``schema`` and the branches of its anyOf/oneOf/allOf, local ``$ref`` followed; at most
        ``MAX_SCHEMA_BRANCHES``, so a hostile schema costs little."""
        found: list[Mapping[str, Any]] = []
        pending: list[Any] = [schema]
        while pending and len(found) < MAX_SCHEMA_BRANCHES:
            branch = self.follow_ref(pending.pop(0))
            found.append(branch)
            for key in ("anyOf", "oneOf", "allOf"):
                listed = branch.get(key)
                if isinstance(listed, list):
                    pending.extend(item for item in listed if isinstance(item, Mapping))
        return found

    def follow_ref(self, given: Any) -> Mapping[str, Any]:
        """A local ``$ref`` (``#/$defs/Name``) is followed, a few steps at most."""
        if not isinstance(given, Mapping):
            return {}
        schema: Mapping[str, Any] = given
        for _ in range(8):
            ref = schema.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/"):
                return schema
            target: Any = self.root_schema
            for part in ref[2:].split("/"):
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
            if not isinstance(target, Mapping):
                return schema
            schema = target
        return schema

    def wants_string(self, schema: Mapping[str, Any], value: Any) -> bool:
        """The schema takes a string here and not the value's own type."""
        types: set[str] = set()
        for branch in self.branches(schema):
            declared = branch.get("type")
            types.update([declared] if isinstance(declared, str) else declared if isinstance(declared, list) else [])
        kind = _json_type(value)
        accepted = kind in types or (kind == "integer" and "number" in types)
        return "string" in types and not accepted

    def string(self, text: str, where: Location, schema: Mapping[str, Any]) -> Any:
        parts = list(_references(text))
        if not parts:
            return text
        if len(parts) == 1 and isinstance(parts[0], _Reference) and parts[0].start == 0 and parts[0].end == len(text):
            value = self.value(parts[0], where)
            self.count(value, parts[0], where)
            if not isinstance(value, str) and self.wants_string(schema, value):
                value = format_json(value, compact=True)
            return value
        pieces: list[str] = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = self.value(part, where)
            self.count(value, part, where)
            pieces.append(value if isinstance(value, str) else format_json(value, compact=True))
        return "".join(pieces)

    def value(self, reference: _Reference, where: Location) -> Any:
        try:
            entry = self.entries.get(reference.execution_id) or self.lookup(reference.execution_id)
            self.entries[reference.execution_id] = entry
            return _value_at(entry, reference.path)
        except (ExecutionNotFoundError, ExecutionExpiredError, PathNotFoundError, PathSyntaxError) as exc:
            raise UnresolvedReferenceError(_shown(reference), _location(where), exc) from None

    def count(self, value: Any, reference: _Reference, where: Location) -> None:
        """Add the value's size (before any text is made of it) and refuse it over the cap."""
        self.total += _size(value, self.max_bytes - self.total)
        if self.total > self.max_bytes:
            raise ReferenceTooLargeError(_shown(reference), _location(where), self.total, self.max_bytes)


def _references(text: str) -> Iterator[str | _Reference]:
    """The text cut into plain pieces (escapes undone) and references, in order."""
    position = 0
    for match in _START.finditer(text):
        if match.start() < position:
            continue  # inside a reference already taken
        execution_id = match.group(2)
        if not is_valid_execution_id(execution_id):
            continue
        if match.group(1):  # "$${exec-...:" is the literal "${exec-...:"
            yield text[position : match.start()] + text[match.start() + 1 : match.end()]
            position = match.end()
            continue
        end = _closing_brace(text, match.end())
        if end < 0:
            continue  # never closed: not a reference
        if match.start() > position:
            yield text[position : match.start()]
        yield _Reference(match.start(), end + 1, execution_id, text[match.end() : end])
        position = end + 1
    if position < len(text):
        yield text[position:]


def _closing_brace(text: str, start: int) -> int:
    """Index of the ``}`` that ends a path starting at ``start`` (quotes and nested braces
    skipped, as in ``data["a}b"]``); -1 when there is none within ``MAX_PATH_CHARS``."""
    end = min(len(text), start + MAX_PATH_CHARS)
    if text.find("}", start, end) < 0:
        return -1  # the common "never closed" case, without a scan
    quote = ""
    depth = 0
    escaped_until = -1
    for match in _SPECIAL.finditer(text, start, end):
        index, char = match.start(), match.group()
        if index <= escaped_until:
            continue
        if quote:
            if char == "\\":
                escaped_until = index + 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return index
            depth -= 1
    return -1


def _value_at(entry: CacheEntry, path: str) -> Any:
    matches, multi = resolve(entry.outputs, path)
    if multi:  # a JSONPath that finds nothing raised in resolve, saying why
        return [match.value for match in matches]
    (match,) = matches
    value = match.value
    is_text = list(match.path) in [list(p) for p in entry.text_paths]
    if is_text and isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)  # a text answer kept as lines: its text
    return value


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    # bool before int: True is an int in Python, a boolean in JSON.
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)


def _json_type(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "object")


def _size(value: Any, budget: int) -> int:
    """Bytes of ``value`` as it is passed: a string's text, anything else's compact JSON. A list (what
    ``[*]`` and JSONPath give) is measured item by item and only until it passes ``budget``: the
    matches of ``$..*`` overlap, and their whole text would be many times the cached value."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if not isinstance(value, list):
        return _json_size(value)
    total = 2 + max(len(value) - 1, 0)  # the brackets and the commas
    for item in value:
        total += _json_size(item)
        if total > budget:
            break
    return total


def _json_size(value: Any) -> int:
    return len(format_json(value, compact=True).encode("utf-8", "surrogatepass"))


def _shown(reference: _Reference) -> str:
    return _shortened(reference.text)


def _location(where: Location) -> str:
    if not where:
        return "the arguments"
    if isinstance(where[0], int):
        return "item " + _shortened(format_path(["x", *where])[1:])
    return _shortened(format_path(where))


def _shortened(text: str) -> str:
    """At most about 200 characters: an argument's key may be as long as the caller likes."""
    return text if len(text) <= 200 else text[:150] + "..." + text[-40:]
