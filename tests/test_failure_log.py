"""The failure log: one private JSON line per fallback, written whole, never raising (failure_log.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pflow_structure.render.failure_log import MAX_ERROR_CHARS, append_failure, failure_record, read_failures
from pflow_structure.settings import ENV_FAILURE_LOG, Settings

REPO = Path(__file__).resolve().parent.parent
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _lines(path: Path) -> list[str]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data.decode("ascii").split("\n")[:-1]


@pytest.fixture
def far_from_utc() -> Iterator[None]:
    """Local time 14 hours ahead of UTC, so a local timestamp would not pass for UTC."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "LINT-14"
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = previous
        time.tzset()


# -- records ---------------------------------------------------------------------------------


def test_record_has_utc_timestamp_operation_size_error_and_extra_fields(far_from_utc: None) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    record = failure_record("github:list_issues", 1234, ValueError("bad value"), stage="shape", source="mcp-proxy")
    after = datetime.now(timezone.utc)
    assert list(record) == ["timestamp", "operation", "input_bytes", "error", "stage", "source"]
    assert TIMESTAMP.fullmatch(record["timestamp"])
    stamped = datetime.strptime(record["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    # UTC, not the local time hours away (far_from_utc). A second either side: the record reads the clock
    # through time.gmtime(), which Linux may serve from its coarse clock, up to a tick ahead of datetime.now()
    # (once, CI saw 00:54:34 stamped between 00:54:33 before and after).
    assert before - timedelta(seconds=1) <= stamped <= after + timedelta(seconds=1)
    assert record["operation"] == "github:list_issues"
    assert record["input_bytes"] == 1234
    assert record["error"] == "ValueError: bad value"
    assert record["stage"] == "shape"
    assert record["source"] == "mcp-proxy"


def test_record_keeps_a_string_error_as_it_is() -> None:
    assert failure_record("op", 0, "downstream exited")["error"] == "downstream exited"


def test_record_names_the_exception_type_of_a_subclass() -> None:
    class DownstreamGone(ConnectionError):
        pass

    assert failure_record("op", 0, DownstreamGone("pipe closed"))["error"] == "DownstreamGone: pipe closed"


def test_long_error_messages_are_cut_to_max_error_chars() -> None:
    record = failure_record("op", 10, RuntimeError("x" * (MAX_ERROR_CHARS * 3)))
    assert len(record["error"]) == MAX_ERROR_CHARS
    assert record["error"].startswith("RuntimeError: xxx")
    assert len(failure_record("op", 10, "y" * (MAX_ERROR_CHARS + 1))["error"]) == MAX_ERROR_CHARS
    assert failure_record("op", 10, "y" * MAX_ERROR_CHARS)["error"] == "y" * MAX_ERROR_CHARS


# -- append ----------------------------------------------------------------------------------


def test_each_append_writes_one_json_line(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "failures.jsonl"
    first = failure_record("a", 1, KeyError("k"), stage="store")
    second = failure_record("b", 2, "plain", command="npx server")
    assert append_failure(log, first) is True
    assert append_failure(log, second) is True
    lines = _lines(log)
    assert len(lines) == 2
    assert [json.loads(line) for line in lines] == [first, second]
    assert json.loads(lines[0])["error"] == "KeyError: 'k'"
    assert read_failures(log) == [first, second]


def test_values_json_cannot_encode_are_written_as_their_repr(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    assert append_failure(log, failure_record("op", 1, "e", path=Path("/x/y"), data=b"\x00\xff"))
    [record] = read_failures(log)
    assert record["path"] == repr(Path("/x/y"))
    assert record["data"] == repr(b"\x00\xff")


def test_log_file_is_0600_in_a_new_0700_directory(tmp_path: Path, umask_000: None) -> None:
    log = tmp_path / "new-dir" / "failures.jsonl"
    assert append_failure(log, failure_record("op", 1, "e"))
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


def test_non_ascii_and_control_characters_stay_on_one_line(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    message = "naïve 日本語 🎉 line\nbreak\rcarriage\ttab \x00 nul \x1b[31m \u2028 sep \u0085 nel \udcff lone"
    assert append_failure(log, failure_record("op", 1, message, note="multi\nline"))
    lines = _lines(log)
    assert len(lines) == 1
    assert lines[0].isascii()
    [record] = read_failures(log)
    assert record["error"] == message
    assert record["note"] == "multi\nline"


def test_appends_from_threads_are_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    threads_n, per_thread = 8, 50
    barrier = threading.Barrier(threads_n)
    results: list[bool] = []

    def work(n: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            results.append(append_failure(log, failure_record(f"t{n}", i, "e" * 500, thread=n, seq=i)))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * (threads_n * per_thread)
    records = [json.loads(line) for line in _lines(log)]
    assert len(records) == threads_n * per_thread
    assert sorted((r["thread"], r["seq"]) for r in records) == [
        (n, i) for n in range(threads_n) for i in range(per_thread)
    ]


WRITER = """
import sys, time
from pathlib import Path
from pflow_structure.render.failure_log import append_failure, failure_record
log, go, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
ok = all(append_failure(log, failure_record(f"p{n}", i, "z" * 1900, proc=n, seq=i, pad="q" * 3000)) for i in range(100))
sys.exit(0 if ok else 1)
"""


def test_appends_from_processes_are_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "f.jsonl"
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(go), str(n)], cwd=REPO, env=env) for n in range(4)
    ]
    time.sleep(0.3)
    go.touch()
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    lines = _lines(log)
    assert len(lines) == 400
    records = [json.loads(line) for line in lines]
    assert sorted((r["proc"], r["seq"]) for r in records) == [(n, i) for n in range(4) for i in range(100)]
    assert all(len(r["pad"]) == 3000 and len(r["error"]) == 1900 for r in records)


# -- never raising ---------------------------------------------------------------------------


def test_a_directory_at_the_log_path_gives_false(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    log.mkdir()
    assert append_failure(log, failure_record("op", 1, "e")) is False
    assert list(log.iterdir()) == []


def test_a_file_where_the_log_directory_should_be_gives_false(tmp_path: Path) -> None:
    blocker = tmp_path / "logs"
    blocker.write_text("not a directory")
    assert append_failure(blocker / "f.jsonl", failure_record("op", 1, "e")) is False
    assert blocker.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_gives_false(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert append_failure(locked / "f.jsonl", failure_record("op", 1, "e")) is False
        assert append_failure(locked / "sub" / "f.jsonl", failure_record("op", 1, "e")) is False
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_a_symlink_at_the_log_path_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    log = tmp_path / "f.jsonl"
    log.symlink_to(target)
    assert append_failure(log, failure_record("op", 1, "e")) is False
    assert target.read_text() == "keep me\n"
    assert log.is_symlink()


def test_a_dangling_symlink_at_the_log_path_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    log = tmp_path / "f.jsonl"
    log.symlink_to(target)
    assert append_failure(log, failure_record("op", 1, "e")) is False
    assert not target.exists()


def test_a_record_that_cannot_be_encoded_is_still_one_json_line(tmp_path: Path) -> None:
    loop: list[object] = []
    loop.append(loop)
    log = tmp_path / "f.jsonl"
    assert append_failure(log, failure_record("op", 1, "e", arguments=loop)) is True
    assert append_failure(log, {("tuple", "key"): 1, "operation": "op2"}) is True
    first, second = read_failures(log)
    assert first["operation"] == "op" and first["input_bytes"] == 1 and first["arguments"] == "[[...]]"
    assert second["('tuple', 'key')"] == 1
    assert len(log.read_text().splitlines()) == 2


# -- reading ---------------------------------------------------------------------------------


def test_read_failures_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_failures(tmp_path / "absent" / "f.jsonl") == []


def test_read_failures_marks_garbage_lines_and_skips_blank_ones(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    good = failure_record("op", 1, "e")
    append_failure(log, good)
    with log.open("ab") as handle:
        handle.write(b'{"truncated": \n\n   \nnot json \xff\n')
    append_failure(log, good)
    assert read_failures(log) == [good, {"unreadable": '{"truncated": '}, {"unreadable": "not json \ufffd"}, good]


# -- settings --------------------------------------------------------------------------------


def test_settings_read_the_failure_log_variable_with_home_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings = Settings.from_env({ENV_FAILURE_LOG: "~/logs/fail.jsonl"})
    assert settings.failure_log == tmp_path / "home" / "logs" / "fail.jsonl"
    assert Settings.from_env({ENV_FAILURE_LOG: "/var/tmp/x.jsonl"}).failure_log == Path("/var/tmp/x.jsonl")


def test_settings_default_failure_log_is_under_dot_pflow_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".pflow" / "logs" / "pflow-structure-failures.jsonl"
    assert ENV_FAILURE_LOG == "PFLOW_STRUCTURE_FAILURE_LOG"
    assert Settings.from_env({}).failure_log == expected
    assert Settings.from_env({ENV_FAILURE_LOG: ""}).failure_log == expected
    assert Settings().failure_log == expected


def test_settings_from_the_process_environment_use_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PFLOW_STRUCTURE_FAILURE_LOG", str(tmp_path / "env.jsonl"))
    assert Settings.from_env().failure_log == tmp_path / "env.jsonl"


def test_settings_replace_and_equality_include_the_failure_log(tmp_path: Path) -> None:
    base = Settings(cache_dir=tmp_path / "c", failure_log=tmp_path / "a.jsonl")
    moved = base.replace(failure_log=tmp_path / "b.jsonl")
    assert moved.failure_log == tmp_path / "b.jsonl"
    assert moved.cache_dir == base.cache_dir
    assert moved != base
    assert base.replace() == base
    assert "b.jsonl" in repr(moved)


def test_a_fifo_at_the_log_path_gives_false_without_waiting_for_a_reader(tmp_path: Path) -> None:
    log = tmp_path / "f.jsonl"
    os.mkfifo(log)
    assert append_failure(log, failure_record("op", 1, "e")) is False
