"""The CLI text of a ``registry_run`` result: the same content as the dict, as lines.

✓ Node executed successfully
Execution ID: exec-1763463202-0cd0c8fe

Available template paths:
  ✓ ${result} (list, 100 items)
  ✓ ${result[0].title} (str, ~52 chars)
  ✓ ${result[0].milestone} (dict|null, in 31 of 100)
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any


def describe_entry(entry: Mapping[str, Any]) -> str:
    """``{"type": "str", "avg_length": 52}`` → ``str, ~52 chars``."""
    type_name = str(entry.get("type", "?"))
    parts = [type_name]
    if "avg_length" in entry:
        unit = "bytes" if "bytes" in type_name.split("|") and "str" not in type_name.split("|") else "chars"
        parts.append(f"~{entry['avg_length']} {unit}")
    if "json" in entry:
        parts.append(f"JSON {entry['json']}")
    if "length" in entry:  # after "JSON list": a string holding a JSON array has items too
        if "min_length" in entry:
            parts.append(f"{entry['min_length']}-{entry['max_length']} items, avg {_number(entry['length'])}")
        else:
            parts.append(f"{entry['length']} items")
    if entry.get("dynamic_keys"):
        parts.append(f"{entry.get('keys', '?')} dynamic keys")
    if "present" in entry:
        parts.append(f"in {entry['present']} of {entry['of']}")
    if "same_as" in entry:
        parts.append(f"same keys as {entry['same_as']}")
    if entry.get("truncated") == "depth":
        parts.append("deeper levels not shown")
    return ", ".join(parts)


def render_structure_text(result: Mapping[str, Any], *, program: str = "pflow-structure") -> str:
    """The text the CLI prints for a ``registry_run`` result dict."""
    execution_id = result.get("execution_id", "")
    lines = ["✓ Node executed successfully", f"Execution ID: {execution_id}", ""]
    structure: Mapping[str, Mapping[str, Any]] = result.get("structure", {})
    if structure:
        lines.append("Available template paths:")
        lines.extend(f"  ✓ ${{{path}}} ({describe_entry(entry)})" for path, entry in structure.items())
    else:
        lines.append("Available template paths: (none: the node wrote no outputs)")
    lines.append("")
    lines.append(f"Node type: {result.get('node_type', '?')}")
    field_count = result.get("field_count", 0)
    original = result.get("original_field_count", field_count)
    if result.get("filtered"):
        method, note = result.get("filter", "?"), result.get("filter_note", "")
        lines.append(f"Field count: {field_count} of {original} (filtered by the {method} filter; {note})")
    else:
        lines.append(f"Field count: {field_count} (original {original}, not filtered)")
    omitted = result.get("omitted_paths", 0)
    if omitted:
        lines.append(
            f"Omitted paths: {omitted} deeper paths not listed; read a parent path with read-fields, "
            "or run again with --max-paths N (PFLOW_STRUCTURE_MAX_PATHS)"
        )
    for warning in result.get("warnings", []):
        lines.append(f"Warning: {warning}")
    if structure:
        example = _example_path(structure)
        lines.append(f"Read values: {program} read-fields {execution_id} {shlex.quote(example)}")
    return "\n".join(lines)


def _example_path(structure: Mapping[str, Mapping[str, Any]]) -> str:
    """A path worth reading in the hint: the first text field, else the first leaf, else the first."""
    for wanted in ({"str"}, {"int", "float", "bool", "str|null", "bytes"}):
        for path, entry in structure.items():
            if entry.get("type") in wanted and "json" not in entry:
                return path
    return next(iter(structure))


def _number(value: Any) -> str:
    """``3.0`` → ``3``, ``12.5`` → ``12.5``; never an exponent (``:g`` turns 1234567.5 into 1.23457e+06)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
