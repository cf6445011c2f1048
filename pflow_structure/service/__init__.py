"""The one application service every adapter (CLI, MCP, wrapper, pflow hooks) calls.

``registry_run`` runs a node, caches its outputs and returns the structure; ``read_fields``
returns chosen values. Adapters translate arguments and errors; the logic lives here.
"""

from __future__ import annotations

import os

from pflow_structure.errors import NodeExecutionError
from pflow_structure.records import NamedTuple
from pflow_structure.service.reading import FieldReadout as FieldReadout
from pflow_structure.service.reading import read_fields_detailed as read_fields_detailed
from pflow_structure.settings import Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend, StoredExecutionLike


def registry_run(
    node_type: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    all_fields: bool = False,
    want: str | None = None,
    fields: Sequence[str] | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Run a node, cache what it wrote, and return its structure (no values); with ``fields``, the
    values at those paths instead (:func:`pflow_structure.service.answers.fields_answer`). The answer
    stays under ``max_tokens`` (else the answer budget); with ``all_fields`` only an explicit ``max_tokens`` bounds it.

    Returns the spec's dict: ``execution_id``, ``node_type``, ``structure``,
    ``field_count``, ``original_field_count``, ``filtered``; plus ``omitted_paths`` when
    the structure was capped and ``warnings`` when something needs the user's attention.
    A structure of more than 50 fields is filtered (see :mod:`pflow_structure.filtering`):
    then ``filter``, ``hidden_fields`` and ``filter_note`` say what happened, and ``hidden``
    names what is not shown (object path → its hidden key names, see
    :mod:`pflow_structure.filtering.hidden`); ``all_fields`` lists everything. A parameter may hold
    ``${exec-ID:PATH}`` (a cached value, passed on unread; the cache entry records the reference, not
    the value). Raises :class:`NodeNotFoundError` or :class:`NodeExecutionError` (nothing cached), and
    ``UnresolvedReferenceError`` before the node runs. ``want`` (plain words: "who wrote each issue")
    lists the fields they name first, in a smaller view, and says which in ``wanted``.
    """
    from pflow_structure.service.arguments import resolve_arguments

    settings = settings or Settings.from_env()
    cache = cache or settings.cache()
    params = dict(parameters or {})
    resolved = resolve_arguments(params, settings=settings, cache=cache)
    _preload_llm(settings, all_fields)
    outputs = run_node(node_type, resolved)
    described = store_outputs(
        node_type, params, outputs, settings=settings, cache=cache, all_fields=all_fields, want=want
    )
    from pflow_structure.service.answers import answer_budget, structure_within_budget
    from pflow_structure.service.clients import answer_counter
    from pflow_structure.service.field_answers import fields_answer

    if fields is None:  # all_fields asks for every path: bounded only by an explicit max_tokens
        bounded = max_tokens is not None or not all_fields
        budget, count = answer_budget(max_tokens, settings), answer_counter(max_tokens, settings)
        return structure_within_budget(described, budget, count) if bounded else described

    return fields_answer(described, fields, max_tokens=max_tokens, settings=settings, cache=cache)


def _preload_llm(settings: Settings, all_fields: bool) -> None:
    """Import litellm (seconds) in the background while the node runs, when the LLM may filter."""
    options = settings.filter_options()
    if all_fields or options.mode not in ("auto", "llm"):
        return
    from pflow_structure.filtering import llm_status

    if not llm_status(options)[0]:
        return
    import contextlib
    import threading

    from pflow_structure.filtering import llm

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    def preload() -> None:
        with contextlib.suppress(Exception):  # the filter call reports any real problem
            llm.preload(options.model or llm.DEFAULT_MODEL)

    threading.Thread(target=preload, name="pflow-structure-llm-preload", daemon=True).start()


def run_node(node_type: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run ``node_type`` with ``params`` on a fresh shared store; return what it wrote."""
    from pflow_structure.nodes.base import AsyncNode
    from pflow_structure.registry import find_node

    spec = find_node(node_type)
    try:
        node = spec.load()()
    except Exception as exc:  # a broken plugin: name where it comes from
        raise NodeExecutionError(
            node_type, exc, context=f"cannot load {spec.target} (from {spec.source}); reinstall or fix that package"
        ) from exc
    shared: dict[str, Any] = {}
    try:
        node.set_params(params)
        if isinstance(node, AsyncNode):
            _run_coroutine(node._run_async(shared))
        else:
            node._run(shared)
    except NodeExecutionError:
        raise
    except Exception as exc:
        raise NodeExecutionError(node_type, exc) from exc
    return shared


def _run_coroutine(coroutine: Any) -> Any:
    """Run a coroutine to completion, also when called from inside a running event loop."""
    import asyncio
    import threading

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="pflow-structure-async-node")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def store_outputs(
    node_type: str,
    params: Mapping[str, Any],
    outputs: Any,
    *,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    execution_id: str | None = None,
    all_fields: bool = False,
    text_paths: Sequence[Sequence[str | int]] = (),
    want: str | None = None,
) -> dict[str, Any]:
    """Encode, cache and describe outputs a node already produced (used by wrappers too).

    ``execution_id`` stores under an id the caller already announced (see ``ExecutionCache.put``);
    ``text_paths`` marks lists of lines that hold a text answer (references pass the text).
    """
    kwargs: dict[str, Any] = {
        "execution_id": execution_id,
        "all_fields": all_fields,
        "text_paths": text_paths,
        "want": want,
    }
    return capture_outputs(node_type, params, outputs, settings=settings, cache=cache, **kwargs).result


