"""Issue 16: nothing the filter hides disappears without a trace, and the responses the issue
names (a Kubernetes pod, GitHub's public events, a Stripe subscription and charge) show or
name what people ask about first. Built from the real responses in tests/data/filter_eval/."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.encoding import encode_value
from pflow_structure.filtering import FilterOptions, choose_fields, filter_structure
from pflow_structure.filtering.hidden import split_last
from pflow_structure.mcp.proxy.shaping import shape_result
from pflow_structure.paths import format_path, parse_path, resolve
from pflow_structure.render.structure_text import render_structure_text
from pflow_structure.render.tokens import count_tokens
from pflow_structure.service import read_fields, registry_run, store_outputs
from pflow_structure.settings import Settings
from pflow_structure.structure import infer_structure
from pflow_structure.structure.field_stats import FieldStats
from tests.conftest import CORPUS, REPO
from tests.contract import assert_structure_reads_back, every_item
from tests.structure_text import cached

EVAL = REPO / "tests" / "data" / "filter_eval"
RESPONSES = sorted(path for path in EVAL.glob("*/*.json") if path.name != "labels.json")


def _inferred(path: Path) -> Any:
    return infer_structure(encode_value({"result": json.loads(path.read_text(encoding="utf-8"))}).value)


def _labels(family: str) -> dict[str, Any]:
    return json.loads((EVAL / family / "labels.json").read_text(encoding="utf-8"))["files"]


def _findable(label: str, shown: set[str], hidden: dict[str, dict[str, Any]]) -> bool:
    if label in shown:
        return True
    split = split_last(label)
    return split is not None and split[1] in hidden.get(split[0], {}).get("names", ())


def _view(path: Path, settings: Settings) -> dict[str, Any]:
    return registry_run("read-json", {"path": str(path)}, settings=settings)


# -- the view names what it hides --------------------------------------------------------------


STRUCTURE = {
    "result": {"type": "dict"},
    "result.title": {"type": "str", "avg_length": 30},
    "result.state": {"type": "str", "avg_length": 5},
    "result.etag": {"type": "str", "avg_length": 30},
    "result.meta": {"type": "dict"},
    "result.meta.node_id": {"type": "str", "avg_length": 12},
    "result.meta.self_url": {"type": "str", "avg_length": 40},
    **{f"result.links.l{i}_url": {"type": "str", "avg_length": 40} for i in range(60)},
}
STRUCTURE["result.links"] = {"type": "dict"}


def test_a_hidden_container_is_one_line_with_its_key_names_and_shown_objects_name_their_other_keys() -> None:
    structure = {path: STRUCTURE[path] for path in sorted(STRUCTURE)}  # parents before children, as inferred
    choice = choose_fields(structure)
    assert choice.kept_fields == ["result.state", "result.title"]
    assert choice.hidden == {
        "result.meta": {"type": "dict", "names": ["node_id", "self_url"]},
        "result.links": {"type": "dict", "names": [], "patterns": {"*_url": 60}},
        "result": {"names": ["etag"]},
    }
    text = render_structure_text(
        {"execution_id": "exec-1-0", "node_type": "n", "structure": choice.structure, "hidden": choice.hidden}
    )
    assert text.splitlines()[4:10] == [
        "  result dict",
        "    .state str ~5",
        "    .title str ~30",
        "    .links dict: *_url (60)",
        "    .meta dict: node_id, self_url",
        "    other keys: etag",
    ]
    flat = render_structure_text({"structure": choice.structure, "hidden": choice.hidden}, layout="flat")
    assert "  · ${result.meta} (dict: node_id, self_url)" in flat.splitlines()
    assert "  · ${result} (other keys: etag)" in flat.splitlines()


def test_hidden_names_are_keys_of_the_objects_they_are_listed_under(tmp_path: Path) -> None:
    """Every ``OBJECT.NAME`` the view names reads back a value from the cache."""
    settings = Settings(cache_dir=tmp_path / "cache")
    result = _view(EVAL / "kubernetes" / "pod_nginx.json", settings)
    assert result["filtered"] and result["hidden"]
    paths = [f"{obj}.{name}" if obj else name for obj, entry in result["hidden"].items() for name in entry["names"]]
    values = read_fields(result["execution_id"], paths, settings=settings)
    assert [path for path, value in values.items() if value is None and "[0]" not in path] == []


@functools.cache
def _default_views() -> list[tuple[str, Any, Any]]:
    """Every corpus and filter-eval response: its name, its inference and what the default view hides."""
    views = []
    for path in [*sorted(CORPUS.glob("*.json")), *RESPONSES]:
        inferred = _inferred(path)
        outcome = filter_structure(
            inferred.structure, inferred.field_count, "n", FilterOptions(), signals=inferred.signals
        )
        views.append((f"{path.parent.name}/{path.name}", inferred, outcome))
    return views


def test_every_top_level_field_name_is_findable_in_the_default_view() -> None:
    """One case over all responses (most hide nothing at the top, so a case per file checked nothing)."""
    checked, lost = [], []
    top = {"result", "result[0]", "result[*]"}
    for name, inferred, outcome in _default_views():
        hidden, shown = outcome.hidden or {}, outcome.structure
        for full in inferred.structure:
            split = split_last(full)
            if split is None or split[0] not in top or full in shown:
                continue
            obj, key = split
            entry = hidden.get(obj, {})
            summarised = any(hidden_key == full or hidden_key.startswith(full + "[") for hidden_key in hidden)
            pattern = any(key.endswith(p[1:]) for p in entry.get("patterns", {}))
            checked.append(f"{name}: {full}")
            if not (key in entry.get("names", ()) or summarised or pattern):
                lost.append(f"{name}: {full}")
    assert len(checked) > 100, "the default views should hide top-level fields of many responses"
    assert lost == []


def test_a_list_items_other_keys_compete_for_room_as_the_fields_below_the_list_do(tmp_path: Path) -> None:
    """``conditions[0]`` is not a listed path (its list is): its other keys were ranked last and cut."""
    result = _view(EVAL / "kubernetes" / "deployment.json", Settings(cache_dir=tmp_path / "cache"))
    assert "result.status.conditions[0].status" in result["structure"]
    assert "type" in result["hidden"]["result.status.conditions[0]"]["names"]


def test_a_container_with_a_line_of_its_own_is_not_named_again_among_its_objects_other_keys() -> None:
    """One case over all responses: only some hide a container inside an object that is hidden too."""
    checked, doubled = [], []
    for name, _inferred_value, outcome in _default_views():
        hidden = outcome.hidden or {}
        for obj, entry in hidden.items():
            container = obj[:-3] if obj.endswith(("[0]", "[*]")) else obj
            split = split_last(container)
            if "type" in entry and split is not None and split[0] in hidden and "type" not in hidden[split[0]]:
                checked.append(f"{name}: {obj}")
                if split[1] in hidden[split[0]]["names"]:
                    doubled.append(f"{name}: {obj} has its line and is named under {split[0]!r}")
    assert len(checked) > 20, "the default views should hide containers inside hidden objects in many responses"
    assert doubled == []


def test_every_hidden_entry_names_a_key_a_pattern_a_count_or_a_type() -> None:
    entries = [
        (name, obj, entry)
        for name, _inferred_value, outcome in _default_views()
        for obj, entry in (outcome.hidden or {}).items()
    ]
    assert len({name for name, _obj, _entry in entries}) > 50, (
        "the default views should hide something in many responses"
    )
    empty = [
        f"{name}: {obj}"
        for name, obj, entry in entries
        if not (entry["names"] or entry.get("patterns") or entry.get("more") or "type" in entry)
    ]
    assert empty == []


# -- the cases of the issue, from real responses --------------------------------------------------


def test_a_kubernetes_pod_shows_name_namespace_and_status_and_names_the_container_columns(tmp_path: Path) -> None:
    result = _view(EVAL / "kubernetes" / "pod_nginx.json", Settings(cache_dir=tmp_path / "cache"))
    shown = set(result["structure"])
    for path in ("result.metadata.name", "result.metadata.namespace", "result.status.phase"):
        assert path in shown
    assert "result.status.containerStatuses[0].ready" in shown
    assert _findable("result.status.containerStatuses[0].restartCount", shown, result["hidden"])
    for label in _labels("kubernetes")["pod_nginx.json"]["must_keep"]:
        assert _findable(label, shown, result["hidden"]), label


def test_github_public_events_show_the_event_type_and_the_action(tmp_path: Path) -> None:
    result = _view(EVAL / "github" / "public_events.json", Settings(cache_dir=tmp_path / "cache"))
    shown = set(result["structure"])
    assert {"result[0].type", "result[0].payload.action", "result[0].actor.login", "result[0].repo.name"} <= shown
    for label in _labels("github")["public_events.json"]["must_keep"]:
        assert _findable(label, shown, result["hidden"]), label


def test_a_stripe_subscription_shows_customer_quantity_and_status(tmp_path: Path) -> None:
    result = _view(EVAL / "stripe" / "subscription.json", Settings(cache_dir=tmp_path / "cache"))
    shown = set(result["structure"])
    assert {"result.customer", "result.status", "result.items.data[0].quantity"} <= shown
    assert {"result.latest_invoice", "result.items.data[0].price.unit_amount"} <= shown
    assert "discount" in result["hidden"]["result"]["names"]  # null in this response


def test_a_stripe_charge_shows_paid_description_and_card_brand(tmp_path: Path) -> None:
    result = _view(EVAL / "stripe" / "charge.json", Settings(cache_dir=tmp_path / "cache"))
    shown = set(result["structure"])
    assert {"result.paid", "result.description", "result.payment_method_details.card.brand"} <= shown
    for label in _labels("stripe")["charge.json"]["must_keep"]:
        assert _findable(label, shown, result["hidden"]), label


# -- every adapter shows it ----------------------------------------------------------------------


def test_the_proxy_answer_carries_the_hidden_names(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", failure_log=tmp_path / "fail.jsonl")
    pod = json.loads((EVAL / "kubernetes" / "pod_nginx.json").read_text(encoding="utf-8"))

    def store(tool: str, arguments: dict[str, Any], value: Any) -> dict[str, Any]:
        return store_outputs(f"mcp:{tool}", arguments, {"result": value}, settings=settings)

    text = json.dumps(pod)
    shaped = shape_result(
        "get_pod", {}, {"content": [{"type": "text", "text": text}]}, budget=50, count=count_tokens, store=store
    )
    answer = cached(shaped.result)  # the text read back
    assert shaped.kind == "cached"
    assert set(answer["hidden"]["result"]) == {"names"}  # best first: the order is the filter's
    names = answer["hidden"]["result"]["names"]
    assert sorted(names) == ["apiVersion", "kind"]
    assert f"\n    other keys: {', '.join(names)}\n" in shaped.result["content"][0]["text"]


def test_all_fields_and_filter_off_list_every_path_and_no_hidden(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    path = EVAL / "stripe" / "charge.json"
    everything = registry_run("read-json", {"path": str(path)}, settings=settings, all_fields=True)
    assert "hidden" not in everything and not everything["filtered"]
    assert set(everything["structure"]) == set(_inferred(path).structure)
    assert_structure_reads_back({"result": json.loads(path.read_text(encoding="utf-8"))}, everything["structure"])


# -- the statistics behind the signals -----------------------------------------------------------


def test_distinct_values_are_counted_up_to_the_cap_and_token_shapes_and_prefixes_are_seen() -> None:
    ids, states = FieldStats(), FieldStats()
    for i in range(200):
        ids.add_string(f"cus_{i:08d}")
        states.add_string("open" if i % 2 else "closed")
    # 65: counted up to the cap of 64, then "more than the cap"; "cus_00000" is shared
    assert ids.signals() == (200, 65, 12, 12, 9, True, "")
    assert states.signals() == (200, 2, 4, 6, 0, False, "")
    api, web, mixed = FieldStats(), FieldStats(), FieldStats()
    for i in range(5):
        api.add_string(f"https://api.github.com/repos/o/r/issues/{i}")
        web.add_string(f"https://github.com/o/r/issues/{i}")
        mixed.add_string(f"https://github.com/o/r/issues/{i}" if i % 2 else "not a link")
    assert (api.signals().link, web.signals().link, mixed.signals().link) == ("api", "web", "")
    assert ids.distinct is None  # past the cap nothing more is kept


def test_signals_are_listed_for_scalar_paths_only_and_never_hold_values() -> None:
    inferred = infer_structure({"result": [{"id": "a1b2c3d4", "tags": ["x"], "n": 3}, {"id": "e5f6a7b8", "n": 3}]})
    assert set(inferred.signals or {}) == {"result[0].id", "result[0].tags[0]", "result[0].n"}
    assert inferred.signals["result[0].n"] == (2, 1, 0, 0, 0, False, "")
    assert "a1b2c3d4" not in repr(inferred.signals)


@pytest.mark.parametrize("path", RESPONSES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_hidden_name_is_a_key_that_exists_under_its_object(path: Path) -> None:
    """``OBJECT.NAME`` for every name in ``hidden`` resolves in the value (some item has it)."""
    value = {"result": json.loads(path.read_text(encoding="utf-8"))}
    inferred = infer_structure(encode_value(value).value)
    choice = choose_fields(inferred.structure, signals=inferred.signals)
    for obj, entry in choice.hidden.items():
        for name in entry["names"]:
            full = format_path([*parse_path(obj), name]) if obj else format_path([name])
            found, _ = resolve(value, every_item(full))
            assert found, f"{full} names no value"
