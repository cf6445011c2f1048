"""StructureOnlyNodeWrapper in real PocketFlow flows (the `pocketflow` package from PyPI)."""

from __future__ import annotations

import asyncio
import copy
import gc
import os
import tempfile
import tracemalloc
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from pocketflow import AsyncFlow, AsyncNode, BatchFlow, BatchNode, Flow, Node

from pflow_structure.errors import ParameterError
from pflow_structure.service import read_fields
from pflow_structure.settings import Settings
from pflow_structure.wrapper import CachedOutputs, StructureOnlyNodeWrapper, wrap_if_structure_only

Shared = MutableMapping[str, Any]
ItemsReader = Callable[[Shared], Any]


def cache_files(cache_dir: Path) -> list[str]:
    return sorted(p.name for p in cache_dir.glob("*.json")) if cache_dir.is_dir() else []


# -- the nodes of a three-node flow ---------------------------------------------------------


class LoadNumbers(Node):  # type: ignore[misc]
    def prep(self, shared: Shared) -> int:
        count: int = shared["count"]
        return count

    def exec(self, count: int) -> list[int]:
        return list(range(count))

    def post(self, shared: Shared, prep_res: int, exec_res: list[int]) -> str:
        shared["numbers"] = exec_res
        shared["trail"].append("load")
        return "default"


class DescribeItems(Node):  # type: ignore[misc]
    """The middle node: writes `items` and `total` as its own keys (pflow's namespacing puts them under it)."""

    def prep(self, shared: Shared) -> list[int]:
        numbers: list[int] = shared["numbers"]
        return numbers

    def exec(self, numbers: list[int]) -> list[dict[str, Any]]:
        return [{"n": n, "square": n * n, "label": f"item-{n}"} for n in numbers]

    def post(self, shared: Shared, prep_res: list[int], exec_res: list[dict[str, Any]]) -> str:
        shared["items"] = exec_res
        shared["total"] = sum(item["square"] for item in exec_res)
        shared["trail"].append("describe")
        return "many" if len(exec_res) > 3 else "default"


class DescribeItemsIntoMid(DescribeItems):
    """The same node writing `shared["mid"]` itself (as it would behind pflow's NamespacedNodeWrapper)."""

    def post(self, shared: Shared, prep_res: list[int], exec_res: list[dict[str, Any]]) -> str:
        shared["mid"] = {"items": exec_res, "total": sum(item["square"] for item in exec_res)}
        shared["trail"].append("describe")
        return "many" if len(exec_res) > 3 else "default"


class Summarise(Node):  # type: ignore[misc]
    def __init__(self, read_items: ItemsReader, branch: str) -> None:
        super().__init__()
        self.read_items = read_items
        self.branch = branch

    def prep(self, shared: Shared) -> Any:
        return self.read_items(shared)

    def exec(self, items: list[dict[str, Any]]) -> list[str]:
        return [item["label"] for item in items]

    def post(self, shared: Shared, prep_res: Any, labels: list[str]) -> str:
        shared["summary"] = {"branch": self.branch, "labels": labels}
        shared["trail"].append(self.branch)
        return f"{self.branch}-done"


def three_node_flow(middle: Any, read_items: ItemsReader) -> Flow:
    load = LoadNumbers()
    load >> middle
    middle - "many" >> Summarise(read_items, "many")
    middle >> Summarise(read_items, "few")
    return Flow(start=load)


def run_flow(flow: Flow, count: int) -> tuple[Any, dict[str, Any]]:
    shared: dict[str, Any] = {"count": count, "trail": []}
    action = flow.run(shared)
    return action, shared


# -- 1. the same values and actions as the bare flow -----------------------------------------


