"""Security of the execution cache: hostile ids, file modes, symlinks and secret masking."""

from __future__ import annotations

import builtins
import io
import json
import os
import pathlib
import secrets
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.cache.ids import is_valid_execution_id, validate_execution_id
from pflow_structure.cache.store import ExecutionCache
from pflow_structure.errors import ExecutionNotFoundError, InvalidExecutionIdError
from pflow_structure.service import read_fields
from tests.conftest import cli_runner

FIXED_TIME = 1_763_463_202.0
FIXED_HEX = "0cd0c8fe"
FIXED_ID = f"exec-{int(FIXED_TIME)}-{FIXED_HEX}"

HOSTILE_IDS = [
    "../../etc/passwd",
    "/etc/passwd",
    "exec-1-../../x",
    f"{FIXED_ID}/../../../etc/passwd",
    f"{FIXED_ID}\x00",
    "exec-1763463202-0cd0\x00c8fe",
    "\x00",
    "",
    " ",
    "\t\n",
    f"{FIXED_ID}\n",
    f" {FIXED_ID}",
    f"{FIXED_ID} ",
    "exec-123-ABCDEF12",
    "EXEC-1763463202-0cd0c8fe",
    "exec-\uff11\uff17\uff16\uff13-0cd0c8fe",  # fullwidth digits
    "exec-\u0661\u0667\u0666\u0663-0cd0c8fe",  # Arabic-Indic digits
    "\u0435xec-1763463202-0cd0c8fe",  # Cyrillic "е"
    f"{FIXED_ID}\u200b",  # zero-width space
    "exec-123456789012-0123456789abcdef",  # 34 characters, over the 32 limit
    "exec-123456789012-0123456789abcde",  # 33 characters: one over (32 is accepted, see below)
    "exec-1-" + "a" * 200,
    "exec-1763463202-0cd0c8f",  # 7 hex digits
    "exec-1-0123456789abcdef0",  # 17 hex digits, one over 16, in 24 characters (under the length limit)
    "exec-1763463202-0cd0c8fg",
    "exec--0cd0c8fe",
    "exec-abc-xyz",
    "exec-0x10-0cd0c8fe",
    f"{FIXED_ID}.json",
    "C:\\Windows\\System32\\config\\SAM",
    "..\\..\\windows\\win.ini",
    f"{FIXED_ID}\\..\\x",
    "%2e%2e%2fetc%2fpasswd",
    "exec-1763463202-%2e%2e%2f",
    "file:///etc/passwd",
    "~/.ssh/id_rsa",
    ".",
    "..",
    f"{FIXED_ID};rm -rf ~",
]


class FilesystemTouched(BaseException):
    """Raised by the traps below; a BaseException so that no ``except Exception`` hides it."""


