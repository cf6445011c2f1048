"""Saved workflows: one ``{name}.json`` per workflow in a flat directory (``~/.pflow/workflows``).

The directory is passed in; nothing here reads the environment. Saving validates the record,
writes a temporary file in the same directory and renames it over the old one, so a reader
sees the old or the new workflow, never half of one, and the last writer wins. Loading a
directory never raises for a bad file: it skips the file and says why in ``warnings``.

Schema (seed 003, section 2, option B)::

    {"name", "description", "inputs", "outputs", "created_at", "updated_at",
     "version": "1.0.0", "ir_version", "tags": [], "ir"}

``name``, ``description`` and ``ir`` are required; the rest get defaults.

The file name is the key: ``show``, ``delete`` and discovery all address ``{name}.json`` by
``name``. A file whose record says another name is loaded under its file name, with a warning,
so that what is listed can always be shown and deleted, and nothing is hidden. Text that is not
valid Unicode (a lone surrogate escape such as ``\\ud800``) is read as U+FFFD, with a warning,
and refused on save.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pflow_structure.discovery.files import clean_json_text, invalid_text_at, read_regular_file
from pflow_structure.errors import InvalidWorkflowError, WorkflowNotFoundError, WorkflowStoreError

MAX_WORKFLOW_BYTES = 1024 * 1024
LOAD_BUDGET_SECONDS = 5.0
DEFAULT_VERSION = "1.0.0"
DEFAULT_IR_VERSION = "0.1.0"
REQUIRED_FIELDS = ("name", "description", "ir")
SCHEMA_FIELDS = (
    "name",
    "description",
    "inputs",
    "outputs",
    "created_at",
    "updated_at",
    "version",
    "ir_version",
    "tags",
    "ir",
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_NAME_RULE = (
    "names are 1 to 100 letters, digits, hyphens and underscores, starting with a letter or digit "
    "(for example fix-github-issue)"
)


@dataclass
class WorkflowLoad:
    """Every valid workflow of a directory (sorted by name) and one warning per skipped file."""

    workflows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_workflow_name(name: object) -> str:
    """``name`` if it is a safe file name; else :class:`InvalidWorkflowError` (``../x``, ``/etc``, NUL)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        shown = repr(name)[:60]
        raise InvalidWorkflowError(f"Invalid workflow name {shown}: {_NAME_RULE}; '/', '..' and NUL are refused.")
    return name


def workflow_path(directory: Path, name: str) -> Path:
    """Where workflow ``name`` lives; refuses unsafe names and symbolic links."""
    path = Path(directory) / f"{check_workflow_name(name)}.json"
    if path.is_symlink():
        raise InvalidWorkflowError(
            f"Workflow file {path} is a symbolic link; refusing to follow it. Replace it with a regular file."
        )
    return path


def validate_workflow(data: object, where: str) -> dict[str, Any]:
    """The record with defaults filled in and fields in schema order, or :class:`InvalidWorkflowError`."""
    if not isinstance(data, dict):
        raise InvalidWorkflowError(f"{where}: a workflow is a JSON object, not {type(data).__name__}.")
    missing = [name for name in REQUIRED_FIELDS if name not in data]
    if missing:
        raise InvalidWorkflowError(f"{where}: missing required field(s) {', '.join(missing)}; add them and save again.")
    try:
        check_workflow_name(data["name"])
    except InvalidWorkflowError as exc:
        raise InvalidWorkflowError(f"{where}: {exc}") from None
    ir = data["ir"]
    _check_ir(ir, where)
    record = {
        "name": data["name"],
        "description": _text(data, "description", where, ""),
        "inputs": _names(data, "inputs", where, _ir_names(ir, "inputs")),
        "outputs": _names(data, "outputs", where, _ir_names(ir, "outputs")),
        "created_at": _optional_text(data, "created_at", where),
        "updated_at": _optional_text(data, "updated_at", where),
        "version": _text(data, "version", where, DEFAULT_VERSION),
        "ir_version": _text(data, "ir_version", where, str(ir.get("ir_version") or DEFAULT_IR_VERSION)),
        "tags": _names(data, "tags", where, []),
        "ir": ir,
    }
    return record