class CapturedOutputs(NamedTuple):
    """What :func:`capture_outputs` did: the structure dict, whether the entry reached the
    cache (if not, ``read_fields`` cannot read it, so a wrapper must keep the values), the
    JSON-safe outputs that were stored, and the encoder's notes (a value it had to cut or
    rewrite: the cached copy then differs from what the node wrote)."""

    result: dict[str, Any]
    cached: bool
    outputs: dict[str, Any]
    binary_paths: list[Any]
    notes: list[str]


def capture_outputs(
    node_type: str,
    params: Mapping[str, Any],
    outputs: Any,
    *,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    execution_id: str | None = None,
    all_fields: bool = False,
    text_paths: Sequence[Sequence[str | int]] = (),
    want: str | None = None,
) -> CapturedOutputs:
    """Like :func:`store_outputs`, and also says whether the cache holds the entry.

    ``execution_id`` stores under an id the caller already announced (see ``ExecutionCache.put``).
    """
    settings = settings or Settings.from_env()
    cache = cache or settings.cache()
    from pflow_structure.encoding import encode_value

    if not isinstance(outputs, dict):
        outputs = {"result": outputs}  # a bare value is listed and read back as "result"
    encoded = encode_value(outputs)
    stored = cache.put(
        node_type,
        dict(params),
        encoded.value,
        binary_paths=encoded.binary_paths,
        notes=encoded.notes,
        execution_id=execution_id,
        text_paths=text_paths,
    )
    result = describe_stored(
        node_type,
        encoded.value,
        stored,
        encoded.binary_paths,
        encoded.notes,
        settings=settings,
        all_fields=all_fields,
        want=want,
        cache=cache,
    )
    return CapturedOutputs(result, stored.cached, encoded.value, list(encoded.binary_paths), list(encoded.notes))


def describe_stored(
    node_type: str,
    value: Any,
    stored: StoredExecutionLike,
    binary_paths: Sequence[Sequence[str | int]],
    notes: Sequence[str],
    *,
    settings: Settings,
    all_fields: bool = False,
    want: str | None = None,
    cache: CacheBackend | None = None,
) -> dict[str, Any]:
    """The structure answer for a value just stored (``registry_run``'s dict); its field statistics are kept
    beside the entry in ``cache`` when it can (a page of ``result[*].field`` counts the items lacking it)."""
    from pflow_structure.structure import infer_structure

    inferred = infer_structure(value, binary_paths=binary_paths, max_paths=settings.max_paths)
    note = getattr(cache, "note_presence", None) if stored.cached else None
    if note is not None:
        fields = inferred.structure.items()
        note(stored.execution_id, {path: [i.get("type"), i.get("present"), i.get("of")] for path, i in fields})
    chosen = _filter(inferred, node_type, settings, all_fields, want)
    result: dict[str, Any] = {
        "execution_id": stored.execution_id,
        "node_type": node_type,
        "structure": chosen.structure,
        "field_count": chosen.kept_fields if chosen.filtered else inferred.field_count,
        "original_field_count": inferred.field_count,
        "filtered": chosen.filtered,
    }
    if chosen.filtered:
        result["filter"] = chosen.method
        result["hidden_fields"] = max(0, inferred.field_count - chosen.kept_fields)
        result["filter_note"] = f"{result['hidden_fields']} fields hidden: --all-fields (all_fields) lists them"
        if chosen.hidden:
            result["hidden"] = chosen.hidden
    if chosen.wanted is not None:
        result["want"], result["wanted"] = want, chosen.wanted
    if inferred.omitted_paths and not chosen.filtered:
        result["omitted_paths"] = inferred.omitted_paths
    warnings = list(stored.warnings) + list(chosen.warnings) + _summarise(notes, stored.execution_id)
    if not inferred.total_paths:
        warnings.append(f"Node {node_type!r} wrote no outputs.")
    if warnings:
        result["warnings"] = warnings
    return result


