"""Node output → JSON-safe value (the write half of :mod:`pflow_structure.encoding`).

Whatever a node writes becomes something ``json.dumps(..., allow_nan=False)`` accepts,
without raising. Bytes are stored as base64 strings and their exact places are kept in a
side list (``binary_paths``), so a user dict that looks like an encoding marker is never
mistaken for one: nothing in the value itself says "this was bytes".

Cycles are cut at the repeat with a visible marker. Containers nested deeper than
``max_depth`` levels and objects (``__dict__``, dataclasses) expanded deeper than
``object_depth`` levels are cut with a visible marker too. Plain JSON data is kept to
``max_depth`` (64 by default) because real API responses nest deeper than 10 levels
(GitHub GraphQL: 14, Slack: 17) and cutting them would lose values ``read_fields`` must
return.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import math
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from pflow_structure.encoding.binary import restore_binary
from pflow_structure.paths import ConcretePath

__all__ = ["MAX_DEPTH", "OBJECT_DEPTH", "Encoded", "encode_value", "is_plain_json", "restore_binary"]

_MAX_JSON_INT_BITS = 14_000  # about 4,200 decimal digits, under sys.get_int_max_str_digits()
MAX_DEPTH = 64
OBJECT_DEPTH = 10
_REPR_LIMIT = 200


@dataclass
class Encoded:
    """The JSON-safe value, where bytes were, and what had to be cut."""

    value: Any
    binary_paths: list[ConcretePath] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def encode_value(value: Any, *, max_depth: int = MAX_DEPTH, object_depth: int = OBJECT_DEPTH) -> Encoded:
    """Make ``value`` JSON-safe.

    >>> encode_value({"data": b"hi", "when": (1, 2)}).value
    {'data': 'aGk=', 'when': [1, 2]}
    """
    if is_plain_json(value, 0, max_depth):
        return Encoded(value)  # already JSON-safe (a parsed JSON file): no copy, no notes
    encoder = _Encoder(max_depth, object_depth)
    result = encoder.encode(value, (), 0, 0)
    return Encoded(result, encoder.binary_paths, encoder.notes)


# Leaves that are always written unchanged; ints and floats are checked one by one.
_PLAIN_LEAVES = frozenset({str, bool, type(None)})


def is_plain_json(value: Any, depth: int = 0, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``value`` is already what :class:`_Encoder` would return, unchanged and without notes.

    Exact types only (a subclass may serialise differently), finite floats, ints that write as
    JSON, string keys, no container at ``max_depth``; a cycle reaches the depth limit and says no.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(value.bit_length() <= _MAX_JSON_INT_BITS)
    if kind is float:
        return bool(value - value == 0.0)  # False for NaN and the infinities
    if depth >= max_depth:
        return False
    depth += 1
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            if type(item) not in _PLAIN_LEAVES and not is_plain_json(item, depth, max_depth):
                return False
        return True
    if kind is list:
        for item in value:
            if type(item) not in _PLAIN_LEAVES and not is_plain_json(item, depth, max_depth):
                return False
        return True
    return False


class _Encoder:
    def __init__(self, max_depth: int, object_depth: int) -> None:
        self.max_depth = max_depth
        self.object_depth = object_depth
        self.binary_paths: list[ConcretePath] = []
        self.notes: list[str] = []
        self.ancestors: dict[int, ConcretePath] = {}

    def encode(self, value: Any, where: ConcretePath, depth: int, object_levels: int) -> Any:
        # bool before int: bool is a subclass of int and must stay a bool.
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return self.encode_int(int(value), where)
        if isinstance(value, float):
            return _encode_float(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            self.binary_paths.append(where)
            return base64.b64encode(bytes(value)).decode("ascii")
        scalar = _encode_scalar(value)
        if scalar is not _NOT_SCALAR:
            return scalar
        if depth >= self.max_depth:
            return self.cut(where, f"<cut: nested deeper than {self.max_depth} levels>")
        marker = id(value)
        if marker in self.ancestors:
            target = _format(self.ancestors[marker])
            self.notes.append(f"circular reference at {_format(where)} cut (it points back to {target})")
            return f"<circular reference to {target}>"
        self.ancestors[marker] = where
        try:
            return self.encode_container(value, where, depth, object_levels)
        finally:
            del self.ancestors[marker]

    def encode_container(self, value: Any, where: ConcretePath, depth: int, object_levels: int) -> Any:
        if isinstance(value, Mapping):
            return self.encode_mapping(value.items(), where, depth, object_levels)
        if isinstance(value, tuple) and hasattr(value, "_asdict"):
            return self.encode_mapping(value._asdict().items(), where, depth, object_levels)
        if isinstance(value, (list, tuple)):
            return [self.encode(item, (*where, i), depth + 1, object_levels) for i, item in enumerate(value)]
        if isinstance(value, (set, frozenset)):
            return [self.encode(item, (*where, i), depth + 1, object_levels) for i, item in enumerate(_sorted(value))]
        attributes = _object_attributes(value)
        if attributes is None:
            return _short_repr(value)
        if object_levels >= self.object_depth:
            return self.cut(where, f"<cut: object nested deeper than {self.object_depth} levels: {_short_repr(value)}>")
        return self.encode_mapping(attributes.items(), where, depth, object_levels + 1)

    def encode_mapping(
        self, items: Iterable[tuple[Any, Any]], where: ConcretePath, depth: int, object_levels: int
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for raw_key, item in items:
            key = _encode_key(raw_key)
            if key in out:
                suffix = 2
                while f"{key} ({suffix})" in out:
                    suffix += 1
                key = f"{key} ({suffix})"
            out[key] = self.encode(item, (*where, key), depth + 1, object_levels)
        return out

    def encode_int(self, value: int, where: ConcretePath) -> int | str:
        # JSON text of an int over 4,300 digits raises in Python 3.11+; hex keeps every digit.
        if value.bit_length() <= _MAX_JSON_INT_BITS:
            return value
        self.notes.append(f"{_format(where)}: an int of {value.bit_length()} bits is stored as hex text")
        return hex(value)

    def cut(self, where: ConcretePath, marker: str) -> str:
        self.notes.append(f"{_format(where)}: {marker}")
        return marker


_NOT_SCALAR = object()


def _encode_float(value: float) -> Any:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _encode_scalar(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        inner = value.value
        return inner if isinstance(inner, (str, int, float, bool)) else value.name
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        if not value.is_finite():
            return _encode_float(float(value))
        as_float = float(value)
        # Keep it a number when that loses nothing; otherwise the exact digits as text.
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, (uuid.UUID, PurePath)):
        return str(value)
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, BaseException):
        # Its __dict__ is usually empty; the type and message are what a reader needs.
        try:
            message = str(value)
        except Exception:  # a broken __str__ must not fail the run
            message = ""
        return f"{type(value).__name__}: {message}" if message else type(value).__name__
    return _NOT_SCALAR


def _encode_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, bytes):
        return key.decode("utf-8", errors="backslashreplace")
    scalar = _encode_scalar(key)
    if scalar is not _NOT_SCALAR:
        return str(scalar)
    if isinstance(key, float):
        return str(_encode_float(key))
    return str(key) if isinstance(key, (int, tuple, frozenset)) else _short_repr(key)


def _sorted(items: Iterable[Any]) -> list[Any]:
    values = list(items)
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def _object_attributes(value: Any) -> dict[str, Any] | None:
    """Public attributes of an object, or None when it has none worth showing (then its repr)."""
    try:
        return _attributes_of(value)
    except Exception:  # a __getattr__ that raises KeyError, a property that fails: show the repr
        return None


def _attributes_of(value: Any) -> dict[str, Any] | None:
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            dumped = model_dump()
        except Exception:  # a broken model_dump falls back to its attributes
            dumped = None
        if isinstance(dumped, dict):
            return dumped
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(value, type):
        return {k: v for k, v in attributes.items() if not str(k).startswith("_")}
    return None


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "...>"


def _format(where: ConcretePath) -> str:
    from pflow_structure.paths import format_path

    return format_path(where) if where else "(root)"
