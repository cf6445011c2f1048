"""Real redis-server processes for the tests: one server, or a 3-primary cluster, on loopback ports.

Each server gets its own config in a temporary directory (no persistence: no RDB, no AOF) and is
stopped by the fixture that started it. Without redis-server (or redis-py) the tests skip with one
line, unless PFLOW_STRUCTURE_REQUIRE_REDIS=1 (CI), where they fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REQUIRE = os.environ.get("PFLOW_STRUCTURE_REQUIRE_REDIS") == "1"


def require_redis() -> None:
    """Skip (or, with PFLOW_STRUCTURE_REQUIRE_REDIS=1, fail) when redis-server or redis-py is missing."""
    missing = []
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        missing.append("redis-server (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        missing.append("redis-py (pip install 'pflow-structure[redis]')")
    if missing:
        reason = "needs " + " and ".join(missing)
        if REQUIRE:
            pytest.fail(f"PFLOW_STRUCTURE_REQUIRE_REDIS=1 but this run {reason}")
        pytest.skip(reason)


def free_port(*, cluster: bool = False) -> int:
    """A free loopback port; for a cluster node one at most 55535 whose bus port (+10000) is free too."""
    import random

    for _ in range(200):
        port = random.randint(20000, 45000) if cluster else 0
        try:
            with socket.socket() as probe, socket.socket() as bus:
                probe.bind(("127.0.0.1", port))
                if cluster:
                    bus.bind(("127.0.0.1", port + 10000))
                found: int = probe.getsockname()[1]
                return found
        except OSError:
            continue
    raise RuntimeError("no free loopback port found")


class RedisServer:
    """One redis-server on 127.0.0.1:port, with its files in ``directory``."""

    def __init__(self, directory: Path, port: int | None = None, *, cluster: bool = False, **config: str) -> None:
        self.directory = directory
        self.port = port or free_port(cluster=cluster)
        self.cluster = cluster
        self.config = config
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = [
            "bind 127.0.0.1",
            f"port {self.port}",
            f"dir {self.directory}",
            'save ""',
            "appendonly no",
            "daemonize no",
            "protected-mode yes",
            f"logfile {self.directory / 'redis.log'}",
        ]
        if self.cluster:
            lines += ["cluster-enabled yes", f"cluster-config-file nodes-{self.port}.conf", "cluster-node-timeout 2000"]
        lines += [f"{key.replace('_', '-')} {value}" for key, value in self.config.items()]
        conf = self.directory / f"redis-{self.port}.conf"
        conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.process = subprocess.Popen(["redis-server", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_until_up()
        return self

    def cli(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=check,
        )
        return done.stdout.strip()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server on port {self.port} exited: {self.log()[-2000:]}")
            if self.cli("ping", check=False) == "PONG":
                return
            time.sleep(0.02)
        raise RuntimeError(f"redis-server on port {self.port} did not answer within 15 s")

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.directory / "redis.log").read_text(encoding="utf-8", errors="replace")
        return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


class RedisCluster:
    """Three redis-server primaries with cluster mode on, joined by ``redis-cli --cluster create``."""

    def __init__(self, directory: Path) -> None:
        self.nodes = [RedisServer(directory / f"node-{i}", cluster=True) for i in range(3)]

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> RedisCluster:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in node.cli("cluster", "info") for node in self.nodes):
                return self
            time.sleep(0.1)
        raise RuntimeError("the 3-node Redis Cluster did not reach cluster_state:ok within 30 s")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@contextlib.contextmanager
def running(server: Any) -> Iterator[Any]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


def flush(url: str) -> None:
    """Empty every database of the server (or every primary of the cluster) behind ``url``."""
    from pflow_structure.cache.redis_store import connect

    client = connect(url)
    if url.startswith("redis+cluster"):
        client.flushall(target_nodes="primaries")
    else:
        client.flushall()
