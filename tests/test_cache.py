"""The execution cache: ids, TTL, malformed entries, fallback directory, prune, clear, stats."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import ExecutionExpiredError, ExecutionNotFoundError
from pflow_structure.service import read_fields, registry_run
from pflow_structure.settings import Settings
from tests.conftest import examples, run_as_nobody

T0 = 1_763_463_202.0  # 2025-11-18T10:53:22Z
HOUR = 3600.0
ENTRY_ID = "exec-1763463202-0cd0c8fe"
FIX = "Run the node again with `pflow-structure run NODE ...` to get a new execution id."


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _cache(tmp_path: Path, clock: Callable[[], float] | None = None, **kwargs: Any) -> ExecutionCache:
    kwargs.setdefault("fallback_directory", tmp_path / "fallback")
    return ExecutionCache(tmp_path / "cache", clock=clock or Clock(), **kwargs)


def _not_a_directory(tmp_path: Path, name: str = "a-file") -> Path:
    """A path under a regular file: mkdir fails there even for root (unlike a chmod 0500 directory)."""
    blocker = tmp_path / name
    blocker.write_text("not a directory")
    return blocker / "node-executions"


# -- ids ------------------------------------------------------------------------------------


def test_id_is_exec_seconds_and_eight_hex_digits(tmp_path: Path) -> None:
    stored = _cache(tmp_path, Clock(T0 + 0.7)).put("read-json", {}, {"result": 1})
    assert re.fullmatch(r"exec-1763463202-[0-9a-f]{8}", stored.execution_id)


def test_id_at_the_last_second_of_year_9999_is_at_most_32_characters_and_reads_back(tmp_path: Path) -> None:
    cache = _cache(tmp_path, Clock(253_402_300_799.0))  # 9999-12-31T23:59:59Z
    stored = cache.put("read-json", {}, {"result": 1})
    assert len(stored.execution_id) <= 32
    assert cache.get(stored.execution_id).outputs == {"result": 1}


def test_ids_put_in_the_same_second_are_distinct(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    ids = {cache.put("read-json", {}, {"result": n}).execution_id for n in range(300)}
    assert len(ids) == 300
    assert len(list((tmp_path / "cache").glob("exec-*.json"))) == 300


# -- put and get ----------------------------------------------------------------------------


def test_stored_file_has_the_spec_fields(tmp_path: Path) -> None:
    stored = _cache(tmp_path).put("read-json", {"path": "x.json"}, {"result": [1, 2]})
    assert stored.path is not None
    document = json.loads(stored.path.read_bytes().decode("utf-8"))
    assert document == {
        "execution_id": stored.execution_id,
        "node_type": "read-json",
        "timestamp": "2025-11-18T10:53:22Z",
        "ttl_hours": 24.0,
        "params": {"path": "x.json"},
        "outputs": {"result": [1, 2]},
        "binary_paths": [],
        "notes": [],
        "format_version": 1,
    }


def test_get_returns_what_put_stored(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    stored = cache.put("http", {"url": "u"}, {"result": {"a": [1]}}, binary_paths=[["result", "b"]], notes=["n"])
    entry = cache.get(stored.execution_id)
    assert (entry.node_type, entry.params, entry.outputs, entry.binary_paths, entry.notes) == (
        "http",
        {"url": "u"},
        {"result": {"a": [1]}},
        [["result", "b"]],
        ["n"],
    )


def test_get_of_an_unknown_id_says_execution_not_found(tmp_path: Path) -> None:
    with pytest.raises(ExecutionNotFoundError) as caught:
        _cache(tmp_path).get(ENTRY_ID)
    assert str(caught.value) == f"Execution not found: {ENTRY_ID}. {FIX}"


def test_output_with_a_lone_surrogate_is_stored_as_utf8_and_reads_back(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    stored = cache.put("shell", {}, {"stdout": "name-\udcff-é"})
    assert stored.path is not None
    stored.path.read_bytes().decode("utf-8")  # strict: raises if the file is not UTF-8
    assert cache.get(stored.execution_id).outputs == {"stdout": "name-\udcff-é"}


def test_params_that_are_not_json_are_stored_as_the_encoder_writes_outputs(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    params = {"path": Path("/x/y.json"), "ratio": float("nan"), 3: (1, 2), "raw": b"ab", "big": 10**5000}
    stored = cache.put("read-json", params, {"result": 1})
    assert cache.get(stored.execution_id).params == {
        "path": "/x/y.json",
        "ratio": "NaN",
        "3": [1, 2],
        "raw": "YWI=",
        "big": hex(10**5000),
    }


def test_self_referencing_params_do_not_fail_the_put(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    params: dict[str, Any] = {"name": "loop"}
    params["self"] = params
    stored = cache.put("read-json", params, {"result": 1})
    assert cache.get(stored.execution_id).params["name"] == "loop"


def test_outputs_that_are_not_json_safe_raise_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        _cache(tmp_path).put("read-json", {}, {"result": object()})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node_type=st.text(max_size=40), params=st.dictionaries(st.text(), json_values, max_size=4), outputs=json_values)
def test_put_then_get_returns_equal_outputs(tmp_path: Path, node_type: str, params: Any, outputs: Any) -> None:
    cache = _cache(tmp_path)
    entry = cache.get(cache.put(node_type, params, outputs).execution_id)
    assert (entry.node_type, entry.outputs) == (node_type, outputs)


# -- TTL ------------------------------------------------------------------------------------


def test_entry_is_readable_at_exactly_its_ttl(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock)
    stored = cache.put("read-json", {}, {"result": 1})
    clock.now = T0 + 24 * HOUR
    assert cache.get(stored.execution_id).outputs == {"result": 1}


def test_entry_past_its_ttl_says_execution_expired(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock)
    stored = cache.put("read-json", {}, {"result": 1})
    clock.now = T0 + 24 * HOUR + 1
    with pytest.raises(ExecutionExpiredError) as caught:
        cache.get(stored.execution_id)
    assert str(caught.value) == (f"Execution expired: {stored.execution_id} is 24.0 h old and entries live 24 h. {FIX}")


def test_read_fields_of_an_expired_entry_says_execution_expired(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock)
    stored = cache.put("read-json", {}, {"result": 1})
    clock.now = T0 + 30 * HOUR
    with pytest.raises(ExecutionExpiredError, match=r"^Execution expired: "):
        read_fields(stored.execution_id, ["result"], cache=cache)


def test_entry_expires_at_its_own_shorter_ttl(tmp_path: Path) -> None:
    clock = Clock()
    stored = _cache(tmp_path, clock, ttl_hours=1).put("read-json", {}, {"result": 1})
    clock.now = T0 + 2 * HOUR
    with pytest.raises(ExecutionExpiredError) as caught:
        _cache(tmp_path, clock).get(stored.execution_id)
    assert (caught.value.age_hours, caught.value.ttl_hours) == (2.0, 1.0)


def test_entry_expires_at_the_cache_ttl_when_that_is_shorter(tmp_path: Path) -> None:
    clock = Clock()
    stored = _cache(tmp_path, clock).put("read-json", {}, {"result": 1})
    clock.now = T0 + 2 * HOUR
    with pytest.raises(ExecutionExpiredError) as caught:
        _cache(tmp_path, clock, ttl_hours=1).get(stored.execution_id)
    assert str(caught.value) == f"Execution expired: {stored.execution_id} is 2.0 h old and entries live 1 h. {FIX}"


# -- malformed entries ----------------------------------------------------------------------


def _valid_document(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "execution_id": ENTRY_ID,
        "node_type": "read-json",
        "timestamp": "2025-11-18T10:53:22Z",
        "ttl_hours": 24,
        "params": {},
        "outputs": {"result": 1},
    }
    document.update(changes)
    return {k: v for k, v in document.items() if v is not _DROP}


_DROP = object()

MALFORMED = {
    "empty file": b"",
    "truncated JSON": json.dumps(_valid_document()).encode()[:40],
    "not UTF-8": b'{"execution_id": "\xff\xfe"}',
    "JSON list": b"[1, 2]",
    "JSON string": b'"exec-1763463202-0cd0c8fe"',
    "missing outputs": json.dumps(_valid_document(outputs=_DROP)).encode(),
    "missing timestamp": json.dumps(_valid_document(timestamp=_DROP)).encode(),
    "id mismatch": json.dumps(_valid_document(execution_id="exec-1763463202-ffffffff")).encode(),
    "node_type not a string": json.dumps(_valid_document(node_type=5)).encode(),
    "timestamp a number": json.dumps(_valid_document(timestamp=1763463202)).encode(),
    "timestamp not ISO": json.dumps(_valid_document(timestamp="yesterday")).encode(),
    "ttl a string": json.dumps(_valid_document(ttl_hours="24")).encode(),
    "ttl null": json.dumps(_valid_document(ttl_hours=None)).encode(),
    "ttl true": json.dumps(_valid_document(ttl_hours=True)).encode(),
    "ttl NaN": json.dumps(_valid_document(ttl_hours=float("nan"))).encode(),
    "ttl Infinity": json.dumps(_valid_document(ttl_hours=float("inf"))).encode(),
    "ttl negative": json.dumps(_valid_document(ttl_hours=-1)).encode(),
    "binary_paths a string": json.dumps(_valid_document(binary_paths="result")).encode(),
    "binary_paths of dicts": json.dumps(_valid_document(binary_paths=[{"a": 1}])).encode(),
    "notes a number": json.dumps(_valid_document(notes=5)).encode(),
    "notes a string": json.dumps(_valid_document(notes="abc")).encode(),
    "nested 100000 deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("content", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_entry_is_a_miss_that_says_malformed(content: bytes, tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{ENTRY_ID}.json").write_bytes(content)
    with pytest.raises(ExecutionNotFoundError) as caught:
        _cache(tmp_path).get(ENTRY_ID)
    assert str(caught.value).startswith(f"Execution not found: {ENTRY_ID} (its cache file is malformed (")
    assert str(caught.value).endswith(f") and was treated as a miss). {FIX}")


def test_empty_entry_file_error_names_the_json_problem(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{ENTRY_ID}.json").write_bytes(b"")
    with pytest.raises(ExecutionNotFoundError) as caught:
        _cache(tmp_path).get(ENTRY_ID)
    assert str(caught.value) == (
        f"Execution not found: {ENTRY_ID} (its cache file is malformed "
        f"(Expecting value: line 1 column 1 (char 0)) and was treated as a miss). {FIX}"
    )


def test_valid_hand_written_entry_reads_back(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{ENTRY_ID}.json").write_text(json.dumps(_valid_document()), encoding="utf-8")
    assert _cache(tmp_path).get(ENTRY_ID).outputs == {"result": 1}


def test_read_fields_of_a_malformed_entry_raises_execution_not_found(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{ENTRY_ID}.json").write_bytes(b"{")
    with pytest.raises(ExecutionNotFoundError, match=r"malformed"):
        read_fields(ENTRY_ID, ["result"], cache=_cache(tmp_path))


# -- unwritable directories -----------------------------------------------------------------


def test_put_into_an_unwritable_directory_stores_in_the_fallback_with_warnings(tmp_path: Path) -> None:
    main = _not_a_directory(tmp_path)
    cache = ExecutionCache(main, fallback_directory=tmp_path / "fallback", clock=Clock())
    stored = cache.put("read-json", {}, {"result": 1})
    assert stored.path == tmp_path / "fallback" / f"{stored.execution_id}.json"
    assert stored.warnings == [
        f"Cache directory {main} is not writable (Not a directory).",
        f"Stored the execution in the fallback directory {tmp_path / 'fallback'} instead.",
    ]


def test_entry_in_the_fallback_directory_reads_back(tmp_path: Path) -> None:
    cache = ExecutionCache(_not_a_directory(tmp_path), fallback_directory=tmp_path / "fallback", clock=Clock())
    stored = cache.put("read-json", {}, {"result": 1})
    assert cache.get(stored.execution_id).outputs == {"result": 1}


def test_put_with_both_directories_unwritable_returns_warnings_and_no_path(tmp_path: Path) -> None:
    main, fallback = _not_a_directory(tmp_path, "one"), _not_a_directory(tmp_path, "two")
    stored = ExecutionCache(main, fallback_directory=fallback).put("read-json", {}, {"result": 1})
    assert (stored.path, stored.cached) == (None, False)
    assert stored.warnings == [
        f"Cache directory {main} is not writable (Not a directory).",
        f"Cache directory {fallback} is not writable (Not a directory).",
        "The execution was not cached, so read_fields cannot read it; "
        "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory.",
    ]


def _json_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    path.write_text("[1, 2, 3]", encoding="utf-8")
    return path


def test_registry_run_with_an_unwritable_cache_warns_and_read_fields_finds_the_fallback(tmp_path: Path) -> None:
    main = _not_a_directory(tmp_path)
    config = Settings(cache_dir=main)  # default fallback: under TMPDIR (see conftest)
    run = registry_run("read-json", {"path": str(_json_file(tmp_path))}, settings=config, structure=True)
    fallback = config.cache().fallback_directory
    assert run["structure"]["result"] == {"type": "list", "length": 3}
    assert run["warnings"] == [
        f"Cache directory {main} is not writable (Not a directory).",
        f"Stored the execution in the fallback directory {fallback} instead.",
    ]
    assert read_fields(run["execution_id"], ["result[1]"], settings=config) == {"result[1]": 2}


def test_registry_run_with_no_writable_directory_still_returns_the_structure(tmp_path: Path) -> None:
    cache = ExecutionCache(_not_a_directory(tmp_path, "one"), fallback_directory=_not_a_directory(tmp_path, "two"))
    run = registry_run("read-json", {"path": str(_json_file(tmp_path))}, cache=cache, structure=True)
    assert run["structure"]["result"] == {"type": "list", "length": 3}
    assert run["warnings"][-1] == (
        "The execution was not cached, so read_fields cannot read it; "
        "set PFLOW_STRUCTURE_CACHE_DIR to a writable directory."
    )


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to drop to nobody")
def test_permission_denied_for_an_unprivileged_user_falls_back_to_a_private_temp_dir() -> None:
    import filelock  # noqa: F401  (imported before the fork: nobody cannot read root's interpreter files)

    base = Path(tempfile.mkdtemp(prefix="pflow-structure-test-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        main = base / "cache"
        main.mkdir(mode=0o755)  # root's, readable but not writable by nobody
        shared_tmp = base / "tmp"
        shared_tmp.mkdir()
        os.chmod(shared_tmp, 0o1777)

        def action() -> dict[str, Any]:
            tempfile.tempdir = str(shared_tmp)
            cache = ExecutionCache(main, clock=Clock())
            stored = cache.put("read-json", {}, {"result": 1})
            return {"path": str(stored.path), "warnings": stored.warnings,
                    "outputs": cache.get(stored.execution_id).outputs}  # fmt: skip

        result = run_as_nobody(action)
        fallback = shared_tmp / "pflow-structure-65534" / "node-executions"
        assert result["warnings"] == [
            f"Cache directory {main} is not writable (Permission denied).",
            f"Stored the execution in the fallback directory {fallback} instead.",
        ]
        assert (Path(result["path"]).parent, result["outputs"]) == (fallback, {"result": 1})
        info = os.stat(fallback)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (65534, 0o700)
    finally:
        shutil.rmtree(base)


def test_fallback_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    fallback = tmp_path / "fallback"
    fallback.mkdir(mode=0o777)
    os.chown(fallback, 65534, 65534)
    main = _not_a_directory(tmp_path)
    stored = ExecutionCache(main, fallback_directory=fallback).put("read-json", {}, {"result": 1})
    assert stored.path is None
    assert stored.warnings[1] == (
        f"Cache directory {fallback} is not writable ({fallback} belongs to another user; refusing to use it)."
    )


# -- prune, clear, stats, maintenance -------------------------------------------------------


def _put_at(cache: ExecutionCache, clock: Clock, when: float, payload: str = "x") -> str:
    clock.now = when
    return cache.put("read-json", {}, {"result": payload}).execution_id


def _entry_ids(tmp_path: Path) -> list[str]:
    return sorted(p.name.removesuffix(".json") for p in (tmp_path / "cache").glob("exec-*.json"))


def test_prune_removes_expired_entries(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock)
    _put_at(cache, clock, T0)
    kept = _put_at(cache, clock, T0 + HOUR)
    clock.now = T0 + 24.5 * HOUR
    assert cache.prune() == {"expired": 1, "evicted": 0, "remaining": 1}
    assert _entry_ids(tmp_path) == [kept]


def test_prune_evicts_the_oldest_entries_while_over_max_bytes(tmp_path: Path) -> None:
    clock = Clock()
    writer = _cache(tmp_path, clock)
    ids = [_put_at(writer, clock, T0 + n) for n in range(5)]
    size = (tmp_path / "cache" / f"{ids[0]}.json").stat().st_size
    pruner = _cache(tmp_path, clock, max_bytes=2 * size + size // 2)
    assert pruner.prune() == {"expired": 0, "evicted": 3, "remaining": 2}
    assert _entry_ids(tmp_path) == sorted(ids[3:])


def test_prune_removes_stale_temporary_files_and_keeps_fresh_ones(tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "cache", fallback_directory=tmp_path / "fallback")
    cache.put("read-json", {}, {"result": 1})
    stale, fresh = tmp_path / "cache" / ".tmp-stale.json", tmp_path / "cache" / ".tmp-fresh.json"
    stale.write_text("{")
    fresh.write_text("{")
    two_hours_ago = time.time() - 2 * HOUR
    os.utime(stale, (two_hours_ago, two_hours_ago))
    cache.prune()
    assert (stale.exists(), fresh.exists()) == (False, True)


def test_clear_deletes_every_entry_in_both_directories(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    for n in range(3):
        cache.put("read-json", {}, {"result": n})
    fallback_entry = tmp_path / "fallback" / f"{ENTRY_ID}.json"
    fallback_entry.parent.mkdir()
    fallback_entry.write_text(json.dumps(_valid_document()))
    assert cache.clear() == 4
    assert (_entry_ids(tmp_path), fallback_entry.exists()) == ([], False)


def test_delete_removes_one_entry(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    gone, kept = (cache.put("read-json", {}, {"result": n}).execution_id for n in range(2))
    assert cache.delete(gone) is True
    assert _entry_ids(tmp_path) == [kept]


def test_stats_counts_entries_bytes_and_expired(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock)
    ids = [_put_at(cache, clock, T0 + n * HOUR) for n in range(3)]
    clock.now = T0 + 25 * HOUR
    total = sum((tmp_path / "cache" / f"{i}.json").stat().st_size for i in ids)
    assert cache.stats() == {
        "store": "file",
        "directory": str(tmp_path / "cache"),
        "entries": 3,
        "expired": 1,
        "total_bytes": total,
        "max_bytes": 1024**3,
        "ttl_hours": 24.0,
        "oldest": "2025-11-18T10:53:22Z",
        "newest": "2025-11-18T12:53:22Z",
    }


def test_stats_of_an_empty_cache(tmp_path: Path) -> None:
    stats = _cache(tmp_path).stats()
    assert (stats["entries"], stats["total_bytes"], stats["oldest"], stats["newest"]) == (0, 0, None, None)


def test_scan_lists_only_regular_files_named_by_valid_ids(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    stored = cache.put("read-json", {}, {"result": 1})
    directory = tmp_path / "cache"
    for name in ("exec-foo.json", ".tmp-abc.json", "notes.txt", "exec-1763463202-ABCDEF12.json"):
        (directory / name).write_text("{}")
    (directory / f"{ENTRY_ID}.json").symlink_to(directory / "notes.txt")
    assert [info.execution_id for info in cache.scan()] == [stored.execution_id]


def test_put_prunes_expired_entries_when_maintenance_is_due(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock, maintenance_interval=0)
    _put_at(cache, clock, T0)
    new = _put_at(cache, clock, T0 + 25 * HOUR)
    assert _entry_ids(tmp_path) == [new]


def test_put_does_not_prune_before_the_maintenance_interval(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock, maintenance_interval=60, ttl_hours=1 / 3600)  # entries live 1 second
    first = _put_at(cache, clock, T0)  # the first put maintains and stamps T0
    second = _put_at(cache, clock, T0 + 30)
    assert _entry_ids(tmp_path) == sorted([first, second])
    third = _put_at(cache, clock, T0 + 61)
    assert _entry_ids(tmp_path) == [third]


def test_maintenance_does_not_prune_while_another_holder_has_the_lock(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock, maintenance_interval=0)
    old = _put_at(cache, clock, T0)
    with FileLock(str(tmp_path / "cache" / ".lock")):
        new = _put_at(cache, clock, T0 + 25 * HOUR)
    assert _entry_ids(tmp_path) == sorted([old, new])


def test_maintenance_prunes_once_the_lock_is_free_again(tmp_path: Path) -> None:
    clock = Clock()
    cache = _cache(tmp_path, clock, maintenance_interval=0)
    old = _put_at(cache, clock, T0)
    with FileLock(str(tmp_path / "cache" / ".lock")):
        _put_at(cache, clock, T0 + 25 * HOUR)
    newest = _put_at(cache, clock, T0 + 26 * HOUR)
    assert old not in _entry_ids(tmp_path)
    assert newest in _entry_ids(tmp_path)


def test_get_of_an_entry_in_the_main_directory_does_not_resolve_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tempfile.gettempdir() writes a probe file on first use; a cache hit should not pay for it.
    calls: list[str] = []
    monkeypatch.setattr(tempfile, "gettempdir", lambda: calls.append("gettempdir") or str(tmp_path))
    stored = ExecutionCache(tmp_path / "cache").put("read-json", {}, {"result": 1})
    calls.clear()  # the put's maintenance prunes the fallback too
    ExecutionCache(tmp_path / "cache").get(stored.execution_id)
    assert calls == []


def test_put_never_overwrites_an_existing_entry_with_the_same_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs in the same second that draw the same random part must not clobber each other."""
    from pflow_structure.cache import store as store_module

    ids = iter(["exec-1763463202-0cd0c8fe", "exec-1763463202-0cd0c8fe", "exec-1763463202-11111111"])
    monkeypatch.setattr(store_module, "new_execution_id", lambda now=None: next(ids))
    cache = ExecutionCache(tmp_path / "c", clock=lambda: 1763463202.0)
    first = cache.put("node", {}, {"result": "first"})
    second = cache.put("node", {}, {"result": "second"})
    assert (first.execution_id, second.execution_id) == ("exec-1763463202-0cd0c8fe", "exec-1763463202-11111111")
    assert cache.get(first.execution_id).outputs == {"result": "first"}
    assert cache.get(second.execution_id).outputs == {"result": "second"}
    assert sorted(p.name for p in (tmp_path / "c").iterdir() if not p.name.startswith(".")) == [
        "exec-1763463202-0cd0c8fe.json",
        "exec-1763463202-11111111.json",
    ]


