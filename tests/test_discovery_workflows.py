"""The workflow store: one error row of seed 003's table per test, names, atomic saves."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.discovery import (
    InvalidWorkflowError,
    WorkflowNotFoundError,
    delete_workflow,
    list_workflow_names,
    load_workflow,
    load_workflows,
    save_workflow,
)
from pflow_structure.errors import StructureError
from tests.conftest import run_as_nobody

IR: dict[str, Any] = {
    "ir_version": "0.1.0",
    "nodes": [{"id": "fetch", "type": "github-get-issue"}, {"id": "fix", "type": "llm"}],
    "edges": [{"from": "fetch", "to": "fix"}],
    "inputs": {"issue_number": {"type": "str", "description": "Issue to fix"}},
    "outputs": {"summary": {"type": "str", "description": "What changed"}},
}
NOW = dt.datetime(2024, 1, 15, 10, 30, tzinfo=dt.timezone.utc)


def _write(directory: Path, name: str, data: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _record(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"{name} workflow", "ir": IR, **extra}


def test_save_then_load_fills_the_schema_defaults(tmp_path: Path) -> None:
    save_workflow(tmp_path, "fix-issue", "Fixes an issue", IR, now=NOW)
    assert load_workflow(tmp_path, "fix-issue") == {
        "name": "fix-issue",
        "description": "Fixes an issue",
        "inputs": ["issue_number"],
        "outputs": ["summary"],
        "created_at": "2024-01-15T10:30:00Z",
        "updated_at": "2024-01-15T10:30:00Z",
        "version": "1.0.0",
        "ir_version": "0.1.0",
        "tags": [],
        "ir": IR,
    }


def test_saving_again_keeps_created_at_and_moves_updated_at(tmp_path: Path) -> None:
    save_workflow(tmp_path, "fix-issue", "First", IR, now=NOW)
    later = NOW + dt.timedelta(hours=1)
    save_workflow(tmp_path, "fix-issue", "Second", IR, now=later)
    stored = load_workflow(tmp_path, "fix-issue")
    assert (stored["description"], stored["created_at"], stored["updated_at"]) == (
        "Second",
        "2024-01-15T10:30:00Z",
        "2024-01-15T11:30:00Z",
    )


def test_a_missing_directory_holds_no_workflows_and_reading_creates_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "home" / ".pflow" / "workflows"
    loaded = load_workflows(directory)
    assert (loaded.workflows, loaded.warnings, list(tmp_path.iterdir())) == ([], [], [])


def test_a_file_where_the_directory_should_be_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "workflows").write_text("", encoding="utf-8")
    assert load_workflows(tmp_path / "workflows").warnings == [
        f"Workflow directory {tmp_path / 'workflows'} is not a directory; pass a directory path. "
        "No saved workflows were loaded."
    ]


def test_invalid_json_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken", "{not json")
    _write(tmp_path, "good", _record("good"))
    loaded = load_workflows(tmp_path)
    assert [w["name"] for w in loaded.workflows] == ["good"]
    assert loaded.warnings == [
        f"Skipped {path}: invalid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)); "
        "fix the file or delete it."
    ]


def test_missing_required_field_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "nodesc", {"name": "nodesc", "ir": IR})
    assert load_workflows(tmp_path).warnings == [
        f"Skipped {path}: missing required field(s) description; add them and save again."
    ]


def test_invalid_ir_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "badir", _record("badir", ir={"nodes": [{"id": "a"}]}))
    assert load_workflows(tmp_path).warnings == [
        f"Skipped {path}: invalid IR: nodes[0] lacks a string id or type; an IR is an object with a list of "
        "nodes, each an object with string id and type."
    ]


def test_a_record_naming_another_workflow_is_listed_under_its_file_name_with_a_warning(tmp_path: Path) -> None:
    _write(tmp_path, "a-copy", _record("shared", description="copy"))
    _write(tmp_path, "shared", _record("shared", description="original"))
    loaded = load_workflows(tmp_path)
    assert [(w["name"], w["description"]) for w in loaded.workflows] == [("a-copy", "copy"), ("shared", "original")]
    assert loaded.warnings == [
        f"{tmp_path / 'a-copy.json'} names its workflow 'shared'; it is listed as 'a-copy', its file name, which "
        "show, delete and describe use. Set its name to 'a-copy' (or save it again) to silence this warning."
    ]
    warnings: list[str] = []
    assert load_workflow(tmp_path, "a-copy", warnings=warnings)["description"] == "copy"
    assert warnings == loaded.warnings
    delete_workflow(tmp_path, "a-copy")
    assert [w["name"] for w in load_workflows(tmp_path).workflows] == ["shared"]


def test_a_file_whose_name_is_not_a_workflow_name_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "my flow", _record("my-flow"))
    loaded = load_workflows(tmp_path)
    assert (loaded.workflows, len(loaded.warnings)) == ([], 1)
    assert loaded.warnings[0].startswith(f"Skipped {path}: its file name is not a workflow name (names are 1 to")
    assert loaded.warnings[0].endswith("; rename the file.")


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "sur", "description": "bad \\ud800 desc", "ir": {"nodes": []}}',
        '{"name": "sur", "description": "ok", "tags": ["\\udfff"], "ir": {"nodes": [], "x": {"\\ud800": 1}}}',
    ],
)
def test_text_that_is_not_valid_unicode_is_read_as_u_fffd_with_a_warning(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "sur", text)
    _write(tmp_path, "good", _record("good"))
    loaded = load_workflows(tmp_path)
    assert [w["name"] for w in loaded.workflows] == ["good", "sur"]
    json.dumps(loaded.workflows, ensure_ascii=False).encode("utf-8")  # no lone surrogate left
    assert "\ufffd" in json.dumps(loaded.workflows[1], ensure_ascii=False)
    (warning,) = loaded.warnings
    assert warning.startswith(f"{path} holds ") and "they are shown as U+FFFD" in warning


def test_a_workflow_nested_too_deeply_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "deep", "[" * 100_000 + "]" * 100_000)
    _write(tmp_path, "good", _record("good"))
    loaded = load_workflows(tmp_path)
    assert [w["name"] for w in loaded.workflows] == ["good"]
    assert loaded.warnings == [f"Skipped {path}: invalid JSON (nested too deeply); fix the file or delete it."]


def test_a_fifo_in_the_directory_is_skipped_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    _write(tmp_path, "good", _record("good"))
    loaded = load_workflows(tmp_path)
    assert [w["name"] for w in loaded.workflows] == ["good"]
    assert loaded.warnings == [f"Skipped {tmp_path / 'pipe.json'}: cannot be read (not a regular file)."]


@pytest.mark.parametrize(
    ("description", "tags", "ir", "words"),
    [
        ("", (), IR, "workflow 'w': the description is empty; give one line saying what the workflow does."),
        ("  \n", (), IR, "the description is empty"),
        ("bad \udcff", (), IR, "workflow 'w': the description is not valid Unicode text: it holds a byte that is"),
        ("ok", ("fine", "x\udcff"), IR, "workflow 'w': a tag is not valid Unicode text"),
        ("ok", (), {"nodes": [], "x": ["\ud800"]}, "workflow 'w': the IR (at x[0]) is not valid Unicode text"),
    ],
)
def test_save_refuses_an_empty_description_and_text_that_is_not_unicode(
    tmp_path: Path, description: str, tags: tuple[str, ...], ir: dict[str, Any], words: str
) -> None:
    directory = tmp_path / "store"
    with pytest.raises(InvalidWorkflowError) as caught:
        save_workflow(directory, "w", description, ir, tags=tags)
    assert words in str(caught.value)
    assert not directory.exists()  # nothing written, not even the directory


def test_file_over_one_megabyte_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, "huge", _record("huge", padding="x" * (1024 * 1024)))
    size = path.stat().st_size
    assert load_workflows(tmp_path).warnings == [
        f"Skipped {path}: cannot be read ({size:,} bytes; files over 1,048,576 bytes are skipped)."
    ]


def test_symbolic_link_in_the_directory_is_not_followed(tmp_path: Path) -> None:
    target = _write(tmp_path / "elsewhere", "real", _record("linked"))
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "linked.json").symlink_to(target)
    loaded = load_workflows(tmp_path / "store")
    assert (loaded.workflows, loaded.warnings) == (
        [],
        [
            f"Skipped {tmp_path / 'store' / 'linked.json'}: cannot be read (it is a symbolic link, which is not "
            "followed; replace it with a regular file)."
        ],
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode (see the nobody test below)")
def test_unreadable_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "secret", _record("secret"))
    path.chmod(0)
    assert load_workflows(tmp_path).warnings == [
        f"Skipped {path}: cannot be read (Permission denied; make it readable by this user)."
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to nobody")
def test_file_unreadable_by_an_unprivileged_user_is_skipped() -> None:
    base = Path(tempfile.mkdtemp(prefix="pflow-structure-test-", dir="/tmp"))  # pytest's tmp is root-only
    try:
        base.chmod(0o755)
        path = _write(base, "secret", _record("secret"))
        path.chmod(0o600)  # root's file: nobody cannot read it
        warnings = run_as_nobody(lambda: load_workflows(base).warnings)
        assert warnings == [f"Skipped {path}: cannot be read (Permission denied; make it readable by this user)."]
    finally:
        shutil.rmtree(base)


def test_loading_stops_at_the_time_budget_with_a_warning(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _write(tmp_path, name, _record(name))
    ticks = iter([0.0, 1.0, 6.0])  # start, before a (1 s), before b (6 s: over budget)
    loaded = load_workflows(tmp_path, clock=lambda: next(ticks))
    assert [w["name"] for w in loaded.workflows] == ["a"]
    assert loaded.warnings == [
        f"Stopped loading workflows after 5 s; 2 file(s) in {tmp_path} were not read. "
        "Remove unused workflows to load them all."
    ]


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a\x00b", "", "a/b", ".hidden", "x" * 101, "a.json"])
def test_hostile_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidWorkflowError):
        save_workflow(tmp_path, name, "bad", IR)
    assert list(tmp_path.iterdir()) == []


def test_refused_name_message_says_the_rule() -> None:
    with pytest.raises(InvalidWorkflowError) as caught:
        load_workflow(Path("/nonexistent"), "../x")
    assert str(caught.value) == (
        "Invalid workflow name '../x': names are 1 to 100 letters, digits, hyphens and underscores, starting "
        "with a letter or digit (for example fix-github-issue); '/', '..' and NUL are refused."
    )


def test_saving_over_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "evil.json").symlink_to(victim)
    with pytest.raises(InvalidWorkflowError) as caught:
        save_workflow(tmp_path, "evil", "bad", IR)
    assert str(caught.value) == (
        f"Workflow file {tmp_path / 'evil.json'} is a symbolic link; refusing to follow it. "
        "Replace it with a regular file."
    )
    assert victim.read_text() == "keep me"


def test_saving_an_invalid_ir_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidWorkflowError) as caught:
        save_workflow(tmp_path, "bad", "Bad", {"edges": []})
    assert str(caught.value) == (
        "workflow 'bad': invalid IR: an IR is an object with a list of nodes, each an object with string id and type."
    )


def test_load_of_an_unknown_name_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(WorkflowNotFoundError) as caught:
        load_workflow(tmp_path, "nope")
    assert isinstance(caught.value, (LookupError, StructureError))
    assert str(caught.value) == (
        f"Workflow 'nope' not found in {tmp_path}. Save it first, or list the saved workflows to check the name."
    )


def test_delete_removes_the_file(tmp_path: Path) -> None:
    save_workflow(tmp_path, "gone", "Gone soon", IR)
    delete_workflow(tmp_path, "gone")
    assert list_workflow_names(tmp_path) == []


def test_delete_of_an_unknown_name_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(WorkflowNotFoundError):
        delete_workflow(tmp_path, "nope")


def test_list_names_reads_file_names_only(tmp_path: Path) -> None:
    _write(tmp_path, "b", "{broken")
    _write(tmp_path, "a", _record("a"))
    (tmp_path / ".a.123.tmp").write_text("partial")
    assert list_workflow_names(tmp_path) == ["a", "b"]


def test_concurrent_writers_leave_one_whole_workflow(tmp_path: Path) -> None:
    """Eight threads save the same name 25 times each while a reader loads it: every read is whole."""
    descriptions = {f"writer {index}" for index in range(8)}
    errors: list[BaseException] = []
    seen: set[str] = set()
    save_workflow(tmp_path, "race", "writer 0", IR)

    def write(description: str) -> None:
        try:
            for _ in range(25):
                save_workflow(tmp_path, "race", description, IR)
        except BaseException as exc:  # collected, so the test fails with the cause
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(text,)) for text in sorted(descriptions)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        seen.add(load_workflow(tmp_path, "race")["description"])
    for thread in threads:
        thread.join()
    assert errors == []
    assert seen <= descriptions
    assert load_workflow(tmp_path, "race")["description"] in descriptions
    assert sorted(path.name for path in tmp_path.iterdir()) == ["race.json"]
