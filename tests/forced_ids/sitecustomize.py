"""Run by every Python process a test starts while PFLOW_STRUCTURE_TEST_IDS is short or long: tests/conftest.py puts
this folder on PYTHONPATH (and the short hex parts in PFLOW_STRUCTURE_TEST_ID_PARTS), so the servers and commands
a test starts make ids of the same length in tokens as the test process does. Not a package: Python's ``site``
imports the first ``sitecustomize`` on the path at start-up. Only os and time are imported here (the start-up
tests list the modules read-fields must not load)."""

from __future__ import annotations

import os
import time


def _draw(below: int) -> int:
    # at random, not in turn: processes writing one cache in one second would otherwise walk into each other's ids
    return int.from_bytes(os.urandom(6), "big") % below


def _longest() -> str:
    """Digits and letters taking turns (``0a0a0a0a``): each character a token of its own (as in conftest)."""
    number = _draw(10**4 * 6**4)
    digits, letters = divmod(number, 6**4)
    return "".join(f"{digits // 10**k % 10}{'abcdef'[letters // 6**k % 6]}" for k in (3, 2, 1, 0))


def _install() -> None:
    length = os.environ.get("PFLOW_STRUCTURE_TEST_IDS")
    parts = os.environ.get("PFLOW_STRUCTURE_TEST_ID_PARTS", "").split()
    if length not in ("short", "long") or (length == "short" and not parts):
        return
    try:
        from pflow_structure.cache import ids
    except ImportError:  # another interpreter without the package (the compatibility venvs): nothing to force
        return

    def new_execution_id(now: float | None = None) -> str:
        hex_part = parts[_draw(len(parts))] if length == "short" else _longest()
        return f"exec-{int(time.time() if now is None else now)}-{hex_part}"

    ids.new_execution_id = new_execution_id  # before store and redis_store import the name


_install()
