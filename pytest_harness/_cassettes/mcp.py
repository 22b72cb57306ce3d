"""MCP tool calls in recorded HTTP traffic, and the MCP traffic a cassette cannot record.

An application that calls tools on an MCP server over streamable HTTP sends JSON-RPC over
plain HTTP: the cassette records and replays it like any other traffic (the answers as JSON
or as server-sent events, the ``Mcp-Session-Id`` header included). Three things are MCP's own:

- ``recognise`` reads one interaction: a ``tools/call`` request and its answer (JSON, or the
  event of an SSE stream that answers the request's id) as a ``ToolRun``: the tool, its
  arguments, its result as text, the error when it failed (``isError``, or a JSON-RPC
  error). ``harness.trajectory`` shows each run as a tool execution. Like ``_wire``, it
  never raises.
- ``standing_stream`` tells the standalone ``GET`` stream a session opens for messages the
  server sends unasked. It never ends while the session lives, so it cannot be recorded as
  an interaction: the cassette answers it ``405 Method Not Allowed`` itself, in recording
  and replay alike (``NOT_OFFERED``). The MCP specification lets a server answer so when it
  offers no such stream; clients go on without it. Answers to requests, and the progress
  and log messages sent while a request runs, come on the request's own stream: recorded.
- ``StdioGuard``: MCP over stdio talks to a subprocess through pipes, not HTTP. While a
  cassette is open, mcp's stdio client starts its server through the latest guard
  installed: this one raises ``UnrecordableTraffic`` naming the server's command and the
  fixes (``mcp_stdio="error"``); ``stdio``'s guards record, replay or note it instead.

It imports the standard library and ``_wire``'s readers only; ``mcp`` is patched only when
the application has imported it.
"""

from __future__ import annotations

import importlib.abc
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, ClassVar, TypeAlias

from pytest_harness._wire import as_dict, as_dicts, as_str, decode, loads
from pytest_harness._wire.sse import json_events

