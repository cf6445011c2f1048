"""Over MCP (serve, and the proxy in front of the real server-filesystem): no silent miss, and every
answer within the answer budget, with the exact arguments that read on."""

from __future__ import annotations

import json
from typing import Any

from pflow_structure.render.output_text import format_json
from pflow_structure.render.tokens import count_tokens
from tests.conftest import EXAMPLES_DATA
from tests.structure_text import cached_id
from tests.test_budget import read_all
from tests.test_mcp_proxy import PROXY, in_session, npm_server, plain, texts

ISSUES = str(EXAMPLES_DATA / "github_issues.json")
SERVE = ["-m", "pflow_structure", "serve"]
TYPO = "result[0].titel: no key 'titel' here. Did you mean result[0].title, result[0].state?"
MALFORMED = (
    "Invalid field path at column 9: expected ']' to close the '[' at column 7\n  result[0\n          ^\n"
    'Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).'
)


def serve_session(work: Any) -> Any:
    import sys

    return in_session([sys.executable, *SERVE], work)


def proxied_filesystem(work: Any) -> Any:
    return in_session([*PROXY, "--", npm_server("mcp-server-filesystem"), str(EXAMPLES_DATA)], work)


async def misses(client: Any, execution_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    arguments = {"execution_id": execution_id, "field_paths": ["result[0].titel", "result[0"]}
    none_found = plain(await client.call_tool("read_fields", arguments))
    arguments["field_paths"] = ["result[0].titel", "result[0].number"]
    one_found = plain(await client.call_tool("read_fields", arguments))
    return none_found, one_found


def assert_misses_named(none_found: dict[str, Any], one_found: dict[str, Any], number: int) -> None:
    assert none_found["isError"] is True
    assert json.loads(texts(none_found)[0]) == {
        "result[0].titel": None,
        "result[0": None,
        "_missing": {"result[0].titel": TYPO, "result[0": MALFORMED},
    }
    assert one_found["isError"] is False
    assert json.loads(texts(one_found)[0]) == {
        "result[0].titel": None,
        "result[0].number": number,
        "_missing": {"result[0].titel": TYPO},
    }


def test_serve_names_a_typo_and_a_malformed_path_and_is_an_error_when_nothing_was_found() -> None:
    async def work(client: Any) -> Any:
        ran = plain(await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": ISSUES}}))
        return await misses(client, ran["structuredContent"]["execution_id"])

    assert_misses_named(*serve_session(work), number=150)


def test_the_proxy_names_a_typo_and_a_malformed_path_and_is_an_error_when_nothing_was_found() -> None:
    async def work(client: Any) -> Any:
        answer = plain(await client.call_tool("read_text_file", {"path": ISSUES}))
        return await misses(client, cached_id(answer))

    assert_misses_named(*proxied_filesystem(work), number=150)


def test_through_the_proxy_every_read_of_the_issues_fits_8000_tokens_and_the_pages_are_the_value() -> None:
    value = json.loads((EXAMPLES_DATA / "github_issues.json").read_text())

    async def work(client: Any) -> Any:
        answer = plain(await client.call_tool("read_text_file", {"path": ISSUES}))
        execution_id = cached_id(answer)
        answers: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []

        async def call(arguments: dict[str, Any]) -> dict[str, Any]:
            result = plain(await client.call_tool("read_fields", arguments))
            assert result["isError"] is False
            answers.append(json.loads(texts(result)[0]))
            return answers[-1]

        # read_all is synchronous: collect each call's arguments, answer them in turn.
        for path in ("result", "result[*].body"):
            first = await call({"execution_id": execution_id, "field_paths": [path]})
            pending.append(first)
            cache = {json.dumps({"execution_id": execution_id, "field_paths": [path]}): first}
            while True:
                try:
                    whole = read_all(
                        lambda args, c=cache: c[json.dumps(args)], {"execution_id": execution_id, "field_paths": [path]}
                    )
                    break
                except KeyError as missing:
                    arguments = json.loads(missing.args[0])
                    cache[missing.args[0]] = await call(arguments)
            pending.append(whole)
        return execution_id, answers, pending

    execution_id, answers, (first_all, whole_all, first_bodies, whole_bodies) = proxied_filesystem(work)
    assert first_all["_more"]["result"]["next"] == {
        "execution_id": execution_id,
        "field_paths": ["result[*]"],
        "offset": len(first_all["result"]),
    }
    assert first_bodies["_more"]["result[*].body"]["next"] == {
        "execution_id": execution_id,
        "field_paths": ["result[*].body"],
        "offset": len(first_bodies["result[*].body"]),
    }
    assert whole_all == value
    assert whole_bodies == [issue["body"] for issue in value]
    sizes = [count_tokens(format_json(answer, compact=True)) for answer in answers]
    assert max(sizes) <= 8000
    assert count_tokens(format_json(first_all, compact=True)) <= 8000


def test_a_proxied_read_text_file_with_fields_answers_the_numbers_in_one_call() -> None:
    numbers = [issue["number"] for issue in json.loads((EXAMPLES_DATA / "github_issues.json").read_text())]

    async def work(client: Any) -> Any:
        arguments = {"path": ISSUES, "_fields": ["result[*].number"]}
        return plain(await client.call_tool("read_text_file", arguments))

    answer = proxied_filesystem(work)
    assert answer["isError"] is False
    (text,) = texts(answer)
    value = json.loads(text)
    execution_id = value["execution_id"]
    assert value == {
        "execution_id": execution_id,
        "node_type": "mcp:read_text_file",
        "values": {"result[*].number": numbers},
        "rest": f"The whole output is cached as {execution_id}: read_fields with that execution_id reads any "
        f'other path, "${{{execution_id}:PATH}}" passes a value on unread.',
    }
    assert count_tokens(text) < 400


def test_a_proxied_call_with_a_field_that_misses_says_why_and_brings_the_structure() -> None:
    async def work(client: Any) -> Any:
        arguments = {"path": ISSUES, "_fields": ["result[0].titel"]}
        return plain(await client.call_tool("read_text_file", arguments))

    answer = proxied_filesystem(work)
    value = json.loads(texts(answer)[0])
    assert answer["isError"] is True
    assert value["values"] == {"result[0].titel": None, "_missing": {"result[0].titel": TYPO}}
    assert value["structure"]["result[0].title"] == {"type": "str", "avg_length": 41}


def test_every_proxied_tool_offers_fields_in_a_few_tokens() -> None:
    from pflow_structure.mcp.proxy.selection import FIELDS_ARGUMENT_DESCRIPTION

    async def work(client: Any) -> Any:
        return [plain(tool) for tool in (await client.list_tools()).tools]

    tools = {tool["name"]: tool for tool in proxied_filesystem(work)}
    assert tools["read_text_file"]["inputSchema"]["properties"]["_fields"] == {
        "type": "array",
        "description": FIELDS_ARGUMENT_DESCRIPTION,
    }  # the items are checked by the proxy: a typed "items" would put _want, _fields and _jq past 40 tokens
    assert "_fields" not in tools["read_fields"]["inputSchema"]["properties"]
    assert count_tokens(FIELDS_ARGUMENT_DESCRIPTION) <= 15
    added = '"_fields":' + format_json(tools["read_text_file"]["inputSchema"]["properties"]["_fields"], compact=True)
    assert count_tokens(added) == 14  # with _want and _jq beside it, at most 40 a tool (tests/test_mcp_proxy.py)


def test_serve_registry_run_with_fields_answers_the_values_and_no_structure() -> None:
    async def work(client: Any) -> Any:
        arguments = {"node_type": "read-json", "parameters": {"path": ISSUES}, "fields": ["result[0].title"]}
        return plain(await client.call_tool("registry_run", arguments))

    answer = serve_session(work)
    assert answer["isError"] is False
    value = answer["structuredContent"]
    assert value["values"] == {"result[0].title": "Different results from Betamax vs Requests"}
    assert set(value) == {"execution_id", "node_type", "values", "rest"}
