"""MCP over stdio, recorded and replayed (``harness_mcp_stdio``).

mcp's ``stdio_client`` (used directly, by openai-agents' ``MCPServerStdio``, and by fastmcp's
``StdioTransport``, pydantic-ai's ``MCPToolset``'s) starts its server through the spawn
``mcp.StdioGuard`` patches while a cassette is open; ``spawn`` starts it as the test's
setting says:

- ``record``: recording, the real server runs behind ``_Tapped``, which reads each JSON-RPC
  line both ways; replay starts no process: ``_Replayed`` answers each request from the
  cassette (a miss is answered with a JSON-RPC error, and the test fails with the miss).
- ``live``: the real server, unrecorded; noted (``ran_live``) when the test replays.

One exchange is one client request and the server's messages up to its response, stored as
an interaction: method POST, the URI ``server_uri`` makes (``stdio:python server.py``), the
request without its ``id`` and progress token as the body (what is matched), and as the
response body the JSON list of the server's messages, its response last. Notifications and
the client's replies to the server's requests are not stored; the server's environment never.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import PureWindowsPath
from typing import Any, Protocol

import anyio
from anyio.abc import Process

from pytest_harness._cassettes.mcp import STDIO_SCHEME, StdioGuard
from pytest_harness._cassettes.replayed import noted_elsewhere
from pytest_harness._wire import as_dict, as_dicts, loads
from pytest_harness.errors import HarnessError, HarnessStop

_PYTHON = re.compile(r"python[0-9.]*$")  # python, python3, python3.11: one interpreter
_ABSOLUTE = re.compile(r"^([/~]|\.\.?[/\\]|[A-Za-z]:[/\\]|\\\\)")  # a path of this machine
# JSON-RPC's error codes for what replay cannot answer.
_PARSE_ERROR, _INVALID_REQUEST, _NOT_REPLAYED = -32700, -32600, -32603


class Slot(Protocol):
    """What a test's cassette does for its MCP servers over stdio (``slot.CassetteSlot``)."""

    mode: str

    def lookup(self, uri: str, body: bytes) -> tuple[Any, bytes | None]: ...

    def keep(self, request: Any, answer: bytes) -> None: ...

    def ran_live(self, what: str) -> None: ...


async def spawn(slot: Slot, setting: str, command: str, args: list[str], **options: Any) -> Any:
    """The server ``command args`` of the test of ``slot``, as ``setting`` (``record`` or
    ``live``) says: a process, or what stands for it (mcp's spawn's ``options``)."""
    uri = server_uri(command, args)
    if setting == "live":
        slot.ran_live(f"MCP server over stdio: {uri.removeprefix(STDIO_SCHEME)}")
        with noted_elsewhere():  # noted above: not again as a mere subprocess
            return await StdioGuard.original()(command, args, **options)
    if slot.mode == "none":
        return _Replayed(_Answerer(slot, uri))
    process = await StdioGuard.original()(command, args, **options)
    return _Tapped(process, _Exchanges(slot, uri))


def server_uri(command: str, args: Sequence[str]) -> str:
    """The URI naming a server over stdio in a cassette, the same on every machine: its
    command and arguments, a path of this machine reduced to its file name, any Python
    interpreter named ``python``: ``stdio:python server.py``."""
    name = PureWindowsPath(command).name.removesuffix(".exe")  # either separator
    name = "python" if _PYTHON.match(name) else name
    return STDIO_SCHEME + shlex.join([name, *map(_portable, args)])


def _portable(arg: str) -> str:
    flag, equals, value = arg.partition("=")
    if equals and flag.startswith("-"):
        return flag + equals + _portable(value)
    return PureWindowsPath(arg).name if _ABSOLUTE.match(arg) else arg


def matched_body(message: dict[str, Any]) -> bytes:
    """A client request as stored and matched: without its ``id`` and its progress token,
    which differ from run to run."""
    body = {key: value for key, value in message.items() if key != "id"}
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(params, dict) and isinstance(meta, dict) and "progressToken" in meta:
        kept = {key: value for key, value in meta.items() if key != "progressToken"}
        rest = {key: value for key, value in params.items() if key != "_meta"}
        body["params"] = {**rest, "_meta": kept} if kept else rest
    return json.dumps(body).encode()


