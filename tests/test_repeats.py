"""The proxy's repeat memory and the changed paths it answers with (issue 38.4), in process: the real
shaping, the real cache (tests/test_mcp_proxy_repeats.py runs the proxy as a process)."""

from __future__ import annotations

import json
from typing import Any

from pflow_structure.mcp.proxy.repeats import Repeats
from pflow_structure.mcp.proxy.shaping import shape_and_store
from pflow_structure.settings import Settings
from pflow_structure.values.changes import Change, changed_paths


def result_of(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(value)}], "isError": False}


def call(repeats: Repeats, arguments: dict[str, Any], value: Any, settings: Settings) -> Any:
    options = {"settings": settings, "budget": 1000, "read_tool": "read_fields", "want": None}
    return repeats.answer(shape_and_store, "list_jobs", arguments, result_of(value), **options)


JOBS = [{"id": index, "name": f"nightly build {index} of the release branch", "state": "done"} for index in range(80)]


def test_changed_paths_lists_changed_added_and_removed_places_in_document_order() -> None:
    old = {"state": "open", "labels": ["a"], "user": {"login": "ada", "site_admin": False}}
    new = {"state": "closed", "labels": ["a", "b"], "user": {"login": "ada"}}
    assert changed_paths(old, new) == [
        Change("result.state", "closed", False),
        Change("result.labels[1]", "b", False),
        Change("result.user.site_admin", None, True),
    ]


def test_values_equal_in_python_but_not_in_json_are_changes() -> None:
    assert changed_paths([1, True, "x"], [1.0, 1, "x"]) == [
        Change("result[0]", 1.0, False),
        Change("result[1]", 1, False),
    ]


def test_more_changes_than_the_limit_is_none() -> None:
    assert changed_paths(list(range(10)), list(range(1, 11)), limit=9) is None


def test_the_same_call_with_the_same_result_answers_unchanged_with_the_first_id() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    first = call(repeats, {"branch": "main"}, JOBS, settings)
    again = call(repeats, {"branch": "main"}, JOBS, settings)
    assert (first.kind, again.kind) == ("cached", "unchanged")
    assert again.result["content"][0]["text"] == (
        f"Unchanged since {first.execution_id}: the same result as the last list_jobs call with these arguments."
    )


def test_one_changed_field_answers_its_path_and_new_value_with_the_new_id() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    first = call(repeats, {}, JOBS, settings)
    changed = call(repeats, {}, [{**job, "state": "failed"} if job["id"] == 7 else job for job in JOBS], settings)
    assert changed.kind == "changed"
    assert changed.result["content"][0]["text"] == (
        f"Changed since {first.execution_id}: 1 path differs; the whole new result is cached as "
        f'{changed.execution_id}.\nresult[7].state: "failed"'
    )
    assert settings.cache().get(changed.execution_id).outputs["result"][7]["state"] == "failed"


def test_other_arguments_are_another_call() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    call(repeats, {"branch": "main"}, JOBS, settings)
    assert call(repeats, {"branch": "dev"}, JOBS, settings).kind == "cached"


def test_a_result_gone_from_the_cache_is_answered_as_usual() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    first = call(repeats, {}, JOBS, settings)
    settings.cache().delete(first.execution_id)
    assert call(repeats, {}, JOBS, settings).kind == "cached"


def test_a_result_smaller_than_the_unchanged_line_is_answered_as_usual() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    kinds = [call(repeats, {}, {"ok": True}, settings).kind for _ in range(2)]
    assert kinds == ["formatted", "formatted"]  # "ok: true": shorter than any "unchanged" line
    assert len(repeats._last) == 0


def test_most_of_the_result_changed_answers_the_usual_structure() -> None:
    settings, repeats = Settings.from_env(), Repeats()
    call(repeats, {}, JOBS, settings)
    changed = [{**job, "state": "queued"} for job in JOBS]
    assert call(repeats, {}, changed, settings).kind == "cached"


def test_the_memory_keeps_the_last_calls_only() -> None:
    settings, repeats = Settings.from_env(), Repeats(max_calls=2)
    for branch in ("a", "b", "c"):
        call(repeats, {"branch": branch}, JOBS, settings)
    assert len(repeats._last) == 2
    assert call(repeats, {"branch": "a"}, JOBS, settings).kind == "cached"
    assert call(repeats, {"branch": "c"}, JOBS, settings).kind == "unchanged"
