"""The execution cache's contract, run on every store: files, one Redis, and a 3-primary Redis Cluster.

Round trip, TTL, the expiry message, hostile ids, the size cap, list/stats/clear, and concurrent
writers (0 torn, 0 lost). The Redis servers are real, started here on loopback ports.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import ExecutionExpiredError, ExecutionNotFoundError, InvalidExecutionIdError
from tests.redis_servers import RedisCluster, RedisServer, flush, require_redis

T0 = 1_763_463_202.0
HOUR = 3600.0
BACKENDS = ("file", "redis", "cluster")


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_redis()
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_redis()
    cluster = RedisCluster(tmp_path_factory.mktemp("cluster")).start()
    yield cluster.url
    cluster.stop()


def make_cache(spec: tuple[str, ...], clock: Callable[[], float] = time.time, **options: Any) -> CacheBackend:
    """A cache from a picklable description: ("file", dir) or ("redis", url, namespace, local dir)."""
    if spec[0] == "file":
        return ExecutionCache(spec[1], fallback_directory=Path(spec[1]) / "fallback", clock=clock, **options)
    from pflow_structure.cache.redis_store import RedisExecutionCache

    local = ExecutionCache(spec[3], fallback_directory=Path(spec[3]) / "fallback", clock=clock, **options)
    return RedisExecutionCache(spec[1], local=local, namespace=spec[2], clock=clock)


@pytest.fixture(params=BACKENDS)
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, ...]:
    if request.param == "file":
        return ("file", str(tmp_path / "cache"))
    url = request.getfixturevalue("redis_url" if request.param == "redis" else "cluster_url")
    flush(url)
    return ("redis", url, f"test-{secrets.token_hex(4)}", str(tmp_path / "local"))


def test_round_trip_returns_what_was_put(spec: tuple[str, ...]) -> None:
    cache = make_cache(spec)
    outputs = {"result": [{"title": "é ✓ \udcff", "n": i, "ok": None} for i in range(3)], "big": "x" * 200_000}
    stored = cache.put("read-json", {"path": "a.json", "api_key": "k"}, outputs, notes=["a note"])
    assert (stored.cached, stored.warnings) == (True, [])
    entry = cache.get(stored.execution_id)
    assert (entry.outputs, entry.params, list(entry.notes)) == (
        outputs,
        {"path": "a.json", "api_key": "***"},
        ["a note"],
    )


def test_entry_is_readable_at_exactly_its_ttl_and_expired_past_it(spec: tuple[str, ...]) -> None:
    clock = Clock()
    cache = make_cache(spec, clock, ttl_hours=2)
    execution_id = cache.put("n", {}, {"result": 1}).execution_id
    clock.now = T0 + 2 * HOUR
    assert cache.get(execution_id).outputs == {"result": 1}
    clock.now = T0 + 3 * HOUR
    with pytest.raises(ExecutionExpiredError, match=rf"^Execution expired: {execution_id} is 3.0 h old"):
        cache.get(execution_id)


def test_an_entry_past_its_real_ttl_says_execution_expired(spec: tuple[str, ...]) -> None:
    """Real time: Redis drops the key itself (SET ... EX); the id's time still tells expired from evicted."""
    cache = make_cache(spec, ttl_hours=1 / 3600)
    execution_id = cache.put("n", {}, {"result": 1}).execution_id
    time.sleep(1.1)  # Redis's EX is 1 s; the id's second is at least 1.1 s old by now
    with pytest.raises(ExecutionExpiredError) as raised:
        cache.get(execution_id)
    assert re.fullmatch(
        rf"Execution expired: {execution_id} is 0\.0 h old and entries live 0\.000277778 h\. "
        r"Run the node again with `pflow-structure run NODE \.\.\.` to get a new execution id\.",
        str(raised.value),
    )


HOSTILE = ["../../etc/passwd", "", "*", "exec-*", "exec-1763463202-0cd0c8fe\x00", "exec-1763463202-0cd0c8fe:x", "é"]


