"""One exception tree for pflow-structure.

Every message says what failed, where, and how to fix it. Messages never carry a
secret or a whole payload; adapters (CLI, MCP) pass them through unchanged.

    StructureError
    ├── PathSyntaxError          (also ValueError)   a field path that does not parse
    ├── PathNotFoundError        (also LookupError)  a path that resolves to nothing
    ├── ExecutionNotFoundError   (also LookupError)  "Execution not found"
    │   └── InvalidExecutionIdError (also ValueError) an id that is not exec-{seconds}-{hex}
    ├── ExecutionExpiredError    (also LookupError)  "Execution expired"
    ├── CacheWriteError          (also OSError)      the cache could not store an entry
    ├── CacheUnavailableError    (also ConnectionError) the shared cache (Redis) cannot be reached
    ├── NodeNotFoundError        (also LookupError)  unknown node type, with close matches
    ├── NodeExecutionError       (also RuntimeError) the node raised; nothing was cached
    ├── ParameterError           (also ValueError)   a node parameter that cannot be used
    │   └── JqExpressionError                         a jq expression that does not compile or uses what is refused
    ├── JqRunError               (also RuntimeError) a jq expression that failed, ran too long or answered too much
    ├── UnresolvedReferenceError (also LookupError)  a ${exec-ID:PATH} argument that finds no value
    ├── ReferenceTooLargeError   (also ValueError)   values passed by reference over the size cap
    ├── PflowVersionError        (also RuntimeError) pflow-cli missing or a release the plugin does not know
    ├── InvalidWorkflowError     (also ValueError)   a workflow name or record that cannot be saved or loaded
    ├── WorkflowNotFoundError    (also LookupError)  no saved workflow by that name
    ├── WorkflowStoreError       (also OSError)      the workflow directory or file could not be written
    └── NotRepresentable         (also ValueError)   a value a compact format cannot hold faithfully
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


class StructureError(Exception):
    """Base class of every error raised by pflow-structure."""

    def told(self, caller: str) -> str:
        """The message as ``caller`` ("cli", "serve" or "proxy") shows it: where a fix names what to do
        next, it names what that caller can do (a shell command, or an MCP tool to call)."""
        return str(self)


# What gets a new execution id, and where an id is copied from, for each caller (see StructureError.told).
_RERUN = {
    "cli": "Run the node again with `pflow-structure run NODE ...` to get a new execution id.",
    "serve": "Call registry_run again to get a new execution id.",
    "proxy": "Call the tool that answered with it again to get a new execution id.",
}
_COPY_ID = {
    "cli": "copy the one printed by `pflow-structure run`",
    "serve": "copy the execution_id registry_run answered",
    "proxy": "copy the execution_id a cached answer gave",
}


class PathSyntaxError(StructureError, ValueError):
    """A field path does not follow the grammar.

    Carries the path, the 0-based column of the problem, and renders a caret line.
    """

    def __init__(self, path: str, column: int, reason: str) -> None:
        self.path = path
        self.column = column
        self.reason = reason
        shown, offset = _window(path, column)
        caret = " " * (column - offset) + "^"
        super().__init__(
            f"Invalid field path at column {column + 1}: {reason}\n  {shown}\n  {caret}\n"
            'Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).'
        )


_WINDOW = 60


def _window(text: str, column: int) -> tuple[str, int]:
    """A slice of a long path around ``column`` (messages never carry a whole payload).

    Returns the text to show and the column where it starts in ``text`` (counting the
    leading "..." as part of the cut, so the caret still lines up).
    """
    if len(text) <= 2 * _WINDOW:
        return text, 0
    start = max(0, column - _WINDOW)
    end = min(len(text), column + _WINDOW)
    shown = text[start:end]
    if start:
        shown = "..." + shown
        start -= 3
    if end < len(text):
        shown += "..."
    return shown, start


class PathNotFoundError(StructureError, LookupError):
    """A path resolves to nothing; keeps which segment failed and what exists there."""

    def __init__(self, path: str, segment_index: int, reason: str, suggestions: Sequence[str] = ()) -> None:
        self.path = path
        self.segment_index = segment_index
        self.reason = reason
        self.suggestions = list(suggestions)
        message = f"{path}: {reason}"
        if self.suggestions:
            message += " Did you mean " + ", ".join(self.suggestions) + "?"
        super().__init__(message)


class ExecutionNotFoundError(StructureError, LookupError):
    """No cache entry for the id (never written, pruned, or unreadable)."""

    def __init__(
        self, execution_id: str, detail: str = "", *, fix: str = "", headline: str = "Execution not found"
    ) -> None:
        self.execution_id = execution_id
        extra = f" ({detail})" if detail else ""
        self._head, self._fix = f"{headline}: {execution_id}{extra}.", fix
        super().__init__(f"{self._head} {fix or _RERUN['cli']}")

    def told(self, caller: str) -> str:
        return f"{self._head} {self._fix or _RERUN.get(caller, _RERUN['cli'])}"


class InvalidExecutionIdError(ExecutionNotFoundError, ValueError):
    """An execution id that does not match exec-{unix seconds}-{hex}; refused before any file access.

    It is an ExecutionNotFoundError (no such execution can exist), so one ``except`` covers both.
    """

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id
        shown = repr(execution_id[:40] + ("..." if len(execution_id) > 40 else ""))
        self._head = (
            f"Execution not found: {shown} is not a valid execution id. Ids look like exec-1763463202-0cd0c8fe;"
        )
        StructureError.__init__(self, self.told("cli"))

    def told(self, caller: str) -> str:
        return f"{self._head} {_COPY_ID.get(caller, _COPY_ID['cli'])}."


class ExecutionExpiredError(StructureError, LookupError):
    """The cache entry is older than its TTL."""

    def __init__(self, execution_id: str, age_hours: float, ttl_hours: float) -> None:
        self.execution_id = execution_id
        self.age_hours = age_hours
        self.ttl_hours = ttl_hours
        self._head = f"Execution expired: {execution_id} is {age_hours:.1f} h old and entries live {ttl_hours:g} h."
        super().__init__(self.told("cli"))

    def told(self, caller: str) -> str:
        return f"{self._head} {_RERUN.get(caller, _RERUN['cli'])}"


class CacheWriteError(StructureError, OSError):
    """The cache directory could not store an entry."""


class CacheUnavailableError(StructureError, ConnectionError):
    """The shared execution cache (Redis) did not answer; the message names host:port, never a password."""

    def __init__(self, location: str, reason: str) -> None:
        self.location = location
        super().__init__(
            f"The execution cache at {location} cannot be reached ({reason}). Start Redis there, or point "
            "PFLOW_STRUCTURE_CACHE_URL at a running one (unset it to use this host's file cache)."
        )


class NodeNotFoundError(StructureError, LookupError):
    """Unknown node type; lists close matches and how to see every node."""

    def __init__(self, node_type: str, suggestions: Sequence[str] = ()) -> None:
        self.node_type = node_type
        self.suggestions = list(suggestions)
        hint = f" Did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        self._head = f"Unknown node type {node_type!r}.{hint}"
        super().__init__(f"{self._head} Run `pflow-structure nodes` to list them.")

    def told(self, caller: str) -> str:
        return f"{self._head} Call list_nodes to list them." if caller != "cli" else str(self)


class NodeExecutionError(StructureError, RuntimeError):
    """The node raised while running; no cache entry was created."""

    def __init__(self, node_type: str, cause: BaseException, *, context: str = "") -> None:
        self.node_type = node_type
        self.cause = cause
        text = str(cause) or type(cause).__name__
        if len(text) > 2000:
            text = text[:2000] + "..."
        # Our own errors already say what and how; a foreign exception keeps its class name.
        detail = text if isinstance(cause, StructureError) else f"{type(cause).__name__}: {text}"
        prefix = f"{context}: " if context else ""
        super().__init__(f"Node {node_type!r} failed: {prefix}{detail}")


class ParameterError(StructureError, ValueError):
    """A node parameter is missing or unusable."""


class UnresolvedReferenceError(StructureError, LookupError):
    """A ``${exec-ID:PATH}`` in a tool argument whose id is unknown or expired, or whose path finds nothing."""

    def __init__(self, reference: str, location: str, cause: str | StructureError) -> None:
        self.reference = reference
        self.location = location
        self.cause = cause
        super().__init__(self.told("cli"))

    def told(self, caller: str) -> str:
        cause = self.cause.told(caller) if isinstance(self.cause, StructureError) else self.cause
        return f"Cannot pass {self.reference} (in {self.location}): {cause}"


class ReferenceTooLargeError(StructureError, ValueError):
    """The values that references put into one call's arguments are over the size cap."""

    def __init__(self, reference: str, location: str, size: int, cap: int) -> None:
        self.reference = reference
        self.size = size
        self.cap = cap
        super().__init__(
            f"Values passed by reference come to at least {size:,} bytes at {reference} (in {location}), over the "
            f"cap of {cap:,} bytes. Pass a smaller part (a longer path), or raise PFLOW_STRUCTURE_MAX_REFERENCE_SIZE."
        )


class PflowVersionError(StructureError, RuntimeError):
    """pflow-cli is not installed, or is a release whose internals the pflow plugin does not know."""


class InvalidWorkflowError(StructureError, ValueError):
    """A workflow name or record that cannot be saved or loaded; the message says what to change."""


class WorkflowNotFoundError(StructureError, LookupError):
    """No saved workflow by that name."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        super().__init__(
            f"Workflow {name!r} not found in {directory}. Save it first, or list the saved workflows to check the name."
        )


class WorkflowStoreError(StructureError, OSError):
    """The workflow directory or file could not be written or removed."""


class NotRepresentable(StructureError, ValueError):
    """A value this format cannot hold faithfully; the picker then tries another format."""


class JqExpressionError(ParameterError):
    """A jq expression refused before anything runs: it does not compile (jq's own message, with the line
    and column), it uses something an agent's expression may not (the environment, other inputs, modules),
    or the jq package cannot be imported here."""


class JqRunError(StructureError, RuntimeError):
    """A jq expression that compiled but failed while it ran (jq's own message), passed its time limit, or
    answered more than can be kept; the message says how to narrow it."""
