""".ci/run runs the README's two quick-start commands as written, and its steps fail on any exit code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _step_function() -> str:
    match = re.search(r"^step\(\) \{\n.*?^\}\n", CI, re.MULTILINE | re.DOTALL)
    assert match is not None
    return match.group(0)


def test_ci_runs_both_quick_start_commands_of_the_readme_word_for_word() -> None:
    commands = _quick_start_commands()
    assert len(commands) == 2
    assert commands[1].endswith(".venv/bin/python -m pytest -n auto")
    for command in commands:
        assert command.removeprefix("python3 -m venv .venv && ") in CI


def _run_step(command: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    script = f"set -euo pipefail\nsummary=()\n{_step_function()}\n{prelude}\nstep 'the step' {command}\necho after\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)


def test_a_step_that_exits_5_stops_ci_as_pytest_collecting_nothing_must() -> None:
    done = _run_step("bash -c 'exit 5'")
    assert done.returncode == 1
    assert "== FAILED (exit 5) after" in done.stdout
    assert "after\n" not in done.stdout


def test_a_step_stops_at_its_first_failing_command() -> None:
    done = _run_step("two_commands", prelude="two_commands() { false; echo not reached; }")
    assert (done.returncode, "not reached" in done.stdout) == (1, False)


def test_a_passing_step_prints_its_duration() -> None:
    done = _run_step("true")
    assert done.returncode == 0
    assert re.search(r"^== the step: \d+ s$", done.stdout, re.MULTILINE)
    assert done.stdout.endswith("after\n")


def _functions(*names: str) -> str:
    found = []
    for name in names:
        match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", CI, re.MULTILINE | re.DOTALL)
        assert match is not None, name
        found.append(match.group(0))
    return "\n".join(found)


def test_a_missing_interpreter_fails_its_step_with_the_install_line(tmp_path: Path) -> None:
    """A compatibility run that cannot start fails CI: it never prints "skipped" and passes."""
    script = (
        f"set -euo pipefail\nsummary=()\nwork={tmp_path}\n"
        f"{_step_function()}\n{_functions('find_python', 'python_venv')}\n"
        "step 'the suite on Python 2.9' python_venv 2.9\necho after\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 1
    assert done.stderr == (
        f"Python 2.9 not found here (on PATH, or under {tmp_path}/no-pyenv/versions); "
        "install it (pyenv install 2.9): the package supports 3.10 to 3.13 and CI must show it\n"
    )
    assert "== FAILED (exit 1) after" in done.stdout and "after\n" not in done.stdout


def _exit_trap() -> str:
    match = re.search(r"^trap '.*' EXIT$", CI, re.MULTILINE)
    assert match is not None
    return match.group(0)


def test_a_run_whose_background_job_already_ended_exits_0(tmp_path: Path) -> None:
    """The exit trap kills the venv-preparing job if it still runs: when it has ended, the failed
    kill must not turn a passing run into exit 1 (it did: every step passed, CI failed)."""
    script = (
        f'set -euo pipefail\nwork={tmp_path / "work"}\nmkdir -p "$work"\npreparing=""\n{_exit_trap()}\n'
        "true & preparing=$!\nwait\necho done\n"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "done\n")
    assert not (tmp_path / "work").exists()


def test_a_failing_run_still_exits_1_and_stops_the_background_job(tmp_path: Path) -> None:
    """The job is a subshell, as in .ci/run; it says when it has started (a kill sent while bash is still
    forking it can be lost: that race, not the trap, made this test hang once under load), and its output
    goes to /dev/null so that the orphaned ``sleep`` cannot hold the test's pipe open."""
    ready = tmp_path / "ready"
    script = (
        f'set -euo pipefail\nwork={tmp_path / "work"}\nmkdir -p "$work"\npreparing=""\n{_exit_trap()}\n'
        f"( : >{ready}; sleep 30 ) >/dev/null 2>&1 & preparing=$!\n"
        f"while [ ! -e {ready} ]; do sleep 0.01; done\n"
        f"echo $preparing >{tmp_path / 'pid'}\nfalse\necho not reached\n"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert not (tmp_path / "work").exists()
    pid = int((tmp_path / "pid").read_text())
    for _ in range(500):  # the signal is delivered asynchronously: wait for it, a bounded number of times
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            break
        time.sleep(0.02)
    else:
        raise AssertionError(f"the background job {pid} still runs after the trap")


@pytest.mark.parametrize("share", ["abc", "0", "1.5", ""])
def test_a_bad_share_of_property_examples_stops_pytest_with_the_fix(share: str) -> None:
    """.ci/run's compatibility runs set PFLOW_STRUCTURE_TEST_EXAMPLES=0.2 (tests/conftest.py)."""
    env = {**os.environ, "PFLOW_STRUCTURE_TEST_EXAMPLES": share}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            str(ROOT / "tests" / "test_records.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=ROOT,
    )
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        f"ERROR: PFLOW_STRUCTURE_TEST_EXAMPLES={share!r}: give the share of each property test's examples to run, "
        "a number above 0 and at most 1 (1, the default, runs them all)\n\n"
    )


