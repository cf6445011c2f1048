"""docs/ARCHITECTURE.md names every file of the package (modules and package data), and only files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pflow_structure"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# A file line: "- `cli/entry.py`: what it is." or "- `filtering/learned.json`: what it holds."
MODULE_LINE = re.compile(r"^- `([\w/]+\.\w+)`: \S", re.MULTILINE)


def _modules() -> set[str]:
    """Every file the package is made of: its modules and its data (``py.typed``, ``learned.json``)."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def _documented() -> list[str]:
    return MODULE_LINE.findall(DOC.read_text(encoding="utf-8"))


def test_every_file_of_the_package_has_a_line_in_the_architecture_doc() -> None:
    missing = sorted(_modules() - set(_documented()))
    assert missing == [], f"add a line '- `FILE`: what it is.' to docs/ARCHITECTURE.md for {missing}"


def test_the_architecture_doc_names_no_file_that_does_not_exist() -> None:
    stale = sorted(set(_documented()) - _modules())
    assert stale == []


def test_each_module_has_one_line() -> None:
    documented = _documented()
    assert sorted(name for name in set(documented) if documented.count(name) > 1) == []


def test_the_package_s_data_files_are_counted_as_files_of_the_package() -> None:
    assert {"py.typed", "filtering/learned.json", "filtering/tree.py"} <= _modules()
    assert not any(name.endswith(".pyc") for name in _modules())