@contextmanager
def filesystem_trapped(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Make every way of reaching the filesystem record the call and raise."""
    calls: list[str] = []

    def trap(name: str) -> Any:
        def trapped(*args: Any, **kwargs: Any) -> Any:
            calls.append(f"{name}{args!r}")
            raise FilesystemTouched(name)

        return trapped

    with monkeypatch.context() as patch:
        for name in (
            "open", "stat", "lstat", "access", "scandir", "listdir", "mkdir", "makedirs", "replace",
            "rename", "unlink", "remove", "readlink", "chmod", "utime", "fdopen",
        ):  # fmt: skip
            patch.setattr(os, name, trap(f"os.{name}"))
        patch.setattr(builtins, "open", trap("open"))
        patch.setattr(io, "open", trap("io.open"))
        for name in ("stat", "lstat", "open", "exists", "is_file", "is_symlink", "read_bytes", "read_text", "mkdir"):
            patch.setattr(pathlib.Path, name, trap(f"Path.{name}"))
        yield calls


@pytest.mark.parametrize("execution_id", HOSTILE_IDS)
def test_cache_get_refuses_hostile_id_without_touching_the_filesystem(
    execution_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ExecutionCache(tmp_path / "cache", fallback_directory=tmp_path / "fallback")
    with filesystem_trapped(monkeypatch) as calls, pytest.raises(InvalidExecutionIdError) as caught:
        cache.get(execution_id)
    assert calls == []
    assert str(caught.value) == refusal(execution_id)


@pytest.mark.parametrize("execution_id", HOSTILE_IDS)
def test_read_fields_refuses_hostile_id_without_touching_the_filesystem(
    execution_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ExecutionCache(tmp_path / "cache", fallback_directory=tmp_path / "fallback")
    with filesystem_trapped(monkeypatch) as calls, pytest.raises(InvalidExecutionIdError) as caught:
        read_fields(execution_id, ["result"], cache=cache)
    assert calls == []
    assert str(caught.value) == refusal(execution_id)


@pytest.mark.parametrize("execution_id", HOSTILE_IDS)
def test_cli_read_fields_refuses_hostile_id_without_touching_the_filesystem(
    execution_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pflow_structure.cli import main
    from pflow_structure.render import fields_text  # noqa: F401  (imported up front: imports read files)

    # With no --cache-dir, click has no path option to check, and with LANGUAGE=C gettext looks
    # for no message catalogs: any access left would come from us.
    monkeypatch.delenv("PFLOW_STRUCTURE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LANGUAGE", "C")
    runner = cli_runner()
    with filesystem_trapped(monkeypatch) as calls:
        result = runner.invoke(main, ["read-fields", execution_id, "result"])
    assert calls == []
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {refusal(execution_id)}\n")


def refusal(execution_id: str) -> str:
    """The exact refusal of a malformed id: its repr, cut after 40 characters."""
    shown = repr(execution_id) if len(execution_id) <= 40 else repr(execution_id[:40] + "...")
    return (
        f"Execution not found: {shown} is not a valid execution id. "
        "Ids look like exec-1763463202-0cd0c8fe; copy the one printed by `pflow-structure run`."
    )


def test_hostile_id_error_names_the_id_and_the_fix() -> None:
    """The one home of the malformed-id refusal's text (the parametrised tests above use ``refusal``)."""
    with pytest.raises(InvalidExecutionIdError) as caught:
        ExecutionCache().get("../../etc/passwd")
    assert str(caught.value) == (
        "Execution not found: '../../etc/passwd' is not a valid execution id. "
        "Ids look like exec-1763463202-0cd0c8fe; copy the one printed by `pflow-structure run`."
    )
    with pytest.raises(InvalidExecutionIdError) as caught:
        ExecutionCache().get("exec-1-" + "a" * 200)
    assert str(caught.value).split(" is not")[0] == "Execution not found: 'exec-1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"


def test_an_id_of_exactly_32_characters_is_accepted_and_reads_back(tmp_path: Path) -> None:
    """The length limit is inclusive: 32 characters read (33 are refused: HOSTILE_IDS)."""
    longest = "exec-123456789012-0123456789abcd"
    assert len(longest) == 32 and is_valid_execution_id(longest)
    assert validate_execution_id(longest) == longest  # the Redis store builds its key from the return value
    assert not is_valid_execution_id(longest + "e")
    assert is_valid_execution_id("exec-1-0123456789abcdef")  # 16 hex digits read; 17 are refused (HOSTILE_IDS)
    cache = ExecutionCache(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    stored = ExecutionCache(tmp_path / "other").put("read-json", {}, {"result": 1})
    assert stored.path is not None
    document = json.loads(stored.path.read_text(encoding="utf-8"))
    document["execution_id"] = longest
    (tmp_path / "cache" / f"{longest}.json").write_text(json.dumps(document), encoding="utf-8")
    assert read_fields(longest, ["result"], cache=cache) == {"result": 1}


@pytest.mark.parametrize("execution_id", [None, 12345, b"exec-1763463202-0cd0c8fe", ["exec-1763463202-0cd0c8fe"]])
def test_cache_get_refuses_an_id_that_is_not_a_string(
    execution_id: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ExecutionCache(tmp_path / "cache")
    with filesystem_trapped(monkeypatch) as calls, pytest.raises(InvalidExecutionIdError):
        cache.get(execution_id)
    assert calls == []


def test_hostile_ids_number_at_least_thirty_and_are_distinct() -> None:
    assert len(set(HOSTILE_IDS)) == len(HOSTILE_IDS) >= 30


# -- file modes ---------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.usefixtures("umask_000")
def test_entry_file_is_0600_under_umask_000(tmp_path: Path) -> None:
    stored = ExecutionCache(tmp_path / "cache").put("read-json", {}, {"result": 1})
    assert stored.path is not None
    assert _mode(stored.path) == 0o600


@pytest.mark.usefixtures("umask_000")
def test_cache_directory_and_the_parents_it_created_are_0700_under_umask_000(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b" / "node-executions"
    ExecutionCache(directory).put("read-json", {}, {"result": 1})
    assert [_mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", directory)] == [0o700, 0o700, 0o700]


@pytest.mark.usefixtures("umask_000")
def test_cache_does_not_change_the_mode_of_a_parent_it_did_not_create(tmp_path: Path) -> None:
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    ExecutionCache(existing / "node-executions").put("read-json", {}, {"result": 1})
    assert _mode(existing) == 0o755


@pytest.mark.usefixtures("umask_000")
def test_every_file_the_cache_creates_is_0600_under_umask_000(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    cache = ExecutionCache(directory, maintenance_interval=0)  # also creates the lock and the stamp
    cache.put("read-json", {}, {"result": 1})
    modes = {path.name: _mode(path) for path in directory.iterdir()}
    assert sorted(modes) == sorted([".lock", ".maintenance", *(p.name for p in directory.glob("exec-*.json"))])
    assert set(modes.values()) == {0o600}


@pytest.mark.usefixtures("umask_000")
def test_fallback_directory_and_its_entry_are_private_under_umask_000(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    cache = ExecutionCache(tmp_path / "a-file" / "cache")  # default fallback: under TMPDIR (see conftest)
    stored = cache.put("read-json", {}, {"result": 1})
    assert stored.path is not None
    fallback = cache.fallback_directory
    assert stored.path.parent == fallback
    assert [_mode(fallback.parent), _mode(fallback), _mode(stored.path)] == [0o700, 0o700, 0o600]


# -- symlinks -------------------------------------------------------------------------------


def _entry_json(execution_id: str) -> str:
    return json.dumps(
        {
            "execution_id": execution_id,
            "node_type": "read-json",
            "timestamp": "2025-11-18T10:53:22Z",
            "ttl_hours": 24,
            "params": {},
            "outputs": {"result": "planted"},
        }
    )


def test_get_does_not_follow_a_symlink_to_a_valid_entry(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    planted = tmp_path / "elsewhere.json"
    planted.write_text(_entry_json(FIXED_ID))
    (directory / f"{FIXED_ID}.json").symlink_to(planted)
    cache = ExecutionCache(directory, fallback_directory=tmp_path / "fallback", clock=lambda: FIXED_TIME)
    with pytest.raises(ExecutionNotFoundError) as caught:
        cache.get(FIXED_ID)
    assert str(caught.value) == (
        f"Execution not found: {FIXED_ID} ({FIXED_ID}.json is a symlink and was not followed). "
        "Run the node again with `pflow-structure run NODE ...` to get a new execution id."
    )


def test_get_does_not_follow_a_symlink_to_etc_passwd(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    (directory / f"{FIXED_ID}.json").symlink_to("/etc/passwd")
    cache = ExecutionCache(directory, fallback_directory=tmp_path / "fallback")
    with pytest.raises(ExecutionNotFoundError) as caught:
        cache.get(FIXED_ID)
    assert f"({FIXED_ID}.json is a symlink and was not followed)" in str(caught.value)


def test_get_does_not_follow_a_symlink_in_the_fallback_directory(tmp_path: Path) -> None:
    fallback = tmp_path / "fallback"
    fallback.mkdir(mode=0o700)
    planted = tmp_path / "elsewhere.json"
    planted.write_text(_entry_json(FIXED_ID))
    (fallback / f"{FIXED_ID}.json").symlink_to(planted)
    cache = ExecutionCache(tmp_path / "cache", fallback_directory=fallback, clock=lambda: FIXED_TIME)
    with pytest.raises(ExecutionNotFoundError) as caught:
        cache.get(FIXED_ID)
    assert f"({FIXED_ID}.json is a symlink and was not followed)" in str(caught.value)


def test_get_refuses_a_fifo_in_place_of_an_entry_without_blocking(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    os.mkfifo(directory / f"{FIXED_ID}.json", 0o600)
    cache = ExecutionCache(directory, fallback_directory=tmp_path / "fallback")

    def hung(signum: int, frame: Any) -> None:
        raise AssertionError("get() blocked on the FIFO")

    # Opening a FIFO for reading blocks until a writer comes (unless O_NONBLOCK): turn a hang into a failure.
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with pytest.raises(ExecutionNotFoundError) as caught:
            cache.get(FIXED_ID)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert f"({FIXED_ID}.json is not a regular file)" in str(caught.value)


def _fix_next_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next put gets FIXED_ID (with ``clock=lambda: FIXED_TIME``)."""
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes=None: FIXED_HEX)


def test_put_never_writes_through_a_planted_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, real_ids: None
) -> None:
    """A symlink at the next entry's name is left alone; the entry goes under a fresh id."""
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (directory / f"{FIXED_ID}.json").symlink_to(target)
    hexes = iter([FIXED_HEX, "22222222"])
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes=None: next(hexes))
    cache = ExecutionCache(directory, clock=lambda: FIXED_TIME)
    stored = cache.put("read-json", {}, {"result": 1})
    assert stored.execution_id == FIXED_ID.rsplit("-", 1)[0] + "-22222222"
    assert target.read_text() == "keep me"
    assert os.path.islink(directory / f"{FIXED_ID}.json")
    assert cache.get(stored.execution_id).outputs == {"result": 1}


def test_put_does_not_write_through_a_symlinked_maintenance_stamp(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    target = tmp_path / "stamp-target.txt"
    (directory / ".maintenance").symlink_to(target)
    ExecutionCache(directory, maintenance_interval=0).put("read-json", {}, {"result": 1})
    assert not target.exists()


def test_put_does_not_truncate_through_a_symlinked_lock_file(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (directory / ".lock").symlink_to(target)
    ExecutionCache(directory, maintenance_interval=0).put("read-json", {}, {"result": 1})
    assert target.read_text() == "keep me"


def test_put_refuses_a_symlinked_fallback_directory(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    elsewhere = tmp_path / "attacker-dir"
    elsewhere.mkdir()
    fallback = tmp_path / "fallback"
    fallback.symlink_to(elsewhere)
    stored = ExecutionCache(tmp_path / "a-file" / "cache", fallback_directory=fallback).put("n", {}, {"r": 1})
    assert stored.path is None
    assert list(elsewhere.iterdir()) == []
    assert stored.warnings[1] == (
        f"Cache directory {fallback} is not writable "
        f"({fallback} is a symlink; refusing to use it as a cache directory)."
    )


def test_put_refuses_a_default_fallback_whose_parent_is_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    cache = ExecutionCache(tmp_path / "a-file" / "cache")
    elsewhere = tmp_path / "attacker-dir"
    elsewhere.mkdir()
    cache.fallback_directory.parent.symlink_to(elsewhere)  # /tmp/pflow-structure-UID planted by someone else
    stored = cache.put("n", {}, {"r": 1})
    assert stored.path is None
    assert list(elsewhere.iterdir()) == []


# -- secrets --------------------------------------------------------------------------------


def _stored_params(tmp_path: Path, params: Any) -> Any:
    stored = ExecutionCache(tmp_path / "cache").put("http", params, {"result": 1})
    assert stored.path is not None
    return json.loads(stored.path.read_text(encoding="utf-8"))["params"]


@pytest.mark.parametrize(
    "key",
    ["api_key", "apiKey", "APIKey", "X-Api-Key", "password", "client_secret", "access_token", "cookie", "token",
     "Authorization", "refresh-token", "sessionId", "Set-Cookie", "private_key", "secret",
     "PGPASSWORD", "secrets", "passwords", "api-keys", "ssh_key", "db_password"],
)  # fmt: skip
def test_secret_key_is_masked_in_the_stored_file(key: str, tmp_path: Path) -> None:
    assert _stored_params(tmp_path, {key: "s3cr3t", "url": "https://x"}) == {key: "***", "url": "https://x"}


@pytest.mark.parametrize(
    "key",
    ["author", "max_tokens", "tokens", "keyboard", "page_token", "next_page_token", "monkey", "passage",
     "authored_by", "total_tokens", "tokenizer", "secretary", "cookbook", "sessions"],
)  # fmt: skip
def test_key_that_only_contains_a_secret_word_is_kept_in_the_stored_file(key: str, tmp_path: Path) -> None:
    assert _stored_params(tmp_path, {key: "visible"}) == {key: "visible"}


def test_headers_authorization_is_masked_at_depth_in_the_stored_file(tmp_path: Path) -> None:
    params = {"request": {"headers": {"Authorization": "Bearer abc", "Accept": "application/json"}}}
    assert _stored_params(tmp_path, params) == {
        "request": {"headers": {"Authorization": "***", "Accept": "application/json"}}
    }


def test_secret_inside_a_list_of_dicts_is_masked_in_the_stored_file(tmp_path: Path) -> None:
    params = {"accounts": [{"user": "a", "password": "p1"}, {"user": "b", "password": "p2"}]}
    assert _stored_params(tmp_path, params) == {
        "accounts": [{"user": "a", "password": "***"}, {"user": "b", "password": "***"}]
    }


def test_secret_value_does_not_appear_anywhere_in_the_stored_file(tmp_path: Path) -> None:
    stored = ExecutionCache(tmp_path / "cache").put(
        "http", {"headers": {"X-Api-Key": "zz-very-secret-zz"}, "cookie": "zz-cookie-zz"}, {"result": 1}
    )
    assert stored.path is not None
    raw = stored.path.read_text(encoding="utf-8")
    assert "zz-very-secret-zz" not in raw
    assert "zz-cookie-zz" not in raw


def test_secret_key_whose_value_is_a_dict_is_masked_whole(tmp_path: Path) -> None:
    assert _stored_params(tmp_path, {"credentials": {"user": "u", "pass": "p"}}) == {"credentials": "***"}


def test_secret_key_with_null_value_stays_null(tmp_path: Path) -> None:
    assert _stored_params(tmp_path, {"token": None}) == {"token": None}


def test_outputs_are_stored_unmasked(tmp_path: Path) -> None:
    stored = ExecutionCache(tmp_path / "cache").put("http", {}, {"result": {"token": "abc"}})
    assert stored.path is not None
    assert json.loads(stored.path.read_text(encoding="utf-8"))["outputs"] == {"result": {"token": "abc"}}
