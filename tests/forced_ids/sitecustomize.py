"""Run by every Python process a test starts while PFLOW_STRUCTURE_TEST_IDS is short or long: tests/conftest.py puts
this folder on PYTHONPATH (and the short hex parts in PFLOW_STRUCTURE_TEST_ID_PARTS), so the servers and commands
a test starts make ids of the same length in tokens as the test process does. Not a package: Python's ``site``
imports the first ``sitecustomize`` on the path at start-up. Only os, sys and time are imported here (the start-up
tests list the modules read-fields must not load)."""

from __future__ import annotations

import os
import sys
import time


def _draw(below: int) -> int:
    # at random, not in turn: processes writing one cache in one second would otherwise walk into each other's ids
    return int.from_bytes(os.urandom(6), "big") % below


def _longest() -> str:
    """Digits and letters taking turns (``0a0a0a0a``): each character a token of its own (as in conftest)."""
    number = _draw(10**4 * 6**4)
    digits, letters = divmod(number, 6**4)
    return "".join(f"{digits // 10**k % 10}{'abcdef'[letters // 6**k % 6]}" for k in (3, 2, 1, 0))


class _ForceIdsOnImport:
    """Replaces ``new_execution_id`` as ``pflow_structure.cache.ids`` is imported, before store and redis_store
    import the name; a process that never imports the package never loads it (a test checks that of pflow's
    other programs)."""

    def __init__(self, new_execution_id: object) -> None:
        self.new_execution_id = new_execution_id

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "pflow_structure.cache.ids":
            return None
        sys.meta_path.remove(self)  # once
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *args: None)(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module = self._then_force(spec.loader.exec_module)
                return spec
        return None

    def _then_force(self, run: object) -> object:
        def exec_module(module: object) -> None:
            run(module)  # type: ignore[operator]
            module.new_execution_id = self.new_execution_id  # type: ignore[attr-defined]

        return exec_module


def _install() -> None:
    length = os.environ.get("PFLOW_STRUCTURE_TEST_IDS")
    parts = os.environ.get("PFLOW_STRUCTURE_TEST_ID_PARTS", "").split()
    if length not in ("short", "long") or (length == "short" and not parts):
        return

    def new_execution_id(now: float | None = None) -> str:
        hex_part = parts[_draw(len(parts))] if length == "short" else _longest()
        return f"exec-{int(time.time() if now is None else now)}-{hex_part}"

    sys.meta_path.insert(0, _ForceIdsOnImport(new_execution_id))


_install()
