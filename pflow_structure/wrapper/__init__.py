"""Structure-only nodes in PocketFlow flows: the wrapper, its lazy view and the namespace proxy."""

from pflow_structure.wrapper.node import (
    STRUCTURE_ONLY_PARAM,
    StructureOnlyNodeWrapper,
    structure_only_requested,
    wrap_if_structure_only,
)
from pflow_structure.wrapper.view import CachedOutputs

__all__ = [
    "STRUCTURE_ONLY_PARAM",
    "CachedOutputs",
    "StructureOnlyNodeWrapper",
    "structure_only_requested",
    "wrap_if_structure_only",
]
