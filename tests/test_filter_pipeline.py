"""The filter as one pipeline over one tree (filtering/pipeline.py): the tree is built once per call, the
steps run in the order STEPS lists, and each step runs alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from types import CodeType, FrameType
from typing import Any

import pytest

from pflow_structure.encoding import encode_value
from pflow_structure.filtering import FilterOptions, choose_fields, filter_structure, hidden, pipeline, score
from pflow_structure.filtering.choice import START, Request
from pflow_structure.filtering.tree import FieldTree, path_nodes
from pflow_structure.structure import infer_structure
from tests.conftest import CORPUS

ISSUES = infer_structure(encode_value({"result": json.loads((CORPUS / "github__list_issues.json").read_text())}).value)


class Answers:
    """A decision store holding one answer for every key (the LLM's choice, as if asked before)."""

    def __init__(self, kept: Sequence[str]) -> None:
        self.kept = list(kept)

    def get(self, key: str) -> list[str] | None:
        return self.kept

    def put(self, key: str, kept: Sequence[str], **about: Any) -> bool:
        return True


def calls(codes: Sequence[CodeType], action: Callable[[], object]) -> list[int]:
    """How many times each code object ran during ``action`` (however a caller reached it)."""
    counts = [0] * len(codes)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            counts[codes.index(frame.f_code)] += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return counts


TREE_CODES = [FieldTree.build.__func__.__code__, path_nodes.__code__]  # type: ignore[attr-defined]
LLM = FilterOptions(mode="llm", api_base="http://127.0.0.1:9", decision_store=Answers(["result[0].title"]))


@pytest.mark.parametrize(
    ("options", "want", "method"),
    [
        (FilterOptions(), None, "heuristic"),
        (FilterOptions(), "who opened each issue and when", "want"),
        (LLM, None, "llm"),
        (LLM, "who opened each issue and when", "llm"),
    ],
    ids=["heuristic", "want", "llm", "llm-want"],
)
def test_a_filter_call_builds_one_tree(options: FilterOptions, want: str | None, method: str) -> None:
    found: list[Any] = []

    def action() -> None:
        found.append(
            filter_structure(ISSUES.structure, ISSUES.field_count, "n", options, signals=ISSUES.signals, want=want)
        )

    assert calls(TREE_CODES, action) == [1, 1]
    assert found[0].filtered and found[0].method == method


def test_a_call_that_filters_nothing_builds_no_tree() -> None:
    def action() -> None:
        filter_structure(ISSUES.structure, ISSUES.field_count, "n", FilterOptions(mode="off"))
        filter_structure(ISSUES.structure, ISSUES.field_count, "n", FilterOptions(), all_fields=True)

    assert calls(TREE_CODES, action) == [0, 0]


def test_the_steps_run_in_the_order_steps_lists() -> None:
    assert [step.__module__.rpartition(".")[2] for step in pipeline.STEPS] == [
        "score",
        "choose",
        "ask_llm",
        "embedding",
        "want",
        "hidden",
    ]


def test_a_step_runs_alone_on_a_tree() -> None:
    """score alone gives the scores the whole filter reports; hidden keys alone, with nothing kept, shows
    nothing, gives the list of issues a line of its own and names the objects the filter nearly showed."""
    tree = FieldTree.build(ISSUES.structure, ISSUES.signals)
    scored = score.step(tree, START, Request(model=None))
    whole = choose_fields(ISSUES.structure, signals=ISSUES.signals, model=None)
    assert {tree.nodes[index].path: value for index, value in scored.scores.items()} == whole.scores
    named = hidden.step(tree, scored, Request())
    assert named.shown == {} and named.hidden["result[0]"]["type"] == "dict"
    assert list(named.hidden) == ["result[0]", "result[0].user", "result[0].labels[0]", "result[0].milestone"]
