"""The answer budget: values fitted into a number of tokens, with the exact arguments that read on.

No answer of ours is larger than its budget (o200k tokens, counted by the caller's ``count``).
Past it, each path's value gives way by its kind:

- a list pages: the items that fit, ``items a-b of N``, and the ``offset`` (and ``limit``) of the
  next page; a plain list path ``result`` reads on as ``result[*]``;
- a string is cut: the characters that fit, ``characters a-b of N``, and the ``char_offset`` that
  reads on (``char_offset`` counts characters of the one string a path names);
- a dict (or an item too large to show whole) answers with its structure, and the paths to read.

Several paths share the budget fairly: each gets an equal share, and what a small value leaves
goes to the larger ones. Nothing is lost: the pages, read in turn, are the value byte for byte.
Every cut is described in ``more`` (path -> ``{"shown", "next", ...}``), where ``next`` holds the
arguments of the call that reads on (``execution_id``, ``field_paths`` and the paging ones).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths.grammar import AtLeast, ConcretePath, format_path
from pflow_structure.render.output_text import compact

TokenCounter = Callable[[str], int]

MIN_SHARE = 40  # below this a path is not worth a part: it is named with the call that reads it alone
EXACT_COUNT_CHARS = 4_000_000  # past this a count is estimated: only "over the budget" matters
MORE_KEY = "_more"
MISSING_KEY = "_missing"
NOTE_KEY = "_note"
PATHS_KEY = "_paths"


class Paging(NamedTuple):
    """How the values were read: the arguments that produced them, so the next page's are exact."""

    execution_id: str
    offset: int = 0
    limit: int | None = None
    char_offset: int = 0
    names: str | None = None  # the next page answers in the same form


class Fitted(NamedTuple):
    """Values cut to fit (a path too large to show at all is left out) and how to read on."""

    values: dict[str, Any]
    more: dict[str, dict[str, Any]]


def measure(count: TokenCounter, text: str) -> int:
    return count(text) if len(text) <= EXACT_COUNT_CHARS else (len(text) + 3) // 4


def fit_values(
    values: Mapping[str, Any],
    budget: int,
    count: TokenCounter,
    paging: Paging,
    *,
    totals: Mapping[str, int] | None = None,
    where: Mapping[str, Sequence[ConcretePath]] | None = None,
) -> Fitted:
    """``values`` (path -> value, as ``read_fields`` answers) within ``budget`` tokens in all.

    ``totals`` holds the item count of each ``[*]``/JSONPath path (its value is already the page
    ``paging.offset``/``paging.limit`` chose); ``where`` the concrete path of each value (each item
    for those paths), to name an item that alone is larger than its share.
    """
    totals = totals or {}
    where = where or {}
    costs = {path: measure(count, compact({path: value})) for path, value in values.items()}
    shares = fair_shares(costs, budget)
    fitted = Fitted({}, {})
    for path, value in values.items():
        fits = costs[path] <= shares[path] or costs[path] <= MIN_SHARE  # whole is cheaper than how to read it
        if fits and not read_stopped(totals.get(path), paging):
            fitted.values[path] = value
            continue
        cut = _Cutter(path, paging, count, totals.get(path), list(where.get(path, ())))
        kept, more = cut.fit(value, shares[path], alone=len(values) == 1)
        if kept is not _ABSENT:
            fitted.values[path] = kept
        fitted.more[path] = more
    return fitted


def read_stopped(total: int | None, paging: Paging) -> bool:
    """Whether a path's read, without a limit, stopped past what a budget can show (its total is
    :class:`AtLeast`): paged even when what was read fits, so the answer says where it reads on."""
    return paging.limit is None and isinstance(total, AtLeast)


def shown_paths(answer: Mapping[str, Any], where: Mapping[str, Sequence[Any]], multi: Any) -> dict[str, Any]:
    """``_paths``: for each path in ``multi`` (wildcard, JSONPath) that ``answer`` shows as a list, the
    template path of each value shown, in the shape of the value (nested for grouped reads); the node of
    an item that lacks the rest of the path is that item's."""

    def text(place: Any) -> Any:
        return [text(inner) for inner in place] if isinstance(place, list) else format_path(place)

    return {
        path: [text(place) for place in where.get(path, ())[: len(value)]]
        for path, value in answer.items()
        if path in multi and isinstance(value, list)
    }


