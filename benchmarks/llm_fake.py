"""A fake model for the LLM filter path: a localhost server speaking Anthropic's Messages API.

litellm's real client sends each request (``POST /v1/messages``) to 127.0.0.1; the server
answers with the fields it was told to keep (``{"keep": [...]}``), so the prompt, the answer
parsing, the timeout and the fallback all run as they do against the real API. Used by
``filter_eval.py --llm``; the tests have their own copy in ``tests/test_filter_llm.py``.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class FakeModel:
    """``with FakeModel() as fake: fake.answer([...]); ... fake.api_base``; counts its requests."""

    def __init__(self) -> None:
        self.text = json.dumps({"keep": []})
        self.requests = 0
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.saved_key: str | None = None

    def answer(self, keep: list[str]) -> None:
        with self.lock:
            self.text = json.dumps({"keep": keep})

    @property
    def api_base(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeModel:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price map from the network
        os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
        # litellm refuses to call without a key; the server here ignores it (never a real key).
        self.saved_key = os.environ.get("ANTHROPIC_API_KEY")
        os.environ["ANTHROPIC_API_KEY"] = "fake-key-for-127.0.0.1"
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()
        if self.saved_key is None:
            os.environ.pop("ANTHROPIC_API_KEY", None)
        else:
            os.environ["ANTHROPIC_API_KEY"] = self.saved_key


def _handler(fake: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with fake.lock:
                fake.requests += 1
                text = fake.text
            payload = json.dumps(
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 20},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
