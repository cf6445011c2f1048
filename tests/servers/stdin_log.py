"""Runs a command with this process's stdin copied to it line by line, each line also appended to a log
file: what a proxy sent its downstream server, for a test to read (``stdin_log.py LOG -- COMMAND...``).
The command's stdout and stderr are this process's own."""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    log, command = sys.argv[1], sys.argv[3:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE)
    assert child.stdin is not None
    with open(log, "ab", buffering=0) as written:
        for line in sys.stdin.buffer:
            written.write(line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
