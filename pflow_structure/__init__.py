"""pflow-structure: structure first, values on demand.

Glossary (the same words in code, CLI help, MCP descriptions and docs):

value
    What a node wrote, or any part of it.
path / template path
    Where a value sits: ``result[0].title``, ``result[0]["content-type"]``. In a
    structure, ``[0]`` stands for every item of a list and ``[*]`` for every value of a
    dict whose keys are data.
structure
    The flattened map path → statistics (type, counts, lengths), without values.
field
    A leaf path of a structure; ``field_count`` counts them.
execution id
    ``exec-{unix seconds}-{hex}``: names one cached run of a node.

>>> from pflow_structure import registry_run, read_fields          # doctest: +SKIP
>>> run = registry_run("read-json", {"path": "examples/data/github_issues.json"})  # doctest: +SKIP
>>> read_fields(run["execution_id"], ["result[0].title"])          # doctest: +SKIP
"""

from __future__ import annotations

from pflow_structure.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pflow_structure.cache import CacheEntry, ExecutionCache, mask_secrets
    from pflow_structure.encoding import encode_value
    from pflow_structure.errors import (
        CacheWriteError,
        ExecutionExpiredError,
        ExecutionNotFoundError,
        InvalidExecutionIdError,
        NodeExecutionError,
        NodeNotFoundError,
        ParameterError,
        PathNotFoundError,
        PathSyntaxError,
        PflowVersionError,
        StructureError,
    )
    from pflow_structure.paths import format_path, parse_path
    from pflow_structure.service import list_nodes, read_fields, read_fields_detailed, registry_run, store_outputs
    from pflow_structure.settings import Settings
    from pflow_structure.structure import InferredStructure, infer_structure
    from pflow_structure.wrapper import CachedOutputs, StructureOnlyNodeWrapper, wrap_if_structure_only

# Public names are imported on first use so that `import pflow_structure` (and the CLI's
# start-up) stays in the tens of milliseconds.
_EXPORTS = {
    "CacheEntry": "pflow_structure.cache",
    "CachedOutputs": "pflow_structure.wrapper",
    "CacheWriteError": "pflow_structure.errors",
    "ExecutionCache": "pflow_structure.cache",
    "ExecutionExpiredError": "pflow_structure.errors",
    "ExecutionNotFoundError": "pflow_structure.errors",
    "InferredStructure": "pflow_structure.structure",
    "InvalidExecutionIdError": "pflow_structure.errors",
    "NodeExecutionError": "pflow_structure.errors",
    "NodeNotFoundError": "pflow_structure.errors",
    "ParameterError": "pflow_structure.errors",
    "PathNotFoundError": "pflow_structure.errors",
    "PathSyntaxError": "pflow_structure.errors",
    "PflowVersionError": "pflow_structure.errors",
    "Settings": "pflow_structure.settings",
    "StructureError": "pflow_structure.errors",
    "StructureOnlyNodeWrapper": "pflow_structure.wrapper",
    "encode_value": "pflow_structure.encoding",
    "format_path": "pflow_structure.paths",
    "infer_structure": "pflow_structure.structure",
    "list_nodes": "pflow_structure.service",
    "mask_secrets": "pflow_structure.cache",
    "parse_path": "pflow_structure.paths",
    "read_fields": "pflow_structure.service",
    "read_fields_detailed": "pflow_structure.service",
    "registry_run": "pflow_structure.service",
    "store_outputs": "pflow_structure.service",
    "wrap_if_structure_only": "pflow_structure.wrapper",
}


__getattr__ = lazy_names(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__version__ = "0.1.0"

__all__ = [
    "CacheEntry",
    "CacheWriteError",
    "CachedOutputs",
    "ExecutionCache",
    "ExecutionExpiredError",
    "ExecutionNotFoundError",
    "InferredStructure",
    "InvalidExecutionIdError",
    "NodeExecutionError",
    "NodeNotFoundError",
    "ParameterError",
    "PathNotFoundError",
    "PathSyntaxError",
    "PflowVersionError",
    "Settings",
    "StructureError",
    "StructureOnlyNodeWrapper",
    "__version__",
    "encode_value",
    "format_path",
    "infer_structure",
    "list_nodes",
    "mask_secrets",
    "parse_path",
    "read_fields",
    "read_fields_detailed",
    "registry_run",
    "store_outputs",
    "wrap_if_structure_only",
]
