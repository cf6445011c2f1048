"""What ``read-fields`` prints, shared by the click command and the click-free entry point.

Click-free on purpose: :mod:`pflow_structure.cli.entry` answers plain ``read-fields`` calls
without importing click, and :mod:`pflow_structure.cli.app` parses the unusual ones with it;
both hand a :class:`ReadFieldsArgs` to :func:`read_fields_output`, so they cannot drift apart.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TEXT_MAX_ITEMS", "ReadFieldsArgs", "read_fields_output"]

TEXT_MAX_ITEMS = 20


class ReadFieldsArgs(NamedTuple):
    """The arguments of one ``read-fields`` call."""

    execution_id: str
    paths: list[str]
    as_json: bool = False
    limit: int | None = None
    offset: int = 0
    cache_dir: str | None = None
    format: str = "text"


def read_fields_output(args: ReadFieldsArgs) -> tuple[str, list[str]]:
    """What ``read-fields`` prints: the text (or JSON) for stdout and notes for stderr."""
    from pflow_structure.service import read_fields_text
    from pflow_structure.settings import Settings

    # An explicit --limit is shown in full; without one, text shows the first 20 items.
    return read_fields_text(
        args.execution_id,
        args.paths,
        "json" if args.as_json else args.format,
        limit=args.limit,
        offset=args.offset,
        max_items=None if args.limit is not None else TEXT_MAX_ITEMS,
        settings=Settings.from_env(cache_dir=args.cache_dir),
    )
