"""One expression per labelled question (issue 36): how many a single jq or JSONPath expression answers in one call.

    python benchmarks/jq_eval.py              # the table for benchmarks/README.md
    python benchmarks/jq_eval.py --show 5     # and the first few expressions it wrote, with their answers
    python benchmarks/jq_eval.py --misses     # and each jq expression that did not answer in one call

Reads the labelled questions of ``tests/data/filter_eval`` (as ``want_eval.py`` does: each question names
the template paths that answer it, ``[0]`` standing for every item). For each question it writes, by rule
and without looking at the values:

- paths: one ``read_fields`` call with every needed path (``[0]`` read as ``[*]``), today's way;
- JSONPath: one ``$`` expression, when the needed paths are one path or sibling keys of one parent
  (``$['result'][*]['login','type']``, a union: values interleaved item by item); other questions have none;
- jq: one expression that keeps each item's values together, a row per item
  (``.result | [.[]? | {"actor.login": .actor.login, "type": .type}]``), answered as JSON and as
  ``format="auto"`` (a TOON table for rows).

A question counts as answered in one call when that call found a value, needed no second page (no
``_more``) under the default budget of 8,000 tokens, and (jq) its answer holds as many non-null values as
the needed paths do. Tokens are what an agent over MCP pays: the call's arguments as compact JSON plus the
answer (compact JSON, or the text for ``auto``), in o200k. The ceiling is the needed reads alone: the
values of the needed paths in one ``read_fields`` answer with no budget.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

EACH = "[*]"
PLAIN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


class Outcome(NamedTuple):
    answered: bool
    tokens: int


class Tally(NamedTuple):
    questions: int = 0
    answered: int = 0
    tokens: int = 0
    ceiling: int = 0  # of the answered questions

    def add(self, outcome: Outcome | None, ceiling: int) -> Tally:
        if outcome is None or not outcome.answered:
            return Tally(self.questions + 1, self.answered, self.tokens, self.ceiling)
        return Tally(self.questions + 1, self.answered + 1, self.tokens + outcome.tokens, self.ceiling + ceiling)


def segments(path: str) -> list[str | int]:
    """A template path's segments, ``[0]`` (every item, in a structure) as ``[*]``."""
    from pflow_structure.paths import parse_path

    return [part if isinstance(part, str) else EACH for part in parse_path(path.replace("[0]", "[*]"))]


def jq_rows(needs: Sequence[str]) -> str:
    """One jq expression for the needed paths: each list's items as rows holding their own values."""
    tree: dict[Any, Any] = {}
    for path in needs:
        node = tree
        for part in segments(path):
            node = node.setdefault(part, {})
    return _jq(tree)


def _key(key: Any) -> str:
    return f".{key}" if isinstance(key, str) and PLAIN.fullmatch(key) else f".{json.dumps(str(key))}"


def _jq(node: dict[Any, Any]) -> str:
    if not node:
        return "."
    if list(node) == [EACH]:
        inner = _jq(node[EACH])
        return "[.[]?]" if inner == "." else f"[.[]? | {inner}]"
    fields = []
    for key, child in node.items():
        chain, label = [key], [str(key)]
        while len(child) == 1 and EACH not in child:
            (key, child), *_ = child.items()
            chain.append(key)
            label.append(str(key))
        access = "".join(_key(part) for part in chain)
        inner = _jq(child)
        fields.append((".".join(label), access if inner == "." else f"{access} | {inner}"))
    if len(fields) == 1:
        return fields[0][1]  # one chain of keys: its value, no object around it
    return "{" + ", ".join(f"{json.dumps(label)}: ({value})" for label, value in fields) + "}"


def jsonpath_for(needs: Sequence[str]) -> str | None:
    """One RFC 9535-style expression for the needed paths, or None when none can hold them all."""
    split = [segments(path) for path in dict.fromkeys(needs)]
    parents = {tuple(parts[:-1]) for parts in split}
    if len(parents) != 1 or not all(isinstance(parts[-1], str) and parts[-1] != EACH for parts in split):
        return None if len(split) != 1 else _jsonpath(split[0])
    names = ",".join(json.dumps(parts[-1]).replace('"', "'") for parts in split)
    return _jsonpath(list(next(iter(parents)))) + (f"[{names}]" if len(split) > 1 else "")


def _jsonpath(parts: Sequence[Any]) -> str:
    return "$" + "".join("[*]" if part == EACH else "[" + json.dumps(part).replace('"', "'") + "]" for part in parts)


def values_in(value: Any) -> int:
    """Non-null scalars in a value (labels of rows not counted)."""
    if isinstance(value, dict):
        return sum(values_in(item) for item in value.values())
    if isinstance(value, list):
        return sum(values_in(item) for item in value)
    return value is not None


def measure(arguments: dict[str, Any], answer: Any, text: str | None = None) -> int:
    from pflow_structure.render.output_text import compact
    from pflow_structure.render.tokens import count_tokens

    return count_tokens(compact(arguments)) + count_tokens(text if text is not None else compact(answer))


