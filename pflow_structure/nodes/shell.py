"""The ``shell`` node: run a command; stdout is parsed as JSON when it is JSON."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from pflow_structure.errors import ParameterError
from pflow_structure.nodes.base import Node, positive_seconds, require_param


class ShellNode(Node):  # type: ignore[misc]
    """Run a shell command and capture its output.

    Interface:
    - Writes: shared["stdout"]: any  # Standard output: parsed JSON when it is JSON, text, or bytes when not UTF-8
    - Writes: shared["stderr"]: str  # Standard error text
    - Writes: shared["exit_code"]: int  # The command's exit status
    - Params: command: str  # Command line, run by /bin/sh
    - Params: cwd: str  # Working directory (optional, default: current directory)
    - Params: timeout: float  # Seconds before the command is stopped (optional, default: 60)
    - Params: stdin: str  # Text sent to the command's standard input (optional)
    - Params: check: bool  # Fail when the exit status is not 0 (optional, default: true)
    - Actions: default
    """

    def prep(self, shared: dict[str, Any]) -> dict[str, Any]:
        command = require_param(self, "command", "shell", "command='ls -l'")
        if not isinstance(command, str):
            raise ParameterError(f"command must be a string, got {type(command).__name__}; quote it: command='ls -l'")
        timeout = positive_seconds(self, "timeout", 60)
        return {
            "command": command,
            "cwd": self.params.get("cwd"),
            "timeout": timeout,
            "stdin": self.params.get("stdin"),
            "check": self.params.get("check", True) not in (False, "false", 0),
        }

    def exec(self, prep_res: dict[str, Any]) -> dict[str, Any]:
        stdin = prep_res["stdin"]
        try:
            completed = subprocess.run(
                prep_res["command"],
                shell=True,
                cwd=prep_res["cwd"],
                input=None if stdin is None else str(stdin).encode("utf-8"),
                capture_output=True,
                timeout=prep_res["timeout"],
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"the command ran longer than {prep_res['timeout']:g} s; pass timeout=SECONDS") from None
        stderr = completed.stderr.decode("utf-8", errors="replace")
        if prep_res["check"] and completed.returncode != 0:
            tail = stderr.strip()[-500:] or "(no stderr)"
            raise RuntimeError(f"exit status {completed.returncode}: {tail} (pass check=false to keep the output)")
        return {"stdout": decode_output(completed.stdout), "stderr": stderr, "exit_code": completed.returncode}

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: dict[str, Any]) -> str:
        shared.update(exec_res)
        return "default"


def decode_output(raw: bytes) -> Any:
    """JSON when the bytes are JSON, else text, else the bytes themselves."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    stripped = text.strip()
    if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null") or _is_number(stripped):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return bool(text)