def _filter(inferred: Any, node_type: str, settings: Settings, all_fields: bool, want: str | None) -> Any:
    from pflow_structure.filtering import filter_structure

    options = settings.filter_options()
    if options.mode in ("auto", "llm") and inferred.field_count > options.threshold and not all_fields:
        # litellm fetches its model price map from the network at import unless told not to.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return filter_structure(
        inferred.structure,
        inferred.field_count,
        node_type,
        options,
        all_fields=all_fields,
        signals=inferred.signals,
        want=want,
    )


MAX_NOTES_SHOWN = 5


def _summarise(notes: Sequence[str], execution_id: str) -> list[str]:
    """At most a few encoding notes (a list of 2,000 objects with cycles makes 2,000 of them)."""
    if len(notes) <= MAX_NOTES_SHOWN:
        return list(notes)
    rest = len(notes) - MAX_NOTES_SHOWN
    return [*notes[:MAX_NOTES_SHOWN], f"... and {rest} more like these (all are in the cache entry {execution_id})"]


def read_fields(
    execution_id: str,
    field_paths: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> dict[str, Any]:
    """Read chosen values from an execution: ``{path: value}``.

    Each path is resolved independently; one that is invalid or resolves to nothing gives
    ``None``. Wildcard and JSONPath paths give lists, paged by ``offset`` and ``limit``.
    Raises ``ExecutionNotFoundError`` ("Execution not found") or
    ``ExecutionExpiredError`` ("Execution expired").

    >>> read_fields(run["execution_id"], ["result[0].title", "result[*].number"])  # doctest: +SKIP
    {'result[0].title': 'Fix authentication bug', 'result[*].number': [101, 100, 99]}
    """
    readout = read_fields_detailed(
        execution_id, field_paths, limit=limit, offset=offset, settings=settings, cache=cache
    )
    return readout.values


def read_fields_text(
    execution_id: str,
    field_paths: Sequence[str],
    format_name: str = "text",
    *,
    limit: int | None = None,
    offset: int = 0,
    max_items: int | None = None,
    offset_hint: str = "--offset",
    settings: Settings | None = None,
) -> tuple[str, list[str]]:
    """The values of :func:`read_fields` as text, and notes: ``(text, notes)``.

    ``format_name`` is one of ``READ_FORMATS``: ``json`` (the indented JSON ``read-fields
    --json`` prints), ``text`` (a ``path: JSON`` line per path),
    or a compact format (``auto``, ``outline``, ``lines``, ``table``, ``toon``) for each list
    or dict value, under its path. A value that does not fit the format is shown as JSON and
    a note says so; a path that finds nothing gives a note with the reason. ``max_items``
    shows at most that many items of a ``[*]`` path (the rest are counted in a comment). The text
    stays within the answer budget (:func:`pflow_structure.service.answers.read_fields_text_call`).
    """
    from pflow_structure.service.answers import read_fields_text_call

    style = "cli" if offset_hint == "--offset" else "tool"
    answer = read_fields_text_call(
        execution_id, field_paths, format_name, limit=limit, offset=offset, max_items=max_items, style=style,
        settings=settings,
    )  # fmt: skip
    return answer.text, answer.notes


def list_nodes() -> list[dict[str, str]]:
    """Every runnable node: ``[{"name", "description", "source"}]``."""
    from pflow_structure.registry import available_nodes

    return [
        {"name": spec.name, "description": spec.description(), "source": spec.source}
        for spec in available_nodes().values()
    ]