def judge_question(execution_id: str, needs: Sequence[str], settings: Any, show: list[str] | None) -> dict[str, Any]:
    from pflow_structure.errors import StructureError
    from pflow_structure.service.answers import read_fields_answer
    from pflow_structure.service.querying import jq_answer, jq_text_answer

    paths = list(dict.fromkeys(path.replace("[0]", "[*]") for path in needs))
    whole = read_fields_answer(execution_id, paths, max_tokens=10**9, settings=settings).value
    needed_values = sum(values_in(whole[path]) for path in paths if path in whole)
    ceiling = measure({"execution_id": execution_id, "field_paths": paths}, whole)
    row: dict[str, Any] = {"ceiling": ceiling}
    read = read_fields_answer(execution_id, paths, settings=settings)
    arguments: dict[str, Any] = {"execution_id": execution_id, "field_paths": paths}
    row["paths"] = Outcome("_more" not in read.value and read.found, measure(arguments, read.value))
    expression = jsonpath_for(needs)
    if expression is not None:
        found = read_fields_answer(execution_id, [expression], settings=settings)
        arguments = {"execution_id": execution_id, "field_paths": [expression]}
        row["jsonpath"] = Outcome("_more" not in found.value and found.found, measure(arguments, found.value))
    rows = jq_rows(needs)
    arguments = {"execution_id": execution_id, "jq": rows}
    try:
        answer = jq_answer(execution_id, rows, settings=settings)
        complete = values_in(answer.value.get(rows)) == needed_values
        one_call = "_more" not in answer.value and answer.found and complete
        row["jq"] = Outcome(one_call, measure(arguments, answer.value))
        text = jq_text_answer(execution_id, rows, "auto", settings=settings)
        row["jq_auto"] = Outcome(one_call, measure({**arguments, "format": "auto"}, None, text.text))
        outcome = f"{row['jq'].tokens} tokens, one call: {one_call}"
    except StructureError as exc:
        outcome = f"error: {exc}"
    if show is not None:
        show.append(f"- `{rows}`: {outcome}; JSONPath: `{expression}`")
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=0, help="print the first N jq expressions and their outcome")
    parser.add_argument("--misses", action="store_true", help="print each jq expression not answered in one call")
    parser.add_argument("--timing", action="store_true", help="only time read-fields with paths against --jq")
    args = parser.parse_args(argv)
    if args.timing:
        print(timing())
        return 0
    from want_eval import load

    from pflow_structure import Settings
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import store_outputs

    tallies = {name: Tally() for name in ("paths", "jsonpath", "jq", "jq_auto")}
    shown: list[str] = []
    raw = questions = 0
    with tempfile.TemporaryDirectory() as workdir:
        settings = Settings(cache_dir=Path(workdir))
        for response in load():
            stored = store_outputs("read-json", {}, {"result": response.value}, settings=settings)
            size = count_tokens(json.dumps(response.value, separators=(",", ":"), ensure_ascii=False))
            for question in response.questions:
                raw, questions = raw + size, questions + 1
                row = judge_question(stored["execution_id"], question.needs, settings, shown)
                for name in tallies:
                    tallies[name] = tallies[name].add(row.get(name), row["ceiling"])
    print(report(tallies))
    print(f"\n{questions} questions on {raw:,} tokens of raw compact JSON (counted once per question).")
    if args.show:
        print("\n".join(shown[: args.show]))
    if args.misses:
        print("\n".join(line for line in shown if "one call: True" not in line))
    return 0


TIMED = {
    "paths: read-fields ID 'result[*].number'": ["result[*].number"],
    "jq: read-fields ID --jq '[.result[].number]'": ["--jq", "[.result[].number]"],
    "jq: read-fields ID --jq '[.result[] | select(.state == \"open\")] | length'": [
        "--jq",
        '[.result[] | select(.state == "open")] | length',
    ],
    "jq: read-fields ID --jq 'repeat(1)' (stopped: too many results)": ["--jq", "repeat(1)"],
}


def timing(runs: int = 15) -> str:
    """Medians of ``runs`` whole ``read-fields`` processes on the issue example, as ratios to the path read."""
    import os
    import subprocess
    import time
    from statistics import median

    command = [str(Path(sys.executable).parent / "pflow-structure")]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PFLOW_STRUCTURE_CACHE_DIR": cache}
        ran = subprocess.run(
            [*command, "run", "read-json", f"path={REPO / 'examples/data/github_issues.json'}", "--json"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        execution_id = json.loads(ran.stdout)["execution_id"]
        medians = {}
        for label, words in TIMED.items():
            seconds = []
            for _ in range(runs):
                start = time.perf_counter()
                subprocess.run([*command, "read-fields", execution_id, *words], env=env, capture_output=True)
                seconds.append(time.perf_counter() - start)
            medians[label] = median(seconds)
    base = next(iter(medians.values()))
    lines = ["| read-fields call | median (s) | ratio to the path read |", "|---|---|---|"]
    lines += [
        f"| {label.replace('|', chr(92) + '|')} | {value:.3f} | {value / base:.2f}x |"
        for label, value in medians.items()
    ]
    return "\n".join(lines)


LABELS = {
    "paths": "one read_fields call with every needed path (today)",
    "jsonpath": "one JSONPath expression (one path, or sibling keys of one parent)",
    "jq": "one jq expression, a row per item (JSON)",
    "jq_auto": 'the same jq expression, format="auto" (rows as a TOON table)',
}


def report(tallies: dict[str, Tally]) -> str:
    lines = [
        "| one call | questions answered | their tokens (arguments + answer) | the needed reads alone | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, tally in tallies.items():
        ratio = tally.tokens / tally.ceiling if tally.ceiling else 0.0
        share = f"{tally.answered}/{tally.questions} ({tally.answered / tally.questions:.1%})"
        lines.append(f"| {LABELS[name]} | {share} | {tally.tokens:,} | {tally.ceiling:,} | {ratio:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