@pytest.mark.parametrize(("count", "branch"), [(5, "many"), (2, "few")])
def test_namespaced_middle_node_gives_the_same_values_and_actions_as_the_bare_flow(count: int, branch: str) -> None:
    reference_action, reference = run_flow(three_node_flow(DescribeItems(), lambda s: s["items"]), count)
    wrapped_flow = three_node_flow(StructureOnlyNodeWrapper(DescribeItems(), "mid"), lambda s: s["mid"]["items"])
    action, shared = run_flow(wrapped_flow, count)

    assert action == reference_action == f"{branch}-done"
    assert shared["trail"] == reference["trail"] == ["load", "describe", branch]
    assert shared["summary"] == reference["summary"]
    assert shared["summary"]["labels"] == [f"item-{n}" for n in range(count)]
    assert type(shared["mid"]) is CachedOutputs
    assert shared["mid"]["items"] == reference["items"]
    assert shared["mid"]["total"] == reference["total"]
    assert shared["mid"].materialize() == {"items": reference["items"], "total": reference["total"]}
    assert sorted(shared) == ["count", "mid", "numbers", "summary", "trail"]


@pytest.mark.parametrize(("count", "branch"), [(5, "many"), (2, "few")])
def test_non_namespaced_middle_node_gives_the_same_values_and_actions_as_the_bare_flow(count: int, branch: str) -> None:
    read_mid_items: ItemsReader = lambda s: s["mid"]["items"]  # noqa: E731
    reference_action, reference = run_flow(three_node_flow(DescribeItemsIntoMid(), read_mid_items), count)
    wrapped = StructureOnlyNodeWrapper(DescribeItemsIntoMid(), "mid", namespace=False)
    action, shared = run_flow(three_node_flow(wrapped, read_mid_items), count)

    assert action == reference_action == f"{branch}-done"
    assert shared["trail"] == reference["trail"] == ["load", "describe", branch]
    assert shared["summary"] == reference["summary"]
    assert type(shared["mid"]) is CachedOutputs
    assert shared["mid"].materialize() == reference["mid"]
    assert sorted(shared) == sorted(reference) == ["count", "mid", "numbers", "summary", "trail"]


def test_the_cached_entry_holds_what_the_node_wrote() -> None:
    _, shared = run_flow(
        three_node_flow(StructureOnlyNodeWrapper(DescribeItems(), "mid"), lambda s: s["mid"]["items"]), 3
    )
    execution_id = shared["mid"]["_execution_id"]
    assert read_fields(execution_id, ["items[*].label", "total"]) == {
        "items[*].label": ["item-0", "item-1", "item-2"],
        "total": 5,
    }
    entry = Settings.from_env().cache().get(execution_id)
    assert entry.node_type == "DescribeItems"
    assert entry.outputs == {"items": shared["mid"]["items"], "total": 5}


class WritesAcrossNamespaces(Node):  # type: ignore[misc]
    def prep(self, shared: Shared) -> Any:
        return shared["count"]

    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> None:
        shared["count"] = prep_res + 100
        shared["__progress__"] = "half-way"
        shared["seen_own"] = shared["count"]


def test_a_namespaced_write_shadows_the_root_key_for_the_node_only() -> None:
    shared: dict[str, Any] = {"count": 1}
    StructureOnlyNodeWrapper(WritesAcrossNamespaces(), "w").run(shared)
    assert shared["count"] == 1
    assert shared["w"].materialize() == {"count": 101, "seen_own": 101}


def test_double_underscore_keys_go_to_the_root_of_the_shared_store() -> None:
    shared: dict[str, Any] = {"count": 1}
    StructureOnlyNodeWrapper(WritesAcrossNamespaces(), "w").run(shared)
    assert shared["__progress__"] == "half-way"
    assert "__progress__" not in shared["w"]


# -- 2. the node protocol: copies, wiring, params ------------------------------------------------


class Echo(Node):  # type: ignore[misc]
    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> Any:
        shared["params"] = dict(self.params)
        return self.params.get("action")


def test_copy_keeps_the_wrapper_around_a_shallow_copy_of_the_inner_node() -> None:
    settings = Settings.from_env()
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo", node_type="echo-node", namespace=False, settings=settings)
    wrapper >> Echo()
    clone = copy.copy(wrapper)

    assert type(clone) is StructureOnlyNodeWrapper
    assert (clone.node_id, clone.node_type, clone.namespace, clone.settings) == ("echo", "echo-node", False, settings)
    assert type(clone.inner_node) is Echo
    assert clone.inner_node is not wrapper.inner_node
    assert clone.successors is wrapper.successors  # a shallow copy, as copy.copy of the bare node


