"""The README and docs/ keep working: every relative link resolves (to its heading too, by GitHub's anchor
rules), every ``pflow-structure`` command in a shell block names a real command and only options it has,
and the blocks marked ``<!-- docs-test: runs offline -->`` run on the repository's example data and print
what they show.

A marked block runs its ``pflow-structure`` lines in order, in this test's own cache directory, one page at a
time; ``ID``, ``EXECUTION_ID``, ``NEW_ID`` and literal execution ids stand for the id the page's last ``run``
or ``edit-fields`` printed (a run of ``read-json`` on examples/data/github_issues.json when there was none).
In a ``console`` block, the lines under a ``$`` line are its exact standard output. A marked ``python`` block
runs as a script from the repository's root. The marker
``<!-- docs-test: runs offline, exit 1 -->`` expects exit code 1 from every command of its block.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from pflow_structure.cli.app import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_INFOS = frozenset({"bash", "sh", "shell", "console", "zsh"})
MARKER = re.compile(r"<!-- docs-test: runs offline(?:, exit (\d+))? -->")
PLACEHOLDER_ID = re.compile(r"(?<![\w-])(?:EXECUTION_ID|EXEC_ID|NEW_ID|ID|exec-\d+-[0-9a-f]{8})(?![\w-])")
PRINTED_ID = re.compile(r"exec-\d+-[0-9a-f]{8}")
OPERATORS = frozenset("();<>|&")
_READ_OPTIONS = "--char-offset, --format, --help, --json, --limit, --max-tokens, --names, --offset, -h"


@dataclass
class Block:
    """One fenced code block: its info string, its lines, the marker above it (if any), where it starts."""

    info: str
    lines: list[str]
    line_number: int
    marker: re.Match[str] | None = None
    commands: list[tuple[str, list[str]]] = field(default_factory=list)  # (command line, expected stdout)


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def parse_page(text: str) -> tuple[list[str], list[Block]]:
    """The lines outside code blocks, and the fenced code blocks."""
    prose: list[str] = []
    blocks: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if current is None and line.startswith("```"):
            previous = next((p for p in reversed(prose) if p.strip()), "")
            current = Block(line[3:].strip(), [], number, MARKER.fullmatch(previous.strip()))
            blocks.append(current)
            prose.append("")
        elif current is not None and line.strip() == "```":
            current = None
            prose.append("")
        elif current is not None:
            current.lines.append(line)
        else:
            prose.append(line)
    assert current is None, f"a code block opened at line {current.line_number} is never closed"
    return prose, blocks


# --- links and anchors ---------------------------------------------------------------------------------

INLINE_CODE = re.compile(r"`+[^`]*`+")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: rendered text, lower case, only letters, digits, ``_``, ``-``
    and spaces kept, each space a hyphen."""
    text = LINK.sub(r"\1", heading).replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    prose, _ = parse_page(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    anchors = set()
    for line in prose:
        match = re.match(r"#{1,6} (.+?)#*\s*$", line)
        if match:
            base = github_anchor(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def relative_links(page: Path) -> list[str]:
    prose, _ = parse_page(page.read_text(encoding="utf-8"))
    links = []
    for line in prose:
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            target = match.group(2)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: are not ours to check
                links.append(target)
    return links


def broken_link(page: Path, target: str) -> str | None:
    """Why ``target`` in ``page`` does not resolve, or None."""
    path_part, _, anchor = target.partition("#")
    resolved = (page.parent / path_part).resolve() if path_part else page
    if not resolved.exists():
        return f"{target}: no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}"
    if anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
        return f"{target}: no heading with anchor #{anchor} in {_rel(resolved)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    links = relative_links(page)
    broken = [reason for target in links if (reason := broken_link(page, target))]
    assert broken == []


def test_the_anchor_rule_is_githubs() -> None:
    headings = ["Many instances: Redis and scaled-out `serve --http` (issue 19)", "pflow 0.16", "The proxy: a_b"]
    assert [github_anchor(h) for h in headings] == [
        "many-instances-redis-and-scaled-out-serve---http-issue-19",
        "pflow-016",
        "the-proxy-a_b",
    ]


def test_a_missing_file_and_a_missing_heading_are_reported() -> None:
    readme = ROOT / "README.md"
    assert broken_link(readme, "docs/nothing.md") == "docs/nothing.md: no file docs/nothing.md"
    assert (
        broken_link(readme, "docs/cli.md#nothing")
        == "docs/cli.md#nothing: no heading with anchor #nothing in docs/cli.md"
    )
    assert broken_link(readme, "#quick-start") is None


def test_the_readme_stays_short_and_every_docs_page_is_linked_from_another_page() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in PAGES
        for target in relative_links(page)
        if target.partition("#")[0]
    }
    assert [_rel(page) for page in PAGES[1:] if page.resolve() not in linked] == []


# --- commands in shell blocks ----------------------------------------------------------------------------


def shell_commands(block: Block) -> list[tuple[str, list[str]]]:
    """The command lines of a shell block (``\\`` continuations joined), each with the output shown under it
    (console blocks only)."""
    commands: list[tuple[str, list[str]]] = []
    pending = ""
    for line in block.lines:
        if block.info == "console":
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line)
            continue
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        if pending.strip() and not pending.lstrip().startswith("#"):
            commands.append((pending.strip(), []))
        pending = ""
    return commands


