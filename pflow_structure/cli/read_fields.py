"""What ``read-fields`` prints, shared by the click command and the click-free entry point.

Click-free on purpose: :mod:`pflow_structure.cli.entry` answers plain ``read-fields`` calls
without importing click, and :mod:`pflow_structure.cli.app` parses the unusual ones with it;
both hand a :class:`ReadFieldsArgs` to :func:`read_fields_output`, so they cannot drift apart.
"""

from __future__ import annotations

from pflow_structure.records import NamedTuple

__all__ = ["NAMES", "TEXT_MAX_ITEMS", "ReadFieldsArgs", "ReadFieldsOutput", "read_fields_output"]

TEXT_MAX_ITEMS: int | None = None  # no fixed page: a list shows what fits the answer budget (--limit caps it)
NAMES = ("template", "normalized")


class ReadFieldsArgs(NamedTuple):
    """The arguments of one ``read-fields`` call."""

    execution_id: str
    paths: list[str]
    as_json: bool = False
    limit: int | None = None
    offset: int = 0
    cache_dir: str | None = None
    format: str = "text"
    char_offset: int = 0
    max_tokens: int | None = None
    names: str | None = None


class ReadFieldsOutput(NamedTuple):
    """What ``read-fields`` prints (stdout text, stderr notes) and whether any path resolved."""

    stdout: str
    notes: list[str]
    resolved: bool

    @property
    def exit_code(self) -> int:
        """0 when at least one path found a value, 1 when none did: a script can tell a miss."""
        return 0 if self.resolved else 1


def read_fields_output(args: ReadFieldsArgs) -> ReadFieldsOutput:
    """What ``read-fields`` prints: the text (or JSON) for stdout and notes for stderr, within the
    answer budget (``--max-tokens``, else ``PFLOW_STRUCTURE_ANSWER_BUDGET``)."""
    from pflow_structure.service.answers import read_fields_text_call
    from pflow_structure.settings import Settings

    settings = Settings.from_env(cache_dir=args.cache_dir)
    format_name = "json" if args.as_json else args.format
    max_items = TEXT_MAX_ITEMS
    answer = read_fields_text_call(
        args.execution_id,
        args.paths,
        format_name,
        limit=args.limit,
        offset=args.offset,
        char_offset=args.char_offset,
        max_tokens=args.max_tokens,
        max_items=max_items,
        style="cli",
        names=args.names,
        settings=settings,
    )
    return ReadFieldsOutput(answer.text, answer.notes, answer.found)
