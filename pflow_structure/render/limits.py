"""An answer budget that also counts bytes and lines, for clients that cut by those (Codex).

The budget code (:mod:`pflow_structure.render.budget`, ``service/answers.py``) fits answers to a
number of o200k tokens with a counter it is given. A client that cuts a tool result at a number
of bytes or lines instead (Codex CLI keeps about 10 KiB or 256 lines) gets a counter whose count
is the largest of the tokens and the bytes and lines scaled to the same budget: a text counted at
most ``budget`` has at most ``budget`` tokens, ``max_bytes`` bytes and ``max_lines`` lines, and
every piece of paging and cutting works unchanged.

The counts add up safely: the pieces of an answer, counted apart, never count less than the whole
(each piece counts its own line, so a list of items pages at ``max_lines`` items at most). The
counter knows its limits, so that a note names the units the budget is kept in (:func:`budget_words`).
"""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[str], int]


def limited_counter(count: TokenCounter, budget: int, max_bytes: int | None, max_lines: int | None) -> LimitedCounter:
    """``count`` (tokens), or the bytes and lines of a text scaled so that ``max_bytes`` and
    ``max_lines`` each count ``budget``, whichever is largest.

    >>> from pflow_structure.render.limits import budget_words, limited_counter
    >>> measure = limited_counter(lambda text: len(text) // 4, 8000, 10_000, 256)
    >>> measure("x" * 10_000), measure("a\\n" * 255 + "a"), measure("a\\n" * 256)
    (8000, 8000, 8032)
    >>> budget_words(8000, measure)
    '8,000 tokens, 10,000 bytes and 256 lines'
    """
    return LimitedCounter(count, budget, max_bytes, max_lines)


class LimitedCounter:
    """The counter :func:`limited_counter` gives: callable as a :data:`TokenCounter`, and it knows its
    limits, so that a note names the unit the client counts in (:func:`budget_words`)."""

    def __init__(self, count: TokenCounter, budget: int, max_bytes: int | None, max_lines: int | None) -> None:
        self.count, self.budget, self.max_bytes, self.max_lines = count, budget, max_bytes, max_lines

    def __call__(self, text: str) -> int:
        cost = self.count(text)
        if self.max_bytes:
            cost = max(cost, -(-len(text.encode("utf-8", "surrogatepass")) * self.budget // self.max_bytes))
        if self.max_lines:
            cost = max(cost, -(-(text.count("\n") + 1) * self.budget // self.max_lines))
        return cost


def budget_words(budget: int, count: object = None) -> str:
    """``budget`` in the units ``count`` keeps it in: ``8,000 tokens``, or in a session whose client also
    cuts by bytes and lines (Codex) ``8,000 tokens, 10,000 bytes and 256 lines``."""
    parts = [f"{budget:,} tokens"]
    if isinstance(count, LimitedCounter):
        parts += [f"{count.max_bytes:,} bytes"] if count.max_bytes else []
        parts += [f"{count.max_lines:,} lines"] if count.max_lines else []
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
