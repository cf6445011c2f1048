"""CachedOutputs: the read-only dict a structure-only node leaves at shared[node_id]."""

from __future__ import annotations

import copy
import gc
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pocketflow import Node

from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import ExecutionNotFoundError
from pflow_structure.wrapper import CachedOutputs, StructureOnlyNodeWrapper

OUTPUTS: dict[str, Any] = {
    "result": [{"title": "a", "number": 1, "labels": [{"name": "bug"}]}, {"title": "b", "number": 2, "labels": []}],
    "status": "ok",
    "exit_code": 0,
    "body": "y" * 2000,
}


class WriteOutputs(Node):  # type: ignore[misc]
    def __init__(self, outputs: dict[str, Any]) -> None:
        super().__init__()
        self.outputs = outputs

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> None:
        for key, value in self.outputs.items():
            shared[key] = value


def view_of(outputs: dict[str, Any], node_id: str = "fetch", **options: Any) -> CachedOutputs:
    shared: dict[str, Any] = {}
    StructureOnlyNodeWrapper(WriteOutputs(outputs), node_id, **options).run(shared)
    view = shared[node_id]
    assert type(view) is CachedOutputs
    return view


def with_metadata(view: CachedOutputs, outputs: dict[str, Any]) -> dict[str, Any]:
    return {**outputs, "_structure": view.structure, "_execution_id": view.execution_id}


@pytest.fixture
def view() -> CachedOutputs:
    return view_of(OUTPUTS)


# -- reading like the dict the node wrote ------------------------------------------------------


def test_the_view_is_a_dict(view: CachedOutputs) -> None:
    assert isinstance(view, dict)


def test_items_read_back_the_values_the_node_wrote(view: CachedOutputs) -> None:
    assert view["result"] == OUTPUTS["result"]
    assert view["status"] == "ok"
    assert view["exit_code"] == 0
    assert view["body"] == "y" * 2000


def test_the_metadata_keys_hold_the_structure_and_the_execution_id(view: CachedOutputs) -> None:
    assert view["_execution_id"] == view.execution_id
    assert view["_execution_id"].startswith("exec-")
    assert view["_structure"] is view.structure
    assert view.structure["result"] == {"type": "list", "length": 2}
    assert view.structure["result[0].title"] == {"type": "str", "avg_length": 1}


def test_a_missing_key_raises_key_error_with_the_key(view: CachedOutputs) -> None:
    with pytest.raises(KeyError) as caught:
        view["missing"]
    assert caught.value.args == ("missing",)


def test_in_covers_cached_inline_and_metadata_keys(view: CachedOutputs) -> None:
    assert ["result" in view, "status" in view, "_structure" in view, "_execution_id" in view] == [True] * 4
    assert "missing" not in view
    assert 0 not in view


def test_get_returns_the_value_or_the_default(view: CachedOutputs) -> None:
    assert view.get("result") == OUTPUTS["result"]
    assert view.get("status") == "ok"
    assert view.get("missing") is None
    assert view.get("missing", "fallback") == "fallback"


def test_len_counts_the_outputs_and_the_two_metadata_keys(view: CachedOutputs) -> None:
    assert len(view) == 6


def test_iteration_keeps_the_order_the_node_wrote_then_the_metadata(view: CachedOutputs) -> None:
    assert list(view) == ["result", "status", "exit_code", "body", "_structure", "_execution_id"]
    assert list(reversed(view)) == ["_execution_id", "_structure", "body", "exit_code", "status", "result"]


def test_keys_items_and_values_follow_the_same_order(view: CachedOutputs) -> None:
    expected = with_metadata(view, OUTPUTS)
    assert list(view.keys()) == list(expected.keys())
    assert list(view.items()) == list(expected.items())
    assert list(view.values()) == list(expected.values())
    assert ("status", "ok") in view.items()


def test_json_dumps_gives_the_outputs_plus_the_metadata(view: CachedOutputs) -> None:
    assert json.dumps(view) == json.dumps(with_metadata(view, OUTPUTS))
    assert json.dumps(view, indent=2, sort_keys=True) == json.dumps(
        with_metadata(view, OUTPUTS), indent=2, sort_keys=True
    )


def test_dict_of_the_view_is_a_plain_dict_with_every_value(view: CachedOutputs) -> None:
    plain = dict(view)
    assert type(plain) is dict
    assert plain == with_metadata(view, OUTPUTS)
    assert list(plain) == list(view)