def test_the_compatibility_runs_check_each_property_on_a_fifth_of_its_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import examples

    monkeypatch.delenv("PFLOW_STRUCTURE_TEST_EXAMPLES", raising=False)
    assert examples(500) == 500  # the main suite, as the README runs it
    monkeypatch.setenv("PFLOW_STRUCTURE_TEST_EXAMPLES", "0.2")
    assert (examples(500), examples(60), examples(40)) == (100, 20, 20)
    assert 'PFLOW_STRUCTURE_TEST_EXAMPLES=0.2 ".venv-$1/bin/python" -m pytest' in CI


def _run_prepared(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """``body`` after .ci/run's step, prepare and prepared functions, with a fresh work directory."""
    script = (
        f"set -euo pipefail\nsummary=()\nwork={tmp_path}\n{_step_function()}\n{_functions('prepare', 'prepared')}\n"
        f"{body}\necho after\n"
    )
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, timeout=60)


def test_a_job_prepared_in_the_background_says_how_long_it_took_and_shows_its_output(tmp_path: Path) -> None:
    done = _run_prepared(
        tmp_path, "tool() { echo installed it; }\nprepare tool tool &\nstep 'the tool ready' prepared tool log"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "== the tool ready"
    assert re.fullmatch(r"-- tool: prepared in the background in \d+ s(, waited \d+ s for it here)?", lines[1])
    assert lines[2] == "installed it"
    assert re.fullmatch(r"== the tool ready: \d+ s", lines[3])
    assert lines[4:] == ["after"]


def test_a_job_that_failed_in_the_background_fails_the_step_that_needs_it_with_its_log(tmp_path: Path) -> None:
    done = _run_prepared(
        tmp_path, "tool() { echo the index is down; false; echo not reached; }\nprepare tool tool\n"
        "step 'the tool ready' prepared tool"
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"-- tool: prepared in the background in \d+ s", lines[1])  # whole seconds, any of them
    assert lines[2] == "the index is down"
    assert "not reached" not in done.stdout and "after\n" not in done.stdout
    assert "== FAILED (exit 1) after" in done.stdout
    assert done.stderr == "preparing tool failed (exit 1, log above)\n"


def test_a_bad_id_length_stops_pytest_with_the_fix() -> None:
    env = {**os.environ, "PFLOW_STRUCTURE_TEST_IDS": "medium"}
    collect = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "tests/test_records.py"]
    done = subprocess.run([sys.executable, *collect], capture_output=True, text=True, check=False, env=env, cwd=ROOT)
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        "ERROR: PFLOW_STRUCTURE_TEST_IDS='medium': give the execution ids every in-process test gets: random (the "
        "default, as in use), short (the fewest tokens an id can take) or long (the most)\n\n"
    )


def test_the_compatibility_runs_give_the_shortest_ids_on_3_10_and_the_longest_on_3_13() -> None:
    assert 'PFLOW_STRUCTURE_TEST_IDS="$2" PFLOW_STRUCTURE_TEST_EXAMPLES=0.2 ".venv-$1/bin/python" -m pytest' in CI
    assert "PFLOW_STRUCTURE_REQUIRE_PFLOW=1 compat_suite 3.10 short\n" in CI
    assert 'PFLOW_STRUCTURE_REQUIRE_WANT=1 compat_suite "$1" long\n' in CI


def test_forced_long_ids_take_fifteen_tokens_here_and_in_a_process_the_test_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pflow_structure.cache import ExecutionCache
    from pflow_structure.render.tokens import count_tokens
    from tests.conftest import force_ids

    monkeypatch.setenv("PFLOW_STRUCTURE_TEST_IDS", "long")
    force_ids(monkeypatch)
    here = [ExecutionCache(tmp_path / "here").put("n", {}, {"r": n}).execution_id for n in range(2)]
    code = "import sys; from pflow_structure.cache import new_execution_id as new; print(new(), new())"
    started = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert [count_tokens(i) for i in here + started] == [15, 15, 15, 15]
    assert len(set(here + started)) == 4
