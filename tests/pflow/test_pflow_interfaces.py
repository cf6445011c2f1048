"""Every Interface docstring shipped with the installed pflow-cli parses without a `_raw` fallback."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.pflow.conftest import pflow_line, require_pflow

require_pflow()

from pflow_structure.discovery import parse_interface, read_pflow_registry  # noqa: E402

# What these checks know of pflow's node docstrings and registry is 0.8 to 0.10's: 0.16 dropped the
# GitHub nodes and `pflow registry list`, and its LLMNode documents nested outputs our interface
# parser does not read yet. The checks that hold on 0.16 run there too.
wrapper_chain_releases_only = pytest.mark.skipif(
    pflow_line() != "v08", reason="pflow-cli 0.16 node docstrings and registry differ (see the comment above)"
)

# Nodes every supported release (0.8.1, 0.9.0, 0.10.0) ships, so a scan that finds nothing fails.
EXPECTED = {"ReadFileNode", "WriteFileNode", "GetIssueNode", "ListIssuesNode", "HttpNode", "ShellNode", "LLMNode"}


def _node_docstrings() -> dict[str, str]:
    """Class name → docstring of each class with an Interface block under pflow/nodes (read, not imported)."""
    spec = importlib.util.find_spec("pflow")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations))) / "nodes"
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                doc = ast.get_docstring(node)
                if doc and "Interface:" in doc:
                    found[f"{path.relative_to(root)}:{node.name}"] = doc
    return found


def _raw_paths(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        found += [path] if "_raw" in value else []
        for key, child in value.items():
            found += _raw_paths(child, f"{path}/{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _raw_paths(child, f"{path}[{index}]")
    return found


@wrapper_chain_releases_only
def test_the_scan_finds_the_nodes_every_release_ships() -> None:
    names = {key.rsplit(":", 1)[1] for key in _node_docstrings()}
    assert EXPECTED - names == set()


@wrapper_chain_releases_only
def test_every_pflow_node_docstring_parses_without_raw() -> None:
    failures = {key: _raw_paths(parse_interface(doc)) for key, doc in _node_docstrings().items()}
    assert {key: paths for key, paths in failures.items() if paths} == {}


def test_no_pflow_node_gets_a_parameter_named_default() -> None:
    params = {
        key: [param["key"] for param in parse_interface(doc)["params"]] for key, doc in _node_docstrings().items()
    }
    assert {key: names for key, names in params.items() if "default" in names} == {}


@wrapper_chain_releases_only
def test_nested_output_structure_of_get_issue() -> None:
    doc = next(doc for key, doc in _node_docstrings().items() if key.endswith(":GetIssueNode"))
    issue = parse_interface(doc)["outputs"][0]
    assert (issue["key"], issue["type"], issue["structure"]["author"]["structure"]["login"]["type"]) == (
        "issue_data",
        "dict",
        "str",
    )


@pytest.mark.slow
@wrapper_chain_releases_only
def test_registry_file_written_by_pflow_is_reparsed(pflow_home: Path, pflow_executable: str) -> None:
    subprocess.run([pflow_executable, "registry", "list"], capture_output=True, text=True, timeout=300, check=True)
    sources = read_pflow_registry(pflow_home / ".pflow" / "registry.json")
    read_file = sources.metadata["read-file"]
    params = [(param["key"], param["type"]) for param in read_file["interface"]["params"]]
    assert (sources.warnings, params) == ([], [("file_path", "str"), ("encoding", "str")])
