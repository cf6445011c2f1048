"""Step 2, choose: the fields a view shows, from the ranking (or from a choice made elsewhere).

The best fields are kept up to a target and a budget of estimated tokens (:func:`spread`), with
the lists and dicts inside a record capped so that the record's own fields are not crowded out;
every list with a kept field then shows enough of its item fields to show its shape
(:func:`complete_lists`, which the LLM and want steps use too). A ``keep`` in the request (an
LLM's answer given to ``choose_fields``) replaces the ranking's choice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pflow_structure.filtering.choice import Choice, Request
from pflow_structure.filtering.signals import Tuning
from pflow_structure.filtering.tree import FieldTree, is_inside, record_body

MIN_ITEM_FIELDS = 2  # a kept list shows at least this many fields of its items (when it has them)
MAX_ITEM_FIELDS = 5  # and the shape top-up adds no more than this many per list


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """The ranking's best fields (or ``request.keep``), each kept list's shape completed."""
    if request.keep is not None:
        kept = picked(tree, request.keep)
    else:
        kept = spread(tree, choice.ranked, request.target, choice.scores, request.tuning, reweigh=not choice.learned)
    return choice._replace(kept=complete_lists(tree, kept, choice.ranked), method="heuristic")


def picked(tree: FieldTree, paths: Iterable[str]) -> list[int]:
    """The fields of ``tree`` among ``paths``, in the tree's order (other paths are left out)."""
    wanted = set(paths)
    return [index for index in tree.fields if tree.nodes[index].path in wanted]


def spread(
    tree: FieldTree,
    ranked: Sequence[int],
    target: int,
    scores: Mapping[int, float],
    tuning: Tuning,
    *,
    reweigh: bool = True,
) -> list[int]:
    """The best fields, up to ``target`` of them and ``tuning.budget`` estimated tokens of lines,
    with the lists inside a record (a message's files) and the dicts inside a record (its
    bot_profile) capped, so that the fields of the records themselves are not crowded out by
    the many fields of what each record holds. A dict that holds most of a record's fields
    (Reddit's ``children[0].data``, JSON:API's ``attributes``) is the record's body, not a part."""
    nodes = tree.nodes
    # The record list: the deepest list holding at least half of the candidate fields
    # (messages in a Slack history, Instances in an EC2 answer, not Reservations around them).
    inside: dict[int, int] = {}
    for index in ranked:
        owner = nodes[index].list_owner
        while owner >= 0:
            inside[owner] = inside.get(owner, 0) + 1
            owner = nodes[owner].list_owner
    half = len(ranked) / 2
    records = max(
        (owner for owner, count in inside.items() if count >= half),
        key=lambda owner: len(nodes[owner].keys) + nodes[owner].path.count("["),
        default=-1,
    )
    body = record_body(ranked, nodes, records) if records >= 0 else -1
    if records >= 0 and reweigh:
        # The records' own fields first; what a record holds (its files, its bot_profile) after.
        envelope = nodes[records].parent  # the object around the records: page, page_size, next

        def weight(index: int) -> float:
            if nodes[index].parent in (records, body):
                return 1.5
            if nodes[index].parent == envelope:
                return tuning.envelope
            return 0.6 if is_inside(nodes, index, records) else 1.0

        order = {index: position for position, index in enumerate(ranked)}
        ranked = sorted(ranked, key=lambda index: (-scores[index] * weight(index), order[index]))
    per_list: dict[int, int] = {}
    per_object: dict[int, int] = {}
    kept: list[int] = []
    paid: set[int] = set()  # lines already counted: kept fields and the containers above them
    spent = 0.0
    for index in ranked:
        node = nodes[index]
        owner = node.list_owner
        inner_list = owner >= 0 and owner != records and is_inside(nodes, owner, records)
        if inner_list and per_list.get(owner, 0) >= tuning.nested_list:
            continue
        parent = node.parent
        sub_object = (
            owner >= 0  # inside a record: a top-level object (PyPI's info) is the record itself
            and parent >= 0
            and parent != owner
            and "list" not in str(tree.entry(parent).get("type", ""))
            and nodes[parent].parent >= 0
            and parent != body
        )
        if sub_object and per_object.get(parent, 0) >= tuning.sub_object:
            continue
        cost = 0.0
        step = index
        while step >= 0 and step not in paid:
            cost += tree.line_cost(step)
            step = nodes[step].parent
        if spent + cost > tuning.budget:
            continue
        spent += cost
        step = index
        while step >= 0 and step not in paid:
            paid.add(step)
            step = nodes[step].parent
        kept.append(index)
        per_list[owner] = per_list.get(owner, 0) + 1
        if sub_object:
            per_object[parent] = per_object.get(parent, 0) + 1
        if len(kept) >= target:
            break
    return kept


def complete_lists(tree: FieldTree, kept: Sequence[int], ranked: Sequence[int]) -> tuple[int, ...]:
    """``kept``, then what every list with a kept field needs to show at least MIN_ITEM_FIELDS of its
    item fields (the best of ``ranked``)."""
    nodes = tree.nodes
    shown = list(kept)
    members: dict[int, int] = {}
    for index in shown:
        owner = nodes[index].list_owner
        if owner >= 0:
            members[owner] = members.get(owner, 0) + 1
    short = {owner for owner, count in members.items() if count < MIN_ITEM_FIELDS}
    if not short:
        return tuple(shown)
    kept_set = set(shown)
    for index in ranked:
        owner = nodes[index].list_owner
        if owner in short and index not in kept_set:
            shown.append(index)
            kept_set.add(index)
            members[owner] += 1
            if members[owner] >= min(MAX_ITEM_FIELDS, MIN_ITEM_FIELDS):
                short.discard(owner)
            if not short:
                break
    return tuple(shown)
