"""The LLM filter (pflow_structure/filtering/llm.py).

The pure parts (prompt, answer parsing, model names, key variables) are tested directly. The call
goes through the real litellm code path up to the network: a small HTTP server on 127.0.0.1 speaks
the Anthropic Messages API that litellm uses for ``anthropic/...`` models (``POST /v1/messages``),
and each test sets how it answers. Those tests skip where litellm is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pflow_structure.encoding import encode_value
from pflow_structure.filtering import fields_of, llm
from pflow_structure.filtering.llm import LLMFilterError, build_messages, parse_answer
from pflow_structure.structure import infer_structure
from tests.conftest import CORPUS

# litellm's own pydantic models warn once on the first real request; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")

ISSUES = json.loads((CORPUS / "github__list_issues.json").read_text(encoding="utf-8"))
STRUCTURE = infer_structure(encode_value({"result": ISSUES}).value).structure
FIELDS = fields_of(STRUCTURE)
# Values of the data that must never reach the model: titles, logins, bodies, repository names.
SECRET_VALUES = sorted(
    {issue["title"] for issue in ISSUES if len(issue["title"]) >= 12}
    | {issue["user"]["login"] for issue in ISSUES if len(issue["user"]["login"]) >= 6}
    | {issue["body"][:40] for issue in ISSUES if issue.get("body") and len(issue["body"]) >= 40}
    | {"betamaxpy", "2017-12-17T00:21:05Z"}
)
GOOD_KEEP = ["result[0].title", "result[0].state", "result[0].body", "result[0].user.login", "result[0].comments"]


# --- pure functions ------------------------------------------------------------------------


def test_the_corpus_structure_has_the_fields_the_tests_use() -> None:
    assert len(FIELDS) > 50
    assert set(GOOD_KEEP) <= set(FIELDS)
    assert len(SECRET_VALUES) > 50


def test_build_messages_sends_paths_types_and_statistics_only() -> None:
    messages = build_messages(STRUCTURE, FIELDS, node_type="github-list-issues", target=17)
    assert [message["role"] for message in messages] == ["system", "user"]
    text = "\n".join(message["content"] for message in messages)
    assert "at most 17" in text
    assert "github-list-issues" in text
    assert '{"keep"' in text
    for path in FIELDS:
        assert f"\n{path}: " in text, path
    assert "result[0].title: str, avg_length" in text
    assert "result[0].number: " in text
    leaked = [value for value in SECRET_VALUES if value in text]
    assert leaked == []


def test_build_messages_lists_only_the_given_fields_and_whitelisted_statistics() -> None:
    structure = {
        "result": {"type": "list", "length": 3},
        "result[0].title": {"type": "str", "avg_length": 12, "example": "A SECRET TITLE"},
        "result[0].labels": {"type": "list", "length": 1.5, "min_length": 0, "max_length": 3},
        "result[0].milestone": {"type": "dict|null", "present": 2, "of": 3, "same_as": "result[0].user"},
        "result[0].versions": {"type": "dict", "keys": 25, "dynamic_keys": True},
        "result[0].html_url": {"type": "str", "avg_length": 40},
    }
    fields = ["result[0].title", "result[0].labels", "result[0].milestone", "result[0].versions"]
    text = build_messages(structure, fields, node_type="n", target=3)[1]["content"]
    assert "A SECRET TITLE" not in text and "example" not in text
    assert "html_url" not in text  # not among the fields asked about
    assert "result[0].title: str, avg_length 12" in text
    assert "result[0].labels: list, length 1.5, min_length 0, max_length 3" in text
    assert "result[0].milestone: dict|null, present in 2 of 3, same shape as result[0].user" in text
    assert "result[0].versions: dict, keys 25, keys are data" in text


def test_parse_answer_keeps_known_paths_in_field_order_without_repeats() -> None:
    answer = json.dumps({"keep": ["result[0].body", "result[0].title", "result[0].nope", "result[0].title", 7]})
    assert parse_answer(answer, FIELDS, target=20) == [
        path for path in FIELDS if path in ("result[0].title", "result[0].body")
    ]


def test_parse_answer_reads_fenced_json_and_json_inside_prose() -> None:
    fenced = 'Here you go:\n```json\n{"keep": ["result[0].title", "result[0].state"]}\n```\nThese matter most.'
    assert parse_answer(fenced, FIELDS, target=20) == ["result[0].title", "result[0].state"]
    prose = 'An example object is {"a": 1}. My answer: {"keep": ["result[0].state"]} (the state).'
    assert parse_answer(prose, FIELDS, target=20) == ["result[0].state"]
    bare_fence = '```\n{"keep": ["result[0].title"]}\n```'
    assert parse_answer(bare_fence, FIELDS, target=20) == ["result[0].title"]


def test_parse_answer_accepts_template_spelling() -> None:
    assert parse_answer('{"keep": ["${result[0].title}", " result[0].state "]}', FIELDS, target=5) == [
        "result[0].title",
        "result[0].state",
    ]


def test_parse_answer_caps_at_target_plus_five() -> None:
    answer = json.dumps({"keep": FIELDS})
    assert parse_answer(answer, FIELDS, target=10) == FIELDS[:15]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("keep: result[0].title", "json"),
        ('{"keep": ["result[0].title"', "json"),
        ('["result[0].title"]', "json"),
        ('{"fields": ["result[0].title"]}', "no_keep"),
        ('{"keep": "result[0].title"}', "no_keep"),
        ('{"keep": []}', "no_paths"),
        ('{"keep": ["result[0].nope", "data.title", 3]}', "no_paths"),
    ],
)
def test_parse_answer_refuses_unusable_answers(text: str, kind: str) -> None:
    with pytest.raises(LLMFilterError) as caught:
        parse_answer(text, FIELDS, target=20)
    assert caught.value.kind == kind
    assert "\n" not in str(caught.value)


def test_llm_filter_error_is_a_structure_error() -> None:
    from pflow_structure.errors import StructureError

    assert issubclass(LLMFilterError, StructureError)


def test_resolve_model_maps_the_specs_haiku_to_a_model_litellm_knows() -> None:
    assert llm.DEFAULT_MODEL == "anthropic/claude-haiku-4-5"
    for name in ("claude-3-5-haiku-20241022", "anthropic/claude-3-5-haiku-20241022", "haiku-3-5-latest-20241022"):
        assert llm.resolve_model(name) == llm.DEFAULT_MODEL
    assert llm.resolve_model("") == llm.DEFAULT_MODEL
    assert llm.resolve_model("claude-sonnet-4-5") == "anthropic/claude-sonnet-4-5"
    assert llm.resolve_model("openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    assert llm.resolve_model("gpt-4o-mini") == "gpt-4o-mini"
    assert llm.resolve_model(llm.DEFAULT_MODEL) == llm.DEFAULT_MODEL


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("claude-3-5-haiku-20241022", "ANTHROPIC_API_KEY"),
        ("claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("", "ANTHROPIC_API_KEY"),
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("gpt-4o-mini", "OPENAI_API_KEY"),
        ("o3-mini", "OPENAI_API_KEY"),
        ("gemini/gemini-2.0-flash", "GEMINI_API_KEY"),
        ("groq/llama-3.1-8b-instant", "GROQ_API_KEY"),
        ("openrouter/openai/gpt-4o", "OPENROUTER_API_KEY"),
        ("ollama/llama3", None),
        ("some-local-model", None),
    ],
)
def test_provider_key_env(model: str, variable: str | None) -> None:
    assert llm.provider_key_env(model) == variable


# --- through litellm, against a local Anthropic-style server --------------------------------


@pytest.fixture(scope="module")
def litellm_ready() -> Iterator[Any]:
    """litellm imported (without fetching its price map) and warmed up, once for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        litellm = pytest.importorskip(
            "litellm",
            reason="litellm is not installed: pip install -e '.[test]' (or pip install 'pflow-structure[llm]')",
        )
        llm.preload()
    yield litellm


