"""A loopback OpenAI-compatible server for tests: /v1/chat/completions answers from a script.

Each request takes the next behaviour of the script (then the default one): a chat completion with given
text and token usage, an HTTP error with headers (429 + Retry-After, 500...), a hang longer than the
client's timeout, or a body that is no chat completion. A behaviour may also be a function of the request
body returning one of those, so an end-to-end run can answer with edits of whatever parent it is shown.
Every request is recorded (path, headers, JSON body) so tests can assert what was sent. The server only
listens on 127.0.0.1 and its `url` (the base_url for a client) points at itself.

    def test_x(fake_openai):
        server = fake_openai([Status(429, {"Retry-After": "1"}), Reply(diff_answer("a = 1\\n", "a = 2\\n"))])
        endpoint = LLMEndpoint(model="m", base_url=server.url, api_key_env="KB_TEST_KEY")
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


@dataclass(frozen=True)
class Reply:
    """A chat completion whose message is `content`."""

    content: str
    prompt_tokens: int = 120
    completion_tokens: int = 40
    finish_reason: str = "stop"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Status:
    """An HTTP error response in OpenAI's error shape."""

    code: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "fake error"


@dataclass(frozen=True)
class Hang:
    """Answer only after `seconds` (longer than the client's timeout), or when the server stops."""

    seconds: float = 30.0


@dataclass(frozen=True)
class RawBody:
    """A 200 response whose body is `body` verbatim (not a chat completion)."""

    body: str
    content_type: str = "application/json"


Behaviour = Union[Reply, Status, Hang, RawBody, Callable[[dict[str, Any]], "Behaviour"]]  # noqa: UP007


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    method: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def prompt_text(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


def diff_answer(search: str, replace: str, note: str = "Tighten the launch.") -> str:
    """An answer holding one SEARCH/REPLACE edit."""
    return f"{note}\n\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def rewrite_answer(code: str, note: str = "A rewrite.") -> str:
    """An answer holding one fenced Python block."""
    return f"{note}\n\n```python\n{code}```\n"


class FakeOpenAI:
    def __init__(
        self,
        script: Iterable[Behaviour] = (),
        default: Behaviour | None = None,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] | None = ("fake-model",),
    ) -> None:
        self.api_key = api_key  # when set, requests without `Authorization: Bearer <api_key>` get a 401
        self.models = models  # what GET /v1/models lists; None: the server has no models route (404)
        self._script: deque[Behaviour] = deque(script)
        self.default = default if default is not None else Reply("I have no idea.")
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)

    @property
    def url(self) -> str:
        """The base_url of this server's OpenAI-compatible API."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def push(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)  # a short poll makes stop() quick

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- WSGI ---------------------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        response = self._respond(request)
        return response(environ, start_response)

    def _respond(self, request: Request) -> Response:
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _json({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}, 401)
        if request.method == "GET" and request.path.rstrip("/") == "/v1/models" and self.models is not None:
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.models]
            return _json({"object": "list", "data": data})
        if request.method != "POST" or request.path.rstrip("/") != "/v1/chat/completions":
            return _json({"error": {"message": f"no route {request.method} {request.path}"}}, 404)
        try:
            body = json.loads(request.get_data(as_text=True) or "{}")
        except json.JSONDecodeError:
            return _json({"error": {"message": "request body is not JSON"}}, 400)
        recorded = RecordedRequest(
            request.path, request.method, {k.lower(): v for k, v in request.headers.items()}, body
        )
        with self._lock:
            self.requests.append(recorded)
            behaviour = self._script.popleft() if self._script else self.default
        while callable(behaviour) and not isinstance(behaviour, (Reply, Status, Hang, RawBody)):
            behaviour = behaviour(body)
        return self._perform(behaviour, body)

    def _perform(self, behaviour: Behaviour, body: dict[str, Any]) -> Response:
        if isinstance(behaviour, Hang):
            self._stopping.wait(behaviour.seconds)
            return _json({"error": {"message": "hung"}}, 504)
        if isinstance(behaviour, Status):
            payload = {"error": {"message": behaviour.message, "type": "fake", "code": behaviour.code}}
            return _json(payload, behaviour.code, behaviour.headers)
        if isinstance(behaviour, RawBody):
            return Response(behaviour.body, 200, content_type=behaviour.content_type)
        assert isinstance(behaviour, Reply)
        if behaviour.delay_s:
            self._stopping.wait(behaviour.delay_s)
        return _json(
            {
                "id": f"chatcmpl-fake-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake-model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": behaviour.content},
                        "finish_reason": behaviour.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": behaviour.prompt_tokens,
                    "completion_tokens": behaviour.completion_tokens,
                    "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
                },
            }
        )


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(payload), status, headers=headers or {}, content_type="application/json")


@pytest.fixture
def fake_openai() -> Iterator[Callable[..., FakeOpenAI]]:
    """Factory: `fake_openai(script, default=...)` starts a server; all are stopped after the test."""
    servers: list[FakeOpenAI] = []

    def start(
        script: Iterable[Behaviour] = (), default: Behaviour | None = None, **options: Any
    ) -> FakeOpenAI:
        server = FakeOpenAI(script, default, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
