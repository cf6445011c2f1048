"""Execution ids: ``exec-{unix seconds}-{hex}``, at most 32 characters.

An id that does not match is refused before the filesystem is touched, so ``../x``,
absolute paths and NUL bytes never reach ``open``.
"""

from __future__ import annotations

import re
import time

from pflow_structure.errors import InvalidExecutionIdError

MAX_ID_LENGTH = 32
_ID_PATTERN = re.compile(r"exec-[0-9]{1,12}-[0-9a-f]{8,16}")


def new_execution_id(now: float | None = None) -> str:
    """A fresh id: ``exec-1763463202-0cd0c8fe`` (seconds, then 32 random bits)."""
    import secrets  # write path only: keeps read-fields start-up short

    seconds = int(time.time() if now is None else now)
    return f"exec-{seconds}-{secrets.token_hex(4)}"


def is_valid_execution_id(execution_id: object) -> bool:
    return (
        isinstance(execution_id, str)
        and len(execution_id) <= MAX_ID_LENGTH
        and _ID_PATTERN.fullmatch(execution_id) is not None
    )


def validate_execution_id(execution_id: object) -> str:
    """Return the id unchanged, or raise :class:`InvalidExecutionIdError`."""
    if not is_valid_execution_id(execution_id):
        raise InvalidExecutionIdError(str(execution_id))
    assert isinstance(execution_id, str)
    return execution_id
