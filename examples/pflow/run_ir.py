"""Run a pflow workflow IR (JSON) with one structure-only node, from Python.

pflow-cli 0.8 to 0.10 run `.pflow.md` files from the command line (see issue_titles.pflow.md and
`pflow-structure pflow`); Python callers compile the JSON IR themselves. `install()` patches the
installed pflow once; the `load` node's output then lives in the execution cache, and the
downstream templates `${load.stdout[0].title}` and `${load.stdout}` are served from it.

    python examples/pflow/run_ir.py [ISSUES_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pflow.registry import Registry
from pflow.runtime.compiler import compile_ir_to_flow

from pflow_structure.integrations.pflow import install

HERE = Path(__file__).resolve().parent


def main() -> None:
    install()
    issues = sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "data" / "github_issues.json")
    ir = json.loads((HERE / "issue_titles.json").read_text(encoding="utf-8"))
    flow = compile_ir_to_flow(ir, registry=Registry(), initial_params={"issues_file": issues})
    shared: dict[str, object] = {}
    flow.run(shared)
    load = shared["load"]
    assert isinstance(load, dict)
    print(f"load: execution {load['_execution_id']}, {len(load['_structure'])} template paths in the cache")
    print(f"first: {shared['first']['stdout'].strip()}")  # type: ignore[index]
    print(f"count: {shared['count']['result']}")  # type: ignore[index]


if __name__ == "__main__":
    main()
