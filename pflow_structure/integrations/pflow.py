"""The pflow plugin: the only module that touches pflow-cli's internals.

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
                                                            guard measures ``str(view)``, which is short)
``WorkflowValidator._extract_known_keys`` (0.10)            ``structure_only`` is not an unknown parameter
==========================================================  ===================================================
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from pflow_structure.errors import (
    ExecutionExpiredError,
    ExecutionNotFoundError,
    InvalidExecutionIdError,
    ParameterError,
    PflowVersionError,
)
from pflow_structure.settings import Settings

SUPPORTED_RANGE = ((0, 8), (0, 10))
SUPPORTED_TEXT = "pflow-cli 0.8.x to 0.10.x"
INSTALL_HINT = "pip install 'pflow-cli>=0.8,<0.11' 'mcp<2'"

_ORIGINALS: list[tuple[Any, str, Any]] = []
# Structure dicts of `registry run` executions, from the cache's store() to the formatter that
# prints them in the same call. Popped when printed; bounded in case a caller never prints.
_ANNOUNCED: dict[str, dict[str, Any]] = {}
_ANNOUNCED_MAX = 64
_ANNOUNCED_LOCK = threading.Lock()  # pflow's MCP server runs tools in threads
_settings_override: Settings | None = None


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
    global _settings_override
    check_version()
    _settings_override = settings
    if _ORIGINALS:
        return
    import pflow.cli.read_fields as read_fields_cli
    import pflow.cli.registry_run as registry_run_cli
    import pflow.core.execution_cache as execution_cache
    import pflow.execution.formatters.node_output_formatter as formatter
    import pflow.runtime.compiler as compiler
    from pflow.runtime.template_resolver import TemplateResolver

    cache_class = _cache_class(execution_cache.ExecutionCache)
    _patch(compiler, "_create_single_node", _compiler_hook(compiler._create_single_node, compiler.CompilationError))
    _patch(TemplateResolver, "resolve_value", staticmethod(_resolver_hook(TemplateResolver.resolve_value, False)))
    _patch(TemplateResolver, "variable_exists", staticmethod(_resolver_hook(TemplateResolver.variable_exists, True)))
    for module in (execution_cache, registry_run_cli, read_fields_cli):
        _patch(module, "ExecutionCache", cache_class)
    _patch(formatter, "format_structure_output", _formatter_hook(formatter.format_structure_output))
    command = read_fields_cli.read_fields
    _patch(command, "callback", _read_fields_command(command.callback))
    _accept_flag_in_param_check()
    from pflow.runtime.workflow_trace import WorkflowTraceCollector

    _patch(WorkflowTraceCollector, "_filter_shared", _trace_hook(WorkflowTraceCollector._filter_shared))
    try:
        import pflow.mcp_server.services.field_service as field_service
    except ImportError:  # pflow's MCP server needs the mcp package; the CLI does not
        return
    _patch(field_service, "ExecutionCache", cache_class)
    service = field_service.FieldService
    _patch(service, "read_fields", classmethod(_field_service_hook(service.read_fields)))


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


def _settings() -> Settings:
    return _settings_override or Settings.from_env()


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
                node.inner_node, node_id, node_type=node_type, namespace=False, settings=_settings_override
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


# -- templates -------------------------------------------------------------------------------

_PFLOW_PART = re.compile(r"^([^\[\]]+)((?:\[\d+\])*)$")
_MISSING = object()
# pflow asks both resolve_value and variable_exists for a template; each read of the cache
# parses the whole entry, so per thread we keep whether a path exists (a bool) and the last
# value read by an existence check (until the next call), never the entry.
_last_answer = threading.local()


def _pflow_segments(parts: list[str]) -> list[str | int] | None:
    """Dot-split parts in pflow's grammar (``name`` or ``name[0][1]``) as path segments; None if not."""
    segments: list[str | int] = []
    for part in parts:
        match = _PFLOW_PART.match(part)
        if match is None:
            return None
        segments.append(match.group(1))
        segments.extend(int(index) for index in re.findall(r"\d+", match.group(2)))
    return segments


