r"""Starting the proxy's stdio server before anything else is loaded (no event loop, no SDK).

The console entry point calls :func:`prestart` with the ``proxy`` arguments before click and the
proxy load (about half a second); the proxy :func:`take`\ s the process when the parsed command
is the same, and otherwise starts its own. This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

_prestarted: list[tuple[list[str], subprocess.Popen[bytes]]] = []


def prestart(proxy_args: list[str]) -> None:
    """Start the command after ``--`` in ``proxy`` arguments at once, before the command line is
    parsed; :func:`take` hands it to the proxy when the parsed command is the same. A process
    nobody takes (a usage error, say) is stopped at exit."""
    if "--" not in proxy_args or "--url" in proxy_args or "--config" in proxy_args:
        return
    command = proxy_args[proxy_args.index("--") + 1 :]
    if not command:
        return
    try:
        process = start(command)
    except OSError:
        return  # the proxy starts it again and says why it cannot
    import atexit
    import signal

    _prestarted.append((command, process))
    atexit.register(_unused, process)
    with contextlib.suppress(ValueError, OSError, AttributeError):  # the proxy's own handler replaces this one
        signal.signal(signal.SIGTERM, lambda number, frame: _terminated(process, number))


def take(command: list[str]) -> subprocess.Popen[bytes] | None:
    """The process :func:`prestart` started for ``command``, once."""
    for index, (started, process) in enumerate(_prestarted):
        if started == command:
            del _prestarted[index]
            return process
    return None


def _terminated(process: subprocess.Popen[bytes], number: int) -> None:
    """SIGTERM before the proxy runs: the server goes too (its whole group), then this process."""
    with contextlib.suppress(OSError):
        if os.name == "posix":
            os.killpg(process.pid, number)
        else:
            process.terminate()
    with contextlib.suppress(OSError):
        os.write(2, b"pflow-structure proxy: terminated\n")
    os._exit(128 + number)


def _unused(process: subprocess.Popen[bytes]) -> None:
    if any(process is other for _, other in _prestarted) and process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``command`` now, without an event loop (the proxy starts its server before it imports
    the rest), with ``env`` added to this process's environment. Raises OSError when it cannot start."""
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,
        start_new_session=os.name == "posix",
        env={**os.environ, **env} if env else None,
    )
