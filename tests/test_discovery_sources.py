"""pflow's registry.json is read-only input we do not control: a bad entry is skipped with a
warning, never a crash that hides every other node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.discovery import build_discovery_context, read_pflow_registry

GOOD = {"docstring": 'Fetch a page.\n\nInterface:\n- Reads: shared["url"]: str  # The URL\n'}


def _registry(tmp_path: Path, nodes: dict[str, Any]) -> Path:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({"version": "1", "nodes": nodes}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "bad",
    [
        {"interface": {"description": 5}},
        {"interface": {"description": "x", "actions": 5}},
        {"interface": {"description": "x", "inputs": {"url": "str"}}},
        {"interface": {"description": "x", "outputs": [{"key": "a", "structure": [1]}]}},
    ],
)
def test_an_interface_of_the_wrong_shape_is_skipped_with_a_warning(tmp_path: Path, bad: dict[str, Any]) -> None:
    path = _registry(tmp_path, {"bad": bad, "good": GOOD})
    found = read_pflow_registry(path)
    assert list(found.metadata) == ["good"]
    assert found.warnings == [
        f"pflow registry {path}: entry 'bad' has an interface of the wrong shape; skipped. "
        "Run `pflow registry list` to rebuild the file."
    ]


def test_a_lone_surrogate_in_a_docstring_becomes_a_replacement_character(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text('{"nodes": {"n\\ud800": {"docstring": "Say \\ud800 hi."}}}', encoding="utf-8")
    found = read_pflow_registry(path)
    assert list(found.metadata) == ["n\ufffd"]
    assert found.metadata["n\ufffd"]["interface"]["description"] == "Say \ufffd hi."
    build_discovery_context(registry_metadata=found.metadata).encode("utf-8")


def test_json_nested_too_deeply_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    found = read_pflow_registry(path)
    assert (found.metadata, len(found.warnings)) == ({}, 1)
    assert "nested too deeply" in found.warnings[0]


def test_a_stored_interface_of_the_right_shape_is_kept(tmp_path: Path) -> None:
    interface = {
        "description": "Search issues",
        "inputs": [{"key": "q", "type": "str", "description": "query"}],
        "outputs": [{"key": "issues", "type": "list[dict]", "items": {"title": {"type": "str"}}}],
        "params": [],
        "actions": ["default"],
    }
    found = read_pflow_registry(_registry(tmp_path, {"mcp-search": {"interface": interface}}))
    assert found.metadata["mcp-search"]["interface"] == interface
    assert found.warnings == []


def test_a_workflow_file_whose_name_differs_is_refused_with_the_fix(tmp_path: Path) -> None:
    from pflow_structure.discovery import load_workflow, save_workflow
    from pflow_structure.errors import InvalidWorkflowError

    save_workflow(tmp_path, "b", "a flow", {"ir_version": "0.1.0", "nodes": [], "edges": []})
    (tmp_path / "b.json").rename(tmp_path / "a.json")
    with pytest.raises(InvalidWorkflowError) as caught:
        load_workflow(tmp_path, "a")
    assert str(caught.value) == (
        f"{tmp_path / 'a.json'} holds the workflow named 'b'; rename the file to b.json or set its name to 'a'."
    )