def _anthropic_message(text: str) -> bytes:
    return json.dumps(
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
    ).encode()


class FakeAnthropic:
    """What the server answers (``mode``, ``text``) and what it was sent."""

    def __init__(self) -> None:
        self.mode = "good"
        self.text = json.dumps({"keep": GOOD_KEEP})
        self.requests: list[dict[str, Any]] = []
        self.answers_sent = 0  # answers begun (a trickling one counts when its last byte is written)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def record(self, path: str, headers: dict[str, str], body: bytes) -> None:
        with self.lock:
            self.requests.append(
                {"path": path, "headers": headers, "raw": body.decode("utf-8"), "json": json.loads(body)}
            )


# A slow server answers long after any deadline: a test tells "the deadline fired" from "the server
# answered" by the server's own count of answers sent (0 when the error came), never by a clock.
SLOW_ANSWER = 30.0


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            fake.record(self.path, {key.lower(): value for key, value in self.headers.items()}, body)
            with contextlib.suppress(OSError):  # the client gave up (timeout tests)
                self._answer()

        def _answer(self) -> None:
            if fake.mode == "error500":
                fake.answers_sent += 1
                self._send(
                    500, b'{"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}'
                )
                return
            payload = _anthropic_message(fake.text)
            if fake.mode == "slow":
                if fake.stop.wait(SLOW_ANSWER):
                    self.close_connection = True  # the waiting client sees the connection end at once
                    return
                fake.answers_sent += 1
                self._send(200, payload)
            elif fake.mode == "trickle":  # one byte at a time: each read is quick, the whole is not
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.flush()
                for index in range(len(payload)):
                    if fake.stop.wait(0.2):
                        return
                    self.wfile.write(payload[index : index + 1])
                    self.wfile.flush()
                fake.answers_sent += 1
            else:
                fake.answers_sent += 1
                self._send(200, payload)

        def _send(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake(litellm_ready: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    state = FakeAnthropic()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    server.block_on_close = False
    state.server = server
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()


def _choose(fake: FakeAnthropic, **overrides: Any) -> list[str]:
    arguments: dict[str, Any] = {
        "node_type": "github-list-issues",
        "model": llm.DEFAULT_MODEL,
        "timeout": 2.0,
        "api_base": fake.api_base,
        "api_key": "test-key",
        "target": 20,
    }
    arguments.update(overrides)
    return llm.llm_choose_fields(STRUCTURE, FIELDS, **arguments)


def _wait_for_late_calls() -> None:
    """Until every LLM call the filter left behind (llm.py's deadline thread) has ended: what they send
    is all sent then. The timeout only keeps a broken run from hanging."""
    for thread in threading.enumerate():
        if thread.name == "pflow-structure-llm-filter":
            thread.join(timeout=60)
            assert not thread.is_alive()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_a_good_answer_gives_the_valid_paths_in_field_order(fake: FakeAnthropic) -> None:
    fake.text = json.dumps({"keep": [*reversed(GOOD_KEEP), "result[0].no_such_field"]})
    kept = _choose(fake)
    assert kept == [path for path in FIELDS if path in GOOD_KEEP]
    assert len(fake.requests) == 1
    request = fake.requests[0]
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "test-key"
    body = request["json"]
    assert body["model"] == "claude-haiku-4-5"  # litellm strips the provider prefix
    assert body["temperature"] == 0
    assert body["max_tokens"] == llm.MAX_TOKENS
    assert "stream" not in body or body["stream"] is False


def test_no_value_of_the_data_reaches_the_model(fake: FakeAnthropic) -> None:
    _choose(fake)
    assert len(fake.requests) == 1
    raw = fake.requests[0]["raw"]
    sent = "\n".join(_strings(fake.requests[0]["json"]))
    assert "result[0].title" in sent and "result[0].user.login" in sent
    leaked = [value for value in SECRET_VALUES if value in sent or value in raw]
    assert leaked == []


def test_the_specs_haiku_id_is_sent_as_the_model_litellm_knows(fake: FakeAnthropic, litellm_ready: Any) -> None:
    _choose(fake, model="claude-3-5-haiku-20241022")
    assert fake.requests[0]["json"]["model"] == "claude-haiku-4-5"
    resolved = llm.resolve_model("claude-3-5-haiku-20241022")
    assert resolved.split("/", 1)[1] in litellm_ready.model_cost
    assert litellm_ready.get_llm_provider(resolved)[1] == "anthropic"


def test_a_fenced_answer_with_prose_around_it_works(fake: FakeAnthropic) -> None:
    fake.text = (
        'Sure! The useful fields:\n```json\n{"keep": ["result[0].title", "result[0].body"]}\n```\nHope it helps.'
    )
    assert _choose(fake) == [path for path in FIELDS if path in ("result[0].title", "result[0].body")]


def test_a_slow_answer_is_a_timeout_without_retry(fake: FakeAnthropic) -> None:
    fake.mode = "slow"
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake)
    assert fake.answers_sent == 0  # the deadline fired, not the answer (SLOW_ANSWER)
    assert caught.value.kind == "timeout"
    assert str(caught.value) == "LLM filter (anthropic/claude-haiku-4-5) timed out after 2.0 s"
    fake.stop.set()  # the late call now fails; a retry would be a second request before its thread ends
    _wait_for_late_calls()
    assert len(fake.requests) == 1


def test_the_deadline_holds_when_litellm_does_not_honour_its_timeout(fake: FakeAnthropic) -> None:
    """litellm's timeout bounds each read, not the whole answer: a server that sends one byte every
    0.2 s keeps litellm waiting for a minute. The filter gives up on time anyway."""
    fake.mode = "trickle"
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake, timeout=1.0)
    assert fake.answers_sent == 0  # litellm alone would wait for the whole trickle, about a minute
    assert caught.value.kind == "timeout"
    assert str(caught.value) == "LLM filter (anthropic/claude-haiku-4-5) timed out after 1.0 s"


