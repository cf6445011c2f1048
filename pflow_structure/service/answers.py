"""The answers an agent gets for values: never larger than the answer budget, never a silent miss.

``read_fields_answer`` is ``read_fields`` as MCP and ``read-fields --json`` answer it: the values
(``{path: value}``, a ``None`` where a path finds nothing, as the spec says), plus

- ``_missing``: path -> why it found nothing, with the near paths ("Did you mean ...?");
- ``_more``: path -> what part is shown and ``next``, the exact arguments that read on
  (see :mod:`pflow_structure.render.budget`);
- ``_note``: one line when something was cut.

Those keys appear only when they have something to say.
"""

from __future__ import annotations

from pflow_structure.errors import ParameterError
from pflow_structure.records import NamedTuple
from pflow_structure.render.output_text import compact
from pflow_structure.service.clients import answer_counter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend
    from pflow_structure.render.budget import Fitted, Paging, TokenCounter
    from pflow_structure.service.reading import FieldReadout
    from pflow_structure.settings import Settings

# {budget}: render/limits.budget_words, the units the session counts in ("8,000 tokens", Codex's bytes and lines too)
CUT_NOTE = "Answer kept under {budget}: each _more entry gives the arguments (next) that read on."
MAX_RETRIES = 6


class Answer(NamedTuple):
    """An answer dict, and whether any path found a value (MCP sets isError when none did)."""

    value: dict[str, Any]
    found: bool


def answer_budget(max_tokens: int | None, settings: Settings) -> int:
    """The budget of one call: its ``max_tokens`` when given, else the setting."""
    if max_tokens is None:
        return settings.answer_budget
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ParameterError(f"max_tokens must be a whole number of at least 1, not {max_tokens!r}")
    return max_tokens