def pflow_structure_calls(command: str) -> list[list[str]]:
    """The arguments of each ``pflow-structure`` call on a shell line (up to the next |, &, ;, > or ...)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    calls = []
    for index, token in enumerate(tokens):
        if token == "pflow-structure" or token.endswith("/pflow-structure"):
            args: list[str] = []
            for arg in tokens[index + 1 :]:
                if set(arg) <= OPERATORS:
                    break
                args.append(arg)
            calls.append(args)
    return calls


def _is_placeholder(value: str) -> bool:
    return value.isupper() or "..." in value


def _option_problems(command: click.Command, args: list[str], where: str) -> tuple[list[str], list[str], int]:
    """Check the options in ``args``; return the problems, the positional arguments, and where a
    subcommand (the first positional of a group) starts (len(args) when there is none)."""
    ctx = click.Context(command, info_name=where, **command.context_settings)
    params = [param for param in command.get_params(ctx) if isinstance(param, click.Option)]
    options = {name: param for param in params for name in param.opts + param.secondary_opts}
    passes_unknown = command.context_settings.get("ignore_unknown_options", False)
    problems: list[str] = []
    positional: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return problems, positional + args[index:], len(args)
        if not arg.startswith("-") or arg == "-":
            if isinstance(command, click.Group):
                return problems, positional, index - 1
            positional.append(arg)
            continue
        name, equals, value = arg.partition("=")
        option = options.get(name)
        if option is None:
            if not passes_unknown:
                problems.append(f"{where}: no option {name} (it has {', '.join(sorted(options))})")
            continue
        if option.is_flag or option.count:
            continue
        if not equals:
            if index == len(args):
                problems.append(f"{where}: {name} needs a value")
                continue
            value, index = args[index], index + 1
        if isinstance(option.type, click.Choice) and not _is_placeholder(value) and value not in option.type.choices:
            problems.append(f"{where}: {name} {value!r} is not one of {list(option.type.choices)}")
    return problems, positional, len(args)


def _argument_problems(command: click.Command, positional: list[str], where: str) -> list[str]:
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    needed = sum(1 if arg.nargs == -1 else arg.nargs for arg in arguments if arg.required)
    if len(positional) < needed:
        names = " ".join(arg.human_readable_name for arg in arguments)
        return [f"{where}: {len(positional)} arguments, needs {needed} ({names})"]
    if not any(arg.nargs == -1 for arg in arguments) and len(positional) > sum(a.nargs for a in arguments):
        return [f"{where}: {len(positional)} arguments, takes {sum(a.nargs for a in arguments)}: {positional}"]
    return []


def command_problems(args: list[str]) -> list[str]:
    """Walk the click tree along ``args``: every command path exists, every option belongs to its command
    (with a valid choice where it has choices), and the positional arguments are as many as it takes."""
    command: click.Command = cli_main
    where = "pflow-structure"
    while True:
        problems, positional, sub = _option_problems(command, args, where)
        if not isinstance(command, click.Group):
            return problems + _argument_problems(command, positional, where)
        if sub == len(args) or problems:
            return problems
        found = command.get_command(click.Context(command), args[sub])
        if found is None:
            return [
                f"{where}: no command {args[sub]!r} (it has {', '.join(command.list_commands(click.Context(command)))})"
            ]
        command, where, args = found, f"{where} {args[sub]}", args[sub + 1 :]


def _documented_calls() -> list[tuple[str, list[str]]]:
    return [
        (f"{_rel(page)}:{block.line_number}: {command}", args)
        for page in PAGES
        for block in parse_page(page.read_text(encoding="utf-8"))[1]
        if block.info in SHELL_INFOS
        for command, _ in shell_commands(block)
        for args in pflow_structure_calls(command)
    ]


def test_the_docs_show_pflow_structure_commands_of_every_top_level_command() -> None:
    shown = {args[0] for _, args in _documented_calls() if args}
    assert sorted(set(cli_main.list_commands(click.Context(cli_main))) - shown) == []


@pytest.mark.parametrize(("where", "args"), _documented_calls(), ids=lambda x: x if isinstance(x, str) else "")
def test_a_documented_command_names_a_real_command_and_its_options(where: str, args: list[str]) -> None:
    assert command_problems(args) == []


@pytest.mark.parametrize(
    ("args", "problems"),
    [
        (["read-fields", "ID", "x", "--limt", "3"], ["read-fields: no option --limt (it has " + _READ_OPTIONS + ")"]),
        (["cache", "purge"], ["cache: no command 'purge' (it has clear, list, prune, stats)"]),
        (["nodes", "--kind", "flows"], ["nodes: --kind 'flows' is not one of ['nodes', 'workflows']"]),
        (["run", "read-json", "--max-paths"], ["run: --max-paths needs a value"]),
        (["read-fields", "ID"], ["read-fields: 1 arguments, needs 2 (EXECUTION_ID PATH...)"]),
        (["format", "a.json", "b.json"], ["format: 2 arguments, takes 1: ['a.json', 'b.json']"]),
        (["--cache-dir", "/tmp/x", "read-fields", "ID", "p", "--format=toon"], []),
        (["nodes", "-h"], []),
        (["proxy", "--budget", "5", "--", "npx", "--anything"], []),
        (["pflow", "probe", "--output-format", "json"], []),
    ],
)
def test_the_command_check_names_each_wrong_command_option_choice_and_count(
    args: list[str], problems: list[str]
) -> None:
    assert command_problems(args) == [f"pflow-structure {problem}" for problem in problems]


def test_the_command_check_names_the_commands_there_are() -> None:
    commands = ", ".join(sorted(cli_main.list_commands(click.Context(cli_main))))
    assert command_problems(["serv"]) == [f"pflow-structure: no command 'serv' (it has {commands})"]


# --- blocks that run offline ------------------------------------------------------------------------------


def runnable_blocks(page: Path) -> list[Block]:
    blocks = [block for block in parse_page(page.read_text(encoding="utf-8"))[1] if block.marker]
    for block in blocks:
        block.commands = [
            (command, shown) for command, shown in shell_commands(block) if pflow_structure_calls(command)
        ]
    return blocks


def _executable_dir(tmp_path: Path) -> Path:
    """A directory holding ``pflow-structure``: the console script beside this Python when there is one,
    else a wrapper that runs ``python -m pflow_structure`` (the same entry point)."""
    here = Path(sys.executable).parent
    if (here / "pflow-structure").exists():
        return here
    wrapper = tmp_path / "bin" / "pflow-structure"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pflow_structure "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper.parent


class PageRun:
    """Runs a page's marked commands in order, carrying the last printed execution id."""

    def __init__(self, bin_dir: Path) -> None:
        import os

        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.execution_id: str | None = None

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        line = command.replace(".venv/bin/pflow-structure", "pflow-structure")
        return subprocess.run(
            ["bash", "-c", f"set -o pipefail; {line}"],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def python(self, lines: list[str]) -> subprocess.CompletedProcess[str]:
        code = "\n".join(lines)
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        if PLACEHOLDER_ID.search(command) and self.execution_id is None:
            self.run("pflow-structure run read-json path=examples/data/github_issues.json")
        if self.execution_id is not None:
            command = PLACEHOLDER_ID.sub(self.execution_id, command)
        done = self.shell(command)
        first = pflow_structure_calls(command)[0]
        printed = PRINTED_ID.search(done.stdout)
        if first[:1] in (["run"], ["edit-fields"]) and done.returncode == 0 and printed:
            self.execution_id = printed.group(0)
        return done


RUNNABLE_PAGES = [page for page in PAGES if runnable_blocks(page)]


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_rel)
def test_the_marked_commands_of_a_page_run_offline_and_print_what_it_shows(page: Path, tmp_path: Path) -> None:
    page_run = PageRun(_executable_dir(tmp_path))
    failures = []
    for block in runnable_blocks(page):
        assert block.marker is not None
        expected_exit = int(block.marker.group(1) or 0)
        for command, shown in block.commands or [("python -", [])]:
            done = page_run.run(command) if block.commands else page_run.python(block.lines)
            where = f"{_rel(page)}:{block.line_number}: {command}"
            if done.returncode != expected_exit:
                failures.append(f"{where}: exit {done.returncode}, not {expected_exit}: {done.stderr.strip()}")
            elif shown and done.stdout.rstrip("\n").splitlines() != shown:
                failures.append(f"{where}: printed {done.stdout!r}, the page shows {shown!r}")
    assert failures == []


