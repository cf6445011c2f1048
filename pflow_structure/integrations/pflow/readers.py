"""``registry run`` and ``read-fields`` (CLI and pflow's MCP server) on our cache and structure."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from pflow_structure.errors import ExecutionExpiredError, ExecutionNotFoundError, InvalidExecutionIdError
from pflow_structure.integrations.pflow.active import current_settings
from pflow_structure.integrations.pflow.templates import pflow_segments, pflow_split

# Structure dicts of `registry run` executions, from the cache's store() to the formatter that
# prints them in the same call. Popped when printed; bounded in case a caller never prints.
_ANNOUNCED: dict[str, dict[str, Any]] = {}
_ANNOUNCED_MAX = 64
_ANNOUNCED_LOCK = threading.Lock()  # pflow's MCP server runs tools in threads


def cache_class_for(pflow_cache: type) -> type:
    """pflow's ExecutionCache with our store: same method names, our ids, files and TTL."""
    from pflow_structure.cache.ids import new_execution_id
    from pflow_structure.encoding.binary import restore_binary

    class StructureExecutionCache(pflow_cache):  # type: ignore[misc]
        @staticmethod
        def generate_execution_id() -> str:
            return new_execution_id(time.time())

        def store(self, execution_id: str, node_type: str, params: dict[str, Any], outputs: dict[str, Any]) -> None:
            from pflow_structure.service import store_outputs

            result = store_outputs(
                node_type, params or {}, outputs, settings=current_settings(), execution_id=execution_id
            )
            with _ANNOUNCED_LOCK:
                while len(_ANNOUNCED) >= _ANNOUNCED_MAX:
                    _ANNOUNCED.pop(next(iter(_ANNOUNCED)))
                _ANNOUNCED[execution_id] = result

        def retrieve(self, execution_id: str) -> dict[str, Any] | None:
            try:
                entry = current_settings().cache().get(execution_id)
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


def formatter_hook(original: Callable[..., str]) -> Callable[..., str]:
    from pflow_structure.render.structure_text import render_structure_text

    def format_structure_output(*args: Any, **kwargs: Any) -> str:
        execution_id = kwargs.get("execution_id", args[7] if len(args) > 7 else None)
        output_mode = kwargs.get("output_mode", args[8] if len(args) > 8 else "smart")
        with _ANNOUNCED_LOCK:
            result = _ANNOUNCED.pop(execution_id, None) if execution_id else None
        if result is None or output_mode == "full":  # "full" asks for every value: pflow's own display
            return original(*args, **kwargs)
        elapsed = kwargs.get("execution_time_ms", args[4] if len(args) > 4 else None)
        text = render_structure_text(result, program="pflow", layout="flat")  # pflow's own lines
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
        readout = read_fields_detailed(execution_id, list(ours.values()), settings=current_settings())
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
        segments = pflow_segments(pflow_split(path)) if isinstance(path, str) else None
        return format_path(segments) if segments else path


def read_fields_command(original: Callable[..., Any]) -> Callable[..., Any]:
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


def field_service_hook(original: Callable[..., str]) -> Callable[..., str]:
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
