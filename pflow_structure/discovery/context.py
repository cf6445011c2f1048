"""The discovery context (phase 1): markdown for an LLM that chooses nodes and workflows.

:func:`build_discovery_context`: a name and a one-line description per node and workflow,
within 10 KB (descriptions are shortened first, then entries dropped, each time with a visible
note). Phase 2, the full interfaces of the chosen few, is :mod:`.planning`.

``registry_metadata`` maps a node id to pflow's registry entry shape: ``docstring`` (parsed
with :func:`~pflow_structure.discovery.interface.parse_interface`), or else ``interface``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pflow_structure.discovery.interface import first_line, parse_interface

KB = 1024
DISCOVERY_LIMIT = 10 * KB


KINDS = ("nodes", "workflows")
NARROW_HINT = (
    'Call list_nodes with query="words" (found in names and descriptions) or kind="nodes" or kind="workflows" '
    "to see the rest."
)


def size_of(text: str) -> int:
    """Size in bytes (UTF-8): what the limits count."""
    return len(text.encode("utf-8"))


def node_interface(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The interface of a registry entry: re-parsed from its docstring when it has one."""
    docstring = entry.get("docstring")
    if isinstance(docstring, str) and docstring.strip():
        return parse_interface(docstring)
    interface = entry.get("interface")
    result = parse_interface(None)
    if isinstance(interface, Mapping):
        result.update({key: value for key, value in interface.items() if key in result or key == "other"})
    if not result["description"] and isinstance(entry.get("description"), str):
        result["description"] = first_line(entry["description"])
    return result


def node_description(entry: Mapping[str, Any]) -> str:
    """The one-line description of a registry entry, without parsing its interface."""
    interface = entry.get("interface")
    if isinstance(interface, Mapping) and isinstance(interface.get("description"), str):
        return first_line(interface["description"])
    for key in ("docstring", "description"):
        if isinstance(entry.get(key), str):
            return first_line(entry[key])
    return ""


def build_discovery_context(
    node_ids: Sequence[str] | None = None,
    workflow_names: Sequence[str] | None = None,
    registry_metadata: Mapping[str, Mapping[str, Any]] | None = None,
    saved_workflows: Sequence[Mapping[str, Any]] | None = None,
    *,
    limit: int = DISCOVERY_LIMIT,
    narrow_hint: str = NARROW_HINT,
) -> str:
    """Name and one-line description of each node and workflow (``None`` = all; unknown names are skipped).

    Over ``limit``, descriptions are shortened, then names dropped, nodes and workflows sharing the
    room fairly; a marker then says how many are hidden and ends with ``narrow_hint``: how to
    ask for fewer (the caller knows its own argument names).

    >>> print(build_discovery_context(registry_metadata={"echo": {"docstring": "Echo a message."}}))
    ## Available Nodes
    <BLANKLINE>
    - echo: Echo a message.
    """
    registry = registry_metadata or {}
    workflows = {str(workflow.get("name")): workflow for workflow in saved_workflows or ()}
    chosen_nodes = sorted(registry) if node_ids is None else [name for name in node_ids if name in registry]
    chosen_flows = sorted(workflows) if workflow_names is None else [n for n in workflow_names if n in workflows]
    nodes = [(name, node_description(registry[name])) for name in chosen_nodes]
    flows = [(name, first_line(str(workflows[name].get("description") or ""))) for name in chosen_flows]
    return _fit_discovery(nodes, flows, limit, narrow_hint)


def matches_query(query: str | None, *texts: str) -> bool:
    """Whether every word of ``query`` occurs in ``texts`` (case-insensitive substrings); no words match all.

    >>> matches_query("GitHub issue", "github-list-issues", "List the issues of a repository")
    True
    """
    haystack = " ".join(texts).casefold()
    return all(word in haystack for word in (query or "").casefold().split())