class _Lines:
    """Splits a byte stream into its lines (one JSON-RPC message each)."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        *lines, self._rest = (self._rest + data).split(b"\n")
        return [line for line in lines if line.strip()]


def _message(line: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a line, or {} when it is none."""
    return as_dict(loads(line.decode("utf-8", "replace")))


def _key(message_id: Any) -> str:
    return json.dumps(message_id, sort_keys=True)


# Recording.


class _Exchanges:
    """Recording: pairs each client request with the server's messages up to its response.

    The server's notifications and requests sent while requests are open belong to the
    latest one sent (the one open, when the client sends one at a time).
    """

    def __init__(self, slot: Slot, uri: str) -> None:
        self.slot, self.uri = slot, uri
        # Each open request by its id: the request to keep (None: ``new`` played it), and
        # the server's messages so far.
        self._open: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
        self._sent, self._received = _Lines(), _Lines()

    def sent(self, data: bytes) -> None:
        """What the client wrote to the server's stdin."""
        for line in self._sent.feed(data):
            message = _message(line)
            if "method" not in message or "id" not in message:
                continue  # a notification, or a reply to the server: not stored
            request, played = self.slot.lookup(self.uri, matched_body(message))
            self._open[_key(message["id"])] = (None if played is not None else request, [])

    def received(self, data: bytes) -> None:
        """What the server wrote to its stdout."""
        for line in self._received.feed(data):
            message = _message(line)
            if "method" in message or "id" not in message:  # a notification or a request
                if self._open and message:
                    list(self._open.values())[-1][1].append(message)
                continue
            request, messages = self._open.pop(_key(message["id"]), (None, []))
            if request is not None:
                self.slot.keep(request, json.dumps([*messages, message]).encode())


