"""Shared fixtures: every test gets its own cache directory and a clean environment."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterator
from functools import lru_cache
from itertools import count, cycle, product
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"  # a copy of ../shared/corpus (see its SOURCES.md)
EXAMPLES_DATA = REPO / "examples" / "data"


def _examples_scale() -> float:
    text = os.environ.get("PFLOW_STRUCTURE_TEST_EXAMPLES", "1")
    try:
        scale = float(text)
    except ValueError:
        scale = -1.0
    if not 0 < scale <= 1:
        raise pytest.UsageError(
            f"PFLOW_STRUCTURE_TEST_EXAMPLES={text!r}: give the share of each property test's examples to run, "
            "a number above 0 and at most 1 (1, the default, runs them all)"
        )
    return scale


ID_LENGTHS = ("random", "short", "long")


def _forced_id_length() -> str:
    text = os.environ.get("PFLOW_STRUCTURE_TEST_IDS", "random")
    if text not in ID_LENGTHS:
        raise pytest.UsageError(
            f"PFLOW_STRUCTURE_TEST_IDS={text!r}: give the execution ids every in-process test gets: random (the "
            "default, as in use), short (the fewest tokens an id can take) or long (the most)"
        )
    return text


def pytest_configure(config: pytest.Config) -> None:
    _examples_scale()  # a bad PFLOW_STRUCTURE_TEST_EXAMPLES stops the run here, naming the fix
    _forced_id_length()  # and so does a bad PFLOW_STRUCTURE_TEST_IDS


def examples(count: int) -> int:
    """A property test's ``max_examples``: all ``count`` of them, or the share PFLOW_STRUCTURE_TEST_EXAMPLES
    gives (at least 20, never more than ``count``). .ci/run's compatibility runs (another Python, other mcp
    and click versions) check every property on a fifth of the examples; the main suite, as the README runs
    it, on all of them."""
    scale = _examples_scale()
    return min(count, max(20, round(count * scale)))


def cli_runner() -> Any:
    """click's CliRunner with stderr kept apart from stdout, on click 8.1 (``mix_stderr=False``, what
    pflow-cli 0.16's click<8.2 gives) and on 8.2 and later (always apart, no such argument)."""
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def corpus_files() -> list[Path]:
    """The 28 real API responses; tests that need them skip nothing silently (see test_corpus)."""
    return sorted(CORPUS.glob("*.json"))


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the execution cache (and its fallback) at a fresh temporary directory."""
    base = tmp_path_factory.mktemp("cache")
    cache_dir = base / "node-executions"
    monkeypatch.setenv("PFLOW_STRUCTURE_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("PFLOW_STRUCTURE_FAILURE_LOG", str(base / "logs" / "failures.jsonl"))
    # saved workflows and pflow's registry: never the developer's ~/.pflow (the registry file does not exist)
    monkeypatch.setenv("PFLOW_STRUCTURE_WORKFLOWS_DIR", str(base / "workflows"))
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(base / "pflow" / "registry.json"))
    monkeypatch.setenv("TMPDIR", str(base / "tmp"))
    (base / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR so the fallback dir is private too
    for name in (
        "PFLOW_STRUCTURE_TTL_HOURS",
        "PFLOW_STRUCTURE_MAX_CACHE_SIZE",
        "PFLOW_STRUCTURE_MAX_PATHS",
        "PFLOW_STRUCTURE_PROXY_BUDGET",
        "PFLOW_STRUCTURE_FILTER",
        "PFLOW_STRUCTURE_FILTER_THRESHOLD",
        "PFLOW_STRUCTURE_FILTER_TARGET",
        "PFLOW_STRUCTURE_FILTER_MODEL",
        "PFLOW_STRUCTURE_FILTER_TIMEOUT",
        "PFLOW_STRUCTURE_FILTER_API_BASE",
        # a developer's real key must not make the suite call a paid LLM (auto mode would)
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    return cache_dir


def _id_factory(hex_parts: Iterator[str]) -> Callable[..., str]:
    """A stand-in for ``new_execution_id``: the real seconds (the cache reads an entry's age from them), then the
    next of ``hex_parts``."""
    import time

    def new_execution_id(now: float | None = None) -> str:
        return f"exec-{int(time.time() if now is None else now)}-{next(hex_parts)}"

    return new_execution_id


_REAL_NEW_EXECUTION_ID: list[Callable[..., str]] = []  # ids.new_execution_id, kept before the first stand-in


def _use_ids(monkeypatch: pytest.MonkeyPatch, factory: Callable[..., str]) -> None:
    from pflow_structure.cache import ids

    if not _REAL_NEW_EXECUTION_ID:  # each test starts with the real one (monkeypatch undoes the last test's)
        _REAL_NEW_EXECUTION_ID.append(ids.new_execution_id)
    # store and redis_store bound the name at import; the pflow integration looks it up in ids at each call
    for module in ("ids", "store", "redis_store"):
        monkeypatch.setattr(f"pflow_structure.cache.{module}.new_execution_id", factory)


@lru_cache(maxsize=1)
def _shortest_hex_parts() -> tuple[str, ...]:
    """Every 8-digit hex part whose id takes the fewest tokens (419 with o200k_base, e.g. ``ffffffff``, where a
    random one takes 1 to 7 more). Only letters can merge into few tokens (each run of digits is a token of its
    own), so the letters a-f are searched, once per run (about 4 s)."""
    from pflow_structure.render.tokens import count_tokens

    counted = [("".join(t), count_tokens("exec-1795873000-" + "".join(t))) for t in product("abcdef", repeat=8)]
    fewest = min(n for _, n in counted)
    return tuple(h for h, n in counted if n == fewest)[:1000]  # an environment variable holds them for processes


def _longest_hex_parts() -> Iterator[str]:
    """Digits and letters taking turns (``0a0a0a0a``, ``0a0a0a0b``, ...): each character a token of its own, the
    most an 8-digit hex part can take (7 tokens more than ``ffffffff``); 12,960,000 of them."""
    for digits, letters in product(product("0123456789", repeat=4), product("abcdef", repeat=4)):
        yield "".join(d + letter for d, letter in zip(digits, letters, strict=True))


FORCED_IDS_HOOK = REPO / "tests" / "forced_ids"  # its sitecustomize forces the ids in processes a test starts


def force_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """What PFLOW_STRUCTURE_TEST_IDS asks for (the ``forced_ids`` fixture, every test)."""
    length = _forced_id_length()
    if length == "short":
        _use_ids(monkeypatch, _id_factory(cycle(_shortest_hex_parts())))
        monkeypatch.setenv("PFLOW_STRUCTURE_TEST_ID_PARTS", " ".join(_shortest_hex_parts()))
    elif length == "long":
        _use_ids(monkeypatch, _id_factory(_longest_hex_parts()))
    else:
        return
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FORCED_IDS_HOOK), path])))


@pytest.fixture(autouse=True)
def forced_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """With PFLOW_STRUCTURE_TEST_IDS=short or long, every execution id a test makes takes the fewest or the most
    tokens an id can take, so a test whose outcome depends on the id's length (a random id varies by 7 tokens and
    an answer may show it several times) fails every run rather than now and then. Python processes the test starts
    with this environment make the same kind of ids (tests/forced_ids/sitecustomize.py); those started with an
    environment of their own make random ones. ``steady_ids`` still wins in the test process where a test asks."""
    force_ids(monkeypatch)


@pytest.fixture
def steady_ids(forced_ids: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Execution ids of one length in tokens (``exec-{seconds}-10000000``, ``-10000001``, ...: the hex part is
    always three tokens). A random id varies by up to 7 tokens and appears several times in an answer, so whether
    an optional part (the map) fits a tight budget would otherwise change from run to run. The seconds stay the
    clock's: an id with fixed seconds would read as expired a day later (the cache takes an entry's age from its
    id)."""
    _use_ids(monkeypatch, _id_factory(f"{n:08d}" for n in count(10000000)))


