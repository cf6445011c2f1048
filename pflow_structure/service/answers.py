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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pflow_structure.errors import ParameterError
from pflow_structure.render.budget import compact

if TYPE_CHECKING:
    from pflow_structure.cache.backend import CacheBackend
    from pflow_structure.render.budget import Fitted, Paging
    from pflow_structure.service import FieldReadout
    from pflow_structure.settings import Settings

CUT_NOTE = "Answer kept under {budget:,} tokens: each _more entry gives the arguments (next) that read on."
MAX_RETRIES = 4


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
    settings: Settings | None = None,
    cache: CacheBackend | None = None,
) -> Answer:
    """The values at ``field_paths`` within the budget, with ``_missing`` and ``_more`` (module docstring)."""
    from pflow_structure.service import read_fields_detailed
    from pflow_structure.settings import Settings

    settings = settings or Settings.from_env()
    budget = answer_budget(max_tokens, settings)
    readout = read_fields_detailed(
        execution_id, field_paths, limit=limit, offset=offset, settings=settings, cache=cache, char_offset=char_offset
    )
    return answer_from_readout(readout, budget, paging_of(readout, offset, limit, char_offset))


def paging_of(readout: FieldReadout, offset: int, limit: int | None, char_offset: int) -> Paging:
    from pflow_structure.render.budget import Paging

    return Paging(readout.execution_id, offset, limit, char_offset)


def answer_from_readout(readout: FieldReadout, budget: int, paging: Paging) -> Answer:
    """A readout as the answer dict, fitted to ``budget`` tokens."""
    from pflow_structure.render.budget import MISSING_KEY

    found = any(path not in readout.errors for path in readout.values)
    missing = {MISSING_KEY: dict(readout.errors)} if readout.errors else {}
    whole = {**readout.values, **missing}
    if len(compact(whole).encode("utf-8")) <= budget:  # a token is at least one byte: no count needed
        return Answer(whole, found)
    count = _counter()
    if count(compact(whole)) <= budget:
        return Answer(whole, found)
    room = budget - count(compact(missing)) - count(CUT_NOTE.format(budget=budget)) - 10
    for _ in range(MAX_RETRIES):
        fitted = fit_readout(readout, max(room, 0), paging)
        answer = _assemble(readout, fitted, missing, budget)
        over = count(compact(answer)) - budget
        if over <= 0:
            return Answer(answer, found)
        room -= over + 20 * len(fitted.more)  # what the _more entries took, and a margin
    return Answer(_assemble(readout, fit_readout(readout, 0, paging), missing, budget), found)


def _assemble(readout: FieldReadout, fitted: Fitted, missing: dict[str, Any], budget: int) -> dict[str, Any]:
    from pflow_structure.render.budget import MORE_KEY, NOTE_KEY

    answer: dict[str, Any] = {}
    for path in readout.values:
        if path in fitted.values or path in readout.errors:
            answer[path] = fitted.values.get(path)
    answer.update(missing)
    if fitted.more:
        answer[MORE_KEY] = fitted.more
        answer[NOTE_KEY] = CUT_NOTE.format(budget=budget)
    return answer


def fit_readout(readout: FieldReadout, room: int, paging: Paging) -> Fitted:
    """The values that found something, cut to ``room`` tokens."""
    from pflow_structure.render.budget import fit_values

    found = {path: value for path, value in readout.values.items() if path not in readout.errors}
    return fit_values(found, room, _counter(), paging, totals=readout.totals, where=readout.where)


def _counter() -> Any:
    from pflow_structure.render.tokens import count_tokens

    return count_tokens


def read_fields_text_answer(
    readout: FieldReadout,
    format_name: str,
    *,
    budget: int,
    paging: Paging,
    max_items: int | None = None,
    style: str = "tool",
    settings: Settings,
) -> tuple[str, list[str]]:
    """``read_fields`` in a text format (``readout_text``) within ``budget`` tokens: ``(text, notes)``.

    Past the budget the values are cut as the JSON answer cuts them, and a ``# path: ...; read on:``
    line per cut names the call that reads on (``style`` "tool": the tool's arguments as JSON;
    "cli": the ``read-fields`` command line). Notes (to stderr on the command line) count too.
    """
    from pflow_structure.service import readout_text

    hint = _hint_word(style)
    text, notes = readout_text(
        readout, format_name, offset=paging.offset, max_items=max_items, offset_hint=hint, settings=settings
    )
    if len("\n".join([text, *notes]).encode("utf-8")) <= budget:
        return text, notes
    count = _counter()
    used = count("\n".join([text, *notes]))
    room = budget
    for _ in range(MAX_RETRIES):
        if used <= budget:
            break
        fitted = fit_readout(readout, max(room - count("\n".join(notes)) - 30, 0), paging)
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
    from pflow_structure.service import FieldReadout, readout_text

    values = {
        path: fitted.values.get(path) for path in readout.values if path in fitted.values or path in readout.errors
    }
    cut = FieldReadout(readout.execution_id, values, readout.errors, readout.totals, readout.missing, readout.where)
    text, notes = readout_text(
        cut, format_name, offset=paging.offset, max_items=max_items, offset_hint=_hint_word(style), settings=settings
    )
    lines = [f"# {path}: {more['shown']}{_read_on(more, style)}" for path, more in fitted.more.items()]
    structures = [
        f"#   {name}: {compact(info)}"
        for more in fitted.more.values()
        for name, info in more.get("structure", {}).items()
    ]
    return "\n".join(line for line in [text, *lines, *structures] if line), notes


def _read_on(more: dict[str, Any], style: str) -> str:
    parts = [f"; read on: {next_call(more['next'], style)}"] if "next" in more else []
    parts += [f"; then: {next_call(more['then'], style)}"] if "then" in more else []
    return "".join(parts)


def next_call(arguments: dict[str, Any], style: str) -> str:
    """The call that reads on: the tool's arguments as JSON, or the ``read-fields`` command line."""
    if style != "cli":
        return compact(arguments)
    import shlex

    words = ["pflow-structure", "read-fields", arguments["execution_id"], *arguments["field_paths"]]
    for name in ("offset", "limit", "char_offset"):
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
    settings: Settings | None = None,
) -> TextAnswer:
    """Read and answer in ``format_name`` (``json`` too, as :func:`read_fields_answer` with notes) within the budget."""
    from pflow_structure.render.output_text import format_json
    from pflow_structure.service import _check_read_format, read_fields_detailed
    from pflow_structure.settings import Settings

    _check_read_format(format_name)
    settings = settings or Settings.from_env()
    budget = answer_budget(max_tokens, settings)
    readout = read_fields_detailed(
        execution_id, field_paths, limit=limit, offset=offset, settings=settings, char_offset=char_offset
    )
    paging = paging_of(readout, offset, limit, char_offset)
    found = any(path not in readout.errors for path in readout.values)
    if format_name == "json":
        answer = answer_from_readout(readout, budget, paging)
        return TextAnswer(format_json(answer.value), [f"note: {reason}" for reason in readout.errors.values()], found)
    text, notes = read_fields_text_answer(
        readout, format_name, budget=budget, paging=paging, max_items=max_items, style=style, settings=settings
    )
    return TextAnswer(text, notes, found)
