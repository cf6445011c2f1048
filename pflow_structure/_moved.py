"""Old import paths of modules that moved (deprecated; they still import, with a warning).

A small import hook instead of a stub file at each old path, so that no file sits where the
moved one was (version control then follows the move). ``import pflow_structure.cli_fast``
gives a module that forwards every name to the new home and warns once with
``DeprecationWarning``. Remove an entry one release after its CHANGELOG line.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

MOVED = {
    "pflow_structure.binary": "pflow_structure.encoding.binary",
    "pflow_structure.cli_fast": "pflow_structure.cli.entry",
    "pflow_structure.failure_log": "pflow_structure.render.failure_log",
    "pflow_structure.jsontext": "pflow_structure.render.output_text",
    "pflow_structure.service_discovery": "pflow_structure.service.discovery",
}
# Names that left the moved module for a neighbour: old path → {name: new module}.
MOVED_NAMES = {
    "pflow_structure.cli_fast": {
        "ReadFieldsArgs": "pflow_structure.cli.read_fields",
        "TEXT_MAX_ITEMS": "pflow_structure.cli.read_fields",
        "read_fields_output": "pflow_structure.cli.read_fields",
        "format_json": "pflow_structure.render.output_text",
        "safe_text": "pflow_structure.render.output_text",
    },
}


# Plain classes (the import protocols are duck-typed): importlib.abc would cost start-up time.
class _Forward:
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module; exec_module fills it in

    def exec_module(self, module: types.ModuleType) -> None:
        old = module.__name__
        new = MOVED[old]
        warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        moved_names = MOVED_NAMES.get(old, {})

        def forward(name: str) -> Any:
            home = moved_names.get(name, new)
            try:
                return getattr(importlib.import_module(home), name)
            except AttributeError:
                raise AttributeError(f"module {old!r} (now {new}) has no attribute {name!r}") from None

        module.__getattr__ = forward  # type: ignore[method-assign]
        module.__doc__ = f"Deprecated: moved to {new}."


class MovedModuleFinder:
    """Finds the old paths in :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Forward())  # type: ignore[arg-type]


def install() -> None:
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
