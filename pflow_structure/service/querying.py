"""jq over a cached execution: the expression's result is the answer, within the answer budget.

The expression (:mod:`pflow_structure.paths.jq`) runs over the execution's outputs, the same root
as a path (``.result`` is the path ``result``). Its results become one value: a single result is
itself, several (a stream) are answered as a list and ``_stream`` says so, none is a miss (``None``,
with the reason under ``_missing``). The answer is ``{EXPRESSION: value}``, fitted to the budget
as a path's value is: a list pages (``offset``/``limit`` page the result list), a long string is
cut (``char_offset``), a dict too large gives its structure and says how to narrow the expression;
each ``_more`` entry holds the arguments (``execution_id``, ``jq``, paging) that read on.
"""

from __future__ import annotations

from pflow_structure.paths.jq import check_jq
from pflow_structure.records import NamedTuple
from pflow_structure.render.output_text import compact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend
    from pflow_structure.render.budget import TokenCounter
    from pflow_structure.service.answers import Answer, TextAnswer
    from pflow_structure.service.reading import FieldReadout
    from pflow_structure.settings import Settings

__all__ = ["JQ_RESULT_NOTE", "check_jq", "jq_answer", "jq_fields_answer", "jq_text_answer", "read_jq"]

JQ_RESULT_NOTE = "{count} results (a stream): answered as a list"
NOTHING = (
    "the jq expression answered nothing (empty): a select(...) matched no item, or a path is missing; "
    "wrap it in [...] to answer an empty list"
)
STREAM_KEY = "_stream"  # the answer to a stream of results says so here


class JqReadout(NamedTuple):
    """The expression's value as a readout (one "path": the expression), and how many results it had."""

    readout: FieldReadout
    results: int


