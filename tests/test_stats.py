"""`pflow-structure stats`: per tool or node, raw tokens against what the agent was answered.

The acceptance session is real: server-filesystem (npm) behind `pflow-structure proxy` over stdio,
driven by the SDK's client, then `stats` as a subprocess; once with the file store and once with a
real redis-server, which must give the same numbers. `serve` is started for real as well.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.usage import UsageLog, usage_counts
from pflow_structure.render.failure_log import read_failures
from pflow_structure.render.tokens import vocabulary_file
from pflow_structure.settings import Settings
from tests.redis_servers import RedisServer, flush, require_redis
from tests.test_mcp_proxy import PROXY, in_session, npm_server, plain, texts

DAY = 86400.0
T0 = 1_795_700_000.0  # 2026-11-26 (UTC), mid-morning

# The structure answer names its execution id, whose random part has no fixed token count: its
# tokens (``s``) are taken from the answer the client got; every other number is fixed.


def o200k(text: str) -> int:
    """o200k_base tokens as tiktoken itself loads and splits them (its own pattern and loader, reading the
    vocabulary litellm ships, as litellm does), not through our render/tokens.py: the expected numbers
    come from a second source."""
    import tiktoken

    folder = vocabulary_file()
    assert folder is not None, "litellm's o200k_base vocabulary file is missing"
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder.parent)  # the file found there by name: no download
    try:
        return len(tiktoken.get_encoding("o200k_base").encode(text, disallowed_special=()))
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def expected_rows(s: int) -> list[dict[str, Any]]:
    read_text_file = {"tool": "mcp:read_text_file", "results": 2, "cached": 1, "raw_tokens": 5619}
    read_text_file |= {"structure_tokens": s, "inline_tokens": 9, "reads": 1, "read_tokens": 23}
    read_text_file |= {"answered_tokens": s + 32, "saved_tokens": 5619 - s - 32}
    list_directory = {"tool": "mcp:list_directory", "results": 1, "cached": 0, "raw_tokens": 11}
    list_directory |= {"structure_tokens": 0, "inline_tokens": 11, "reads": 0, "read_tokens": 0}
    list_directory |= {"answered_tokens": 11, "saved_tokens": 0}
    return [read_text_file, list_directory]


def expected_total(s: int) -> dict[str, int]:
    total = {"results": 3, "cached": 1, "raw_tokens": 5630, "structure_tokens": s, "inline_tokens": 20}
    return total | {"reads": 1, "read_tokens": 23, "answered_tokens": s + 43, "saved_tokens": 5630 - s - 43}


def expected_table(s: int) -> str:
    """The table for a structure answer of ``s`` tokens (100 to 999: the widths stay)."""
    a, b = f"{s + 32:>8}  {s:>9}", f"{s + 43:>8}  {s:>9}"
    return (
        "tool                results  cached  raw tokens  answered  structure  inline  reads  read tokens  saved\n"
        f"mcp:read_text_file        2       1       5,619  {a}       9      1           23  {5619 - s - 32:>5,}\n"
        "mcp:list_directory        1       0          11        11          0      11      0            0      0\n"
        f"total                     3       1       5,630  {b}      20      1           23  {5630 - s - 43:>5,}\n"
    )


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


def stats(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pflow_structure", "stats", *args]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)


def proxy_session(data: Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Four calls through the proxy: a small JSON file, a large one, read_fields on it, a listing."""
    issues = [{"number": n, "title": f"Issue number {n}", "state": "open"} for n in range(200)]
    (data / "issues.json").write_text(json.dumps(issues, indent=2), encoding="utf-8")
    (data / "small.json").write_text(json.dumps({"name": "pflow", "stars": 42}, indent=2), encoding="utf-8")

    async def work(client: Any) -> list[dict[str, Any]]:
        small = plain(await client.call_tool("read_text_file", {"path": str(data / "small.json")}))
        large = plain(await client.call_tool("read_text_file", {"path": str(data / "issues.json")}))
        execution_id = texts(large)[0].split("cached as ")[1].split(".")[0]
        paths = ["result[0].title", "result[*].number"]
        read = plain(
            await client.call_tool("read_fields", {"execution_id": execution_id, "field_paths": paths, "limit": 3})
        )
        listing = plain(await client.call_tool("list_directory", {"path": str(data)}))
        return [small, large, read, listing]

    return list(in_session([*PROXY, "--", npm_server("mcp-server-filesystem"), str(data)], work, env))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def test_stats_after_a_proxy_session_shows_each_tools_raw_and_answered_tokens(data: Path, isolated_cache: Path) -> None:
    answers = proxy_session(data)
    as_json = stats("--json")
    as_text = stats()
    assert (as_json.returncode, as_json.stderr) == (0, "")
    found = json.loads(as_json.stdout)
    # answered tokens are the o200k tokens of the text the client got, answer by answer
    small, structure, read, listing = (o200k(texts(answer)[0]) for answer in answers)
    assert (small + listing, read) == (20, 23)  # the small read compacted, without its copy
    assert found == {
        "days": None,
        "store": "file",
        "location": str(isolated_cache / "usage"),
        "full_days": [],
        "tools": expected_rows(structure),
        "total": expected_total(structure),
    }
    assert (as_text.returncode, as_text.stderr) == (0, "")
    head = f"Tokens per tool or node over every day kept, from {isolated_cache / 'usage'}:\n"
    assert as_text.stdout == head + expected_table(structure)