def test_deepcopy_keeps_the_wrapper_around_a_deep_copy_of_the_inner_node() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo", namespace=False)
    follower = Echo()
    wrapper >> follower
    clone = copy.deepcopy(wrapper)

    assert type(clone) is StructureOnlyNodeWrapper
    assert (clone.node_id, clone.node_type, clone.namespace) == ("echo", "Echo", False)
    assert type(clone.inner_node) is Echo
    assert clone.inner_node is not wrapper.inner_node
    assert type(clone.successors["default"]) is Echo
    assert clone.successors["default"] is not follower


def test_deepcopy_of_a_loop_points_back_at_the_copied_wrapper() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    wrapper - "again" >> wrapper
    clone = copy.deepcopy(wrapper)
    assert clone.successors["again"] is clone


def test_a_flow_runs_twice_from_the_same_start_node() -> None:
    flow = three_node_flow(StructureOnlyNodeWrapper(DescribeItems(), "mid"), lambda s: s["mid"]["items"])
    first_action, first = run_flow(flow, 4)
    second_action, second = run_flow(flow, 4)

    assert first_action == second_action == "many-done"
    assert first["summary"] == second["summary"]
    assert first["mid"]["_execution_id"] != second["mid"]["_execution_id"]
    assert first["mid"].materialize() == second["mid"].materialize()


def test_rshift_wires_the_inner_node_and_returns_the_target() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    target = Echo()
    assert (wrapper >> target) is target
    assert wrapper.successors == {"default": target}
    assert wrapper.successors is wrapper.inner_node.successors


def test_conditional_transition_wires_the_inner_node() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    target = Echo()
    assert (wrapper - "retry" >> target) is target
    assert wrapper.inner_node.successors == {"retry": target}


def test_an_action_that_is_not_a_string_is_refused_as_for_the_bare_node() -> None:
    with pytest.raises(TypeError, match=r"^Action must be a string$"):
        StructureOnlyNodeWrapper(Echo(), "echo") - 3


def test_a_wrapper_can_be_the_target_of_a_transition() -> None:
    source = Echo()
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    source - "go" >> wrapper
    assert source.successors == {"go": wrapper}


def test_set_params_passes_params_to_the_inner_node() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    params = {"x": 1}
    wrapper.set_params(params)
    assert wrapper.inner_node.params is params
    assert wrapper.params is params


def test_set_params_drops_the_structure_only_flag() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    wrapper.set_params({"structure_only": True, "x": 1})
    assert wrapper.inner_node.params == {"x": 1}


def test_flow_params_reach_the_inner_node_without_the_flag_and_are_recorded_without_it() -> None:
    flow = Flow(start=StructureOnlyNodeWrapper(Echo(), "echo"))
    flow.set_params({"structure_only": True, "x": 1, "__registry__": "injected"})
    shared: dict[str, Any] = {}
    flow.run(shared)

    assert shared["echo"]["params"] == {"x": 1, "__registry__": "injected"}
    entry = Settings.from_env().cache().get(shared["echo"]["_execution_id"])
    assert entry.params == {"x": 1}


def test_attributes_are_read_from_and_written_to_the_inner_node() -> None:
    wrapper = StructureOnlyNodeWrapper(Node(max_retries=4), "n")
    assert wrapper.max_retries == 4
    wrapper.wait = 2
    assert wrapper.inner_node.wait == 2
    assert "wait" not in vars(wrapper)


def test_the_node_id_defaults_to_the_inner_class_name() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo())
    assert (wrapper.node_id, wrapper.node_type) == ("Echo", "Echo")


def test_run_warns_about_successors_as_the_bare_node_does() -> None:
    wrapper = StructureOnlyNodeWrapper(Echo(), "echo")
    wrapper >> Echo()
    with pytest.warns(UserWarning, match=r"^Node won't run successors\. Use Flow\.$"):
        wrapper.run({})


@pytest.mark.parametrize("flag", [True, "true", "True", " TRUE "])
def test_wrap_if_structure_only_wraps_when_the_flag_is_true(flag: Any) -> None:
    node = Echo()
    wrapped = wrap_if_structure_only(node, "fetch", {"structure_only": flag, "x": 1}, namespace=False)
    assert type(wrapped) is StructureOnlyNodeWrapper
    assert wrapped.inner_node is node
    assert (wrapped.node_id, wrapped.namespace) == ("fetch", False)


