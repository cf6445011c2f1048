"""`pflow-structure pflow enable|disable|status`: plain `pflow` with the plugin, on a real pflow-cli.

These tests write the start-up file into this environment's site-packages (CI's pflow venv) and
always remove it again. Each `pflow` runs as a new process, as a user's would.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pflow.conftest import pflow_line, require_pflow

require_pflow()

from pflow_structure.integrations.pflow import pflow_version  # noqa: E402
from pflow_structure.integrations.pflow.startup import PTH_TEXT, pth_path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ISSUES = REPO / "examples" / "data" / "github_issues.json"
OURS = "(heuristic filter; "  # a line only our structure prints


def _cli(executable: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([executable, *args], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)


@pytest.fixture
def disabled(pflow_structure_executable: str) -> Iterator[str]:
    """The start-up file is absent before and after the test, whatever the test did."""
    pth_path().unlink(missing_ok=True)
    yield pflow_structure_executable
    pth_path().unlink(missing_ok=True)


def _run_node(pflow: str) -> subprocess.CompletedProcess[str]:
    """The plugin's main command on this pflow line: `pflow probe` (0.16) or `pflow registry run` (0.8-0.10)."""
    if pflow_line() == "v16":
        return _cli(pflow, "probe", "read-file", f"file_path={ISSUES}")
    return _cli(pflow, "registry", "run", "shell", f"command=cat {ISSUES}")


def test_enable_makes_plain_pflow_answer_with_our_structure_and_disable_undoes_it(
    disabled: str, pflow_executable: str, isolated_cache: Path
) -> None:
    enabled = _cli(disabled, "pflow", "enable")
    assert enabled.returncode == 0, enabled.stderr
    assert enabled.stdout == f"Enabled: plain `pflow` runs with the plugin ({pth_path()}).\n"
    assert pth_path().read_text() == PTH_TEXT

    ran = _run_node(pflow_executable)
    assert ran.returncode == 0, ran.stderr
    through_us = _run_node_via(disabled)
    assert _normalised(ran.stdout) == _normalised(through_us.stdout)  # as through `pflow-structure pflow`
    output = "content" if pflow_line() == "v16" else "stdout"
    if pflow_line() == "v16":
        assert f"  ✓ ${{{output}[0].title}} (str, " in ran.stdout
        assert OURS in ran.stdout
    execution_id = _execution_id(ran.stdout)
    assert (isolated_cache / f"{execution_id}.json").exists()  # our cache, our id
    read = _cli(pflow_executable, "read-fields", execution_id, f"{output}[0].title")
    assert read.returncode == 0, read.stderr
    assert read.stdout == f"{output}[0].title: Different results from Betamax vs Requests\n"

    again = _cli(disabled, "pflow", "enable")
    assert again.stdout == f"Already enabled: plain `pflow` runs with the plugin ({pth_path()}).\n"
    off = _cli(disabled, "pflow", "disable")
    assert off.returncode == 0
    assert off.stdout == f"Disabled: plain `pflow` is pflow's own ({pth_path()}).\n"
    assert not pth_path().exists()
    before = sorted(isolated_cache.glob("exec-*.json"))
    own = _run_node(pflow_executable)
    assert own.returncode == 0, own.stderr
    assert OURS not in own.stdout
    assert not (isolated_cache / f"{_execution_id(own.stdout)}.json").exists()  # pflow's own cache again
    assert sorted(isolated_cache.glob("exec-*.json")) == before


def _run_node_via(pflow_structure: str) -> subprocess.CompletedProcess[str]:
    if pflow_line() == "v16":
        return _cli(pflow_structure, "pflow", "probe", "read-file", f"file_path={ISSUES}")
    return _cli(pflow_structure, "pflow", "registry", "run", "shell", f"command=cat {ISSUES}")


def _execution_id(text: str) -> str:
    return next(line.split()[-1] for line in text.splitlines() if line.startswith("Execution ID: "))


def _normalised(text: str) -> str:
    """The output without what differs between two runs: the execution id and the time taken."""
    text = re.sub(r"exec-\d+-[0-9a-f]+", "exec-ID", text)
    return re.sub(r"Execution time: \d+ms", "Execution time: Nms", text)


def test_status_says_enabled_or_disabled_and_for_which_release(disabled: str) -> None:
    first = _cli(disabled, "pflow", "status")
    assert first.returncode == 0
    assert first.stdout == (
        f"The pflow plugin is disabled for plain `pflow` in this environment ({pth_path()}).\n"
        f"pflow-cli {pflow_version()}: supported.\n"
    )
    _cli(disabled, "pflow", "enable")
    second = _cli(disabled, "pflow", "status")
    assert second.stdout.startswith("The pflow plugin is enabled for plain `pflow` in this environment (")


def test_the_start_up_file_leaves_other_programs_of_the_environment_alone(disabled: str) -> None:
    import sys

    _cli(disabled, "pflow", "enable")
    probe = "import sys; print(sorted(m for m in sys.modules if m.startswith(('pflow', 'pflow_structure'))))"
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert ran.stdout == "[]\n"
