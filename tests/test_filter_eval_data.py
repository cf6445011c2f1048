"""The held-out filter evaluation set (tests/data/filter_eval, see its RUBRIC.md) is well formed.

These checks read the data and the all-fields structure only; they never run the filter, so the
labels stay independent of it. They fail on a label whose path no longer exists (read-json changed
how it forms paths): map such a label by hand, never regenerate it from the filter.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.paths import WILDCARD, format_path, parse_path, resolve
from pflow_structure.service import registry_run
from tests.conftest import REPO

EVAL = REPO / "tests" / "data" / "filter_eval"
FAMILIES = sorted(path for path in EVAL.iterdir() if path.is_dir())
FILES = sorted(path for family in FAMILIES for path in family.glob("*.json") if path.name != "labels.json")
MAX_BYTES = 1_000_000


@functools.cache
def all_fields_structure(path: Path) -> dict[str, Any]:
    """What ``pflow-structure run read-json path=FILE --json --all-fields`` prints."""
    return registry_run("read-json", {"path": str(path)}, all_fields=True)


def is_scalar_leaf(entry: dict[str, Any]) -> bool:
    kinds = set(str(entry.get("type", "")).split("|")) - {"null"}
    return not kinds & {"dict", "list"} and "same_as" not in entry


def labels_of(family: Path) -> dict[str, Any]:
    labels: dict[str, Any] = json.loads((family / "labels.json").read_text())
    return labels


def test_the_set_has_the_files_and_families_it_promises() -> None:
    assert len(FILES) >= 78
    assert len(FAMILIES) >= 16
    for family in FAMILIES:
        assert re.fullmatch(r"[a-z0-9_]+", family.name), family.name
        assert (family / "labels.json").is_file(), family.name
        assert (family / "SOURCES.md").is_file(), family.name


def test_the_shipped_weights_name_the_labelled_families_they_were_fitted_on() -> None:
    """``learned.FITTED_ON`` names families that exist (new set, or the old set's corpus prefixes):
    filter_eval judges the rest as never seen, so a typo there would hide a family's fit."""
    from pflow_structure.filtering.learned import FITTED_ON

    old = {name.split("__")[0] for name in json.loads((REPO / "tests/data/filter_labels.json").read_text())["files"]}
    assert list(FITTED_ON) == sorted(set(FITTED_ON))
    assert set(FITTED_ON) <= {family.name for family in FAMILIES} | old


def benchmark(name: str) -> Any:
    """A module of benchmarks/ (they import each other by bare name), imported without numpy."""
    import importlib
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_the_fit_writes_the_shipped_weights_file_byte_for_byte() -> None:
    """``filter_learn.py --write`` on the shipped weights gives learned.py exactly (as ruff formats it),
    so a refit on the same families shows no diff but the weights' own."""
    from pflow_structure.filtering.learned import FITTED_ON, MODEL

    filter_learn = benchmark("filter_learn")
    assert MODEL is not None
    shipped = (REPO / "pflow_structure" / "filtering" / "learned.py").read_text(encoding="utf-8")
    assert filter_learn.learned_source(MODEL.weights, MODEL.threshold, FITTED_ON) == shipped


def test_filter_eval_judges_as_never_seen_exactly_the_families_the_weights_were_not_fitted_on() -> None:
    """``benchmarks/filter_eval.py``'s never-seen table (no numpy needed): one row per labelled family
    outside ``learned.FITTED_ON``, and a pooled row over exactly their labels."""
    from pflow_structure.filtering.learned import FITTED_ON

    filter_eval = benchmark("filter_eval")
    cases = filter_eval.load_new()
    fresh = sorted({case.family for case in cases} - set(FITTED_ON))
    rows = [line for line in filter_eval.never_seen(cases) if line.startswith("| ") and not line.startswith("| Family")]
    assert [row.split(" | ")[0].removeprefix("| ") for row in rows] == [*fresh, "**never seen, pooled**"]
    keep = sum(len(case.keep) for case in cases if case.family in fresh)
    drop = sum(len(case.drop) for case in cases if case.family in fresh)
    assert f"/{keep})" in rows[-1].split(" | ")[1] and f"/{drop})" in rows[-1].split(" | ")[2]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda path: path.name)
def test_every_file_is_labelled_and_has_a_source_line(family: Path) -> None:
    labels = labels_of(family)
    assert labels["family"] == family.name
    names = {path.name for path in family.glob("*.json") if path.name != "labels.json"}
    assert set(labels["files"]) == names
    sources = (family / "SOURCES.md").read_text()
    for name in names:
        assert name in sources, f"{family.name}/{name} has no line in SOURCES.md"
        assert (family / name).stat().st_size <= MAX_BYTES


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_label_path_is_a_scalar_leaf_of_the_all_fields_structure(path: Path) -> None:
    json.loads(path.read_text())  # parses as one JSON document
    label = labels_of(path.parent)["files"][path.name]
    for key in ("endpoint", "default_view", "questions", "must_keep", "must_drop"):
        assert key in label, f"{path.name} lacks {key}"
    assert label["default_view"].strip() and 2 <= len(label["questions"]) <= 3
    described = all_fields_structure(path)
    assert described["field_count"] > 15, "small responses stay out of the set"
    structure = described["structure"]
    keep, drop = label["must_keep"], label["must_drop"]
    assert 1 <= len(keep) <= 20
    assert len(set(keep)) == len(keep) and len(set(drop)) == len(drop)
    assert not set(keep) & set(drop)
    for name in keep + drop:
        assert name in structure, f"{path.name}: {name} is not a path of the all-fields structure"
        assert is_scalar_leaf(structure[name]), f"{path.name}: {name} is not a scalar leaf"


def every_item(template: str) -> str:
    """A structure path with each ``[0]`` ("every item") as ``[*]``, so it resolves over all items."""
    return format_path([WILDCARD if isinstance(s, int) and s == 0 else s for s in parse_path(template)])


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_question_has_answer_paths_that_resolve(path: Path) -> None:
    """``answers`` maps each question, word for word, to the paths that answer it (RUBRIC.md): each a
    path of the all-fields structure, as must_keep's are, that read_fields' resolution finds in the file;
    a scalar leaf, or a container that is empty wherever it occurs (then the answer is that it is empty)."""
    label = labels_of(path.parent)["files"][path.name]
    keys = list(label)
    assert keys[keys.index("questions") + 1] == "answers", f"{path.name}: answers follow the questions"
    answers = label["answers"]
    assert list(answers) == label["questions"], f"{path.name}: answer keys differ from the questions"
    structure = all_fields_structure(path)["structure"]
    document = {"result": json.loads(path.read_text())}
    for question, names in answers.items():
        assert names, f"{path.name}: no path answers {question!r}"
        assert len(set(names)) == len(names), f"{path.name}: a path repeats for {question!r}"
        for name in names:
            assert name in structure, f"{path.name}: {name} is not a path of the all-fields structure"
            assert "same_as" not in structure[name], f"{path.name}: {name} hides behind same_as"
            matches, _ = resolve(document, every_item(name))
            found = [match.value for match in matches if not match.missing]
            assert found, f"{path.name}: {name} finds nothing"
            if not is_scalar_leaf(structure[name]):
                assert all(value in ({}, []) for value in found), f"{path.name}: {name} is not a scalar leaf"
