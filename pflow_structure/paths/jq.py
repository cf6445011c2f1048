"""jq expressions over a cached value, safe for an agent's input (the jq package's one home).

The third path language (DESIGN.md): template paths and JSONPath read values, jq filters, sorts,
groups and counts them. An expression from an agent is handled in two steps:

1. :func:`check_jq`, before anything runs (before a node or a proxied tool is called): an expression
   that names what an agent's expression may not use (:data:`REFUSED`: the environment, other
   inputs, jq's stderr, modules) is refused with the reason, and the rest is compiled by libjq; one
   that does not compile is refused with jq's own message, which gives the line and column.
2. :func:`run_jq` runs it in a child process that can be stopped: libjq holds the GIL while it
   works (``[range(1e9)]`` froze every thread of the process in a measurement here), so a thread
   could be neither abandoned nor stopped. The child gets an empty environment, a memory limit, a
   CPU limit, and is killed at the time limit; it stops itself past :data:`MAX_RESULTS` results or
   :data:`MAX_OUTPUT_BYTES` bytes, so ``repeat(1)`` and ``range(1e9)`` end with an error that says
   how to narrow the expression, and leave no process burning CPU.

The names in :data:`REFUSED` are also redefined around the expression as errors (and ``$ENV`` bound
to ``{}``), so an expression that got past the check still cannot reach them. Each result comes back
as jq writes it (``tojson``: integers past 2**53 keep their digits).

    >>> run_jq('[.result[] | select(.state == "open")] | length', {"result": [{"state": "open"}]})
    [1]
"""

from __future__ import annotations

import functools
import re
import sys

from pflow_structure.errors import JqExpressionError, JqRunError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from subprocess import CompletedProcess
    from typing import Any

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "INSTALL_LINE",
    "MAX_EXPRESSION_CHARS",
    "MAX_OUTPUT_BYTES",
    "MAX_RESULTS",
    "REFUSED",
    "check_jq",
    "jq_path",
    "jq_rows_where",
    "run_jq",
]

DEFAULT_TIME_LIMIT = 5.0  # seconds for one run, the child's start (about 50 ms) included
MAX_EXPRESSION_CHARS = 10_000
MAX_RESULTS = 100_000  # results of one stream: past it, wrap the stream in [...] and page the list
MAX_OUTPUT_BYTES = 32 * 1024**2  # the results' JSON text, all together
MEMORY_FLOOR = 1024**3  # the child's address space: this, plus ten times the input's JSON
INSTALL_LINE = "pip install 'jq>=1.13'"

_ENVIRONMENT = "reads the environment of the process (its secrets); pass values in the expression instead"
_INPUTS = "reads further inputs; the only input is the cached value, `.`"
_FILE = "names the input file; the input is the cached value, not a file"
_STDERR = "writes to the server's stderr, not to your answer; put the value in the expression's result"
_HALT = "stops jq instead of answering; use error(...) or empty"
_MODULES = "reads jq modules or paths from the disk; define what you need with def ...;"
REFUSED = {
    "$ENV": _ENVIRONMENT,
    "env": _ENVIRONMENT,
    "input": _INPUTS,
    "inputs": _INPUTS,
    "input_filename": _FILE,
    "input_line_number": _FILE,
    "debug": _STDERR,
    "stderr": _STDERR,
    "halt": _HALT,
    "halt_error": _HALT,
    "import": _MODULES,
    "include": _MODULES,
    "modulemeta": _MODULES,
    "get_search_list": _MODULES,
    "get_jq_origin": _MODULES,
    "get_prog_origin": _MODULES,
}
# Arities each refused builtin has in jq 1.8, for the definitions that shadow them around the expression.
_ARITIES = {"debug": (0, 1), "halt_error": (0, 1)}
_NAME = re.compile(r"\$?[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*")
_KEY_OR_DEF_NAME = re.compile(r"\s*:(?!:)")  # {env: 1} and def env: are a key and a new name, not the builtin


