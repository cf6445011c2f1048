"""The ``pflow-structure`` click group and what every command module shares.

Exit codes: 0 success, 1 failure (message on stderr), 2 usage error. Command modules
(:mod:`~pflow_structure.cli.app`, ``cache_commands``, ``discovery_commands``,
``format_commands``) register on :data:`main`; :mod:`pflow_structure.cli.app` imports them
all, so this module never imports a command module and no import goes in a circle.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pflow_structure import __version__
from pflow_structure.render.output_text import format_json, safe_text

if TYPE_CHECKING:
    from pflow_structure.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
CONTEXT_SETTINGS = {"help_option_names": ["--help", "-h"], "max_content_width": 100}


def settings_for(ctx: click.Context) -> Settings:
    """The settings a command runs with: the environment, and ``--cache-dir`` when given."""
    from pflow_structure.settings import Settings

    return Settings.from_env(cache_dir=ctx.find_root().params.get("cache_dir"))


def fails_cleanly(command: F) -> F:
    """Print our errors as one message on stderr with exit code 1 (no traceback)."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from pflow_structure.errors import StructureError

        try:
            return command(*args, **kwargs)
        except StructureError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON, as every output of ours writes it."""
    click.echo(format_json(value))


def echo_text(text: str) -> None:
    """Print text; a lone surrogate (from a non-UTF-8 key or value) is shown escaped, not a crash."""
    click.echo(safe_text(text))


class ClosedInput(Exception):
    """Standard input was asked for (``-``) but is closed (``<&-``)."""


def read_file_or_stdin(file: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``file``, or of standard input for ``-`` (one more than the
    limit, so the caller can tell an input over it). Raises :class:`ClosedInput`, or
    ``OSError``/``ValueError`` when the file or the stream cannot be read; callers word the error."""
    if file != "-":
        with open(file, "rb") as handle:
            return handle.read(limit + 1)
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if stream is None or getattr(stream, "closed", False):
        raise ClosedInput
    data = stream.read(limit + 1)
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data  # a stream without a buffer


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="pflow-structure")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=str),
    envvar="PFLOW_STRUCTURE_CACHE_DIR",
    help="Execution cache directory [env PFLOW_STRUCTURE_CACHE_DIR; default ~/.pflow/cache/node-executions].",
)
def main(cache_dir: str | None) -> None:
    """Structure first, values on demand.

    Run a node to get an execution id and the structure of its output (template paths
    with types, counts and lengths), then read only the fields you need:

    \b
      pflow-structure run read-json path=examples/data/github_issues.json
      pflow-structure read-fields EXECUTION_ID 'result[0].title' 'result[*].number'
    """
