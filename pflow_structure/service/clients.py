"""The MCP clients we know, by the name they send in ``initialize``, and the answer budget each holds.

A client says who it is in ``initialize`` (``clientInfo.name``); the proxy and ``serve`` then answer
that session within what the client keeps of a tool result, not within one budget for all:

==================  ======================  ==========================================================
client              ``clientInfo.name``     budget of a session (source: docs/budgets.md)
==================  ======================  ==========================================================
Codex CLI           ``codex-mcp-client``    8,000 tokens, 10,000 bytes and 256 lines (Codex cuts a
                                            tool result at about 10 KiB or 256 lines in the middle)
Claude Code         ``claude-code``         8,000 tokens (it warns above 10,000) and 50,000 bytes
                                            (a larger result goes to a file); each of our tools
                                            declares ``_meta["anthropic/maxResultSizeChars"]``
any other           (anything else)         8,000 tokens
==================  ======================  ==========================================================

``PFLOW_STRUCTURE_ANSWER_BUDGET`` (a setting) wins over the client's row, and a call's
``max_tokens`` over both: each is a number of tokens and nothing else.
"""

from __future__ import annotations

from pflow_structure.records import NamedTuple
from pflow_structure.settings import DEFAULT_ANSWER_BUDGET, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # loaded by read_fields' answers: no typing at run time (records.py)
    from typing import Any

    from pflow_structure.render.limits import TokenCounter

RESULT_SIZE_META = "anthropic/maxResultSizeChars"  # Claude Code: the largest result a tool may send inline
MAX_DECLARED_CHARS = 500_000  # the most Claude Code accepts in that declaration


class ClientBudget(NamedTuple):
    """What one client keeps of a tool result, and where that number comes from."""

    client: str
    names: tuple[str, ...]  # clientInfo.name as the client sends it
    tokens: int
    max_bytes: int | None
    max_lines: int | None
    declares_size: bool  # the client reads _meta[RESULT_SIZE_META] on a listed tool
    source: str


KNOWN_CLIENTS = (
    ClientBudget(
        "Codex CLI",
        ("codex-mcp-client",),
        DEFAULT_ANSWER_BUDGET,
        10_000,
        256,
        False,
        "openai/codex#6544 (every tool result capped to about 10 KiB or 256 lines since 0.56), #7906 "
        "(TruncationPolicy::Bytes(10_000)), #5913 (not configurable), #14466 (the cut reads as the server's)",
    ),
    ClientBudget(
        "Claude Code",
        ("claude-code",),
        DEFAULT_ANSWER_BUDGET,
        50_000,
        None,
        True,
        "https://code.claude.com/docs/en/mcp (a warning above 10,000 tokens, MAX_MCP_OUTPUT_TOKENS 25,000 by "
        "default, a result over 50,000 characters persisted to a file, _meta['anthropic/maxResultSizeChars'] "
        "per tool up to 500,000); anthropics/claude-code#42869",
    ),
)
OTHER_CLIENTS = ClientBudget("any other client", (), DEFAULT_ANSWER_BUDGET, None, None, False, "our default")


def client_name(client_info: Any) -> str | None:
    """``clientInfo.name`` of an ``initialize``'s parameters (a dict), or None."""
    name = client_info.get("name") if isinstance(client_info, dict) else None
    return name if isinstance(name, str) else None


def client_budget(name: str | None) -> ClientBudget:
    """The row of the client that calls itself ``name``; unknown names get our default."""
    return next((row for row in KNOWN_CLIENTS if name in row.names), OTHER_CLIENTS)


def session_settings(settings: Settings, client_info: Any) -> Settings:
    """``settings`` for the session of the client that sent ``client_info``: its row's budget, unless a
    setting (``PFLOW_STRUCTURE_ANSWER_BUDGET``) or the caller chose one."""
    row = client_budget(client_name(client_info))
    if settings.answer_budget_set or row is OTHER_CLIENTS:
        return settings
    limits = {"answer_max_bytes": row.max_bytes, "answer_max_lines": row.max_lines, "answer_budget_set": False}
    return settings.replace(answer_budget=row.tokens, **limits)


def declared_size(settings: Settings) -> dict[str, Any]:
    """The ``_meta`` each of our tools is listed with: the most characters one of its answers can
    hold in a Claude Code session (its byte bound; with a budget set in tokens only, the most Claude
    Code accepts). Other clients ignore the key, as MCP lets them."""
    bound = session_settings(settings, {"name": "claude-code"}).answer_max_bytes
    return {RESULT_SIZE_META: min(bound or MAX_DECLARED_CHARS, MAX_DECLARED_CHARS)}


def answer_counter(max_tokens: int | None, settings: Settings) -> TokenCounter | None:
    """None (o200k tokens), or in a session whose client also cuts by bytes or lines a counter of those
    too (``render/limits.py``). A call's ``max_tokens`` counts tokens only."""
    if max_tokens is not None or (settings.answer_max_bytes is None and settings.answer_max_lines is None):
        return None
    from pflow_structure.render.limits import limited_counter
    from pflow_structure.render.tokens import count_tokens

    return limited_counter(count_tokens, settings.answer_budget, settings.answer_max_bytes, settings.answer_max_lines)
