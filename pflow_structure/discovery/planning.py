"""The planning context (phase 2): the full interface of the chosen few, for an LLM.

:func:`build_planning_context`: nested output structures indented under their key, within
50 KB per group (nodes, workflows) and 200 KB in all; or, when a chosen name does not exist, an
error dict with close matches so the caller can go back to discovery (seed 003, section 8,
option C). ``registry_metadata`` has the shape :mod:`.context` describes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from pflow_structure.discovery.context import KB, build_discovery_context, node_interface, size_label, size_of
from pflow_structure.discovery.interface import first_line

GROUP_LIMIT = 50 * KB
TOTAL_LIMIT = 200 * KB
_MAX_SHOWN_DEPTH = 8  # deeper than the parser ever nests; guards against a hostile registry.json
_SECTIONS = (("inputs", "Inputs"), ("outputs", "Outputs"), ("params", "Parameters"))
SHOWN_NAME_LENGTH = 80  # longer unknown names are cut in messages


class MissingComponents(TypedDict):
    """What :func:`build_planning_context` returns when a chosen node or workflow does not exist."""

    error: str
    missing_nodes: list[str]
    missing_workflows: list[str]
    suggestions: dict[str, list[str]]


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
            f"[… {noun} truncated at {size_label(limit)}: {hidden} of {len(blocks)} not shown in full. "
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
