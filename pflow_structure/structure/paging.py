"""The API's own paging, read from an output: the line that says there is more than this page.

An agent that answers "which are open" from page 1 of 5 answers wrong without knowing it, and the
structure shows ``has_more`` as one field among many (or a filter hides it). So the answer says it at the
top: ``Page: has_more=true, more at result.next_cursor; 100 of 2,345``. Read from the value (not the filtered
structure), in the dicts above the data (lists are not entered: an item's ``next`` is no page), when:

- a flag says more (``has_more``, ``hasNextPage``, ``IsTruncated`` true; ``isLast`` false);
- a cursor or token is set (``next_cursor``, ``nextPageToken``, ``NextToken``, ``endCursor``, k8s ``continue``)
  and no flag beside it says this is the last page;
- a next link is set (``next`` holding a URL or ``{"href": ...}``, ``@odata.nextLink``, ``next_page_url``);
- a total is larger than the list beside it (``total_count`` 57 beside 30 ``items``: ``30 of 57``);
- the largest list has exactly as many items as the call's ``limit``/``per_page``/... asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths import format_path, parse_path

_FLAGS_MORE = {"hasmore", "hasnextpage", "istruncated", "moreresults", "hasmoreitems"}
_FLAGS_LAST = {"islast", "lastpage"}
_CURSORS = {
    "nextcursor",
    "cursor",
    "endcursor",
    "nextpagetoken",
    "pagetoken",
    "nexttoken",
    "nextmarker",
    "continue",
    "continuationtoken",
    "scrollid",
}
_LINKS = {"next", "nextlink", "odatanextlink", "nextpageurl", "nexturl", "nextpage", "nexthref"}
_ITEM_TOTALS = {"totalcount", "totalresults", "totalitems", "totalhits"}  # names that count items
_TOTALS = {"total", "totalsize", "count", "found"}
_PAGE_KEYS = {"offset", "startat", "limit", "maxresults", "page", "perpage", "pagesize", "skip", "top", "start"}
_LIMITS = ("limit", "per_page", "perPage", "page_size", "pageSize", "max_results", "maxResults", "first", "size")
VALUE_CHARS = 40  # a longer cursor is not shown (a part of it pages nowhere): the path that reads it whole is
MAX_DICTS = 200  # the dicts visited at most: the paging sits near the top
MAX_DEPTH = 6


def _norm(key: str) -> str:
    return "".join(c for c in key.lower() if c.isalnum())


class Paging(NamedTuple):
    """What an output says of its pages: the line to show, and the cursors that ask for the next one
    (path, value), for a caller that knows which argument takes a cursor."""

    line: str
    cursors: list[tuple[str, str]]


def paging_line(value: Any, params: Mapping[str, Any] | None = None) -> str:
    """``has_more=true, next_cursor=abc; 30 of 57`` for an output with paging markers, ``""`` without.

    >>> paging_line({"result": {"items": [1, 2], "has_more": True, "next_cursor": "c2"}})
    'has_more=true, next_cursor=c2'
    """
    return find_paging(value, params).line


def find_paging(value: Any, params: Mapping[str, Any] | None = None) -> Paging:
    """:func:`paging_line`, with the cursors found (see :class:`Paging`)."""
    cursors: list[tuple[str, str]] = []
    markers: list[str] = []
    counts: list[str] = []
    visited = 0
    stack: list[tuple[Any, str, int, list[int]]] = [(value, "", 0, [])]
    while stack and visited < MAX_DICTS:
        node, path, depth, beside = stack.pop(0)
        visited += 1
        found, count = _markers(node, path, cursors, beside)
        markers.extend(found)
        counts.extend(count)
        if depth < MAX_DEPTH:
            own = [len(item) for item in node.values() if isinstance(item, list)]
            stack.extend(
                (child, _join(path, key), depth + 1, own) for key, child in node.items() if isinstance(child, dict)
            )
    limit_count = _limit_count(value, params or {})
    if not counts and limit_count:
        counts.append(limit_count)
    line = "; ".join(part for part in (", ".join(markers), counts[0] if counts else "") if part)
    return Paging(line, cursors)


def _markers(
    node: dict[str, Any], path: str, cursors: list[tuple[str, str]], beside: Sequence[int] = ()
) -> tuple[list[str], list[str]]:
    """One dict's markers that say more (``key=value``), and its ``N of TOTAL``; its cursors added to
    ``cursors``. A dict without lists counts those of the dict that holds it (``beside``: YouTube's
    ``pageInfo.totalResults`` 13 beside 10 ``items``)."""
    norms = {key: _norm(key) for key in node if isinstance(key, str)}
    last = any(
        (n in _FLAGS_MORE and node[k] is False) or (n in _FLAGS_LAST and node[k] is True) for k, n in norms.items()
    )
    found: list[str] = []
    for key, norm in norms.items():
        item = node[key]
        if (norm in _FLAGS_MORE and item is True) or (norm in _FLAGS_LAST and item is False):
            found.append(f"{key}={'true' if item else 'false'}")
        elif not last and norm in _CURSORS and _cursor(item):
            found.append(_shown(key, str(item), path))
            cursors.append((_join(path, key), str(item)))
        elif not last and norm in _LINKS and _link(item):
            found.append(_shown(key, _link(item), path))
    lists = [len(item) for item in node.values() if isinstance(item, list)] or list(beside)
    # A plain "total" may be money (Stripe) or bytes (Zoom): it counts items only beside a paging key.
    paged = bool(found) or any(n in _PAGE_KEYS for n in norms.values())
    closed = last or any(n in _LINKS and node[k] is None for k, n in norms.items())  # "next": null
    counts = []
    for key, norm in norms.items():
        total = node[key]
        if isinstance(total, dict):  # Elasticsearch: "total": {"value": 2345, "relation": "eq"}
            total = total.get("value")
        counting = norm in _ITEM_TOTALS or (norm in _TOTALS and paged)
        number = total if isinstance(total, int) and not isinstance(total, bool) else 0
        if counting and lists and not closed and number > max(lists):
            counts.append(f"{max(lists):,} of {number:,}")
            break
    return found, counts


def _cursor(item: Any) -> bool:
    return isinstance(item, (str, int)) and not isinstance(item, bool) and item != ""


def _link(item: Any) -> str:
    if isinstance(item, dict):
        item = item.get("href")
    if isinstance(item, str) and item.startswith(("http://", "https://", "/")):
        return item
    return ""


def _shown(key: str, text: str, path: str) -> str:
    if len(text) <= VALUE_CHARS:
        return f"{key}={text}"
    return f"more at {_join(path, key)}"


def _join(path: str, key: str) -> str:
    return format_path([*(parse_path(path) if path else ()), key])


def _limit_count(value: Any, params: Mapping[str, Any]) -> str:
    """``100 of ? (limit=100)`` when the largest list is exactly as long as the call's page size."""
    for name in _LIMITS:
        limit = params.get(name)
        if isinstance(limit, str) and limit.isdigit():
            limit = int(limit)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and _largest_list(value) == limit:
            return f"{limit:,} of more? ({name}={limit})"
    return ""


def _largest_list(value: Any, depth: int = 0) -> int:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict) and depth < 4:
        return max((_largest_list(child, depth + 1) for child in value.values()), default=0)
    return 0


# An input schema property that takes the next page's cursor (normalised: letters and digits, lower case).
_CURSOR_ARGUMENTS = {
    "cursor",
    "nextcursor",
    "startcursor",
    "pagetoken",
    "nextpagetoken",
    "nexttoken",
    "continuationtoken",
    "continue",
    "marker",
    "after",
}


def cursor_argument(schema: Any) -> str:
    """The property of a tool's input schema that takes a cursor (``cursor``, ``page_token``,
    ``start_cursor``, ...), or ``""``."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return ""
    return next((name for name in properties if isinstance(name, str) and _norm(name) in _CURSOR_ARGUMENTS), "")
