"""The structure contract every inference test calls: each listed path reads back.

For every path of a structure:
- it parses, and formatting the parsed segments gives the same text;
- with each ``[0]`` (stands for every item) read as ``[*]``, it resolves to at least one
  value on the same outputs, and every value found has a type the entry lists;
- a ``same_as`` entry points at a listed path whose dicts have the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.encoding import restore_binary
from pflow_structure.paths import WILDCARD, format_path, parse_path, resolve
from pflow_structure.structure import classify


def every_item(path: str) -> str:
    """``result[0].labels[0].name`` → ``result[*].labels[*].name``."""
    segments = parse_path(path)
    return format_path([WILDCARD if isinstance(s, int) else s for s in segments])


def _items_line_up(template: Sequence[Any], concrete: Sequence[Any]) -> bool:
    return len(template) == len(concrete) and all(
        isinstance(c, int) for t, c in zip(template, concrete, strict=True) if isinstance(t, int)
    )


def assert_structure_reads_back(
    outputs: Any, structure: Mapping[str, Mapping[str, Any]], binary_paths: Sequence[Sequence[Any]] = ()
) -> None:
    assert structure or outputs in ({}, None) or not isinstance(outputs, dict), "empty structure for non-empty outputs"
    for path, entry in structure.items():
        assert format_path(parse_path(path)) == path, f"{path!r} does not round-trip through parse/format"
        template = parse_path(path)
        found, _ = resolve(outputs, every_item(path))
        # [*] also walks dict values; [0] in a structure stands for list items only.
        matches = [m for m in found if _items_line_up(template, m.path)]
        assert matches, f"{path!r} resolves to nothing"
        allowed = set(str(entry["type"]).split("|"))
        for match in matches:
            value = restore_binary(match.value, match.path, binary_paths)
            kind = classify(value)
            assert kind in allowed, f"{path!r}: found a {kind} at {format_path(match.path)}, entry says {entry['type']}"
        if "same_as" in entry:
            target = entry["same_as"]
            assert target in structure, f"{path!r} is the same as {target!r}, which is not listed"
            assert _keys(outputs, path) == _keys(outputs, target), f"{path!r} and {target!r} differ in keys"


def _keys(outputs: Any, path: str) -> set[str]:
    template = parse_path(path)
    found, _ = resolve(outputs, every_item(path))
    return {
        key
        for match in found
        if _items_line_up(template, match.path) and isinstance(match.value, dict)
        for key in match.value
    }
