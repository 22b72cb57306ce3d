"""Sessions: an orchestrator's conversation kept in SQLite, so that a run can be resumed."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import SessionStoreError, UnknownSession, describe, quote
from pytest_harness.orchestrator import _run as run_
from pytest_harness.orchestrator._pipeline import ModelCall, Next
from pytest_harness.orchestrator._run import Run

DEFAULT_PATH = ".harness/sessions.sqlite3"
SCHEMA_VERSION = 1  # PRAGMA user_version of the stores this module reads and writes
REMEMBERED = 64  # sessions whose saved messages a store remembers (the most recent ones)
_TABLES = {"sessions", "messages", "replaced", "notes"}
_SCHEMA = """BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, created REAL NOT NULL,
    updated REAL NOT NULL, metadata TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS replaced (session_id TEXT NOT NULL, generation INTEGER NOT NULL,
    seq INTEGER NOT NULL, message TEXT NOT NULL, replaced REAL NOT NULL,
    PRIMARY KEY (session_id, generation, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notes (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    text TEXT NOT NULL, created REAL NOT NULL, delivered REAL,
    PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
PRAGMA user_version = 1;
COMMIT;"""
_MESSAGES = "SELECT message FROM messages WHERE session_id = ? ORDER BY seq"
_TOUCH = (
    "INSERT INTO sessions VALUES (?1, ?2, ?2, COALESCE(?3, '{}')) ON CONFLICT(id) "
    "DO UPDATE SET updated = ?2, metadata = COALESCE(?3, metadata)"
)
_DELIVERED = "UPDATE notes SET delivered = ? WHERE session_id = ? AND seq = ?"
_PENDING = "SELECT seq, text, created FROM notes WHERE session_id = ? AND delivered IS NULL"
_REPLACED = "SELECT generation, seq, replaced, message FROM replaced WHERE session_id = ?"
_ARCHIVE = (
    "INSERT INTO replaced SELECT session_id, ?, seq, message, ? FROM messages "
    "WHERE session_id = ? AND seq >= ?"
)


@dataclass(frozen=True, slots=True)
class Note:
    """A steering note waiting for a session's next request."""

    seq: int
    text: str
    created: float


@dataclass(frozen=True, slots=True)
class Replaced:
    """Messages that a save replaced: they were at ``at`` and after, until ``when``."""

    at: int
    when: float
    messages: list[dict[str, Any]]


class SessionStore:
    """Sessions (conversations) in one SQLite file; safe to share between threads.

    Args:
        path: the database file (its folder is created), or ``":memory:"``.
        timeout: seconds to wait for another process's lock, then ``SessionStoreError``
            (which opening a file that is not a usable session store raises too).
    """

    def __init__(
        self, path: str | os.PathLike[str] = DEFAULT_PATH, *, timeout: float = 5.0
    ) -> None:
        self.path, self.timeout = os.fspath(path), timeout
        self._lock = threading.RLock()
        self._saved: dict[str, list[dict[str, Any]]] = {}  # the dicts last saved, by session
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._guard("open the session store"):
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._prepare()
            except BaseException:
                self._db.close()
                raise

    def _prepare(self) -> None:
        """Check the file is a session store (reading only), then set it up."""
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        foreign = {row[0] for row in self._db.execute(query)} - _TABLES
        if version > SCHEMA_VERSION or (version == 0 and foreign):
            raise SessionStoreError(
                f"{self.path} is not a session store this pytest-harness can use (schema "
                f"{version}, tables {sorted(foreign)}); it was left as it is. Give the store "
                "another path, or upgrade pytest-harness if a newer one wrote it."
            )
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        if version == 0:
            self._db.executescript(_SCHEMA)

    def save(
        self,
        session_id: str,
        messages: Sequence[dict[str, Any]],
        *,
        metadata: Mapping[str, Any] | None = None,
        delivered: Iterable[int] = (),
    ) -> int:
        """Save the conversation (only what is new; see above); return the rows written.

        Args:
            metadata: replaces the session's metadata (JSON values); None keeps it.
            delivered: the ``Note.seq`` of notes now in ``messages``, marked delivered in
                the same transaction (so a note is never marked delivered yet missing).
        """
        described = None if metadata is None else _dump(dict(metadata))
        with self._lock:
            with self._transaction(f"save session {session_id!r}") as db:
                start = self._unchanged(db, session_id, messages)
                texts = [_dump(message) for message in messages[start:]]
                rows = ((session_id, seq, text) for seq, text in enumerate(texts, start))
                db.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
                db.execute(_TOUCH, (session_id, time.time(), described))
                db.executemany(_DELIVERED, ((time.time(), session_id, s) for s in delivered))
            self._remember(session_id, list(messages))
        return len(texts)

    def _unchanged(
        self, db: sqlite3.Connection, session_id: str, messages: Sequence[dict[str, Any]]
    ) -> int:
        """How many leading messages are stored already (the rest is archived)."""
        query = "SELECT MAX(seq) FROM messages WHERE session_id = ?"
        last = db.execute(query, (session_id,)).fetchone()[0]
        count = 0 if last is None else last + 1
        saved = self._saved.get(session_id)
        # Lists compare fast: the same dicts are equal without a look inside.
        if saved is not None and len(saved) == count and saved == list(messages[:count]):
            return count
        # Another store wrote since, this one never did, or the list changed: compare texts.
        stored = [row[0] for row in db.execute(_MESSAGES, (session_id,))]
        same = 0
        for text, message in zip(stored, messages, strict=False):
            if text != _dump(message):
                break
            same += 1
        if same < len(stored):
            query = "SELECT COALESCE(MAX(generation), 0) + 1 FROM replaced WHERE session_id = ?"
            generation = db.execute(query, (session_id,)).fetchone()[0]
            db.execute(_ARCHIVE, (generation, time.time(), session_id, same))
            query = "DELETE FROM messages WHERE session_id = ? AND seq >= ?"
            db.execute(query, (session_id, same))
        return same

    def load(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages, in order.

        Raises:
            UnknownSession: there is no session ``session_id`` (the message names some).
        """
        with self._lock:
            texts = [row[0] for row in self._read("load", session_id, _MESSAGES, session_id)]
            if not texts and not self.exists(session_id):
                raise self._unknown(session_id)
            messages: list[dict[str, Any]] = json.loads("[" + ",".join(texts) + "]")
            self._remember(session_id, messages[:])
        return messages

    def exists(self, session_id: str) -> bool:
        """Whether the store has a session ``session_id``."""
        query = "SELECT 1 FROM sessions WHERE id = ?"
        return bool(self._read("find", session_id, query, session_id))

    def ids(self) -> list[str]:
        """The ids of the stored sessions, the oldest first."""
        query = "SELECT id FROM sessions ORDER BY created, rowid"
        return [row[0] for row in self._read("list", "", query)]

    def metadata(self, session_id: str) -> dict[str, Any]:
        """The session's metadata (``{}`` unless a save gave some)."""
        query = "SELECT metadata FROM sessions WHERE id = ?"
        for (text,) in self._read("read", session_id, query, session_id):
            return dict(json.loads(text))
        raise self._unknown(session_id)

    def replaced(self, session_id: str) -> list[Replaced]:
        """The messages each save of the session replaced, the oldest replacement first."""
        query = _REPLACED + " ORDER BY generation, seq"
        found: dict[int, Replaced] = {}
        for generation, seq, when, text in self._read("read", session_id, query, session_id):
            found.setdefault(generation, Replaced(seq, when, [])).messages.append(json.loads(text))
        return list(found.values())

    def delete(self, session_id: str) -> None:
        """Delete the session: its messages, its replaced messages and its notes."""
        with self._lock, self._transaction(f"delete session {session_id!r}") as db:
            if db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise self._unknown(session_id)
            for table in ("messages", "replaced", "notes"):
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            self._saved.pop(session_id, None)

    def add_note(self, session_id: str, text: str) -> None:
        """Keep a steering note for the session's next request (the session may be new)."""
        with self._lock, self._transaction(f"add a note to session {session_id!r}") as db:
            query = "SELECT COALESCE(MAX(seq), 0) + 1 FROM notes WHERE session_id = ?"
            seq = db.execute(query, (session_id,)).fetchone()[0]
            row = (session_id, seq, text, time.time())
            db.execute("INSERT INTO notes VALUES (?, ?, ?, ?, NULL)", row)

    def pending_notes(self, session_id: str) -> list[Note]:
        """The notes not delivered yet, in the order they were added (none is marked)."""
        rows = self._read("read the notes of", session_id, _PENDING + " ORDER BY seq", session_id)
        return [Note(*row) for row in rows]

    def take_notes(self, session_id: str) -> list[str]:
        """The notes not delivered yet, in order, marked delivered (one transaction)."""
        with self._lock, self._transaction(f"take the notes of session {session_id!r}") as db:
            notes = self.pending_notes(session_id)
            db.executemany(_DELIVERED, ((time.time(), session_id, n.seq) for n in notes))
        return [note.text for note in notes]

    def close(self) -> None:
        """Close the database; the store cannot be used afterwards."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _remember(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Keep the dicts just saved or loaded: the next save compares with them first."""
        self._saved.pop(session_id, None)
        self._saved[session_id] = messages
        if len(self._saved) > REMEMBERED:  # forget the least recently used (dicts keep order)
            del self._saved[next(iter(self._saved))]

    def _read(self, verb: str, session_id: str, query: str, *args: Any) -> list[Any]:
        doing = f"{verb} session {session_id!r}" if session_id else f"{verb} the sessions"
        with self._lock, self._guard(doing):
            return self._db.execute(query, args).fetchall()

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (taking the write lock at once), rolled back on error."""
        with self._guard(doing):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        """Turn SQLite's errors into a ``SessionStoreError`` that says what to do."""
        try:
            yield
        except sqlite3.Error as error:
            kind = getattr(error, "sqlite_errorname", "") or str(error)  # no names before 3.11
            if any(word in kind for word in ("BUSY", "LOCKED", "is locked")):
                problem = (
                    f"{self.path} is locked by another process or connection (waited "
                    f"{self.timeout:g} s). Nothing was written; try again once it is done, "
                    "or wait longer with SessionStore(..., timeout=...)"
                )
            elif any(word in kind for word in ("NOTADB", "CORRUPT", "not a data", "malformed")):
                problem = (
                    f"{self.path} is not a readable session store ({error}); it was left as "
                    "it is. Move it aside to start a new store at that path (`sqlite3 FILE "
                    ".recover` may get its data back)"
                )
            else:
                problem = f"{self.path}: {describe(error)}"
            raise SessionStoreError(f"cannot {doing}: {problem}.") from error

    def _unknown(self, session_id: str) -> UnknownSession:
        query = "SELECT id FROM sessions ORDER BY updated DESC, rowid DESC LIMIT 6"
        known = [repr(row[0]) for row in self._read("list", "", query)]
        listed = "its latest sessions: " + ", ".join(known[:5]) if known else "the store is empty"
        return UnknownSession(
            f"no session {session_id!r} in {self.path}; {listed}{' ...' * (len(known) > 5)}. "
            "Check the id (a session exists once something was saved to it)."
        )


def _dump(message: Any) -> str:
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise SessionStoreError(
            f"cannot save {quote(repr(message), 200)}: {error}. A session holds JSON values "
            "only (str, int, float, bool, None, lists and dicts)."
        ) from None


STEER_PREFIX = "Note from the parent agent: "
UNFINISHED = "the run ended before this tool call finished (the session was resumed)"


class SessionRecorder:
    """Save the conversation to ``store`` as session ``session_id`` around every request.

    Put it after ``UsageLimits`` (a request a limit refuses leaves the notes waiting) and
    before the middleware that retry or compact, so that it saves once per request and
    sees the conversation as it is kept.

    Args:
        store: where the session is kept.
        session_id: the session; a new id starts a new one.
        metadata: saved with the session on the first save (JSON values).
    """

    def __init__(
        self, store: SessionStore, session_id: str, *, metadata: Mapping[str, Any] | None = None
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.metadata = dict(metadata) if metadata is not None else None

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        conversation = _conversation(call)
        notes = self.store.pending_notes(self.session_id)
        for note in notes:
            steer = {"role": "user", "content": STEER_PREFIX + note.text}
            conversation.append(steer)
            if call.messages is not conversation:  # an outer middleware's copy for this request
                call.messages.append(steer)
            call.event("steer", f"delivered note {note.seq}: {quote(note.text, 80)}")
        self.save(conversation, delivered=[note.seq for note in notes])
        response = await next(call)
        self.save([*conversation, run_.assistant(response)])
        return response

    def run_ended(self, agent: Any, run: Run) -> None:
        """Save the conversation as the run left it (its tool results included).

        ``agent.messages`` holds what ``run.messages`` copies; saving the conversation's own
        dicts lets the store see at once that nothing before them changed.
        """
        self.save(agent.messages)

    def save(self, conversation: list[dict[str, Any]], delivered: list[int] | None = None) -> int:
        """Save ``conversation`` (the first save also saves the metadata)."""
        written = self.store.save(
            self.session_id, conversation, metadata=self.metadata, delivered=delivered or ()
        )
        self.metadata = None
        return written


def resume(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """The session's messages to go on from, for ``Orchestrator.messages``.

    Tool calls of the last assistant message that have no result (the process died while
    they ran) get an error result each, in the model's order.

    Raises:
        UnknownSession: there is no such session.
    """
    conversation = store.load(session_id)
    return conversation + unanswered(conversation)


def unanswered(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Error results for the tool calls of the last assistant message left without one."""
    end = len(conversation)
    while end and conversation[end - 1].get("role") == "tool":
        end -= 1
    if not end or conversation[end - 1].get("role") != "assistant":
        return []
    answered = {message.get("tool_call_id") for message in conversation[end:]}
    return [
        {"role": "tool", "tool_call_id": call["id"], "content": f"Error: {UNFINISHED}"}
        for call in conversation[end - 1].get("tool_calls") or ()
        if call.get("id") not in answered
    ]


def _conversation(call: ModelCall) -> list[dict[str, Any]]:
    """The conversation itself: the agent's messages, or the call's outside an agent."""
    agent_messages = getattr(call.agent, "messages", None)
    return agent_messages if isinstance(agent_messages, list) else call.messages
