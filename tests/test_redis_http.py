"""Scaled-out ``serve --http``: several real server processes on one real redis-server.

Each instance has its own cache directory, so only Redis can carry an execution from one to another.
The servers are stateless: a ``tools/call`` with no session and no ``initialize`` is answered by any of
them, so a load balancer needs no session affinity.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.redis_servers import RedisServer, require_redis
from tests.test_mcp_server import _http_call, _start_http

pytestmark = pytest.mark.slow
INSTANCES = 3


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    require_redis()
    base = tmp_path_factory.mktemp("scaled-out")
    server = RedisServer(base / "redis").start()
    processes, urls = [], []
    try:
        for n in range(INSTANCES):
            env = {"PFLOW_STRUCTURE_CACHE_URL": server.url, "PFLOW_STRUCTURE_CACHE_DIR": str(base / f"cache-{n}")}
            process, url = _start_http(env=env)
            processes.append(process)
            urls.append(url)
        yield urls
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
        server.stop()


def _stateless_call(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC tools/call POST: no initialize, no session id (what a load-balanced request looks like)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers.get("mcp-session-id") is None
        answer: dict[str, Any] = json.loads(response.read())
    return answer["result"]


def test_a_run_on_one_instance_reads_back_identically_on_every_other(instances: list[str], tmp_path: Path) -> None:
    data = tmp_path / "issues.json"
    issues = [{"number": n, "title": f"issue {n}", "labels": [{"name": "bug"}] * (n % 3)} for n in range(40)]
    data.write_text(json.dumps(issues), encoding="utf-8")
    for origin, url in enumerate(instances):
        run = _http_call(url, "registry_run", {"node_type": "read-json", "parameters": {"path": str(data)}})
        assert run["isError"] is False
        execution_id = run["structuredContent"]["execution_id"]
        for offset in range(1, INSTANCES):
            reader = instances[(origin + offset) % INSTANCES]
            read = _stateless_call(
                reader, "read_fields", {"execution_id": execution_id, "field_paths": ["result[*].title", "result[-1]"]}
            )
            assert read["isError"] is False
            assert read["structuredContent"] == {
                "result[*].title": [issue["title"] for issue in issues],
                "result[-1]": issues[-1],
            }


def test_an_id_unknown_to_the_shared_cache_says_not_found_or_evicted_on_any_instance(instances: list[str]) -> None:
    read = _stateless_call(
        instances[1], "read_fields", {"execution_id": "exec-4102444800-0cd0c8fe", "field_paths": ["a"]}
    )
    assert read["isError"] is True
    assert read["content"][0]["text"].startswith("Error: Execution not found or evicted: exec-4102444800-0cd0c8fe (")