def check_jq(expression: str) -> str:
    """``expression`` if an agent may run it and libjq compiles it; else :class:`JqExpressionError`
    saying why (a refused name with its reason, or jq's own message with the line and column)."""
    if not isinstance(expression, str) or not expression.strip():
        raise JqExpressionError(
            f'a jq expression must be a non-empty string, e.g. ".result | length", not {expression!r}'
        )
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise JqExpressionError(
            f"the jq expression is {len(expression):,} characters, over {MAX_EXPRESSION_CHARS:,}: shorten it"
        )
    for name, column in _code_names(expression):
        reason = REFUSED.get(name.rsplit("::", 1)[-1] if not name.startswith("$") else name)
        if reason is not None:
            line = expression.count("\n", 0, column) + 1
            at = column - (expression.rfind("\n", 0, column) + 1) + 1
            raise JqExpressionError(
                f"the jq expression uses {name} (line {line}, column {at}), which is refused: it {reason}"
            )
    _compiles(expression)
    return expression


@functools.lru_cache(maxsize=256)
def _compiles(expression: str) -> None:
    """Compile the expression and the program the child runs (:func:`run_jq`): once per expression
    (about 3 ms each), though a read checks it before reading the cache and again before it runs."""
    _compile(expression)
    _compile(_guarded(expression))


def run_jq(
    expression: str,
    value: Any,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_results: int = MAX_RESULTS,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
) -> list[Any]:
    """Every result of ``expression`` over ``value`` (a JSON value), in order: a list, empty when jq
    answered nothing. Checked first (:func:`check_jq`); :class:`JqRunError` when jq fails while it
    runs (its own message), passes ``time_limit`` seconds, or answers more than ``max_results``
    results or ``max_output_bytes`` bytes of JSON."""
    import subprocess  # here: its imports (threading, selectors, signal) are not read-fields' to pay

    from pflow_structure.encoding.jsonio import dumps, loads

    check_jq(expression)
    data = dumps(value)
    memory = MEMORY_FLOOR + 10 * len(data)
    options = {
        "program": _guarded(expression),
        "jq_dir": _jq_directory(),
        "memory": memory,
        "cpu": int(time_limit) + 2,  # a backstop: the parent kills the child at time_limit
        "max_results": max_results,
        "max_bytes": max_output_bytes,
    }
    payload = dumps(options) + b"\n" + data
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=payload,
            capture_output=True,
            timeout=time_limit,
            env=None if sys.platform == "win32" else {},  # no environment to read; Windows needs SYSTEMROOT
            check=False,
        )
    except OSError as exc:  # no interpreter to start (an embedded Python without sys.executable)
        raise JqRunError(f"cannot start a Python process to run jq in ({sys.executable!r}): {exc}") from None
    except subprocess.TimeoutExpired:  # run() has killed the child and waited for it
        raise JqRunError(
            f"the jq expression ran past its time limit of {time_limit:g} s and was stopped: bound it "
            "(limit(n; ...), first(...), .[:n]); repeat, range, recurse and while without a bound never end"
        ) from None
    if done.returncode != 0:
        raise JqRunError(_failure(done, max_results, max_output_bytes, memory) + _root_hint(expression, value))
    return [loads(line) for line in done.stdout.splitlines()]


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def jq_path(segments: Sequence[Any]) -> str | None:
    """Template segments (keys only) as a jq path (``.snippet["os-ext"]``); None past a list."""
    import json

    parts = []
    for segment in segments:
        if not isinstance(segment, str):
            return None
        parts.append(f".{segment}" if _KEY.fullmatch(segment) else f"[{json.dumps(segment)}]")
    return "".join(parts) or "."


def _in_item(segments: Sequence[Any]) -> str | None:
    """Segments in an item as jq reads them after ``.value``: nothing for the item itself (a list of
    numbers or strings: ``.value``, not ``.value.``); None past a list."""
    path = jq_path(segments)
    return "" if path == "." else path


def jq_rows_where(
    owner: Sequence[Any], column: Sequence[Any], columns: Sequence[tuple[str, Sequence[Any]]], values: Sequence[str]
) -> str | None:
    """The jq expression for the items of the list at ``owner`` whose ``column`` is one of ``values``:
    each as ``{i: its index, NAME: .value.PATH ...}`` for ``columns`` (name, segments in an item); None
    when a path runs through a list."""
    import json

    parts = _rows(owner, column, columns)
    if parts is None:
        return None
    start, where, fields = parts
    said = ", ".join(json.dumps(value) for value in values)
    return f"[{start} | to_entries[] | select(.value{where} | IN({said})) | {{i: .key, {fields}}}]"


