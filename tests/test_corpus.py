"""The read-back contract on 28 real API responses, run through the real ``read-json`` node.

``tests/corpus`` is a copy of ``../shared/corpus`` (sources and licences in its SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.store import CacheEntry
from pflow_structure.service import read_fields, read_fields_detailed, registry_run
from pflow_structure.settings import Settings
from pflow_structure.structure import infer_structure
from tests.conftest import CORPUS, corpus_files
from tests.contract import assert_structure_reads_back, every_item

FILES = corpus_files()


def _run(name: str) -> tuple[dict[str, Any], CacheEntry]:
    """Run read-json on a corpus file (every field: these tests are about inference); return the
    result and the cached entry."""
    result = registry_run("read-json", {"path": str(CORPUS / f"{name}.json")}, all_fields=True)
    entry = Settings.from_env().cache().get(result["execution_id"])
    return result, entry


def test_corpus_has_all_28_files() -> None:
    assert len(FILES) == 28


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_every_listed_path_reads_back_on_corpus_file(path: Path) -> None:
    result, entry = _run(path.stem)
    assert_structure_reads_back(entry.outputs, result["structure"], entry.binary_paths)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_read_fields_returns_a_value_for_every_listed_path_of_corpus_file(path: Path) -> None:
    result, _ = _run(path.stem)
    structure: dict[str, dict[str, Any]] = result["structure"]
    paths = {every_item(listed): entry for listed, entry in structure.items()}
    readout = read_fields_detailed(result["execution_id"], list(paths))
    assert readout.errors == {}
    for path_read, entry in paths.items():
        value = readout.values[path_read]
        if "[*]" in path_read:
            assert isinstance(value, list) and value, f"{path_read} gave {value!r}"
        elif "null" not in entry["type"].split("|"):
            assert value is not None, f"{path_read} gave None"


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_structure_lists_at_most_500_paths_by_default_for_corpus_file(path: Path) -> None:
    result, _ = _run(path.stem)
    listed = len(result["structure"])
    assert listed <= 500
    assert result.get("omitted_paths", 0) == (0 if listed < 500 else result["omitted_paths"])


# -- exact facts about single files ----------------------------------------------------------


def test_github_issue_list_is_a_list_of_100() -> None:
    result, _ = _run("github__list_issues")
    assert result["structure"]["result"] == {"type": "list", "length": 100}


def test_github_issue_list_counts_items_that_are_pull_requests() -> None:
    result, entry = _run("github__list_issues")
    with_pr = sum(1 for item in entry.outputs["result"] if "pull_request" in item)
    first = [index for index, item in enumerate(entry.outputs["result"]) if "pull_request" in item][:3]
    assert result["structure"]["result[0].pull_request"] == {
        "type": "dict",
        "present": with_pr,
        "of": 100,
        "present_at": first,
    }
    assert 0 < with_pr < 100


def test_github_issue_milestone_may_be_null() -> None:
    result, _ = _run("github__list_issues")
    assert result["structure"]["result[0].milestone"]["type"].split("|") == ["dict", "null"]


def test_github_issue_titles_read_back_for_all_100_items() -> None:
    result, entry = _run("github__list_issues")
    titles = read_fields(result["execution_id"], ["result[*].title"])["result[*].title"]
    assert titles == [item["title"] for item in entry.outputs["result"]]


def test_npm_versions_are_summarised_as_dynamic_keys() -> None:
    result, entry = _run("npm__package_document")
    structure = result["structure"]
    assert structure["result.versions"] == {
        "type": "dict",
        "keys": len(entry.outputs["result"]["versions"]),
        "dynamic_keys": True,
        "key_names": list(entry.outputs["result"]["versions"])[:8],
    }
    assert structure["result.versions[*].version"] == {"type": "str", "avg_length": 5}
    assert not any(path.startswith('result.versions["') for path in structure)


def test_pypi_releases_are_summarised_as_dynamic_keys() -> None:
    result, entry = _run("pypi__project")
    structure = result["structure"]
    assert structure["result.releases"] == {
        "type": "dict",
        "keys": len(entry.outputs["result"]["releases"]),
        "dynamic_keys": True,
        "key_names": list(entry.outputs["result"]["releases"])[:8],
    }
    assert structure["result.releases[*]"]["type"] == "list"
    assert "result.releases[*][0].filename" in structure
    assert not any(path.startswith('result.releases["') for path in structure)


def test_slack_union_response_is_capped_at_500_paths_and_reports_the_rest() -> None:
    result, entry = _run("slack__conversations_history_masked")
    uncapped = infer_structure(entry.outputs, binary_paths=entry.binary_paths, max_paths=1_000_000)
    assert len(result["structure"]) == 500
    assert result["omitted_paths"] == uncapped.total_paths - 500
    assert uncapped.total_paths > 1000
    assert uncapped.field_count > 7000  # the leaves behind "same keys as" entries still count


def test_slack_field_count_counts_leaves_beyond_the_cap() -> None:
    result, entry = _run("slack__conversations_history_masked")
    uncapped = infer_structure(entry.outputs, binary_paths=entry.binary_paths, max_paths=1_000_000)
    assert result["field_count"] == uncapped.field_count
    assert result["field_count"] > 500


def test_slack_capped_structure_keeps_the_shallowest_paths() -> None:
    result, _ = _run("slack__conversations_history_masked")
    assert "result.ok" in result["structure"]
    assert "result.messages[0].ts" in result["structure"]


def test_github_repo_lists_every_path_without_omitting() -> None:
    result, _ = _run("github__get_repo")
    assert "omitted_paths" not in result
    assert result["field_count"] == result["original_field_count"]
