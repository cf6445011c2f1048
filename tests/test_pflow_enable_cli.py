"""`pflow-structure pflow enable` where no pflow-cli is installed: refused, nothing written.

(With a real pflow-cli, tests/pflow/test_pflow_enable.py runs in CI's pflow venvs.)"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from pflow_structure.integrations.pflow.startup import pth_path


@pytest.mark.skipif(importlib.util.find_spec("pflow") is not None, reason="pflow-cli is installed here")
def test_enable_without_pflow_says_what_to_install_and_writes_nothing() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "pflow", "enable"], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 1
    assert ran.stderr == (
        "Error: pflow-cli is not installed; the pflow plugin needs pflow-cli 0.8.x to 0.10.x (the wrapper-chain "
        "compiler) or 0.16.x (the workflow engine): pip install 'pflow-cli==0.16.0', or pip install "
        "'pflow-cli>=0.8,<0.11' 'mcp<2'\n"
    )
    assert not pth_path().exists()


def test_status_and_disable_work_without_pflow() -> None:
    status = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "pflow", "status"], capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0
    assert status.stdout.startswith(
        f"The pflow plugin is disabled for plain `pflow` in this environment ({pth_path()}).\n"
    )
    disabled = subprocess.run(
        [sys.executable, "-m", "pflow_structure", "pflow", "disable"], capture_output=True, text=True, timeout=60
    )
    assert disabled.stdout == f"Already disabled: plain `pflow` is pflow's own ({pth_path()}).\n"
