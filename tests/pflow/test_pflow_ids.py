"""pflow's own `read-fields`, through our plugin, refuses a path given as an execution id: on every
pflow line (0.8 to 0.10 and 0.16), the one home of this behaviour for pflow (ours: tests/test_security.py)."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO
from tests.pflow.conftest import require_pflow

require_pflow()


def test_pflow_read_fields_refuses_a_path_as_an_execution_id(pflow_structure_executable: str) -> None:
    # PYTHONWARNINGS: pydantic-settings warns about mcp 1.22's models on stderr; the error line is what is checked
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8", "PYTHONWARNINGS": "ignore"}
    read = subprocess.run(
        [pflow_structure_executable, "pflow", "read-fields", "../../etc/passwd", "root"],
        capture_output=True, text=True, env=env, timeout=300, cwd=REPO, check=False,
    )  # fmt: skip
    assert (read.returncode, read.stdout) == (1, "")
    assert read.stderr == (
        "❌ Execution not found: '../../etc/passwd' is not a valid execution id. "
        "Ids look like exec-1763463202-0cd0c8fe; copy the one printed by `pflow-structure run`.\n"
    )
