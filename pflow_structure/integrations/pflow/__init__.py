"""The pflow plugin: the only package that touches pflow-cli's internals.

This module checks the version, installs and uninstalls, and hooks the compiler and the debug
trace; ``templates.py`` answers templates from the cache; ``readers.py`` serves ``registry run``
and ``read-fields``.

pflow has no plugin hooks, so :func:`install` replaces named functions and says so here, in
one place, after checking that the installed pflow-cli is a release whose internals we know
(0.8.x to 0.10.x, the releases with the wrapper-chain compiler). :func:`uninstall` puts
every original back.

What is replaced, and why:

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

import re
import sys
from collections.abc import Callable
from typing import Any

from pflow_structure.errors import ParameterError, PflowVersionError
from pflow_structure.integrations.pflow.active import current_settings as current_settings  # re-exported
from pflow_structure.integrations.pflow.active import set_override, settings_override
from pflow_structure.settings import Settings

SUPPORTED_RANGE = ((0, 8), (0, 10))
SUPPORTED_TEXT = "pflow-cli 0.8.x to 0.10.x"
INSTALL_HINT = "pip install 'pflow-cli>=0.8,<0.11' 'mcp<2'"

_ORIGINALS: list[tuple[Any, str, Any]] = []


# -- version ---------------------------------------------------------------------------------


def pflow_version() -> str | None:
    """The installed pflow-cli version, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pflow-cli")
    except PackageNotFoundError:
        return None


def check_version(found: str | None = None) -> str:
    """The installed version if supported, else a PflowVersionError that says what to do."""
    found = found if found is not None else pflow_version()
    if found is None:
        raise PflowVersionError(f"pflow-cli is not installed; the pflow plugin needs {SUPPORTED_TEXT}: {INSTALL_HINT}")
    match = re.match(r"(\d+)\.(\d+)", found)
    minor = (int(match.group(1)), int(match.group(2))) if match else None
    if minor is None or not SUPPORTED_RANGE[0] <= minor <= SUPPORTED_RANGE[1]:
        raise PflowVersionError(
            f"pflow-cli {found} is installed, but the pflow plugin supports {SUPPORTED_TEXT} (the releases with "
            f"the wrapper-chain compiler; later ones replaced it). Install a supported release ({INSTALL_HINT}), "
            "or use pflow-structure's own CLI and MCP server, which need no pflow."
        )
    return found


# -- install / uninstall ---------------------------------------------------------------------


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_ORIGINALS)


def install(settings: Settings | None = None) -> None:
    """Patch the installed pflow-cli (once; a second call only updates ``settings``)."""
    check_version()
    set_override(settings)
    if _ORIGINALS:
        return
    import pflow.cli.read_fields as read_fields_cli
    import pflow.cli.registry_run as registry_run_cli
    import pflow.core.execution_cache as execution_cache
    import pflow.execution.formatters.node_output_formatter as formatter
    import pflow.runtime.compiler as compiler
    from pflow.runtime.template_resolver import TemplateResolver

    from pflow_structure.integrations.pflow.readers import (
        cache_class_for,
        field_service_hook,
        formatter_hook,
        read_fields_command,
    )
    from pflow_structure.integrations.pflow.templates import resolver_hook

    cache_class = cache_class_for(execution_cache.ExecutionCache)
    _patch(compiler, "_create_single_node", _compiler_hook(compiler._create_single_node, compiler.CompilationError))
    _patch(TemplateResolver, "resolve_value", staticmethod(resolver_hook(TemplateResolver.resolve_value, False)))
    _patch(TemplateResolver, "variable_exists", staticmethod(resolver_hook(TemplateResolver.variable_exists, True)))
    for module in (execution_cache, registry_run_cli, read_fields_cli):
        _patch(module, "ExecutionCache", cache_class)
    _patch(formatter, "format_structure_output", formatter_hook(formatter.format_structure_output))
    command = read_fields_cli.read_fields
    _patch(command, "callback", read_fields_command(command.callback))
    _accept_flag_in_param_check()
    from pflow.runtime.workflow_trace import WorkflowTraceCollector

    _patch(WorkflowTraceCollector, "_filter_shared", _trace_hook(WorkflowTraceCollector._filter_shared))
    try:
        import pflow.mcp_server.services.field_service as field_service
    except ImportError:  # pflow's MCP server needs the mcp package; the CLI does not
        return
    _patch(field_service, "ExecutionCache", cache_class)
    service = field_service.FieldService
    _patch(service, "read_fields", classmethod(field_service_hook(service.read_fields)))


def _accept_flag_in_param_check() -> None:
    """pflow 0.10 warns about params a node's interface does not list; ``structure_only`` is ours."""
    try:
        from pflow.core.workflow.validator import WorkflowValidator
    except ImportError:  # 0.8 has no such check
        return
    original = getattr(WorkflowValidator, "_extract_known_keys", None)
    if original is None:
        return
    from pflow_structure.wrapper import STRUCTURE_ONLY_PARAM

    def _extract_known_keys(interface: dict[str, Any]) -> set[str]:
        known: set[str] = original(interface)
        return known | {STRUCTURE_ONLY_PARAM} if known else known

    _patch(WorkflowValidator, "_extract_known_keys", staticmethod(_extract_known_keys))


def uninstall() -> None:
    """Put every replaced pflow function back."""
    while _ORIGINALS:
        owner, name, original = _ORIGINALS.pop()
        setattr(owner, name, original)


def _patch(owner: Any, name: str, replacement: Any) -> None:
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    _ORIGINALS.append((owner, name, original))
    setattr(owner, name, replacement)


def run_pflow(argv: list[str], settings: Settings | None = None) -> None:
    """Run pflow's own CLI (``pflow ARGS...``) with the plugin installed."""
    install(settings)
    from pflow.cli import cli_main

    sys.argv = ["pflow", *argv]
    cli_main()


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