def _rows(
    owner: Sequence[Any], column: Sequence[Any], columns: Sequence[tuple[str, Sequence[Any]]]
) -> tuple[str, str, str] | None:
    """The list at ``owner``, its ``column`` in an item and ``columns`` as a row's fields
    (``"NAME": .value.PATH, ...``), as jq reads them; None when a path runs through a list."""
    import json

    by, listed = _in_item(column), [(name, _in_item(segments)) for name, segments in columns]
    start = jq_path(owner)
    if start is None or by is None or any(path is None for _, path in listed):
        return None
    return start, by, ", ".join(f"{json.dumps(name)}: .value{path}" for name, path in listed)


def jq_rows_ranked(
    owner: Sequence[Any],
    column: Sequence[Any],
    columns: Sequence[tuple[str, Sequence[Any]]],
    ranked: tuple[str, bool, Sequence[int], int],
) -> str | None:
    """The jq expression for the next rows of the list at ``owner`` ranked by ``column``: ``ranked`` is
    (the type the ranked cells have, "number" or "string"; highest first; the indices already shown, left
    out; how many more), each row as :func:`jq_rows_where` writes it, tied values by index; None when a path
    runs through a list."""
    import json

    kind, highest, shown, more = ranked
    parts = _rows(owner, column, columns)
    if parts is None:
        return None
    start, by, fields = parts
    skip = f" | select(.key | IN({', '.join(str(index) for index in shown)}) | not)" if shown else ""
    # ties in the answer's order, by index (Python's stable sort), whichever way: reversed, jq's would turn
    order = f"sort_by(.value{by}, -.key) | reverse" if highest else f"sort_by(.value{by}, .key)"
    rows = f"[{start} | to_entries[] | select(.value{by} | type == {json.dumps(kind)}){skip}]"
    return f"{rows} | {order} | .[:{more}] | map({{i: .key, {fields}}})"


_FIRST_KEY = re.compile(r"^[\s(\[{]*\.(\[|[A-Za-z_][A-Za-z0-9_]*)")  # the key (or index) an expression starts from


def _root_hint(expression: str, value: Any) -> str:
    """When the expression starts from a key (or an index) the input's top does not have (``.data`` or
    ``.[0]`` where the input is ``{"result": ...}``): which keys it has, so the fix is one edit."""
    found = _FIRST_KEY.match(expression)
    if not isinstance(value, dict) or not value or found is None or found[1] in value:
        return ""
    root = next(iter(value))
    keys = ", ".join(f".{key}" for key in list(value)[:5])
    text = expression.strip()
    fixed = f".{root}{text[1:] if text.startswith('.[') else text}" if text.startswith(".") else f".{root} | {text}"
    return f". The input's top has {keys}: start from there ({fixed})"


def _failure(done: CompletedProcess[bytes], max_results: int, max_bytes: int, memory: int) -> str:
    """Why the child ended without an answer, from its exit code and stderr."""
    message = done.stderr.decode("utf-8", "replace").strip()
    narrow = "narrow it: select the fields you need, limit(n; ...), first(...), or .[:n]"
    if done.returncode == _TOO_MANY:
        return (
            f"the jq expression answered more than {max_results:,} results (repeat, range and recurse without a "
            f"bound never end): {narrow}; or wrap a long stream in [...] and page the list"
        )
    if done.returncode == _TOO_LARGE:
        return f"the jq expression's results passed {max_bytes // 1024**2} MB of JSON: {narrow}"
    if done.returncode == _JQ_ERROR:
        return f"the jq expression failed while it ran: {message[:500]}"
    if done.returncode == _NO_MEMORY or "memory" in message.lower():
        return f"the jq expression ran out of memory (limit {memory // 1024**2:,} MB): {narrow}"
    return f"jq stopped with exit code {done.returncode}: {message[-500:] or 'no message'}"


def _guarded(expression: str) -> str:
    """The program the child runs: the refused builtins redefined as errors around ``expression``, each
    result as jq's own JSON text. The expression starts a line of its own and ends before one, so a
    comment in it cannot swallow what follows."""
    shadows = []
    for name, reason in REFUSED.items():
        if name.startswith("$") or name in ("import", "include"):
            continue
        message = f"{name} is refused: it {reason}".replace("\\", "\\\\").replace('"', '\\"')
        for arity in _ARITIES.get(name, (0,)):
            parameters = "(" + "; ".join(f"_{index}" for index in range(arity)) + ")" if arity else ""
            shadows.append(f'def {name}{parameters}: error("{message}");')
    return " ".join(shadows) + " {} as $ENV | (\n" + expression + "\n) | tojson"