def fair_shares(costs: Mapping[str, int], budget: int) -> dict[str, int]:
    """Each path's share of ``budget``: equal shares, and what a smaller value leaves goes to the rest."""
    shares: dict[str, int] = {}
    remaining, left = budget, len(costs)
    for path in sorted(costs, key=lambda name: costs[name]):
        share = max(remaining // left, 0)
        shares[path] = min(costs[path], share)
        remaining -= shares[path]
        left -= 1
    return shares


_ABSENT = object()


class _Cutter:
    """Cuts one path's value to a share of tokens and says how to read the rest."""

    def __init__(
        self, path: str, paging: Paging, count: TokenCounter, total: int | None, where: list[ConcretePath]
    ) -> None:
        self.path, self.paging, self.count, self.total, self.where = path, paging, count, total, where

    def fit(self, value: Any, share: int, *, alone: bool) -> tuple[Any, dict[str, Any]]:
        if share < MIN_SHARE and not alone:  # alone, a path always gets a part: every read moves on
            shown = "not shown: the budget is shared by the other paths; read this path alone"
            return _ABSENT, {"shown": shown, "next": self.call([self.path], **self._same_place(value))}
        if self.total is not None and isinstance(value, list):
            return self.page(value, share, self.paging.offset, self.total, self.path)
        if isinstance(value, list):
            return self.page(value, share, 0, len(value), f"{self.path}[*]")
        if isinstance(value, str):
            return self.cut_string(value, share)
        return _ABSENT, self.structure(value, share, self.path)

    def _same_place(self, value: Any) -> dict[str, int | None]:
        """The paging arguments that read this path's value from where this call read it."""
        if self.total is not None:
            return {"offset": self.paging.offset or None, "limit": self.paging.limit}
        return {"char_offset": self.paging.char_offset or None} if isinstance(value, str) else {}

    def call(self, paths: list[str], **paging: int | None) -> dict[str, Any]:
        arguments: dict[str, Any] = {"execution_id": self.paging.execution_id, "field_paths": paths}
        arguments.update((name, number) for name, number in paging.items() if number is not None)
        if self.paging.names is not None:
            arguments["names"] = self.paging.names
        return arguments

    def page(self, items: list[Any], share: int, start: int, total: int, next_path: str) -> tuple[Any, dict[str, Any]]:
        used = self.count(compact({self.path: []})) + 4  # the key and the brackets
        shown: list[Any] = []
        for item in items:
            cost = measure(self.count, compact(item)) + 1
            if used + cost > share:
                break
            shown.append(item)
            used += cost
        end = start + len(shown)
        limit = self.paging.limit if self.total is not None else None
        rest = None if limit is None else limit - len(shown)
        if shown:
            next_page = self.call([next_path], offset=end, limit=rest)
            return shown, {"shown": f"items {start}-{end - 1} of {total}", "next": next_page}
        return _ABSENT, self._item_too_large(items, start, total, next_path, rest, share)

    def _item_too_large(
        self, items: list[Any], start: int, total: int, next_path: str, rest: int | None, share: int
    ) -> dict[str, Any]:
        """Item ``start`` alone is larger than the share: read it by its own path, then the list on."""
        item_path = self._item_path(start)
        more: dict[str, Any] = {"shown": f"item {start} of {total} alone is larger than this answer's share"}
        if item_path is not None:
            more["next"] = self.call([item_path])
        elif self.total is not None and self.where[:1] == [()] and isinstance(items[0], dict):
            more.update(next=self.structure(items[0], share, self.path)["next"])  # the root ($): its keys
        after = None if rest is None else rest - 1
        if start + 1 < total and after != 0:
            more["then"] = self.call([next_path], offset=start + 1, limit=after)
        return more

    def _item_path(self, index: int) -> str | None:
        if self.total is None:  # a plain list: its items are the path's own
            base = self.where[0] if self.where else None
            return None if base is None else format_path([*base, index])
        position = index - self.paging.offset
        if 0 <= position < len(self.where) and isinstance(self.where[position], tuple) and self.where[position]:
            return format_path(self.where[position])
        return None

    def cut_string(self, text: str, share: int) -> tuple[str, dict[str, Any]]:
        room = share - self.count(compact({self.path: ""})) - 2
        low, high = 1, len(text)  # at least one character: every page moves on
        while low < high:  # the longest prefix whose JSON fits the room
            middle = (low + high + 1) // 2
            if measure(self.count, compact(text[:middle])) <= room:
                low = middle
            else:
                high = middle - 1
        start = self.paging.char_offset
        length = start + len(text)
        end = start + low
        more = {
            "shown": f"characters {start}-{end - 1} of {length}",
            "next": self.call([self.path], char_offset=end),
        }
        return text[:low], more

    def structure(self, value: Any, share: int, path: str) -> dict[str, Any]:
        """A dict too large: the paths of its keys to read (first: they are what reads on), then its
        structure as far as it still fits."""
        from pflow_structure.structure import infer_structure

        base = self.where[0] if self.where else None
        children: list[str] = []
        used = 40  # the entry's own words
        if isinstance(value, dict) and base is not None:
            for key in value:
                child = format_path([*base, key])
                used += measure(self.count, compact(child)) + 1
                if used > share and children:
                    break
                children.append(child)
        structure: dict[str, Any] = {}
        for name, info in infer_structure({"_": value}, max_paths=200).structure.items():
            full = path + name[1:]
            used += measure(self.count, compact({full: info})) + 1
            if used > share:
                break
            structure[full] = info
        size = len(value) if isinstance(value, dict) else 0
        listed = "" if len(children) == size else f"; next reads the first {len(children)}: raise max_tokens for all"
        more: dict[str, Any] = {
            "shown": f"too large to show ({size} keys{listed}): its structure, then read the paths you need",
            "structure": structure,
        }
        if children:
            more["next"] = self.call(children)
        return more
