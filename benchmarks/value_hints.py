"""What each value hint (structure/hints.py) costs on the corpus and wins on held-out questions (issue 35.5).

    python benchmarks/value_hints.py            # one row per kind of hint, beside none and the shipped set

Per row: the CLI text of the 28 corpus files without want (o200k tokens, the cap is 12,000), and on the
labelled questions of benchmarks/want_eval.py (want = each question's text) the questions whose needed
paths are all listed, held-out families and tuned-on ones apart, and the tokens of the held-out views.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

CAP = 12_000


def corpus_tokens(workdir: Path) -> int:
    import tokens
    from common import CORPUS, Context, cli_text

    ctx = Context(False, workdir, workdir)
    return sum(tokens.count_tokens(cli_text(path, ctx)[0]) for path in sorted(CORPUS.glob("*.json")))


def held_and_tuned(workdir: Path) -> tuple[tuple[int, int, int], tuple[int, int]]:
    """((held-out listed, questions, view tokens), (tuned-on listed, questions)) with the current hints."""
    import want_eval

    from pflow_structure import Settings
    from pflow_structure.filtering import FilterOptions

    settings = Settings(cache_dir=workdir, filtering=FilterOptions(mode="heuristic"))
    tallies = want_eval.judge(want_eval.load(), settings)
    held = [t for family, t in tallies.items() if family not in want_eval.TUNED_ON]
    tuned = [t for family, t in tallies.items() if family in want_eval.TUNED_ON]
    return (
        (sum(t.listed for t in held), sum(t.questions for t in held), sum(t.view for t in held)),
        (sum(t.listed for t in tuned), sum(t.questions for t in tuned)),
    )


def main(argv: Sequence[str] | None = None) -> int:
    from pflow_structure.structure import hints

    shipped = hints.SHOWN
    configs = [("none", ()), *((kind, (kind,)) for kind in hints.KINDS), ("shipped", shipped)]
    lines = [
        "| Hints shown | corpus tokens (cap 12,000) | held-out questions listed | held-out view tokens "
        "| tuned-on questions listed |",
        "|---|---|---|---|---|",
    ]
    try:
        for name, kinds in configs:
            hints.SHOWN = kinds
            with tempfile.TemporaryDirectory() as workdir:
                corpus = corpus_tokens(Path(workdir))
                (held, held_n, view), (tuned, tuned_n) = held_and_tuned(Path(workdir))
            label = f"{name} ({', '.join(kinds) or '-'})" if name == "shipped" else name
            lines.append(
                f"| {label} | {corpus:,}{' (over)' if corpus > CAP else ''} | {held}/{held_n} | {view:,} "
                f"| {tuned}/{tuned_n} |"
            )
    finally:
        hints.SHOWN = shipped
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
