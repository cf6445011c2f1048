"""A scripted "agent": for each question, `run NAME --want QUESTION`, then one `read-fields` of the labelled paths.

    python benchmarks/agent_trial/scripted.py --log /tmp/trial/log.jsonl --answers /tmp/trial/answers.json [--q q01 ...]
    python benchmarks/agent_trial/score.py --log /tmp/trial/log.jsonl --answers /tmp/trial/answers.json

It goes through the wrapper like an agent (every call logged), knows the labelled paths (so it is the
trial's floor of calls and a reference for tokens, not a measure of finding the fields), and writes the
answers file the scorer reads. CI runs it on two questions (tests/test_agent_trial.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import trial  # noqa: E402 (the path above first)

_EXECUTION_ID = re.compile(r"exec-\d+-[0-9a-f]+")


def ask(log: Path, question: str, command: Sequence[str]) -> str:
    """One call through the wrapper, as an agent makes it; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        trial.main(["--q", question, "--log", str(log), *command])
    return out.getvalue()


def answer(log: Path, question: dict[str, Any]) -> dict[str, Any]:
    view = ask(log, question["id"], ["run", question["response"], "--want", question["question"]])
    found = _EXECUTION_ID.search(view)
    if found is None:
        return {"answer": "", "paths": []}
    paths = list(question["paths"])
    printed = ask(log, question["id"], ["read-fields", found.group(0), *paths])
    return {"answer": printed.strip(), "paths": paths}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the JSONL log the wrapper appends to")
    parser.add_argument("--answers", required=True, help="where to write the answers for score.py")
    parser.add_argument("--q", action="append", default=[], help="only these question ids (repeat)")
    args = parser.parse_args(argv)
    questions = json.loads(trial.QUESTIONS.read_text(encoding="utf-8"))["questions"]
    chosen = [q for q in questions if not args.q or q["id"] in args.q]
    answers = {q["id"]: answer(Path(args.log), q) for q in chosen}
    Path(args.answers).write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