def _check_ir(ir: object, where: str) -> None:
    """MVP validation (seed 003, section 7): an object with a ``nodes`` list of ``{id, type}`` objects."""
    fix = "an IR is an object with a list of nodes, each an object with string id and type"
    if not isinstance(ir, dict) or not isinstance(ir.get("nodes"), list):
        raise InvalidWorkflowError(f"{where}: invalid IR: {fix}.")
    for index, node in enumerate(ir["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("id"), str) or not isinstance(node.get("type"), str):
            raise InvalidWorkflowError(f"{where}: invalid IR: nodes[{index}] lacks a string id or type; {fix}.")


def _text(data: Mapping[str, Any], key: str, where: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise InvalidWorkflowError(f"{where}: field {key} must be a string, not {type(value).__name__}.")
    return value


def _optional_text(data: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if data.get(key) is None else _text(data, key, where, "")


def _names(data: Mapping[str, Any], key: str, where: str, default: list[str]) -> list[str]:
    value = data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidWorkflowError(f"{where}: field {key} must be a list of strings.")
    return list(value)


def _ir_names(ir: Mapping[str, Any], key: str) -> list[str]:
    """Input or output names declared in the IR (pflow IR keeps them as an object by name)."""
    declared = ir.get(key)
    return [str(name) for name in declared] if isinstance(declared, dict) else []


def save_workflow(
    directory: Path,
    name: str,
    description: str,
    ir: Mapping[str, Any],
    *,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    tags: Sequence[str] = (),
    version: str = DEFAULT_VERSION,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Validate and store a workflow atomically; an existing one is replaced (its ``created_at`` kept).

    >>> save_workflow(Path("/tmp/wf"), "hello", "Say hello", {"nodes": [{"id": "a", "type": "echo"}]})  # doctest: +SKIP
    """
    path = workflow_path(directory, name)
    if not isinstance(description, str) or not description.strip():
        raise InvalidWorkflowError(
            f"workflow {name!r}: the description is empty; give one line saying what the workflow does."
        )
    stamp = _stamp(now)
    data: dict[str, Any] = {"name": name, "description": description, "ir": dict(ir), "version": version}
    data.update(tags=list(tags), created_at=_previous_created_at(path) or stamp, updated_at=stamp)
    if inputs is not None:
        data["inputs"] = list(inputs)
    if outputs is not None:
        data["outputs"] = list(outputs)
    record = validate_workflow(data, f"workflow {name!r}")
    _refuse_invalid_text(record, f"workflow {name!r}")
    try:
        payload = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except RecursionError:
        raise InvalidWorkflowError(f"workflow {name!r}: the IR is nested too deeply to store; flatten it.") from None
    if len(payload) > MAX_WORKFLOW_BYTES:
        raise InvalidWorkflowError(
            f"workflow {name!r} is {len(payload):,} bytes as JSON; the limit is {MAX_WORKFLOW_BYTES:,}. "
            "Make the IR smaller."
        )
    _ensure_directory(Path(directory))
    _write_atomically(path, payload)
    return record


def _refuse_invalid_text(record: Mapping[str, Any], where: str) -> None:
    """:class:`InvalidWorkflowError` naming the first field whose text cannot be stored as UTF-8."""
    for key, value in record.items():
        at = invalid_text_at(value)
        if at is None:
            continue
        shown = {"description": "the description", "tags": "a tag", "ir": "the IR"}.get(key, f"field {key}")
        if key == "ir" and at:
            shown += f" (at {at[:80]})"
        raise InvalidWorkflowError(
            f"{where}: {shown} is not valid Unicode text: it holds a byte that is not UTF-8 or a lone surrogate "
            "escape such as \\ud800. Pass UTF-8 text."
        )


def _stamp(now: dt.datetime | None) -> str:
    moment = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _previous_created_at(path: Path) -> str | None:
    try:
        previous = json.loads(read_regular_file(path, MAX_WORKFLOW_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    created = previous.get("created_at") if isinstance(previous, dict) else None
    return created if isinstance(created, str) else None


def _ensure_directory(directory: Path) -> None:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkflowStoreError(
            f"Workflow directory {directory} cannot be created ({exc.strerror or exc}); pass a writable directory."
        ) from None
    if not directory.is_dir():
        raise WorkflowStoreError(f"Workflow directory {directory} is not a directory; pass a directory path.")


def _write_atomically(path: Path, payload: bytes) -> None:
    """Temporary file in the same directory, fsync, rename: readers never see a partial file."""
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WorkflowStoreError(
            f"Cannot write in {path.parent} ({exc.strerror or exc}); check its permissions."
        ) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise WorkflowStoreError(f"Cannot write {path} ({exc.strerror or exc}); check its permissions.") from None


def load_workflow(directory: Path, name: str, *, warnings: list[str] | None = None) -> dict[str, Any]:
    """One saved workflow, validated; :class:`WorkflowNotFoundError` or :class:`InvalidWorkflowError`.

    What was repaired on the way (a record naming another workflow, text that is not valid
    Unicode) is appended to ``warnings`` when given.
    """
    path = workflow_path(directory, name)
    try:
        return _load_file(path, [] if warnings is None else warnings)
    except FileNotFoundError:
        raise WorkflowNotFoundError(name, Path(directory)) from None
    except OSError as exc:
        raise InvalidWorkflowError(f"Workflow file {path} cannot be read ({_reason(exc)}).") from None


def _load_file(path: Path, warnings: list[str]) -> dict[str, Any]:
    """The record in ``path``, named by its file; repairs are described in ``warnings``."""
    raw = read_regular_file(path, MAX_WORKFLOW_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise InvalidWorkflowError(f"{path}: invalid JSON (nested too deeply); fix the file or delete it.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidWorkflowError(f"{path}: invalid JSON ({exc}); fix the file or delete it.") from None
    data, replaced = clean_json_text(data)
    if replaced:
        warnings.append(
            f"{path} holds {replaced} text value(s) that are not valid Unicode (lone surrogate escapes such as "
            "\\ud800); they are shown as U+FFFD. Fix the text in the file to silence this warning."
        )
    stem = path.stem
    if isinstance(data, dict) and "name" in data and data["name"] != stem:
        warnings.append(
            f"{path} names its workflow {repr(data['name'])[:80]}; it is listed as {stem!r}, its file name, which "
            f"show, delete and describe use. Set its name to {stem!r} (or save it again) to silence this warning."
        )
        data = {**data, "name": stem}
    return validate_workflow(data, str(path))


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link, which is not followed; replace it with a regular file"
    if exc.errno == errno.EACCES:
        return "Permission denied; make it readable by this user"
    return exc.strerror or str(exc)


def load_workflows(
    directory: Path,
    *,
    budget_seconds: float = LOAD_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> WorkflowLoad:
    """Every valid workflow in ``directory``, by file name; bad files are skipped with a warning.

    Reading creates nothing: a missing directory holds no workflows.
    """
    result = WorkflowLoad()
    directory = Path(directory)
    try:
        if not directory.is_dir():
            if directory.exists():
                result.warnings.append(
                    f"Workflow directory {directory} is not a directory; pass a directory path. "
                    "No saved workflows were loaded."
                )
            return result
        files = sorted(path for path in directory.glob("*.json") if not path.name.startswith("."))
    except OSError as exc:
        result.warnings.append(
            f"Workflow directory {directory} cannot be read ({exc.strerror or exc}). No saved workflows were loaded."
        )
        return result
    started = clock()
    for index, path in enumerate(files):
        if clock() - started > budget_seconds:
            result.warnings.append(
                f"Stopped loading workflows after {budget_seconds:g} s; {len(files) - index} file(s) in "
                f"{directory} were not read. Remove unused workflows to load them all."
            )
            break
        if not _NAME.fullmatch(path.stem):  # show and delete could not address it
            result.warnings.append(
                f"Skipped {path}: its file name is not a workflow name ({_NAME_RULE}); rename the file."
            )
            continue
        try:
            result.workflows.append(_load_file(path, result.warnings))
        except InvalidWorkflowError as exc:
            result.warnings.append(f"Skipped {exc}")
        except OSError as exc:
            result.warnings.append(f"Skipped {path}: cannot be read ({_reason(exc)}).")
    result.workflows.sort(key=lambda record: str(record["name"]))
    return result


def list_workflow_names(directory: Path) -> list[str]:
    """Names of the ``*.json`` files with a valid workflow name, without reading them (sorted)."""
    try:
        stems = [path.stem for path in Path(directory).glob("*.json")]
    except OSError:
        return []
    return sorted(stem for stem in stems if _NAME.fullmatch(stem))


def delete_workflow(directory: Path, name: str) -> None:
    """Remove a saved workflow; :class:`WorkflowNotFoundError` when there is none."""
    path = workflow_path(directory, name)
    try:
        path.unlink()
    except FileNotFoundError:
        raise WorkflowNotFoundError(name, Path(directory)) from None
    except OSError as exc:
        raise WorkflowStoreError(f"Cannot delete {path} ({exc.strerror or exc}); check its permissions.") from None