def test_unpacking_the_view_gives_every_value(view: CachedOutputs) -> None:
    unpacked = {**view}
    assert type(unpacked) is dict
    assert unpacked == with_metadata(view, OUTPUTS)


def test_the_view_equals_a_plain_dict_with_the_same_contents(view: CachedOutputs) -> None:
    assert view == with_metadata(view, OUTPUTS)
    assert with_metadata(view, OUTPUTS) == view
    assert view != OUTPUTS  # the metadata keys are part of it
    assert view != with_metadata(view, {**OUTPUTS, "status": "failed"})


def test_or_gives_a_plain_merged_dict(view: CachedOutputs) -> None:
    merged = view | {"extra": 1}
    assert type(merged) is dict
    assert merged == {**with_metadata(view, OUTPUTS), "extra": 1}
    assert {"extra": 1} | view == {"extra": 1, **with_metadata(view, OUTPUTS)}


def test_repr_names_the_execution_node_and_cached_keys(view: CachedOutputs) -> None:
    assert repr(view) == f"<CachedOutputs {view.execution_id} node='fetch' cached=['body', 'result']>"


def test_read_returns_only_the_paths_asked_for(view: CachedOutputs) -> None:
    assert view.read("result[*].title") == {"result[*].title": ["a", "b"]}
    assert view.read("result[0].labels[0].name", "result[-1].number") == {
        "result[0].labels[0].name": "bug",
        "result[-1].number": 2,
    }


def test_materialize_returns_a_plain_mutable_dict_without_metadata(view: CachedOutputs) -> None:
    plain = view.materialize()
    assert type(plain) is dict
    assert plain == OUTPUTS
    plain["status"] = "changed"
    assert view["status"] == "ok"


def test_copy_method_returns_a_plain_dict_with_every_value(view: CachedOutputs) -> None:
    plain = view.copy()
    assert type(plain) is dict
    assert plain == with_metadata(view, OUTPUTS)


# -- copies and pickling -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_copies_are_views_of_the_same_execution(view: CachedOutputs, duplicate: Callable[[Any], Any]) -> None:
    clone = duplicate(view)
    assert type(clone) is CachedOutputs
    assert clone is not view
    assert (clone.execution_id, clone.node_id) == (view.execution_id, "fetch")
    assert clone == view
    assert clone["result"] == OUTPUTS["result"]
    assert dict(clone) == with_metadata(view, OUTPUTS)


# -- the write side ------------------------------------------------------------------------------


def _set(view: Any) -> None:
    view["status"] = "changed"


def _delete(view: Any) -> None:
    del view["status"]


def _merge_in_place(view: Any) -> None:
    view |= {"status": "changed"}


@pytest.mark.parametrize(
    "mutate",
    [
        _set,
        _delete,
        _merge_in_place,
        lambda v: v.clear(),
        lambda v: v.pop("status"),
        lambda v: v.pop("missing", None),
        lambda v: v.popitem(),
        lambda v: v.setdefault("new", 1),
        lambda v: v.update({"status": "changed"}),
        lambda v: v.update(status="changed"),
    ],
    ids=["setitem", "delitem", "ior", "clear", "pop", "pop-default", "popitem", "setdefault", "update", "update-kw"],
)
def test_every_mutating_method_raises_type_error_naming_node_and_execution(
    view: CachedOutputs, mutate: Callable[[Any], Any]
) -> None:
    with pytest.raises(TypeError) as caught:
        mutate(view)
    assert str(caught.value) == (
        f"the outputs of structure-only node 'fetch' are read-only: they live in the execution cache as "
        f"{view.execution_id}. Copy what you need (view.copy() or view.materialize()) and change the copy, "
        "or run the node without structure_only."
    )
    assert dict(view) == with_metadata(view, OUTPUTS)


def test_the_view_is_not_hashable(view: CachedOutputs) -> None:
    with pytest.raises(TypeError, match="unhashable type: 'CachedOutputs'"):
        hash(view)


# -- bytes ---------------------------------------------------------------------------------------


def test_bytes_outputs_come_back_as_bytes() -> None:
    view = view_of({"blob": b"\x00\xff", "files": [{"name": "a.bin", "data": b"\x89PNG"}]})
    assert view["blob"] == b"\x00\xff"
    assert view["files"] == [{"name": "a.bin", "data": b"\x89PNG"}]
    assert view.read("files[0].data") == {"files[0].data": b"\x89PNG"}
    assert view.materialize() == {"blob": b"\x00\xff", "files": [{"name": "a.bin", "data": b"\x89PNG"}]}


