"""Session persistence: real SQLite files, real runs against the loopback model server.

The store is inspected the way another process would see it: through a second connection
(another ``SessionStore`` or plain ``sqlite3`` on the same file), never through the store's
own memory. Resuming after a clean end and after a crash happens in a new Python process.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import HarnessError, SessionStoreError, UnknownSession
from pytest_harness.orchestrator import _pipeline as pipeline
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import defaults
from pytest_harness.orchestrator._sessions import (
    STEER_PREFIX,
    UNFINISHED,
    SessionRecorder,
    SessionStore,
    resume,
    unanswered,
)
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def calls(*specs: tuple[str, Any]) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name=n, arguments=a) for n, a in specs])


def recorded(
    server: LoopbackServer, store: SessionStore, *tools: Any, **options: Any
) -> Orchestrator:
    """An orchestrator whose conversation is saved as session ``s1``."""
    stack = [*defaults(), SessionRecorder(store, "s1"), *options.pop("inner", ())]
    return Orchestrator(
        server.model, tools or [lookup], params=server.params, middleware=stack, **options
    )


Opener = Callable[..., SessionStore]


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Opener]:
    """Open a store (default: ``s.sqlite3`` in the test's folder); all are closed after."""
    stores: list[SessionStore] = []

    def open_store(path: Path | str = tmp_path / "s.sqlite3", **options: Any) -> SessionStore:
        stores.append(SessionStore(path, **options))
        return stores[-1]

    yield open_store
    for store in stores:
        store.close()


@contextmanager
def connected(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain ``sqlite3`` connection to ``path`` (as another program's), closed after."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def as_sent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as litellm sends them (a None content is left out)."""
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def conversation(size: int) -> list[dict[str, Any]]:
    """``size`` messages: user, assistant with a tool call, tool result, and again."""
    made: list[dict[str, Any]] = []
    for i in range(size):
        if i % 3 == 0:
            made.append(user(f"question {i}"))
        elif i % 3 == 1:
            function = {"name": "lookup", "arguments": f'{{"order": "A-{i}"}}'}
            call = {"id": f"call_{i}", "type": "function", "function": function}
            made.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            made.append({"role": "tool", "tool_call_id": f"call_{i - 1}", "content": "x" * 200})
    return made


# Saved around every request


def test_the_conversation_is_saved_before_each_request_and_after_each_response(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "sessions.sqlite3"
    at_request: list[list[dict[str, Any]]] = []  # what another process saw as each arrived
    during_tool: list[list[dict[str, Any]]] = []
    replies = iter([calls(("peek", {})), Reply(content="done")])

    def answer(body: dict[str, Any]) -> Reply:
        with opened(path) as other:
            at_request.append(other.load("s1"))
        return next(replies)

    @tool
    def peek() -> str:
        """Read the session from another connection."""
        with opened(path) as other:
            during_tool.append(other.load("s1"))
        return "peeked"

    server.handler = answer
    run = recorded(server, opened(path), peek).run("hi")
    called = run.messages[1]
    assert called["tool_calls"][0]["function"]["name"] == "peek"
    assert at_request == [[user("hi")], [user("hi"), called, run.messages[2]]]
    assert run.messages[2] == {"role": "tool", "tool_call_id": "call_0", "content": "peeked"}
    assert during_tool == [[user("hi"), called]]  # the response was saved before tools ran
    with opened(path) as other:
        assert other.load("s1") == list(run.messages)
        assert other.ids() == ["s1"]


# Resumed in another process

SCRIPT = '''
import os
import sys

from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import defaults
from pytest_harness.orchestrator._sessions import SessionRecorder, resume
from pytest_harness.orchestrator._sessions import SessionStore
from pytest_harness.orchestrator._tools import tool


@tool
def crash() -> str:
    """End the process at once, as a crash would."""
    os._exit(3)


path, url, message = sys.argv[1:]
store = SessionStore(path)
agent = Orchestrator(
    "openai/loopback",
    [crash],
    system_prompt="Be brief.",
    params={"api_base": url, "api_key": "loopback-not-a-secret"},
    middleware=[*defaults(), SessionRecorder(store, "s1")],
)
if store.exists("s1"):
    agent.messages[:] = resume(store, "s1")
print("OUTPUT:", agent.run(message).output)
'''


def run_script(
    tmp_path: Path, server: LoopbackServer, message: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    command = [sys.executable, str(script), str(tmp_path / "s.sqlite3"), server.url, message]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_a_session_resumed_in_a_new_process_continues_the_conversation(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    server.queue(Reply(content="Hello!"), Reply(content="Still here."))
    store = opened()
    agent = recorded(server, store, system_prompt="Be brief.")
    assert agent.run("hi").output == "Hello!"
    store.close()
    finished = run_script(tmp_path, server, "and now?")
    assert finished.returncode == 0, finished.stderr
    assert "OUTPUT: Still here." in finished.stdout
    earlier = [{"role": "system", "content": "Be brief."}, user("hi"), said("Hello!")]
    assert server.requests[1]["messages"] == [*earlier, user("and now?")]
    with opened() as other:
        assert other.load("s1") == [*earlier, user("and now?"), said("Still here.")]


def test_a_run_that_crashed_while_its_tools_ran_resumes_from_what_was_saved(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    server.queue(calls(("crash", {}), ("crash", {})), Reply(content="Recovered."))
    crashed = run_script(tmp_path, server, "start")
    assert crashed.returncode == 3  # the tool ended the process mid-batch
    store = opened()
    agent = recorded(server, store)
    agent.messages[:] = resume(store, "s1")
    assert agent.run("are you there?").output == "Recovered."
    sent = server.requests[1]["messages"]
    assert sent[:2] == [{"role": "system", "content": "Be brief."}, user("start")]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_0", "call_1"]
    error = f"Error: {UNFINISHED}"
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "call_0", "content": error},
        {"role": "tool", "tool_call_id": "call_1", "content": error},
        user("are you there?"),
    ]


def test_an_aborted_run_keeps_its_tool_results_and_resumes(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    holder: list[Orchestrator] = []

    @tool
    async def give_up() -> str:
        """Abort the run, as a user pressing stop would."""
        holder[0].abort()
        return "stopping"

    server.queue(
        calls(("lookup", {"order": "A-1"})),
        calls(("give_up", {}), ("lookup", {"order": "B-2"})),
        Reply(content="Back again."),
    )
    path = tmp_path / "s.sqlite3"
    holder.append(recorded(server, opened(path), lookup, give_up))
    run = holder[0].run("sort it out")
    assert run.stop_reason == "aborted"
    assert len(server.requests) == 2
    with opened(path) as other:
        saved = other.load("s1")
    assert saved == list(run.messages)
    # The results of the aborted batch were sent to no model: only the end-of-run save has them.
    assert [m["tool_call_id"] for m in saved[-2:]] == ["call_0", "call_1"]
    assert saved[2]["content"] == "A-1 shipped"
    again = recorded(server, opened(path), lookup, give_up)
    again.messages[:] = resume(opened(path), "s1")
    assert again.run("go on").output == "Back again."
    assert server.requests[2]["messages"] == as_sent([*saved, user("go on")])


# Incremental


AUDIT = """
CREATE TABLE audit (op TEXT, seq INTEGER);
CREATE TRIGGER audit_insert AFTER INSERT ON messages BEGIN
    INSERT INTO audit VALUES ('insert', NEW.seq); END;
CREATE TRIGGER audit_update AFTER UPDATE ON messages BEGIN
    INSERT INTO audit VALUES ('update', NEW.seq); END;
CREATE TRIGGER audit_delete AFTER DELETE ON messages BEGIN
    INSERT INTO audit VALUES ('delete', OLD.seq); END;
"""


def audited(path: Path) -> list[tuple[str, int]]:
    """The row changes of ``messages`` the triggers logged (and forget them)."""
    with connected(path) as db:
        rows = db.execute("SELECT op, seq FROM audit ORDER BY rowid").fetchall()
        db.execute("DELETE FROM audit")
    return rows


def test_a_save_writes_only_the_new_messages_of_a_long_session(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    messages = conversation(1000)
    store = opened(path)
    assert store.save("big", messages) == 1000
    with connected(path) as db:
        db.executescript(AUDIT)  # counted by SQLite itself, whatever the store reports
    messages += [user("one more"), said("sure")]
    assert store.save("big", messages) == 2
    assert audited(path) == [("insert", 1000), ("insert", 1001)]
    assert store.save("big", messages) == 0
    assert audited(path) == []
    # A store that never saw the session (a new process) also writes only what is new.
    fresh = opened(path)
    assert fresh.save("big", [*messages, user("and another")]) == 1
    assert audited(path) == [("insert", 1002)]
    loaded = fresh.load("big")
    assert fresh.save("big", [*loaded, said("ok")]) == 1
    assert audited(path) == [("insert", 1003)]
    assert opened(path).load("big") == [*messages, user("and another"), said("ok")]


def test_a_save_after_another_store_appended_writes_only_what_is_new(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    first, second = opened(path), opened(path)
    first.save("s1", [user("a")])
    second.save("s1", [user("a"), said("b")])
    assert first.save("s1", [user("a"), said("b"), user("c")]) == 1
    assert opened(path).load("s1") == [user("a"), said("b"), user("c")]


# Compaction


async def compact(call: pipeline.ModelCall, next: pipeline.Next) -> ModelResponse:
    """A compaction of the test's: older messages replaced by a summary, in place."""
    if len(call.messages) >= 3:
        call.messages[:] = [user("Summary: the user said first."), call.messages[-1]]
    return await next(call)


def test_a_compacted_conversation_is_saved_and_the_replaced_messages_kept(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    server.queue(Reply(content="one"), Reply(content="two"))
    path = tmp_path / "s.sqlite3"
    agent = recorded(server, opened(path), inner=[compact])
    agent.run("first")
    agent.run("second")
    summary = user("Summary: the user said first.")
    assert server.requests[1]["messages"] == [summary, user("second")]
    with opened(path) as other:
        assert other.load("s1") == agent.messages == [summary, user("second"), said("two")]
        (replaced,) = other.replaced("s1")
    assert replaced.at == 0
    assert replaced.messages == [user("first"), said("one"), user("second")]


def test_each_replacement_keeps_what_it_replaced_in_order(tmp_path: Path, opened: Opener) -> None:
    store = opened()
    store.save("s1", [user("a"), said("b"), user("c"), said("d")])
    assert store.save("s1", [user("a"), user("summary of b, c"), said("d")]) == 2
    assert store.save("s1", [user("a"), user("summary of all"), user("e")]) == 2
    first, second = store.replaced("s1")
    assert (first.at, first.messages) == (1, [said("b"), user("c"), said("d")])
    assert (second.at, second.messages) == (1, [user("summary of b, c"), said("d")])
    assert store.load("s1") == [user("a"), user("summary of all"), user("e")]


# Errors


def test_an_unknown_session_names_the_id_the_file_and_the_known_sessions(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    store = opened(path)
    with pytest.raises(UnknownSession) as empty:
        store.load("nope")
    assert str(empty.value) == (
        f"no session 'nope' in {path}; the store is empty. Check the id (a session exists "
        "once something was saved to it)."
    )
    store.save("first", [user("a")])
    store.save("second", [])
    for attempt in (store.load, store.metadata, store.delete, lambda sid: resume(store, sid)):
        with pytest.raises(UnknownSession, match="its latest sessions: 'second', 'first'\\."):
            attempt("nope")
    assert isinstance(empty.value, HarnessError)
    assert store.load("second") == []


GARBAGE = random.Random(0).randbytes(8192)


@pytest.mark.parametrize(
    "content", [GARBAGE, b"not a database, just text\n" * 200], ids=["bytes", "text"]
)
def test_a_file_that_is_not_a_database_is_reported_and_left_as_it_was(
    tmp_path: Path, content: bytes, opened: Opener
) -> None:
    path = tmp_path / "sessions.sqlite3"
    path.write_bytes(content)
    with pytest.raises(SessionStoreError) as failure:
        opened(path)
    message = str(failure.value)
    assert message.startswith(f"cannot open the session store: {path} is not a readable")
    assert "file is not a database" in message
    assert "Move it aside" in message
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["sessions.sqlite3"]


def test_a_path_that_cannot_be_opened_is_not_called_corrupt(tmp_path: Path, opened: Opener) -> None:
    with pytest.raises(SessionStoreError) as failure:
        opened(tmp_path)  # a folder
    assert str(failure.value) == (
        f"cannot open the session store: {tmp_path}: OperationalError: unable to open "
        "database file."
    )


def test_a_malformed_database_is_reported_and_nothing_is_written(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    with opened(path) as store:
        store.save("s1", conversation(1000))
    data = bytearray(path.read_bytes())
    for page in range(4096 * 2, len(data), 4096):  # every page after the schema's
        data[page : page + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    store = opened(path)
    with pytest.raises(SessionStoreError, match=r"malformed.*Move it aside"):
        store.load("s1")
    with pytest.raises(SessionStoreError, match="cannot save session 's1'"):
        store.save("s1", [user("new")])
    store.close()
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("setup", "problem"),
    [
        ("CREATE TABLE users (name TEXT)", r"schema 0, tables \['users'\]"),
        ("PRAGMA user_version = 7", "schema 7"),
    ],
    ids=["another-programs-database", "newer-schema"],
)
def test_a_database_that_is_not_a_usable_store_is_refused_untouched(
    tmp_path: Path, setup: str, problem: str, opened: Opener
) -> None:
    path = tmp_path / "other.db"
    with connected(path) as db:
        db.execute(setup)
    before = path.read_bytes()
    with pytest.raises(SessionStoreError, match=f"not a session store.*{problem}"):
        opened(path)
    assert path.read_bytes() == before


def test_a_locked_database_is_reported_and_nothing_saved_is_lost(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    store = opened(path, timeout=0.1)
    store.save("s1", [user("a"), said("b")])
    with connected(path) as holder:
        holder.execute("BEGIN EXCLUSIVE")  # another process writing
        with pytest.raises(SessionStoreError) as failure:
            store.save("s1", [user("a"), said("b"), user("c")])
        assert store.load("s1") == [user("a"), said("b")]  # readers do not wait (WAL)
    assert str(failure.value) == (
        f"cannot save session 's1': {path} is locked by another process or connection "
        "(waited 0.1 s). Nothing was written; try again once it is done, or wait longer "
        "with SessionStore(..., timeout=...)."
    )
    assert store.save("s1", [user("a"), said("b"), user("c")]) == 1
    assert opened(path).load("s1") == [user("a"), said("b"), user("c")]


def test_a_store_opened_while_another_process_holds_the_file_says_so(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    with connected(path) as holder:
        holder.execute("BEGIN EXCLUSIVE")  # a rollback-journal database: no reader gets in
        with pytest.raises(SessionStoreError, match=r"open the session store: .* is locked"):
            opened(path, timeout=0.1)
    assert opened(path).ids() == []


def test_a_message_that_is_not_json_is_refused_and_nothing_is_written(
    tmp_path: Path, opened: Opener
) -> None:
    store = opened()
    store.save("s1", [user("a")])
    with pytest.raises(SessionStoreError, match=r"cannot save .*A session holds JSON values"):
        store.save("s1", [user("a"), said("b"), {"role": "user", "content": {1, 2}}])
    assert opened().load("s1") == [user("a")]


# Steering notes


def test_notes_are_taken_once_and_in_order(opened: Opener) -> None:
    store = opened(":memory:")
    store.add_note("child", "first")
    store.add_note("child", "second")
    store.add_note("other", "not yours")
    assert not store.exists("child")  # a note does not make a session
    assert store.take_notes("child") == ["first", "second"]
    assert store.take_notes("child") == []
    store.add_note("child", "third")
    assert store.take_notes("child") == ["third"]
    assert store.take_notes("other") == ["not yours"]


def test_a_note_reaches_the_next_request_once(
    server: LoopbackServer, tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    parent = opened(path)  # the parent's connection to the store

    @tool
    def work() -> str:
        """Work while the parent steers."""
        parent.add_note("s1", "check B-2 too")
        return "working"

    parent.add_note("s1", "be quick")
    server.queue(calls(("work", {})), calls(("lookup", {"order": "B-2"})), Reply(content="ok"))
    run = recorded(server, opened(path), work, lookup).run("start")
    first, second, third = (r["messages"] for r in server.requests)
    steer = {"role": "user", "content": STEER_PREFIX + "be quick"}
    assert first == [user("start"), steer]
    later = {"role": "user", "content": STEER_PREFIX + "check B-2 too"}
    assert second[-2:] == [{"role": "tool", "tool_call_id": "call_0", "content": "working"}, later]
    assert third[: len(second)] == second
    assert [m for m in third if m["role"] == "user"] == [user("start"), steer, later]
    assert [(e.request, e.kind) for e in run.events] == [(1, "steer"), (2, "steer")]
    assert parent.pending_notes("s1") == []
    assert parent.load("s1") == list(run.messages)


# Memory and threads


def test_a_memory_store_keeps_sessions_for_its_lifetime(
    server: LoopbackServer, opened: Opener
) -> None:
    store = opened(":memory:")
    server.queue(Reply(content="Hello!"), Reply(content="Again."))
    recorded(server, store).run("hi")
    agent = recorded(server, store)
    agent.messages[:] = resume(store, "s1")
    agent.run("again")
    assert store.load("s1") == [user("hi"), said("Hello!"), user("again"), said("Again.")]
    store.delete("s1")
    assert store.ids() == []


def test_concurrent_saves_and_note_takers_do_not_corrupt_the_store(
    tmp_path: Path, opened: Opener
) -> None:
    path = tmp_path / "s.sqlite3"
    shared = opened(path)
    stores = [shared] * 4 + [opened(path) for _ in range(4)]  # 4 threads, 4 processes
    expected = {f"s{i}": conversation(60) for i in range(len(stores))}
    taken: list[str] = []
    start = threading.Barrier(len(stores) + 1)

    def writer(store: SessionStore, session_id: str) -> None:
        start.wait()
        for end in range(1, 61):
            store.save(session_id, expected[session_id][:end])
            taken.extend(store.take_notes("inbox"))

    def noter() -> None:
        start.wait()
        for n in range(200):
            shared.add_note("inbox", f"note {n}")

    threads = [threading.Thread(target=writer, args=(s, f"s{i}")) for i, s in enumerate(stores)]
    threads.append(threading.Thread(target=noter))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken.extend(shared.take_notes("inbox"))
    fresh = opened(path)
    assert {sid: fresh.load(sid) for sid in fresh.ids()} == expected
    assert sorted(taken) == sorted(f"note {n}" for n in range(200))  # each taken once
    with connected(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


# Resume


def test_resume_answers_only_the_calls_left_without_a_result() -> None:
    function = {"name": "lookup", "arguments": "{}"}
    asked = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": function} for i in "abc"],
    }
    done = {"role": "tool", "tool_call_id": "b", "content": "fine"}
    error = f"Error: {UNFINISHED}"
    assert unanswered([user("go"), asked, done]) == [
        {"role": "tool", "tool_call_id": "a", "content": error},
        {"role": "tool", "tool_call_id": "c", "content": error},
    ]
    assert unanswered([user("go"), said("hi")]) == []
    assert unanswered([user("go")]) == []
    assert unanswered([]) == []


def test_a_recorder_outside_an_agent_saves_the_calls_messages(
    server: LoopbackServer, opened: Opener
) -> None:
    store = opened(":memory:")
    store.add_note("s1", "hello")
    recorder = SessionRecorder(store, "s1", metadata={"parent": "p1"})
    server.queue(Reply(content="hi there"))
    call = pipeline.ModelCall(
        model=server.model, messages=[user("hi")], tools=[], params=server.params
    )
    send = pipeline.compose([recorder])

    async def request() -> ModelResponse:
        return await send(call)

    asyncio.run(request())
    steer = {"role": "user", "content": STEER_PREFIX + "hello"}
    assert server.requests[0]["messages"] == [user("hi"), steer]
    assert store.load("s1") == [user("hi"), steer, said("hi there")]
    assert store.metadata("s1") == {"parent": "p1"}
