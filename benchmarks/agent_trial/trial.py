"""The only way a trial agent reaches the responses: `pflow-structure run` / `read-fields`, logged.

    python benchmarks/agent_trial/trial.py list                                  # the response names
    python benchmarks/agent_trial/trial.py --q q01 run stripe_charge [--want "how much"] [run options]
    python benchmarks/agent_trial/trial.py --q q01 read-fields EXEC_ID PATH ... [read-fields options]
    python benchmarks/agent_trial/trial.py --q q01 help [run|read-fields]

`run NAME` runs `pflow-structure run read-json path=FILE` on the response NAME of questions.json (the agent
never sees the file's path or its raw text); every other command is refused. Each call appends one JSON line
to the log (``--log``, default $AGENT_TRIAL_LOG or benchmarks/agent_trial/runs/log.jsonl): the question, the
command as the agent typed it, the exit code and the o200k tokens of what it printed. The cache of the trial
lives beside the log, so execution ids read back across calls. The CLI runs in this process (the same code
the console script runs), so a call costs no interpreter start.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
DATA = REPO / "tests" / "data" / "filter_eval"
QUESTIONS = HERE / "questions.json"
DEFAULT_LOG = HERE / "runs" / "log.jsonl"
# What the agent may pass to `run` besides the response's name: options only, never a node or a parameter.
RUN_OPTIONS_WITH_VALUE = ("--want", "--format", "--max-tokens", "--fields", "--jq", "--max-paths")


def responses() -> dict[str, Path]:
    listed = json.loads(QUESTIONS.read_text(encoding="utf-8"))["responses"]
    return {name: DATA / file for name, file in listed.items()}


def cli_argv(command: Sequence[str]) -> list[str] | str:
    """The `pflow-structure` arguments for the agent's command, or why it is refused."""
    if not command:
        return "no command: use run NAME, structure EXEC_ID, read-fields EXEC_ID PATH ..., help or list"
    verb, rest = command[0], list(command[1:])
    if verb == "help":
        return [*rest[:1], "--help"] if rest[:1] in (["run"], ["read-fields"]) else ["--help"]
    if verb in ("read-fields", "structure"):  # structure: the full view of a cached execution (want answers name it)
        return [verb, *rest]
    if verb == "run":
        known = responses()
        if not rest or rest[0] not in known:
            return f"run needs a response name first: one of {', '.join(sorted(known))}"
        options = rest[1:]
        for index, arg in enumerate(options):
            after_option = index > 0 and options[index - 1] in RUN_OPTIONS_WITH_VALUE
            if not arg.startswith("--") and not after_option:
                return f"run takes the response name and options only, not {arg!r}"
        return ["run", "read-json", f"path={known[rest[0]]}", *options]
    return f"unknown command {verb!r}: the trial offers run, read-fields, help and list"


def call(command: Sequence[str], cache_dir: Path) -> tuple[int, str]:
    """Run the CLI in this process on ``command`` (already checked); (exit code, what it printed)."""
    from pflow_structure.cli.entry import main

    saved_cache = os.environ.get("PFLOW_STRUCTURE_CACHE_DIR")
    os.environ["PFLOW_STRUCTURE_CACHE_DIR"] = str(cache_dir)  # the CLI reads its settings at the edge
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["pflow-structure", *command]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = saved
        if saved_cache is None:
            os.environ.pop("PFLOW_STRUCTURE_CACHE_DIR", None)
        else:
            os.environ["PFLOW_STRUCTURE_CACHE_DIR"] = saved_cache
    return code, out.getvalue() + err.getvalue()


def as_mcp_sends(printed: str) -> str:
    """A ``--json`` answer as the MCP server sends the same dict: compact JSON (the CLI indents it)."""
    try:
        return json.dumps(json.loads(printed), ensure_ascii=False, separators=(",", ":")) + "\n"
    except ValueError:  # an error message, not a dict: as printed
        return printed


def log_call(log: Path, question: str, command: Sequence[str], code: int, printed: str) -> dict[str, Any]:
    from pflow_structure.render.tokens import count_tokens

    entry = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "question": question,
        "command": list(command),
        "exit": code,
        "tokens": count_tokens(printed),
        "chars": len(printed),
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--q", default="", help="the question id this call works on (questions.json)")
    parser.add_argument("--log", default=os.environ.get("AGENT_TRIAL_LOG", str(DEFAULT_LOG)), help="the JSONL log")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="run NAME ..., read-fields ..., help, list")
    args = parser.parse_args(argv)
    if args.command[:1] == ["list"]:
        print("\n".join(sorted(responses())))
        return 0
    if not args.q:
        print("say which question this call is for: --q ID (before the command)", file=sys.stderr)
        return 2
    log = Path(args.log)
    checked = cli_argv(args.command)
    if isinstance(checked, str):
        code, printed = 2, f"Error: {checked}\n"
    else:
        code, printed = call(checked, log.parent / "cache")
        printed = as_mcp_sends(printed) if "--json" in checked else printed
    sys.stdout.write(printed)
    log_call(log, args.q, args.command, code, printed)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
