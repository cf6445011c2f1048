"""``_want`` on every tool the proxy offers (issue 28): listed with a short description, taken off
before the call goes downstream, steering the structure of a cached result; a tool with a ``_want``
of its own keeps it and ours is prefixed. Real servers over stdio behind the real proxy."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from pflow_structure.mcp.proxy.shaping import WANT_DESCRIPTION, WANT_PREFIXED
from pflow_structure.render.tokens import count_tokens
from tests.conftest import EXAMPLES_DATA, REPO
from tests.structure_text import cached
from tests.test_mcp_proxy import PROXY, in_session, npm_server, plain, texts

ECHO = [sys.executable, str(REPO / "tests" / "servers" / "echo_mcp_server.py")]
ISSUES = EXAMPLES_DATA / "github_issues.json"


def test_every_proxied_tool_offers_want_and_it_costs_at_most_15_tokens_of_description() -> None:
    async def work(client: Any) -> Any:
        return {tool.name: plain(tool) for tool in (await client.list_tools()).tools}

    tools = in_session([*PROXY, "--", *ECHO], work)
    assert tools["echo"]["inputSchema"] == {
        "type": "object",
        "properties": {
            "_want": {"type": "string", "description": WANT_DESCRIPTION},
            "_fields": {"type": "array", "description": "Read these paths now"},
            "_jq": {"type": "string"},
        },
    }
    assert tools["echo_typed"]["inputSchema"]["properties"]["_want"]["description"] == WANT_DESCRIPTION
    assert count_tokens(json.dumps({"_want": {"type": "string", "description": WANT_DESCRIPTION}})) <= 30
    assert count_tokens(WANT_DESCRIPTION) <= 15
    assert "_want" not in tools["read_fields"]["inputSchema"]["properties"]  # ours need none


def test_want_is_taken_off_before_the_call_goes_downstream() -> None:
    async def work(client: Any) -> Any:
        return plain(await client.call_tool("echo_typed", {"text": "hi", "_want": "the text"}))

    answer = in_session([*PROXY, "--", *ECHO], work)
    assert texts(answer) == ['ARGS {"text":"hi"}']


def test_a_tool_with_a_want_of_its_own_keeps_it_and_ours_is_prefixed_and_said() -> None:
    async def work(client: Any) -> Any:
        tools = {tool.name: plain(tool) for tool in (await client.list_tools()).tools}
        arguments = {"_want": "theirs", WANT_PREFIXED: "ours"}
        return tools["echo_own_want"], plain(await client.call_tool("echo_own_want", arguments))

    tool, answer = in_session([*PROXY, "--", *ECHO], work)
    assert set(tool["inputSchema"]["properties"]) == {"_want", WANT_PREFIXED, "_fields", "_jq"}
    assert tool["description"].endswith(f"\n(pflow-structure: {WANT_PREFIXED} is our want.)")
    assert texts(answer) == ['ARGS {"_want":"theirs"}']


def test_a_large_file_read_with_want_answers_the_matching_values_and_a_map() -> None:
    command = [npm_server("mcp-server-filesystem"), str(EXAMPLES_DATA)]
    want = "who opened each issue, and is it still open?"

    async def work(client: Any) -> Any:
        with_want = plain(await client.call_tool("read_text_file", {"path": str(ISSUES), "_want": want}))
        without = plain(await client.call_tool("read_text_file", {"path": str(ISSUES)}))
        return with_want, without

    with_want, without = in_session([*PROXY, "--", *command], work)
    lines = texts(with_want)[0].splitlines()
    assert re.fullmatch(r"exec-\d+-[0-9a-f]{8}: matching values \(columns are paths\):", lines[0])
    # The label and number of each issue lead its row; "open" meets the state's values (open, closed).
    header = "result[*] (100 items): number, title, state, milestone.open_issues, user.login"
    assert lines[1:3] == [header, "  150,Different results from Betamax vs Requests,closed,null,facetoe"]
    assert lines[-2].startswith(
        "Rest: result list, 100 items, each 57 more fields; your words also match: "
        "result[*].milestone.closed_issues, .author_association,"
    )
    assert lines[-1] == "Full structure: the same call without _want gives the structure"
    usual = cached(without)
    assert "example" in usual and "wanted" not in usual