SESSION_HEADER = "mcp-session-id"
STDIO_SCHEME = "stdio:"  # the URI of an exchange with an MCP server over stdio
_LAST = object()  # the answer to read is the last one
_PROTOCOL_HEADER = "mcp-protocol-version"
_STDIO = "mcp.client.stdio"
_SPAWN = "_create_platform_compatible_process"  # what mcp's stdio_client starts the server with
# start(command, args, **options): a server over stdio, as mcp's spawn starts it.
Spawn: TypeAlias = Callable[..., Awaitable[Any]]
NOT_OFFERED: dict[str, Any] = {
    "status": {"code": 405, "message": "Method Not Allowed"},
    "headers": {"content-type": ["text/plain"], "content-length": ["0"]},
    "body": {"string": b""},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    """One tool call the application made on an MCP server, and what it answered.

    Attributes:
        server: the server's URL (without its query).
        id: the JSON-RPC request id, as text.
        name: the tool's name.
        arguments: the arguments sent.
        result: the result as text: its text contents, joined; else its structured content
            as JSON; "" when it has neither.
        error: the error text when the call failed (the server's ``isError`` result, or a
            JSON-RPC error), else None.
        replayed: played from the cassette (else recorded now).
        latency_s: how long the call took (as recorded, in replay), or None when unknown.
        after: how many of the application's model requests came before it (set by the watch).
    """

    server: str
    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str
    error: str | None = None
    replayed: bool = False
    latency_s: float | None = None
    after: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


def recognise(
    method: str,
    uri: str,
    request_body: bytes | str | None,
    response: Mapping[str, Any],
    *,
    replayed: bool = False,
) -> ToolRun | None:
    """The MCP tool call in one interaction (its response as a cassette file stores it), or None."""
    call = as_dict(loads(decode(request_body))) if method.upper() == "POST" else {}
    # Over stdio the request is stored without its id (``stdio``): its answer is the last.
    asked = call.get("id", _LAST if uri.startswith(STDIO_SCHEME) else None)
    if call.get("jsonrpc") != "2.0" or call.get("method") != "tools/call" or asked is None:
        return None
    params = as_dict(call.get("params"))
    body = decode(as_dict(response.get("body")).get("string"))
    answer = _answer(body or "", asked)
    if answer is None:
        return None
    status = as_dict(response.get("status")).get("code")
    result, error = _outcome(answer, status)
    latency = response.get("latency_s")
    return ToolRun(
        server=uri.partition("?")[0],
        id=json.dumps(answer.get("id")),
        name=as_str(params.get("name")),
        arguments=as_dict(params.get("arguments")),
        result=result,
        error=error,
        replayed=replayed,
        latency_s=latency if isinstance(latency, (int, float)) else None,
    )


def _answer(body: str, request_id: Any) -> dict[str, Any] | None:
    """The JSON-RPC response to ``request_id``: the body itself, or one of its events."""
    sent = loads(body)
    if sent is None:
        sent = [data for _, data in json_events(body)]
    messages = sent if isinstance(sent, list) else [sent]
    answers = [m for m in as_dicts(messages) if "result" in m or "error" in m]
    if request_id is _LAST:
        return answers[-1] if answers else None
    return next((m for m in answers if m.get("id") == request_id), None)


def _outcome(answer: dict[str, Any], status: Any) -> tuple[str, str | None]:
    if "error" in answer:
        error = as_dict(answer.get("error"))
        text = as_str(error.get("message")) or json.dumps(answer.get("error"), default=str)
        code = error.get("code")
        return "", f"{text} (JSON-RPC error {code})" if isinstance(code, int) else text
    result = as_dict(answer.get("result"))
    texts = [as_str(part.get("text")) for part in as_dicts(result.get("content"))]
    text = "\n".join(t for t in texts if t)
    if not text and "structuredContent" in result:
        text = json.dumps(result["structuredContent"], default=str)
    if result.get("isError") is True:
        return text, text or "the tool failed (isError, no text)"
    if isinstance(status, int) and status >= 400:
        return text, f"HTTP {status}"
    return text, None


def standing_stream(method: str, headers: Mapping[str, Any]) -> bool:
    """The standalone GET stream of an MCP session (server messages sent unasked)."""
    if method.upper() != "GET":
        return False
    names = {str(name).lower(): value for name, value in headers.items()}
    accept = names.get("accept", "")
    accept = " ".join(accept) if isinstance(accept, list) else str(accept)
    mcp = SESSION_HEADER in names or _PROTOCOL_HEADER in names
    return mcp and "text/event-stream" in accept


class StdioGuard:
    """Starts MCP servers over stdio as the open cassette says (``install`` ... ``remove``).

    Cassettes may be open at once in one process and close in any order: mcp's function is
    patched while any guard is installed (once the application imports mcp's stdio client,
    should it do so later: ``_Patcher``), and put back when the last is removed. The latest
    guard (the test running now) starts the server.

    Args:
        refuse: builds the error to raise from the server's command line.
        start: starts the server in place of mcp's spawn (``stdio.spawn``, with the same
            arguments); None: the error ``refuse`` builds is raised.
    """

    _installed: ClassVar[list[StdioGuard]] = []
    _module: ClassVar[Any] = None
    _original: ClassVar[Any] = None
    _lock: ClassVar[threading.RLock] = threading.RLock()

    def __init__(self, refuse: Callable[[str], BaseException], start: Spawn | None = None) -> None:
        self.refuse, self.start = refuse, start

    def install(self) -> None:
        """Patch mcp's stdio client now, or once the application imports it."""
        with self._lock:
            self._installed.append(self)
            if len(self._installed) == 1:
                module = sys.modules.get(_STDIO)
                if module is None:
                    sys.meta_path.insert(0, _PATCHER)
                else:
                    _patch(module)

    def remove(self) -> None:
        with self._lock:
            if self not in self._installed:
                return
            self._installed.remove(self)
            if not self._installed:
                if _PATCHER in sys.meta_path:
                    sys.meta_path.remove(_PATCHER)
                if StdioGuard._module is not None:
                    setattr(StdioGuard._module, _SPAWN, StdioGuard._original)
                StdioGuard._module = StdioGuard._original = None

    async def spawn(self, command: str, args: list[str], **options: Any) -> Any:
        """Start the server ``command args`` (mcp's spawn's ``options``: env, errlog, cwd)."""
        __tracebackhide__ = True  # its options hold the server's environment
        if self.start is None:
            raise self.refuse(" ".join([str(command), *map(str, args or ())]))
        return await self.start(command, args, **options)

    @classmethod
    def original(cls) -> Any:
        """mcp's own spawn (while any guard is installed)."""
        return cls._original


def _patch(module: ModuleType) -> None:
    with StdioGuard._lock:
        original = getattr(module, _SPAWN, None)
        if original is None or not StdioGuard._installed:
            return  # another mcp, or every guard was removed while it loaded
        StdioGuard._module, StdioGuard._original = module, original
        setattr(module, _SPAWN, _spawn)


async def _spawn(command: str, args: Any = (), *rest: Any, **options: Any) -> Any:
    """In place of mcp's stdio spawn: the latest guard installed starts the server."""
    __tracebackhide__ = True  # its arguments hold the server's environment
    names = ("env", "errlog", "cwd")  # mcp's spawn's parameters after ``args``
    options.update(zip(names, rest, strict=False))
    return await StdioGuard._installed[-1].spawn(command, list(args or ()), **options)


class _Patcher(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while guards wait for mcp's stdio client to be imported:
    finds it with the other finders, and patches it once it has loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _STDIO:
            return None
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec: ModuleSpec | None = find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    """mcp's stdio client's own loader, patching the module once it has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


_PATCHER = _Patcher()
