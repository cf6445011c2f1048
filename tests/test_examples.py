"""Every example script runs for real and prints what the README says it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(EXAMPLES / script)] if script.endswith(".py") else ["bash", str(EXAMPLES / script)]
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("run.sh", "  result list, 100 items; each [0]:\n    .id int\n    .number int\n"),
        ("read_fields.sh", 'result[0].title: "Different results from Betamax vs Requests"\n'),
        ("nodes.sh", "read-json  Read a JSON or JSON Lines file into the shared store.\n"),
        ("discovery.sh", "## Selected Nodes\n\n### read-json\nRead a JSON or JSON Lines file into the shared store.\n"),
        ("cache.sh", "entries: 1\n"),
        ("shell_node.sh", '    .versions dict, 25 keys: "0.1.0", "0.1.1", '),
        ("python_api.py", "result: {'type': 'list', 'length': 100}\n"),
        (
            "pocketflow_flow.py",
            "issues: {'type': 'list', 'length': 100}\nissues[0].title: 'Different results from Betamax vs Requests'\n",
        ),
    ],
)
def test_example_script_runs(script: str, expected: str) -> None:
    result = _run(script)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_read_fields_example_shows_a_reason_for_a_typo() -> None:
    result = _run("read_fields.sh")
    assert (
        "result[0].titel: null  # result[0].titel: no key 'titel' here. Did you mean result[0].title" in result.stdout
    )
