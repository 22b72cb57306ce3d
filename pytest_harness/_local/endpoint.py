"""The embedded model's endpoint for the application's calls: OpenAI Chat Completions, made
faithful (run as ``python -m pytest_harness._local.endpoint UPSTREAM PORT``).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import sys
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_harness._local import route
from pytest_harness._local.install import MODEL_NAME
from pytest_harness._local.server import SAMPLE_PATH
from pytest_harness.errors import ConfigError, UnsupportedRequest

_UPSTREAM_TIMEOUT = 600.0  # one request at a time upstream: a call may wait for others
_TEXT_PARTS = frozenset({"text", "input_text"})
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_FORMATS = frozenset({"text", "json_object", "json_schema"})
# Asked of OpenAI, meaningless here: not sent on to a server that might refuse them.
_DROPPED = ("parallel_tool_calls", "store", "metadata", "service_tier", "reasoning_effort")
_ELSEWHERE = {
    "/v1/responses": "the OpenAI Responses API",
    "/v1/messages": "Anthropic's Messages API",
}


def adapt(body: Any, sample: int | None = None) -> tuple[dict[str, Any], bool]:
    """The Chat Completions request as the llama.cpp server needs it, and whether tools
    were offered (the reply is then read back into tool calls). ``sample``: the running
    sample's number in a sampled test, whose temperature and seed a request that sets none
    gets (``route.defaults``).

    Raises:
        UnsupportedRequest: the request asks for what the embedded model cannot do.
    """
    if not isinstance(body, dict):
        raise UnsupportedRequest(
            "the request body must be a JSON object (a Chat Completions request)"
        )
    request = {k: v for k, v in body.items() if k not in _DROPPED}
    _check_messages(request.get("messages"))
    if request.get("n") not in (None, 1):
        raise UnsupportedRequest(f"the embedded model returns one choice: n={request['n']!r}", "n")
    if "max_completion_tokens" in request:
        limit = request.pop("max_completion_tokens")
        request.setdefault("max_tokens", limit)
    for name, value in route.defaults(sample).items():
        request.setdefault(name, value)
    offered = _offer(request)
    if "response_format" in request:
        request["response_format"] = _response_format(request["response_format"])
    request["messages"] = route.fold_system(request["messages"])
    request["model"] = MODEL_NAME  # what the server answers with: the reply names its model
    return route.limited(request), offered


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise UnsupportedRequest("'messages' must be a non-empty list of messages", "messages")
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            raise UnsupportedRequest(
                f"{where} must be an object with a role ({', '.join(sorted(_ROLES))})"
            )
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise UnsupportedRequest(f"{where}.content must be a string or a list of parts", where)
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind not in _TEXT_PARTS:
                raise UnsupportedRequest(
                    f"the embedded model reads text only: {where} has a {kind!r} part. Record "
                    "this test with a provider's model (--harness-model=openai/gpt-4o-mini).",
                    where,
                )


def _offer(request: dict[str, Any]) -> bool:
    """Tools as a prompt and a grammar, tool turns as plain ones (``route.offer``);
    whether any tools were offered."""
    tools = request.get("tools") or []
    if not isinstance(tools, list):
        raise UnsupportedRequest("'tools' must be a list of tools", "tools")
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
            kind = tool.get("type") if isinstance(tool, Mapping) else None
            raise UnsupportedRequest(
                f"the embedded model calls functions only: tools[{index}] is a {kind!r} tool",
                f"tools[{index}]",
            )
    try:
        route.offer(request)
    except ConfigError as error:
        raise UnsupportedRequest(str(error), "tool_choice") from None
    return bool(request.pop(route.MARK, False))


def _response_format(value: Any) -> Any:
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind not in _FORMATS:
        raise UnsupportedRequest(
            f"response_format type {kind!r} is not one the embedded model enforces: use "
            "'json_schema', 'json_object' or 'text'",
            "response_format",
        )
    if kind == "json_schema" and not isinstance((value.get("json_schema") or {}), Mapping):
        raise UnsupportedRequest("response_format.json_schema must be an object", "response_format")
    return route.json_object_format(value)


def tool_reply(data: dict[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """A completion to a request whose tools were offered, read back as OpenAI sends it."""
    for choice in data.get("choices") or []:
        message = choice.get("message") or {}
        found = route.read_back(message.get("content") or "")
        if found is None:
            continue
        if found.tool is None:
            message["content"] = found.answer
            continue
        message["content"] = None
        message["tool_calls"] = [_tool_call(found, request)]
        if found.parsed is not None:
            choice["finish_reason"] = "tool_calls"
    return data


def _tool_call(found: route.ReadBack, request: Mapping[str, Any]) -> dict[str, Any]:
    # The id depends on the conversation only: a recording made again keeps it.
    digest = hashlib.sha256(json.dumps(request.get("messages"), sort_keys=True).encode())
    return {
        "id": f"call_{digest.hexdigest()[:24]}",
        "type": "function",
        "function": {"name": found.tool, "arguments": found.arguments},
    }


def as_stream(data: Mapping[str, Any], include_usage: bool) -> Iterator[bytes]:
    """A completion as the server-sent events of a streamed one (role, then the content or
    the tool calls, then the finish reason, the usage when asked for, and ``[DONE]``)."""
    head = {k: data.get(k) for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    for choice in data.get("choices") or []:
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            calls = message["tool_calls"]
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
        index = choice.get("index", 0)
        yield _event({**head, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        end = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
        yield _event({**head, "choices": [end]})
    if include_usage and data.get("usage") is not None:
        yield _event({**head, "choices": [], "usage": data["usage"]})
    yield b"data: [DONE]\n\n"


def _event(chunk: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def refusal(message: str, param: str | None = None) -> bytes:
    """An OpenAI-style error body."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    return json.dumps({"error": error}).encode()