def test_a_small_bytes_output_is_not_kept_inline_as_its_base64_text() -> None:
    view = view_of({"blob": b"\x00\xff"})
    assert repr(view) == f"<CachedOutputs {view.execution_id} node='fetch' cached=['blob']>"


# -- what stays in memory ----------------------------------------------------------------------


def _delete_entry(cache_dir: Path, view: CachedOutputs) -> None:
    (cache_dir / f"{view.execution_id}.json").unlink()


def test_small_scalars_are_served_without_the_cache(isolated_cache: Path) -> None:
    view = view_of({"exit_code": 0, "ok": True, "ratio": 0.5, "nothing": None, "status": "s" * 1024, "rows": [1]})
    _delete_entry(isolated_cache, view)
    assert [view["exit_code"], view["ok"], view["ratio"], view["nothing"]] == [0, True, 0.5, None]
    assert view["status"] == "s" * 1024
    assert view["_execution_id"] == view.execution_id
    assert "rows" in view


def test_a_cached_key_raises_execution_not_found_once_the_entry_is_gone(isolated_cache: Path) -> None:
    view = view_of({"exit_code": 0, "rows": [1, 2]})
    _delete_entry(isolated_cache, view)
    with pytest.raises(ExecutionNotFoundError) as caught:
        view["rows"]
    assert caught.value.execution_id == view.execution_id
    assert str(caught.value).startswith(f"Execution not found: {view.execution_id}")


def test_a_string_longer_than_1024_characters_is_read_from_the_cache(isolated_cache: Path) -> None:
    view = view_of({"text": "t" * 1025})
    assert view["text"] == "t" * 1025
    _delete_entry(isolated_cache, view)
    with pytest.raises(ExecutionNotFoundError):
        view["text"]


def test_size_cap_eviction_skips_an_execution_a_live_view_holds(isolated_cache: Path) -> None:
    view = view_of({"rows": list(range(100))})
    execution_id = view.execution_id
    tiny = ExecutionCache(isolated_cache, max_bytes=1)
    assert tiny.prune() == {"expired": 0, "evicted": 0, "remaining": 1}
    assert view["rows"] == list(range(100))

    del view
    gc.collect()
    assert tiny.prune() == {"expired": 0, "evicted": 1, "remaining": 0}
    assert not (isolated_cache / f"{execution_id}.json").exists()


def test_a_deleted_entry_names_the_node_and_the_way_out(isolated_cache: Path) -> None:
    view = view_of({"rows": [1, 2]}, node_id="load")
    _delete_entry(isolated_cache, view)
    with pytest.raises(ExecutionNotFoundError) as caught:
        view["rows"]
    assert "the cached outputs of structure-only node 'load' were deleted while the workflow still needed them" in str(
        caught.value
    )
    assert str(caught.value).endswith("Raise PFLOW_STRUCTURE_MAX_CACHE_SIZE, or run the node without structure_only.")


def test_the_ttl_does_not_cut_a_running_workflow_off_its_own_outputs(isolated_cache: Path) -> None:
    now = [1_800_000_000.0]
    cache = ExecutionCache(isolated_cache, ttl_hours=1, clock=lambda: now[0])
    view = view_of({"rows": [1, 2]}, cache=cache)
    now[0] += 3 * 3600
    assert view["rows"] == [1, 2]
    assert cache.prune()["expired"] == 0  # held by the view
    from pflow_structure.errors import ExecutionExpiredError

    with pytest.raises(ExecutionExpiredError):
        cache.get(view.execution_id)  # a later reader (an agent's read-fields) still gets the TTL


def test_str_shows_the_data_and_repr_stays_short(view: CachedOutputs) -> None:
    assert str(view) == repr(with_metadata(view, OUTPUTS))
    assert len(repr(view)) < 200


def test_outputs_the_cache_can_store_only_changed_stay_in_memory() -> None:
    deep: dict[str, Any] = {"leaf": 1}
    for _ in range(70):
        deep = {"a": deep}
    shared: dict[str, Any] = {}
    with pytest.warns(RuntimeWarning, match="structure-only node 'deep' keeps its outputs in memory: .*<cut: nested"):
        StructureOnlyNodeWrapper(WriteOutputs({"tree": deep}), "deep").run(shared)
    kept = shared["deep"]
    assert type(kept) is dict
    assert kept["tree"] is deep
    assert set(kept) == {"tree", "_structure", "_execution_id"}
