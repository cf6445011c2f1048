"""The adapter for pflow-cli 0.8.x to 0.10.x: the releases with the wrapper-chain compiler.

:func:`install_hooks` replaces these names (the package's :func:`install` checks the version
first and undoes everything if one is missing):

==========================================================  ===================================================
``pflow.runtime.compiler._create_single_node``              nodes with ``structure_only: true`` get a
                                                            :class:`StructureOnlyNodeWrapper` right inside
                                                            ``InstrumentedNodeWrapper`` (around the batch
                                                            wrapper when there is one), so what is cached is
                                                            exactly the node's namespaced outputs
``TemplateResolver.resolve_value`` / ``variable_exists``    ``${node.a[0].b}`` on a structure-only node reads
                                                            that one value with ``read_fields``
``pflow.core.execution_cache.ExecutionCache`` (and the      ``registry run`` (CLI and MCP) stores in our cache,
names ``registry_run``/``read_fields``/``field_service``    with our ids, 0600 files and TTL; pflow's own old
bound at import)                                            entries stay readable
``node_output_formatter.format_structure_output``           ``registry run`` prints our structure (union over
                                                            every list item) in pflow's ``✓ ${path} (type)`` lines
``read-fields`` command, ``FieldService.read_fields``       values come from our ``read_fields``
``WorkflowTraceCollector._filter_shared``                   the debug trace records a structure-only node as
                                                            its execution id, not every value (pflow's size
                                                            guard would read all of them to measure them)
``WorkflowValidator._extract_known_keys`` (0.10)            ``structure_only`` is not an unknown parameter
==========================================================  ===================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.integrations.pflow.active import settings_override
from pflow_structure.integrations.pflow.hooks import accept_structure_only_param, patch


def install_hooks() -> None:
    """Patch the installed pflow-cli 0.8 to 0.10 (see the module docstring)."""
    import pflow.cli.read_fields as read_fields_cli
    import pflow.cli.registry_run as registry_run_cli
    import pflow.core.execution_cache as execution_cache
    import pflow.execution.formatters.node_output_formatter as formatter
    import pflow.runtime.compiler as compiler
    from pflow.runtime.template_resolver import TemplateResolver

    from pflow_structure.integrations.pflow.readers import install_reader_hooks
    from pflow_structure.integrations.pflow.templates import resolver_hook

    patch(compiler, "_create_single_node", _compiler_hook(compiler._create_single_node, compiler.CompilationError))
    patch(TemplateResolver, "resolve_value", staticmethod(resolver_hook(TemplateResolver.resolve_value, False)))
    patch(TemplateResolver, "variable_exists", staticmethod(resolver_hook(TemplateResolver.variable_exists, True)))
    install_reader_hooks(execution_cache, formatter, read_fields_cli, (registry_run_cli,))
    accept_structure_only_param()
    from pflow.runtime.workflow_trace import WorkflowTraceCollector

    patch(WorkflowTraceCollector, "_filter_shared", _trace_hook(WorkflowTraceCollector._filter_shared))


# -- the compiler ----------------------------------------------------------------------------


def _compiler_hook(original: Callable[..., Any], compilation_error: Callable[..., Exception]) -> Callable[..., Any]:
    from pflow_structure.wrapper import STRUCTURE_ONLY_PARAM, StructureOnlyNodeWrapper, structure_only_requested

    def _create_single_node(node_data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        params = node_data.get("params") or {}
        node_id, node_type = node_data.get("id", ""), node_data.get("type", "")
        try:
            wanted = structure_only_requested(params, node_id)
        except ParameterError as exc:
            raise compilation_error(str(exc), phase="node_instantiation", node_id=node_id, node_type=node_type) from exc
        namespacing = kwargs.get("enable_namespacing", args[2] if len(args) > 2 else True)
        if wanted and not namespacing:
            raise compilation_error(
                f"structure_only on node {node_id!r} needs namespacing: it caches what the node writes under its id, "
                'and this workflow sets "enable_namespacing": false. Remove one of the two.',
                phase="node_instantiation",
                node_id=node_id,
                node_type=node_type,
            )
        if STRUCTURE_ONLY_PARAM in params:  # never passed on to the node
            node_data = {**node_data, "params": {k: v for k, v in params.items() if k != STRUCTURE_ONLY_PARAM}}
        node = original(node_data, *args, **kwargs)
        if wanted:
            # Right inside the instrumented wrapper: what gets cached is shared[node_id] as the
            # namespace (and batch) wrappers leave it, the same dict downstream templates read.
            node.inner_node = StructureOnlyNodeWrapper(
                node.inner_node, node_id, node_type=node_type, namespace=False, settings=settings_override()
            )
        return node

    return _create_single_node


def _trace_hook(original: Callable[[Any, dict[str, Any]], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    from pflow_structure.wrapper import CachedOutputs

    def _filter_shared(self: Any, shared: dict[str, Any]) -> dict[str, Any]:
        shown = {
            key: f"<structure-only outputs: {len(value.structure)} template paths in execution {value.execution_id}>"
            if isinstance(value, CachedOutputs)
            else value
            for key, value in shared.items()
        }
        return original(self, shown)

    return _filter_shared
