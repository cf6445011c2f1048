"""What a tool result says, read on plain dicts: its text as JSON or not, the tokens the agent sees, its value.

A text block that starts like a JSON object or array is parsed (:func:`parse_text`); one that starts so
and does not parse is broken JSON (:class:`MalformedJSONError`), which the proxy passes on as it came.
:func:`visible_tokens` counts what the agent reads (``structuredContent`` once when it only repeats the
text, :func:`duplicates_text`); :func:`payload` is the value a result carries, for shaping and caching
(mcp/proxy/shaping.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

TokenCounter = Callable[[str], int]


class MalformedJSONError(ValueError):
    """Text that looks like JSON (starts with ``{`` or ``[``) and does not parse."""


def compact_json(value: Any) -> str:
    """Compact JSON as ``read-fields --json`` writes it (a lone surrogate escaped, so it stays UTF-8)."""
    from pflow_structure.render.output_text import format_json

    return format_json(value, compact=True)


_STRING_OR_SPACE = re.compile(r'("(?:[^"\\]|\\.)*")|\s+')


def strip_whitespace(json_text: str) -> str:
    """Valid JSON text without the whitespace between its tokens: every number, escape and
    repeated key stays exactly as the server wrote it (a loads/dumps round trip would turn
    19.90 into 19.9, 1e400 into Infinity and drop a duplicate key)."""
    return _STRING_OR_SPACE.sub(lambda match: match.group(1) or "", json_text)


# Text starts like a JSON object or array: "{" then a key or "}", or "[" then a value or "]".
# "[FILE] a.txt" (server-filesystem's listings) or "[note] ..." is plain text, not broken JSON.
JSON_START = re.compile(r'\s*(?:\{\s*["}]|\[\s*(?:[\[\]{"\-0-9]|(?:true|false|null)(?![A-Za-z0-9_])))')


_SURELY_JSON = re.compile(r'(?:\[\s*)?\{\s*"')  # an object with a key, or a list of them


def surely_json(text: str) -> bool:
    """Whether ``text`` starts as JSON does and prose does not (an object with a key, or a list of them):
    such a text that does not parse is broken JSON, whatever the parser's error."""
    return _SURELY_JSON.match(text.lstrip()) is not None


def parse_text(text: str) -> tuple[bool, Any]:
    """(True, value) when ``text`` is JSON, (False, text) when it does not start like JSON.

    Raises :class:`MalformedJSONError` for text that starts like a JSON object or array but is
    broken (a truncated answer, a server bug): the proxy then passes the result through as is.
    """
    if not JSON_START.match(text):
        return False, text
    stripped = text.strip()
    from pflow_structure.encoding.jsonio import loads  # orjson: a 100 MB answer parses in a third of the time

    try:
        return True, loads(stripped)
    except json.JSONDecodeError as exc:
        # "[1] A title" or "[2024-05-01 12:00] INFO ..." stop parsing early and are plain text;
        # an object with a key, or a parse that ran to the end (a cut-off answer), is broken JSON.
        if exc.msg.startswith("Extra data") and not _SURELY_JSON.match(stripped):
            return False, text  # "[1] A title": a JSON-looking start, then prose
        cut_off = exc.pos >= len(stripped) - 1
        whole = stripped[-1] in "]}"  # ends like a document: "[1,]" (errors differ between Pythons)
        if _SURELY_JSON.match(stripped) or cut_off or whole:
            raise MalformedJSONError(f"text starts like JSON but does not parse: {exc}") from None
        return False, text
    except (ValueError, RecursionError) as exc:
        raise MalformedJSONError(f"text starts like JSON but does not parse: {exc}") from None


def duplicates_text(structured: Any, texts: list[str], parsed: list[Any]) -> bool:
    """Whether ``structuredContent`` says nothing the text blocks do not already say."""
    if len(texts) != 1:
        return False
    candidates = {_canonical(parsed[0]), _canonical(texts[0])}
    if _canonical(structured) in candidates:
        return True
    if isinstance(structured, dict) and len(structured) == 1:
        (inner,) = structured.values()
        return _canonical(inner) in candidates
    return False


def _canonical(value: Any) -> str:
    """Equal for equal JSON only (``True == 1`` and ``1 == 1.0`` in Python, not in JSON)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def visible_tokens(result: dict[str, Any], count: TokenCounter) -> int:
    """Tokens of what the agent reads: text blocks, plus structuredContent unless it is a duplicate."""
    texts = [block.get("text", "") for block in result.get("content", []) if block.get("type") == "text"]
    others = [block for block in result.get("content", []) if block.get("type") != "text"]
    total = sum(count(text) for text in texts) + sum(count(compact_json(block)) for block in others)
    structured = result.get("structuredContent")
    if structured is not None:
        parsed = []
        for text in texts:
            try:
                parsed.append(parse_text(text)[1])
            except MalformedJSONError:
                parsed.append(text)
        if not duplicates_text(structured, texts, parsed):
            total += count(compact_json(structured))
    return total


def payload(result: dict[str, Any]) -> tuple[Any, bool] | None:
    """The value a result carries and whether it came from JSON; None when it has non-text content.

    One text block: its JSON, else structuredContent when that is more than a wrapper around the
    text, else the text's lines (split on "\n" only, so joining them with "\n" gives the text
    back). Several text blocks: a list with one value per block.
    """
    content = result.get("content", [])
    if any(block.get("type") != "text" for block in content):
        return None
    texts = [block.get("text", "") for block in content]
    decoded = [parse_text(text) for text in texts]
    structured = result.get("structuredContent")
    parsed = [value for _, value in decoded]
    if len(texts) == 1:
        is_json, value = decoded[0]
        if is_json:
            return value, True
        if structured is not None and not duplicates_text(structured, texts, parsed):
            return structured, True
        return value.split("\n"), False
    if not texts and structured is not None:
        return structured, True
    return parsed, any(is_json for is_json, _ in decoded)


def is_text_lines(result: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is the one text block of ``result`` split into lines (see :func:`payload`)."""
    content = result.get("content", [])
    if len(content) != 1 or content[0].get("type") != "text" or not isinstance(value, list):
        return False
    return all(isinstance(line, str) for line in value) and "\n".join(value) == content[0].get("text")
