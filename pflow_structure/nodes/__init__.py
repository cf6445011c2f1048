"""Built-in nodes, so the main job runs offline on real data."""

from __future__ import annotations

BUILTIN_NODES: dict[str, str] = {
    "http": "pflow_structure.nodes.http:HttpNode",
    "read-json": "pflow_structure.nodes.read_json:ReadJsonNode",
    "shell": "pflow_structure.nodes.shell:ShellNode",
}
