"""The pinned npm MCP servers (tests/npm-servers.txt): find them, and install what is missing.

The suite installs them itself when npm is on PATH, once per run, into ``.npm-servers`` (or the
directory in PFLOW_STRUCTURE_NPM_SERVERS), under a file lock so two xdist workers never install at
the same time; a worker that finds the lock held waits, then finds the servers there. A failed
install is tried once per run (the run id of pytest-xdist, shared by its workers, is recorded).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIN_FILE = REPO / "tests" / "npm-servers.txt"
INSTALL_TIMEOUT = 900  # seconds: three packages and their dependencies from the registry


def pinned(pin_file: Path = PIN_FILE) -> list[str]:
    """The npm specs of the pin file (``name@version``), comments and blank lines left out."""
    lines = (line.split("#", 1)[0].strip() for line in pin_file.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def install_line(pins: Sequence[str]) -> str:
    """The command a person runs by hand (from the repository root)."""
    return "npm install --prefix .npm-servers " + " ".join(pins)


def servers_dir() -> Path:
    return Path(os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or REPO / ".npm-servers").expanduser()


def _name_and_version(spec: str) -> tuple[str, str]:
    """``@scope/name@1.2.3`` → (``@scope/name``, ``1.2.3``): the last ``@`` past the first character."""
    at = spec.rindex("@", 1)
    return spec[:at], spec[at + 1 :]


def missing(base: Path, pins: Sequence[str]) -> list[str]:
    """The pins not installed under ``base`` at their pinned version."""
    absent = []
    for spec in pins:
        name, version = _name_and_version(spec)
        manifest = base / "node_modules" / name / "package.json"
        try:
            found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            found = None
        if found != version:
            absent.append(spec)
    return absent


def _npm_error(stderr: str) -> str:
    """npm's error code and its first line of detail: ``ETARGET: notarget No matching version ...``."""
    lines = [line.removeprefix("npm error ").strip() for line in stderr.splitlines() if line.startswith("npm error ")]
    code = next((line.split()[1] for line in lines if line.startswith("code ")), None)
    detail = next((line for line in lines if line.split(" ", 1)[0] not in ("code", "syscall", "errno")), "no message")
    return f"{code}: {detail}" if code else detail


def ensure_installed(base: Path, pins: Sequence[str], *, npm: Sequence[str] = ("npm",), run_id: str = "") -> str | None:
    """Install the missing ``pins`` into ``base``; None when all are there, else why not (one line).

    Under an exclusive lock on ``base/.install.lock``: the first caller installs, the others wait
    and find them installed. A failure is recorded with ``run_id`` so the other workers of the same
    run do not try again; a later run does.
    """
    if not missing(base, pins):
        return None
    if shutil.which(npm[0]) is None:
        return f"npm is not on PATH; install Node.js, then run: {install_line(pins)}"
    base.mkdir(parents=True, exist_ok=True)
    failure = base / ".install-failed.json"
    with open(base / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        absent = missing(base, pins)
        if not absent:
            return None
        if run_id and failure.exists():
            recorded = json.loads(failure.read_text(encoding="utf-8"))
            if recorded.get("run_id") == run_id:
                return str(recorded["error"])
        command = [*npm, "install", "--prefix", str(base), "--no-audit", "--no-fund", "--loglevel=error", *absent]
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
        if done.returncode == 0 and not missing(base, pins):
            failure.unlink(missing_ok=True)
            return None
        error = f"npm install failed (exit {done.returncode}: {_npm_error(done.stderr)}); run: {install_line(pins)}"
        failure.write_text(json.dumps({"run_id": run_id, "error": error}), encoding="utf-8")
        return error
