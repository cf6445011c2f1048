"""Reading the files discovery does not control: saved workflows and pflow's ``registry.json``.

- :func:`read_regular_file` opens without blocking (a FIFO or a device at the path is refused,
  never waited on), refuses anything but a regular file and reads at most ``limit`` bytes.
- :func:`clean_json_text` replaces lone surrogates in a parsed JSON value with U+FFFD. JSON may
  spell them as escapes (``"\\ud800"``), :func:`json.loads` restores them, and such text cannot
  be written as UTF-8: one of them would break every listing that holds it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import deque
from pathlib import Path
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs, so any left is a lone one


def read_regular_file(path: Path, limit: int, *, follow_symlinks: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; :class:`OSError` otherwise.

    Opened with ``O_NONBLOCK``, so a FIFO at ``path`` is refused at once instead of waiting for a
    writer; a symbolic link is refused (``ELOOP``) unless ``follow_symlinks``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes; files over {limit:,} bytes are skipped")
        data = stream.read(limit + 1)
        if len(data) > limit:  # it grew while we read
            raise OSError(errno.EFBIG, f"over {limit:,} bytes; files over {limit:,} bytes are skipped")
        return data


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub(REPLACEMENT, text)


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (text that cannot be encoded as UTF-8)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def clean_json_text(value: Any) -> tuple[Any, int]:
    """``value`` (as :func:`json.loads` returns it) with lone surrogates replaced in every string and
    key, and how many strings changed. Containers are changed in place; no recursion, so any depth
    that ``json.loads`` accepts is fine."""
    changed = 0

    def clean(item: Any) -> Any:
        nonlocal changed
        if isinstance(item, str) and has_lone_surrogate(item):
            changed += 1
            return clean_text(item)
        return item

    if isinstance(value, str):
        return clean(value), changed
    pending: list[Any] = [value]
    while pending:
        container = pending.pop()
        if isinstance(container, list):
            for index, item in enumerate(container):
                if isinstance(item, (list, dict)):
                    pending.append(item)
                else:
                    container[index] = clean(item)
        elif isinstance(container, dict):
            if any(isinstance(key, str) and has_lone_surrogate(key) for key in container):
                items = list(container.items())
                container.clear()
                container.update((clean(key), item) for key, item in items)  # a later duplicate key wins
            for key, item in list(container.items()):
                if isinstance(item, (list, dict)):
                    pending.append(item)
                elif isinstance(item, str):
                    container[key] = clean(item)
    return value, changed


def invalid_text_at(value: Any) -> str | None:
    """Where the first lone surrogate of ``value`` is (``nodes[0].params.x``, ``a key in ir``, ``""`` for
    ``value`` itself), or ``None`` when all its text is valid Unicode. No recursion."""
    pending: deque[tuple[Any, str]] = deque([(value, "")])  # breadth first: the shallowest is named
    while pending:
        item, where = pending.popleft()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and has_lone_surrogate(key):
                    return f"a key in {where}" if where else "a key"
                pending.append((child, f"{where}.{key}" if where else str(key)))
        elif isinstance(item, (list, tuple)):
            pending.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return None
