"""Lint and strict typing of the package run as part of the test suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_passes_on_the_package() -> None:
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_passes() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "pflow_structure", "tests", "benchmarks"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_ships_py_typed() -> None:
    assert (REPO / "pflow_structure" / "py.typed").is_file()
