"""The suite installs the pinned npm servers itself (tests/npm_servers.py), with the real npm client
against a small registry on 127.0.0.1 that serves one package, so the test needs no network."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests import npm_servers
from tests.conftest import REPO

NAME, VERSION = "fake-mcp-server", "1.0.0"
BIN = "#!/usr/bin/env node\nconsole.log('fake server')\n"


def _tarball() -> bytes:
    manifest = {"name": NAME, "version": VERSION, "bin": {NAME: "server.js"}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in (("package.json", json.dumps(manifest)), ("server.js", BIN)):
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Registry:
    """The packument and tarball of one package; counts the tarball downloads (one per install)."""

    def __init__(self) -> None:
        self.tarball = _tarball()
        self.downloads = 0
        self.requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests += 1
                if self.path == f"/{NAME}":
                    self._send(json.dumps(registry.packument()).encode(), "application/json")
                elif self.path == f"/{NAME}/-/{NAME}-{VERSION}.tgz":
                    registry.downloads += 1
                    self._send(registry.tarball, "application/octet-stream")
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def packument(self) -> dict[str, Any]:
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(self.tarball).digest()).decode()
        dist = {
            "tarball": f"{self.url}{NAME}/-/{NAME}-{VERSION}.tgz",
            "shasum": hashlib.sha1(self.tarball).hexdigest(),
            "integrity": integrity,
        }
        version = {"name": NAME, "version": VERSION, "bin": {NAME: "server.js"}, "dist": dist}
        return {"name": NAME, "dist-tags": {"latest": VERSION}, "versions": {VERSION: version}}


@pytest.fixture
def registry() -> Iterator[Registry]:
    if shutil.which("npm") is None:
        message = "npm is not on PATH: install Node.js 20 (with npm) to test the npm servers' install"
        if os.environ.get("PFLOW_STRUCTURE_REQUIRE_NPM") == "1":  # as in CI: a missing npm fails, never skips
            pytest.fail(message)
        pytest.skip(message)
    served = Registry()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()


def _npm(registry: Registry, tmp_path: Path) -> tuple[str, ...]:
    return ("npm", "--registry", registry.url, "--cache", str(tmp_path / "npm-cache"), "--prefer-online")


def test_the_pin_file_lists_the_servers_the_tests_run_and_ci_reads_it() -> None:
    assert npm_servers.pinned() == [
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        "@modelcontextprotocol/server-memory@2026.8.31",
        "@modelcontextprotocol/server-everything@2026.8.31",
        "@modelcontextprotocol/inspector@2.12.0",
    ]
    assert "tests/npm-servers.txt" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_a_package_at_another_version_counts_as_missing(tmp_path: Path) -> None:
    manifest = tmp_path / "node_modules" / "@scope" / "server" / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"version": "1.0.0"}', encoding="utf-8")
    assert npm_servers.missing(tmp_path, ["@scope/server@1.0.0", "@scope/server@1.0.1", "other@1.0.0"]) == [
        "@scope/server@1.0.1",
        "other@1.0.0",
    ]


def test_two_workers_at_once_install_the_missing_server_once(registry: Registry, tmp_path: Path) -> None:
    base, pins = tmp_path / "npm-servers", [f"{NAME}@{VERSION}"]
    outcomes: list[str | None] = []
    workers = [
        threading.Thread(
            target=lambda: outcomes.append(npm_servers.ensure_installed(base, pins, npm=_npm(registry, tmp_path)))
        )
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert outcomes == [None, None]
    assert registry.downloads == 1
    assert (base / "node_modules" / ".bin" / NAME).exists()
    assert npm_servers.ensure_installed(base, pins, npm=("no-such-npm",)) is None  # there now: npm not asked


def test_without_npm_the_reason_names_the_install_line(tmp_path: Path) -> None:
    why = npm_servers.ensure_installed(tmp_path, ["a-server@1.0.0", "@s/b@2.0.0"], npm=("no-such-npm-here",))
    assert (
        why
        == "npm is not on PATH; install Node.js, then run: npm install --prefix .npm-servers a-server@1.0.0 @s/b@2.0.0"
    )


def test_a_failed_install_is_tried_once_per_run(registry: Registry, tmp_path: Path) -> None:
    base, pins = tmp_path / "npm-servers", [f"{NAME}@9.9.9"]  # the registry has no 9.9.9
    first = npm_servers.ensure_installed(base, pins, npm=_npm(registry, tmp_path), run_id="run-1")
    assert first == (
        f"npm install failed (exit 1: ETARGET: notarget No matching version found for {NAME}@9.9.9.); "
        f"run: npm install --prefix .npm-servers {NAME}@9.9.9"
    )
    asked = registry.requests
    assert asked > 0
    again = npm_servers.ensure_installed(base, pins, npm=_npm(registry, tmp_path), run_id="run-1")
    assert (again, registry.requests) == (first, asked)  # the same run: npm is not asked again
    later = npm_servers.ensure_installed(base, pins, npm=_npm(registry, tmp_path), run_id="run-2")
    assert later == first and registry.requests > asked  # a new run asks again
