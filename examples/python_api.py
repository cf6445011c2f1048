"""The Python API: run a node, look at the structure, read two fields.

Run from the repository root: python examples/python_api.py
"""

from __future__ import annotations

from pathlib import Path

from pflow_structure import read_fields, registry_run

DATA = Path(__file__).resolve().parent / "data" / "github_issues.json"

run = registry_run("read-json", {"path": str(DATA)})
print("execution id:", run["execution_id"])
print("paths:", len(run["structure"]), "fields:", run["field_count"])
print("result:", run["structure"]["result"])
values = read_fields(run["execution_id"], ["result[0].title", "result[*].number"], limit=5)
for path, value in values.items():
    print(f"{path}: {value!r}")
