"""Saved workflows: one ``{name}.json`` per workflow in a flat directory (``~/.pflow/workflows``).

The directory is passed in; nothing here reads the environment. Saving validates the record,
writes a temporary file in the same directory and renames it over the old one, so a reader
sees the old or the new workflow, never half of one, and the last writer wins. Loading a
directory never raises for a bad file: it skips the file and says why in ``warnings``.

Schema (seed 003, section 2, option B)::

    {"name", "description", "inputs", "outputs", "created_at", "updated_at",
     "version": "1.0.0", "ir_version", "tags": [], "ir"}

``name``, ``description`` and ``ir`` are required; the rest get defaults.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    _ensure_directory(Path(directory))
    stamp = _stamp(now)
    data: dict[str, Any] = {"name": name, "description": description, "ir": dict(ir), "version": version}
    data.update(tags=list(tags), created_at=_previous_created_at(path) or stamp, updated_at=stamp)
    if inputs is not None:
        data["inputs"] = list(inputs)
    if outputs is not None:
        data["outputs"] = list(outputs)
    record = validate_workflow(data, f"workflow {name!r}")
    payload = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if len(payload) > MAX_WORKFLOW_BYTES:
        raise InvalidWorkflowError(
            f"workflow {name!r} is {len(payload):,} bytes as JSON; the limit is {MAX_WORKFLOW_BYTES:,}. "
            "Make the IR smaller."
        )
    _write_atomically(path, payload)
    return record


def _stamp(now: dt.datetime | None) -> str:
    moment = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _previous_created_at(path: Path) -> str | None:
    try:
        previous = json.loads(_read_regular_file(path))
    except (OSError, ValueError):
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


def _read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file, never through a symbolic link, refusing files over the size limit."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > MAX_WORKFLOW_BYTES:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes; files over {MAX_WORKFLOW_BYTES:,} bytes are skipped")
        return stream.read(MAX_WORKFLOW_BYTES + 1)


def load_workflow(directory: Path, name: str) -> dict[str, Any]:
    """One saved workflow, validated; :class:`WorkflowNotFoundError` or :class:`InvalidWorkflowError`."""
    path = workflow_path(directory, name)
    try:
        record = _load_file(path)
    except FileNotFoundError:
        raise WorkflowNotFoundError(name, Path(directory)) from None
    except OSError as exc:
        raise InvalidWorkflowError(f"Workflow file {path} cannot be read ({_reason(exc)}).") from None
    if record["name"] != name:  # listed under its "name", so it must be found by that name too
        raise InvalidWorkflowError(
            f"{path} holds the workflow named {record['name']!r}; rename the file to {record['name']}.json "
            f"or set its name to {name!r}."
        )
    return record


def _load_file(path: Path) -> dict[str, Any]:
    raw = _read_regular_file(path)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidWorkflowError(f"{path}: invalid JSON ({exc}); fix the file or delete it.") from None
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
    """Every valid workflow in ``directory`` (created when missing); bad files are skipped with a warning."""
    result = WorkflowLoad()
    try:
        _ensure_directory(Path(directory))
        files = sorted(path for path in Path(directory).glob("*.json") if not path.name.startswith("."))
    except OSError as exc:  # WorkflowStoreError included
        result.warnings.append(f"{exc} No saved workflows were loaded.")
        return result
    started = clock()
    found: dict[str, tuple[dict[str, Any], Path]] = {}
    for index, path in enumerate(files):
        if clock() - started > budget_seconds:
            result.warnings.append(
                f"Stopped loading workflows after {budget_seconds:g} s; {len(files) - index} file(s) in "
                f"{directory} were not read. Remove unused workflows to load them all."
            )
            break
        try:
            record = _load_file(path)
        except InvalidWorkflowError as exc:
            result.warnings.append(f"Skipped {exc}")
            continue
        except OSError as exc:
            result.warnings.append(f"Skipped {path}: cannot be read ({_reason(exc)}).")
            continue
        _keep_latest(found, record, path, result.warnings)
    result.workflows = [found[name][0] for name in sorted(found)]
    return result


def _keep_latest(
    found: dict[str, tuple[dict[str, Any], Path]], record: dict[str, Any], path: Path, warnings: list[str]
) -> None:
    """Two files with one name: the later ``updated_at`` wins (then the later file name)."""
    name = record["name"]
    if path.stem != name:
        warnings.append(f"{path} holds workflow {name!r}; rename the file to {name}.json.")
    if name not in found:
        found[name] = (record, path)
        return
    previous, previous_path = found[name]
    if (record["updated_at"] or "") >= (previous["updated_at"] or ""):
        found[name] = (record, path)
    kept = found[name][1]
    warnings.append(
        f"Duplicate workflow name {name!r} in {previous_path.name} and {path.name}; using {kept.name} (updated last)."
    )


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
