"""Repeats said once through the proxy (issue 38.4): a real proxy process over stdio in front of the real
server-filesystem, driven by the SDK's client. The same call twice answers "unchanged" in a line; after
the file changed, the answer is the changed paths and their new values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pflow_structure.render.tokens import count_tokens
from tests.test_mcp_proxy import PROXY, in_session, npm_server, plain, texts


def records(state_of_7: str) -> list[dict[str, Any]]:
    """Sixty deployments, as a polled status file holds them: only item 7's state moves."""
    return [
        {
            "id": index,
            "title": f"Deployment {index} of the payments service",
            "state": state_of_7 if index == 7 else "done",
            "region": "eu-west-1",
        }
        for index in range(60)
    ]


def test_a_repeated_call_answers_unchanged_and_a_changed_file_its_changed_paths(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    polled = folder / "deployments.json"
    polled.write_text(json.dumps(records("running"), indent=2), encoding="utf-8")
    command = [npm_server("mcp-server-filesystem"), str(folder)]

    async def work(client: Any) -> Any:
        answers = [plain(await client.call_tool("read_text_file", {"path": str(polled)})) for _ in range(2)]
        polled.write_text(json.dumps(records("failed"), indent=2), encoding="utf-8")
        answers.append(plain(await client.call_tool("read_text_file", {"path": str(polled)})))
        new_id = re.search(r"cached as (exec-[0-9a-f-]+)\.", texts(answers[2])[0])
        read = {"execution_id": new_id.group(1) if new_id else "", "field_paths": ["result[7].state"]}
        answers.append(plain(await client.call_tool("read_fields", read)))
        return answers

    first, second, third, read = in_session([*PROXY, "--", *command], work)
    first_id = re.search(r"cached as (exec-[0-9a-f-]+)\.", texts(first)[0])
    assert first_id is not None
    unchanged = texts(second)[0]
    assert unchanged == (
        f"Unchanged since {first_id.group(1)}: the same result as the last read_text_file call with these arguments."
    )
    assert count_tokens(unchanged) < 60
    lines = texts(third)[0].split("\n")
    assert lines[0].startswith(f"Changed since {first_id.group(1)}: 1 path differs; the whole new result is cached as ")
    assert lines[1:] == ['result[7].state: "failed"']
    assert read["structuredContent"] == {"result[7].state": "failed"}
