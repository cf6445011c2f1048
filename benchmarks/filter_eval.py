"""The field filter judged on labelled responses it was not tuned on (issue 16).

    python benchmarks/filter_eval.py            # heuristic: in-sample, leave-one-API-out, ablations
    python benchmarks/filter_eval.py --llm      # and the LLM path with a fake model (localhost)

Every labelled response goes through the filter (the scoring is what is judged); the
"default view" row applies the 50-field threshold, under which a structure is shown whole.
Reads ``tests/data/filter_eval/FAMILY/{NAME.json,labels.json}`` (the new set, labelled by its
rubric before any filter ran) and ``tests/data/filter_labels.json`` (the old set, over
``tests/corpus``). Per API family: must-keep shown, must-drop hidden, must-keep findable by
name (shown, or named in ``hidden`` under its own object). Leave-one-API-out: the
:class:`~pflow_structure.filtering.signals.Tuning` is chosen from a small grid on every family
but one and scored on that one; the table gives each family's held-out numbers, their mean
and the worst family. Label paths are never rewritten: a structure path that stands for a
label (``[*]`` for a key, a ``same_as`` or a dynamic-key dict above it) covers it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
EVAL = REPO / "tests" / "data" / "filter_eval"
OLD_LABELS = REPO / "tests" / "data" / "filter_labels.json"
CORPUS = REPO / "tests" / "corpus"

from pflow_structure.filtering.signals import DEFAULT_TUNING, Tuning  # noqa: E402

GRID = {
    "budget": (180, 240, 300),
    "reference": (0.0, 2.0),
    "depth_decay": (0.85, 0.93),
    "flag": (0.2, 1.5),
    "time": (1.6, 2.5),
    "sub_object": (2, 4),
    "envelope": (1.0, 0.5),
}
# Tried and dropped (pooled over the new set, default tuning otherwise): a relative floor (a field
# below 15% of the response's best score is not shown) took 5.2 points of must-keep for 3.6 of
# must-drop.


class Case(NamedTuple):
    family: str
    name: str
    structure: dict[str, dict[str, Any]]
    signals: dict[str, Any]
    field_count: int
    keep: list[str]
    drop: list[str]


class Score(NamedTuple):
    keep: int
    keep_total: int
    drop: int
    drop_total: int
    findable: int

    def __add__(self, other: Any) -> Score:  # type: ignore[override]
        return Score(*(a + b for a, b in zip(self, other, strict=True)))


ZERO = Score(0, 0, 0, 0, 0)


def _case(family: str, path: Path, label: Mapping[str, Any]) -> Case:
    from pflow_structure.encoding import encode_value
    from pflow_structure.structure import infer_structure

    inferred = infer_structure(encode_value({"result": json.loads(path.read_text(encoding="utf-8"))}).value)
    return Case(
        family,
        path.name,
        inferred.structure,
        dict(inferred.signals or {}),
        inferred.field_count,
        list(label["must_keep"]),
        list(label["must_drop"]),
    )


def load_new() -> list[Case]:
    cases = []
    for labels_file in sorted(EVAL.glob("*/labels.json")):
        labels = json.loads(labels_file.read_text(encoding="utf-8"))
        for name, label in sorted(labels["files"].items()):
            cases.append(_case(labels["family"], labels_file.parent / name, label))
    return cases


def load_old() -> list[Case]:
    labels = json.loads(OLD_LABELS.read_text(encoding="utf-8"))["files"]
    return [_case(name.split("__")[0], CORPUS / name, label) for name, label in sorted(labels.items())]


def covers(field: str, label: str) -> bool:
    """``field`` (a structure path) stands for ``label`` (a concrete path), or holds it."""
    from pflow_structure.paths import template_covers

    if field == label:
        return True
    if "[*]" in field and template_covers(field, label):
        return True
    return label.startswith(field) and label[len(field) : len(field) + 1] in (".", "[")


def findable(label: str, shown: Sequence[str], hidden: Mapping[str, Mapping[str, Any]]) -> bool:
    """Shown, or its last key named in ``hidden`` under the object that holds it."""
    from pflow_structure.filtering.hidden import split_last
    from pflow_structure.paths import template_covers

    if any(covers(field, label) for field in shown):
        return True
    while label.endswith("[0]"):  # a list of scalars is named by its own key
        label = label[:-3]
    split = split_last(label)
    if split is None:
        return False
    obj, name = split
    return any(
        name in entry.get("names", ()) and (key == obj or ("[*]" in key and template_covers(key, obj)))
        for key, entry in hidden.items()
    )


def score(case: Case, shown: Sequence[str], hidden: Mapping[str, Mapping[str, Any]]) -> Score:
    keep = sum(1 for label in case.keep if any(covers(field, label) for field in shown))
    drop = sum(1 for label in case.drop if not any(covers(field, label) for field in shown))
    found = sum(1 for label in case.keep if findable(label, shown, hidden))
    return Score(keep, len(case.keep), drop, len(case.drop), found)


def heuristic(case: Case, tuning: Tuning) -> Score:
    from pflow_structure.filtering import choose_fields

    choice = choose_fields(case.structure, signals=case.signals, tuning=tuning)
    return score(case, choice.kept_fields, choice.hidden)


def default_view(case: Case) -> Score:
    """What a user sees: structures of at most 50 fields whose lines fit the whole-view budget are shown whole."""
    from pflow_structure.filtering import FilterOptions, shown_whole

    if shown_whole(case.structure, case.field_count, FilterOptions()):
        return score(case, list(case.structure), {})
    return heuristic(case, DEFAULT_TUNING)


def by_family(cases: Iterable[Case], tuning: Tuning) -> dict[str, Score]:
    out: dict[str, Score] = {}
    for case in cases:
        out[case.family] = out.get(case.family, ZERO) + heuristic(case, tuning)
    return out


def rates(total: Score) -> tuple[float, float, float]:
    return (
        total.keep / total.keep_total if total.keep_total else 1.0,
        total.drop / total.drop_total if total.drop_total else 1.0,
        total.findable / total.keep_total if total.keep_total else 1.0,
    )


def objective(scores: Iterable[Score]) -> float:
    """Mean over families of keep + drop: each API counts once, whatever its number of files."""
    values = [sum(rates(s)[:2]) for s in scores]
    return sum(values) / len(values) if values else 0.0


def grid() -> list[Tuning]:
    names = list(GRID)
    return [
        DEFAULT_TUNING._replace(**dict(zip(names, values, strict=True))) for values in itertools.product(*GRID.values())
    ]


def leave_one_out(cases: list[Case]) -> tuple[dict[str, tuple[Score, Tuning]], Tuning]:
    """Per family: its score under the tuning that was best on all the other families."""
    tunings = grid()
    table = [by_family(cases, tuning) for tuning in tunings]
    families = sorted({case.family for case in cases})
    held: dict[str, tuple[Score, Tuning]] = {}
    for family in families:
        best = max(range(len(tunings)), key=lambda i: objective(s for f, s in table[i].items() if f != family))
        held[family] = (table[best][family], tunings[best])
    overall = max(range(len(tunings)), key=lambda i: objective(table[i].values()))
    return held, tunings[overall]


def _row(name: str, s: Score, extra: str = "") -> str:
    keep, drop, found = rates(s)
    return (
        f"| {name} | {keep:.1%} ({s.keep}/{s.keep_total}) | {drop:.1%} ({s.drop}/{s.drop_total}) "
        f"| {found:.1%} | {extra} |"
    )


def report(cases: list[Case], old: list[Case]) -> list[str]:
    held, overall = leave_one_out(cases)
    insample = by_family(cases, DEFAULT_TUNING)
    lines = [
        f"New set: {len(cases)} responses from {len(held)} API families. Default tuning: {tuple(DEFAULT_TUNING)};",
        f"best on all families: {tuple(overall)} (fields: {', '.join(Tuning._fields)}).",
        "",
        "| Family | must-keep shown | must-drop hidden | must-keep findable by name | tuning chosen without it |",
        "|---|---|---|---|---|",
    ]
    for family, (s, tuning) in sorted(held.items()):
        lines.append(_row(family, s, str(tuple(tuning))))
    held_rates = [rates(s) for s, _ in held.values()]
    mean = [sum(r[i] for r in held_rates) / len(held_rates) for i in range(3)]
    worst_keep = min(held, key=lambda f: rates(held[f][0])[0])
    worst_drop = min(held, key=lambda f: rates(held[f][0])[1])
    pooled = sum((s for s, _ in held.values()), ZERO)
    lines.append(_row("**leave-one-API-out, pooled**", pooled))
    lines.append(f"| **leave-one-API-out, mean of families** | {mean[0]:.1%} | {mean[1]:.1%} | {mean[2]:.1%} | |")
    lines.append(
        f"| worst family | {worst_keep} {rates(held[worst_keep][0])[0]:.1%} | "
        f"{worst_drop} {rates(held[worst_drop][0])[1]:.1%} | | |"
    )
    lines.append(_row("in-sample (default tuning), pooled", sum(insample.values(), ZERO)))
    lines.append(_row("default view (filter only above 50 fields), pooled", sum(map(default_view, cases), ZERO)))
    old_scores = by_family(old, DEFAULT_TUNING)
    lines.append(_row("old set (tests/data/filter_labels.json), default tuning", sum(old_scores.values(), ZERO)))
    lines += ["", "Each signal switched off (default tuning otherwise), pooled over the new set:", ""]
    lines += ["| Without | must-keep shown | must-drop hidden | findable |", "|---|---|---|---|"]
    for field in ("category", "token_id", "constant", "reference", "flag", "null_named", "envelope"):
        off = 1.0 if field == "envelope" else 0.0  # the value that switches the signal off
        s = sum(by_family(cases, DEFAULT_TUNING._replace(**{field: off})).values(), ZERO)
        keep, drop, found = rates(s)
        lines.append(f"| {field} | {keep:.1%} | {drop:.1%} | {found:.1%} |")
    return lines


def llm_report(cases: list[Case]) -> list[str]:
    """The LLM path over the same labels: a localhost server speaking Anthropic's Messages API answers
    each request with the file's labelled must-keep fields; litellm's real client sends it."""
    from llm_fake import FakeModel  # benchmarks/llm_fake.py

    from pflow_structure.filtering import FilterOptions, fields_of, filter_structure

    total = ZERO
    methods: dict[str, int] = {}
    with FakeModel() as fake:
        # threshold 0: every labelled response goes through the filter, as in the heuristic's rows
        options = FilterOptions(mode="llm", api_base=fake.api_base, timeout=10.0, threshold=0)
        for case in cases:
            fields = fields_of(case.structure)
            fake.answer([f for f in fields if any(covers(f, label) for label in case.keep)])
            outcome = filter_structure(case.structure, case.field_count, "read-json", options, signals=case.signals)
            methods[str(outcome.method)] = methods.get(str(outcome.method), 0) + 1
            shown = [f for f in fields if f in outcome.structure]
            total += score(case, shown, outcome.hidden or {})
    keep, drop, found = rates(total)
    return [
        f"LLM path (fake model answering the labels, {fake.requests} requests through litellm; "
        f"methods used: {methods}): must-keep shown {keep:.1%}, must-drop hidden {drop:.1%}, findable {found:.1%}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", action="store_true", help="also run the LLM path with a fake model")
    args = parser.parse_args(argv)
    cases, old = load_new(), load_old()
    if not cases:
        print(f"no labelled responses under {EVAL}", file=sys.stderr)
        return 1
    lines = report(cases, old)
    if args.llm:
        lines += ["", *llm_report(cases)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
