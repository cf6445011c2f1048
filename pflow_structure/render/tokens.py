"""o200k_base token counts without the network.

litellm's wheel ships tiktoken's vocabulary files in ``litellm/litellm_core_utils/tokenizers``,
named as tiktoken's cache names them (the SHA-1 of the download URL). We find that folder with
``importlib.util.find_spec`` (importing litellm takes seconds and may reach the network), check
the file's SHA-256 against the hash tiktoken pins, and build the encoding from it. When tiktoken
or the file is missing, counts fall back to characters / 4 and ``METHOD`` says so.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

ENCODING = "o200k_base"
_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # pinned by tiktoken_ext
_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
# The o200k_base split pattern, as in tiktoken_ext.openai_public.o200k_base.
_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

ESTIMATED = "estimated (chars/4)"


def vocabulary_file() -> Path | None:
    """litellm's bundled copy of o200k_base.tiktoken, or None."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    name = hashlib.sha1(_URL.encode()).hexdigest()
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "litellm_core_utils" / "tokenizers" / name
        if candidate.is_file():
            return candidate
    return None


_BUILD_LOCK = threading.Lock()


def _encoding() -> Any:
    """The o200k encoding, built once (about a second); concurrent callers wait for that one build."""
    with _BUILD_LOCK:
        return _build_encoding()


@lru_cache(maxsize=1)
def _build_encoding() -> Any:
    try:
        import tiktoken
    except ImportError:
        return None
    path = vocabulary_file()
    if path is None:
        return None
    contents = path.read_bytes()
    if hashlib.sha256(contents).hexdigest() != _SHA256:
        return None
    ranks = {
        base64.b64decode(token): int(rank) for token, rank in (line.split() for line in contents.splitlines() if line)
    }
    del contents
    encoding = tiktoken.Encoding(name=ENCODING, pat_str=_PATTERN, mergeable_ranks=ranks, special_tokens=_SPECIAL_TOKENS)
    # tiktoken keeps the dict it was given beside its own (Rust) copy, for pickling only: 200,000 bytes objects,
    # 27 MB of the proxy's resident memory while a 100 MB tool result passes through it (issue 37). Encoding
    # reads the Rust copy; pickling the encoding is never done here.
    ranks.clear()
    return encoding


def method() -> str:
    """``"o200k_base"`` when real counts are available, else ``"estimated (chars/4)"``."""
    return ENCODING if _encoding() is not None else ESTIMATED


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in o200k_base (special-token text counted as plain text)."""
    encoding = _encoding()
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text, disallowed_special=()))