def _pflow_split(path: str) -> list[str]:
    return re.split(r"\.(?![^\[]*\])", path)  # pflow's own split: dots outside brackets


def _resolver_hook(original: Callable[[str, dict[str, Any]], Any], existence: bool) -> Callable[..., Any]:
    def hooked(var_name: str, context: dict[str, Any]) -> Any:
        answer = _through_view(var_name, context, existence)
        return original(var_name, context) if answer is _MISSING else answer

    hooked.__name__ = original.__name__
    hooked.__doc__ = original.__doc__
    return hooked


def _through_view(var_name: str, context: Any, existence: bool) -> Any:
    """Resolve ``node.path`` with read_fields when ``node`` is a structure-only view; else _MISSING."""
    from pflow_structure.wrapper import CachedOutputs

    if not isinstance(var_name, str) or not isinstance(context, Mapping):
        return _MISSING
    parts = _pflow_split(var_name)
    head = _PFLOW_PART.match(parts[0])
    if len(parts) < 2 or head is None or head.group(2):
        return _MISSING
    view = context.get(head.group(1))
    if not isinstance(view, CachedOutputs):
        return _MISSING
    segments = _pflow_segments(parts[1:])
    if segments is None:
        return _MISSING  # not pflow's grammar: let pflow walk the view as a dict
    if segments[0] in view and segments[0] not in view._lazy:
        return _MISSING  # metadata or a small value held in memory: no cache read needed
    # An execution never changes, so an answer for (execution id, path) stays true.
    key = (view.execution_id, var_name)
    memo = _answers()
    if existence and key in memo.found:
        return memo.found[key]
    if not existence and memo.last is not None and memo.last[0] == key:
        value = memo.last[1]
        memo.last = None
        return value
    from pflow_structure.paths import format_path

    path = format_path(segments)
    readout = view.read_detailed(path)
    found, value = path not in readout.errors, readout.values[path]
    if len(memo.found) >= _FOUND_MAX:
        memo.found.clear()
    memo.found[key] = found
    memo.last = (key, value) if existence else None  # the value only until the next call
    return found if existence else value


_FOUND_MAX = 1024


def _answers() -> Any:
    if not hasattr(_last_answer, "found"):
        _last_answer.found = {}
        _last_answer.last = None
    return _last_answer


# -- registry run and read-fields ------------------------------------------------------------


def _cache_class(pflow_cache: type) -> type:
    """pflow's ExecutionCache with our store: same method names, our ids, files and TTL."""
    from pflow_structure.binary import restore_binary
    from pflow_structure.cache.ids import new_execution_id

    class StructureExecutionCache(pflow_cache):  # type: ignore[misc]
        @staticmethod
        def generate_execution_id() -> str:
            return new_execution_id(time.time())

        def store(self, execution_id: str, node_type: str, params: dict[str, Any], outputs: dict[str, Any]) -> None:
            from pflow_structure.service import store_outputs

            result = store_outputs(node_type, params or {}, outputs, settings=_settings(), execution_id=execution_id)
            with _ANNOUNCED_LOCK:
                while len(_ANNOUNCED) >= _ANNOUNCED_MAX:
                    _ANNOUNCED.pop(next(iter(_ANNOUNCED)))
                _ANNOUNCED[execution_id] = result

        def retrieve(self, execution_id: str) -> dict[str, Any] | None:
            try:
                entry = _settings().cache().get(execution_id)
            except InvalidExecutionIdError:
                return None  # never a path built from an id such as ../../x
            except ExecutionExpiredError:
                return None
            except ExecutionNotFoundError:
                old: dict[str, Any] | None = super().retrieve(execution_id)  # pflow's own entries
                return old
            return {
                "execution_id": entry.execution_id,
                "node_type": entry.node_type,
                "timestamp": entry.timestamp,
                "ttl_hours": entry.ttl_hours,
                "params": entry.params,
                "outputs": restore_binary(entry.outputs, (), entry.binary_paths),
            }

    return StructureExecutionCache


