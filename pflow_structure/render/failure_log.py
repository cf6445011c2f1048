"""The failure log: one JSON line per transformation that fell back to the raw answer.

Whatever wraps another tool's answer (the MCP proxy, later the compact renderers) must never
answer worse than no wrapper: when its transformation fails it returns the original and
records what happened here, for later analysis (seed 004, R2). Each record is one line,
written with a single ``write`` on a file opened ``O_APPEND``, so lines from concurrent
processes never interleave. A new log is created private (0600, and any directory it needs
0700); an existing file or directory keeps the mode its owner gave it. Logging never raises
and never waits: a log that cannot be written (a FIFO nobody reads, a symlink, no space) must
not turn a served answer into an error.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_ERROR_CHARS = 2000


def failure_record(operation: str, input_bytes: int, error: BaseException | str, **extra: Any) -> dict[str, Any]:
    """The fields every line has: UTC timestamp, operation (a tool name), input size, error."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "operation": operation,
        "input_bytes": input_bytes,
        "error": message[:MAX_ERROR_CHARS],
        **extra,
    }


def append_failure(log_path: Path, record: Mapping[str, Any]) -> bool:
    """Append ``record`` as one JSON line; False (and nothing raised) when the log cannot be written.

    A record ``json`` cannot encode (a cycle, a key that is not a string) is written with its
    keys as strings and its non-scalar values as their ``repr``, so the line is still there.
    """
    try:
        line = (json.dumps(record, ensure_ascii=True, default=repr) + "\n").encode("ascii")
    except (TypeError, ValueError):  # a key that is not a string, a cycle: keep what surely encodes
        fallback = {str(key): _plain(value) for key, value in record.items()}
        line = (json.dumps(fallback, ensure_ascii=True) + "\n").encode("ascii")
    try:
        log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(log_path, flags, 0o600)
    except OSError:
        return False
    try:
        os.write(fd, line)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def read_failures(log_path: Path) -> list[dict[str, Any]]:
    """Every record in the log (a line that is not JSON is returned as ``{"unreadable": line}``)."""
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({"unreadable": line})
    return records