def test_usage_files_hold_names_and_numbers_only_and_are_private(data: Path, isolated_cache: Path) -> None:
    structure = o200k(texts(proxy_session(data)[1])[0])
    (day_file,) = (isolated_cache / "usage").iterdir()
    assert stat.S_IMODE(day_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(day_file.parent.stat().st_mode) == 0o700
    lines = [json.loads(line) for line in day_file.read_text(encoding="utf-8").splitlines()]
    assert lines == [
        {"tool": "mcp:read_text_file", "results": 1, "raw_tokens": 17, "inline_tokens": 9},
        {"tool": "mcp:read_text_file", "results": 1, "cached": 1, "raw_tokens": 5602, "structure_tokens": structure},
        {"tool": "mcp:read_text_file", "reads": 1, "read_tokens": 23},
        {"tool": "mcp:list_directory", "results": 1, "raw_tokens": 11, "inline_tokens": 11},
    ]


def test_redis_gives_the_same_numbers_as_the_file_store(data: Path, redis_url: str) -> None:
    flush(redis_url)
    env = {"PFLOW_STRUCTURE_CACHE_URL": redis_url}
    structure = o200k(texts(proxy_session(data, env)[1])[0])
    found = json.loads(stats("--json", env=env).stdout)
    assert (found["store"], found["location"]) == ("redis", redis_url)
    assert (found["tools"], found["total"]) == (expected_rows(structure), expected_total(structure))
    assert stats("--days", "1", env=env).stdout.endswith(expected_table(structure))


def test_serve_counts_registry_run_read_fields_and_edit_fields_for_the_node(isolated_cache: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    example = Path(__file__).resolve().parent.parent / "examples" / "data" / "github_issues.json"

    async def main() -> list[dict[str, Any]]:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "pflow_structure", "serve"], env=dict(os.environ)
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            run = plain(
                await client.call_tool("registry_run", {"node_type": "read-json", "parameters": {"path": str(example)}})
            )
            execution_id = run["structuredContent"]["execution_id"]
            fields = plain(
                await client.call_tool(
                    "read_fields", {"execution_id": execution_id, "field_paths": ["result[0].title"]}
                )
            )
            edit = {"execution_id": execution_id, "delete": ["result[0].body"]}
            edited = plain(await client.call_tool("edit_fields", edit))
            return [run, fields, edited]

    import asyncio

    run, fields, edited = asyncio.run(asyncio.wait_for(main(), timeout=180))
    (row,) = json.loads(stats("--json").stdout)["tools"]
    value = {"result": json.loads(example.read_text(encoding="utf-8"))}  # what read-json writes
    raw = o200k(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    assert row["tool"] == "read-json"
    assert (row["results"], row["cached"], row["reads"]) == (1, 1, 2)
    assert row["raw_tokens"] == raw
    assert row["structure_tokens"] == o200k(texts(run)[0])
    assert row["read_tokens"] == o200k(texts(fields)[0]) + o200k(texts(edited)[0])
    assert row["inline_tokens"] == 0


# -- the stores, with a clock ---------------------------------------------------------------------


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def record_days(log: Any, clock: Clock) -> None:
    """Three answers on three days: 10 days ago, yesterday, today."""
    for back, (tool, kind, raw, answered) in zip(
        (10, 1, 0),
        (("mcp:a", "structure", 1000, 50), ("mcp:a", "inline", 20, 12), ("read-json", "read", 0, 30)),
        strict=True,
    ):
        clock.now = T0 - back * DAY
        log.record(tool, usage_counts(kind, raw=raw, answered=answered))
    clock.now = T0


def test_days_counts_only_the_last_n_utc_days(tmp_path: Path) -> None:
    clock = Clock()
    log = UsageLog(tmp_path / "usage", clock=clock)
    record_days(log, clock)
    everything, _ = log.totals()
    two_days, _ = log.totals(2)
    today, _ = log.totals(1)
    assert everything["mcp:a"]["raw_tokens"] == 1020
    assert two_days["mcp:a"] == {
        **dict.fromkeys(everything["mcp:a"], 0),
        "results": 1,
        "raw_tokens": 20,
        "inline_tokens": 12,
    }
    assert list(today) == ["read-json"]


def test_days_before_yesterday_are_folded_into_a_line_per_tool_and_old_ones_deleted(tmp_path: Path) -> None:
    clock = Clock()
    log = UsageLog(tmp_path / "usage", clock=clock)
    clock.now = T0 - 500 * DAY
    log.record("mcp:old", usage_counts("inline", raw=5, answered=5))
    for _ in range(3):
        clock.now = T0 - 3 * DAY
        log.record("mcp:a", usage_counts("structure", raw=1000, answered=50))
    before, _ = log.totals()
    clock.now = T0
    log.record("mcp:a", usage_counts("inline", raw=1, answered=1))  # the first record today folds
    names = sorted(path.name for path in (tmp_path / "usage").iterdir())
    assert names == ["2026-11-23.sum.jsonl", "2026-11-26.jsonl"]
    folded = (tmp_path / "usage" / "2026-11-23.sum.jsonl").read_text(encoding="utf-8")
    assert folded == '{"tool":"mcp:a","results":3,"cached":3,"raw_tokens":3000,"structure_tokens":150}\n'
    after, _ = log.totals()
    assert after["mcp:a"]["raw_tokens"] == before["mcp:a"]["raw_tokens"] + 1
    assert "mcp:old" not in after


def test_a_full_day_stops_growing_and_the_report_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pflow_structure.cache.usage as usage

    monkeypatch.setattr(usage, "MAX_DAY_BYTES", 100)
    log = UsageLog(tmp_path / "usage", clock=Clock())
    kept = [log.record("mcp:a", usage_counts("inline", raw=10, answered=10)) for _ in range(5)]
    assert kept == [True, True, False, False, False]
    totals, full = log.totals()
    assert (totals["mcp:a"]["results"], full) == (2, ["2026-11-26"])


def test_file_and_redis_stores_sum_the_same_records_the_same_way(tmp_path: Path, redis_url: str) -> None:
    from pflow_structure.cache.redis_usage import RedisUsageLog

    flush(redis_url)
    clock = Clock()
    on_files = UsageLog(tmp_path / "usage", clock=clock)
    in_redis = RedisUsageLog(redis_url, namespace="test-usage", clock=clock)
    record_days(on_files, clock)
    record_days(in_redis, clock)
    for days in (None, 1, 2, 30):
        assert on_files.totals(days) == in_redis.totals(days)


def test_a_failure_to_record_goes_to_the_failure_log_and_never_raises(tmp_path: Path) -> None:
    from pflow_structure.service.usage import record_result

    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "usage").write_text("not a directory", encoding="utf-8")
    settings = Settings(cache_dir=cache_dir, failure_log=tmp_path / "failures.jsonl")
    record_result(settings, "mcp:a", cached=True, raw=100, answered=10)
    (failure,) = read_failures(tmp_path / "failures.jsonl")
    assert (failure["operation"], failure["stage"], failure["source"]) == ("mcp:a", "usage", "stats")
    day_file = re.escape(str(cache_dir / "usage")) + r"/\d{4}-\d{2}-\d{2}\.jsonl"  # today's, by the real clock
    assert re.fullmatch(rf"NotADirectoryError: \[Errno 20\] Not a directory: '{day_file}'", failure["error"])


def test_stats_with_nothing_recorded_says_what_is_counted(isolated_cache: Path) -> None:
    done = stats()
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"Tokens per tool or node over every day kept, from {isolated_cache / 'usage'}:\n"
        "Nothing recorded yet: answers through `pflow-structure proxy` or `serve` are counted.\n"
    )


