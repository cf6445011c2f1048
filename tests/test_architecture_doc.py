"""docs/ARCHITECTURE.md names every module of the package, and only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pflow_structure"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
# A module line: "- `cli/entry.py`: what it is."
MODULE_LINE = re.compile(r"^- `([\w/]+\.py)`: \S", re.MULTILINE)


def _modules() -> set[str]:
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}


def _documented() -> list[str]:
    return MODULE_LINE.findall(DOC.read_text(encoding="utf-8"))


def test_every_module_has_a_line_in_the_architecture_doc() -> None:
    missing = sorted(_modules() - set(_documented()))
    assert missing == [], f"add a line '- `MODULE`: what it is.' to docs/ARCHITECTURE.md for {missing}"


def test_the_architecture_doc_names_no_module_that_does_not_exist() -> None:
    stale = sorted(set(_documented()) - _modules())
    assert stale == []


def test_each_module_has_one_line() -> None:
    documented = _documented()
    assert sorted(name for name in set(documented) if documented.count(name) > 1) == []
