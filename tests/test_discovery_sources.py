"""pflow's registry.json is read-only input we do not control: a bad entry is skipped with a
warning, never a crash that hides every other node."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.discovery import build_discovery_context, build_planning_context, read_pflow_registry

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


def test_a_workflow_file_whose_record_names_another_is_loaded_by_its_file_name(tmp_path: Path) -> None:
    from pflow_structure.discovery import load_workflow, save_workflow

    save_workflow(tmp_path, "b", "a flow", {"ir_version": "0.1.0", "nodes": [], "edges": []})
    (tmp_path / "b.json").rename(tmp_path / "a.json")
    warnings: list[str] = []
    assert load_workflow(tmp_path, "a", warnings=warnings)["name"] == "a"
    assert warnings == [
        f"{tmp_path / 'a.json'} names its workflow 'b'; it is listed as 'a', its file name, which show, delete and "
        "describe use. Set its name to 'a' (or save it again) to silence this warning."
    ]


def test_text_that_is_not_valid_unicode_becomes_u_fffd_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text(
        '{"nodes": {"y": {"interface": {"description": "ok", "inputs": [{"key": "k", "type": "str", '
        '"description": "\\udfff"}]}}, "d\\ud800": {"docstring": "Doc \\ud800."}, "good": ' + json.dumps(GOOD) + "}}",
        encoding="utf-8",
    )
    found = read_pflow_registry(path)
    assert sorted(found.metadata) == ["d\ufffd", "good", "y"]
    assert found.metadata["y"]["interface"]["inputs"][0]["description"] == "\ufffd"
    assert found.metadata["d\ufffd"]["docstring"] == "Doc \ufffd."
    assert found.warnings == [
        f"pflow registry {path} holds 3 text value(s) that are not valid Unicode (lone surrogate escapes such as "
        "\\ud800); they are shown as U+FFFD. Run `pflow registry list` to rebuild it."
    ]
    context = build_discovery_context(None, None, found.metadata)
    assert "- y: ok" in context and "- good: Fetch a page." in context
    planning = build_planning_context(["y", "d\ufffd"], [], found.metadata)
    assert isinstance(planning, str) and "- `k: str` - \ufffd" in planning


@pytest.mark.parametrize(("kind", "reason"), [("fifo", "not a regular file"), ("directory", "Is a directory")])
def test_a_registry_path_that_is_not_a_regular_file_is_a_warning_not_a_hang(
    tmp_path: Path, kind: str, reason: str
) -> None:
    path = tmp_path / "registry.json"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    found = read_pflow_registry(path)  # a FIFO used to block here forever, waiting for a writer
    assert (found.metadata, found.warnings) == (
        {},
        [f"pflow registry {path} cannot be read ({reason}); its nodes are left out."],
    )


def test_a_registry_over_32_mb_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    with path.open("wb") as stream:
        stream.truncate(32 * 1024 * 1024 + 1)
    found = read_pflow_registry(path)
    assert found.warnings == [
        f"pflow registry {path} is too large ({32 * 1024 * 1024 + 1:,} bytes; files over 33,554,432 bytes are "
        "skipped); its nodes are left out."
    ]
