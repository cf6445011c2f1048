"""Answers the size of the question (issue 35): values first when the agent says what it wants, and
the data itself when it is smaller than its own structure.

- :func:`want_answer`: with ``want``, the values of the best matches under their read paths
  (``result[*].user.login``: one row per record, its handle first), within the want budget (default
  :data:`~pflow_structure.settings.DEFAULT_WANT_BUDGET` tokens, ``max_tokens`` per call), paged with
  the exact call that reads on; then a map of the rest (:mod:`pflow_structure.render.want_text`).
  The dict keeps ``execution_id`` and ``node_type``, gains ``values`` (path -> value shown) and
  ``_more`` (as ``read_fields``), and its ``structure`` holds only what the map names.
- :func:`data_answer`: an output whose compact rendering (what ``format``'s picker chooses) costs no
  more than the view the agent would get comes back as ``data``, with the id and a line on reading
  it or passing it on by reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.render.output_text import compact, compact_longer_than
from pflow_structure.service.want_choice import chosen_paths, holds, row_filter, sort_order
from pflow_structure.settings import Settings

CHARS_PER_TOKEN = 16  # far above any rendering's characters per token (compact JSON has about 3)
# Chosen on the tuned-on families only (benchmarks/want_eval.py --answers).
MAX_ROWS = None  # the rows of a list: as many as fit the want budget (a cap of 20 cost a read on 30-item lists)
READ_ALLOWANCE = 100  # data up to this many tokens over a want answer: about one read it saves
# One line, about 30 tokens: a data answer costs at most the compact rendering and this (issue 35).
DATA_LINE = 'Cached as {execution_id}{root}: read_fields reads a part, "${{ID:PATH}}" passes it on unread.'
DATA_LINE_CLI = 'Cached as {execution_id}{root}; read-fields ID PATH reads a part, "${{ID:PATH}}" passes it on unread.'
ROOT = " (paths start at result)"  # a node's one output shown bare: the paths to cite begin with its name


def _matched(structure: Mapping[str, Mapping[str, Any]], wanted: Sequence[str], want: Any) -> list[str]:
    """Every field a word of ``want`` names, ``wanted`` first, then by score: the map lists them by name."""
    from pflow_structure.filtering import fields_of
    from pflow_structure.filtering.tree import key_segments
    from pflow_structure.filtering.want import term_matches, want_terms

    terms = want_terms(str(want or ""))
    best = {
        path: max((term_matches(term, key_segments(path)) for term in terms), default=0.0)
        for path in fields_of(structure)
    }
    ranked = sorted((path for path, score in best.items() if score >= NAMED_MATCH), key=lambda path: -best[path])
    return list(dict.fromkeys([*wanted, *ranked]))


NAMED_MATCH = 0.8  # a word names a field: the same stem or one the start of the other (not a meaning)


def want_answer(
    described: Mapping[str, Any],
    outputs: Any,
    structure: Mapping[str, Mapping[str, Any]],
    *,
    budget: int,
    style: str = "tool",
    form: str = "text",
) -> dict[str, Any]:
    """The want answer dict for ``described`` (``registry_run``'s view with ``wanted``), from ``outputs``
    (the encoded value) and ``structure`` (the whole one), within ``budget`` tokens of the ``form`` the
    agent reads: ``"text"`` (:func:`want_text`: the CLI, the proxy) or ``"json"`` (the dict's compact
    JSON: the MCP server's ``registry_run``)."""
    from pflow_structure.filtering import fields_of
    from pflow_structure.paths import parse_path
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.render.want_cells import shown_values
    from pflow_structure.render.want_text import MAP_SHARE, MAP_TOKENS, WantMap, want_map
    from pflow_structure.render.want_values import picked_items, read_path, want_values
    from pflow_structure.service.answers import next_call

    execution_id = described["execution_id"]
    wanted = [path for path in described.get("wanted") or () if path in structure]
    shown = chosen_paths(structure, wanted, str(described.get("want") or ""), outputs)
    order = sort_order(structure, shown, str(described.get("want") or ""))
    if order is not None and order.path not in shown:
        shown.append(order.path)
    where = row_filter(outputs, structure, shown, str(described.get("want") or "")) if order is None else None
    # the rows a value word picks, found once (each build below would walk the whole list again)
    picked = picked_items(outputs, where.path, lambda cell: holds(cell, where.words)) if where is not None else None
    matched = _matched(structure, wanted, described.get("want"))
    map_tokens = min(MAP_TOKENS, budget // MAP_SHARE)  # a small budget goes to the values first
    mapped = want_map(structure, fields_of(structure), shown, matched, count_tokens, map_tokens)
    room = budget - count_tokens(mapped.text) - 60  # the id, the head line and the structure command

    def call(arguments: dict[str, Any]) -> str:
        text = next_call(arguments, style)
        return text if style == "cli" else f"read_fields {text}"

    def build(room: int) -> dict[str, Any]:
        found = want_values(
            outputs,
            shown,
            execution_id=execution_id,
            budget=room,
            count=count_tokens,
            call=call,
            rows=MAX_ROWS,
            order=order,
            where=(where.path, picked) if where is not None and picked is not None else None,
        )
        values, cut = found.values, None
        if form == "json":  # the dict holds each cell as the text shows it: a long one cut, not whole
            values, cut = shown_values(found.values, found.more, found.alike)
        answer: dict[str, Any] = {
            "execution_id": execution_id,
            "node_type": described["node_type"],
            "want": described.get("want"),
            **_page(described),
            "values": values,
        }
        if cut:
            answer["cut"] = cut
        if found.more:
            answer["_more"] = found.more
        if found.alike:
            answer["alike"] = found.alike
        answer.update(
            {
                "map": mapped.text,
                "structure": mapped.structure,
                "field_count": len(shown) + len(mapped.structure),
                "original_field_count": described.get("original_field_count", len(structure)),
                "filtered": True,
                "filter": "want",
                "wanted": wanted,
            }
        )
        if form == "json":  # the map names what ``structure`` holds; ``wanted``: the matches neither shows
            named = answer.pop("structure")
            answer["wanted"] = [
                path for path in wanted if path not in named and read_path(list(parse_path(path))) not in values
            ]
            if not answer["wanted"]:
                del answer["wanted"]
        if described.get("warnings"):
            answer["warnings"] = list(described["warnings"])
        return answer

    def read(answer: dict[str, Any]) -> str:
        from pflow_structure.render.output_text import format_json

        # the text as printed: the command line ends it with a newline, which can be a token of its own
        return format_json(answer, compact=True) if form == "json" else want_text(answer, style) + "\n"

    def fit(room: int) -> dict[str, Any]:
        answer = build(room)
        for _ in range(FIT_TRIES):  # the rows fill the room: the lines around them may take a few tokens more
            tokens = count_tokens(read(answer))
            if tokens <= budget or room <= 0:
                break
            # the rows' share of what is over, at least: the lines around them stay
            room = min(room - (tokens - budget) - 10, room * budget // tokens)
            answer = build(room)
        return answer

    answer = fit(room)
    if mapped.text and count_tokens(read(answer)) > budget:  # no room for the rows and the map: the rows stay
        room += count_tokens(mapped.text)
        mapped = WantMap("", {})
        answer = fit(room)
    return answer


FIT_TRIES = 8  # each try shrinks the rows' room by what is over and 10 more, or in proportion when that is more


def want_text(
    answer: Mapping[str, Any], style: str = "cli", structure_call: str | None = None, read_tool: str = "read_fields"
) -> str:
    """The text of :func:`want_answer`'s dict; ``structure_call`` says how to get the full structure."""
    from pflow_structure.render.want_text import want_answer_text
    from pflow_structure.service.answers import next_call

    execution_id = answer["execution_id"]
    if structure_call is None:
        structure_call = (
            f"pflow-structure structure {execution_id}"
            if style == "cli"
            else "registry_run again with structure=true (runs the node again)"
        )

    def call(arguments: dict[str, Any]) -> str:
        text = next_call(arguments, style)
        return text if style == "cli" else f"{read_tool} {text}"

    return "\n".join([*page_line(answer), want_answer_text(answer, call, structure_call)])


def _page(described: Mapping[str, Any]) -> dict[str, Any]:
    """``page`` (the API's paging, structure/paging.py) when the view has it: an answer from page 1 of 5
    says so at the top, whatever its form."""
    return {"page": described["page"]} if described.get("page") else {}


def page_line(answer: Mapping[str, Any]) -> list[str]:
    """The ``Page:`` line of an answer that has ``page``, as the first line of its text."""
    return [f"Page: {answer['page']}"] if answer.get("page") else []


def data_value(outputs: Any) -> Any:
    """What a data answer shows: the one ``result`` a node wrote, else all its outputs."""
    if isinstance(outputs, dict) and list(outputs) == ["result"]:
        return outputs["result"]
    return outputs


def rendered_data(value: Any, settings: Settings, operation: str) -> tuple[str, int]:
    """(the compact rendering of ``value``, its tokens): what ``format``'s picker chooses."""
    from pflow_structure.render.auto import render_auto

    rendered = render_auto(value, operation=operation, failure_log=settings.failure_log)
    return rendered.text, rendered.tokens


def data_answer(described: Mapping[str, Any], outputs: Any, style: str = "tool", form: str = "text") -> dict[str, Any]:
    """The answer of a small output: ``execution_id``, ``node_type``, ``data`` (the value), ``rest`` (read as
    ``form``: in the dict's JSON the id is its own key, and ``rest`` does not say it again)."""
    line = DATA_LINE_CLI if style == "cli" else DATA_LINE
    execution_id = described["execution_id"]
    if form == "json":
        line = line.replace("Cached as {execution_id}", "Cached")
    answer = {
        "execution_id": execution_id,
        "node_type": described["node_type"],
        **_page(described),
        "data": data_value(outputs),
        "rest": line.format(execution_id=execution_id, root=ROOT if data_value(outputs) is not outputs else ""),
    }
    if described.get("warnings"):
        answer["warnings"] = list(described["warnings"])
    return answer


def view_tokens(view: Mapping[str, Any], *, bytes_only: bool = False, form: str = "text") -> int:
    """The tokens of the view an agent would get instead of the data (its CLI text, the smaller form; a
    want answer read as ``form``: its text, or ``"json"`` the dict's compact JSON); ``bytes_only``: its
    UTF-8 bytes instead, which no count of tokens exceeds."""
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.render.tokens import count_tokens

    real = str(view.get("execution_id") or SAME_ID)

    # The id counted as one fixed id of its shape: its random hex takes 3 to 6 tokens, and the choice
    # between data and view must not turn on it (it flipped a few answers between two runs of
    # benchmarks/want_eval.py --answers).
    def count(text: str) -> int:
        text = text.replace(real, SAME_ID)
        return _utf8_bytes(text) if bytes_only else count_tokens(text)

    if "values" in view:
        return count(compact(view) if form == "json" else want_text(view))
    return min(count(render_structure_text(view)), count(compact(view)))


SAME_ID = "exec-1763463202-0cd0c8fe"


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def sized_answer(
    described: Mapping[str, Any],
    outputs: Any,
    structure: Mapping[str, Mapping[str, Any]],
    *,
    settings: Settings,
    want_budget: int | None = None,
    force_structure: bool = False,
    style: str = "tool",
    form: str = "text",
) -> dict[str, Any] | None:
    """The answer the size of the question, or None for the structure view as it is: a want answer
    when ``described`` has ``wanted`` (and not ``force_structure``), and the data when its compact
    rendering costs no more than that view."""
    if force_structure:
        return None
    view: Mapping[str, Any] = described
    if described.get("wanted") is not None:
        budget = want_budget if want_budget is not None else settings.want_budget
        view = want_answer(described, outputs, structure, budget=budget, style=style, form=form)
    allowance = READ_ALLOWANCE if view is not described else 0
    # An o200k token is at least one byte: data this much longer than the view's bytes cannot come back under
    # its tokens, and they are not counted (the vocabulary alone takes a quarter of a second to load).
    if compact_longer_than(
        data_value(outputs), CHARS_PER_TOKEN * (view_tokens(view, bytes_only=True, form=form) + allowance)
    ):
        return dict(view) if view is not described else None
    limit = view_tokens(view, form=form) + allowance
    # Compact JSON over this many characters a token cannot come back under the view: not rendered.
    if not compact_longer_than(data_value(outputs), CHARS_PER_TOKEN * limit):
        if form == "json":  # the dict's reader gets the data as JSON, not as format's pick
            from pflow_structure.render.output_text import format_json
            from pflow_structure.render.tokens import count_tokens

            tokens = count_tokens(format_json(data_value(outputs), compact=True))
        else:
            _, tokens = rendered_data(data_value(outputs), settings, str(described.get("node_type")))
        if tokens <= limit:
            return data_answer(described, outputs, style, form)
    return dict(view) if view is not described else None


def answer_text(answer: Mapping[str, Any], settings: Settings, style: str = "cli") -> str:
    """A want answer or a data answer as the command line prints it."""
    if "data" not in answer:
        return want_text(answer, style)
    text, _ = rendered_data(answer["data"], settings, str(answer.get("node_type")))
    warnings = [f"Warning: {warning}" for warning in answer.get("warnings", [])]
    return "\n".join([*page_line(answer), text, *warnings, answer["rest"]])