class _TappedStdin:
    def __init__(self, stream: Any, tap: Callable[[bytes], None]) -> None:
        self._stream, self._tap = stream, tap

    async def send(self, data: bytes) -> None:
        self._tap(data)  # first: the answer may come before ``send`` returns
        await self._stream.send(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # aclose and the rest, as they are


class _TappedStdout:
    def __init__(self, stream: Any, tap: Callable[[bytes], None]) -> None:
        self._stream, self._tap = stream, tap

    async def receive(self) -> bytes:
        data: bytes = await self._stream.receive()
        self._tap(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Tapped(Process):
    """The real server's process, its stdin and stdout read by ``_Exchanges``."""

    def __init__(self, process: Process, exchanges: _Exchanges) -> None:
        self._real = process
        self._stdin = _TappedStdin(process.stdin, exchanges.sent)
        self._stdout = _TappedStdout(process.stdout, exchanges.received)
        # mcp closes the asyncio transport it finds there (``_close_subprocess_transport``).
        self._process = getattr(process, "_process", None)

    async def wait(self) -> int:
        return await self._real.wait()

    def terminate(self) -> None:
        self._real.terminate()

    def kill(self) -> None:
        self._real.kill()

    def send_signal(self, signal: Any) -> None:
        self._real.send_signal(signal)

    async def aclose(self) -> None:
        await self._real.aclose()

    @property
    def pid(self) -> int:
        return self._real.pid

    @property
    def returncode(self) -> int | None:
        return self._real.returncode

    @property
    def stdin(self) -> Any:
        return self._stdin

    @property
    def stdout(self) -> Any:
        return self._stdout

    @property
    def stderr(self) -> Any:
        return self._real.stderr


# Replay.


class _Answerer:
    """Replay: the server's recorded messages answering each line the client sends."""

    def __init__(self, slot: Slot, uri: str) -> None:
        self.slot, self.uri = slot, uri

    def answer(self, line: bytes) -> list[dict[str, Any]]:
        """The messages answering ``line``: none for a notification or a reply to the
        server; a JSON-RPC error for what is no request or was not recorded."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as error:
            return [_error(None, _PARSE_ERROR, f"{self.uri} got a line that is not JSON: {error}")]
        if not isinstance(message, dict):
            kind = type(message).__name__
            text = f"{self.uri} got a {kind}; a JSON-RPC message is an object"
            return [_error(None, _INVALID_REQUEST, text)]
        if "method" not in message or "id" not in message:
            return []  # a notification, or a reply to the server: the recording needs neither
        try:
            _, answer = self.slot.lookup(self.uri, matched_body(message))
        except (HarnessError, HarnessStop) as error:  # a miss (the test fails with it too)
            return [_error(message["id"], _NOT_REPLAYED, self._unanswered(message, error))]
        if answer is None:
            text = f"{self.uri}: the test's cassette is closed, nothing answers any more"
            return [_error(message["id"], _NOT_REPLAYED, text)]
        return _remapped(answer, message, self.uri)

    def _unanswered(self, message: dict[str, Any], error: BaseException) -> str:
        """What the client is told of a request the cassette could not answer."""
        asked = f"{message.get('method')} {json.dumps(message.get('params'), default=str)}"
        asked = asked if len(asked) <= 300 else asked[:297] + "..."
        first = str(error).partition("\n")[0]  # the test fails with the whole of it
        return f"{self.uri} replayed, {asked} was not answered: {type(error).__name__}: {first}"


def _remapped(answer: bytes, request: dict[str, Any], uri: str) -> list[dict[str, Any]]:
    """The recorded messages, the response given the request's id and the progress
    notifications its progress token."""
    recorded = loads(answer.decode("utf-8", "replace"))
    messages = [dict(m) for m in as_dicts(recorded if isinstance(recorded, list) else [recorded])]
    if not messages or not ({"result", "error"} & messages[-1].keys()):
        text = f"{uri}: the recording of this request holds no response (edited by hand?)"
        return [*messages, _error(request["id"], _NOT_REPLAYED, text)]
    messages[-1]["id"] = request["id"]
    token = as_dict(as_dict(request.get("params")).get("_meta")).get("progressToken")
    for message in messages:
        if token is not None and message.get("method") == "notifications/progress":
            message["params"] = {**as_dict(message.get("params")), "progressToken": token}
    return messages


def _error(message_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": text}}


class _ReplayedStdin:
    def __init__(self, process: _Replayed, answerer: _Answerer) -> None:
        self._process, self._answerer, self._lines = process, answerer, _Lines()

    async def send(self, data: bytes) -> None:
        if self._process.returncode is not None:
            raise anyio.ClosedResourceError
        for line in self._lines.feed(data):
            for message in self._answerer.answer(line):
                self._process.write(message)

    async def aclose(self) -> None:
        self._process.exit()


class _Replayed(Process):
    """No process: its stdout gives the recorded answers to what its stdin is sent; it
    exits (0) when its stdin closes."""

    def __init__(self, answerer: _Answerer) -> None:
        # Unbounded: answering a request never waits for the client to read the last answer.
        self._out, self._stdout = anyio.create_memory_object_stream[bytes](math.inf)
        self._stdin = _ReplayedStdin(self, answerer)
        self._code: int | None = None
        self._exited = anyio.Event()

    def write(self, message: dict[str, Any]) -> None:
        self._out.send_nowait((json.dumps(message) + "\n").encode())

    def exit(self) -> None:
        if self._code is None:
            self._code = 0
        self._out.close()  # the client reads to the end of what it was sent
        self._exited.set()

    async def wait(self) -> int:
        await self._exited.wait()
        return self.returncode or 0

    def terminate(self) -> None:
        self.exit()

    def kill(self) -> None:
        self.exit()

    def send_signal(self, signal: Any) -> None:
        self.exit()

    async def aclose(self) -> None:
        self.exit()
        self._stdout.close()

    @property
    def pid(self) -> int:
        return 0

    @property
    def returncode(self) -> int | None:
        return self._code

    @property
    def stdin(self) -> Any:
        return self._stdin

    @property
    def stdout(self) -> Any:
        return self._stdout

    @property
    def stderr(self) -> None:
        return None
