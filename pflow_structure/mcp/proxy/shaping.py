"""What the proxy does to one downstream tool result, on plain dicts (no SDK types here).

A result is the JSON form of a ``CallToolResult`` (``content``, ``structuredContent``,
``isError``). :func:`shape_result` returns one of three answers:

- ``passed``: the result unchanged (an error, non-text content, text that is not JSON and
  fits the budget, or anything we could not handle);
- ``compacted``: small enough to show (at most ``budget`` tokens), with its JSON text
  re-encoded compactly because that is smaller;
- ``formatted``: the same, in a compact format (a TOON table for a list of flat records, an
  outline for a tree of records) chosen by ``render`` because it is smaller still and reads
  back as the very same value;
- ``cached``: larger than the budget; the value is stored in the execution cache and the
  answer is text (:mod:`pflow_structure.mcp.proxy.answer_text`): the execution id, the structure as
  an indented tree and a one-line hint on reading fields, with no structuredContent.

Tokens are counted as the agent would see them: every text block, plus ``structuredContent``
unless it duplicates the text (equal to the parsed text, or a one-key wrapper around it, as
server-filesystem's ``{"content": text}``), in which case it is counted once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pflow_structure.mcp.proxy.answer_text import cached_text, sized_text
from pflow_structure.mcp.proxy.result_text import (
    JSON_START,
    MalformedJSONError,
    TokenCounter,
    compact_json,
    duplicates_text,
    is_text_lines,
    parse_text,
    payload,
    strip_whitespace,
    surely_json,
    visible_tokens,
)
from pflow_structure.mcp.proxy.spill import HEAD_CHARS, SpilledText, plain_result

__all__ = [  # a result's text is read in result_text.py; its names stay importable from here
    "DEFAULT_BUDGET",
    "EXACT_COUNT_CHARS",
    "WANT_ARGUMENT",
    "WANT_DESCRIPTION",
    "WANT_PREFIXED",
    "MalformedJSONError",
    "Shaped",
    "bounded",
    "duplicates_text",
    "is_text_lines",
    "parse_text",
    "payload",
    "shape_and_store",
    "shape_result",
    "strip_whitespace",
    "tool_schemas",
    "visible_tokens",
]

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

# The inline threshold (the proxy's --budget): a result of at most this many tokens is shown as it is,
# a larger one is cached and answered with its structure. Not the answer budget (settings.answer_budget,
# 8,000 by default), which bounds every answer; the proxy shows inline at most the smaller of the two.
DEFAULT_BUDGET = 1000

Store = Callable[[str, dict[str, Any], Any], dict[str, Any]]
# value -> (text, format name): render_auto, which returns compact JSON when nothing beats it.
Renderer = Callable[[Any], tuple[str, str]]


class Shaped(NamedTuple):
    """The answer for the agent, how it was made, and the token counts before and after."""

    result: dict[str, Any]
    kind: str  # "passed", "compacted", "formatted" or "cached" (the proxy adds "unchanged", "changed", "fields")
    tokens_in: int
    tokens_out: int
    execution_id: str | None = None  # where a cached result went


def _plain_note(result: dict[str, Any], count: TokenCounter, budget: int) -> str | None:
    """The text of a result whose data came from structuredContent, when it is short plain text."""
    content = result.get("content", [])
    structured = result.get("structuredContent")
    if len(content) != 1 or structured is None:
        return None
    text = content[0].get("text", "")
    if parse_text(text)[0] or duplicates_text(structured, [text], [text]) or count(text) > budget // 4:
        return None
    return str(text)


def _formatted(
    compact: dict[str, Any], value: Any, render: Renderer | None, count: TokenCounter
) -> tuple[dict[str, Any], int] | None:
    """``compact`` with its text in a smaller format, and its visible tokens; None when there is none.

    Only for text that our JSON writes back character for character: a number written 19.90
    or an escape the server chose would otherwise change on the way to the agent.
    """
    block = compact["content"][0]
    if render is None or compact_json(value) != block["text"]:
        return None
    text, name = render(value)
    if name == "json":
        return None
    shaped = {**compact, "content": [{**block, "text": text}]}
    return shaped, visible_tokens(shaped, count)


def _paged(
    shaped: Shaped, value: Any, arguments: Mapping[str, Any], count: TokenCounter, cursor_argument: str = ""
) -> Shaped:
    """A data answer we rewrote, with the API's paging (structure/paging.py) said too: first line of a
    text in our format, a text block after JSON text (which stays JSON for a client that parses it)."""
    from pflow_structure.structure.paging import find_paging

    paging = find_paging({"result": value}, arguments)
    page = paging.line
    if not page:
        return shaped
    if cursor_argument and paging.cursors:
        page += f"; next page: {cursor_argument}={json.dumps(paging.cursors[0][1], ensure_ascii=False)}"
    content = list(shaped.result["content"])
    if shaped.kind == "formatted":
        content[0] = {**content[0], "text": f"Page: {page}\n{content[0]['text']}"}
    else:
        content.append({"type": "text", "text": f"Page: {page}"})
    result = {**shaped.result, "content": content}
    return shaped._replace(result=result, tokens_out=visible_tokens(result, count))


def _example_path(structure: dict[str, Any]) -> str:
    """A leaf path to show in the hint: the first string field, else the first path."""
    for path, info in structure.items():
        if isinstance(info, dict) and info.get("type") == "str":
            return path
    return next(iter(structure), "result")


def shape_result(
    tool: str,
    arguments: dict[str, Any],
    result: dict[str, Any],
    *,
    budget: int,
    count: TokenCounter,
    store: Store,
    read_tool: str = "read_fields",
    render: Renderer | None = None,
    fits: Callable[[str], bool] | None = None,
    keep_text: bool = False,
    cursor_argument: str = "",
    store_text: Callable[[str, dict[str, Any], Any], dict[str, Any] | None] | None = None,
    store_lines: Callable[[str, dict[str, Any], Any], dict[str, Any] | None] | None = None,
) -> Shaped:
    """The answer the agent gets for one downstream result (see the module docstring); ``fits`` says
    whether a text is within what the client keeps (its bytes and lines), else it is cached too;
    ``cursor_argument``: the tool's argument that takes a cursor, named on the page line when the result has one;
    ``store_text``: ``store`` for a large text that is one JSON list, given the text unparsed (None: it declines;
    ``NotOneListError`` from service/streaming.py: its items break off, so it is broken JSON or prose);
    ``store_lines``: ``store`` for a large plain text, kept as its lines, given the text (None: it declines).

    Raises :class:`MalformedJSONError` for broken JSON text, and whatever ``store`` or ``count``
    raise: the caller answers with the original result and logs the failure.
    """
    tokens_in = visible_tokens(result, count)
    if result.get("isError"):
        return Shaped(result, "passed", tokens_in, tokens_in)
    if tokens_in > budget and store_text is not None and _one_json_text(result):
        # A large JSON list is cached item by item, never parsed whole (None: it takes the usual way).
        from pflow_structure.service.streaming import NotOneListError

        text = result["content"][0]["text"]
        try:
            streamed = store_text(tool, arguments, text)
        except NotOneListError as exc:  # broken JSON found by the item scan: passed on, never parsed whole
            if surely_json(text.head if isinstance(text, SpilledText) else text[:HEAD_CHARS]):
                raise MalformedJSONError(f"text starts like JSON but does not parse: {exc}") from None
            streamed = None  # "[1] A title ...": the whole way tells prose from broken JSON
        if streamed is not None:  # a list has no cursor of its own: no next-page reference to add
            return _cached(streamed, result, tokens_in, count, budget, read_tool, render)
    if tokens_in > budget and store_lines is not None and _one_plain_text(result):
        streamed = store_lines(tool, arguments, result["content"][0]["text"])  # line by line, never split whole
        if streamed is not None:  # lines have no cursor: no next-page reference to add
            return _cached(streamed, result, tokens_in, count, budget, read_tool, render)
    result = plain_result(result)  # a text left in a file (mcp/proxy/spill.py) is read now: the whole way
    found = payload(result)
    if found is None:
        return Shaped(result, "passed", tokens_in, tokens_in)
    value, from_json = found
    if tokens_in <= budget and (fits is None or fits(_visible_text(result))):
        texts = [block["text"] for block in result["content"]]
        if not from_json or len(texts) != 1:
            return Shaped(result, "passed", tokens_in, tokens_in)
        is_json, _ = parse_text(texts[0])
        if not is_json:  # plain text beside a structuredContent: the words stay as they are
            return Shaped(result, "passed", tokens_in, tokens_in)
        if keep_text:  # the setting that keeps the upstream's bytes
            return Shaped(result, "passed", tokens_in, tokens_in)
        compact = {**result, "content": [{**result["content"][0], "text": strip_whitespace(texts[0].strip())}]}
        structured = result.get("structuredContent")
        if structured is not None and duplicates_text(structured, texts, [value]):
            new_text = compact["content"][0]["text"]
            if not duplicates_text(structured, [new_text], [value]):  # {"content": text} kept the old layout
                del compact["structuredContent"]  # a copy of the text goes with it: no client expects one
        tokens_out = visible_tokens(compact, count)
        formatted = _formatted(compact, value, render, count)
        if formatted is not None and formatted[1] < min(tokens_out, tokens_in):
            small = Shaped(formatted[0], "formatted", tokens_in, formatted[1])
            return _paged(small, value, arguments, count, cursor_argument)
        if tokens_out < tokens_in:
            return _paged(Shaped(compact, "compacted", tokens_in, tokens_out), value, arguments, count, cursor_argument)
        return Shaped(result, "passed", tokens_in, tokens_in)
    described = store(tool, arguments, value)
    if cursor_argument and described.get("page"):
        from pflow_structure.structure.paging import find_paging

        cursors = find_paging({"result": value}, arguments).cursors
        if cursors:  # a reference the proxy resolves: the cursor never enters the context
            reference = f"${{{described['execution_id']}:{cursors[0][0]}}}"
            described = {**described, "page": described["page"] + f"; next page: {cursor_argument}={reference}"}
    return _cached(described, result, tokens_in, count, budget, read_tool, render)


def _cached(
    described: dict[str, Any],
    result: dict[str, Any],
    tokens_in: int,
    count: TokenCounter,
    budget: int,
    read_tool: str,
    render: Renderer | None,
) -> Shaped:
    """The answer for a result just cached: its structure (or a want or data answer) as text."""
    note = _plain_note(result, count, budget)
    if "values" in described or "data" in described:  # a want answer, or data smaller than its structure
        text = sized_text(described, read_tool, render, note=note)
    else:
        text = cached_text(described, tokens_in, _example_path(described["structure"]), read_tool, note=note)
    shaped: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if "_meta" in result:
        shaped["_meta"] = result["_meta"]
    return Shaped(shaped, "cached", tokens_in, count(text), described["execution_id"])


def _one_json_text(result: dict[str, Any]) -> bool:
    """One text block that starts like JSON, and no structuredContent: the text is the whole value."""
    content = result.get("content", [])
    if len(content) != 1 or content[0].get("type") != "text" or result.get("structuredContent") is not None:
        return False
    text = content[0].get("text")
    if isinstance(text, SpilledText):
        text = text.head
    return isinstance(text, str) and bool(JSON_START.match(text))


def _one_plain_text(result: dict[str, Any]) -> bool:
    """One text block that does not start like JSON, and no structuredContent: :func:`payload` gives its lines."""
    content = result.get("content", [])
    if len(content) != 1 or content[0].get("type") != "text" or result.get("structuredContent") is not None:
        return False
    text = content[0].get("text")
    head = text.head if isinstance(text, SpilledText) else text[:HEAD_CHARS] if isinstance(text, str) else ""
    return bool(head.strip()) and not JSON_START.match(head)


def _visible_text(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []))


EXACT_COUNT_CHARS = 4_000_000  # token counts are exact up to here (about 8 MB/s), then estimated


def bounded(count: TokenCounter) -> TokenCounter:
    """``count`` up to :data:`EXACT_COUNT_CHARS` characters; beyond, and for a text left in a file (as long
    by spill.TEXT_IN_FILE_CHARS), a quarter of the length: only "over the budget" matters then."""
    return lambda text: (
        count(text) if isinstance(text, str) and len(text) <= EXACT_COUNT_CHARS else (len(text) + 3) // 4
    )


def shape_and_store(
    tool: str,
    arguments: dict[str, Any],
    result: dict[str, Any],
    *,
    settings: Settings,
    budget: int,
    read_tool: str,
    want: str | None = None,
    schema: Any = None,
) -> Shaped:
    """:func:`shape_result` with the proxy's parts: the cache of ``settings`` (a plain-text answer
    kept as text, so a reference to ``result`` passes the text on), o200k counts and ``render_auto``;
    ``want`` (the agent's words) steers the structure of a result that is cached; ``schema`` (the tool's
    input schema) names the argument that takes the next page's cursor."""
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import capture_outputs
    from pflow_structure.service.clients import answer_counter

    limited = answer_counter(None, settings)  # a client that cuts by bytes or lines: those count too

    def store(tool_name: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        text = [["result"]] if is_text_lines(result, value) else []
        captured = capture_outputs(
            f"mcp:{tool_name}", args, {"result": value}, settings=settings, text_paths=text, want=want
        )
        return sized_or_structure(captured.result, captured.outputs, captured.structure)

    def store_text(tool_name: str, args: dict[str, Any], text: str | SpilledText) -> dict[str, Any] | None:
        from pflow_structure.service.streaming import capture_list_text

        streamed = capture_list_text(f"mcp:{tool_name}", args, text, settings=settings, want=want, strict=True)
        if streamed is None:
            return None
        return sized_or_structure(streamed.result, streamed.outputs, streamed.structure)

    def store_lines(tool_name: str, args: dict[str, Any], text: str | SpilledText) -> dict[str, Any] | None:
        from pflow_structure.service.streaming import capture_text_lines

        streamed = capture_text_lines(f"mcp:{tool_name}", args, text, settings=settings, want=want)
        if streamed is None:
            return None
        return sized_or_structure(streamed.result, streamed.outputs, streamed.structure)

    def sized_or_structure(described: dict[str, Any], outputs: Any, structure: dict[str, Any]) -> dict[str, Any]:
        from pflow_structure.service.answers import structure_within_budget
        from pflow_structure.service.want_answer import sized_answer

        # outputs is None only for a list far larger than any view: never a data answer.
        sized = None if outputs is None else sized_answer(described, outputs, structure, settings=settings)
        # The tree text is smaller still than the dict structure_within_budget measures.
        return sized if sized is not None else structure_within_budget(described, settings.answer_budget, limited)

    count = bounded(count_tokens)

    def render(value: Any) -> tuple[str, str]:
        from pflow_structure.render.auto import render_auto

        rendered = render_auto(value, operation=tool, failure_log=settings.failure_log)
        return rendered.text, rendered.format

    def fits(text: str) -> bool:
        return limited is None or limited(text) <= settings.answer_budget

    from pflow_structure.structure.paging import cursor_argument

    return shape_result(
        tool,
        arguments,
        result,
        budget=budget,
        count=count,
        store=store,
        read_tool=read_tool,
        render=render,
        keep_text=settings.keep_upstream_text,
        fits=fits,
        cursor_argument=cursor_argument(schema),
        store_text=store_text,
        store_lines=store_lines,
    )


WANT_ARGUMENT = "_want"
WANT_PREFIXED = "_pflow_structure_want"  # when the tool has a ``_want`` of its own
WANT_DESCRIPTION = "Values you need, in words"  # short: paid on every tool of every list (the instructions say more)


def tool_schemas(listing: Mapping[str, Any]) -> dict[str, Any]:
    """Input schema by tool name, from a ``tools/list`` answer."""
    return {
        tool["name"]: tool.get("inputSchema")
        for tool in listing.get("tools", [])
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str)
    }
