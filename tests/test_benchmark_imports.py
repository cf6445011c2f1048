"""Every name the benchmarks import from the package exists.

The benchmarks run by hand (most of them) or as a smoke run in CI (a few), and many import inside
functions: a name that moved breaks them only when someone runs them. This reads their imports
without running them, so a move shows here, in the suite.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCHMARKS = sorted((REPO / "benchmarks").glob("*.py"))


def package_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each ``from pflow_structure... import name`` in the file, nested ones too."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pflow_structure":
            found.extend((node.lineno, node.module, alias.name) for alias in node.names)
    return found


def test_the_benchmarks_import_from_the_package() -> None:
    # the check below has something to check
    assert sum(len(package_imports(path)) for path in BENCHMARKS) > 50


@pytest.mark.parametrize("path", [p for p in BENCHMARKS if package_imports(p)], ids=lambda p: p.name)
def test_every_name_a_benchmark_imports_from_the_package_exists(path: Path) -> None:
    missing = []
    for line, module_name, name in package_imports(path):
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            continue
        try:
            importlib.import_module(f"{module_name}.{name}")
        except ModuleNotFoundError:
            missing.append(f"benchmarks/{path.name}:{line}: from {module_name} import {name}")
    assert missing == []