@pytest.mark.parametrize("hostile", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_ids_are_refused_before_the_store_is_touched(spec: tuple[str, ...], hostile: str) -> None:
    cache = make_cache(spec)
    with pytest.raises(InvalidExecutionIdError, match="is not a valid execution id"):
        cache.get(hostile)
    with pytest.raises(InvalidExecutionIdError):
        cache.put("n", {}, {"result": 1}, execution_id=hostile)
    with pytest.raises(InvalidExecutionIdError):
        cache.delete(hostile)
    assert cache.scan() == []


def test_an_id_is_never_reused(spec: tuple[str, ...]) -> None:
    cache = make_cache(spec)
    execution_id = f"exec-{int(time.time())}-0cd0c8fe"
    first = cache.put("n", {}, {"result": 1}, execution_id=execution_id)
    second = cache.put("n", {}, {"result": 2}, execution_id=execution_id)
    assert (first.cached, second.cached) == (True, False)
    assert second.warnings == [f"The execution was not cached: the execution id {execution_id} is already taken."]
    assert cache.get(execution_id).outputs == {"result": 1}


def test_prune_evicts_the_oldest_while_over_the_size_cap(spec: tuple[str, ...]) -> None:
    clock = Clock()
    ids = []
    for second in range(3):
        clock.now = T0 + second
        ids.append(make_cache(spec, clock).put("n", {}, {"result": secrets.token_hex(3000)}).execution_id)
    sizes = {info.execution_id: info.size for info in make_cache(spec, clock).scan()}
    assert sorted(sizes) == sorted(ids)
    capped = make_cache(spec, clock, max_bytes=sizes[ids[1]] + sizes[ids[2]])
    assert capped.prune() == {"expired": 0, "evicted": 1, "remaining": 2}
    assert [info.execution_id for info in capped.scan()] == ids[1:]
    with pytest.raises(ExecutionNotFoundError):
        capped.get(ids[0])


def test_prune_removes_expired_entries(spec: tuple[str, ...]) -> None:
    clock = Clock()
    cache = make_cache(spec, clock, ttl_hours=1, maintenance_interval=10 * HOUR)  # no pruning on put here
    old = cache.put("n", {}, {"result": 1}).execution_id
    clock.now = T0 + 2 * HOUR
    new = cache.put("n", {}, {"result": 2}).execution_id
    assert cache.prune() == {"expired": 1, "evicted": 0, "remaining": 1}
    assert [info.execution_id for info in cache.scan()] == [new]
    assert old != new


def test_stats_and_clear_see_every_entry(spec: tuple[str, ...]) -> None:
    cache = make_cache(spec)
    for n in range(5):
        cache.put("n", {}, {"result": n})
    stats = cache.stats()
    assert (stats["entries"], stats["expired"], stats["total_bytes"] > 0) == (5, 0, True)
    assert cache.clear() == 5
    assert cache.scan() == []


# -- concurrent writers ---------------------------------------------------------------------------

WRITERS = 4
PER_WRITER = 40


def payload(worker: int, n: int) -> dict[str, Any]:
    size = 50 + (worker * 7919 + n * 104_729) % 40_000  # some over the compression threshold, some under
    return {"worker": worker, "n": n, "blob": (f"{worker}:{n};" * (size // 4 + 1))[:size]}


def writer(spec: tuple[str, ...], worker: int, results: str, start: Any) -> None:
    """Put entries, reading back its own and earlier ones; record failures and the ids it was given."""
    cache = make_cache(spec)
    failures: list[str] = []
    ids: list[str] = []
    start.wait()
    for n in range(PER_WRITER):
        stored = cache.put("load", {"worker": worker, "n": n}, payload(worker, n))
        if not stored.cached or stored.warnings:
            failures.append(f"put {n}: {stored.warnings}")
        ids.append(stored.execution_id)
        for back, execution_id in ((n, stored.execution_id), (n // 2, ids[n // 2])):
            try:
                entry = cache.get(execution_id)
            except Exception as exc:
                failures.append(f"get {execution_id}: {exc}")
                continue
            if entry.outputs != payload(worker, back):
                failures.append(f"get {execution_id}: torn or wrong content")
    Path(results, f"{worker}.json").write_text(json.dumps({"failures": failures, "ids": ids}), encoding="utf-8")


@pytest.mark.slow
def test_concurrent_writers_tear_nothing_and_lose_nothing(
    spec: tuple[str, ...], tmp_path: Path, real_ids: None
) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WRITERS)
    results = tmp_path / "results"
    results.mkdir()
    processes = [context.Process(target=writer, args=(spec, w, str(results), start)) for w in range(WRITERS)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    reports = [json.loads((results / f"{w}.json").read_text(encoding="utf-8")) for w in range(WRITERS)]
    assert [f for report in reports for f in report["failures"]] == []
    cache = make_cache(spec)
    logged = {execution_id: (w, n) for w, report in enumerate(reports) for n, execution_id in enumerate(report["ids"])}
    assert len(logged) == WRITERS * PER_WRITER
    assert sorted(info.execution_id for info in cache.scan()) == sorted(logged)
    wrong = [i for i, (w, n) in logged.items() if cache.get(i).outputs != payload(w, n)]
    assert wrong == []