def _compile(program: str) -> None:
    jq = _jq_module()
    try:
        jq.compile(program)
    except ValueError as exc:  # jq's message: "jq: error: syntax error, ... at <top-level>, line 1, column 5: ..."
        raise JqExpressionError(f"the jq expression does not compile: {str(exc).strip()}") from None


def _jq_module() -> Any:
    try:
        import jq
    except ImportError as exc:
        raise JqExpressionError(
            f"jq expressions need the jq package, which cannot be imported here ({exc}): {INSTALL_LINE}"
        ) from None
    return jq


def _jq_directory() -> str:
    """Where the jq package is, for the child's ``sys.path`` (it starts isolated: no site, no cwd)."""
    import os

    return os.path.dirname(os.path.abspath(str(_jq_module().__file__)))


def _code_names(expression: str) -> list[tuple[str, int]]:
    """Each name in ``expression`` that can call a builtin or read a variable, with its offset: names
    in the code and in string interpolations, not in string text, comments, ``.field`` or ``{key: ...}``."""
    names: list[tuple[str, int]] = []
    _scan_code(expression, 0, names, inside=False)
    return names


def _scan_code(text: str, start: int, names: list[tuple[str, int]], *, inside: bool) -> int:
    """Scan code from ``start``; inside an interpolation, up to its closing parenthesis (returns after it)."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == '"':
            index = _scan_string(text, index + 1, names)
        elif char == "#":
            index = _comment_end(text, index)
        elif char == "(":
            depth, index = depth + 1, index + 1
        elif char == ")":
            if inside and depth == 0:
                return index + 1
            depth, index = depth - 1, index + 1
        elif char == "$" or char.isalpha() or char == "_":
            found = _NAME.match(text, index)
            end = found.end() if found else index + 1
            follows_dot = index > 0 and text[index - 1] == "."
            # {$x: 1} uses the value of $x as the key: a variable counts wherever it is.
            is_key = not text.startswith("$", index) and _KEY_OR_DEF_NAME.match(text, end)
            if found and not follows_dot and not is_key:
                names.append((found.group(), index))
            index = end
        elif char.isdigit():  # 1e9 is a number, not a name e9
            while index < len(text) and (text[index].isalnum() or text[index] == "."):
                index += 1
        else:
            index += 1
    return index


def _scan_string(text: str, index: int, names: list[tuple[str, int]]) -> int:
    """Skip a string's text (from after its opening quote), scanning its ``\\(...)`` interpolations as code."""
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] == "(":
            index = _scan_code(text, index + 2, names, inside=True)
        elif char == "\\":
            index += 2
        elif char == '"':
            return index + 1
        else:
            index += 1
    return index


def _comment_end(text: str, index: int) -> int:
    """Where a comment ends, as jq 1.8 reads it: at a line end, unless an odd number of backslashes
    comes before it (then the next line is comment too)."""
    while True:
        line_end = min((found for found in (text.find("\n", index), text.find("\r", index)) if found >= 0), default=-1)
        if line_end < 0:
            return len(text)
        backslashes = len(text[index:line_end]) - len(text[index:line_end].rstrip("\\"))
        if backslashes % 2 == 0:
            return line_end + 1
        index = line_end + 1
        if text[line_end : line_end + 2] == "\r\n":
            index += 1


_TOO_MANY, _TOO_LARGE, _JQ_ERROR, _NO_MEMORY = 3, 4, 5, 6
# The child: limits first, then jq over its stdin, one result per line; it stops itself past the caps.
_CHILD = f"""
import sys, json
options = json.loads(sys.stdin.buffer.readline())
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (options["memory"], options["memory"]))
    resource.setrlimit(resource.RLIMIT_CPU, (options["cpu"], options["cpu"] + 1))
except (ImportError, ValueError, OSError):
    pass
sys.path.insert(0, options["jq_dir"])
import jq
try:
    data = sys.stdin.buffer.read().decode("utf-8")
    results, room, out = options["max_results"], options["max_bytes"], sys.stdout.buffer
    for text in jq.compile(options["program"]).input_text(data):
        line = text.encode("utf-8") + b"\\n"
        results, room = results - 1, room - len(line)
        if results < 0:
            sys.exit({_TOO_MANY})
        if room < 0:
            sys.exit({_TOO_LARGE})
        out.write(line)
except MemoryError:
    sys.exit({_NO_MEMORY})
except ValueError as exc:
    sys.stderr.write(str(exc))
    sys.exit({_JQ_ERROR})
"""
