"""benchmarks/agent_trial/ end to end: the wrapper logs each call, refuses the rest, and the scorer counts
calls, tokens and answers whose cited paths hold the labels (a scripted agent on two questions)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

TRIAL = Path(__file__).resolve().parent.parent / "benchmarks" / "agent_trial"


@pytest.fixture(scope="module")
def modules() -> tuple:
    sys.path.insert(0, str(TRIAL))
    import score
    import scripted
    import trial

    return trial, scripted, score


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_scripted_agent_through_wrapper_and_scorer(modules: tuple, tmp_path: Path) -> None:
    _, scripted, score = modules
    log, answers = tmp_path / "log.jsonl", tmp_path / "answers.json"
    assert scripted.main(["--log", str(log), "--answers", str(answers), "--q", "q01", "--q", "q11"]) == 0
    entries = _log(log)
    assert [(e["question"], e["command"][0], e["exit"]) for e in entries] == [
        ("q01", "run", 0),
        ("q01", "read-fields", 0),
        ("q11", "run", 0),
        ("q11", "read-fields", 0),
    ]
    assert all(e["tokens"] > 0 for e in entries)
    scored = score.score(log, json.loads(answers.read_text(encoding="utf-8")))
    assert [(s.question, s.calls, s.held) for s in scored] == [("q01", 2, True), ("q11", 2, True)]
    assert [s.tokens for s in scored] == [
        sum(e["tokens"] for e in entries if e["question"] == "q01"),
        sum(e["tokens"] for e in entries if e["question"] == "q11"),
    ]


def test_a_cited_path_that_does_not_hold_the_label_is_scored_wrong(modules: tuple, tmp_path: Path) -> None:
    _, _, score = modules
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"question": "q01", "command": ["run"], "exit": 0, "tokens": 7}) + "\n")
    scored = score.score(log, {"q01": {"answer": "2000 usd", "paths": ["result.amount_refunded", "currency"]}})
    assert scored == [score.Scored("q01", 1, 7, scored[0].raw, False)]


def test_the_wrapper_refuses_a_file_path_and_logs_the_refusal(modules: tuple, tmp_path: Path) -> None:
    trial, _, _ = modules
    log = tmp_path / "log.jsonl"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = trial.main(["--q", "q01", "--log", str(log), "run", "stripe_charge", "path=/etc/passwd"])
    assert code == 2
    assert out.getvalue() == "Error: run takes the response name and options only, not 'path=/etc/passwd'\n"
    assert [(e["command"], e["exit"]) for e in _log(log)] == [(["run", "stripe_charge", "path=/etc/passwd"], 2)]


def test_the_wrapper_refuses_other_commands(modules: tuple) -> None:
    trial, _, _ = modules
    assert (
        trial.cli_argv(["cache", "list"]) == "unknown command 'cache': the trial offers run, read-fields, help and list"
    )
