"""Node output → JSON-safe value (:mod:`~pflow_structure.encoding.encode`), and bytes back
(:mod:`~pflow_structure.encoding.binary`).

The two halves are apart so that the read path (``read-fields``) imports only the small one;
the names below load on first use for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pflow_structure.encoding.binary import restore_binary
    from pflow_structure.encoding.encode import MAX_DEPTH, OBJECT_DEPTH, Encoded, encode_value

__all__ = ["MAX_DEPTH", "OBJECT_DEPTH", "Encoded", "encode_value", "restore_binary"]


def __getattr__(name: str) -> Any:
    if name == "restore_binary":
        from pflow_structure.encoding.binary import restore_binary

        return restore_binary
    if name in ("MAX_DEPTH", "OBJECT_DEPTH", "Encoded", "encode_value"):
        from pflow_structure.encoding import encode

        return getattr(encode, name)
    raise AttributeError(f"module 'pflow_structure.encoding' has no attribute {name!r}")
