"""A scripted OpenAI-compatible model server on loopback, for tests.

``LoopbackServer`` is a real HTTP server: calls to it go through litellm, the model seam,
the cassettes and the validator exactly as calls to a provider do. Script it with
``Reply`` values (plain, streamed, tool calls, think-only, empty, delayed, error status,
malformed body, a stream cut off mid-way), either queued in order or chosen by a handler
that reads each request::

    with LoopbackServer() as server:
        server.queue(Reply(content="Paris"))
        response = complete("Capital of France?", model=server.model, **server.params)

Only the standard library is imported here.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

__all__ = ["LoopbackServer", "Reply", "ReplyHandler", "ToolCallSpec"]

CREATED = 1_700_000_000  # a fixed timestamp keeps bodies byte-identical between runs


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallSpec:
    """One tool call in a scripted reply; ``arguments`` as a dict or raw (maybe broken) text."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        args = self.arguments
        return args if isinstance(args, str) else json.dumps(args)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the server answers to one request.

    Attributes:
        content: the assistant text (None for none).
        reasoning: sent as the message's ``reasoning_content``.
        tool_calls: tool calls to return.
        finish_reason: defaults to ``"tool_calls"`` with tool calls, else ``"stop"``;
            in a stream, None sends no finish reason at all.
        status: HTTP status; 400 and above send an OpenAI-style error body.
        error: the error message for an error status.
        delay: seconds to wait before answering.
        raw: a body sent verbatim instead of a completion (for malformed answers).
        cut_after: in a stream, drop the connection after this many chunks.
        headers: extra response headers.
    """

    content: str | None = "ok"
    reasoning: str | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    finish_reason: str | None = "auto"
    status: int = 200
    error: str = "scripted error"
    delay: float = 0.0
    raw: str | bytes | None = None
    cut_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def finish(self) -> str | None:
        if self.finish_reason != "auto":
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


ReplyHandler: TypeAlias = Callable[[dict[str, Any]], Reply]


def _usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion = len((reply.content or "").split()) + len((reply.reasoning or "").split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _tool_call_json(index: int, call: ToolCallSpec) -> dict[str, Any]:
    return {
        "id": call.id or f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_text()},
    }


def completion_body(body: Mapping[str, Any], reply: Reply, number: int) -> dict[str, Any]:
    """The JSON of a non-streamed chat completion answering ``body`` with ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call_json(i, c) for i, c in enumerate(reply.tool_calls)]
    return {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
        "usage": _usage(body, reply),
    }


def stream_chunks(body: Mapping[str, Any], reply: Reply, number: int) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed chat completion, in order (without the final ``[DONE]``)."""
    base = {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": body.get("model", "loopback"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for word in _pieces(reply.reasoning):
        yield chunk({"reasoning_content": word})
    for word in _pieces(reply.content):
        yield chunk({"content": word})
    for i, call in enumerate(reply.tool_calls):
        head = _tool_call_json(i, call)
        head["function"]["arguments"] = ""
        yield chunk({"tool_calls": [{"index": i, **head}]})
        for part in _pieces(call.arguments_text(), size=8):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    if reply.finish is not None:
        yield chunk({}, reply.finish)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, reply)}


def _pieces(text: str | None, size: int | None = None) -> list[str]:
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


class LoopbackServer:
    """A threaded OpenAI-compatible chat server on 127.0.0.1 and a free port.

    Attributes:
        requests: every request body received, in arrival order.
        handler: chooses the reply; by default the next queued reply, else ``Reply()``.
    """

    def __init__(self, handler: ReplyHandler | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.handler: ReplyHandler = handler or self._next_queued
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI base URL, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """A litellm model name that routes to this server (with ``params``)."""
        return "openai/loopback"

    @property
    def params(self) -> dict[str, Any]:
        """Keyword arguments that point a litellm call at this server."""
        return {"api_base": self.url, "api_key": "loopback-not-a-secret"}

    def queue(self, *replies: Reply) -> LoopbackServer:
        """Answer the next requests with these replies, in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> list[Reply]:
        """Forget the requests seen and the queued replies; return the replies never used."""
        with self._lock:
            unused = list(self._queue)
            self._queue.clear()
            self.requests.clear()
        return unused

    def _next_queued(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else Reply()

    def _receive(self, body: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(body)
            return len(self.requests)

    def start(self) -> LoopbackServer:
        # A short poll interval: stop() waits for the serving loop to notice, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops the rest of a burst of new connections (a panel
    # of 16 judges on a fresh event loop), and their clients retry a second later.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when the client hung up first (it timed out, or its call was cancelled)."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    disable_nagle_algorithm = True  # else every kept-alive request stalls ~40 ms

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        number = self.owner._receive(body)
        reply = self.owner.handler(body)
        if reply.delay:
            threading.Event().wait(reply.delay)
        if reply.status >= 400:
            error = {"message": reply.error, "type": "scripted_error", "code": reply.status}
            self._send(reply.status, {"error": error}, reply.headers)
        elif reply.raw is not None:
            raw = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
            self._send_bytes(200, raw, "application/json", reply.headers)
        elif body.get("stream"):
            self._stream(body, reply, number)
        else:
            self._send(200, completion_body(body, reply, number), reply.headers)

    def _stream(self, body: dict[str, Any], reply: Reply, number: int) -> None:
        chunks = list(stream_chunks(body, reply, number))
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        events.append(b"data: [DONE]\n\n")
        payload = b"".join(events)
        if reply.cut_after is None:
            self._send_bytes(200, payload, "text/event-stream", reply.headers)
            return
        # Promise the whole body, send part of it, then drop the connection.
        self._headers(200, len(payload), "text/event-stream", reply.headers)
        self.wfile.write(b"".join(events[: reply.cut_after]))
        self.wfile.flush()
        self.close_connection = True

    def _send(self, status: int, data: Any, headers: Mapping[str, str] = {}) -> None:
        self._send_bytes(status, json.dumps(data).encode(), "application/json", headers)

    def _send_bytes(
        self, status: int, payload: bytes, ctype: str, headers: Mapping[str, str]
    ) -> None:
        self._headers(status, len(payload), ctype, headers)
        self.wfile.write(payload)

    def _headers(self, status: int, length: int, ctype: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
