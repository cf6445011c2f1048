"""NodeNamespace: the shared store as one node sees it, with its writes kept apart.

The same rule pflow's ``NamespacedSharedStore`` applies, so a node behaves alike in pflow and
in a plain PocketFlow flow: ``shared["result"] = x`` lands in this node's outputs; reads look
at the node's own outputs first and then at the root of the shared store; keys written as
``__name__`` are framework coordination and go to the root.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any


def _is_special(key: Any) -> bool:
    return isinstance(key, str) and key.startswith("__") and key.endswith("__")


class NodeNamespace(MutableMapping[str, Any]):
    """``shared`` for one node: writes go to ``outputs``, reads fall back to ``shared``."""

    def __init__(self, shared: MutableMapping[str, Any], node_id: str, outputs: dict[str, Any]) -> None:
        self.shared = shared
        self.node_id = node_id
        self.outputs = outputs

    def __getitem__(self, key: str) -> Any:
        if not _is_special(key) and key in self.outputs:
            return self.outputs[key]
        if key != self.node_id and key in self.shared:
            return self.shared[key]
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if _is_special(key):
            self.shared[key] = value
        else:
            self.outputs[key] = value

    def __delitem__(self, key: str) -> None:
        if not _is_special(key) and key in self.outputs:
            del self.outputs[key]
        elif key != self.node_id and key in self.shared:
            del self.shared[key]
        else:
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if not _is_special(key) and key in self.outputs:
            return True
        return key != self.node_id and key in self.shared

    def __iter__(self) -> Iterator[str]:
        yield from self.outputs
        yield from (k for k in self.shared if k not in self.outputs and k != self.node_id)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"NodeNamespace(node_id={self.node_id!r}, outputs={sorted(self.outputs)!r})"
