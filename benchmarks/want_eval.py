"""``want`` judged per question on the labelled responses (issue 28).

    python benchmarks/want_eval.py                 # the table for benchmarks/README.md
    python benchmarks/want_eval.py --misses        # and each question whose view misses a path (tuned-on families)
    python benchmarks/want_eval.py --candidates    # and the candidates measured beside it
    python benchmarks/want_eval.py --want-model wordllama   # with the opt-in embeddings (the [want] extra)

Reads ``tests/data/filter_eval/FAMILY/labels.json``: each file's ``questions`` and ``answers`` (question
text -> the template paths that answer it). For every question, ``want`` = the question's text:

- listed: every path the question needs is listed in the view (a field of the view stands for it);
- round trip: the CLI text of ``run --want`` (execution id fixed) plus one ``read-fields`` of the needed
  paths (``[0]`` read as ``[*]``, the CLI's 20-item page), in o200k tokens, against the response's
  compact JSON.

The name matching has no fitted weights; its few constants and the word list were chosen looking only
at the families in ``TUNED_ON`` (the ones labelled when want was written): the others are held out,
and the table gives both. ``--candidates`` measures what was tried beside it: word-to-name links
learned from the labelled questions (leave-one-API-out: the links for a family come only from the
others) and wordllama 0.4's embeddings (when installed).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
EVAL = REPO / "tests" / "data" / "filter_eval"

# The families whose answers were in view while the matching was written and its constants chosen.
TUNED_ON = frozenset(
    [
        "auth0",
        "aws",
        "azure",
        "bitbucket",
        "box",
        "circleci",
        "cloudflare",
        "crowdstrike",
        "datadog",
        "digitalocean",
        "docker",
        "duo",
        "elasticsearch",
        "gcp",
        "github",
        "gitlab",
        "hubspot",
        "intercom",
        "jira",
        "kubernetes",
        "notion",
        "nuget",
        "nvd",
    ]
)
LISTED_TARGET = 0.95
RATIO_TARGET = 30.0
SHARE_CAP = 0.60


class Question(NamedTuple):
    family: str
    file: str
    text: str
    needs: list[str]


class Response(NamedTuple):
    family: str
    file: str
    value: Any
    structure: dict[str, dict[str, Any]]
    signals: dict[str, Any]
    field_count: int
    questions: list[Question]


def load() -> list[Response]:
    from pflow_structure.encoding import encode_value
    from pflow_structure.structure import infer_structure

    found = []
    for labels_file in sorted(EVAL.glob("*/labels.json")):
        labels = json.loads(labels_file.read_text(encoding="utf-8"))
        for name, label in sorted(labels["files"].items()):
            answers = label.get("answers") or {}
            if not answers:
                continue
            value = json.loads((labels_file.parent / name).read_text(encoding="utf-8"))
            inferred = infer_structure(encode_value({"result": value}).value)
            questions = [Question(labels["family"], name, text, list(paths)) for text, paths in answers.items()]
            found.append(
                Response(
                    labels["family"],
                    name,
                    value,
                    inferred.structure,
                    dict(inferred.signals or {}),
                    inferred.field_count,
                    questions,
                )
            )
    return found


WANT_MODEL = ""  # --want-model wordllama: the opt-in embeddings beside the name matching


def shown_fields(response: Response, want: str | None) -> tuple[list[str], Any]:
    """The fields the view lists for ``want`` (the heuristic path: no LLM here), and the outcome."""
    from pflow_structure.filtering import FilterOptions, fields_of, filter_structure

    outcome = filter_structure(
        response.structure,
        response.field_count,
        "read-json",
        FilterOptions(mode="heuristic", want_model=WANT_MODEL),
        signals=response.signals,
        want=want,
    )
    return [field for field in fields_of(response.structure) if field in outcome.structure], outcome


def listed(needs: Sequence[str], shown: Sequence[str]) -> bool:
    from filter_eval import covers

    return all(any(covers(field, path) for field in shown) for path in needs)


def _read_path(path: str) -> str:
    return path.replace("[0]", "[*]")


def round_trip(response: Response, question: Question, settings: Any, *, steer: bool = True) -> tuple[int, int, int]:
    """(view tokens, read tokens, raw compact JSON tokens) for one question (``steer``: with want)."""
    from common import FIXED_ID

    from pflow_structure.cli.read_fields import TEXT_MAX_ITEMS
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import read_fields_detailed, store_outputs
    from pflow_structure.service.answers import readout_text

    want = question.text if steer else None
    result = store_outputs("read-json", {}, {"result": response.value}, settings=settings, want=want)
    view = render_structure_text(dict(result, execution_id=FIXED_ID))
    paths = list(dict.fromkeys(_read_path(path) for path in question.needs))
    readout = read_fields_detailed(result["execution_id"], paths, settings=settings)
    text, _ = readout_text(readout, "text", max_items=TEXT_MAX_ITEMS, settings=settings)
    command = f"pflow-structure read-fields {FIXED_ID} " + " ".join(paths)
    raw = json.dumps(response.value, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(view), count_tokens(command) + count_tokens(text), count_tokens(raw)


def _read_cost(response_id: str, paths: Sequence[str], settings: Any) -> int:
    """Tokens of one ``read-fields`` of ``paths`` (``[0]`` read as ``[*]``): the command and what it prints."""
    from common import FIXED_ID

    from pflow_structure.cli.read_fields import TEXT_MAX_ITEMS
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import read_fields_detailed
    from pflow_structure.service.answers import readout_text

    if not paths:
        return 0
    reads = list(dict.fromkeys(_read_path(path) for path in paths))
    readout = read_fields_detailed(response_id, reads, settings=settings)
    text, _ = readout_text(readout, "text", max_items=TEXT_MAX_ITEMS, settings=settings)
    command = f"pflow-structure read-fields {FIXED_ID} " + " ".join(reads)
    return count_tokens(command) + count_tokens(text)


class Trip(NamedTuple):
    """One question's want answer round trip (issue 35): tokens of the answer, of one read of the needed
    paths it did not show as values, of the needed reads alone (the ceiling) and of the raw compact JSON;
    whether every needed path was shown as a value or named in the map/structure; whether it was data."""

    answer: int
    read: int
    ceiling: int
    raw: int
    found: bool
    data: bool


FORM, STYLE = "text", "cli"  # --form json: the MCP server's dict (style "tool"), measured as its compact JSON


def answer_trip(response: Response, question: Question, settings: Any) -> Trip:
    """The want answer (``run --want`` as the CLI prints it) and one read of what it did not show."""
    from common import FIXED_ID
    from filter_eval import covers

    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.service import capture_outputs
    from pflow_structure.service.want_answer import answer_text, sized_answer

    captured = capture_outputs("read-json", {}, {"result": response.value}, settings=settings, want=question.text)
    described = captured.result
    answer = sized_answer(described, captured.outputs, captured.structure, settings=settings, style=STYLE, form=FORM)
    answer = answer or described
    real = described["execution_id"]
    shown = answer_text(answer, settings) if "values" in answer or "data" in answer else render_structure_text(answer)
    if FORM == "json":  # the dict an MCP client reads (registry_run), as its compact JSON
        from pflow_structure.render.output_text import format_json

        shown = format_json(answer, compact=True)
    from pflow_structure.cli.read_fields import TEXT_MAX_ITEMS

    # A column cut short counts as not shown: the agent reads it (a read's page now fills the answer budget,
    # TEXT_MAX_ITEMS is None, so every cut column is shorter than that page).
    paged = {
        path
        for path in (answer.get("_more") or {})
        if TEXT_MAX_ITEMS is None or len(answer["values"][path]) < TEXT_MAX_ITEMS
    }
    values = [path for path in answer.get("values") or () if path not in paged]
    named = set(answer.get("structure") or ())
    if FORM == "json":  # the dict leaves out ``structure``: its map names the same paths as the text's
        text_form = sized_answer(described, captured.outputs, captured.structure, settings=settings, style="cli")
        named = set((text_form or described).get("structure") or ())
    data = "data" in answer
    unread = [path for path in question.needs if not data and not any(covers(v, path) for v in values)]
    found = data or all(path in named or path not in unread for path in question.needs)
    raw = json.dumps(response.value, separators=(",", ":"), ensure_ascii=False)
    return Trip(
        count_tokens(shown.replace(real, FIXED_ID)),
        _read_cost(real, unread, settings),
        _read_cost(real, question.needs, settings),
        count_tokens(raw),
        found,
        data,
    )


def answer_rows(responses: Sequence[Response], settings: Any) -> list[str]:
    """The table of want answers + one read, per held-out and tuned-on families, pooled."""
    trips: dict[bool, list[Trip]] = {True: [], False: []}
    views: dict[bool, int] = {True: 0, False: 0}  # the want view (run --want --structure) + the same read
    for response in responses:
        for question in response.questions:
            trip = answer_trip(response, question, settings)
            trips[response.family in TUNED_ON].append(trip)
            views[response.family in TUNED_ON] += round_trip(response, question, settings)[0] + trip.ceiling
    lines = [
        "| Families | questions | needed path a value or named | answers as data | answered in one call "
        "| want answer + read tokens "
        "| needed reads alone (ceiling) | efficiency (ceiling / trip) | raw / trip | above raw + 50 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, held in (("held out", False), ("tuned on", True)):
        found = trips[held]
        trip = sum(t.answer + t.read for t in found)
        ceiling, raw = sum(t.ceiling for t in found), sum(t.raw for t in found)
        above = sum(1 for t in found if t.answer + t.read > t.raw + 50)
        named = sum(t.found for t in found)
        lines.append(
            f"| {name} | {len(found)} | {named / len(found):.1%} ({named}) | {sum(t.data for t in found)} "
            f"| {sum(t.read == 0 for t in found)} "
            f"| {trip:,} | {ceiling:,} | {ceiling / trip:.2f} | {raw / trip:.1f}x | {above} |"
        )
    for name, held in (("held out", False), ("tuned on", True)):
        ceiling, raw = sum(t.ceiling for t in trips[held]), sum(t.raw for t in trips[held])
        lines.append(
            f"| {name}: the want view (--structure) + read, before | {len(trips[held])} | | | 0 | {views[held]:,} "
            f"| {ceiling:,} | {ceiling / views[held]:.2f} | {raw / views[held]:.1f}x | |"
        )
    return lines


class usual_names:
    """While entered, each want answer's map names ``count`` fields holding values that the values do not
    show, ahead of the fields the words match: the ones the filter scores highest (question aside), or with
    ``by="wordllama"`` the ones whose names read closest to the question (the opt-in embedding); the map
    holds at most ``map_tokens`` tokens. What naming more costs (issue 35's 95% named against its
    efficiency): a measurement, not a setting."""

    def __init__(self, count: int, map_tokens: int, by: str = "score") -> None:
        self.count, self.map_tokens, self.by = count, map_tokens, by

    def __enter__(self) -> None:
        from pflow_structure.filtering import fields_of
        from pflow_structure.filtering.embedding import closest_fields
        from pflow_structure.filtering.heuristic import choose_fields
        from pflow_structure.render import want_text
        from pflow_structure.service import want_answer as answers
        from pflow_structure.service.want_choice import is_value

        self.before = original, answer = want_text.want_map, answers.want_answer
        self.limits = want_text.MAP_TOKENS, want_text.MAX_NAMED
        want_text.MAX_NAMED = max(want_text.MAX_NAMED, self.count)
        count, tokens, by, asked = self.count, self.map_tokens, self.by, [""]

        def want_answer(described: Any, *args: Any, **kwargs: Any) -> Any:
            asked[0] = str(described.get("want") or "")  # the question, for the embedding
            return answer(described, *args, **kwargs)

        def want_map(structure: Any, fields: Any, shown: Any, matched: Any, counter: Any = None, _: int = 0) -> Any:
            pool = [p for p in fields_of(structure) if is_value(structure[p], p) and p not in shown]
            if by == "wordllama":
                near = closest_fields(structure, asked[0], best=len(fields_of(structure)))
                best = [path for path in near if path in pool][:count]
            else:
                scores = choose_fields(structure).scores
                best = sorted(pool, key=lambda path: -scores.get(path, 0.0))[:count]
            return original(structure, fields, shown, list(dict.fromkeys([*best, *matched])), counter, tokens)

        want_text.want_map, answers.want_answer = want_map, want_answer

    def __exit__(self, *exc: object) -> None:
        from pflow_structure.render import want_text
        from pflow_structure.service import want_answer as answers

        want_text.want_map, answers.want_answer = self.before
        want_text.MAP_TOKENS, want_text.MAX_NAMED = self.limits


def corpus_rows(workdir: Path) -> list[str]:
    """The 28 corpus files without want: tokens of what ``run`` prints (the view, or the data when smaller)."""
    from common import CORPUS, Context, cli_text

    from pflow_structure.render.tokens import count_tokens

    ctx = Context(smoke=False, workdir=workdir, cache_dir=workdir / "corpus-cache")
    counts = {path.name: count_tokens(cli_text(path, ctx)[0]) for path in sorted(CORPUS.glob("*.json"))}
    return [f"| corpus files without want | {len(counts)} | {sum(counts.values()):,} tokens of run's text |"]


class Tally(NamedTuple):
    questions: int = 0
    listed: int = 0
    view: int = 0
    read: int = 0
    raw: int = 0
    over_cap: int = 0
    worst: float = 0.0

    def add(self, ok: bool, view: int, read: int, raw: int) -> Tally:
        share = (view + read) / raw if raw else 0.0
        return Tally(
            self.questions + 1,
            self.listed + ok,
            self.view + view,
            self.read + read,
            self.raw + raw,
            self.over_cap + (share > SHARE_CAP),
            max(self.worst, share),
        )


def judge(
    responses: Iterable[Response], settings: Any, misses: list[str] | None = None, *, steer: bool = True
) -> dict[str, Tally]:
    """Per family: the questions listed and the round trip, with want = each question (``steer``) or without."""
    tallies: dict[str, Tally] = {}
    for response in responses:
        for question in response.questions:
            shown, _ = shown_fields(response, question.text if steer else None)
            ok = listed(question.needs, shown)
            view, read, raw = round_trip(response, question, settings, steer=steer)
            tallies[response.family] = tallies.get(response.family, Tally()).add(ok, view, read, raw)
            if misses is not None and not ok and response.family in TUNED_ON:  # held-out misses stay unread
                lost = [path for path in question.needs if not listed([path], shown)]
                misses.append(f"- {response.family}/{response.file}: {question.text!r}: not listed {lost}")
    return tallies


def _pool(tallies: Iterable[Tally]) -> Tally:
    total = Tally()
    for t in tallies:
        total = Tally(
            total.questions + t.questions,
            total.listed + t.listed,
            total.view + t.view,
            total.read + t.read,
            total.raw + t.raw,
            total.over_cap + t.over_cap,
            max(total.worst, t.worst),
        )
    return total


def _row(name: str, t: Tally) -> str:
    share = t.listed / t.questions if t.questions else 1.0
    trip = t.view + t.read
    ratio = t.raw / trip if trip else 0.0
    return (
        f"| {name} | {share:.1%} ({t.listed}/{t.questions}) | {t.raw:,} | {t.view:,} + {t.read:,} | {ratio:.1f}x "
        f"| {t.over_cap} | {t.worst:.0%} |"
    )


def report(tallies: dict[str, Tally], plain: dict[str, Tally]) -> list[str]:
    lines = [
        "| Families | every needed path listed | raw compact JSON tokens | run --want + read-fields tokens "
        f"| raw / round trip | questions above {SHARE_CAP:.0%} of raw | worst question |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, tally in sorted(tallies.items()):
        lines.append(_row(family + ("" if family in TUNED_ON else " (held out)"), tally))
    held = [t for f, t in tallies.items() if f not in TUNED_ON]
    tuned = [t for f, t in tallies.items() if f in TUNED_ON]
    lines.append(_row(f"**held out ({len(held)} families), pooled**", _pool(held)))
    lines.append(_row(f"**tuned on ({len(tuned)} families), pooled**", _pool(tuned)))
    lines.append(_row(f"**all ({len(tallies)} families), pooled**", _pool(tallies.values())))
    held_plain = [t for f, t in plain.items() if f not in TUNED_ON]
    lines.append(_row("without want (today's view), held out, pooled", _pool(held_plain)))
    lines.append(_row("without want (today's view), all, pooled", _pool(plain.values())))
    return lines


# -- candidates measured beside the name matching, and not kept ------------------------------------

EXTRA = 5  # each candidate adds its best this many fields to the view, before the usual view


def _leaf_words(path: str) -> tuple[str, ...]:
    from pflow_structure.filtering.tree import suffix_keys
    from pflow_structure.filtering.want import stem, words

    keys = suffix_keys(path)
    return tuple(stem(word) for word in words(keys[-1])) if keys else ()


def links_without(responses: Sequence[Response], family: str) -> dict[str, dict[str, float]]:
    """Word-to-name links learned from every other family's answers: P(an answer's leaf has name word
    w | the question has term t), over questions that have t."""
    from pflow_structure.filtering.want import want_terms

    seen: dict[str, int] = {}
    both: dict[str, dict[str, int]] = {}
    for response in responses:
        if response.family == family:
            continue
        for question in response.questions:
            names = {word for path in question.needs for word in _leaf_words(path)}
            for term in want_terms(question.text):
                seen[term] = seen.get(term, 0) + 1
                for name in names:
                    both.setdefault(term, {})[name] = both.setdefault(term, {}).get(name, 0) + 1
    return {t: {w: n / seen[t] for w, n in names.items() if seen[t] >= 3} for t, names in both.items()}


def linked(response: Response, text: str, links: dict[str, dict[str, float]]) -> list[str]:
    from pflow_structure.filtering import fields_of
    from pflow_structure.filtering.want import want_terms

    terms = want_terms(text)
    scores = {
        field: sum(max((links.get(t, {}).get(w, 0.0) for w in _leaf_words(field)), default=0.0) for t in terms)
        for field in fields_of(response.structure)
    }
    return [field for field in sorted(scores, key=lambda f: -scores[f]) if scores[field] > 0][:EXTRA]


def embedded(response: Response, text: str, model: Any) -> list[str]:
    from pflow_structure.filtering import fields_of
    from pflow_structure.filtering.tree import suffix_keys
    from pflow_structure.filtering.want import words

    fields = fields_of(response.structure)
    names = [" ".join(words(" ".join(suffix_keys(field)[-2:]))) or field for field in fields]
    ranked = model.rank(text, names, sort=False)
    order = sorted(range(len(fields)), key=lambda i: -ranked[i][1])
    return [fields[i] for i in order[:EXTRA]]


def _listed_with(response: Response, question: Question, extra: Sequence[str]) -> bool:
    from pflow_structure.filtering import fields_of
    from pflow_structure.filtering.want import choose_wanted

    choice, _ = choose_wanted(response.structure, question.text, signals=response.signals, extra=extra)
    shown = [field for field in fields_of(response.structure) if field in choice.structure]
    return listed(question.needs, shown)


def candidate_rows(responses: list[Response]) -> list[str]:
    """Questions listed (every family; leave-one-API-out for the links) when a candidate adds its best
    fields to the want view, beside the want view alone (large structures only: small ones are shown whole)."""
    import importlib.util

    from pflow_structure.filtering import FilterOptions, shown_whole

    large = [r for r in responses if not shown_whole(r.structure, r.field_count, FilterOptions())]
    model = None
    if importlib.util.find_spec("wordllama") is not None:
        import os

        import wordllama

        model = wordllama.WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True)
    counts = {"want alone": 0, "+ learned links (leave-one-API-out)": 0, "+ wordllama 0.4": 0}
    total = 0
    for response in large:
        links = links_without(responses, response.family)
        for question in response.questions:
            total += 1
            counts["want alone"] += _listed_with(response, question, ())
            extra = linked(response, question.text, links)
            counts["+ learned links (leave-one-API-out)"] += _listed_with(response, question, extra)
            if model is not None:
                counts["+ wordllama 0.4"] += _listed_with(response, question, embedded(response, question.text, model))
    if model is None:
        counts.pop("+ wordllama 0.4")
    lines = [f"Candidates, {total} questions on the {len(large)} responses filtered (each adds its best {EXTRA}):", ""]
    lines += ["| Want view | every needed path listed |", "|---|---|"]
    lines += [f"| {name} | {count / total:.1%} ({count}/{total}) |" for name, count in counts.items()]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every question whose view misses a path")
    parser.add_argument("--candidates", action="store_true", help="also measure the candidate scores not kept")
    parser.add_argument("--want-model", default="", choices=["", "wordllama"], help="the opt-in embeddings")
    parser.add_argument("--answers", action="store_true", help="only the want answers + one read (issue 35)")
    parser.add_argument("--corpus", action="store_true", help="only the 28 corpus files' run text, without want")
    parser.add_argument(
        "--usual-names",
        type=int,
        default=0,
        metavar="K",
        help="each want answer's map also names the K fields the filter scores highest (the cost of naming more)",
    )
    parser.add_argument(
        "--names-by", default="score", choices=["score", "wordllama"], help="with --usual-names: which fields"
    )
    parser.add_argument(
        "--map-tokens", type=int, default=100, metavar="N", help="with --usual-names: the map's tokens (100: shipped)"
    )
    parser.add_argument(
        "--form", default="text", choices=["text", "json"], help="the want answer as the CLI text or the MCP dict"
    )
    args = parser.parse_args(argv)
    global FORM, STYLE
    FORM, STYLE = args.form, ("cli" if args.form == "text" else "tool")
    responses = load()
    if not responses:
        print(f"no answers under {EVAL}", file=sys.stderr)
        return 1
    from pflow_structure import Settings
    from pflow_structure.filtering import FilterOptions

    global WANT_MODEL
    WANT_MODEL = args.want_model
    options = FilterOptions(mode="heuristic", want_model=WANT_MODEL)
    misses: list[str] | None = [] if args.misses else None
    with tempfile.TemporaryDirectory() as workdir:
        settings = Settings(cache_dir=Path(workdir), filtering=options)
        if args.corpus:
            print("\n".join(corpus_rows(Path(workdir))))
            return 0
        if args.usual_names:
            with usual_names(args.usual_names, args.map_tokens, args.names_by):
                print("\n".join(answer_rows(responses, settings)))
            return 0
        answers = answer_rows(responses, settings)
        if args.answers:
            print("\n".join(answers))
            return 0
        tallies = judge(responses, settings, misses)
        plain = judge(responses, settings, steer=False)
    lines = [*report(tallies, plain), "", *answers]
    if misses:
        lines += ["", *misses]
    if args.candidates:
        lines += ["", *candidate_rows(responses)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