def test_days_must_be_at_least_one() -> None:
    done = stats("--days", "0")
    assert done.returncode == 2
    assert "Invalid value for '--days': 0 is not in the range x>=1." in done.stderr


def test_stats_with_redis_down_names_it_and_exits_1(isolated_cache: Path) -> None:
    from tests.redis_servers import free_port

    require_redis()
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    done = stats(env={"PFLOW_STRUCTURE_CACHE_URL": url})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"Error: The execution cache at {url} cannot be reached (Error 111 connecting to 127.0.0.1:{port}. "
        "Connection refused). Start Redis there, or point PFLOW_STRUCTURE_CACHE_URL at a running one "
        "(unset it to use this host's file cache).\n"
    )


def test_recording_with_redis_down_logs_a_failure_and_never_raises(tmp_path: Path) -> None:
    from pflow_structure.service.usage import record_result
    from tests.redis_servers import free_port

    require_redis()
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    settings = Settings(cache_dir=tmp_path / "cache", failure_log=tmp_path / "failures.jsonl", cache_url=url)
    record_result(settings, "mcp:a", cached=False, raw=10, answered=10)
    (failure,) = read_failures(tmp_path / "failures.jsonl")
    assert (failure["operation"], failure["stage"]) == ("mcp:a", "usage")
    assert failure["error"] == f"ConnectionError: Error 111 connecting to 127.0.0.1:{port}. Connection refused."


def test_a_symlink_in_place_of_a_day_file_is_never_followed(tmp_path: Path) -> None:
    usage = tmp_path / "usage"
    usage.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched", encoding="utf-8")
    (usage / "2026-11-26.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        UsageLog(usage, clock=Clock()).record("mcp:a", usage_counts("inline", raw=1, answered=1))
    assert target.read_text(encoding="utf-8") == "untouched"
    assert UsageLog(usage, clock=Clock()).totals() == ({}, [])
