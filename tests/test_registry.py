"""Node lookup: built-ins, the ``pflow_structure.nodes`` entry-point group, and how nodes run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pflow_structure import NodeNotFoundError, list_nodes, read_fields, registry_run

ENTRY_POINTS = """\
[pflow_structure.nodes]
sample-list = tests.plugins.sample_nodes:ListNode
sample-flaky = tests.plugins.sample_nodes:FlakyNode
sample-async = tests.plugins.sample_nodes:AsyncEchoNode
read-json = tests.plugins.sample_nodes:ShadowNode
sample-broken = tests.plugins.no_such_module:Nothing
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real distribution's metadata on sys.path, as `pip install` of a plugin would leave it."""
    dist_info = tmp_path / "sample_plugin-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sample-plugin\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_built_in_nodes_are_listed_with_a_description() -> None:
    listing = {item["name"]: item for item in list_nodes()}
    assert listing["read-json"] == {
        "name": "read-json",
        "description": "Read a JSON or JSON Lines file into the shared store.",
        "source": "builtin",
    }
    assert {"http", "read-json", "shell"} <= set(listing)


def test_unknown_node_suggests_close_matches() -> None:
    with pytest.raises(NodeNotFoundError) as caught:
        registry_run("read_json", {})
    assert str(caught.value) == (
        "Unknown node type 'read_json'. Did you mean read-json? Run `pflow-structure nodes` to list them."
    )


def test_plugin_node_registered_by_entry_point_runs(plugin: None) -> None:
    run = registry_run("sample-list", {"n": 4}, structure=True)
    assert run["structure"]["result"] == {"type": "list", "length": 4}
    assert read_fields(run["execution_id"], ["result[-1].title"]) == {"result[-1].title": "item 3"}


def test_plugin_nodes_are_listed_with_their_distribution(plugin: None) -> None:
    listing = {item["name"]: item for item in list_nodes()}
    assert listing["sample-list"] == {
        "name": "sample-list",
        "description": "Write a list of n records.",
        "source": "sample-plugin",
    }


def test_a_plugin_cannot_shadow_a_built_in_node(plugin: None) -> None:
    listing = {item["name"]: item for item in list_nodes()}
    assert listing["read-json"]["source"] == "builtin"


def test_a_broken_plugin_is_listed_not_fatal(plugin: None) -> None:
    listing = {item["name"]: item for item in list_nodes()}
    assert listing["sample-broken"]["description"].startswith("(cannot be loaded: ModuleNotFoundError")


def test_node_retries_are_honoured(plugin: None) -> None:
    run = registry_run("sample-flaky", {})
    assert read_fields(run["execution_id"], ["attempts"]) == {"attempts": 3}


def test_async_nodes_run(plugin: None) -> None:
    run = registry_run("sample-async", {"a": 1})
    assert read_fields(run["execution_id"], ["echo.a"]) == {"echo.a": 1}


def test_async_nodes_run_inside_a_running_event_loop(plugin: None) -> None:
    async def main() -> dict[str, object]:
        return registry_run("sample-async", {"b": 2})

    run = asyncio.run(main())
    assert read_fields(run["execution_id"], ["echo.b"]) == {"echo.b": 2}
