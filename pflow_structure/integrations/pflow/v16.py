"""The adapter for pflow-cli 0.16.x: one workflow engine, ``pflow probe``, pflow's own cache.

0.16 replaced the wrapper chain with ``WorkflowEngine`` and resolves templates with
``pflow.core.templates``, whose walk reads any ``Mapping`` by key. So a structure-only node
needs no template hook: its namespace becomes a :class:`CachedOutputs` (a read-only ``dict``
holding ``_structure`` and ``_execution_id`` and no output value, not even an exit code), and
``${node.result.items[0].title}`` walks through it, reading ``result`` from the cache when it
is asked for. A path that does not exist
is a miss of pflow's own walk, so pflow raises its own template error naming the path.

:func:`install_hooks` replaces these names (the package's :func:`install` checks the version
first and undoes everything if one is missing):

=========================================================  ====================================================
``pflow.runtime.compilation.compiler._create_node_and_``   ``structure_only`` is taken out of the node's params
``config``                                                 (the node never sees it; an MCP tool would get it as
                                                           an argument) and marked on its ``NodeConfig``, with
                                                           pflow's memo cache off for that node (a memo hit
                                                           would put every value back into the namespace)
``WorkflowEngine._execute_node``                           after a marked node ran, its namespace goes to our
                                                           cache and becomes a :class:`CachedOutputs`; a loop
                                                           that comes back to it starts from the plain outputs
``pflow.core.execution_cache.ExecutionCache`` (and the     ``probe`` (CLI and MCP ``registry_run``) stores in
names ``_probe_impl``/``read_fields``/``field_service``    our cache, with our ids, 0600 files and TTL; pflow's
bound at import)                                           own old entries stay readable
``node_output_formatter.format_structure_output``          ``probe`` prints our structure (union over every
                                                           list item) in pflow's ``✓ ${path} (type)`` lines
``_probe_impl._display_results``                           ``probe --output-format json`` prints our dict
``read-fields`` command, ``FieldService.read_fields``      values come from our ``read_fields``
``WorkflowValidator._extract_known_keys``                  ``structure_only`` is not an unknown parameter
=========================================================  ====================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.integrations.pflow.active import settings_override
from pflow_structure.integrations.pflow.hooks import accept_structure_only_param, existing, patch


def install_hooks() -> None:
    """Patch the installed pflow-cli 0.16 (see the module docstring)."""
    import pflow.cli.commands._probe_impl as probe_impl
    import pflow.cli.commands.read_fields as read_fields_cli
    import pflow.core.execution_cache as execution_cache
    import pflow.execution.formatters.node_output_formatter as formatter
    import pflow.runtime.compilation.compiler as compiler
    from pflow.runtime.engine.engine import WorkflowEngine
    from pflow.runtime.engine.types import NodeConfig

    from pflow_structure.integrations.pflow.readers import install_reader_hooks, probe_results_hook

    install_reader_hooks(execution_cache, formatter, read_fields_cli, (probe_impl,))
    patch(probe_impl, "_display_results", probe_results_hook(existing(probe_impl, "_display_results")))
    marked = _structure_only_config_class(NodeConfig)
    patch(compiler, "_create_node_and_config", _compiler_hook(existing(compiler, "_create_node_and_config"), marked))
    patch(WorkflowEngine, "_execute_node", _engine_hook(existing(WorkflowEngine, "_execute_node"), marked))
    accept_structure_only_param()


def _structure_only_config_class(node_config: type) -> type:
    """``NodeConfig`` marked structure-only; ``dataclasses.replace`` keeps the mark."""

    @dataclasses.dataclass
    class StructureOnlyNodeConfig(node_config):  # type: ignore[misc]
        node_type: str = ""  # the registry's name ("shell"); node_type_name is the class name

    return StructureOnlyNodeConfig


def _compiler_hook(original: Callable[..., Any], marked: Any) -> Callable[..., Any]:
    from pflow.core.exceptions import CompilationError

    from pflow_structure.wrapper import STRUCTURE_ONLY_PARAM, structure_only_requested

    def _create_node_and_config(node_data: dict[str, Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        params = node_data.get("params") or {}
        node_id, node_type = node_data.get("id", ""), node_data.get("type", "")
        try:
            wanted = structure_only_requested(params, node_id)
        except ParameterError as exc:
            raise CompilationError(str(exc), phase="node_instantiation", node_id=node_id, node_type=node_type) from exc
        if STRUCTURE_ONLY_PARAM in params:  # never passed on to the node
            node_data = {**node_data, "params": {k: v for k, v in params.items() if k != STRUCTURE_ONLY_PARAM}}
        node, config = original(node_data, *args, **kwargs)
        if not wanted:
            return node, config
        if not config.namespaced:
            raise CompilationError(
                f"structure_only on node {node_id!r} needs namespacing: it caches what the node writes under its id, "
                'and this workflow sets "enable_namespacing": false. Remove one of the two.',
                phase="node_instantiation",
                node_id=node_id,
                node_type=node_type,
            )
        fields = {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}
        return node, marked(**{**fields, "cache_enabled": False, "node_type": node_type})

    return _create_node_and_config


def _engine_hook(original: Callable[..., str], marked: Any) -> Callable[..., str]:
    from pflow_structure.wrapper import CachedOutputs, StructureOnlyNodeWrapper

    def _execute_node(self: Any, node: Any, config: Any, shared: dict[str, Any]) -> str:
        if not isinstance(config, marked):
            return original(self, node, config, shared)
        node_id = config.node_id
        previous = shared.get(node_id)
        if isinstance(previous, CachedOutputs):  # a loop came back: the node updates its outputs in place
            shared[node_id] = previous.materialize()
        try:
            action = original(self, node, config, shared)
        except BaseException:
            if isinstance(previous, CachedOutputs):  # what the earlier visit left, still in the cache
                shared[node_id] = previous
            raise
        outputs = shared.get(node_id)
        if isinstance(outputs, dict) and not isinstance(outputs, CachedOutputs):
            # The wrapper's capture: cache, structure, view (or the values kept, with a warning,
            # when the cache cannot hold them faithfully). The node is not run through it.
            capture = StructureOnlyNodeWrapper(
                node, node_id, node_type=config.node_type, namespace=False, settings=settings_override()
            )
            shared[node_id] = capture.capture(outputs, keep_scalars=False)
        return action

    return _execute_node