@pytest.mark.parametrize(
    "params", [{"structure_only": False}, {"structure_only": "false"}, {"structure_only": ""}, {}, None]
)
def test_wrap_if_structure_only_returns_the_node_when_the_flag_is_off(params: Any) -> None:
    node = Echo()
    assert wrap_if_structure_only(node, "fetch", params) is node


@pytest.mark.parametrize(("flag", "shown"), [(2, "2"), ("${x}", "'${x}'"), ("yes", "'yes'"), (None, "None"), (1, "1")])
def test_wrap_if_structure_only_refuses_other_values_naming_the_node(flag: Any, shown: str) -> None:
    with pytest.raises(ParameterError) as caught:
        wrap_if_structure_only(Echo(), "fetch", {"structure_only": flag})
    assert str(caught.value) == (
        f"the structure_only param of node 'fetch' must be true or false, not {shown}; write \"structure_only\": true"
    )


# -- 3. batch, async, retries, fallback, failure ------------------------------------------------


class SquareEach(BatchNode):  # type: ignore[misc]
    def prep(self, shared: Shared) -> list[int]:
        return [1, 2, 3]

    def exec(self, item: int) -> int:
        return item * item

    def post(self, shared: Shared, prep_res: list[int], exec_res: list[int]) -> str:
        shared["squares"] = exec_res
        return "done"


def test_a_batch_node_inner_posts_the_list_of_results() -> None:
    shared: dict[str, Any] = {}
    action = StructureOnlyNodeWrapper(SquareEach(), "squares").run(shared)
    assert action == "done"
    assert shared["squares"]["squares"] == [1, 4, 9]
    assert read_fields(shared["squares"]["_execution_id"], ["squares[*]"]) == {"squares[*]": [1, 4, 9]}


class FetchAsync(AsyncNode):  # type: ignore[misc]
    async def exec_async(self, prep_res: Any) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [{"title": "a"}, {"title": "b"}]

    async def post_async(self, shared: Shared, prep_res: Any, exec_res: Any) -> str:
        shared["result"] = exec_res
        return "fetched"


class TitlesAsync(AsyncNode):  # type: ignore[misc]
    async def prep_async(self, shared: Shared) -> Any:
        return shared["fetch"]["result"]

    async def post_async(self, shared: Shared, prep_res: Any, exec_res: Any) -> str:
        shared["titles"] = [item["title"] for item in prep_res]
        return "titled"


def test_an_async_inner_is_an_async_node_that_async_flow_awaits() -> None:
    wrapper = StructureOnlyNodeWrapper(FetchAsync(), "fetch")
    wrapper - "fetched" >> TitlesAsync()
    shared: dict[str, Any] = {}
    action = asyncio.run(AsyncFlow(start=wrapper).run_async(shared))

    assert isinstance(wrapper, AsyncNode)
    assert isinstance(wrapper, StructureOnlyNodeWrapper)
    assert action == "titled"
    assert type(shared["fetch"]) is CachedOutputs
    assert shared["fetch"]["result"] == [{"title": "a"}, {"title": "b"}]
    assert shared["titles"] == ["a", "b"]


def test_an_async_wrapper_returns_the_action_from_run_async() -> None:
    shared: dict[str, Any] = {}
    assert asyncio.run(StructureOnlyNodeWrapper(FetchAsync(), "fetch").run_async(shared)) == "fetched"
    assert shared["fetch"].read("result[*].title") == {"result[*].title": ["a", "b"]}


def test_a_sync_wrapper_is_not_an_async_node() -> None:
    assert not isinstance(StructureOnlyNodeWrapper(Echo(), "echo"), AsyncNode)


def test_copies_of_an_async_wrapper_stay_async_wrappers() -> None:
    wrapper = StructureOnlyNodeWrapper(FetchAsync(), "fetch")
    for clone in (copy.copy(wrapper), copy.deepcopy(wrapper)):
        assert type(clone) is type(wrapper)
        assert isinstance(clone, AsyncNode)
        assert type(clone.inner_node) is FetchAsync
        assert clone.inner_node is not wrapper.inner_node