def read_fields_answer(
    execution_id: str,
    field_paths: Sequence[str],
    *,
    limit: int | None = None,
    offset: int = 0,
    char_offset: int = 0,
    max_tokens: int | None = None,
    names: str | None = None,
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> Answer:
    """The values at ``field_paths`` within the budget, with ``_missing`` and ``_more`` (module docstring);
    ``names`` ("template", "normalized"): each value of a wildcard or JSONPath path as ``{its path: value}``."""
    from pflow_structure.service.reading import read_fields_detailed
    from pflow_structure.settings import Settings

    settings = settings or Settings.from_env()
    budget = answer_budget(max_tokens, settings)
    readout = read_fields_detailed(
        execution_id,
        field_paths,
        limit=limit,
        offset=offset,
        settings=settings,
        cache=cache,
        char_offset=char_offset,
        names=names,
        most=most_items(budget),
    )
    count = answer_counter(max_tokens, settings)
    return answer_from_readout(readout, budget, paging_of(readout, offset, limit, char_offset), count)


def most_items(budget: int) -> int:
    """The most items of one path an answer of ``budget`` can show: each costs at least two (itself and
    a comma, however counted), so a read need not resolve more (render/budget.py pages them)."""
    return budget // 2 + 1


def paging_of(readout: FieldReadout, offset: int, limit: int | None, char_offset: int) -> Paging:
    from pflow_structure.render.budget import Paging

    return Paging(readout.execution_id, offset, limit, char_offset, readout.names)


def answer_from_readout(
    readout: FieldReadout, budget: int, paging: Paging, count: TokenCounter | None = None, *, with_paths: bool = False
) -> Answer:
    """A readout as the answer dict, fitted to ``budget`` tokens (as ``count`` counts them, o200k by default);
    ``with_paths``: with ``_paths`` (read-fields --json)."""
    from pflow_structure.render.budget import MISSING_KEY, MORE_KEY, PATHS_KEY, measure, read_stopped, shown_paths

    found = any(path not in readout.errors for path in readout.values)
    missing: dict[str, Any] = {MISSING_KEY: dict(readout.errors)} if readout.errors else {}
    past = _past_the_end(readout, paging.offset)
    if past:  # an empty page says why, as a miss does
        missing[MORE_KEY] = past
    if with_paths and readout.names is None and readout.totals:
        missing[PATHS_KEY] = shown_paths(readout.values, readout.where, readout.totals)
    whole = {**readout.values, **missing}
    stopped = any(read_stopped(total, paging) for total in readout.totals.values())  # paged below, always
    if not stopped and count is None and len(compact(whole).encode("utf-8")) <= budget:  # a token is >= a byte
        return Answer(whole, found)
    count = count or o200k_counter()
    if not stopped and measure(count, compact(whole)) <= budget:  # a huge value is estimated: only "over" matters
        return Answer(whole, found)
    least = {key: value for key, value in missing.items() if key != PATHS_KEY}
    from pflow_structure.render.limits import budget_words

    note = CUT_NOTE.format(budget=budget_words(budget, count))
    room = budget - count(compact(least)) - count(note) - 10
    if PATHS_KEY in missing:  # the paths grow with the values shown: their share of the room, as on the whole
        values_cost = measure(count, compact(readout.values))
        room = room * values_cost // (values_cost + count(compact(missing[PATHS_KEY])))
    for _ in range(MAX_RETRIES):
        fitted = fit_readout(readout, max(room, 0), paging, count)
        answer = _assemble(readout, fitted, missing, note)
        if PATHS_KEY in missing:  # the paths of the values this page shows
            answer[PATHS_KEY] = shown_paths(answer, readout.where, readout.totals)
        over = count(compact(answer)) - budget
        if over <= 0:
            return Answer(answer, found)
        room -= over + 5  # what the _more entries took past the room, and a margin
    # The least it can say: each part as small as it goes, no _note (the paths alone may be long), no _paths.
    return Answer(_assemble(readout, fit_readout(readout, 0, paging, count), least, ""), found)


def _assemble(readout: FieldReadout, fitted: Fitted, missing: dict[str, Any], note: str) -> dict[str, Any]:
    from pflow_structure.render.budget import MORE_KEY, NOTE_KEY

    answer: dict[str, Any] = {}
    for path in readout.values:
        if path in fitted.values or path in readout.errors:
            answer[path] = fitted.values.get(path)
    answer.update(missing)
    if fitted.more:
        answer[MORE_KEY] = {**answer.get(MORE_KEY, {}), **fitted.more}
        if note:
            answer[NOTE_KEY] = note
    return answer


def _past_the_end(readout: FieldReadout, offset: int) -> dict[str, dict[str, str]]:
    """``_more`` entries for the list paths read from an offset at or past their end (an empty page)."""
    if not offset:
        return {}
    from pflow_structure.render.fields_text import past_the_end

    return {
        path: {"shown": past_the_end(offset, total)}
        for path, total in readout.totals.items()
        if offset >= total and readout.values.get(path) == []
    }


def fit_readout(readout: FieldReadout, room: int, paging: Paging, count: TokenCounter | None = None) -> Fitted:
    """The values that found something, cut to ``room`` tokens."""
    from pflow_structure.render.budget import fit_values

    found = {path: value for path, value in readout.values.items() if path not in readout.errors}
    return fit_values(found, room, count or o200k_counter(), paging, totals=readout.totals, where=readout.where)


def o200k_counter() -> Any:
    """The o200k token counter (loaded on first use)."""
    from pflow_structure.render.tokens import count_tokens

    return count_tokens


def read_fields_text_answer(
    readout: FieldReadout,
    format_name: str,
    *,
    budget: int,
    offset: int = 0,
    limit: int | None = None,
    char_offset: int = 0,
    max_items: int | None = None,
    style: str = "tool",
    settings: Settings,
    count: TokenCounter | None = None,
) -> tuple[str, list[str]]:
    """``read_fields`` in a text format (``readout_text``) within ``budget`` tokens: ``(text, notes)``.

    ``offset``, ``limit`` and ``char_offset`` are the arguments that read ``readout``. Past the budget
    the values are cut as the JSON answer cuts them, and a ``# path: ...; read on:`` line per cut names
    the call that reads on (``style`` "tool": the tool's arguments as JSON; "cli": the ``read-fields``
    command line). Notes (to stderr on the command line) count too.
    """
    hint = _hint_word(style)
    text, notes = readout_text(
        readout, format_name, offset=offset, max_items=max_items, offset_hint=hint, settings=settings
    )
    if count is None and len("\n".join([text, *notes]).encode("utf-8")) <= budget:
        return text, notes  # the common case: the budget module (paging, cutting) is not even loaded
    from pflow_structure.render.budget import measure

    paging = paging_of(readout, offset, limit, char_offset)
    count = count or o200k_counter()
    used = measure(count, "\n".join([text, *notes]))  # a huge text is estimated: only "over" matters
    room = budget
    for _ in range(MAX_RETRIES):
        if used <= budget:
            break
        fitted = fit_readout(readout, max(room - count("\n".join(notes)) - 30, 0), paging, count)
        text, _ = _fitted_text(readout, fitted, format_name, paging, max_items, style, settings)
        used = count("\n".join([text, *notes]))
        room -= used - budget + 20 * len(fitted.more)
    return text, notes


def _hint_word(style: str) -> str:
    return "--offset" if style == "cli" else "offset"


def _fitted_text(
    readout: FieldReadout,
    fitted: Fitted,
    format_name: str,
    paging: Paging,
    max_items: int | None,
    style: str,
    settings: Settings,
) -> tuple[str, list[str]]:

    values = {
        path: fitted.values.get(path) for path in readout.values if path in fitted.values or path in readout.errors
    }
    cut = readout._replace(values=values)
    text, notes = readout_text(
        cut, format_name, offset=paging.offset, max_items=max_items, offset_hint=_hint_word(style), settings=settings
    )
    lines = [f"# {path}: {more['shown']}{read_on(more, style)}" for path, more in fitted.more.items()]
    structures = [
        f"#   {name}: {compact(info)}"
        for more in fitted.more.values()
        for name, info in more.get("structure", {}).items()
    ]
    return "\n".join(line for line in [text, *lines, *structures] if line), notes


def read_on(more: dict[str, Any], style: str) -> str:
    """The "; read on: ..." (and "; then: ...") tail of a cut's line."""
    parts = [f"; read on: {next_call(more['next'], style)}"] if "next" in more else []
    parts += [f"; then: {next_call(more['then'], style)}"] if "then" in more else []
    return "".join(parts)


def next_call(arguments: dict[str, Any], style: str) -> str:
    """The call that reads on: the tool's arguments as JSON, or the ``read-fields`` command line (paths or
    ``--jq``)."""
    if style != "cli":
        return compact(arguments)
    import shlex

    words = ["pflow-structure", "read-fields", arguments["execution_id"], *arguments.get("field_paths", ())]
    if "jq" in arguments:  # a jq read reads on with its expression (service/querying.py)
        words += ["--jq", arguments["jq"]]
    for name in ("offset", "limit", "char_offset", "names"):
        if name in arguments:
            words += [f"--{name.replace('_', '-')}", str(arguments[name])]
    return shlex.join(words)


class TextAnswer(NamedTuple):
    """``read_fields`` in a text format: the text, notes for stderr, and whether any path found a value."""

    text: str
    notes: list[str]
    found: bool


def read_fields_text_call(
    execution_id: str,
    field_paths: Sequence[str],
    format_name: str,
    *,
    limit: int | None = None,
    offset: int = 0,
    char_offset: int = 0,
    max_tokens: int | None = None,
    max_items: int | None = None,
    style: str = "tool",
    names: str | None = None,
    settings: Settings | None = None,
) -> TextAnswer:
    """Read and answer in ``format_name`` (``json`` too, as :func:`read_fields_answer` with notes) within the budget."""
    from pflow_structure.render.output_text import format_json
    from pflow_structure.service.reading import read_fields_detailed
    from pflow_structure.settings import Settings

    _check_read_format(format_name)
    settings = settings or Settings.from_env()
    budget = answer_budget(max_tokens, settings)
    readout = read_fields_detailed(
        execution_id,
        field_paths,
        limit=limit,
        offset=offset,
        settings=settings,
        char_offset=char_offset,
        names=names,
        most=most_items(budget),
    )
    found = any(path not in readout.errors for path in readout.values)
    count = answer_counter(max_tokens, settings)
    if format_name == "json":
        paging = paging_of(readout, offset, limit, char_offset)
        answer = answer_from_readout(readout, budget, paging, count, with_paths=style == "cli")
        return TextAnswer(format_json(answer.value), [f"note: {reason}" for reason in readout.errors.values()], found)
    text, notes = read_fields_text_answer(
        readout,
        format_name,
        budget=budget,
        offset=offset,
        limit=limit,
        char_offset=char_offset,
        max_items=max_items,
        style=style,
        settings=settings,
        count=count,
    )
    return TextAnswer(text, notes, found)


def _check_read_format(format_name: str) -> None:
    from pflow_structure.render.fields_text import READ_FORMATS

    if format_name not in READ_FORMATS:
        raise ParameterError(f"format must be one of {', '.join(READ_FORMATS)}, not {format_name!r}")


def readout_text(
    readout: FieldReadout,
    format_name: str = "text",
    *,
    offset: int = 0,
    max_items: int | None = None,
    offset_hint: str = "--offset",
    settings: Settings | None = None,
) -> tuple[str, list[str]]:
    """What :func:`read_fields_text` prints for a readout already read: ``(text, notes)``."""
    from pflow_structure.render.output_text import format_json
    from pflow_structure.settings import Settings

    _check_read_format(format_name)
    settings = settings or Settings.from_env()
    if format_name == "json":
        return format_json(readout.values), [f"note: {reason}" for reason in readout.errors.values()]
    from pflow_structure.render.fields_text import render_fields_text

    notes: list[str] = []
    render = None if format_name == "text" else _value_renderer(format_name, settings, notes)
    text = render_fields_text(
        readout.values,
        readout.errors,
        readout.totals,
        offset=offset,
        max_items=max_items,
        missing=readout.missing,
        render=render,
        offset_hint=offset_hint,
        named=readout.names is not None,
        page_counts=readout.page_counts,
    )
    return text, notes


def _value_renderer(format_name: str, settings: Settings, notes: list[str]) -> Any:
    """value -> text in ``format_name``; a value that does not fit (a table of nested or uneven values)
    is shown in the format that fits (``auto``'s choice), and one note says so for the whole read."""
    from pflow_structure.errors import NotRepresentable
    from pflow_structure.render.auto import render_named

    def render(value: Any) -> str:
        log = settings.failure_log
        try:
            return render_named(value, format_name, operation="read-fields", failure_log=log)
        except NotRepresentable:
            note = f"note: values that {format_name} cannot hold are shown in the format that fits (--format auto)"
            if note not in notes:
                notes.append(note)
            return render_named(value, "auto", operation="read-fields", failure_log=log)

    return render


STRUCTURE_CUT = "{count} more paths not shown to stay under {budget}: read a parent path, or raise max_tokens"


def structure_within_budget(
    described: dict[str, Any], budget: int, count: TokenCounter | None = None
) -> dict[str, Any]:
    """A structure answer (``registry_run``'s, ``edit_fields``') of at most ``budget`` tokens (as ``count``
    counts them, o200k by default): past it, the last paths are left out and a warning says how many;
    every path shown still reads back."""
    if count is None and len(compact(described).encode("utf-8")) <= budget:
        return described
    from pflow_structure.render.limits import budget_words

    count = count or o200k_counter()
    words = budget_words(budget, count)  # the units the session counts in
    structure = described.get("structure") or {}
    rest = {key: value for key, value in described.items() if key != "structure"}
    used = count(compact(rest)) + count(STRUCTURE_CUT.format(count=len(structure), budget=words)) + 10
    kept: dict[str, Any] = {}
    for path, info in structure.items():
        used += count(compact({path: info}))
        if used > budget:
            break
        kept[path] = info
    if len(kept) == len(structure):
        return described
    note = STRUCTURE_CUT.format(count=len(structure) - len(kept), budget=words)
    return {**described, "structure": kept, "warnings": [*described.get("warnings", []), note]}
