"""Built-in nodes run for real: files on disk, real subprocesses, a real HTTP server on localhost."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pflow_structure import NodeExecutionError, read_fields
from pflow_structure import registry_run as run_answer
from pflow_structure.settings import Settings
from tests.contract import assert_structure_reads_back

# These tests are about what each node writes, so they ask for its structure even where the output is small
# enough to come back as data (tests/test_want_answers.py tests that answer).
registry_run = functools.partial(run_answer, structure=True)


def _cached_entries() -> list[Path]:
    directory = Settings.from_env().cache_dir
    return sorted(directory.glob("exec-*.json")) if directory.exists() else []


# -- read-json ----------------------------------------------------------------------------


def test_read_json_reads_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('{"items": [{"name": "a"}, {"name": "b"}]}', encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})
    assert run["structure"]["result.items"] == {"type": "list", "length": 2}
    assert read_fields(run["execution_id"], ["result.items[1].name"]) == {"result.items[1].name": "b"}


def test_read_json_reads_json_lines_by_suffix(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"n": 1}\n\n{"n": 2}\n', encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})
    assert read_fields(run["execution_id"], ["result[*].n"]) == {"result[*].n": [1, 2]}


def test_read_json_reads_json_lines_without_the_suffix(tmp_path: Path) -> None:
    path = tmp_path / "events.txt"
    path.write_text('{"n": 1}\n{"n": 2}\n', encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})
    assert run["structure"]["result"] == {"type": "list", "length": 2}


def test_read_json_accepts_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    run = registry_run("read-json", {"path": str(path)})
    assert read_fields(run["execution_id"], ["result.a"]) == {"result.a": 1}


def test_read_json_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": \n}', encoding="utf-8")
    with pytest.raises(NodeExecutionError) as caught:
        registry_run("read-json", {"path": str(path)})
    assert str(caught.value) == (
        f"Node 'read-json' failed: {path} is not valid JSON: Expecting value at line 4 column 1"
    )
    assert _cached_entries() == []


def test_read_json_binary_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(NodeExecutionError, match=r"is not utf-8 text \(byte 0 is b'\\x89'\); is it a binary file\?"):
        registry_run("read-json", {"path": str(path)})


def test_read_json_missing_file_and_missing_param_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(NodeExecutionError, match="does not exist; check the path"):
        registry_run("read-json", {"path": str(tmp_path / "nope.json")})
    with pytest.raises(
        NodeExecutionError, match="failed: missing parameter 'path'; pass it as: pflow-structure run read-json path="
    ):
        registry_run("read-json", {})


def test_read_json_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NodeExecutionError, match="is a directory; pass a JSON file"):
        registry_run("read-json", {"path": str(tmp_path)})


def test_read_json_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("", encoding="utf-8")
    with pytest.raises(NodeExecutionError, match="is empty; a JSON file holds at least one value"):
        registry_run("read-json", {"path": str(path)})


# -- shell --------------------------------------------------------------------------------


def test_shell_parses_json_stdout() -> None:
    run = registry_run("shell", {"command": """printf '{"items": [{"id": 1}, {"id": 2}]}'"""})
    assert run["structure"]["stdout.items"] == {"type": "list", "length": 2}
    assert read_fields(run["execution_id"], ["stdout.items[*].id", "exit_code"]) == {
        "stdout.items[*].id": [1, 2],
        "exit_code": 0,
    }


def test_shell_keeps_text_stdout_as_text() -> None:
    run = registry_run("shell", {"command": "echo hello world"})
    assert read_fields(run["execution_id"], ["stdout"]) == {"stdout": "hello world\n"}


def test_shell_binary_stdout_comes_back_as_bytes() -> None:
    run = registry_run("shell", {"command": r"printf '\377\376\000binary'"})
    assert run["structure"]["stdout"] == {"type": "bytes", "avg_length": 9}
    assert read_fields(run["execution_id"], ["stdout"]) == {"stdout": b"\xff\xfe\x00binary"}


def test_shell_failure_caches_nothing_and_shows_stderr() -> None:
    with pytest.raises(NodeExecutionError) as caught:
        registry_run("shell", {"command": "echo broken >&2; exit 3"})
    assert str(caught.value) == (
        "Node 'shell' failed: RuntimeError: exit status 3: broken (pass check=false to keep the output)"
    )
    assert _cached_entries() == []


def test_shell_check_false_keeps_a_failed_command_output() -> None:
    run = registry_run("shell", {"command": "echo out; exit 4", "check": False})
    assert read_fields(run["execution_id"], ["exit_code", "stdout"]) == {"exit_code": 4, "stdout": "out\n"}


def test_shell_timeout_is_a_clear_error() -> None:
    with pytest.raises(NodeExecutionError, match=r"ran longer than 0.2 s; pass timeout=SECONDS"):
        registry_run("shell", {"command": "sleep 5", "timeout": 0.2})


def test_shell_stdin_and_cwd_are_used(tmp_path: Path) -> None:
    run = registry_run("shell", {"command": "cat; pwd", "stdin": "in\n", "cwd": str(tmp_path)})
    assert read_fields(run["execution_id"], ["stdout"]) == {"stdout": f"in\n{tmp_path}\n"}


# -- http ---------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/issues"):
            body = json.dumps({"query": self.path, "items": [{"title": "a"}, {"title": "b"}]}).encode()
            self._reply(200, body, "application/json")
        elif self.path == "/text":
            self._reply(200, b"plain text", "text/plain")
        else:
            self._reply(404, b'{"message": "Not Found"}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        received = json.loads(self.rfile.read(length))
        body = json.dumps({"received": received, "content_type": self.headers["Content-Type"]}).encode()
        self._reply(201, body, "application/json")


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_get_parses_a_json_body(server: str) -> None:
    run = registry_run("http", {"url": f"{server}/issues", "params": {"state": "open"}})
    assert run["structure"]["response.items"] == {"type": "list", "length": 2}
    assert read_fields(run["execution_id"], ["response.items[*].title", "status_code", "response.query"]) == {
        "response.items[*].title": ["a", "b"],
        "status_code": 200,
        "response.query": "/issues?state=open",
    }


def test_http_post_sends_a_json_body(server: str) -> None:
    run = registry_run("http", {"url": f"{server}/create", "body": {"name": "x"}})
    assert read_fields(run["execution_id"], ["status_code", "response.received", "response.content_type"]) == {
        "status_code": 201,
        "response.received": {"name": "x"},
        "response.content_type": "application/json",
    }


def test_http_error_status_fails_with_the_body_snippet(server: str) -> None:
    with pytest.raises(NodeExecutionError, match=r"HTTP 404 from GET .*/missing: \{\"message\": \"Not Found\"\}"):
        registry_run("http", {"url": f"{server}/missing"})
    assert _cached_entries() == []


def test_http_error_status_is_kept_when_asked(server: str) -> None:
    run = registry_run("http", {"url": f"{server}/missing", "raise_for_status": False})
    assert read_fields(run["execution_id"], ["status_code", "response.message"]) == {
        "status_code": 404,
        "response.message": "Not Found",
    }


def test_http_text_body_stays_text(server: str) -> None:
    run = registry_run("http", {"url": f"{server}/text"})
    assert read_fields(run["execution_id"], ["response"]) == {"response": "plain text"}


def test_http_refuses_non_http_urls() -> None:
    with pytest.raises(NodeExecutionError, match="url must start with http:// or https://, got 'file:///etc/passwd'"):
        registry_run("http", {"url": "file:///etc/passwd"})


def test_http_connection_refused_is_a_clear_error() -> None:
    with pytest.raises(NodeExecutionError, match=r"ConnectionError: GET http://127.0.0.1:9/ failed"):
        registry_run("http", {"url": "http://127.0.0.1:9/", "timeout": 2})


def test_every_built_in_node_output_satisfies_the_contract(server: str, tmp_path: Path) -> None:
    from pflow_structure.service import run_node
    from pflow_structure.structure import infer_structure

    for node_type, params in (
        ("http", {"url": f"{server}/issues"}),
        ("shell", {"command": "printf '[1, 2]'"}),
    ):
        outputs = run_node(node_type, params)
        assert_structure_reads_back(outputs, infer_structure(outputs).structure)


def test_read_json_keeps_an_integer_too_long_for_python_as_its_digits(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"n": ' + "9" * 5000 + ', "m": 1}', encoding="utf-8")
    run = registry_run("read-json", {"path": str(path)})
    assert read_fields(run["execution_id"], ["result.n", "result.m"]) == {"result.n": "9" * 5000, "result.m": 1}


def test_read_json_too_deep_for_the_parser_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(NodeExecutionError, match="nests arrays or objects too deeply for Python's JSON parser"):
        registry_run("read-json", {"path": str(path)})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"headers": "abc"},
            """headers must be a JSON object, got str; e.g. headers='{"Accept": "application/json"}'""",
        ),
        ({"params": [1]}, """params must be a JSON object, got list; e.g. params='{"page": 2}'"""),
        ({"timeout": "abc"}, "timeout must be a positive number of seconds, e.g. timeout=30; got 'abc'"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, e.g. timeout=30; got 0"),
    ],
)
def test_http_bad_params_say_what_was_given(params: dict[str, Any], message: str) -> None:
    with pytest.raises(NodeExecutionError) as caught:
        registry_run("http", {"url": "http://127.0.0.1:9/", **params})
    assert str(caught.value) == f"Node 'http' failed: {message}"


def test_a_plugin_that_cannot_be_loaded_names_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist_info = tmp_path / "broken_plugin-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[pflow_structure.nodes]\nbroken = no_such_module_xyz:Node\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NodeExecutionError) as caught:
        registry_run("broken", {})
    assert str(caught.value) == (
        "Node 'broken' failed: cannot load no_such_module_xyz:Node (from broken-plugin); reinstall or fix that "
        "package: ModuleNotFoundError: No module named 'no_such_module_xyz'"
    )


def test_timeouts_given_as_text_are_accepted() -> None:
    run = registry_run("shell", {"command": "echo ok", "timeout": "30"})
    assert read_fields(run["execution_id"], ["stdout"]) == {"stdout": "ok\n"}


def test_an_absurd_timeout_is_a_parameter_error_not_an_overflow() -> None:
    with pytest.raises(
        NodeExecutionError, match=r"timeout must be a positive number of seconds, e.g. timeout=60; got 1000"
    ):
        registry_run("shell", {"command": "true", "timeout": 10**400})