def _upstream_message(status: int, body: bytes) -> str:
    """What the llama.cpp server said when it refused a request."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    detail = data.get("error") or data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, Mapping):
        detail = detail.get("message") or detail
    text = detail if isinstance(detail, str) else body.decode(errors="replace")[:500]
    return f"the embedded model's server refused the request (HTTP {status}): {text}"


class Endpoint(ThreadingHTTPServer):
    """The endpoint's HTTP server, forwarding to the llama.cpp server at ``upstream``."""

    daemon_threads = True
    request_queue_size = 128  # a burst of clients is not refused (the default backlog is 5)

    def __init__(self, port: int, upstream: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.upstream = urllib.parse.urlsplit(upstream)
        self.sample: int | None = None  # the running sample of a sampled test (SAMPLE_PATH)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when the client hung up first (it timed out, or was cancelled)."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: Endpoint
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        self._forward("GET", self.path, None)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        if path == SAMPLE_PATH:
            self._sample(raw)
        elif path.endswith("/chat/completions"):
            self._chat(raw)
        elif api := next((n for p, n in _ELSEWHERE.items() if path.endswith(p)), None):
            self._send(400, refusal(_elsewhere(api, path)), "application/json")
        else:
            self._forward("POST", self.path, raw)

    def _sample(self, raw: bytes) -> None:
        """Note the running sample (``SAMPLE_PATH``: ``{"sample": n}``, null for none)."""
        try:
            sample = json.loads(raw or b"null").get("sample")
        except (ValueError, AttributeError):
            sample = ""
        if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int)):
            message = 'the body must be {"sample": <a whole number, or null>}'
            self._send(400, refusal(message, "sample"), "application/json")
            return
        self.server.sample = sample
        self._send(200, b"{}", "application/json")

    def _chat(self, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._send(400, refusal("the request body is not JSON"), "application/json")
            return
        try:
            request, offered = adapt(body, self.server.sample)
        except UnsupportedRequest as refused:
            self._send(400, refusal(str(refused), refused.param), "application/json")
            return
        if not offered:
            self._forward("POST", self.path, json.dumps(request).encode())
            return
        streamed = bool(request.pop("stream", False))
        include_usage = bool((request.pop("stream_options", None) or {}).get("include_usage"))
        with self._ask("POST", self.path, json.dumps(request).encode()) as response:
            if response is None:
                return
            status, body = response.status, response.read()
        if status >= 300:
            self._refused(status, body)
            return
        data = tool_reply(json.loads(body), request)
        if streamed:
            self._stream_events(as_stream(data, include_usage))
        else:
            self._send(200, json.dumps(data).encode(), "application/json")

    def _forward(self, method: str, path: str, body: bytes | None) -> None:
        with self._ask(method, path, body) as response:
            if response is None:
                return
            if response.status >= 400 and response.status != 503:
                self._refused(response.status, response.read())
                return
            kind = response.getheader("Content-Type") or "application/json"
            if kind.startswith("text/event-stream"):
                self._stream_events(iter(lambda: response.read1(65536), b""), kind)
            else:
                self._send(response.status, response.read(), kind)

    @contextlib.contextmanager
    def _ask(
        self, method: str, path: str, body: bytes | None
    ) -> Iterator[http.client.HTTPResponse | None]:
        """Send the request upstream: its response, or None (a 502 was sent)."""
        upstream = self.server.upstream
        connection = http.client.HTTPConnection(
            upstream.hostname or "127.0.0.1", upstream.port, timeout=_UPSTREAM_TIMEOUT
        )
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
        except TimeoutError:
            message = (
                f"the embedded model's server (llama.cpp at {upstream.netloc}) is alive but "
                f"gave no answer within {_UPSTREAM_TIMEOUT:g} s: it serves one request at a "
                "time, and this one waited behind others or asked for a long reply. Ask for "
                "fewer tokens (max_tokens), or fewer requests at once"
            )
            self._send(504, refusal(message), "application/json")
            response = None
        except OSError as error:
            message = (
                f"the embedded model's server (llama.cpp at {upstream.netloc}) did not answer "
                f"({error}): it is not running; the test's report says how it died"
            )
            self._send(502, refusal(message), "application/json")
            response = None
        try:
            yield response
        finally:
            connection.close()

    def _refused(self, status: int, body: bytes) -> None:
        self._send(400, refusal(_upstream_message(status, body)), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream_events(self, pieces: Iterator[bytes], kind: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in pieces:
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _elsewhere(api: str, path: str) -> str:
    return (
        f"the embedded model speaks OpenAI Chat Completions only (POST /v1/chat/completions), "
        f"not {api} (POST {path}). Point the client at Chat Completions (the OpenAI Agents "
        "SDK: set_default_openai_api('chat_completions')), or record this test with a "
        "provider's model (--harness-model=...)."
    )


def main(argv: Sequence[str]) -> None:
    """``python -m pytest_harness._local.endpoint UPSTREAM PORT``: serve until killed."""
    upstream, port = argv
    with Endpoint(int(port), upstream) as server:
        server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main(sys.argv[1:])
