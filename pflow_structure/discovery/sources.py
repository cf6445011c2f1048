"""Where nodes come from: our registry's specs, and pflow's ``~/.pflow/registry.json`` when present.

Both give registry metadata in pflow's entry shape (``module``, ``class_name``, ``docstring``,
``interface``), with the interface parsed by our parser: pflow's stored interface turns
``(optional, default: {})`` into a parameter named ``default``, so its docstrings are parsed
again. Discovery is a core module, so it does not import :mod:`pflow_structure.registry`;
the caller passes ``available_nodes().values()`` (anything with ``name``, ``source``,
``target`` and ``load()``), and the path of pflow's registry file, which is only read.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pflow_structure.discovery.files import clean_json_text, clean_text, read_regular_file
from pflow_structure.discovery.interface import MAX_DEPTH, parse_interface

MAX_REGISTRY_BYTES = 32 * 1024 * 1024
PFLOW_SOURCE = "pflow"


class NodeSpecLike(Protocol):
    """What :class:`pflow_structure.registry.NodeSpec` offers."""

    @property
    def name(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def source(self) -> str: ...

    def load(self) -> type[Any]: ...


@dataclass
class NodeSources:
    """Registry metadata by node id, warnings about what could not be read, and hidden pflow nodes."""

    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    shadowed: list[str] = field(default_factory=list)  # pflow nodes hidden by one of ours with the same id


def metadata_from_specs(specs: Iterable[NodeSpecLike]) -> NodeSources:
    """Metadata for our nodes (built-ins and entry points); a node that cannot be imported is listed with a warning."""
    result = NodeSources()
    for spec in specs:
        module, _, class_name = spec.target.partition(":")
        entry: dict[str, Any] = {"source": spec.source, "module": module, "class_name": class_name}
        try:
            docstring = clean_text(spec.load().__doc__ or "")
        except Exception as exc:  # a broken plugin is listed, not fatal
            reason = f"{type(exc).__name__}: {exc}"
            result.warnings.append(
                f"Node {spec.name!r} ({spec.target}) cannot be loaded ({reason}); fix or uninstall it."
            )
            docstring = f"(cannot be loaded: {reason})"
        entry["docstring"] = docstring
        entry["interface"] = parse_interface(docstring)
        result.metadata[clean_text(spec.name)] = entry
    return result


def read_pflow_registry(path: Path) -> NodeSources:
    """pflow's registry file, read-only; a missing file gives no nodes and no warning.

    Only a regular file is read (a FIFO or a device there is refused without waiting), and text
    that is not valid Unicode (lone surrogate escapes such as ``\\ud800``) becomes U+FFFD.
    """
    result = NodeSources()
    try:
        data = json.loads(read_regular_file(path, MAX_REGISTRY_BYTES, follow_symlinks=True).decode("utf-8"))
    except FileNotFoundError:
        return result
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            result.warnings.append(f"pflow registry {path} is too large ({exc.strerror}); its nodes are left out.")
        else:
            reason = exc.strerror or str(exc)
            result.warnings.append(f"pflow registry {path} cannot be read ({reason}); its nodes are left out.")
        return result
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError included
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        result.warnings.append(
            f"pflow registry {path} is not valid JSON ({reason}); run `pflow registry list` to rebuild it."
        )
        return result
    data, replaced = clean_json_text(data)
    if replaced:
        result.warnings.append(
            f"pflow registry {path} holds {replaced} text value(s) that are not valid Unicode (lone surrogate "
            "escapes such as \\ud800); they are shown as U+FFFD. Run `pflow registry list` to rebuild it."
        )
    for node_id, entry in _registry_nodes(data).items():
        name = str(node_id)
        if not isinstance(entry, Mapping):
            result.warnings.append(f"pflow registry {path}: entry {name[:60]!r} is not an object; skipped.")
            continue
        cleaned = _pflow_entry(entry)
        if cleaned is None:
            result.warnings.append(
                f"pflow registry {path}: entry {name[:60]!r} has an interface of the wrong shape; skipped. "
                "Run `pflow registry list` to rebuild the file."
            )
            continue
        result.metadata[name] = cleaned
    return result


def _registry_nodes(data: object) -> Mapping[str, Any]:
    """pflow 0.8 and later: ``{"version", "nodes": {...}}``; older files: the nodes themselves."""
    if not isinstance(data, Mapping):
        return {}
    nodes = data.get("nodes")
    if isinstance(nodes, Mapping):
        return nodes
    return {key: value for key, value in data.items() if not str(key).startswith("__")}


def _pflow_entry(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """Our view of one entry of pflow's file; None when its stored interface has the wrong shape."""
    docstring = entry.get("docstring")
    out: dict[str, Any] = {"source": PFLOW_SOURCE}
    out.update(
        {key: entry[key] for key in ("module", "class_name", "file_path", "type") if isinstance(entry.get(key), str)}
    )
    if isinstance(docstring, str) and docstring.strip():
        out["docstring"] = docstring
        out["interface"] = parse_interface(out["docstring"])
    elif isinstance(entry.get("interface"), Mapping):
        interface = _stored_interface(entry["interface"])  # MCP tools and the like: no docstring to parse
        if interface is None:
            return None
        out["interface"] = interface
    return out


_INTERFACE_LISTS = ("inputs", "outputs", "params")


def _stored_interface(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """A stored interface with the fields the contexts read, each of the type they expect."""
    description = raw.get("description", "")
    actions = raw.get("actions", [])
    if not isinstance(description, str) or not _strings(actions):
        return None
    out: dict[str, Any] = {"description": description, "actions": list(actions)}
    for key in _INTERFACE_LISTS:
        items = raw.get(key, [])
        if not isinstance(items, list) or not all(_item_ok(item, 0) for item in items):
            return None
        out[key] = items
    return out


def _item_ok(item: Any, depth: int) -> bool:
    if not isinstance(item, Mapping) or depth > MAX_DEPTH:
        return False
    if not all(isinstance(item.get(k, ""), str) for k in ("key", "type", "description")):
        return False
    for key in ("structure", "items"):  # both map a field name to an item like this one
        nested = item.get(key, {})
        if not isinstance(nested, Mapping) or not all(_item_ok(v, depth + 1) for v in nested.values()):
            return False
    return True


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def collect_node_metadata(specs: Iterable[NodeSpecLike] = (), pflow_registry_path: Path | None = None) -> NodeSources:
    """Our nodes first, then pflow's; a pflow node with the id of one of ours is hidden (listed in ``shadowed``)."""
    result = metadata_from_specs(specs)
    if pflow_registry_path is None:
        return result
    pflow = read_pflow_registry(pflow_registry_path)
    result.warnings.extend(pflow.warnings)
    for node_id, entry in pflow.metadata.items():
        if node_id in result.metadata:
            result.shadowed.append(node_id)
        else:
            result.metadata[node_id] = entry
    result.metadata = dict(sorted(result.metadata.items()))
    return result
