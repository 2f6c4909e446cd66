"""A real HTTP server on 127.0.0.1 that speaks the four AI chat wire formats on their real paths,
records every request, and is scripted per test.

    with FakeAiProvider() as fake:                       # or the `ai_fake` fixture
        profile = fake.profile("anthropic")              # a ConnectionProfile pointing here
        fake.reply(text='[{"title": "Gorduin"}]', usage={"input": 900, "output": 12})
        fake.reply(structured={"selected": []})          # tool_use / JSON text, per wire format
        fake.reply(tool_calls=[{"name": "search_vault", "args": {"query": "x"}}])  # native tool calls
        fake.fail(429)                                   # a realistic error envelope for the path hit
        fake.slow(2.0, text="late")                      # answer after 2 s (unless the client left)
        fake.hang()                                      # never answer; notice the client leaving
        fake.broken_json(); fake.truncated()
        fake.default(lambda req: "[]" if "Gorduin" not in req.user_text else '[{"title": "Gorduin"}]')
        fake.requests[-1].body, fake.requests[-1].headers["x-api-key"], fake.disconnects

Scripted answers are used in order; when none is left, the `default` callable answers (it may
return a str → text, a dict/list → structured, or any of the action objects below), else "OK".

Paths: /v1/chat/completions and /chat/completions (any prefix), /openai/deployments/{m}/chat/
completions (Azure), /v1/messages, /v1beta/models/{m}:generateContent, /api/chat; GET .../models
lists `fake.models` (what an OpenAI-compatible client such as SillyTavern asks before chatting).
An OpenAI-style request with `"stream": true` gets its good answer as server-sent events.

Other test folders: `from tests.fakes.ai_provider import FakeAiProvider, ai_fake  # noqa: F401`
in their conftest.py makes the `ai_fake` fixture available there.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from dle_desktop.ai.types import ConnectionProfile

_GEMINI_PATH = re.compile(r"^(?:/[^/]+)*/v1beta/(?:models|tunedModels)/(?P<model>[^/:]+):generateContent$")
_AZURE_PATH = re.compile(r"^/openai/deployments/(?P<model>[^/]+)/chat/completions$")


@dataclass(frozen=True)
class Reply:
    """A good answer. `text` wins over `structured` for the text part; `raw` replaces the whole
    envelope (for odd shapes); `usage` keys: input, output, cache_read, cache_write."""

    text: str | None = None
    structured: Any = None
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    model: str | None = None
    raw: Any = None
    delay: float = 0.0
    #: native tool calls, [{"name", "args", "id"?}]: tool_calls / tool_use / functionCall per wire
    tool_calls: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True)
class Failure:
    """An HTTP error. `body` None → the wire format's usual error envelope; bytes/str → sent as is."""

    status: int
    body: Any = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Hang:
    """Never answer; return when the client closes the connection (or the fake stops)."""


@dataclass(frozen=True)
class BrokenJson:
    """200 with a JSON content type and a body that is not JSON."""


@dataclass(frozen=True)
class Truncated:
    """200 that declares more bytes than it sends, then closes the connection."""


Action = Reply | Failure | Hang | BrokenJson | Truncated


@dataclass(frozen=True)
class SeenAiRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes = b""

    @property
    def wire(self) -> str:
        """ "openai", "azure", "anthropic", "gemini", "ollama" or "" (an unknown path)."""
        return _wire_of(self.path)

    @property
    def model(self) -> str:
        m = _GEMINI_PATH.match(self.path) or _AZURE_PATH.match(self.path)
        if m:
            return m.group("model")
        return str((self.body or {}).get("model", "")) if isinstance(self.body, dict) else ""

    @property
    def system_text(self) -> str:
        """The system prompt, whatever the wire format ("" when it was sent as user text)."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.wire == "anthropic":
            return _texts(body.get("system"))
        if self.wire == "gemini":
            return _texts((body.get("systemInstruction") or {}).get("parts"))
        return "\n\n".join(
            _texts(m.get("content"))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "system"
        )

    @property
    def user_text(self) -> str:
        """All user-role text, blocks joined with a blank line."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.wire == "gemini":
            return "\n\n".join(
                _texts(c.get("parts"))
                for c in body.get("contents") or []
                if isinstance(c, dict) and c.get("role", "user") == "user"
            )
        return "\n\n".join(
            _texts(m.get("content"))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "user"
        )

    @property
    def prompt_text(self) -> str:
        return "\n\n".join(t for t in (self.system_text, self.user_text) if t)

    @property
    def schema_name(self) -> str | None:
        """The name of the requested structured output (tool / json_schema), if any."""
        body = self.body if isinstance(self.body, dict) else {}
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("name"):
            return str(choice["name"])
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
            return fmt["json_schema"].get("name")
        return None


