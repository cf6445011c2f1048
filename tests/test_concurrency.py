"""Processes writing, reading and pruning one cache at once never see a partial or lost entry.

Workers are spawned (not forked) processes; each records what went wrong in a result file,
and the tests assert that nothing did.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import ExecutionNotFoundError

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("real_ids")]  # hundreds of ids a second

WORKERS = 8
ENTRIES_PER_WORKER = 200


def payload(worker: int, n: int) -> dict[str, Any]:
    """Outputs whose size (50 B to 60 kB) and content depend on who wrote them, so a torn entry shows."""
    size = 50 + (worker * 7919 + n * 104_729) % 60_000
    return {"worker": worker, "n": n, "blob": (f"{worker}:{n};" * (size // 4 + 1))[:size]}


def _logged_ids(log: Path) -> list[tuple[str, int, int]]:
    """(id, worker, n) of every complete line another worker has logged so far."""
    try:
        text = log.read_text(encoding="ascii")
    except FileNotFoundError:
        return []
    worker = int(log.stem)
    return [(line.split()[0], worker, int(line.split()[1])) for line in text.split("\n")[:-1]]


def _check_entry(
    cache: ExecutionCache, execution_id: str, worker: int, n: int, evicting: bool, failures: list[str]
) -> None:
    try:
        entry = cache.get(execution_id)
    except ExecutionNotFoundError as exc:
        if not evicting or exc.args[0] != ExecutionNotFoundError(execution_id).args[0]:
            failures.append(f"get {execution_id}: {exc}")  # lost, or seen malformed
        return
    except Exception as exc:
        failures.append(f"get {execution_id}: {type(exc).__name__}: {exc}")
        return
    if entry.outputs != payload(worker, n) or entry.params != {"worker": worker, "n": n}:
        failures.append(f"get {execution_id}: wrong content")


def _check_raw_files(directory: Path, rng: random.Random, failures: list[str]) -> None:
    """Open a few entry files straight from a directory listing: each must be whole JSON."""
    names = [name for name in os.listdir(directory) if name.startswith("exec-") and name.endswith(".json")]
    for name in rng.sample(names, min(3, len(names))):
        try:
            document = json.loads((directory / name).read_bytes())
        except FileNotFoundError:
            continue  # pruned since the listing
        except Exception as exc:
            failures.append(f"raw {name}: {type(exc).__name__}: {exc}")
            continue
        params = document["params"]
        if document["outputs"] != payload(params["worker"], params["n"]):
            failures.append(f"raw {name}: wrong content")


def writer(
    worker: int, directory: str, logs: str, results: str, start: Any, count: int, evicting: bool, interval: float
) -> None:
    """Put ``count`` entries, reading back its own and other workers' entries as it goes."""
    failures: list[str] = []
    rng = random.Random(worker)
    cache = ExecutionCache(directory, fallback_directory=Path(directory).parent / "fallback")
    cache.maintenance_interval = interval
    log_dir = Path(logs)
    start.wait()
    with open(log_dir / f"{worker}.ids", "a", encoding="ascii") as log:
        for n in range(count):
            stored = cache.put("load-test", {"worker": worker, "n": n}, payload(worker, n))
            if stored.path is None or stored.path.parent != Path(directory) or stored.warnings:
                failures.append(f"put {n}: {stored.path} {stored.warnings}")
            log.write(f"{stored.execution_id} {n}\n")
            log.flush()
            _check_entry(cache, stored.execution_id, worker, n, evicting, failures)
            others = _logged_ids(log_dir / f"{rng.choice([w for w in range(WORKERS) if w != worker])}.ids")
            if others:
                _check_entry(cache, *rng.choice(others), evicting, failures)
            _check_raw_files(Path(directory), rng, failures)
    Path(results, f"{worker}.json").write_text(json.dumps(failures), encoding="utf-8")


def pruner(directory: str, results: str, start: Any, stop: str, max_bytes: int) -> None:
    """Prune in a loop until ``stop`` exists; records how often it pruned and what failed."""
    cache = ExecutionCache(directory, max_bytes=max_bytes, fallback_directory=Path(directory).parent / "fallback")
    failures: list[str] = []
    rounds = 0
    start.wait()
    while not os.path.exists(stop) or rounds == 0:
        try:
            cache.prune()
        except Exception as exc:
            failures.append(f"prune: {type(exc).__name__}: {exc}")
        rounds += 1
    Path(results, "pruner.json").write_text(json.dumps({"rounds": rounds, "failures": failures}), encoding="utf-8")


