"""Discovery and planning contexts: markdown for an LLM that chooses nodes and workflows.

Phase 1, :func:`build_discovery_context`: a name and a one-line description per node and
workflow, within 10 KB (descriptions are shortened first, then entries dropped, each time with
a visible note). Phase 2, :func:`build_planning_context`: the full interface of the chosen
few, nested output structures indented under their key, within 50 KB per group (nodes,
workflows) and 200 KB in all; or, when a chosen name does not exist, an error dict with close
matches so the caller can go back to discovery (seed 003, section 8, option C).

``registry_metadata`` maps a node id to pflow's registry entry shape: ``docstring`` (parsed
with :func:`~pflow_structure.discovery.interface.parse_interface`), or else ``interface``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from pflow_structure.discovery.interface import first_line, parse_interface

KB = 1024
DISCOVERY_LIMIT = 10 * KB
GROUP_LIMIT = 50 * KB
TOTAL_LIMIT = 200 * KB
_MAX_SHOWN_DEPTH = 8  # deeper than the parser ever nests; guards against a hostile registry.json
_SECTIONS = (("inputs", "Inputs"), ("outputs", "Outputs"), ("params", "Parameters"))
SHOWN_NAME_LENGTH = 80  # longer unknown names are cut in messages
KINDS = ("nodes", "workflows")
NARROW_HINT = (
    'Call list_nodes with query="words" (found in names and descriptions) or kind="nodes" or kind="workflows" '
    "to see the rest."
)


class MissingComponents(TypedDict):
    """What :func:`build_planning_context` returns when a chosen node or workflow does not exist."""

    error: str
    missing_nodes: list[str]
    missing_workflows: list[str]
    suggestions: dict[str, list[str]]


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
    note = f"_Descriptions {done} to fit the {_size_label(limit)} discovery limit; the planning context shows them._"
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
            f"[… {' and '.join(hidden)} not shown: the discovery context is limited to {_size_label(limit)}. {hint}]"
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


def build_planning_context(
    selected_node_ids: Sequence[str],
    selected_workflow_names: Sequence[str],
    registry_metadata: Mapping[str, Mapping[str, Any]],
    saved_workflows: Sequence[Mapping[str, Any]] | None = None,
) -> str | MissingComponents:
    """The full interface of each chosen node and workflow, or :class:`MissingComponents` if one is unknown."""
    workflows = {str(workflow.get("name")): workflow for workflow in saved_workflows or ()}
    missing = find_missing(selected_node_ids, selected_workflow_names, registry_metadata, workflows)
    if missing is not None:
        return missing
    node_blocks = [_node_block(name, registry_metadata[name]) for name in _unique(selected_node_ids)]
    flow_blocks = [_workflow_block(workflows[name]) for name in _unique(selected_workflow_names)]
    groups = []
    if node_blocks:
        groups.append("## Selected Nodes\n\n" + _fit_blocks(node_blocks, GROUP_LIMIT, "nodes"))
    if flow_blocks:
        groups.append("## Selected Workflows\n\n" + _fit_blocks(flow_blocks, GROUP_LIMIT, "workflows"))
    text = "\n\n".join(groups) if groups else "No nodes or workflows were selected."
    return _fit_blocks([text], TOTAL_LIMIT, "planning context")


def build_context(registry_metadata: Mapping[str, Mapping[str, Any]]) -> str:
    """The single-phase context of older callers: discovery and planning of every node, no workflows."""
    all_node_ids = sorted(registry_metadata)
    discovery = build_discovery_context(all_node_ids, [], registry_metadata)
    planning = build_planning_context(all_node_ids, [], registry_metadata)
    detail = planning if isinstance(planning, str) else planning["error"]
    return _fit_blocks([f"{discovery}\n\n{detail}"], TOTAL_LIMIT, "context")


def _unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))


def find_missing(
    node_ids: Sequence[str],
    workflow_names: Sequence[str],
    registry_metadata: Mapping[str, Any],
    workflows: Mapping[str, Any],
) -> MissingComponents | None:
    """The unknown names with close matches (difflib), or None when everything exists."""
    missing_nodes = [name for name in _unique(node_ids) if name not in registry_metadata]
    missing_flows = [name for name in _unique(workflow_names) if name not in workflows]
    if not missing_nodes and not missing_flows:
        return None
    suggestions = {name: _close(name, registry_metadata) for name in missing_nodes}
    suggestions.update({name: _close(name, workflows) for name in missing_flows})
    lines = ["Missing components detected:"]
    if missing_nodes:
        lines.append(f"- Unknown nodes: {_with_hints(missing_nodes, suggestions)}")
        lines.append("  (Check spelling, use hyphens not underscores)")
    if missing_flows:
        lines.append(f"- Unknown workflows: {_with_hints(missing_flows, suggestions)}")
    lines.append("Choose again from the names in the discovery context.")
    return MissingComponents(
        error="\n".join(lines) + "\n",
        missing_nodes=missing_nodes,
        missing_workflows=missing_flows,
        suggestions=suggestions,
    )


def _close(name: str, known: Mapping[str, Any]) -> list[str]:
    """Up to three known names close to ``name``, ignoring case and ``_`` for ``-`` (the exact one first)."""
    folded: dict[str, list[str]] = {}
    for candidate in known:
        folded.setdefault(str(candidate).casefold(), []).append(str(candidate))
    wanted = name.replace("_", "-").casefold()
    exact = folded.get(wanted, []) + folded.get(name.casefold(), [])
    close = difflib.get_close_matches(wanted, list(folded), n=3, cutoff=0.6) if len(wanted) <= 1000 else []
    found = [*exact, *(original for match in close for original in folded[match])]
    return list(dict.fromkeys(found))[:3]


def shown_name(name: str) -> str:
    """``name`` for a message: cut to about 80 characters, so a huge unknown name is not echoed in full."""
    if len(name) <= SHOWN_NAME_LENGTH:
        return name
    return f"{name[: SHOWN_NAME_LENGTH - 1]}… ({len(name):,} characters)"


def _with_hints(names: list[str], suggestions: Mapping[str, list[str]]) -> str:
    shown = [
        f"{shown_name(name)} (did you mean {', '.join(suggestions[name])}?)" if suggestions[name] else shown_name(name)
        for name in names
    ]
    return ", ".join(shown)


def _node_block(name: str, entry: Mapping[str, Any]) -> str:
    interface = node_interface(entry)
    lines = [f"### {name}"]
    if interface["description"]:
        lines.append(interface["description"])
    lines.append("")
    for key, title in _SECTIONS:
        lines.extend(_items_lines(title, interface.get(key) or []))
    other = interface.get("other") or []
    for section in dict.fromkeys(str(item.get("section", "Other")) for item in other if isinstance(item, Mapping)):
        lines.extend(_items_lines(section, [item for item in other if item.get("section", "Other") == section]))
    actions = [action if isinstance(action, str) else _raw_text(action) for action in interface.get("actions") or []]
    lines.append(f"**Actions**: {', '.join(actions) if actions else 'none'}")
    return "\n".join(lines)


def _items_lines(title: str, items: Sequence[Any]) -> list[str]:
    if not items:
        return [f"**{title}**: none"]
    lines = [f"**{title}**:"]
    for item in items:
        if not isinstance(item, Mapping) or "_raw" in item or "key" not in item:
            lines.append(f"- (not parsed) `{_raw_text(item)}`")
            continue
        lines.append(_signature(f"- `{item['key']}: {item.get('type', 'any')}`", item.get("description")))
        children = _children(item)
        if children:
            lines.append(f"  {_structure_title(str(item['key']), item)}")
            lines.extend(_field_lines(children, indent=4, depth=1))
    return lines


def _structure_title(key: str, item: Mapping[str, Any]) -> str:
    listed = "items" in item or str(item.get("type", "")).startswith("list")
    return f"Structure of each item in {key}:" if listed else f"Structure of {key}:"


def _size_label(limit: int) -> str:
    return f"{limit // KB} KB" if limit % KB == 0 else f"{limit:,} bytes"


def _field_lines(fields: Mapping[str, Any], indent: int, depth: int) -> list[str]:
    pad = " " * indent
    if depth > _MAX_SHOWN_DEPTH:
        return [f"{pad}- …"]
    lines = []
    for name, spec in fields.items():
        if not isinstance(spec, Mapping) or "_raw" in spec:
            lines.append(f"{pad}- {name}: (not parsed) `{_raw_text(spec)}`")
            continue
        lines.append(_signature(f"{pad}- {name}: {spec.get('type', 'any')}", spec.get("description")))
        children = _children(spec)
        if children:
            lines.extend(_field_lines(children, indent + 2, depth + 1))
    return lines


def _children(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    children = spec.get("structure") or spec.get("items")
    return children if isinstance(children, Mapping) else {}


def _signature(head: str, description: object) -> str:
    return f"{head} - {description}" if description else head


def _raw_text(item: object) -> str:
    raw = item.get("_raw", item) if isinstance(item, Mapping) else item
    return " ".join(str(raw).split())


def _workflow_block(workflow: Mapping[str, Any]) -> str:
    ir: Mapping[str, Any] = workflow["ir"] if isinstance(workflow.get("ir"), Mapping) else {}
    lines = [f"### {workflow.get('name')} (workflow)", first_line(str(workflow.get("description") or "")), ""]
    lines.extend(_workflow_ports("Inputs", workflow.get("inputs") or [], ir.get("inputs")))
    lines.extend(_workflow_ports("Outputs", workflow.get("outputs") or [], ir.get("outputs")))
    node_types = [str(node.get("type")) for node in ir.get("nodes") or [] if isinstance(node, Mapping)]
    lines.append(f"**Nodes**: {', '.join(node_types) if node_types else 'none'}")
    lines.append(f"**Version**: {workflow.get('version') or '1.0.0'}")
    if workflow.get("tags"):
        lines.append(f"**Tags**: {', '.join(str(tag) for tag in workflow['tags'])}")
    return "\n".join(lines)


def _workflow_ports(title: str, names: Sequence[str], declared: object) -> list[str]:
    """Input or output names, with type and description when the IR declares them."""
    if not names:
        return [f"**{title}**: none"]
    details: Mapping[str, Any] = declared if isinstance(declared, Mapping) else {}
    lines = [f"**{title}**:"]
    for name in names:
        spec: Mapping[str, Any] = details[name] if isinstance(details.get(name), Mapping) else {}
        head = f"`{name}: {spec['type']}`" if isinstance(spec.get("type"), str) else f"`{name}`"
        lines.append(_signature(f"- {head}", spec.get("description")))
    return lines


def _fit_blocks(blocks: list[str], limit: int, noun: str) -> str:
    """Whole blocks while they fit, then a marker; a first block too large alone is cut at a line."""
    kept: list[str] = []
    for index, block in enumerate(blocks):
        candidate = "\n\n".join([*kept, block])
        if size_of(candidate) <= limit:
            kept.append(block)
            continue
        hidden = len(blocks) - index
        marker = (
            f"[… {noun} truncated at {_size_label(limit)}: {hidden} of {len(blocks)} not shown in full. "
            "Select fewer components to see them.]"
        )
        room = limit - size_of("\n\n".join([*kept, marker])) - 2
        partial = _cut_lines(block, room) if not kept else ""
        return "\n\n".join([*kept, *([partial] if partial else []), marker])
    return "\n\n".join(kept)


def _cut_lines(text: str, room: int) -> str:
    lines: list[str] = []
    used = 0
    for line in text.splitlines():
        used += size_of(line) + 1
        if used > room:
            break
        lines.append(line)
    return "\n".join(lines)
