"""The ``pflow-structure`` command: a thin layer over :mod:`pflow_structure.service`.

Exit codes: 0 success, 1 failure (message on stderr), 2 usage error. This package is the
only one that imports click; the service is imported inside each command so that
``read-fields`` starts fast. This module holds the core commands (run, read-fields, serve,
pflow) and imports the command groups that live in their own modules, so
``pflow_structure.cli.app.main`` is the whole command line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from pflow_structure.cli import (  # noqa: F401  (register)
    cache_commands,
    discovery_commands,
    format_commands,
    proxy_command,
    stats_command,
    value_commands,
    wrap_commands,
)
from pflow_structure.cli.common import (
    CONTEXT_SETTINGS,
    echo_json,
    echo_text,
    fails_cleanly,
    main,
    settings_for,
)
from pflow_structure.cli.read_fields import NAMES, ReadFieldsArgs, read_fields_output
from pflow_structure.render.fields_text import READ_FORMATS
from pflow_structure.render.output_text import safe_text

__all__ = ["main", "parse_params"]

_JSON_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("node")
@click.argument("params", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "as_json", is_flag=True, help="Print the result dict as JSON (what MCP returns).")
@click.option("--max-paths", type=click.IntRange(min=1), help="Most paths to list [default 500].")
@click.option(
    "--all-fields",
    is_flag=True,
    help="List every field: no filtering of structures over 50 fields (PFLOW_STRUCTURE_FILTER=off does the same).",
)
@click.option(
    "--flat",
    is_flag=True,
    help="One full template path per line, as pflow prints them (${result[0].title}), instead of the indented tree.",
)
@click.option(
    "--want",
    metavar="TEXT",
    help='Your question in plain words ("who wrote each issue, is it open"): the values of the fields it names, '
    'then a short map of the rest (--max-tokens bounds it, default 1500); "the highest score", "the 3 newest" '
    "rank the rows.",
)
@click.option(
    "--structure",
    "force_structure",
    is_flag=True,
    help="Print the structure view even when the output is small or --want is given (with --want: its fields first).",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="PATH",
    help="Print the values at PATH (repeatable; any read-fields path) instead of the structure.",
)
@click.option("--max-tokens", type=click.IntRange(min=1), help="Most o200k tokens in the answer [default 8000].")
@click.option(
    "--jq",
    "jq_expression",
    metavar="EXPR",
    help="Print the result of a jq expression over the output instead of the structure (checked before NODE runs).",
)
@click.pass_context
@fails_cleanly
def run(
    ctx: click.Context,
    node: str,
    params: Sequence[str],
    as_json: bool,
    max_paths: int | None,
    all_fields: bool,
    flat: bool,
    want: str | None,
    fields: Sequence[str],
    max_tokens: int | None,
    jq_expression: str | None,
    force_structure: bool,
) -> None:
    """Run NODE and print the structure of its output and an execution id.

    Parameters are KEY=VALUE: numbers, true/false and null are typed, values starting
    with [ or { are JSON, and KEY=@FILE reads the value from FILE. KEY='${exec-ID:PATH}'
    passes a cached value (any read-fields path) without printing it. Values are kept in
    the cache with secrets (tokens, passwords, keys) masked. A structure of more than 50
    fields shows the ones that matter most (PFLOW_STRUCTURE_FILTER: auto, llm,
    heuristic, off); --all-fields lists all, and read-fields reads any path either way.
    Paths print as a tree: an indented line extends the path above it (result, then
    [0].title, is result[0].title); --flat prints each path in full. --want "TEXT" prints
    the values of the fields whose names match the words (one row per item) and a short map
    of the rest. An output whose compact form is no longer than its structure is printed
    itself (--structure prints the structure anyway).
    --field PATH prints the values at PATH instead, in the same call (a path that misses
    says why and brings the structure); --jq EXPR prints a jq expression's result. The rest
    stays cached. Answers stay under --max-tokens.

    \b
    Example:
      pflow-structure run read-json path=examples/data/github_issues.json
      pflow-structure run read-json path=examples/data/github_issues.json --want "who opened each issue"
      pflow-structure run read-json path=examples/data/github_issues.json --field 'result[*].number'
      pflow-structure run read-json path=examples/data/github_issues.json --jq '.result | length'
      pflow-structure run shell command='gh api repos/o/r/issues'
    """
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.service import registry_run

    parameters = parse_params(params)
    settings = settings_for(ctx)
    if max_paths:
        settings = settings.replace(max_paths=max_paths)
    chosen = list(fields) if fields else None
    result = registry_run(
        node,
        parameters,
        settings=settings,
        all_fields=all_fields,
        want=want,
        fields=chosen,
        max_tokens=max_tokens,
        jq=jq_expression,
        structure=force_structure,
        style="cli",
        form="json" if as_json else "text",  # sized as what is printed
    )
    if jq_expression is not None or chosen is not None:
        from pflow_structure.service.field_answers import fields_found, fields_text
        from pflow_structure.service.querying import jq_fields_text

        text = jq_fields_text(result, jq_expression) if jq_expression is not None else fields_text(result)
        echo_json(result) if as_json else echo_text(text)
        ctx.exit(0 if fields_found(result) else 1)
    if as_json:
        echo_json(result)
    elif "values" in result or "data" in result:
        from pflow_structure.service.want_answer import answer_text

        echo_text(answer_text(result, settings))
    else:
        echo_text(render_structure_text(result, layout="flat" if flat else "tree"))


@main.command("structure", context_settings=CONTEXT_SETTINGS)
@click.argument("execution_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result dict as JSON (what MCP returns).")
@click.option("--all-fields", is_flag=True, help="List every field: no filtering of structures over 50 fields.")
@click.option("--want", metavar="TEXT", help="Plain words for what you need: the fields they name come first.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Most o200k tokens in the answer [default 8000].")
@click.pass_context
@fails_cleanly
def structure_command(
    ctx: click.Context, execution_id: str, as_json: bool, all_fields: bool, want: str | None, max_tokens: int | None
) -> None:
    """Print the structure of an output already cached, without running its node again.

    The full structure behind a --want answer's map, or of a small output answered as data.

    \b
    Example:
      pflow-structure structure exec-1763463202-0cd0c8fe --want "who opened each issue"
    """
    from pflow_structure.render.structure_text import render_structure_text
    from pflow_structure.service import cached_structure

    settings = settings_for(ctx)
    result = cached_structure(execution_id, settings=settings, want=want, all_fields=all_fields, max_tokens=max_tokens)
    echo_json(result) if as_json else echo_text(render_structure_text(result))


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``["n=5", "flag=true", "tags=[1,2]", "body=@req.json"]`` → typed dict; usage error otherwise."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.UsageError(
                f"Parameter {item!r} has no '='; write KEY=VALUE, e.g. path={item}", click.get_current_context()
            )
        if not key.strip():
            raise click.UsageError(f"Parameter {item!r} has no name before '='", click.get_current_context())
        if key in params:
            raise click.UsageError(f"Parameter {key!r} is given twice", click.get_current_context())
        params[key] = _typed_value(raw)
    return params


def _typed_value(raw: str) -> Any:
    if raw.startswith("@") and len(raw) > 1:
        path = Path(raw[1:]).expanduser()
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"Cannot read {path} for {raw!r}: {exc}", click.get_current_context()) from None
    if raw in ("true", "false"):
        return raw == "true"
    if raw == "null":
        return None
    if raw[:1] in ("[", "{"):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    # Only JSON number syntax is a number: "nan", "inf", "1_000" and "007" (a zip code) stay text.
    if _JSON_INT.fullmatch(raw):
        try:
            return int(raw)
        except ValueError:  # more digits than int() accepts (sys.set_int_max_str_digits)
            return raw
    if _JSON_NUMBER.fullmatch(raw):
        number = float(raw)
        return number if math.isfinite(number) else raw  # 1e400 would become inf
    return raw


@main.command("read-fields", context_settings=CONTEXT_SETTINGS)
@click.argument("execution_id")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print {path: value} as JSON (what MCP returns).")
@click.option("--limit", type=click.IntRange(min=0), help="Most items returned per wildcard or JSONPath path.")
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Items to skip first.")
@click.option(
    "--char-offset",
    type=click.IntRange(min=0),
    default=0,
    help="Characters to skip first in a PATH that names one long string (the cut answer gives it).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    help="Most o200k tokens in the answer [default: PFLOW_STRUCTURE_ANSWER_BUDGET, else 8000].",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(READ_FORMATS),
    default="text",
    show_default=True,
    help="text: path: JSON lines; json: as --json; auto: each list or dict in the smallest format that reads back "
    "the same (a TOON table for rows); outline, lines, table, toon: that format.",
)
@click.option(
    "--names",
    type=click.Choice(NAMES),
    help="Each value of a [*] or JSONPath path with the path of its node: template (result[3].labels[0].name) "
    "or normalized (RFC 9535: $['result'][3]['labels'][0]['name']).",
)
@click.option(
    "--jq",
    "jq_expression",
    metavar="EXPR",
    help="Print the result of a jq expression over the output instead of paths ('.result | length'); "
    "several results come as a list. See docs/jq.md.",
)
@click.pass_context
@fails_cleanly
def read_fields_command(
    ctx: click.Context,
    execution_id: str,
    paths: Sequence[str],
    as_json: bool,
    limit: int | None,
    offset: int,
    char_offset: int,
    max_tokens: int | None,
    format_name: str,
    names: str | None,
    jq_expression: str | None,
) -> None:
    """Print the values at PATH... of a cached execution, or the result of --jq EXPR.

    \b
    Paths:
      result[0].title            one value (item 0)
      result[-1].title           the last item
      result[*].number           every item (a list; page with --offset/--limit)
      result[*].labels[*].name   a list per item (--names: each value with its path)
      result[0]["content-type"]  a key that is not a plain name
      '$..title'                 JSONPath, RFC 9535 (also filters: result[?@.state=='open'].title)
      --jq '[.result[] | select(.state == "open")] | length'   jq: count, sort, group

    A path that resolves to nothing prints null and says why (--json: under "_missing").
    The answer stays under a token budget (--max-tokens): past it a list pages, a long string
    is cut and a large dict shows its structure; a "# PATH: ... read on:" line (--json:
    "_more") gives the exact command for the rest. Exit code 0 when at least one PATH found
    a value, 1 when none did (or the execution cannot be read).
    """
    # The console script reads plain read-fields calls without click (cli.entry); both print
    # through read_fields_output, so the two paths cannot drift apart.
    if as_json and format_name not in ("text", "json"):
        raise click.UsageError(f"--json prints JSON; it cannot be combined with --format {format_name}.")
    if bool(paths) == (jq_expression is not None):
        raise click.UsageError("Give PATH... or --jq EXPR (one of them): the paths to read, or a jq expression.")
    cache_dir = ctx.find_root().params.get("cache_dir")
    args = ReadFieldsArgs(
        execution_id,
        list(paths),
        as_json=as_json,
        limit=limit,
        offset=offset,
        cache_dir=cache_dir,
        format=format_name,
        char_offset=char_offset,
        max_tokens=max_tokens,
        names=names,
        jq=jq_expression,
    )
    output = read_fields_output(args)
    if output.stdout:
        echo_text(output.stdout)
    for note in output.notes:
        click.echo(safe_text(note), err=True)
    ctx.exit(output.exit_code)


@main.command(context_settings=CONTEXT_SETTINGS)
@click.option(
    "--http", "use_http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on with --http.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port for --http.")
@click.option(
    "--token",
    envvar="PFLOW_STRUCTURE_MCP_TOKEN",
    help="Bearer token HTTP clients must send [env PFLOW_STRUCTURE_MCP_TOKEN]; required off loopback.",
)
@click.pass_context
@fails_cleanly
def serve(ctx: click.Context, use_http: bool, host: str, port: int, token: str | None) -> None:
    """Serve the registry tools over MCP (stdio, or --http), for agents.

    Tools: registry_run (execution id + structure, as `run --json` prints it), read_fields
    ({path: value}), list_nodes (one line per node and saved workflow) and describe_nodes
    (the full interfaces of the chosen few). Put this in an MCP client's configuration, e.g.
    {"command": "pflow-structure", "args": ["serve"]}; see examples/mcp/.
    """
    from pflow_structure.mcp.http_server import LOOPBACK, serve_http
    from pflow_structure.mcp.server import build_server

    if not use_http:
        build_server(settings_for(ctx)).run()
        return
    if host not in LOOPBACK and not token:
        raise click.UsageError(
            f"--host {host} is not a loopback address: anyone who can reach it could run nodes. "
            "Set a bearer token (PFLOW_STRUCTURE_MCP_TOKEN=... or --token) or keep --host 127.0.0.1."
        )
    click.echo(f"pflow-structure MCP server at http://{host}:{port}/mcp", err=True)
    serve_http(settings_for(ctx), host, port, token)


@main.command(
    "pflow",
    context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("pflow_args", nargs=-1, type=click.UNPROCESSED, metavar="[PFLOW ARGS]...")
@click.pass_context
@fails_cleanly
def pflow_command(ctx: click.Context, pflow_args: Sequence[str]) -> None:
    """Run pflow-cli 0.16 (or 0.8 to 0.10) with the structure-only plugin.

    Every argument goes to pflow unchanged, --help included (this page shows when pflow-cli is
    not installed: pip install 'pflow-cli==0.16.0', or pip install 'pflow-cli>=0.8,<0.11' 'mcp<2').
    With the plugin, a workflow node
    with "structure_only": true keeps its output in the execution cache, and `registry run`,
    `read-fields` and pflow's MCP server use pflow-structure's cache and structure:

    \b
      pflow-structure pflow examples/pflow/issue_titles.pflow.md issues_file=examples/data/github_issues.json
      pflow-structure pflow registry run shell command='ls -la'
      pflow-structure pflow read-fields EXECUTION_ID stdout

    Or make plain `pflow` in this environment run with the plugin (pflow probe, read-fields,
    mcp serve, structure_only workflows), by a start-up file in site-packages that acts only in
    processes started as `pflow` (pflow itself has no enable, disable or status command):

    \b
      pflow-structure pflow enable     # write the start-up file (checks the pflow-cli release)
      pflow-structure pflow status     # is it enabled, and for which pflow-cli
      pflow-structure pflow disable    # remove it: plain pflow is pflow's own again
    """
    from pflow_structure.errors import PflowVersionError
    from pflow_structure.integrations.pflow import check_version, run_pflow

    if pflow_args and pflow_args[0] in PLUGIN_COMMANDS and len(pflow_args) == 1:
        _plugin_command(pflow_args[0])
        return
    if set(pflow_args) & {"--help", "-h"}:
        try:
            check_version()
        except PflowVersionError:  # no pflow to ask: our own help, which says what to install
            click.echo(ctx.get_help())
            return
    root_cache_dir = ctx.find_root().params.get("cache_dir")
    run_pflow(list(pflow_args), settings=settings_for(ctx) if root_cache_dir else None)


PLUGIN_COMMANDS = ("enable", "disable", "status")


def _plugin_command(name: str) -> None:
    """``pflow enable|disable|status``: the start-up file that makes plain ``pflow`` use the plugin."""
    from pflow_structure.integrations.pflow import startup

    if name == "status":
        found = startup.status()
        state = "enabled" if found.enabled else "disabled"
        release = f"pflow-cli {found.pflow_version}" if found.pflow_version else "no pflow-cli installed"
        support = "supported" if found.supported else "not supported by the plugin"
        click.echo(f"The pflow plugin is {state} for plain `pflow` in this environment ({found.path}).")
        click.echo(f"{release}: {support}." if found.pflow_version else f"{release}.")
        return
    path, changed = startup.enable() if name == "enable" else startup.disable()
    if name == "enable":
        click.echo(f"{'Enabled' if changed else 'Already enabled'}: plain `pflow` runs with the plugin ({path}).")
    else:
        click.echo(f"{'Disabled' if changed else 'Already disabled'}: plain `pflow` is pflow's own ({path}).")


if __name__ == "__main__":  # pragma: no cover
    main()
