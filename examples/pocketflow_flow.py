"""A PocketFlow flow with a structure-only node: the next node reads one field through the lazy view.

`FetchIssues` loads a recorded GitHub issue list (100 issues, 470 KB of JSON) as an API call would.
Wrapped structure-only, its outputs go to the execution cache and `shared["fetch"]` holds a read-only
dict with the structure and the execution id; `NewestTitle` reads the one field it needs from there.

Run from the repository root: python examples/pocketflow_flow.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pocketflow import Flow, Node

from pflow_structure import StructureOnlyNodeWrapper

DATA = Path(__file__).resolve().parent / "data" / "github_issues.json"


class FetchIssues(Node):  # type: ignore[misc]
    """Stands in for GET /repos/{owner}/{repo}/issues."""

    def exec(self, prep_res: Any) -> Any:
        return json.loads(DATA.read_text(encoding="utf-8"))

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> None:
        shared["issues"] = exec_res  # the wrapper collects this as shared["fetch"]["issues"]


class NewestTitle(Node):  # type: ignore[misc]
    def prep(self, shared: dict[str, Any]) -> Any:
        # Reads one field from the cache; shared["fetch"]["issues"] would load all 100 issues.
        return shared["fetch"].read("issues[0].title")["issues[0].title"]

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> None:
        shared["newest_title"] = prep_res


fetch = StructureOnlyNodeWrapper(FetchIssues(), "fetch", node_type="fetch-issues")
fetch >> NewestTitle()
shared: dict[str, Any] = {}
Flow(start=fetch).run(shared)

view = shared["fetch"]
print("execution id:", view["_execution_id"])
print("in the shared store:", repr(view))
print("paths:", len(view["_structure"]), "fields:", view.summary["field_count"])
print("issues:", view["_structure"]["issues"])
print("issues[0].title:", repr(shared["newest_title"]))
