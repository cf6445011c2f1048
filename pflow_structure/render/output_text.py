"""Text as every output of ours writes it: JSON text (bytes as base64) and safe text, a lone surrogate escaped.

One implementation for ``read-fields --json``, the MCP answers and the compact formats'
JSON candidate, so the three cannot drift apart; the command line and the MCP server both
import it from here, below them, instead of from each other.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def format_json(value: Any, *, compact: bool = False) -> str:
    """Indented (or compact) JSON; bytes as base64; a lone surrogate escaped so the output stays valid UTF-8."""
    layout: dict[str, Any] = {"separators": (",", ":")} if compact else {"indent": 2}
    text = json.dumps(value, ensure_ascii=False, default=_json_default, **layout)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, default=_json_default, **layout)
    return text


def compact(value: Any) -> str:
    """Compact JSON (no spaces), as the answer budget counts it."""
    return format_json(value, compact=True)


def compact_longer_than(value: Any, chars: int) -> bool:
    """``len(compact(value)) > chars``, reading only about ``chars`` characters of it: a 100 MB value is
    not written whole to learn that it is long (the encoder's pieces are counted until they pass
    ``chars``). Without escapes first: the text with them (a lone surrogate) is longer still."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default)
    written = 0
    for piece in encoder.iterencode(value):
        written += len(piece)
        if written > chars:
            return True
    return len(compact(value)) > chars


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def safe_text(text: str) -> str:
    """A lone surrogate (from a non-UTF-8 key or value) shown escaped instead of crashing the print."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