def test_malformed_json_is_an_error(fake: FakeAnthropic) -> None:
    fake.text = "I would keep result[0].title and result[0].body, {keep: these}"
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake)
    assert caught.value.kind == "json"
    assert len(fake.requests) == 1


def test_paths_that_do_not_exist_are_an_error(fake: FakeAnthropic) -> None:
    fake.text = json.dumps({"keep": ["issues[0].title", "result.title", "result[0].summary"]})
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake)
    assert caught.value.kind == "no_paths"
    assert "3 paths given" in str(caught.value)


def test_http_500_is_an_error_in_one_line_without_retry(fake: FakeAnthropic) -> None:
    fake.mode = "error500"
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake)
    message = str(caught.value)
    assert caught.value.kind == "request"
    assert message.startswith("LLM filter (anthropic/claude-haiku-4-5) failed: ")
    assert "\n" not in message and len(message) < 300
    assert "test-key" not in message
    assert "Internal server error" in message and "Handle with" not in message
    _wait_for_late_calls()  # none: the call ended with its error, any retry inside it
    assert len(fake.requests) == 1


def test_an_unreachable_server_is_an_error(fake: FakeAnthropic) -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens on this port now
    with pytest.raises(LLMFilterError) as caught:
        _choose(fake, api_base=f"http://127.0.0.1:{port}")
    assert caught.value.kind == "request"  # refused at once: not a timeout
    assert "\n" not in str(caught.value)


