"""Field paths: the grammar (:mod:`.grammar`: parse, format, quote keys) and resolving a path
against a value (:mod:`.resolve`: wildcards, negative indices, JSONPath, why a path missed).

Every name is importable from here: ``from pflow_structure.paths import parse_path, resolve``.
"""

from __future__ import annotations

from pflow_structure.paths.grammar import (
    WILDCARD,
    AtLeast,
    ConcretePath,
    Match,
    Segment,
    format_path,
    is_jsonpath,
    is_plain_key,
    parse_path,
    quote_key,
    template_covers,
)
from pflow_structure.paths.resolve import describe_value, parse_json_text, resolve, resolve_grouped

__all__ = [
    "WILDCARD",
    "AtLeast",
    "ConcretePath",
    "Match",
    "Segment",
    "describe_value",
    "format_path",
    "is_jsonpath",
    "is_plain_key",
    "parse_json_text",
    "parse_path",
    "quote_key",
    "resolve",
    "resolve_grouped",
    "template_covers",
]