def _formatter_hook(original: Callable[..., str]) -> Callable[..., str]:
    from pflow_structure.render.structure_text import render_structure_text

    def format_structure_output(*args: Any, **kwargs: Any) -> str:
        execution_id = kwargs.get("execution_id", args[7] if len(args) > 7 else None)
        output_mode = kwargs.get("output_mode", args[8] if len(args) > 8 else "smart")
        with _ANNOUNCED_LOCK:
            result = _ANNOUNCED.pop(execution_id, None) if execution_id else None
        if result is None or output_mode == "full":  # "full" asks for every value: pflow's own display
            return original(*args, **kwargs)
        elapsed = kwargs.get("execution_time_ms", args[4] if len(args) > 4 else None)
        text = render_structure_text(result, program="pflow")
        return text if elapsed is None else f"{text}\n\nExecution time: {elapsed}ms"

    return format_structure_output


def _read_values(execution_id: str, field_paths: list[str]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """Values from our cache, or None when the id is not ours (pflow's own entry, maybe).

    An id that is not an execution id, or an expired execution, raises: neither may fall
    through to pflow's reader, which builds a file path from any id.
    """
    from pflow_structure.service import read_fields_detailed

    ours = {path: _as_our_path(path) for path in field_paths}
    try:
        readout = read_fields_detailed(execution_id, list(ours.values()), settings=_settings())
    except InvalidExecutionIdError:
        raise
    except ExecutionNotFoundError:
        return None
    values = {path: readout.values[ours[path]] for path in field_paths}
    errors = {path: readout.errors[ours[path]] for path in field_paths if ours[path] in readout.errors}
    return values, errors


def _as_our_path(path: str) -> str:
    """A path pflow users write, in our grammar when ours reads it differently.

    pflow reads ``stdout.9lives`` and ``k.0`` as keys; our grammar wants ``["9lives"]``. Paths
    our grammar parses are kept as they are ([*], negative indices, JSONPath work too).
    """
    from pflow_structure.errors import PathSyntaxError
    from pflow_structure.paths import format_path, parse_path

    try:
        parse_path(path)
        return path
    except PathSyntaxError:
        segments = _pflow_segments(_pflow_split(path)) if isinstance(path, str) else None
        return format_path(segments) if segments else path


def _read_fields_command(original: Callable[..., Any]) -> Callable[..., Any]:
    def read_fields(execution_id: str, field_paths: tuple[str, ...], output_format: str = "text") -> None:
        import json

        from pflow.execution.formatters.field_output_formatter import format_field_output

        try:
            found = _read_values(execution_id, list(field_paths))
        except (InvalidExecutionIdError, ExecutionExpiredError) as exc:
            print(f"❌ {exc}", file=sys.stderr)
            sys.exit(1)
        if found is None:
            original(execution_id, field_paths, output_format)
            return None
        values, errors = found
        for path, why in errors.items():
            print(f"note: {why}" if why.startswith(path) else f"note: {path}: {why}", file=sys.stderr)
        result = format_field_output(values, format_type=output_format)
        print(json.dumps(result, indent=2, default=str) if output_format == "json" else result)
        return None

    return read_fields


def _field_service_hook(original: Callable[..., str]) -> Callable[..., str]:
    def read_fields(cls: type, execution_id: str, field_paths: list[str]) -> str:
        from pflow.execution.formatters.field_output_formatter import format_field_output

        try:
            found = _read_values(execution_id, list(field_paths))
        except (InvalidExecutionIdError, ExecutionExpiredError) as exc:
            raise ValueError(str(exc)) from exc
        if found is None:
            return original(execution_id, field_paths)
        text = format_field_output(found[0], format_type="text")
        return str(text)

    return read_fields
