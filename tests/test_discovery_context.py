"""Discovery and planning contexts (golden files), missing components, size limits, node sources.

Golden files live in tests/data/discovery/*.md; after an intended change of the text, rewrite
them with ``python tests/test_discovery_context.py`` and review the diff.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.discovery import (
    DISCOVERY_LIMIT,
    GROUP_LIMIT,
    build_context,
    build_discovery_context,
    build_planning_context,
    collect_node_metadata,
    load_workflows,
    read_pflow_registry,
)
from pflow_structure.discovery.context import matches_query
from pflow_structure.registry import available_nodes

DATA = Path(__file__).resolve().parent / "data" / "discovery"
CHOSEN_NODES = ["github-get-issue", "github-list-issues", "slack-post-message", "legacy-fetch"]
CHOSEN_WORKFLOWS = ["triage-issues", "issue-report"]


def fixture_registry() -> dict[str, dict[str, Any]]:
    """pflow-shaped metadata: four real pflow 0.10 nodes, an MCP tool (interface only), a legacy node."""
    return read_pflow_registry(DATA / "registry.json").metadata


def fixture_workflows() -> list[dict[str, Any]]:
    return load_workflows(DATA / "workflows").workflows


def golden_texts() -> dict[str, str]:
    registry, workflows = fixture_registry(), fixture_workflows()
    planning = build_planning_context(CHOSEN_NODES, CHOSEN_WORKFLOWS, registry, workflows)
    assert isinstance(planning, str)
    return {
        "discovery.md": build_discovery_context(None, None, registry, workflows),
        "planning.md": planning,
        "context.md": build_context(registry),
    }


def scale_registry(nodes: int = 250, workflows: int = 50) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """A registry of ``nodes`` nodes (nested outputs included) and ``workflows`` saved workflows."""
    services = ["github", "gitlab", "slack", "jira", "notion", "linear", "stripe", "hubspot", "zendesk", "asana"]
    verbs = ["list", "get", "create", "update", "delete", "search", "archive", "export", "import", "sync"]
    objects = ["issues", "comments", "users", "projects", "files", "events", "labels", "teams", "tickets", "notes"]
    registry: dict[str, dict[str, Any]] = {}
    for index in range(nodes):
        service, verb, thing = services[index % 10], verbs[index // 10 % 10], objects[index // 100 % 10]
        name = f"{service}-{verb}-{thing}" + (f"-{index // 1000}" if index >= 1000 else "")
        registry[name] = {"docstring": _scale_docstring(service, verb, thing)}
    names = list(registry)
    flows = []
    for index in range(workflows):
        used = [names[(index * 7 + step) % len(names)] for step in range(3)]
        flows.append(
            {
                "name": f"flow-{index:02d}-{used[0]}",
                "description": f"Runs {', '.join(used)} in order and reports what changed.",
                "inputs": ["target"],
                "outputs": ["report"],
                "version": "1.0.0",
                "tags": [],
                "ir": {"nodes": [{"id": f"n{step}", "type": node} for step, node in enumerate(used)]},
            }
        )
    return registry, flows


def _scale_docstring(service: str, verb: str, thing: str) -> str:
    return (
        f"{verb.capitalize()} {thing} in {service.capitalize()} and return them with their metadata.\n\n"
        "Interface:\n"
        f"- Params: {thing}_filter: str  # Filter expression (optional, default: all)\n"
        "- Params: limit: int  # Maximum results (optional, default: 30)\n"
        f'- Writes: shared["{thing}"]: list[dict]  # The {thing}\n'
        "    - id: str  # Identifier\n"
        "    - title: str  # Title\n"
        "    - author: dict  # Who created it\n"
        "        - login: str  # User name\n"
        "        - url: str  # Profile address\n"
        "    - labels: list[dict]  # Labels\n"
        "        - name: str  # Label name\n"
        f'- Writes: shared["{thing}_count"]: int  # How many {thing} were returned\n'
        "- Actions: default (success), error (failure)\n"
    )


@pytest.mark.parametrize("name", ["discovery.md", "planning.md", "context.md"])
def test_context_matches_its_golden_file(name: str) -> None:
    assert golden_texts()[name] == (DATA / name).read_text(encoding="utf-8")


def test_build_context_delegates_to_discovery_and_planning() -> None:
    registry = fixture_registry()
    every = sorted(registry)
    expected = build_discovery_context(every, [], registry) + "\n\n" + str(build_planning_context(every, [], registry))
    assert build_context(registry) == expected


def test_missing_components_give_an_error_with_close_matches() -> None:
    result = build_planning_context(
        ["github-get-issue", "github_list_issues", "github-create-pull-request"],
        ["triage-issue"],
        fixture_registry(),
        fixture_workflows(),
    )
    assert result == {
        "error": "Missing components detected:\n"
        "- Unknown nodes: github_list_issues (did you mean github-list-issues, github-get-issue?), "
        "github-create-pull-request\n"
        "  (Check spelling, use hyphens not underscores)\n"
        "- Unknown workflows: triage-issue (did you mean triage-issues?)\n"
        "Choose again from the names in the discovery context.\n",
        "missing_nodes": ["github_list_issues", "github-create-pull-request"],
        "missing_workflows": ["triage-issue"],
        "suggestions": {
            "github_list_issues": ["github-list-issues", "github-get-issue"],
            "github-create-pull-request": [],
            "triage-issue": ["triage-issues"],
        },
    }


def test_discovery_lists_only_the_chosen_names() -> None:
    text = build_discovery_context(["read-file"], ["issue-report"], fixture_registry(), fixture_workflows())
    assert text == (
        "## Available Nodes\n\n- read-file: Read content from a file.\n\n"
        "## Available Workflows\n\n- issue-report: Fetches one issue and writes a Markdown report of it."
    )


def test_discovery_over_the_limit_shortens_descriptions_and_keeps_every_name() -> None:
    registry = fixture_registry()
    limit = len(build_discovery_context(None, [], registry).encode()) - 1
    text = build_discovery_context(None, [], registry, limit=limit)
    assert len(text.encode()) <= limit
    assert text.startswith("_Descriptions shortened to ")
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("- ")] == [
        f"- {name}" for name in sorted(registry)
    ]


def _names(kind: str, count: int) -> list[dict[str, Any]]:
    return [{"name": f"{kind}-{index:04d}", "description": f"The {kind} number {index}."} for index in range(count)]


def _shown(text: str, prefix: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith(f"- {prefix}")]


def test_discovery_far_over_the_limit_drops_entries_with_a_marker_that_names_the_arguments() -> None:
    registry = {entry["name"]: {"docstring": entry["description"]} for entry in _names("node", 30)}
    text = build_discovery_context(None, None, registry, _names("flow", 30), limit=600)
    assert len(text.encode()) <= 600
    assert (_shown(text, "node"), _shown(text, "flow")) == (
        [f"node-{index:04d}" for index in range(12)],  # an equal share each
        [f"flow-{index:04d}" for index in range(12)],
    )
    assert text.splitlines()[-1] == (
        "[… 18 of 30 nodes and 18 of 30 workflows not shown: the discovery context is limited to 600 bytes. "
        'Call list_nodes with query="words" (found in names and descriptions) or kind="nodes" or kind="workflows" '
        "to see the rest.]"
    )


def test_discovery_marker_ends_with_the_callers_hint() -> None:
    registry = {entry["name"]: {"docstring": entry["description"]} for entry in _names("node", 30)}
    text = build_discovery_context(None, [], registry, limit=400, narrow_hint="Use --query.")
    assert text.splitlines()[-1].endswith("not shown: the discovery context is limited to 400 bytes. Use --query.]")
    assert " workflows" not in text.splitlines()[-1]  # none were hidden


def test_a_large_registry_cannot_push_out_every_saved_workflow() -> None:
    registry, _ = scale_registry(nodes=3000, workflows=0)
    workflows = _names("flow", 3000)
    text = build_discovery_context(None, None, registry, workflows)
    assert len(text.encode()) <= DISCOVERY_LIMIT
    nodes_shown = len([line for line in text.splitlines() if line.startswith("- ") and "flow-" not in line])
    flows_shown = len(_shown(text, "flow-"))
    assert flows_shown > 100 and abs(nodes_shown - flows_shown) <= 1


def test_room_one_kind_leaves_goes_to_the_other() -> None:
    registry = {entry["name"]: {"docstring": entry["description"]} for entry in _names("node", 3)}
    text = build_discovery_context(None, None, registry, _names("flow", 3000))
    assert len(text.encode()) <= DISCOVERY_LIMIT
    assert _shown(text, "node") == ["node-0000", "node-0001", "node-0002"]
    shown = len(_shown(text, "flow"))
    assert shown > 500
    assert text.splitlines()[-1].startswith(f"[… {3000 - shown:,} of 3,000 workflows not shown: ")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("GitHub ISSUE", True),
        ("github-list", True),
        ("repository issues", True),
        ("gitlab", False),
        ("", True),
        ("   ", True),
    ],
)
def test_matches_query_wants_every_word_in_any_case(query: str, expected: bool) -> None:
    assert matches_query(query, "github-list-issues", "List the issues of a repository") is expected


def test_unknown_names_are_matched_ignoring_case_and_cut_in_the_message() -> None:
    huge = "x" * 200_000
    result = build_planning_context(
        ["GITHUB-GET-ISSUE", huge], ["Issue-Report"], fixture_registry(), fixture_workflows()
    )
    assert isinstance(result, dict)
    assert result["suggestions"]["GITHUB-GET-ISSUE"][0] == "github-get-issue"
    assert result["suggestions"]["Issue-Report"] == ["issue-report"]
    assert len(result["error"]) < 600
    assert f"{'x' * 79}… (200,000 characters)" in result["error"]
    assert "- Unknown workflows: Issue-Report (did you mean issue-report?)" in result["error"]


def test_planning_group_over_50_kb_is_cut_with_a_marker() -> None:
    registry, _ = scale_registry(nodes=250, workflows=0)
    text = build_planning_context(sorted(registry), [], registry)
    assert isinstance(text, str)
    assert len(text.encode()) <= GROUP_LIMIT + len("## Selected Nodes\n\n")
    assert text.splitlines()[-1].startswith("[… nodes truncated at 50 KB: ")
    assert text.splitlines()[-1].endswith(" of 250 not shown in full. Select fewer components to see them.]")


def test_unparsed_items_are_shown_as_such_in_planning() -> None:
    text = build_planning_context(["legacy-fetch"], [], fixture_registry())
    assert isinstance(text, str)
    assert '- (not parsed) `- Writes: shared["maybe"]: str | null # Not a supported type`' in text.splitlines()
    assert "    - owner?: (not parsed) `- owner?: str # Owner, if any`" in text.splitlines()


def test_scale_discovery_of_250_nodes_and_50_workflows_fits_10_kb_with_every_name() -> None:
    registry, workflows = scale_registry()
    text = build_discovery_context(None, None, registry, workflows)
    listed = [line[2:].split(":")[0] for line in text.splitlines() if line.startswith("- ")]
    assert len(text.encode()) <= DISCOVERY_LIMIT
    assert listed == sorted(registry) + sorted(w["name"] for w in workflows)


def test_scale_planning_of_5_nodes_fits_50_kb_untruncated() -> None:
    registry, workflows = scale_registry()
    chosen = sorted(registry)[:5]
    text = build_planning_context(chosen, [], registry, workflows)
    assert isinstance(text, str)
    assert len(text.encode()) < GROUP_LIMIT
    assert [line[4:] for line in text.splitlines() if line.startswith("### ")] == chosen


def test_pflow_registry_docstrings_are_reparsed_not_trusted() -> None:
    code = fixture_registry()["code"]
    assert [param["key"] for param in code["interface"]["params"]] == ["code", "inputs", "timeout", "requires"]


def test_pflow_registry_in_the_old_flat_format_is_read(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({"echo": {"docstring": "Echo."}, "__metadata__": {"x": 1}}), encoding="utf-8")
    assert list(read_pflow_registry(path).metadata) == ["echo"]


def test_missing_pflow_registry_gives_no_nodes_and_no_warning(tmp_path: Path) -> None:
    sources = read_pflow_registry(tmp_path / "absent.json")
    assert (sources.metadata, sources.warnings) == ({}, [])


def test_broken_pflow_registry_gives_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text("{", encoding="utf-8")
    assert read_pflow_registry(path).warnings == [
        f"pflow registry {path} is not valid JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)); run `pflow registry list` to rebuild it."
    ]


def test_our_nodes_come_first_and_hide_pflow_nodes_of_the_same_id(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({"nodes": {"http": {"docstring": "pflow's http."}, "llm": {"docstring": "LLM."}}}))
    sources = collect_node_metadata(available_nodes().values(), path)
    assert (sources.shadowed, sources.metadata["http"]["source"], sources.metadata["llm"]["source"]) == (
        ["http"],
        "builtin",
        "pflow",
    )


def test_a_node_that_cannot_be_loaded_is_listed_with_a_warning() -> None:
    class Broken:
        name, target, source = "broken", "no_such_module:Node", "example-dist"

        def load(self) -> type[Any]:
            raise ImportError("No module named 'no_such_module'")

    sources = collect_node_metadata([Broken()])
    assert sources.warnings == [
        "Node 'broken' (no_such_module:Node) cannot be loaded (ImportError: No module named 'no_such_module'); "
        "fix or uninstall it."
    ]
    assert sources.metadata["broken"]["interface"]["description"] == (
        "(cannot be loaded: ImportError: No module named 'no_such_module')"
    )


if __name__ == "__main__":  # rewrite the golden files
    for file_name, content in golden_texts().items():
        (DATA / file_name).write_text(content, encoding="utf-8")
        sys.stdout.write(f"wrote {DATA / file_name}\n")