def test_a_run_never_evicts_the_entry_it_just_wrote(tmp_path: Path) -> None:
    cache = ExecutionCache(tmp_path / "c", max_bytes=100, maintenance_interval=0)
    older = cache.put("node", {}, {"result": "x" * 200})
    newer = cache.put("node", {}, {"result": "y" * 200})
    assert cache.get(newer.execution_id).outputs == {"result": "y" * 200}
    with pytest.raises(ExecutionNotFoundError):
        cache.get(older.execution_id)
    assert newer.warnings == [
        f"This execution ({newer.path.stat().st_size} bytes) is larger than the cache size cap (100 bytes); "  # type: ignore[union-attr]
        "it is kept, but the next run will evict it. Raise PFLOW_STRUCTURE_MAX_CACHE_SIZE to keep more."
    ]


def test_outputs_that_are_not_json_are_a_warning_not_a_crash(tmp_path: Path) -> None:
    stored = ExecutionCache(tmp_path / "c").put("node", {}, {"result": float("nan")})
    assert stored.path is None
    assert len(stored.warnings) == 1
    assert stored.warnings[0].startswith(
        "The execution was not cached: its outputs cannot be written as JSON (Out of range float values"
    )


def test_the_default_cache_directory_is_tightened_to_0700(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pflow-cli creates ~/.pflow/cache/node-executions world-readable; ours is 0700 after a write."""
    monkeypatch.setenv("HOME", str(tmp_path))
    from pflow_structure.cache.store import default_cache_dir

    directory = default_cache_dir()
    directory.mkdir(parents=True)
    directory.chmod(0o755)
    ExecutionCache().put("node", {}, {"result": 1})
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_directory_the_user_chose_keeps_its_mode(tmp_path: Path) -> None:
    directory = tmp_path / "mine"
    directory.mkdir()
    directory.chmod(0o755)
    ExecutionCache(directory).put("node", {}, {"result": 1})
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755


def test_put_works_without_a_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Containers started with a uid that has no passwd entry and no HOME: Path.home() raises."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    stored = ExecutionCache(tmp_path / "c").put("node", {}, {"result": 1})
    assert stored.path is not None


def test_the_oversize_warning_is_given_once_and_only_for_a_stored_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pflow_structure.cache import store as store_module

    ids = iter(["exec-1763463202-0cd0c8fe", "exec-1763463202-0cd0c8fe", "exec-1763463202-11111111"])
    monkeypatch.setattr(store_module, "new_execution_id", lambda now=None: next(ids))
    cache = ExecutionCache(tmp_path / "c", max_bytes=10, clock=lambda: 1763463202.0)
    cache.put("node", {}, {"result": "first"})
    second = cache.put("node", {}, {"result": "second"})
    assert [w for w in second.warnings if "larger than the cache size cap" in w] == [second.warnings[0]]
    assert len(second.warnings) == 1


def _datetime_seconds(text: str) -> float | str:
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return "rejected"
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)).timestamp()


@given(
    st.integers(0, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.integers(0, 61),
    st.integers(0, 61),
)
@settings(max_examples=examples(2000), deadline=None)
def test_a_timestamp_read_without_datetime_is_what_datetime_reads(
    year: int, month: int, day: int, hour: int, minute: int, second: int
) -> None:
    """The form the cache writes is read without importing datetime (read-fields' start-up); any
    impossible date or other form goes to datetime, so every timestamp reads (or fails) as before."""
    from pflow_structure.cache.entry import parse_timestamp

    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"
    try:
        seconds: float | str = parse_timestamp(text)
    except ValueError:
        seconds = "rejected"
    assert seconds == _datetime_seconds(text)


@pytest.mark.parametrize(
    "text",
    [
        "2025-11-18T10:53:22",
        "2025-11-18T10:53:22+02:00",
        "2025-11-18 10:53:22Z",
        "2025-11-18T10:53:22.5Z",
        "２025-11-18T10:53:22Z",
        "2024-02-29T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "1970-01-01T00:00:00Z",
    ],
)
def test_other_timestamp_forms_read_as_datetime_reads_them(text: str) -> None:
    from pflow_structure.cache.entry import parse_timestamp

    try:
        seconds: float | str = parse_timestamp(text)
    except ValueError:
        seconds = "rejected"
    assert seconds == _datetime_seconds(text)