class CountTitles(Node):  # type: ignore[misc]
    def prep(self, shared: Shared) -> Any:
        return shared["fetch"]["result"]

    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> str:
        shared["count"] = len(prep_res)
        return "counted"


def test_async_flow_mixes_async_and_sync_wrapped_nodes() -> None:
    fetch = StructureOnlyNodeWrapper(FetchAsync(), "fetch")
    count = StructureOnlyNodeWrapper(CountTitles(), "counter")
    fetch - "fetched" >> count
    shared: dict[str, Any] = {}
    action = asyncio.run(AsyncFlow(start=fetch).run_async(shared))

    assert action == "counted"
    assert shared["fetch"]["result"] == [{"title": "a"}, {"title": "b"}]
    assert type(shared["counter"]) is CachedOutputs
    assert shared["counter"]["count"] == 2
    assert shared["fetch"]["_execution_id"] != shared["counter"]["_execution_id"]


class FetchPage(Node):  # type: ignore[misc]
    def exec(self, prep_res: Any) -> list[int]:
        page: int = self.params["page"]
        return [page * 10 + i for i in range(3)]

    def post(self, shared: Shared, prep_res: Any, exec_res: list[int]) -> None:
        shared["rows"] = exec_res


class RecordPage(Node):  # type: ignore[misc]
    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> None:
        shared["pages"].append((self.params["page"], shared["page"]["_execution_id"]))


class EveryPage(BatchFlow):  # type: ignore[misc]
    def prep(self, shared: Shared) -> list[dict[str, int]]:
        return [{"page": 1}, {"page": 2}, {"page": 3}]


def test_batch_flow_runs_the_wrapper_once_per_param_set_with_its_own_execution_id(isolated_cache: Path) -> None:
    fetch = StructureOnlyNodeWrapper(FetchPage(), "page")
    fetch >> RecordPage()
    shared: dict[str, Any] = {"pages": []}
    EveryPage(start=fetch).run(shared)

    assert [page for page, _ in shared["pages"]] == [1, 2, 3]
    ids = [execution_id for _, execution_id in shared["pages"]]
    assert len(set(ids)) == 3
    assert [read_fields(execution_id, ["rows"])["rows"] for execution_id in ids] == [
        [10, 11, 12],
        [20, 21, 22],
        [30, 31, 32],
    ]
    cache = Settings.from_env().cache()
    assert [cache.get(execution_id).params for execution_id in ids] == [{"page": 1}, {"page": 2}, {"page": 3}]
    assert cache_files(isolated_cache) == sorted(f"{execution_id}.json" for execution_id in ids)


class FlakyTwice(Node):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__(max_retries=3)
        self.attempts: list[int] = []

    def exec(self, prep_res: Any) -> str:
        self.attempts.append(self.cur_retry)
        if len(self.attempts) < 3:
            raise ConnectionError(f"attempt {len(self.attempts)} failed")
        return "third time"

    def post(self, shared: Shared, prep_res: Any, exec_res: str) -> None:
        shared["result"] = exec_res


def test_retries_belong_to_the_inner_node_and_the_result_is_cached_once(isolated_cache: Path) -> None:
    wrapper = StructureOnlyNodeWrapper(FlakyTwice(), "flaky")
    shared: dict[str, Any] = {}
    wrapper.run(shared)

    assert wrapper.inner_node.attempts == [0, 1, 2]
    assert wrapper.cur_retry == 2
    assert shared["flaky"]["result"] == "third time"
    assert cache_files(isolated_cache) == [shared["flaky"]["_execution_id"] + ".json"]


class AlwaysFails(Node):  # type: ignore[misc]
    def exec(self, prep_res: Any) -> Any:
        raise ValueError("the service said no")

    def exec_fallback(self, prep_res: Any, exc: Exception) -> dict[str, Any]:
        return {"error": str(exc), "items": []}

    def post(self, shared: Shared, prep_res: Any, exec_res: dict[str, Any]) -> str:
        shared["result"] = exec_res
        return "fell-back"


