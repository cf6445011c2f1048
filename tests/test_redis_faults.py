"""The Redis cache when things go wrong: Redis down, restarted, full, evicting; and the URL's password never shown."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import CacheUnavailableError, ExecutionNotFoundError, ParameterError
from pflow_structure.settings import Settings
from tests.redis_servers import RedisServer, free_port, require_redis

PASSWORD = "pa55-w0rd-never-shown"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    require_redis()
    started = RedisServer(tmp_path / "redis").start()
    yield started
    started.stop()


def _redis_cache(url: str, tmp_path: Path) -> Any:
    from pflow_structure.cache.redis_store import RedisExecutionCache

    return RedisExecutionCache(url, local=ExecutionCache(tmp_path / "local"), namespace=secrets.token_hex(4))


def _cli(*args: str, url: str, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PFLOW_STRUCTURE_CACHE_URL": url, "PFLOW_STRUCTURE_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "pflow_structure", *args], capture_output=True, text=True, env=env, timeout=60
    )


def _down_url() -> tuple[str, int]:
    port = free_port()
    return f"redis://app:{PASSWORD}@127.0.0.1:{port}/0", port


def test_reading_with_redis_down_fails_at_once_naming_host_port_and_the_fix(tmp_path: Path) -> None:
    require_redis()
    url, port = _down_url()
    done = _cli("read-fields", "exec-1763463202-0cd0c8fe", "result", url=url, cache_dir=tmp_path / "cache")
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"Error: The execution cache at redis://app@127.0.0.1:{port}/0 cannot be reached (Error 111 connecting to "
        f"127.0.0.1:{port}. Connection refused). Start Redis there, or point PFLOW_STRUCTURE_CACHE_URL at a running "
        "one (unset it to use this host's file cache)."
    )
    assert PASSWORD not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "command", [["cache", "list"], ["cache", "stats"], ["cache", "prune"], ["cache", "clear", "--yes"]]
)
def test_cache_commands_with_redis_down_fail_with_exit_code_1(tmp_path: Path, command: list[str]) -> None:
    require_redis()
    url, port = _down_url()
    done = _cli(*command, url=url, cache_dir=tmp_path / "cache")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"Error: The execution cache at redis://app@127.0.0.1:{port}/0 cannot be reached")
    assert PASSWORD not in done.stderr


def test_a_run_with_redis_down_keeps_its_output_on_this_host_and_says_so(tmp_path: Path) -> None:
    require_redis()
    url, port = _down_url()
    data = tmp_path / "data.json"
    data.write_text('{"items": [{"title": "kept"}]}', encoding="utf-8")
    ran = _cli("run", "read-json", f"path={data}", "--json", url=url, cache_dir=tmp_path / "cache")
    assert ran.returncode == 0, ran.stderr
    import json

    result = json.loads(ran.stdout)
    assert result["warnings"][:2] == [
        f"The execution was not stored in the shared cache at redis://app@127.0.0.1:{port}/0: Redis did not take it: "
        f"Error 111 connecting to 127.0.0.1:{port}. Connection refused.",
        f"It is kept in this host's file cache ({tmp_path / 'cache'}) instead: read_fields works here, "
        "but other instances cannot read this execution id.",
    ]
    read = _cli("read-fields", result["execution_id"], "result.items[0].title", url=url, cache_dir=tmp_path / "cache")
    assert (read.returncode, read.stdout) == (0, 'result.items[0].title: "kept"\n')
    assert PASSWORD not in ran.stdout + ran.stderr + read.stdout + read.stderr


def test_calls_after_a_redis_restart_recover_in_the_same_process(server: RedisServer, tmp_path: Path) -> None:
    cache = _redis_cache(server.url, tmp_path)
    before = cache.put("n", {}, {"result": "before"})
    server.restart()  # same port, no persistence: the old entry is gone, the pooled connection is dead
    after = cache.put("n", {}, {"result": "after"})
    assert (before.where, after.where, after.warnings) == ("redis", "redis", [])
    assert cache.get(after.execution_id).outputs == {"result": "after"}
    with pytest.raises(ExecutionNotFoundError, match=r"^Execution not found or evicted: "):
        cache.get(before.execution_id)


def test_a_full_redis_with_noeviction_gives_a_clear_warning_and_keeps_the_run_locally(tmp_path: Path) -> None:
    require_redis()
    full = RedisServer(tmp_path / "redis", maxmemory="3mb", maxmemory_policy="noeviction").start()
    try:
        cache = _redis_cache(full.url, tmp_path)
        outcomes = [cache.put("n", {}, {"result": secrets.token_hex(50_000)}) for _ in range(60)]
    finally:
        full.stop()
    local = [stored for stored in outcomes if stored.where == "local"]
    assert local, "3 MB cannot hold 60 entries of 100 kB"
    assert local[0].warnings[0] == (
        f"The execution was not stored in the shared cache at {full.url}: Redis is full (maxmemory reached with the "
        "noeviction policy): raise maxmemory, or set maxmemory-policy volatile-ttl or allkeys-lru so old entries "
        "make room."
    )
    assert cache.get(local[0].execution_id).outputs["result"]


def test_an_entry_evicted_by_redis_says_not_found_or_evicted(tmp_path: Path) -> None:
    require_redis()
    evicting = RedisServer(tmp_path / "redis", maxmemory="3mb", maxmemory_policy="allkeys-lru").start()
    try:
        cache = _redis_cache(evicting.url, tmp_path)
        ids = [cache.put("n", {}, {"result": secrets.token_hex(50_000)}).execution_id for _ in range(60)]
        gone = [i for i in ids if evicting.cli("exists", cache.key(i)) == "0"]  # LRU is sampled: which ones varies
        assert gone, "3 MB cannot hold 60 entries of 100 kB"
        with pytest.raises(ExecutionNotFoundError) as raised:
            cache.get(gone[0])
    finally:
        evicting.stop()
    assert str(raised.value) == (
        f"Execution not found or evicted: {gone[0]} (not in the shared cache at {evicting.url}: evicted to make room, "
        "deleted, or never stored there). Run the node again with `pflow-structure run NODE ...` to get a new "
        "execution id."
    )


def test_a_redis_call_to_a_silent_server_times_out(tmp_path: Path) -> None:
    """A listener that never answers (a hung Redis): the call ends with the timeout's error, not a hang."""
    require_redis()
    import socket

    from pflow_structure.cache.redis_store import RedisExecutionCache

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0?socket_timeout=0.3"
        cache = RedisExecutionCache(url, local=ExecutionCache(tmp_path / "local"))
        with pytest.raises(CacheUnavailableError, match="cannot be reached \\(Timeout"):
            cache.get("exec-1763463202-0cd0c8fe")


