"""The README and docs/ keep working: every relative link resolves (to its heading too, by GitHub's anchor
rules), every ``pflow-structure`` command in a shell block names a real command and only options it has,
and the blocks marked ``<!-- docs-test: runs offline -->`` run on the repository's example data and print
what they show.

A marked block runs its ``pflow-structure`` lines in order, in this test's own cache directory, one page at a
time; ``ID``, ``EXECUTION_ID``, ``NEW_ID`` and literal execution ids stand for the id the page's last ``run``
or ``edit-fields`` printed (a run of ``read-json`` on examples/data/github_issues.json when there was none).
In a ``console`` block, the lines under a ``$`` line are its exact standard output. The marker
``<!-- docs-test: runs offline, exit 1 -->`` expects exit code 1 from every command of its block.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_INFOS = frozenset({"bash", "sh", "shell", "console", "zsh"})
MARKER = re.compile(r"<!-- docs-test: runs offline(?:, exit (\d+))? -->")
PLACEHOLDER_ID = re.compile(r"(?<![\w-])(?:EXECUTION_ID|EXEC_ID|NEW_ID|ID|exec-\d+-[0-9a-f]{8})(?![\w-])")
PRINTED_ID = re.compile(r"exec-\d+-[0-9a-f]{8}")
OPERATORS = frozenset("();<>|&")


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
