"""Fit the learned field score on the labelled responses, judged leave-one-API-out (issue 16).

    pip install numpy                                  # for the fit only; the package never needs it
    python benchmarks/filter_learn.py                  # leave-one-API-out table, nothing written
    python benchmarks/filter_learn.py --write          # and write the weights fitted on every family
    python benchmarks/filter_learn.py --shipped-families --write   # refit on its fitted_on only (same weights)

Each field of each labelled response (``tests/data/filter_eval`` and the old
``tests/data/filter_labels.json``) gets the features of
:mod:`pflow_structure.filtering.features`; a field that stands for a must-keep label is 1, one that
stands only for must-drop labels is 0, the rest are not fitted on. A logistic regression (Newton
steps, L2), with every API family weighted the same whatever its number of fields, gives the
weights; the threshold is the one that does best on the training families (mean over families of
must-keep shown + must-drop hidden, through the real ``choose_fields``). For each family the
weights and the threshold are fitted without it, then it is scored through ``choose_fields`` with
them: that column is the held-out number. ``--write`` writes ``pflow_structure/filtering/learned.json``
(package data, read by :mod:`pflow_structure.filtering.learned`) from the fit on every family, and
the names of those families (``fitted_on``): a family labelled
later is judged by ``benchmarks/filter_eval.py`` with the shipped weights as never seen, until a
refit without ``--shipped-families`` takes it in.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import filter_eval as fe  # noqa: E402

from pflow_structure.filtering.features import Model  # noqa: E402
from pflow_structure.filtering.signals import DEFAULT_TUNING  # noqa: E402

LEARNED = REPO / "pflow_structure" / "filtering" / "learned.json"
L2 = 1.0
THRESHOLDS = (-1.0, -0.75, -0.5, -0.25, 0.0, 0.25)
TARGETS = (0.90, 0.85)  # issue 16: must-keep shown, must-drop hidden


class Sample(NamedTuple):
    family: str
    case: int
    features: dict[str, float]
    label: int  # 1 keep, 0 drop, -1 neither


def samples(cases: Sequence[fe.Case]) -> list[Sample]:
    from pflow_structure.filtering.heuristic import base_scores, features_by_field
    from pflow_structure.filtering.tree import field_indices, path_nodes

    out = []
    for number, case in enumerate(cases):
        nodes = path_nodes(case.structure)
        indices = field_indices(case.structure, nodes)
        base = base_scores(case.structure, nodes, indices, case.signals)
        for i, feats in features_by_field(case.structure, nodes, indices, case.signals, base).items():
            path = nodes[i].path
            keep = any(fe.covers(path, label) for label in case.keep)
            drop = any(fe.covers(path, label) for label in case.drop)
            out.append(Sample(case.family, number, feats, 1 if keep else 0 if drop else -1))
    return out


WORD_FAMILIES = 3  # a word (of a name or its parent's) gets a weight only when this many APIs use it


def usable(train: Sequence[Sample], names: Sequence[str]) -> list[str]:
    """The features to fit: every structural one, and the words seen in WORD_FAMILIES families."""
    seen: dict[str, set[str]] = {}
    for sample in train:
        if sample.label >= 0:
            for name in sample.features:
                if ":" in name:
                    seen.setdefault(name, set()).add(sample.family)
    return [name for name in names if ":" not in name or len(seen.get(name, ())) >= WORD_FAMILIES]


def fit(train: Sequence[Sample], names: Sequence[str]) -> dict[str, float]:
    import numpy as np

    names = usable(train, names)
    rows = [s for s in train if s.label >= 0]
    column = {name: j for j, name in enumerate(names)}
    x = np.zeros((len(rows), len(names)))
    for r, sample in enumerate(rows):
        for name, value in sample.features.items():
            if name in column:
                x[r, column[name]] = value
    y = np.array([s.label for s in rows], dtype=float)
    per_family: dict[str, int] = {}
    for sample in rows:
        per_family[sample.family] = per_family.get(sample.family, 0) + 1
    # every family weighs the same; keep and drop weigh the same overall
    weight = np.array([1.0 / per_family[s.family] for s in rows])
    for label in (0.0, 1.0):
        weight[y == label] *= 0.5 / weight[y == label].sum()
    weight *= len(rows)
    w = np.zeros(len(names))
    penalty = np.full(len(names), L2)
    penalty[column["bias"]] = 0.0
    for _ in range(30):
        p = 1 / (1 + np.exp(-x @ w))
        gradient = x.T @ (weight * (p - y)) + penalty * w
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-6)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return {name: round(float(w[j]), 4) for j, name in enumerate(names) if abs(w[j]) >= 1e-4}


TUNING = DEFAULT_TUNING


def judged(cases: Sequence[fe.Case], model: Model) -> dict[str, fe.Score]:
    from pflow_structure.filtering import choose_fields

    out: dict[str, fe.Score] = {}
    for case in cases:
        choice = choose_fields(case.structure, signals=case.signals, model=model, tuning=TUNING)
        out[case.family] = out.get(case.family, fe.ZERO) + fe.score(case, choice.kept_fields, choice.hidden)
    return out


def best_threshold(cases: Sequence[fe.Case], weights: Mapping[str, float]) -> float:
    """The threshold nearest to meeting both targets on ``cases`` (the larger of the two shortfalls,
    pooled, is the smallest)."""

    def margin(threshold: float) -> float:
        keep, drop, _ = fe.rates(sum(judged(cases, Model(weights, threshold)).values(), fe.ZERO))
        return min(keep - TARGETS[0], drop - TARGETS[1])

    return max(THRESHOLDS, key=margin)


def leave_one_out(
    cases: Sequence[fe.Case],
    every: Sequence[Sample],
    names: Sequence[str],
    *,
    progress: bool = True,
    judge: Sequence[fe.Case] | None = None,
) -> dict[str, tuple[fe.Score, float]]:
    """Per family of ``judge`` (default ``cases``): its score with weights and threshold fitted on every
    other family of ``cases``."""
    held: dict[str, tuple[fe.Score, float]] = {}
    judge = cases if judge is None else judge
    for family in sorted({case.family for case in judge}):
        weights = fit([s for s in every if s.family != family], names)
        threshold = best_threshold([c for c in cases if c.family != family], weights)
        score = judged([c for c in judge if c.family == family], Model(weights, threshold))[family]
        held[family] = (score, threshold)
        if progress:
            keep, drop, found = fe.rates(score)
            print(
                f"  {family}: keep {keep:.1%} drop {drop:.1%} findable {found:.1%} (threshold {threshold})", flush=True
            )
    return held


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the weights fitted on every family")
    parser.add_argument(
        "--shipped-families",
        action="store_true",
        help="fit only on the families the shipped weights were fitted on (learned.json's fitted_on): "
        "reproduces them, and keeps families labelled since then as never seen",
    )
    parser.add_argument("--budget", type=int, default=DEFAULT_TUNING.budget, help="tokens of shown lines")
    parser.add_argument("--sub-object", type=int, default=DEFAULT_TUNING.sub_object, help="fields per inner dict")
    parser.add_argument("--nested-list", type=int, default=DEFAULT_TUNING.nested_list, help="fields per inner list")
    args = parser.parse_args(argv)
    global TUNING
    TUNING = DEFAULT_TUNING._replace(budget=args.budget, sub_object=args.sub_object, nested_list=args.nested_list)
    cases = fe.load_new() + fe.load_old()
    if args.shipped_families:
        from pflow_structure.filtering.learned import fitted_on

        cases = [case for case in cases if case.family in fitted_on()]
    every = samples(cases)
    names = sorted({name for s in every for name in s.features})
    families = sorted({case.family for case in cases})
    print(f"{len(cases)} responses, {len(families)} families, {len(names)} features", flush=True)
    held = {family: score for family, (score, _) in leave_one_out(cases, every, names).items()}
    pooled = sum(held.values(), fe.ZERO)
    keep, drop, found = fe.rates(pooled)
    mean = [sum(fe.rates(s)[i] for s in held.values()) / len(held) for i in range(3)]
    print(f"held out, pooled: keep {keep:.1%} drop {drop:.1%} findable {found:.1%}")
    print(f"held out, mean of families: keep {mean[0]:.1%} drop {mean[1]:.1%} findable {mean[2]:.1%}")
    weights = fit(every, names)
    threshold = best_threshold(cases, weights)
    insample = sum(judged(cases, Model(weights, threshold)).values(), fe.ZERO)
    keep, drop, found = fe.rates(insample)
    print(f"in-sample: keep {keep:.1%} drop {drop:.1%} findable {found:.1%} (threshold {threshold})")
    if args.write:
        write(weights, threshold, families)
    return 0


ABOUT = (
    "Weights of the learned field score (pflow_structure/filtering/features.py), read by "
    "pflow_structure/filtering/learned.py. Written by python benchmarks/filter_learn.py --write; do not edit by hand. "
    "fitted_on: the API families the weights were fitted on; benchmarks/filter_eval.py judges every other labelled "
    "family with these weights as never seen."
)


def learned_json(weights: Mapping[str, float], threshold: float, families: Sequence[str]) -> str:
    """The text of ``learned.json`` for these weights (names and families sorted, two-space indent),
    so a refit on the same families gives the shipped file byte for byte (a test checks)."""
    data = {
        "about": ABOUT,
        "threshold": threshold,
        "weights": dict(sorted(weights.items())),
        "fitted_on": sorted(families),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write(weights: Mapping[str, float], threshold: float, families: Sequence[str]) -> None:
    LEARNED.write_text(learned_json(weights, threshold, families), encoding="utf-8")
    print(f"wrote {LEARNED.relative_to(REPO)}")


if __name__ == "__main__":
    raise SystemExit(main())