def _render_discovery(nodes: list[tuple[str, str]], flows: list[tuple[str, str]], note: str = "") -> str:
    sections = [note] if note else []
    for title, entries in (("Available Nodes", nodes), ("Available Workflows", flows)):
        if entries:
            lines = [f"- {name}: {text}" if text else f"- {name}" for name, text in entries]
            sections.append(f"## {title}\n\n" + "\n".join(lines))
    return "\n\n".join(sections) if sections else "No nodes or workflows are available."


def _fit_discovery(nodes: list[tuple[str, str]], flows: list[tuple[str, str]], limit: int, hint: str) -> str:
    """Full descriptions if they fit; else the longest description cut that fits; else fewer entries."""
    text = _render_discovery(nodes, flows)
    if size_of(text) <= limit:
        return text
    longest = max(len(text) for _, text in nodes + flows)
    low, high = 0, longest
    while low < high:  # the largest cut length that fits
        middle = (low + high + 1) // 2
        if size_of(_shortened(nodes, flows, middle, limit)) <= limit:
            low = middle
        else:
            high = middle - 1
    shortened = _shortened(nodes, flows, low, limit)
    if size_of(shortened) <= limit:
        return shortened
    return _dropped(nodes, flows, limit, hint)


def _cut(text: str, length: int) -> str:
    return text if len(text) <= length else (text[: max(0, length - 1)].rstrip() + "…" if length > 1 else "")


def _shortened(nodes: list[tuple[str, str]], flows: list[tuple[str, str]], length: int, limit: int) -> str:
    done = f"shortened to {length} characters" if length > 1 else "left out"
    note = f"_Descriptions {done} to fit the {size_label(limit)} discovery limit; the planning context shows them._"
    cut_nodes = [(name, _cut(text, length)) for name, text in nodes]
    cut_flows = [(name, _cut(text, length)) for name, text in flows]
    return _render_discovery(cut_nodes, cut_flows, note)


def _dropped(nodes: list[tuple[str, str]], flows: list[tuple[str, str]], limit: int, hint: str) -> str:
    """Names only, as many as fit, and a marker saying how many are not shown.

    Nodes and workflows share the room: each kind shows as many names as the other (the larger
    equal count that fits), and room one kind leaves over goes to the other. A long pflow
    registry can therefore never push every saved workflow out.
    """

    def render(shown_nodes: int, shown_flows: int) -> str:
        text = _render_discovery(
            [(name, "") for name, _ in nodes[:shown_nodes]],
            [(name, "") for name, _ in flows[:shown_flows]],
            "_Descriptions left out to fit the limit._",
        )
        hidden = [
            f"{total - shown:,} of {total:,} {noun}"
            for noun, shown, total in (("nodes", shown_nodes, len(nodes)), ("workflows", shown_flows, len(flows)))
            if total > shown
        ]
        marker = (
            f"[… {' and '.join(hidden)} not shown: the discovery context is limited to {size_label(limit)}. {hint}]"
        )
        return f"{text}\n\n{marker}"

    def fits(shown_nodes: int, shown_flows: int) -> bool:
        return size_of(render(shown_nodes, shown_flows)) <= limit

    def largest(fits_with: Callable[[int], bool], low: int, high: int) -> int:
        """The largest count in [low, high] for which ``fits_with`` holds (it holds for ``low``)."""
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits_with(middle) else (low, middle - 1)
        return low

    equal = largest(lambda count: fits(min(count, len(nodes)), min(count, len(flows))), 0, max(len(nodes), len(flows)))
    shown_nodes, shown_flows = min(equal, len(nodes)), min(equal, len(flows))
    shown_nodes = largest(lambda count: fits(count, shown_flows), shown_nodes, len(nodes))
    shown_flows = largest(lambda count: fits(shown_nodes, count), shown_flows, len(flows))
    return render(shown_nodes, shown_flows)


def size_label(limit: int) -> str:
    """A size limit as the contexts name it: ``10 KB``, or ``1,500 bytes`` when not whole kilobytes."""
    return f"{limit // KB} KB" if limit % KB == 0 else f"{limit:,} bytes"
