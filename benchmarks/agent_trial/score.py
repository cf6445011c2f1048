"""Score an agent trial: tokens read against the raw compact JSON, calls a question, answers that hold.

    python benchmarks/agent_trial/score.py --log runs/log.jsonl --answers runs/answers.json

``answers.json``: ``{"q01": {"answer": "2000 usd", "paths": ["result.amount", "result.currency"]}, ...}``
(what the brief asks the agent to hand back). A question is **held** when every labelled value of
questions.json is among the values at the paths the agent cited, read from the raw response (a path without
``result`` first is read under it; wildcards give every value they reach; strings compare without case).
Tokens: the o200k tokens of everything the wrapper printed for the question, against the response's
compact JSON (what the agent would have read without us).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from trial import QUESTIONS, responses  # noqa: E402 (the path above first)


class Scored(NamedTuple):
    question: str
    calls: int
    tokens: int
    raw: int
    held: bool


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return type(a) is type(b) and a == b


def values_at(value: Any, paths: Sequence[str]) -> list[Any]:
    """Every scalar at the cited paths of ``{"result": value}`` (a path that does not resolve adds nothing)."""
    from pflow_structure.paths import resolve

    found: list[Any] = []
    for path in paths:
        full = path if path.startswith(("result", "$")) else "result" + ("" if path.startswith("[") else ".") + path
        try:
            matches = resolve({"result": value}, full)[0]
        except (LookupError, ValueError):
            continue
        for match in matches:
            if not match.missing:
                found.extend(_scalars(match.value))
    return found


def held(expected: Sequence[Any], value: Any, paths: Sequence[str]) -> bool:
    seen = values_at(value, paths)
    return all(any(_same(want, got) for got in seen) for want in expected)


def score(log: Path, answers: Mapping[str, Any]) -> list[Scored]:
    from pflow_structure.render.tokens import count_tokens

    calls: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            calls.setdefault(entry["question"], []).append(entry)
    files = responses()
    scored = []
    for question in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]:
        qid = question["id"]
        if qid not in calls and qid not in answers:
            continue  # not part of this run
        value = json.loads(files[question["response"]].read_text(encoding="utf-8"))
        raw = count_tokens(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
        answer = answers.get(qid) or {}
        ok = held(question["expected"], value, list(answer.get("paths") or []))
        made = calls.get(qid, [])
        scored.append(Scored(qid, len(made), sum(entry["tokens"] for entry in made), raw, ok))
    return scored


def table(scored: Sequence[Scored]) -> list[str]:
    lines = ["| Question | calls | tokens read | raw compact JSON | held |", "|---|---|---|---|---|"]
    lines += [f"| {s.question} | {s.calls} | {s.tokens:,} | {s.raw:,} | {'yes' if s.held else 'no'} |" for s in scored]
    if scored:
        read, raw = sum(s.tokens for s in scored), sum(s.raw for s in scored)
        calls = sum(s.calls for s in scored) / len(scored)
        over = sum(1 for s in scored if s.tokens > s.raw)
        lines.append(
            f"| **{len(scored)} questions** | {calls:.2f} a question | {read:,} | {raw:,} ({raw / max(read, 1):.1f}x "
            f"fewer read; {over} above raw) | {sum(s.held for s in scored)}/{len(scored)} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the wrapper's JSONL log")
    parser.add_argument("--answers", required=True, help='{"q01": {"answer": ..., "paths": [...]}, ...}')
    args = parser.parse_args(argv)
    answers = json.loads(Path(args.answers).read_text(encoding="utf-8"))
    print("\n".join(table(score(Path(args.log), answers))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
