"""The ``read-json`` node: load a JSON or JSON Lines file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.nodes.base import Node, require_param

_JSON_LINES_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")


class ReadJsonNode(Node):  # type: ignore[misc]
    """Read a JSON or JSON Lines file into the shared store.

    Interface:
    - Writes: shared["result"]: any  # The parsed JSON value; a list of values for JSON Lines
    - Params: path: str  # File to read (.json, or .jsonl/.ndjson for JSON Lines)
    - Params: encoding: str  # Text encoding of the file (optional, default: utf-8)
    - Actions: default
    """

    def prep(self, shared: dict[str, Any]) -> tuple[Path, str]:
        path = Path(str(require_param(self, "path", "read-json", "path=data.json"))).expanduser()
        return path, str(self.params.get("encoding") or "utf-8")

    def exec(self, prep_res: tuple[Path, str]) -> Any:
        path, encoding = prep_res
        return load_json_file(path, encoding)

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> str:
        shared["result"] = exec_res
        return "default"


def load_json_file(path: Path, encoding: str = "utf-8") -> Any:
    """Parse ``path`` as JSON, or as JSON Lines when its suffix says so or its lines do."""
    if path.is_dir():
        raise ParameterError(f"{path} is a directory; pass a JSON file: path=data.json")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ParameterError(
            f"{path} does not exist; check the path (relative paths start at the current directory)"
        ) from None
    except OSError as exc:
        raise ParameterError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8") and path.suffix.lower() not in _JSON_LINES_SUFFIXES:
        from pflow_structure.encoding.jsonio import parse_fast

        parsed, value = parse_fast(raw)  # one parse of the bytes, no text copy; else the checks below decide
        if parsed:
            return value
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{path} is not {encoding} text (byte {exc.start} is {raw[exc.start : exc.start + 1]!r}); "
            "is it a binary file? Pass encoding=... if it is text in another encoding."
        ) from None
    except LookupError:
        raise ParameterError(f"Unknown encoding {encoding!r}; use a Python codec name such as utf-8") from None
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise ParameterError(f"{path} is empty; a JSON file holds at least one value such as {{}} or []")
    if path.suffix.lower() in _JSON_LINES_SUFFIXES:
        return _parse_lines(text, path)
    try:
        return json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise ParameterError(f"{path} nests arrays or objects too deeply for Python's JSON parser") from None
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # e.g. an integer of more than 4,300 digits
            raise ParameterError(f"{path} holds a value Python cannot read as JSON: {exc}") from None
        if exc.msg == "Extra data":  # several values, one per line: JSON Lines without the suffix
            try:
                return _parse_lines(text, path)
            except ParameterError:
                pass
        raise ParameterError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _parse_int(digits: str) -> int | str:
    # Python refuses to turn more than 4,300 digits into an int; keep such a number as its text.
    return int(digits) if len(digits) <= 4000 else digits


def _parse_lines(text: str, path: Path) -> list[Any]:
    values: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line, parse_int=_parse_int))
        except json.JSONDecodeError as exc:
            raise ParameterError(
                f"{path} line {number} is not valid JSON Lines: {exc.msg} at column {exc.colno}"
            ) from None
    return values