def _run(
    tmp_path: Path, *, count: int, prune_max_bytes: int | None = None, evicting: bool = False, interval: float = 60.0
) -> tuple[Path, list[str], dict[str, Any] | None]:
    """Start the writers (and a pruner), let them go at once, and collect their failures."""
    context = multiprocessing.get_context("spawn")
    directory, logs, results = tmp_path / "cache", tmp_path / "logs", tmp_path / "results"
    logs.mkdir()
    results.mkdir()
    stop = tmp_path / "stop"
    with_pruner = prune_max_bytes is not None
    start = context.Barrier(WORKERS + int(with_pruner))
    processes = [
        context.Process(
            target=writer, args=(w, str(directory), str(logs), str(results), start, count, evicting, interval)
        )
        for w in range(WORKERS)
    ]
    if with_pruner:
        processes.append(
            context.Process(target=pruner, args=(str(directory), str(results), start, str(stop), prune_max_bytes))
        )
    for process in processes:
        process.start()
    for process in processes[:WORKERS]:
        process.join(timeout=600)
    stop.touch()
    for process in processes[WORKERS:]:
        process.join(timeout=600)
    assert [p.exitcode for p in processes] == [0] * len(processes)
    failures = [f for w in range(WORKERS) for f in json.loads((results / f"{w}.json").read_text(encoding="utf-8"))]
    pruned = json.loads((results / "pruner.json").read_text(encoding="utf-8")) if with_pruner else None
    return directory, failures, pruned


def _all_logged(tmp_path: Path) -> list[tuple[str, int, int]]:
    return [entry for w in range(WORKERS) for entry in _logged_ids(tmp_path / "logs" / f"{w}.ids")]


def _entry_files(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith("exec-"))


def _assert_every_logged_entry_is_whole(tmp_path: Path, directory: Path) -> None:
    logged = _all_logged(tmp_path)
    assert len(logged) == WORKERS * ENTRIES_PER_WORKER
    assert _entry_files(directory) == sorted(f"{execution_id}.json" for execution_id, _, _ in logged)
    cache = ExecutionCache(directory, fallback_directory=tmp_path / "fallback")
    failures: list[str] = []
    for execution_id, worker, n in logged:
        _check_entry(cache, execution_id, worker, n, False, failures)
    assert failures == []


@pytest.fixture(scope="module")
def eight_writers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """One run of 8 processes x 200 entries, shared by the tests that only look at its outcome."""
    tmp_path = tmp_path_factory.mktemp("eight-writers")
    directory, failures, _ = _run(tmp_path, count=ENTRIES_PER_WORKER)
    return tmp_path, directory, failures


def test_eight_writing_and_reading_processes_see_no_partial_entry(
    eight_writers: tuple[Path, Path, list[str]],
) -> None:
    _, _, failures = eight_writers
    assert failures == []


def test_eight_writing_processes_lose_no_entry(eight_writers: tuple[Path, Path, list[str]]) -> None:
    tmp_path, directory, _ = eight_writers
    _assert_every_logged_entry_is_whole(tmp_path, directory)


def test_eight_writing_processes_leave_no_temporary_file(eight_writers: tuple[Path, Path, list[str]]) -> None:
    _, directory, _ = eight_writers
    assert [name for name in os.listdir(directory) if name.startswith(".tmp-")] == []


def test_concurrent_prune_under_the_size_cap_removes_nothing(tmp_path: Path) -> None:
    directory, failures, pruned = _run(tmp_path, count=ENTRIES_PER_WORKER, prune_max_bytes=1024**3, interval=0)
    assert failures == []
    assert pruned is not None
    assert pruned["failures"] == []
    _assert_every_logged_entry_is_whole(tmp_path, directory)


def test_concurrent_eviction_leaves_only_whole_entries(tmp_path: Path) -> None:
    directory, failures, pruned = _run(tmp_path, count=100, prune_max_bytes=2 * 1024**2, evicting=True, interval=0)
    assert failures == []
    assert pruned is not None
    assert pruned["failures"] == []
    remaining = _entry_files(directory)
    assert 0 < len(remaining) < WORKERS * 100  # the cap of 2 MB holds far fewer than 800 entries of ~30 kB
    for name in remaining:
        document = json.loads((directory / name).read_bytes())
        assert document["outputs"] == payload(document["params"]["worker"], document["params"]["n"])
