"""What a replayed test used of its cassette, what it left unused, and what ran live.

A replay is complete when the code under test asked for every recording and nothing ran
outside the cassette. At the end of a replayed test, ``record`` is its report row: how many
recordings it played of each kind (HTTP calls, recorded tools, MCP messages), each one it
did not play, and what ran live beside the cassette (an orchestrator tool that is not
recorded, a subprocess, a connection the network guard let through or blocked, a request to
a host whose traffic passes through). Under strict replay (``harness_strict_replay``) an
unused recording fails the test (``unused_problem``).

``watch_processes`` notes each process started while a test replays, through an audit hook
(``sys.addaudithook``: ``subprocess.Popen``, ``os.system``, ``os.spawn*``), which sees them
whatever started them (asyncio, anyio, an SDK).

Pure functions over a cassette's stored interactions, but for the audit hook; it never raises.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote, urlsplit

from pytest_harness import _wire
from pytest_harness._cassettes import bodies
from pytest_harness._cassettes.matching import SEAM_FIELD

REPLAY_PROPERTY = "harness_replay"
COUNTED = ("http", "tools", "mcp")  # what a test replays: HTTP calls, recorded tools, MCP
_WIDTH = 100  # a recording or a live run, as a report line shows it at most


def kind(interaction: Mapping[str, Any]) -> str:
    """What a stored interaction is (``COUNTED``): a recorded tool's call (``tool:`` URI), an
    MCP message (over stdio, ``stdio:`` URI, or JSON-RPC over HTTP), else an HTTP call."""
    request = interaction["request"]
    scheme = urlsplit(str(request["uri"])).scheme
    if scheme == "tool":
        return "tools"
    if scheme == "stdio" or _json_rpc(_body(request)):
        return "mcp"
    return "http"


def described(interaction: Mapping[str, Any]) -> str:
    """One line naming a stored interaction: ``tool lookup({"order": "A-1"})``, ``MCP
    stdio:python server.py tools/call add({"a": 1})``, or ``POST https://host/path (model
    m)``; ``(the harness's own call)`` after a call of the model seam."""
    request = interaction["request"]
    uri, data = str(request["uri"]), _body(request)
    parts = urlsplit(uri)
    if parts.scheme == "tool":
        arguments = data.get("arguments", data)
        return _clip(f"tool {unquote(parts.path)}({_compact(arguments)})")
    where = uri.partition("?")[0]
    if _json_rpc(data):
        params = _wire.as_dict(data.get("params"))
        called = ""
        if data.get("method") == "tools/call":
            called = f" {_wire.as_str(params.get('name'))}({_compact(params.get('arguments'))})"
        return _clip(f"MCP {where} {_wire.as_str(data.get('method'))}{called}")
    api = _wire.request_api(uri, bodies.body_bytes(request.get("body")))
    model = _wire.request_model(uri, data, api)
    shown = f"{str(request.get('method', '')).upper()} {where}"
    shown += f" (model {model})" if model else ""
    if interaction.get(SEAM_FIELD) is not None:
        shown += " (the harness's own call)"
    return _clip(shown)


def record(
    test: str,
    cassette: str,
    played: Iterable[tuple[int, Mapping[str, Any], bool]],
    live: Sequence[str],
    *,
    strict: bool,
    shared: bool,
) -> dict[str, Any]:
    """A replayed test's report row.

    Args:
        test: its node id.
        cassette: its cassette's path, as reports show it.
        played: each recording of the file replay could play: its index, the interaction,
            and whether the test played it (``HarnessCassette.played``).
        live: what ran live beside the cassette, in order (repeats are shown once).
        strict: whether strict replay was in force.
        shared: a named cassette, which other tests replay too.

    Returns:
        ``{"test", "cassette", "replayed": {kind: count}, "unused": [{"interaction",
        "kind", "what"}], "live": [...], "strict", "shared"}`` (``interaction`` counts from 1,
        as the file's order).
    """
    replayed = dict.fromkeys(COUNTED, 0)
    unused = []
    for index, interaction, used in played:
        found = kind(interaction)
        if used:
            replayed[found] += 1
        else:
            unused.append({"interaction": index + 1, "kind": found, "what": described(interaction)})
    return {
        "test": test,
        "cassette": cassette,
        "replayed": replayed,
        "unused": unused,
        "live": list(dict.fromkeys(live)),
        "strict": strict,
        "shared": shared,
    }


def unused_problem(row: Mapping[str, Any], rerecord: str) -> str | None:
    """Why a test under strict replay fails: the recordings it did not use; None when it
    used them all, when strict replay is off, or for a shared cassette (other tests' are in it).

    ``rerecord``: the command that records the test again from scratch
    (``CassetteSlot.rerecord_command``).
    """
    unused = row["unused"]
    if not row["strict"] or row["shared"] or not unused:
        return None
    lines = [
        f"strict replay: {row['test']} did not use {len(unused)} of the recordings in "
        f"{row['cassette']}; the code under test asked for less than it did when recorded:",
        *(f"    interaction {u['interaction']}: {u['what']}" for u in unused[:10]),
    ]
    if len(unused) > 10:
        lines.append(f"    ... and {len(unused) - 10} more")
    lines.append(
        f"If the change is intended, record the test again from scratch: {rerecord} "
        "(--harness-record=new would keep them). To allow unused recordings: "
        "@pytest.mark.harness(strict_replay=False), or harness_strict_replay = false in the "
        "ini file."
    )
    return "\n".join(lines)


def replay_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The terminal section: each replayed test that left recordings unused or ran something
    live, then the session's counts; "" when every replay was complete."""
    shown = [r for r in rows if r["unused"] or r["live"]]
    if not shown:
        return ""
    from pytest_harness._report.text import tabulate

    table = [
        [r["test"], "\n".join(u["what"] for u in r["unused"]) or "-", "\n".join(r["live"]) or "-"]
        for r in shown
    ]
    drawn = tabulate(table, headers=["test", "recordings not used", "ran live"])
    return drawn + "\n" + counts(rows)


def counts(rows: Sequence[Mapping[str, Any]]) -> str:
    """``12 tests replayed: 30 HTTP calls, 4 tool calls, 6 MCP messages · 1 left recordings
    unused · 2 ran something live``."""
    total = {name: sum(r["replayed"].get(name, 0) for r in rows) for name in COUNTED}
    unused = sum(1 for r in rows if r["unused"])
    live = sum(1 for r in rows if r["live"])
    replayed = ", ".join(
        [
            _counted(total["http"], "HTTP call"),
            _counted(total["tools"], "tool call"),
            _counted(total["mcp"], "MCP message"),
        ]
    )
    return (
        f"{_counted(len(rows), 'test')} replayed: {replayed} · {unused} left recordings "
        f"unused · {live} ran something live"
    )


def _counted(number: int, thing: str) -> str:
    return f"{number} {thing}" + ("" if number == 1 else "s")


def junit_property(row: Mapping[str, Any]) -> tuple[str, str]:
    return (REPLAY_PROPERTY, json.dumps(row, sort_keys=True, default=str))


def _body(request: Mapping[str, Any]) -> dict[str, Any]:
    stored = request.get("body")
    if isinstance(stored, Mapping) and "json" in stored:  # stored as JSON: read as it is
        return _wire.as_dict(stored["json"])
    raw = bodies.body_bytes(stored)
    return _wire.as_dict(_wire.loads(_wire.decode(raw)))


def _json_rpc(data: Mapping[str, Any]) -> bool:
    return data.get("jsonrpc") == "2.0" and isinstance(data.get("method"), str)


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


# Processes started while a test replays: an audit hook, added once, that tells the latest
# listener (the test replaying now).
_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.spawn"})
_listeners: list[Callable[[str], None]] = []
# Set while a start that its starter notes itself runs (an MCP server over stdio, ``live``).
_noted_elsewhere: ContextVar[bool] = ContextVar("harness_noted_elsewhere", default=False)
_lock = threading.Lock()
_hooked = False


def watch_processes(note: Callable[[str], None]) -> Callable[[], None]:
    """Tell ``note`` each process started from now on (``subprocess: COMMAND``); returns
    what stops it. An audit hook cannot be removed: it is added once, and does nothing
    while no one listens."""
    global _hooked
    with _lock:
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
        _listeners.append(note)

    def stop() -> None:
        with _lock:
            if note in _listeners:
                _listeners.remove(note)

    return stop


@contextmanager
def noted_elsewhere() -> Iterator[None]:
    """The processes started in the block (in this thread or task) are not noted: their
    starter notes them, better named (an MCP server over stdio run live)."""
    token = _noted_elsewhere.set(True)
    try:
        yield
    finally:
        _noted_elsewhere.reset(token)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event not in _EVENTS or not _listeners or _noted_elsewhere.get():
        return
    try:  # an audit hook that raises would stop the process from starting
        if _asked_by_platform(inspect.currentframe()):
            return
        listener = _listeners[-1]
        listener(f"subprocess: {_command(event, args)}")
    except Exception:  # the note is lost; the process still starts
        return


def _asked_by_platform(frame: Any) -> bool:
    """Whether the standard library's ``platform`` starts it (``uname -p``, for the machine
    an SDK names in its headers): a question about this machine, not the code under test's."""
    while frame is not None:
        if frame.f_globals.get("__name__") == "platform":
            return True
        frame = frame.f_back
    return False


def _command(event: str, args: tuple[Any, ...]) -> str:
    """The command line of an audited start, secret values of the environment masked."""
    if event == "os.system":
        words = [os.fsdecode(args[0])]
    elif event == "os.spawn":  # (mode, path, args, env)
        words = [os.fsdecode(w) for w in (args[2] or [args[1]])]
    else:  # subprocess.Popen: (executable, args, cwd, env)
        program, argv = args[0], args[1]
        if isinstance(argv, (str, bytes, os.PathLike)):
            argv = [argv]
        words = [os.fsdecode(w) for w in argv or [program]]
    if words:
        words[0] = os.path.basename(words[0])
    text = " ".join(words)
    from pytest_harness._cassettes.scrub import secret_values_from_env

    for secret in secret_values_from_env(os.environ):
        text = text.replace(secret, "REDACTED")
    return _clip(text)
