"""Mask secrets in node parameters before they are stored.

A key is secret when one of its words (split on ``_``, ``-``, ``.``, spaces and camelCase)
is a secret word, or two neighbouring words form a secret pair (``api_key``). Matching is
by whole word, never by substring: ``author`` and ``max_tokens`` stay visible.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

MASK = "***"
CYCLE = "<cycle>"
TOO_DEEP = "<nested too deeply>"
MAX_DEPTH = 100
_SECRET_WORDS = frozenset(
    {
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "token",
        "authorization",
        "auth",
        "cookie",
        "cookies",
        "apikey",
        "credential",
        "credentials",
        "bearer",
        "jwt",
        "signature",
        "privatekey",
        "sessionid",
        "otp",
    }
)
_SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("api", "keys"),
        ("access", "key"),
        ("access", "keys"),
        ("ssh", "key"),
        ("deploy", "key"),
        ("secret", "key"),
        ("private", "key"),
        ("client", "secret"),
        ("set", "cookie"),
        ("refresh", "token"),
        ("access", "token"),
        ("x", "api"),
        ("auth", "key"),
        ("session", "key"),
        ("session", "id"),
        ("signing", "key"),
        ("encryption", "key"),
    }
)
# Pagination and budget words next to "token" are not secrets.
_NOT_SECRET_BEFORE_TOKEN = frozenset({"page", "next", "continuation", "sync", "max", "cursor", "prev", "previous"})
# Words glued to a prefix, as in environment variables (PGPASSWORD, DBSECRET).
_SECRET_SUFFIXES = ("password", "passwd", "secret")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def key_words(key: str) -> list[str]:
    """``headers.X-Api-Key`` → ``['headers', 'x', 'api', 'key']``."""
    return [w.lower() for w in _WORD.findall(key)]


def is_secret_key(key: str) -> bool:
    words = key_words(key)
    for index, word in enumerate(words):
        if word.endswith(_SECRET_SUFFIXES):
            return True
        if word in _SECRET_WORDS:
            if word == "token" and index > 0 and words[index - 1] in _NOT_SECRET_BEFORE_TOKEN:
                continue
            return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def mask_secrets(value: Any) -> Any:
    """A copy of ``value`` with the values of secret keys replaced by ``***``, at any depth.

    A container that contains itself is cut with ``<cycle>``, nesting deeper than
    100 levels with ``<nested too deeply>`` (parameters are stored for reference only).
    """
    return _mask(value, frozenset(), 0)


def _mask(value: Any, path_ids: frozenset[int], depth: int) -> Any:
    if not isinstance(value, (dict, list, tuple)):
        return value
    if id(value) in path_ids:
        return CYCLE
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    inner = path_ids | {id(value)}
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and v is not None else _mask(v, inner, depth + 1))
            for k, v in value.items()
        }
    return [_mask(item, inner, depth + 1) for item in value]