def _texts(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n\n".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _wire_of(path: str) -> str:
    if _AZURE_PATH.match(path):
        return "azure"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if _GEMINI_PATH.match(path):
        return "gemini"
    if path.endswith("/api/chat"):
        return "ollama"
    return ""


# ---- envelopes ---------------------------------------------------------------------------------


def _usage(reply: Reply) -> dict[str, int]:
    u = {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}
    u.update(reply.usage or {})
    return u


def _answer_text(reply: Reply) -> str:
    if reply.text is not None:
        return reply.text
    return json.dumps(reply.structured) if reply.structured is not None else ""


def envelope(wire: str, reply: Reply, req: SeenAiRequest) -> Any:
    """The body a real server of this wire format would send for `reply`."""
    if reply.raw is not None:
        return reply.raw
    u, model = _usage(reply), reply.model or req.model or "fake-model"
    body = req.body if isinstance(req.body, dict) else {}
    calls = [dict(c, id=c.get("id") or f"call_{i}") for i, c in enumerate(reply.tool_calls or ())]
    if wire in ("openai", "azure"):
        message: dict[str, Any] = {"role": "assistant", "content": _answer_text(reply) or (None if calls else "")}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["args"] if isinstance(c.get("args"), str) else json.dumps(c.get("args") or {}),
                    },
                }
                for c in calls
            ]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": u["input"],
                "completion_tokens": u["output"],
                "total_tokens": u["input"] + u["output"],
                "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
            },
        }
    if wire == "anthropic":
        blocks: list[dict[str, Any]] = []
        tool = (body.get("tool_choice") or {}).get("name") if isinstance(body.get("tool_choice"), dict) else None
        if calls:
            if reply.text:
                blocks.append({"type": "text", "text": reply.text})
            blocks += [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("args") or {}} for c in calls
            ]
            stop = "tool_use"
        elif reply.structured is not None and tool:
            if reply.text is not None:
                blocks.append({"type": "text", "text": reply.text})
            blocks.append({"type": "tool_use", "id": "toolu_fake", "name": tool, "input": reply.structured})
            stop = "tool_use"
        else:  # no tool was offered, so a structured answer can only come back as text
            if body.get("thinking"):
                blocks.append({"type": "thinking", "thinking": "Let me think.", "signature": "sig"})
            blocks.append({"type": "text", "text": _answer_text(reply)})
            stop = "end_turn"
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": reply.finish_reason or stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": u["input"],
                "output_tokens": u["output"],
                "cache_read_input_tokens": u["cache_read"],
                "cache_creation_input_tokens": u["cache_write"],
            },
        }
    if wire == "gemini":
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts += [{"functionCall": {"name": c["name"], "args": c.get("args") or {}}} for c in calls]
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts or [{"text": _answer_text(reply)}]},
                    "finishReason": reply.finish_reason or "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": u["input"],
                "candidatesTokenCount": u["output"],
                "totalTokenCount": u["input"] + u["output"],
                "cachedContentTokenCount": u["cache_read"],
            },
            "modelVersion": model,
        }
    if wire == "ollama":
        return {
            "model": model,
            "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": _answer_text(reply)},
            "done": True,
            "done_reason": reply.finish_reason or "stop",
            "prompt_eval_count": u["input"],
            "eval_count": u["output"],
        }
    raise AssertionError(wire)