def test_every_marker_sits_on_a_shell_block_with_pflow_structure_commands() -> None:
    misplaced = [
        f"{_rel(page)}:{block.line_number}"
        for page in PAGES
        for block in runnable_blocks(page)
        if not (block.info == "python" or (block.info in SHELL_INFOS and block.commands))
    ]
    marker_lines = [
        line.strip()
        for page in PAGES
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith("<!-- docs-test")
    ]
    markers = sum(len(runnable_blocks(page)) for page in PAGES)
    assert (misplaced, len(marker_lines)) == ([], markers), "a marker must come right before a shell block"
    assert [line for line in marker_lines if not MARKER.fullmatch(line)] == []


def test_the_commands_that_run_offline_cover_run_read_fields_format_nodes_and_more() -> None:
    run = {
        " ".join(args[:2]) if args[0] in ("cache", "workflows") else args[0]
        for page in RUNNABLE_PAGES
        for block in runnable_blocks(page)
        for command, _ in block.commands
        for args in pflow_structure_calls(command)
    }
    expected = "cache list, cache prune, cache stats, edit-fields, format, nodes, read-fields, run, workflows delete"
    assert sorted(run) == [*expected.split(", "), "workflows list", "workflows save", "workflows show"]


def test_the_readme_shows_what_its_first_quick_start_command_prints(tmp_path: Path) -> None:
    """The output under "The first prints": the same lines in the same order, with ``  ...`` standing for
    the lines left out and any execution id for the one printed."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = readme.split("The first prints", 1)[1].split("```\n", 1)[1].split("```", 1)[0].splitlines()
    done = PageRun(_executable_dir(tmp_path)).run("pflow-structure run read-json path=examples/data/github_issues.json")
    printed = PRINTED_ID.sub("ID", done.stdout).splitlines()
    gap = shown.index("  ...")
    head, tail = (
        [PRINTED_ID.sub("ID", line) for line in shown[:gap]],
        [PRINTED_ID.sub("ID", line) for line in shown[gap + 1 :]],
    )
    assert (done.returncode, printed[: len(head)], printed[-len(tail) :]) == (0, head, tail)