def read_jq(
    execution_id: str,
    expression: str,
    *,
    offset: int = 0,
    limit: int | None = None,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> dict[str, Any]:
    """``{expression: value}`` for the Python API: no budget (a stream as a list, ``None`` when jq answered
    nothing); a list paged by ``offset`` and ``limit`` as a path's. Raises ``JqExpressionError`` before the
    cache is read."""
    found = jq_readout(execution_id, expression, offset=offset, limit=limit, settings=settings, cache=cache)
    return dict(found.readout.values)


def jq_readout(
    execution_id: str,
    expression: str,
    *,
    offset: int = 0,
    limit: int | None = None,
    char_offset: int = 0,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> JqReadout:
    """Run ``expression`` over a cached execution; a list value is paged by ``offset``/``limit``."""
    from pflow_structure.errors import ParameterError
    from pflow_structure.paths.jq import run_jq
    from pflow_structure.service.reading import FieldReadout, note_read
    from pflow_structure.settings import Settings

    check_jq(expression)  # before the cache is read
    if offset < 0 or char_offset < 0 or (limit is not None and limit < 0):
        raise ParameterError(f"offset ({offset}), limit ({limit}) and char_offset ({char_offset}) must not be negative")
    if cache is None:
        cache = (settings or Settings.from_env()).cache()
    entry = cache.get(execution_id)
    note_read(execution_id, entry.node_type)
    results = run_jq(expression, entry.outputs)
    readout = FieldReadout(execution_id, {}, {}, {}, {}, {expression: []})
    value: Any = results if len(results) > 1 else results[0] if results else None
    if not results:
        readout.errors[expression] = NOTHING
    elif isinstance(value, list):
        readout.totals[expression] = len(value)
        value = value[offset : None if limit is None else offset + limit]
    elif isinstance(value, str) and char_offset:
        value = value[char_offset:]
    readout.values[expression] = value
    return JqReadout(readout, len(results))


def jq_answer(
    execution_id: str,
    expression: str,
    *,
    offset: int = 0,
    limit: int | None = None,
    char_offset: int = 0,
    max_tokens: int | None = None,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
    count: TokenCounter | None = None,
) -> Answer:
    """``read_fields`` with ``jq``: ``{expression: value}`` within the budget, with ``_missing``,
    ``_more`` (arguments that read on, with ``jq``), ``_note`` (a cut) and ``_stream`` (several results).
    ``count``: how the budget is counted (else as the session's client counts it: o200k tokens, and its
    bytes and lines where it cuts by those, service/clients.py)."""
    from pflow_structure.render.budget import Paging
    from pflow_structure.service.answers import Answer, answer_budget, answer_from_readout, o200k_counter
    from pflow_structure.service.clients import answer_counter
    from pflow_structure.settings import Settings

    settings = settings or Settings.from_env()
    budget = answer_budget(max_tokens, settings)
    count = count or answer_counter(max_tokens, settings) or o200k_counter()  # a client's bytes and lines too
    found = jq_readout(
        execution_id, expression, offset=offset, limit=limit, char_offset=char_offset, settings=settings, cache=cache
    )
    note = JQ_RESULT_NOTE.format(count=found.results) if found.results > 1 else ""
    room = budget - (count(note) + 5 if note else 0)
    answer = answer_from_readout(found.readout, max(room, 1), Paging(execution_id, offset, limit, char_offset), count)
    value = as_jq_calls(answer.value, expression)
    if note:
        value[STREAM_KEY] = note
    return Answer(value, answer.found)


def as_jq_calls(answer: dict[str, Any], expression: str) -> dict[str, Any]:
    """``answer`` with each ``_more`` entry's calls reading on with ``jq`` instead of ``field_paths``
    (a call for another path is dropped), and a too-large dict told to narrow the expression."""
    from pflow_structure.render.budget import MORE_KEY

    for more in answer.get(MORE_KEY, {}).values():
        for word in ("next", "then"):
            call = more.pop(word, None)
            paths = (call or {}).get("field_paths") or [None]
            if call is not None and paths[0] in (expression, f"{expression}[*]"):
                rest = {name: number for name, number in call.items() if name not in ("execution_id", "field_paths")}
                more[word] = {"execution_id": call["execution_id"], "jq": expression, **rest}
        if "structure" in more:  # its paths, relative to the result: (EXPRESSION) | .title
            more["structure"] = {name.removeprefix(expression) or ".": info for name, info in more["structure"].items()}
            more["shown"] = (
                f"too large to show: its structure; narrow the expression, e.g. ({expression}) | keys, "
                f"or ({expression}) | .KEY"
            )
    return answer


def jq_text_answer(
    execution_id: str,
    expression: str,
    format_name: str,
    *,
    offset: int = 0,
    limit: int | None = None,
    char_offset: int = 0,
    max_tokens: int | None = None,
    style: str = "tool",
    settings: Settings | None = None,
) -> TextAnswer:
    """The value alone in ``format_name`` (``text``: compact JSON; ``json``: the answer dict), and notes:
    a stream, a miss's reason, and a ``# ...; read on: ...`` line per cut (``style`` "cli": the command)."""
    from pflow_structure.render.budget import MISSING_KEY
    from pflow_structure.render.output_text import format_json
    from pflow_structure.service.answers import TextAnswer
    from pflow_structure.settings import Settings

    settings = settings or Settings.from_env()
    answer = jq_answer(
        execution_id, expression, offset=offset, limit=limit, char_offset=char_offset, max_tokens=max_tokens,
        settings=settings,
    )  # fmt: skip
    value = answer.value
    notes = [f"note: {reason}" for reason in value.get(MISSING_KEY, {}).values()]
    if format_name == "json":
        return TextAnswer(format_json(value), notes, answer.found)
    notes += more_lines(value, style)
    missed = expression in value.get(MISSING_KEY, {})
    text = "" if missed or expression not in value else _rendered(value[expression], format_name, settings, notes)
    return TextAnswer(text, notes, answer.found)


def more_lines(value: dict[str, Any], style: str) -> list[str]:
    """A jq answer's notes as text lines: a stream, and each cut with the call that reads on."""
    from pflow_structure.render.budget import MORE_KEY
    from pflow_structure.service.answers import read_on

    lines = [f"# {value[STREAM_KEY]}"] if STREAM_KEY in value else []
    for more in value.get(MORE_KEY, {}).values():
        lines.append(f"# {more['shown']}{read_on(more, style)}")
        lines += [f"#   {name}: {compact(info)}" for name, info in more.get("structure", {}).items()]
    return lines


def _rendered(value: Any, format_name: str, settings: Settings, notes: list[str]) -> str:
    from pflow_structure.errors import NotRepresentable
    from pflow_structure.render.auto import render_named

    if format_name == "text" or not isinstance(value, (list, dict)) or not value:
        return compact(value)
    try:
        return render_named(value, format_name, operation="read-fields", failure_log=settings.failure_log)
    except NotRepresentable as exc:
        notes.append(f"note: the value cannot be shown as {format_name} ({exc}); shown as JSON")
        return compact(value)


def jq_fields_answer(
    described: dict[str, Any],
    expression: str,
    *,
    max_tokens: int | None = None,
    settings: Settings,
    cache: CacheBackend | None = None,
) -> dict[str, Any]:
    """A run's answer with ``jq``: ``{"execution_id", "node_type", "values": <jq_answer's dict>, "rest"}``,
    the shape of a ``fields`` answer (:func:`pflow_structure.service.answers.fields_answer`). A jq expression
    that fails while it runs answers as a path that misses: ``None``, and why under ``values._missing``."""
    from pflow_structure.errors import JqRunError
    from pflow_structure.render.budget import MISSING_KEY
    from pflow_structure.service.answers import answer_budget, o200k_counter
    from pflow_structure.service.clients import answer_counter
    from pflow_structure.service.field_answers import REST_LINE

    budget = answer_budget(max_tokens, settings)
    execution_id = described["execution_id"]
    head = {"execution_id": execution_id, "node_type": described["node_type"]}
    rest = REST_LINE.format(execution_id=execution_id)
    count = answer_counter(max_tokens, settings) or o200k_counter()  # the run's budget, as the client counts it
    room = max(budget - count(compact({**head, "rest": rest})) - 10, 1)
    try:
        values = jq_answer(execution_id, expression, max_tokens=room, settings=settings, cache=cache, count=count).value
    except JqRunError as exc:  # the node ran and its output is cached: answer the id with the reason
        values = {expression: None, MISSING_KEY: {expression: str(exc)}}
    return {**head, "values": values, "rest": rest}


def jq_fields_text(answer: dict[str, Any], expression: str) -> str:
    """A run's ``jq`` answer as the command line prints it: the value, its notes, the rest line."""
    from pflow_structure.render.budget import MISSING_KEY

    values = answer["values"]
    missing = values.get(MISSING_KEY, {})
    lines = [compact(values[expression])] if expression in values and expression not in missing else []
    lines += [f"# {reason}" for reason in missing.values()]
    lines += more_lines(values, "cli")
    execution_id = answer["execution_id"]
    lines.append(f"Cached as {execution_id}: pflow-structure read-fields {execution_id} PATH reads any other path.")
    return "\n".join(lines)
