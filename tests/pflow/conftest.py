"""Tests against a real pflow-cli release (0.8.x to 0.10.x, 0.16.x) installed from PyPI.

`.ci/run` installs each supported release into its own virtual environment (with `mcp<2`,
which pflow needs) and runs this directory there with PFLOW_STRUCTURE_REQUIRE_PFLOW=1, so a
missing pflow fails instead of skipping. In the main test environment (no pflow) these tests
are skipped, visibly. Modules for one release line (test_pflow_plugin.py: 0.8 to 0.10,
test_pflow16.py: 0.16) skip, visibly, in the other line's venv.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def require_pflow() -> None:
    """Skip the calling test module when pflow is missing, unless CI asked for it."""
    if os.environ.get("PFLOW_STRUCTURE_REQUIRE_PFLOW") == "1":
        import pflow  # noqa: F401  (fail loudly: CI asked for these tests)
    else:
        pytest.importorskip(
            "pflow",
            reason="pflow-cli is not installed here (.ci/run runs these in its own venvs): "
            "pip install pflow-cli==0.16.0, or pip install pflow-cli==0.10.0 'mcp<2' for the 0.8 to 0.10 line",
        )


def pflow_line() -> str | None:
    """The adapter serving the installed pflow-cli ("v08", "v16"), or None."""
    from pflow_structure.integrations.pflow import adapter_name, pflow_version

    found = pflow_version()
    return adapter_name(found) if found else None


def require_pflow_line(adapter: str) -> None:
    """Skip the calling module unless the installed pflow-cli is of the line ``adapter`` serves ("v08", "v16")."""
    require_pflow()
    from pflow_structure.integrations.pflow import adapter_name, pflow_version

    found = pflow_version() or "none"
    if adapter_name(found) != adapter:
        other = "pflow-cli==0.16.0" if adapter == "v16" else "pflow-cli==0.10.0 'mcp<2'"
        pytest.skip(
            f"these tests are for another pflow-cli line than the installed {found}: pip install {other}",
            allow_module_level=True,
        )


@pytest.fixture(scope="session")
def pflow_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One HOME for the session: pflow keeps its registry, settings and traces under ~/.pflow,
    and discovering its core nodes takes seconds, so it is done once."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield home


@pytest.fixture(autouse=True)
def _pflow_environment(pflow_home: Path) -> Iterator[None]:
    """Every test starts unpatched and ends unpatched, whatever it did."""
    from pflow_structure.integrations import pflow as plugin

    plugin.uninstall()
    yield
    plugin.uninstall()


def _script(name: str) -> str:
    """A console script of this environment (beside the running Python, else on PATH)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"the {name} command is not installed in this environment"
    return found


@pytest.fixture(scope="session")
def pflow_executable() -> str:
    return _script("pflow")


@pytest.fixture(scope="session")
def pflow_structure_executable() -> str:
    return _script("pflow-structure")
