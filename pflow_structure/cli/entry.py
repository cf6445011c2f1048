"""The ``pflow-structure`` console entry point, with a click-free path for ``read-fields``.

Agents call ``read-fields`` far more often than anything else, and importing click costs
about as much as the rest of the command (40-70 ms here). This module reads the plain forms
of that one command itself::

    pflow-structure [--cache-dir DIR] read-fields ID [PATH...] [--json] [--limit N] [--offset N] [--format F]
        [--char-offset N] [--max-tokens N] [--names template|normalized]

and hands everything else (help, any other command, anything unusual such as ``--``, a
bad number or an unknown option) to the click CLI in :mod:`pflow_structure.cli`, which owns
help texts and usage errors. Both paths print through
:func:`pflow_structure.cli.read_fields.read_fields_output`, and a test checks that they give
the same output, errors and exit codes.
"""

from __future__ import annotations

import sys

from pflow_structure.cli.read_fields import NAMES, ReadFieldsArgs, read_fields_output
from pflow_structure.render.fields_text import READ_FORMATS
from pflow_structure.render.output_text import safe_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["main", "parse_read_fields", "run_read_fields", "write_text"]


def main() -> None:
    """Console entry point: ``read-fields`` without click when it can, the click CLI otherwise."""
    args = parse_read_fields(sys.argv[1:])
    if args is not None and _cache_dir_is_usable(args.cache_dir):
        sys.exit(_run_like_click(args))
    if len(sys.argv) > 1 and sys.argv[1] == "proxy":
        from pflow_structure.mcp.proxy.startup import prestart

        prestart(sys.argv[2:])  # the server starts while click and the proxy load (about half a second)
    from pflow_structure.cli.app import main as click_main

    click_main(prog_name="pflow-structure")


def _cache_dir_is_usable(cache_dir: str | None) -> bool:
    """click checks --cache-dir (and its environment variable) before the command runs and
    words the usage error; leave a path that exists but is no readable directory to it."""
    import os

    path = cache_dir if cache_dir is not None else os.environ.get("PFLOW_STRUCTURE_CACHE_DIR")
    if not path or not os.path.exists(path):
        return True
    return os.path.isdir(path) and os.access(path, os.R_OK)


def _run_like_click(args: ReadFieldsArgs) -> int:
    """Run, ending the way click ends a command: Ctrl-C prints Aborted!, a closed pipe is quiet."""
    try:
        return run_read_fields(args)
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")
        return 1
    except BrokenPipeError:
        import contextlib
        import os

        # The reader went away (| head): stop quietly, and keep Python's exit flush from failing.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def parse_read_fields(argv: Sequence[str]) -> ReadFieldsArgs | None:
    """The arguments of a plain ``read-fields`` call, or None to let click handle ``argv``."""
    tokens = list(argv)
    cache_dir, tokens = _global_options(tokens)
    if tokens[:1] != ["read-fields"]:
        return None
    options: dict[str, Any] = {"as_json": False, "limit": None, "offset": 0, "format": "text"}
    positional: list[str] = []
    rest = tokens[1:]
    while rest:
        token = rest.pop(0)
        if token == "--json":
            options["as_json"] = True
        elif token.split("=", 1)[0] in ("--limit", "--offset", "--format", "--char-offset", "--max-tokens", "--names"):
            name, equals, value = token.partition("=")
            if not equals:
                if not rest:
                    return None
                value = rest.pop(0)
            if name in ("--format", "--names"):
                if value not in (READ_FORMATS if name == "--format" else NAMES):
                    return None  # click words the usage error
                options[name[2:]] = value
                continue
            if len(value) > 18 or not (value.isascii() and value.isdigit()):  # [0-9]+
                return None  # click words the usage error
            if name == "--max-tokens" and int(value) < 1:
                return None  # click words the usage error
            options[name[2:].replace("-", "_")] = int(value)
        elif token.startswith("-") and token != "-":
            return None  # --help, --, an unknown option: click's business
        else:
            positional.append(token)
    if len(positional) < 2 or (options["as_json"] and options["format"] not in ("text", "json")):
        return None  # no id or no path, or --json with another --format: click words the usage error
    return ReadFieldsArgs(positional[0], positional[1:], cache_dir=cache_dir, **options)


def _global_options(tokens: list[str]) -> tuple[str | None, list[str]]:
    cache_dir = None
    while tokens and tokens[0].split("=", 1)[0] == "--cache-dir":
        _, equals, value = tokens[0].partition("=")
        if equals:
            cache_dir, tokens = value, tokens[1:]
        elif len(tokens) > 1:
            cache_dir, tokens = tokens[1], tokens[2:]
        else:
            return None, tokens
    return cache_dir, tokens


def run_read_fields(args: ReadFieldsArgs) -> int:
    """Run ``read-fields``; print like the click command does; return the exit code."""
    from pflow_structure.errors import StructureError

    try:
        output = read_fields_output(args)
    except StructureError as exc:
        write_text(f"Error: {exc}", err=True)
        return 1
    if output.stdout:
        write_text(output.stdout)
    for note in output.notes:
        write_text(note, err=True)
    return output.exit_code


def write_text(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    line = safe_text(text) + "\n"
    try:
        stream.write(line)
    except UnicodeEncodeError:  # a terminal that is not UTF-8: write UTF-8 bytes, as click does
        stream.flush()
        stream.buffer.write(line.encode("utf-8"))
    stream.flush()