@pytest.fixture
def real_ids(forced_ids: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random ids, in this process and those it starts, whatever PFLOW_STRUCTURE_TEST_IDS says: for a test that
    steers the id through ``secrets.token_hex`` (which a forced id never calls), and for processes writing
    hundreds of entries a second into one cache (more than the 419 shortest ids: they would collide)."""
    from pflow_structure.cache import ids

    _use_ids(monkeypatch, _REAL_NEW_EXECUTION_ID[0] if _REAL_NEW_EXECUTION_ID else ids.new_execution_id)
    monkeypatch.delenv("PFLOW_STRUCTURE_TEST_IDS", raising=False)


@pytest.fixture
def umask_000() -> Iterator[None]:
    """Run with umask 000, so file and directory modes come from the code, not the umask."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def run_as_nobody(action: Callable[[], Any]) -> Any:
    """Run ``action`` in a forked child that dropped root for ``nobody``; return its JSON result
    (``{"error": repr}`` when it raised). For permission tests: root reads and writes anything."""
    read_end, write_end = os.pipe()
    # Not a subprocess: nobody cannot run an interpreter that lives under /root. Python 3.12+ warns that a
    # fork of a threaded process (an xdist worker has execnet's threads) may deadlock the child on a lock
    # another thread held; the child takes no lock of those threads (the interpreter resets its own and
    # logging's at fork), runs ``action`` and leaves by os._exit, so the warning is silenced here only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        status = 0
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            payload = json.dumps(action()).encode()
        except BaseException as exc:
            payload, status = json.dumps({"error": repr(exc)}).encode(), 1
        os.write(write_end, payload)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data)