def test_the_value_exec_fallback_returns_is_what_gets_cached(isolated_cache: Path) -> None:
    shared: dict[str, Any] = {}
    action = StructureOnlyNodeWrapper(AlwaysFails(max_retries=2), "fetch").run(shared)

    assert action == "fell-back"
    assert read_fields(shared["fetch"]["_execution_id"], ["result"]) == {
        "result": {"error": "the service said no", "items": []}
    }
    assert cache_files(isolated_cache) == [shared["fetch"]["_execution_id"] + ".json"]


class Raises(Node):  # type: ignore[misc]
    def prep(self, shared: Shared) -> None:
        shared["started"] = True

    def exec(self, prep_res: Any) -> Any:
        raise ValueError("boom")


@pytest.mark.parametrize("namespace", [True, False])
def test_a_node_that_raises_propagates_the_error_and_caches_nothing(namespace: bool, isolated_cache: Path) -> None:
    shared: dict[str, Any] = {"before": 1}
    with pytest.raises(ValueError, match=r"^boom$"):
        StructureOnlyNodeWrapper(Raises(), "fetch", namespace=namespace).run(shared)
    assert cache_files(isolated_cache) == []
    assert "fetch" not in shared


def test_a_node_that_raises_leaves_earlier_outputs_at_its_slot_untouched(isolated_cache: Path) -> None:
    earlier = {"result": [1, 2]}
    shared: dict[str, Any] = {"fetch": earlier}
    with pytest.raises(ValueError, match=r"^boom$"):
        StructureOnlyNodeWrapper(Raises(), "fetch").run(shared)
    assert shared["fetch"] is earlier
    assert earlier == {"result": [1, 2], "started": True}  # prep ran and wrote, as without the wrapper
    assert cache_files(isolated_cache) == []


class FailsOnSecondVisit(Node):  # type: ignore[misc]
    def exec(self, prep_res: Any) -> list[int]:
        if self.params.get("fail"):
            raise ValueError("boom")
        return [1, 2]

    def post(self, shared: Shared, prep_res: Any, exec_res: list[int]) -> None:
        shared["result"] = exec_res


def test_a_revisited_node_that_raises_leaves_its_previous_view_in_place(isolated_cache: Path) -> None:
    wrapper = StructureOnlyNodeWrapper(FailsOnSecondVisit(), "fetch")
    shared: dict[str, Any] = {}
    wrapper.run(shared)
    view = shared["fetch"]
    wrapper.set_params({"fail": True})
    with pytest.raises(ValueError, match=r"^boom$"):
        wrapper.run(shared)
    assert shared["fetch"] is view
    assert cache_files(isolated_cache) == [view["_execution_id"] + ".json"]


class FailsOnSecondVisitAsync(AsyncNode):  # type: ignore[misc]
    async def exec_async(self, prep_res: Any) -> list[int]:
        if self.params.get("fail"):
            raise ValueError("boom")
        return [1, 2]

    async def post_async(self, shared: Shared, prep_res: Any, exec_res: list[int]) -> None:
        shared["result"] = exec_res


def test_a_revisited_async_node_that_raises_leaves_its_previous_view_in_place(isolated_cache: Path) -> None:
    wrapper = StructureOnlyNodeWrapper(FailsOnSecondVisitAsync(), "fetch")
    shared: dict[str, Any] = {}
    asyncio.run(wrapper.run_async(shared))
    view = shared["fetch"]
    wrapper.set_params({"fail": True})
    with pytest.raises(ValueError, match=r"^boom$"):
        asyncio.run(wrapper.run_async(shared))
    assert shared["fetch"] is view
    assert cache_files(isolated_cache) == [view["_execution_id"] + ".json"]


# -- 4. a node visited twice -------------------------------------------------------------------


class CountVisits(Node):  # type: ignore[misc]
    def prep(self, shared: Shared) -> int:
        return int(shared.get("visits", 0))

    def post(self, shared: Shared, visits: int, exec_res: Any) -> str:
        shared["visits"] = visits + 1
        shared["seen"] = [*shared.get("seen", []), f"visit-{visits + 1}"]
        return "again" if visits + 1 < 2 else "done"


class RememberExecution(Node):  # type: ignore[misc]
    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> None:
        shared["first_execution_id"] = shared["loop"]["_execution_id"]


