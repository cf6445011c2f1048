"""An answer budget that also counts bytes and lines, for clients that cut by those (Codex).

The budget code (:mod:`pflow_structure.render.budget`, ``service/answers.py``) fits answers to a
number of o200k tokens with a counter it is given. A client that cuts a tool result at a number
of bytes or lines instead (Codex CLI keeps about 10 KiB or 256 lines) gets a counter whose count
is the largest of the tokens and the bytes and lines scaled to the same budget: a text counted at
most ``budget`` has at most ``budget`` tokens, ``max_bytes`` bytes and ``max_lines`` lines, and
every piece of paging and cutting works unchanged.

The counts add up safely: the pieces of an answer, counted apart, never count less than the whole
(each piece counts its own line, so a list of items pages at ``max_lines`` items at most).
"""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[str], int]


def limited_counter(count: TokenCounter, budget: int, max_bytes: int | None, max_lines: int | None) -> TokenCounter:
    """``count`` (tokens), or the bytes and lines of a text scaled so that ``max_bytes`` and
    ``max_lines`` each count ``budget``, whichever is largest.

    >>> from pflow_structure.render.limits import limited_counter
    >>> measure = limited_counter(lambda text: len(text) // 4, 8000, 10_000, 256)
    >>> measure("x" * 10_000), measure("a\\n" * 255 + "a"), measure("a\\n" * 256)
    (8000, 8000, 8032)
    """

    def measure(text: str) -> int:
        cost = count(text)
        if max_bytes:
            cost = max(cost, -(-len(text.encode("utf-8", "surrogatepass")) * budget // max_bytes))
        if max_lines:
            cost = max(cost, -(-(text.count("\n") + 1) * budget // max_lines))
        return cost

    return measure
