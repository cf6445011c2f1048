"""The field filter: the heuristic against the hand-labelled set, the modes, the decision cache."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.encoding import encode_value
from pflow_structure.filtering import FilterOptions, choose_fields, fields_of, filter_structure, score_field
from pflow_structure.filtering.decisions import DecisionCache, decision_key
from pflow_structure.paths import template_covers
from pflow_structure.service import read_fields, registry_run
from pflow_structure.settings import Settings
from pflow_structure.structure import infer_structure
from tests.conftest import CORPUS, REPO

LABELS = json.loads((REPO / "tests" / "data" / "filter_labels.json").read_text())["files"]
# What the heuristic reaches on the labelled set today (see the closing note of issue 5): the
# issue's target is 90% of must-keep and 90% of must-drop; these floors stop it from sliding back.
# Issue 16 tuned the scoring on a new set of other APIs (benchmarks/filter_eval.py); this old
# set keeps 90% of its must-keep.
KEEP_FLOOR = 0.90
DROP_FLOOR = 0.90  # the learned score trades a little of this (old set: 95.4%) for must-keep on unseen APIs


def covered(label: str, paths: set[str]) -> bool:
    """Labels name concrete paths (``methods.list.path``); a structure may list ``methods[*].path``."""
    return label in paths or any(template_covers(path, label) for path in paths if "[*]" in path)


def structure_of(name: str) -> Any:
    """The inferred structure, with the statistics the filter scores with (``.signals``)."""
    value = json.loads((CORPUS / name).read_text())
    return infer_structure(encode_value({"result": value}).value)


def test_every_labelled_file_has_more_than_50_fields_and_its_labels_exist_in_its_structure() -> None:
    assert len(LABELS) == 15
    for name, labels in LABELS.items():
        inferred = structure_of(name)
        assert inferred.field_count == labels["field_count"] > 50
        fields = set(fields_of(inferred.structure))
        assert all(covered(path, fields) for path in labels["must_keep"]), name
        assert not set(labels["must_keep"]) & set(labels["must_drop"])


def test_the_heuristic_keeps_what_people_need_and_drops_the_noise_over_the_labelled_set() -> None:
    kept_right = keep_total = dropped_right = drop_total = 0
    for name, labels in LABELS.items():
        inferred = structure_of(name)
        choice = choose_fields(inferred.structure, signals=inferred.signals)
        kept = set(choice.kept_fields)
        assert 1 <= len(kept) <= 40 + 5, name  # the target (a cap; the token budget decides), plus list shapes
        kept_right += sum(1 for path in labels["must_keep"] if covered(path, kept))
        keep_total += len(labels["must_keep"])
        dropped_right += sum(1 for path in labels["must_drop"] if not covered(path, kept))
        drop_total += len(labels["must_drop"])
    assert kept_right / keep_total >= KEEP_FLOOR, f"kept {kept_right}/{keep_total}"
    assert dropped_right / drop_total >= DROP_FLOOR, f"dropped {dropped_right}/{drop_total}"


def test_the_github_issue_list_keeps_its_business_fields_and_drops_links_and_ids() -> None:
    choice = choose_fields(structure_of("github__list_issues.json").structure)
    for path in ("result[0].title", "result[0].body", "result[0].state", "result[0].user.login"):
        assert path in choice.kept_fields
    assert "result[0].labels[0].name" in choice.kept_fields
    for path in ("result[0].url", "result[0].node_id", "result[0].user.avatar_url", "result[0].labels[0].color"):
        assert path not in choice.kept_fields
    assert "result" in choice.structure and "result[0].user" in choice.structure  # containers of kept fields
    assert set(choice.kept_fields) | set(choice.hidden_fields) == set(
        fields_of(choice.structure) + choice.hidden_fields
    )


def test_scores_read_names_and_statistics_only() -> None:
    assert score_field("result[0].title", {"type": "str", "avg_length": 40}) > 5
    assert score_field("result[0].html_url", {"type": "str", "avg_length": 40}) < 0
    assert score_field("result[0].node_id", {"type": "str", "avg_length": 20}) < 0
    assert score_field("result[0].updated_at", {"type": "str", "avg_length": 20}) < score_field(
        "result[0].state", {"type": "str", "avg_length": 6}
    )
    assert score_field("result.createdAt", {"type": "str"}) == score_field("result.created_at", {"type": "str"})
    assert score_field("result[0].x", {"type": "null"}) < 0  # always null
    assert score_field("result[0].mystery", {"type": "str", "avg_length": 0}) < 0  # always empty
    assert score_field("result._links.self.href", {"type": "str"}) < 0
    assert score_field('result["display-name"]', {"type": "str"}) > 5


def test_each_kept_list_shows_at_least_two_fields_of_its_items() -> None:
    structure = {
        "result": {"type": "list", "length": 3},
        "result[0].title": {"type": "str", "avg_length": 30},
        "result[0].url": {"type": "str", "avg_length": 30},
        "result[0].owner_count": {"type": "int"},
        **{f"result[0].meta_{i}_url": {"type": "str"} for i in range(60)},
    }
    choice = choose_fields(structure, target=1)
    assert choice.kept_fields == ["result[0].title", "result[0].owner_count"]


# -- modes --------------------------------------------------------------------------------------


def test_modes_threshold_and_all_fields() -> None:
    inferred = structure_of("github__list_issues.json")
    structure, count = inferred.structure, inferred.field_count
    heuristic = filter_structure(structure, count, "read-json", FilterOptions(mode="heuristic"))
    assert heuristic.filtered and heuristic.method == "heuristic" and heuristic.kept_fields <= FilterOptions().target
    assert heuristic.warnings == []
    assert filter_structure(structure, count, "read-json", FilterOptions(mode="off")).structure == structure
    assert not filter_structure(structure, count, "read-json", FilterOptions(threshold=count, whole_view=0)).filtered
    assert filter_structure(structure, count, "read-json", FilterOptions(threshold=count - 1, whole_view=0)).filtered
    assert filter_structure(structure, count, "read-json", FilterOptions(threshold=count)).filtered  # long lines
    assert not filter_structure(structure, count, "read-json", FilterOptions(), all_fields=True).filtered
    auto = filter_structure(structure, count, "read-json", FilterOptions(mode="auto"))
    assert auto.method == "heuristic" and auto.warnings == []  # no LLM configured: quietly the heuristic
    wanted = filter_structure(structure, count, "read-json", FilterOptions(mode="llm"))
    assert wanted.method == "heuristic"
    assert wanted.warnings == [
        "Filter mode is llm but no LLM is configured (set ANTHROPIC_API_KEY); used the heuristic filter."
    ]


def test_the_llm_runs_only_with_its_key_and_litellm() -> None:
    from pflow_structure.filtering import llm_status

    assert llm_status(FilterOptions()) == (False, "set ANTHROPIC_API_KEY")
    keyed = FilterOptions(keys_set=frozenset({"ANTHROPIC_API_KEY"}))
    assert llm_status(keyed, litellm_installed=True) == (True, "")
    assert llm_status(keyed, litellm_installed=False) == (False, "pip install 'pflow-structure[llm]' for litellm")
    assert llm_status(FilterOptions(model="openai/gpt-4o-mini", keys_set=keyed.keys_set))[1] == "set OPENAI_API_KEY"
    assert llm_status(FilterOptions(api_base="http://127.0.0.1:1"), litellm_installed=True)[0] is True
    settings = Settings.from_env({"ANTHROPIC_API_KEY": "k", "EMPTY_API_KEY": "", "PFLOW_STRUCTURE_FILTER": "llm"})
    assert settings.filtering.keys_set == frozenset({"ANTHROPIC_API_KEY"})


def test_under_50_fields_with_a_short_view_nothing_is_filtered() -> None:
    inferred = structure_of("github__get_root.json")
    assert inferred.field_count <= 50
    outcome = filter_structure(inferred.structure, inferred.field_count, "read-json", FilterOptions())
    assert not outcome.filtered and outcome.structure == inferred.structure


def test_under_50_fields_whose_lines_would_be_long_are_filtered_and_every_hidden_name_is_listed() -> None:
    from pflow_structure.filtering import WHOLE_VIEW_TOKENS
    from pflow_structure.filtering.heuristic import view_cost

    inferred = structure_of("kubernetes__get_node.json")  # 48 fields, about 600 tokens whole
    assert inferred.field_count <= 50 and view_cost(inferred.structure) > WHOLE_VIEW_TOKENS
    outcome = filter_structure(inferred.structure, inferred.field_count, "read-json", FilterOptions())
    assert outcome.filtered and outcome.hidden
    assert {"result.metadata.name", "result.status.nodeInfo.osImage"} <= set(outcome.structure)
    top = {path.split(".")[1] for path in inferred.structure if path.count(".") >= 1}
    shown = {path.split(".")[1] for path in outcome.structure if path.count(".") >= 1}
    named = set(outcome.hidden.get("result", {}).get("names", []))
    assert top == shown | named  # every top-level name is in the view, shown or named


def test_hidden_fields_stay_readable(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    result = registry_run("read-json", {"path": str(CORPUS / "github__list_issues.json")}, settings=settings)
    assert result["filtered"] and "result[0].node_id" not in result["structure"]
    values = read_fields(result["execution_id"], ["result[0].user.avatar_url", "result[0].url"], settings=settings)
    assert "result[0].url" not in result["structure"]
    assert all(isinstance(value, str) and value.startswith("https://") for value in values.values())
    assert result["filter_note"].endswith("fields hidden: --all-fields (all_fields) lists them")


# -- the decision cache ---------------------------------------------------------------------------


def test_decision_key_depends_on_shape_model_prompt_and_node_not_on_values() -> None:
    structure = {"result[0].title": {"type": "str", "avg_length": 4}, "result[0].n": {"type": "int"}}
    fields = list(structure)
    key = decision_key("node", "model", "1", structure, fields)
    same_shape = {"result[0].n": {"type": "int"}, "result[0].title": {"type": "str", "avg_length": 99}}
    assert decision_key("node", "model", "1", same_shape, list(same_shape)) == key
    assert decision_key("other", "model", "1", structure, fields) != key
    assert decision_key("node", "other", "1", structure, fields) != key
    assert decision_key("node", "model", "2", structure, fields) != key
    retyped = {**structure, "result[0].n": {"type": "str"}}
    assert decision_key("node", "model", "1", retyped, fields) != key


def test_decisions_are_private_files_that_expire(tmp_path: Path) -> None:
    cache = DecisionCache(tmp_path / "decisions", ttl_days=30)
    key = "a" * 64
    assert cache.get(key) is None
    assert cache.put(key, ["result[0].title"], model="m")
    assert cache.get(key) == ["result[0].title"]
    path = tmp_path / "decisions" / f"{key}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "decisions").stat().st_mode) == 0o700
    record = json.loads(path.read_text())
    record["created"] = time.time() - 31 * 86400
    path.write_text(json.dumps(record))
    assert cache.get(key) is None  # older than 30 days


def test_a_broken_or_hostile_decision_file_is_ignored(tmp_path: Path) -> None:
    cache = DecisionCache(tmp_path)
    key = "b" * 64
    (tmp_path / f"{key}.json").write_text("{not json")
    assert cache.get(key) is None
    (tmp_path / f"{key}.json").unlink()
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"key": key, "created": time.time(), "kept": ["x"]}))
    os.symlink(target, tmp_path / f"{key}.json")
    assert cache.get(key) is None  # never read through a symlink
    with pytest.raises(ValueError, match="not a decision key"):
        cache.get("../../etc/passwd")
    blocked = DecisionCache(tmp_path / "file")
    (tmp_path / "file").write_text("a file where the directory should be")
    assert blocked.put("c" * 64, ["x"]) is False


def test_the_shipped_weights_name_only_features_the_filter_computes() -> None:
    """A renamed or dropped feature would leave a weight that never applies: refit with
    ``python benchmarks/filter_learn.py --write``."""
    from pflow_structure.filtering.features import Places, field_features
    from pflow_structure.filtering.heuristic import _score
    from pflow_structure.filtering.learned import shipped_model
    from pflow_structure.filtering.tree import field_indices, path_nodes

    model = shipped_model()
    assert -5 < model.threshold < 5
    seen: set[str] = set()
    for name in sorted(LABELS):
        inferred = structure_of(name)
        nodes = path_nodes(inferred.structure)
        indices = field_indices(inferred.structure, nodes)
        places = Places(nodes, indices)
        signals = inferred.signals or {}
        for index in indices:
            path = nodes[index].path
            base = _score(nodes[index].keys, nodes[index].noisy_above, inferred.structure[path], signals.get(path))
            seen |= set(field_features(index, nodes[index], inferred.structure[path], signals.get(path), places, base))
    structural = {name for name in model.weights if ":" not in name}
    assert structural - seen == set()
    assert {name.split(":", 1)[0] for name in model.weights if ":" in name} <= {"w", "p", "wk"}


def test_the_shipped_weights_are_the_numbers_of_learned_json() -> None:
    from pflow_structure.filtering.learned import fitted_on, shipped_model

    data = json.loads((REPO / "pflow_structure" / "filtering" / "learned.json").read_text(encoding="utf-8"))
    assert dict(shipped_model().weights) == data["weights"] and len(data["weights"]) == 396
    assert (shipped_model().threshold, fitted_on()) == (-0.5, tuple(data["fitted_on"]))
    assert shipped_model() is shipped_model()  # read once


def test_learned_json_ships_as_package_data() -> None:
    """In the installed package (CI installs the wheel for Python 3.10 and 3.13), not only in the checkout."""
    from importlib.resources import files

    shipped = files("pflow_structure.filtering").joinpath("learned.json")
    assert shipped.is_file()
    assert json.loads(shipped.read_text(encoding="utf-8")).keys() >= {"fitted_on"}


def test_the_weights_are_read_when_the_filter_first_scores_not_when_it_is_imported() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pflow_structure.filtering, pflow_structure.filtering.heuristic;"
        "print('pflow_structure.filtering.learned' in sys.modules)"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded == "False\n"


def test_the_hand_made_heuristic_is_still_there_without_the_learned_score() -> None:
    inferred = structure_of("github__list_issues.json")
    hand = choose_fields(inferred.structure, signals=inferred.signals, model=None)
    learned = choose_fields(inferred.structure, signals=inferred.signals)
    assert "result[0].title" in hand.kept_fields and "result[0].title" in learned.kept_fields
    assert hand.scores["result[0].title"] != learned.scores["result[0].title"]  # another scale: not the same score


def test_when_no_field_reaches_the_learned_threshold_the_best_few_are_shown_not_everything() -> None:
    """60 levels of ``levelN``/``sibN`` score below the threshold everywhere: the view still filters."""
    deep: dict[str, Any] = {"leaf": 1}
    for i in range(60):
        deep = {f"level{i}": deep, f"sib{i}": i}
    inferred = infer_structure({"result": deep})
    assert inferred.field_count > 50
    outcome = filter_structure(inferred.structure, inferred.field_count, "read-json", FilterOptions())
    assert outcome.filtered and 1 <= outcome.kept_fields <= 5
    assert outcome.hidden  # and the rest is named