class Finish(Node):  # type: ignore[misc]
    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> str:
        return "finished"


def test_a_revisited_node_starts_from_its_outputs_and_ends_with_a_new_execution() -> None:
    counter = StructureOnlyNodeWrapper(CountVisits(), "loop")
    counter - "again" >> RememberExecution() >> counter
    counter - "done" >> Finish()
    shared: dict[str, Any] = {}
    action = Flow(start=counter).run(shared)

    assert action == "finished"
    view = shared["loop"]
    assert type(view) is CachedOutputs
    assert view.materialize() == {"visits": 2, "seen": ["visit-1", "visit-2"]}
    first_id = shared["first_execution_id"]
    assert view["_execution_id"] != first_id
    assert read_fields(first_id, ["visits", "seen"]) == {"visits": 1, "seen": ["visit-1"]}
    assert sorted(shared) == ["first_execution_id", "loop"]


class CountVisitsIntoLoop(Node):  # type: ignore[misc]
    def post(self, shared: Shared, prep_res: Any, exec_res: Any) -> str:
        mine = shared.setdefault("loop", {})
        mine["visits"] = mine.get("visits", 0) + 1
        return "again" if mine["visits"] < 2 else "done"


def test_a_revisited_non_namespaced_node_updates_its_earlier_outputs_in_place() -> None:
    counter = StructureOnlyNodeWrapper(CountVisitsIntoLoop(), "loop", namespace=False)
    counter - "again" >> RememberExecution() >> counter
    counter - "done" >> Finish()
    shared: dict[str, Any] = {}
    Flow(start=counter).run(shared)

    assert type(shared["loop"]) is CachedOutputs
    assert shared["loop"].materialize() == {"visits": 2}
    assert shared["loop"]["_execution_id"] != shared["first_execution_id"]
    assert read_fields(shared["first_execution_id"], ["visits"]) == {"visits": 1}


# -- 6. bad input ------------------------------------------------------------------------------


def test_a_non_dict_at_the_node_slot_is_a_parameter_error_naming_the_node(isolated_cache: Path) -> None:
    shared: dict[str, Any] = {"fetch": "a string someone left here"}
    with pytest.raises(ParameterError) as caught:
        StructureOnlyNodeWrapper(Echo(), "fetch").run(shared)
    assert str(caught.value) == (
        "shared['fetch'] already holds a str, so structure-only node 'fetch' cannot keep its outputs there; "
        "give the wrapper another node_id"
    )
    assert shared == {"fetch": "a string someone left here"}
    assert cache_files(isolated_cache) == []


@pytest.fixture
def unusable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The cache directory and its fallback both lie under regular files; returns their parents."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PFLOW_STRUCTURE_CACHE_DIR", str(blocker / "cache"))
    # The fallback is <tempdir>/pflow-structure-<uid>/node-executions; conftest made tempdir private.
    fallback_parent = Path(tempfile.gettempdir()) / f"pflow-structure-{os.getuid()}"
    fallback_parent.write_text("")
    return blocker, fallback_parent


def test_outputs_stay_in_memory_with_a_warning_when_the_cache_cannot_store_them(
    unusable_cache: tuple[Path, Path],
) -> None:
    blocker, fallback_parent = unusable_cache
    shared: dict[str, Any] = {"count": 5, "trail": []}
    flow = three_node_flow(StructureOnlyNodeWrapper(DescribeItems(), "mid"), lambda s: s["mid"]["items"])
    with pytest.warns(RuntimeWarning) as caught:
        action = flow.run(shared)

    assert action == "many-done"
    mid = shared["mid"]
    assert type(mid) is dict
    assert list(mid) == ["items", "total", "_structure", "_execution_id"]
    assert mid["items"] == [{"n": n, "square": n * n, "label": f"item-{n}"} for n in range(5)]
    assert mid["total"] == 30
    assert mid["_structure"]["items"] == {"type": "list", "length": 5}
    assert shared["summary"]["labels"] == ["item-0", "item-1", "item-2", "item-3", "item-4"]
    assert [str(w.message) for w in caught] == [
        "structure-only node 'mid' keeps its outputs in memory: "
        f"Cache directory {blocker / 'cache'} is not writable (Not a directory). "
        f"Cache directory {fallback_parent / 'node-executions'} is not writable "
        f"({fallback_parent} is not a directory; refusing to use it as a cache directory). "
        "The execution was not cached, so read_fields cannot read it; "
        "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory."
    ]