def test_litellm_is_not_imported_by_importing_the_module() -> None:
    import subprocess
    import sys

    code = "import sys, pflow_structure.filtering.llm; print('litellm' in sys.modules)"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert loaded.stdout.strip() == "False"


# -- through the service and the CLI: the modes, the warnings, the decision cache -----------------


def _llm_env(fake: FakeAnthropic, **extra: str) -> dict[str, str]:
    return {
        "PFLOW_STRUCTURE_FILTER": "llm",
        "PFLOW_STRUCTURE_FILTER_API_BASE": fake.api_base,
        "ANTHROPIC_API_KEY": "test-key",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **extra,
    }


def _run_issues(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> dict[str, Any]:
    from pflow_structure.service import registry_run

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return registry_run("read-json", {"path": str(CORPUS / "github__list_issues.json")})


def test_criteria_3_to_7_through_the_service_with_the_llm(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    """3-7: over 50 fields the LLM's choice is shown (titles, bodies, status; no URLs or ids), under 50 untouched."""
    result = _run_issues(monkeypatch, _llm_env(fake))
    assert result["filtered"] is True and result["filter"] == "llm"
    assert len(fake.requests) == 1
    for path in GOOD_KEEP:
        assert path in result["structure"]
    assert not any(path.endswith(("url", "node_id")) for path in result["structure"])
    assert result["field_count"] < 20 < result["original_field_count"]
    assert "warnings" not in result
    from pflow_structure.service import registry_run

    root = registry_run("read-json", {"path": str(CORPUS / "github__get_root.json")})
    assert root["filtered"] is False and len(fake.requests) == 1  # 33 short fields, shown whole: no request


@pytest.mark.parametrize(
    ("mode", "text", "reason"),
    [
        ("slow", json.dumps({"keep": GOOD_KEEP}), "timed out"),
        ("good", "this is not json", "JSON"),
        ("good", json.dumps({"keep": ["result[0].nope", "nothing.here"]}), "no"),
        ("error500", "", "failed"),
    ],
)
def test_a_slow_or_broken_llm_falls_back_to_the_heuristic_with_a_warning_and_is_not_kept(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, mode: str, text: str, reason: str
) -> None:
    fake.mode, fake.text = mode, text
    result = _run_issues(monkeypatch, _llm_env(fake))
    assert result["filter"] == "heuristic"
    (warning,) = result["warnings"]
    assert warning.startswith("LLM filter: ") and warning.endswith("used the heuristic filter instead.")
    assert reason.lower() in warning.lower()
    assert fake.answers_sent == (0 if mode == "slow" else 1)  # a slow answer: the 2 s deadline fired first
    requests = len(fake.requests)
    _run_issues(monkeypatch, _llm_env(fake))
    assert len(fake.requests) == requests + 1  # nothing was kept: the next run asks again


def test_without_an_api_key_auto_uses_the_heuristic_and_never_imports_litellm(tmp_path: Any) -> None:
    import subprocess
    import sys

    code = (
        "import sys, json; from pflow_structure.service import registry_run;"
        f"r = registry_run('read-json', {{'path': {str(CORPUS / 'github__list_issues.json')!r}}});"
        "print(json.dumps([r['filter'], r.get('warnings'), 'litellm' in sys.modules]))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PFLOW_STRUCTURE_FILTER")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert json.loads(done.stdout) == ["heuristic", None, False], done.stderr


def test_two_cli_processes_in_a_row_ask_the_llm_once(fake: FakeAnthropic, tmp_path: Any) -> None:
    """Acceptance 3: the second process finds the decision on disk and makes no request."""
    import subprocess
    import sys

    env = {**os.environ, **_llm_env(fake), "PFLOW_STRUCTURE_CACHE_DIR": str(tmp_path / "cache" / "node-executions")}
    command = [
        sys.executable,
        "-m",
        "pflow_structure",
        "run",
        "read-json",
        f"path={CORPUS / 'github__list_issues.json'}",
    ]
    first = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env, timeout=180)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["filter"] == "llm" and len(fake.requests) == 1
    second = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env, timeout=180)
    assert json.loads(second.stdout)["filter"] == "llm"
    assert json.loads(second.stdout)["structure"] == json.loads(first.stdout)["structure"]
    assert len(fake.requests) == 1  # the second process asked nobody
    decisions = list((tmp_path / "cache" / "filter-decisions").glob("*.json"))
    assert len(decisions) == 1 and oct(decisions[0].stat().st_mode & 0o777) == "0o600"
