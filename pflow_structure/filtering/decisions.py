"""Filter decisions kept on disk, so the same node with the same shape asks the LLM once.

pflow kept its decisions in memory only, so every CLI process asked again. Here a decision
(the kept paths) is a small JSON file named by the SHA-256 of what it depends on: the node
type, the model, the prompt version and the sorted field paths with their types; values never
take part. Files are private (0600 in a 0700 directory), written atomically, never followed
through a symlink, and ignored after ``ttl_days``. Only answers that were used are stored:
failures and timeouts are not, so the next run asks again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

DEFAULT_TTL_DAYS = 30.0
FORMAT_VERSION = 1


def decision_key(
    node_type: str,
    model: str,
    prompt_version: str,
    structure: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str],
    *,
    want: str | None = None,
) -> str:
    """The cache key: a hex SHA-256 over the node type, model, prompt version and typed field paths,
    and the agent's ``want`` when there is one (a choice for other words is another decision)."""
    shape = sorted((path, str(structure[path].get("type", ""))) for path in fields)
    parts: list[Any] = [FORMAT_VERSION, node_type, model, prompt_version, shape]
    if want:
        parts.append(["want", " ".join(want.split())])
    material = json.dumps(parts, ensure_ascii=True)
    return hashlib.sha256(material.encode("ascii")).hexdigest()


class DecisionStore(Protocol):
    """Where decisions are kept: :class:`DecisionCache` (files), or Redis when instances share a cache."""

    def get(self, key: str) -> list[str] | None: ...

    def put(self, key: str, kept: Sequence[str], **about: Any) -> bool: ...


class DecisionCache:
    """Kept-path lists by key, one file each, for ``ttl_days``."""

    def __init__(self, directory: Path, *, ttl_days: float = DEFAULT_TTL_DAYS) -> None:
        self.directory = Path(directory)
        self.ttl_seconds = ttl_days * 86400

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(char not in "0123456789abcdef" for char in key):
            raise ValueError(f"not a decision key: {key[:80]!r}")
        return self.directory / f"{key}.json"

    def get(self, key: str) -> list[str] | None:
        """The kept paths, or None when there is no fresh, readable decision."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as handle:
                record = json.loads(handle.read(1_000_000))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != key:
            return None
        created = record.get("created")
        kept = record.get("kept")
        if not isinstance(created, (int, float)) or time.time() - created > self.ttl_seconds:
            return None
        if not isinstance(kept, list) or not kept or not all(isinstance(item, str) for item in kept):
            return None
        return kept

    def put(self, key: str, kept: Sequence[str], **about: Any) -> bool:
        """Store a decision; False (nothing raised) when the directory cannot be written."""
        path = self._path(key)
        record = {"key": key, "created": time.time(), "kept": list(kept), **about}
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".decision-", dir=self.directory)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, ensure_ascii=True)
            os.chmod(temporary, 0o600)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return False
        return True