def test_a_revisited_node_kept_in_memory_starts_from_its_outputs_without_the_metadata(
    unusable_cache: tuple[Path, Path],
) -> None:
    counter = StructureOnlyNodeWrapper(CountVisits(), "loop")
    counter - "again" >> counter
    counter - "done" >> Finish()
    shared: dict[str, Any] = {}
    with pytest.warns(RuntimeWarning):
        Flow(start=counter).run(shared)

    loop = shared["loop"]
    assert type(loop) is dict
    assert list(loop) == ["visits", "seen", "_structure", "_execution_id"]
    assert (loop["visits"], loop["seen"]) == (2, ["visit-1", "visit-2"])
    assert list(loop["_structure"]) == ["visits", "seen", "seen[0]"]


# -- 7. memory -----------------------------------------------------------------------------------

RECORDS = 50_000


class LoadLargeResponse(Node):  # type: ignore[misc]
    """About 50 MB of Python objects: 50,000 dicts each holding a 1 KB string."""

    def exec(self, prep_res: Any) -> list[dict[str, Any]]:
        return [{"id": i, "state": "open", "body": f"{i:08d}" + "x" * 1016} for i in range(RECORDS)]

    def post(self, shared: Shared, prep_res: Any, exec_res: list[dict[str, Any]]) -> None:
        shared["records"] = exec_res


def _shared_store_bytes(wrapped: bool) -> tuple[int, dict[str, Any]]:
    """Bytes still allocated after a one-node flow ran, with only `shared` kept alive."""
    gc.collect()
    baseline = tracemalloc.get_traced_memory()[0]
    node: Any = LoadLargeResponse()
    if wrapped:
        node = StructureOnlyNodeWrapper(node, "load")
    flow = Flow(start=node)
    shared: dict[str, Any] = {}
    flow.run(shared)
    del flow, node
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - baseline, shared


@pytest.mark.slow
def test_a_50_mb_structure_only_output_keeps_under_10_mb_in_the_shared_store() -> None:
    StructureOnlyNodeWrapper(Echo(), "warm-up").run({})  # imports and first-use caches, outside the measurement
    tracemalloc.start()
    try:
        wrapped_bytes, shared = _shared_store_bytes(wrapped=True)
        assert shared["load"]["_structure"]["records"] == {"type": "list", "length": RECORDS}
        assert shared["load"].read("records[-1].id") == {"records[-1].id": RECORDS - 1}
        del shared
        reference_bytes, reference = _shared_store_bytes(wrapped=False)
        assert len(reference["records"]) == RECORDS
        del reference
    finally:
        tracemalloc.stop()
    print(
        f"shared store after post: structure-only {wrapped_bytes / 1e6:.3f} MB, "
        f"bare node {reference_bytes / 1e6:.1f} MB (ratio {reference_bytes / max(wrapped_bytes, 1):.0f}x)"
    )
    assert wrapped_bytes < 10_000_000
    assert reference_bytes > 40_000_000


# -- pickling ----------------------------------------------------------------------------------


def test_a_pickled_wrapper_in_a_loop_comes_back_wired_to_itself() -> None:
    import pickle

    wrapper = StructureOnlyNodeWrapper(Echo(), "echo", namespace=False)
    wrapper - "again" >> wrapper
    clone = pickle.loads(pickle.dumps(wrapper))
    assert type(clone) is StructureOnlyNodeWrapper
    assert (clone.node_id, clone.namespace) == ("echo", False)
    assert clone.successors["again"] is clone


def test_a_pickled_async_wrapper_is_still_awaited_by_asyncflow() -> None:
    import pickle

    clone = pickle.loads(pickle.dumps(StructureOnlyNodeWrapper(FetchAsync(), "fetch")))
    assert isinstance(clone, AsyncNode)
    shared: dict[str, Any] = {}
    asyncio.run(AsyncFlow(start=clone).run_async(shared))
    assert isinstance(shared["fetch"], CachedOutputs)
