"""The one application service every adapter (CLI, MCP, wrapper, pflow hooks) calls.

``registry_run`` runs a node, caches its outputs and returns the structure; ``read_fields``
returns chosen values. Adapters translate arguments and errors; the logic lives here.
"""

from __future__ import annotations

import os

from pflow_structure.records import NamedTuple
from pflow_structure.service.reading import FieldReadout as FieldReadout
from pflow_structure.service.reading import read_fields_detailed as read_fields_detailed
from pflow_structure.service.running import run_node as run_node
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
    jq: str | None = None,
    structure: bool = False,
    style: str = "tool",
    form: str | None = None,
) -> dict[str, Any]:
    """Run a node, cache what it wrote, and return its structure (no values); with ``fields``, the
    values at those paths instead (:func:`pflow_structure.service.answers.fields_answer`); with ``jq``
    (an expression, checked before the node runs), its result in the same shape
    (:func:`pflow_structure.service.querying.jq_fields_answer`). The answer
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
    answers with the values of the fields they name and a short map of the rest, within ``max_tokens``
    (else the want budget); an output whose compact rendering costs no more than its view comes back as
    ``data`` (:mod:`pflow_structure.service.want_answer`). ``structure`` asks for the structure view
    whatever the size (with ``want``: the matching fields first, named in ``wanted``); ``style`` ("cli"
    or "tool") is how the answer writes the calls that read on; ``form`` ("text" or "json", by default "text" for
    the "cli" style) is what the answer is sized as when printed: its text, or the dict's compact JSON.
    """
    from pflow_structure.service.arguments import resolve_arguments

    if jq is not None:
        from pflow_structure.errors import ParameterError
        from pflow_structure.paths.jq import check_jq

        if fields is not None:
            raise ParameterError("give fields (paths) or jq (an expression), not both")
        check_jq(jq)  # refused before the node runs
    settings = settings or Settings.from_env()
    cache = cache or settings.cache()
    params = dict(parameters or {})
    resolved = resolve_arguments(params, settings=settings, cache=cache)
    _preload_llm(settings, all_fields)
    outputs = run_node(node_type, resolved)
    captured = capture_outputs(
        node_type, params, outputs, settings=settings, cache=cache, all_fields=all_fields, want=want
    )
    described = captured.result
    from pflow_structure.service.answers import answer_budget, structure_within_budget
    from pflow_structure.service.clients import answer_counter
    from pflow_structure.service.field_answers import fields_answer

    if jq is not None:
        from pflow_structure.service.querying import jq_fields_answer

        return jq_fields_answer(described, jq, max_tokens=max_tokens, settings=settings, cache=cache)
    if fields is None and not all_fields:
        from pflow_structure.service.want_answer import sized_answer

        sized = sized_answer(
            described,
            captured.outputs,
            captured.structure,
            settings=settings,
            want_budget=None if max_tokens is None else answer_budget(max_tokens, settings),
            force_structure=structure,
            style=style,
            form=form or ("text" if style == "cli" else "json"),  # the MCP server and the Python API give the dict
        )
        if sized is not None:
            return sized
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
    structure: dict[str, Any] = {}  # the whole structure, before any filter  # noqa: RUF012 (never mutated)


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
    from pflow_structure.service.describing import describe_value

    result, structure = describe_value(
        node_type,
        encoded.value,
        stored,
        encoded.binary_paths,
        encoded.notes,
        settings=settings,
        all_fields=all_fields,
        want=want,
        cache=cache,
        params=params,
    )
    binary, notes = list(encoded.binary_paths), list(encoded.notes)
    return CapturedOutputs(result, stored.cached, encoded.value, binary, notes, structure)


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
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The structure answer for a value just stored (``registry_run``'s dict); its field statistics are kept
    beside the entry in ``cache`` when it can (a page of ``result[*].field`` counts the items lacking it);
    ``page`` when the output carries the API's paging markers (``params``: the call's, for its ``limit``),
    whatever the filter shows."""
    from pflow_structure.service.describing import describe_value

    return describe_value(
        node_type,
        value,
        stored,
        binary_paths,
        notes,
        settings=settings,
        all_fields=all_fields,
        want=want,
        cache=cache,
        params=params,
    )[0]


class _Stored:
    """An entry already in the cache, as :func:`~pflow_structure.service.describe_stored` takes it."""

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id
        self.warnings: list[str] = []
        self.cached = True


def cached_structure(
    execution_id: str,
    *,
    settings: Settings | None = None,
    want: str | None = None,
    all_fields: bool = False,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The structure view of an execution already cached (what ``run`` shows, without running again):
    the full structure a want answer's map points to. Raises ``ExecutionNotFoundError`` or
    ``ExecutionExpiredError``."""
    from pflow_structure.service.answers import answer_budget, structure_within_budget

    settings = settings or Settings.from_env()
    entry = settings.cache().get(execution_id)
    described = describe_stored(
        entry.node_type,
        entry.outputs,
        _Stored(entry.execution_id),
        entry.binary_paths,
        entry.notes,
        settings=settings,
        all_fields=all_fields,
        want=want,
    )
    if all_fields and max_tokens is None:
        return described
    return structure_within_budget(described, answer_budget(max_tokens, settings))


def read_fields(
    execution_id: str,
    field_paths: Sequence[str] = (),
    *,
    limit: int | None = None,
    offset: int = 0,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    jq: str | None = None,
) -> dict[str, Any]:
    """Read chosen values from an execution: ``{path: value}``; with ``jq`` (an expression, instead of
    paths), ``{expression: its result}`` (a stream of results as a list, None when it answers nothing;
    see :mod:`pflow_structure.paths.jq` for what it refuses and its limits).

    Each path is resolved independently; one that is invalid or resolves to nothing gives
    ``None``. Wildcard and JSONPath paths give lists, paged by ``offset`` and ``limit``, as does a jq
    result that is a list.
    Raises ``ExecutionNotFoundError`` ("Execution not found") or
    ``ExecutionExpiredError`` ("Execution expired").

    >>> read_fields(run["execution_id"], ["result[0].title", "result[*].number"])  # doctest: +SKIP
    {'result[0].title': 'Fix authentication bug', 'result[*].number': [101, 100, 99]}
    >>> read_fields(run["execution_id"], jq='[.result[] | select(.state == "open")] | length')  # doctest: +SKIP
    {'[.result[] | select(.state == "open")] | length': 13}
    """
    if jq is not None:
        from pflow_structure.errors import ParameterError
        from pflow_structure.service.querying import read_jq

        if field_paths:
            raise ParameterError("give field_paths or jq (an expression), not both")
        return read_jq(execution_id, jq, offset=offset, limit=limit, settings=settings, cache=cache)
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