def sse_stream(completion: dict[str, Any], pieces: int = 3) -> bytes:
    """An OpenAI chat completion as the server-sent events a streaming server sends: a role delta,
    the text in a few content deltas, a finish chunk carrying the usage, then [DONE]."""
    if not isinstance(completion, dict) or not completion.get("choices"):
        return f"data: {json.dumps(completion)}\n\ndata: [DONE]\n\n".encode()
    text = completion["choices"][0]["message"].get("content") or ""
    step = max(1, -(-len(text) // pieces))
    base = {k: completion[k] for k in ("id", "created", "model")}
    chunks = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    chunks += [
        {"index": 0, "delta": {"content": text[i : i + step]}, "finish_reason": None} for i in range(0, len(text), step)
    ]
    events = [{**base, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
    events.append(
        {
            **base,
            "object": "chat.completion.chunk",
            "usage": completion.get("usage"),
            "choices": [{"index": 0, "delta": {}, "finish_reason": completion["choices"][0]["finish_reason"]}],
        }
    )
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


_STATUS_WORDS = {
    400: ("invalid_request_error", "INVALID_ARGUMENT"),
    401: ("authentication_error", "UNAUTHENTICATED"),
    402: ("billing_error", "FAILED_PRECONDITION"),
    403: ("permission_error", "PERMISSION_DENIED"),
    404: ("not_found_error", "NOT_FOUND"),
    429: ("rate_limit_error", "RESOURCE_EXHAUSTED"),
    500: ("api_error", "INTERNAL"),
    503: ("api_error", "UNAVAILABLE"),
    529: ("overloaded_error", "UNAVAILABLE"),
}


def error_envelope(wire: str, status: int, message: str | None = None) -> Any:
    """The error body a real server of this wire format would send."""
    anthropic_type, google_status = _STATUS_WORDS.get(status, ("api_error", "UNKNOWN"))
    message = message or f"fake failure {status}"
    if wire == "anthropic":
        return {"type": "error", "error": {"type": anthropic_type, "message": message}}
    if wire == "gemini":
        return {"error": {"code": status, "message": message, "status": google_status}}
    if wire == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": anthropic_type.replace("_error", ""), "code": None}}


# ---- server ------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.endswith("/models"):
            models = self.server.owner.models
            return self._json(
                200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in models]}
            )
        self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        fake = self.server.owner
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        seen = SeenAiRequest(
            "POST", parts.path, dict(parse_qsl(parts.query)), {k.lower(): v for k, v in self.headers.items()}, body, raw
        )
        fake._record(seen)
        wire = seen.wire
        if not wire:
            return self._json(404, {"error": {"message": f"no route for {parts.path}"}})
        action = fake._next_action(seen)
        try:
            self._act(fake, wire, seen, action)
        except OSError:
            self.close_connection = True  # the client went away mid-answer

    def _act(self, fake: FakeAiProvider, wire: str, seen: SeenAiRequest, action: Action) -> None:
        if isinstance(action, Hang):
            self._wait_for_client(fake, None)
            return
        if isinstance(action, Reply):
            if action.delay and not self._wait_for_client(fake, action.delay):
                return
            if wire in ("openai", "azure") and isinstance(seen.body, dict) and seen.body.get("stream") is True:
                return self._send(200, sse_stream(envelope(wire, action, seen)), content_type="text/event-stream")
            return self._json(200, envelope(wire, action, seen))
        if isinstance(action, Failure):
            body = action.body if action.body is not None else error_envelope(wire, action.status)
            data = (
                body
                if isinstance(body, bytes)
                else body.encode()
                if isinstance(body, str)
                else json.dumps(body).encode()
            )
            return self._send(action.status, data, action.headers)
        if isinstance(action, BrokenJson):
            return self._send(200, b'{"choices": [{"message": {"content": "unterminated')
        if isinstance(action, Truncated):
            data = json.dumps(envelope(wire, Reply(text="this answer is cut off " * 20), seen)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 500))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        raise AssertionError(action)

    def _wait_for_client(self, fake: FakeAiProvider, seconds: float | None) -> bool:
        """Wait `seconds` (None: forever). False, and the disconnect recorded, if the client
        closes the connection first."""
        deadline = None if seconds is None else time.monotonic() + seconds
        fake._enter_wait()
        try:
            while not fake._stopping.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    return True
                readable, _, _ = select.select([self.connection], [], [], 0.02)
                if readable:
                    try:
                        peek = self.connection.recv(1, socket.MSG_PEEK)
                    except OSError:
                        peek = b""
                    if not peek:
                        fake._saw_disconnect()
                        self.close_connection = True
                        return False
                    time.sleep(0.02)  # a pipelined request; it waits its turn
            self.close_connection = True
            return False
        finally:
            fake._leave_wait()

    def _send(
        self, status: int, data: bytes, headers: dict[str, str] | None = None, *, content_type: str = "application/json"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeAiProvider

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-answer is part of the tests


@dataclass
class _State:
    queue: deque[Action] = field(default_factory=deque)
    default: Callable[[SeenAiRequest], Any] | None = None
    requests: list[SeenAiRequest] = field(default_factory=list)
    disconnects: int = 0
    waiting: int = 0
    errors: list[Exception] = field(default_factory=list)


class FakeAiProvider:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = _State()
        self._stopping = threading.Event()
        self._disconnected = threading.Condition(self._lock)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self.models: list[str] = ["fake-model"]

    # ---- lifecycle

    def start(self) -> FakeAiProvider:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-ai-provider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeAiProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- scripting

    def reply(
        self,
        text: str | None = None,
        structured: Any = None,
        usage: dict[str, int] | None = None,
        *,
        finish_reason: str | None = None,
        model: str | None = None,
        raw: Any = None,
        tool_calls: list[dict[str, Any]] | None = None,
    ) -> None:
        self._push(
            Reply(
                text, structured, usage, finish_reason, model, raw, tool_calls=tuple(tool_calls) if tool_calls else None
            )
        )

    def fail(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self._push(Failure(status, body, headers))

    def slow(self, seconds: float, text: str | None = "OK", **reply: Any) -> None:
        self._push(Reply(text=text, delay=seconds, **reply))

    def hang(self) -> None:
        self._push(Hang())

    def broken_json(self) -> None:
        self._push(BrokenJson())

    def truncated(self) -> None:
        self._push(Truncated())

    def clear(self) -> None:
        """Forget the scripted answers no request has taken yet (a client that gave up before its
        request arrived leaves its answer for the next one)."""
        with self._lock:
            self._state.queue.clear()

    def default(self, fn: Callable[[SeenAiRequest], Any] | None) -> None:
        """Answer unscripted requests with `fn(request)`: str → text, dict/list → structured,
        or an action (Reply, Failure, Hang, BrokenJson, Truncated)."""
        with self._lock:
            self._state.default = fn

    # ---- observing

    @property
    def requests(self) -> list[SeenAiRequest]:
        with self._lock:
            return list(self._state.requests)

    @property
    def last(self) -> SeenAiRequest:
        with self._lock:
            return self._state.requests[-1]

    @property
    def errors(self) -> list[Exception]:
        """Exceptions raised by the `default` callable (each was answered with a 500)."""
        with self._lock:
            return list(self._state.errors)

    @property
    def disconnects(self) -> int:
        """Clients that closed the connection while the fake was still holding their answer."""
        with self._lock:
            return self._state.disconnects

    @property
    def waiting(self) -> int:
        """Requests being held right now (hang / slow)."""
        with self._lock:
            return self._state.waiting

    def wait_for_disconnect(self, count: int = 1, timeout: float = 5.0) -> bool:
        with self._disconnected:
            return self._disconnected.wait_for(lambda: self._state.disconnects >= count, timeout)

    def profile(
        self, provider: str = "openai", flavor: str = "", *, model: str = "fake-model", **fields: Any
    ) -> ConnectionProfile:
        """A connection profile aimed at this fake, on the path layout its flavor uses."""
        flavor = flavor or provider
        base = self.url + ("/v1" if provider == "openai" and flavor != "azure" else "")
        return ConnectionProfile(
            id=f"fake-{flavor}",
            name=f"Fake {flavor}",
            provider=provider,
            flavor=flavor,
            base_url=base,
            model=model,
            **fields,
        )

    # ---- used by the handler threads

    def _push(self, action: Action) -> None:
        with self._lock:
            self._state.queue.append(action)

    def _record(self, seen: SeenAiRequest) -> None:
        with self._lock:
            self._state.requests.append(seen)

    def _next_action(self, seen: SeenAiRequest) -> Action:
        with self._lock:
            if self._state.queue:
                return self._state.queue.popleft()
            fn = self._state.default
        if fn is None:
            return Reply(text="OK")
        try:
            answer = fn(seen)
        except Exception as exc:  # noqa: BLE001 - a broken test callable must show, not hang the client
            with self._lock:
                self._state.errors.append(exc)
            return Failure(500, {"error": {"message": f"the fake's default answer raised {exc!r}"}})
        if isinstance(answer, str):
            return Reply(text=answer)
        if isinstance(answer, (dict, list)):
            return Reply(structured=answer)
        return answer

    def _saw_disconnect(self) -> None:
        with self._disconnected:
            self._state.disconnects += 1
            self._disconnected.notify_all()

    def _enter_wait(self) -> None:
        with self._lock:
            self._state.waiting += 1

    def _leave_wait(self) -> None:
        with self._lock:
            self._state.waiting -= 1


@pytest.fixture
def ai_fake():
    """A started FakeAiProvider, stopped after the test."""
    with FakeAiProvider() as fake:
        yield fake


__all__ = [
    "BrokenJson",
    "Failure",
    "FakeAiProvider",
    "Hang",
    "Reply",
    "SeenAiRequest",
    "Truncated",
    "ai_fake",
    "envelope",
    "error_envelope",
    "sse_stream",
]