def test_the_filter_decisions_are_shared_through_redis(server: RedisServer) -> None:
    from pflow_structure.cache.redis_decisions import RedisDecisionCache

    key = "a" * 64
    first = Settings(cache_url=server.url).filter_options().decision_store
    second = RedisDecisionCache(server.url, ttl_days=30)
    assert isinstance(first, RedisDecisionCache)
    assert first.put(key, ["result[0].title"], node_type="n") is True
    assert second.get(key) == ["result[0].title"]
    assert 0 < int(server.cli("ttl", f"pflow-structure:decision:{key}")) <= 30 * 86400


def test_settings_never_show_the_password_and_refuse_other_schemes() -> None:
    url = f"redis://app:{PASSWORD}@cache.internal:6380/2"
    assert PASSWORD not in repr(Settings(cache_url=url))
    assert "cache_url='redis://app@cache.internal:6380/2'" in repr(Settings(cache_url=url))
    with pytest.raises(ParameterError) as refused:
        Settings.from_env({"PFLOW_STRUCTURE_CACHE_URL": f"http://app:{PASSWORD}@cache.internal:6380/2"})
    assert str(refused.value) == (
        "PFLOW_STRUCTURE_CACHE_URL=http://app@cache.internal:6380/2 is not a Redis URL; use "
        "redis://[user:password@]host:port/db, rediss:// for TLS, or redis+cluster:// for a cluster"
    )


def test_without_the_url_nothing_imports_redis(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text('{"a": [1, 2]}', encoding="utf-8")
    code = (
        "import sys; from pflow_structure.service import registry_run, read_fields;"
        "from pflow_structure.settings import Settings;"
        f"run = registry_run('read-json', {{'path': {str(data)!r}}});"
        "assert read_fields(run['execution_id'], ['result.a']) == {'result.a': [1, 2]};"
        "print(type(Settings.from_env().cache()).__name__, 'redis' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PFLOW_STRUCTURE_CACHE_URL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stdout) == (0, "ExecutionCache False\n"), done.stderr


def test_an_acl_user_and_password_in_the_url_work_and_a_wrong_one_is_named_without_it(tmp_path: Path) -> None:
    require_redis()
    server = RedisServer(tmp_path / "redis", user=f"app on >{PASSWORD} ~* &* +@all").start()
    try:
        cache = _redis_cache(f"redis://app:{PASSWORD}@127.0.0.1:{server.port}/0", tmp_path)
        stored = cache.put("n", {}, {"result": 1})
        assert (stored.where, cache.get(stored.execution_id).outputs) == ("redis", {"result": 1})
        wrong = _redis_cache(f"redis://app:not-{PASSWORD}@127.0.0.1:{server.port}/0", tmp_path)
        with pytest.raises(CacheUnavailableError) as refused:
            wrong.get(stored.execution_id)
    finally:
        server.stop()
    assert str(refused.value).startswith(
        f"The execution cache at redis://app@127.0.0.1:{server.port}/0 cannot be reached (invalid username-password"
    )
    assert PASSWORD not in str(refused.value)
