"""Session persistence: an incremental save, and the resume of a 1,000-message session.

A session of 1,000 messages, shaped like a tool-using run (a user message, an assistant
message calling a tool, a ~400-character tool result, again and again), is saved in a
``SessionStore`` file in a temporary directory. Each round then measures:

1. Save. A fresh copy of the session (saved untimed), then ``SAVES`` times: two messages
   appended to the list (a tool result and the next assistant message) and ``store.save``
   timed, as the session middleware saves after each request. The floor, in the same round,
   on another file with the same settings (WAL journal, ``synchronous=FULL``) and the same
   1,000 rows: a bare ``INSERT`` of the two rows in one transaction. The two alternate
   save by save. Per round: the median of each and their ratio. The disk's sync dominates
   both on a file, so the same is measured with ``":memory:"`` (store and floor): the
   store's own work per save (spotting what is new, the session's row) without the disk.
2. Resume. What a new process does: open a new ``SessionStore`` on the file (a new
   connection, nothing remembered) and ``resume`` the 1,000 messages, timed together; and
   ``load`` alone on a store that is already open.

For scale, once: a full save of the 1,000 messages into a new session, which is what a store
that rewrote the session would pay on every request.

Run::

    python benchmarks/sessions.py [--rounds 15] [--quick]

Target: resume (open and load) of 1,000 messages < 50 ms. The script always exits 0: it is
a report, not a gate.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabulate import tabulate

from pytest_harness.orchestrator import SessionStore
from pytest_harness.orchestrator._sessions import resume

SIZE = 1000
SAVES = 20  # incremental saves per round
RESUME_TARGET_MS = 50.0


def message(i: int) -> dict[str, Any]:
    """Message ``i`` of a tool-using conversation."""
    if i % 3 == 0:
        return {"role": "user", "content": f"Please check order A-{i} and tell me its status."}
    if i % 3 == 1:
        function = {"name": "lookup", "arguments": json.dumps({"order": f"A-{i}"})}
        call = {"id": f"call_{i}", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    result = json.dumps({"order": f"A-{i - 1}", "status": "shipped", "notes": "x" * 340})
    return {"role": "tool", "tool_call_id": f"call_{i - 1}", "content": result}


def ms(seconds: float) -> float:
    return seconds * 1000


def timed(work: Callable[[], object]) -> float:
    """Seconds of one ``work()`` (the collector off, as a request's save would hardly meet it)."""
    gc.disable()
    try:
        started = time.perf_counter()
        work()
        return time.perf_counter() - started
    finally:
        gc.enable()


def floor_db(path: str) -> sqlite3.Connection:
    """A bare table like the store's, with the same settings (it gets the same rows)."""
    db = sqlite3.connect(path, isolation_level=None)
    if path != ":memory:":
        db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "message TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
    )
    return db


def insert(db: sqlite3.Connection, rows: list[tuple[str, int, str]]) -> None:
    """The floor: the new rows inserted in one write transaction, nothing else."""
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
    db.execute("COMMIT")


def save_round(
    store: SessionStore, floor: sqlite3.Connection, number: int
) -> tuple[list[float], list[float]]:
    """``SAVES`` incremental saves and as many bare inserts, alternating; seconds each."""
    session = f"round-{number}"
    messages = [message(i) for i in range(SIZE)]
    store.save(session, messages)
    rows = [(session, i, json.dumps(m)) for i, m in enumerate(messages)]
    floor.execute("BEGIN")
    floor.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
    floor.execute("COMMIT")
    saves: list[float] = []
    inserts: list[float] = []
    for n in range(SAVES):
        new = [message(len(messages)), message(len(messages) + 1)]
        texts = [(session, len(messages) + k, json.dumps(m)) for k, m in enumerate(new)]
        messages += new  # the same list, grown, as the loop grows the conversation
        save = functools.partial(store.save, session, messages)
        bare = functools.partial(insert, floor, texts)
        pair: list[tuple[list[float], Callable[[], object]]] = [(saves, save), (inserts, bare)]
        for times, work in pair if n % 2 else reversed(pair):
            times.append(timed(work))
    return saves, inserts


def resume_round(path: Path) -> tuple[float, float]:
    """Seconds to open a new store and resume the session, and to load it once open."""
    holder: list[SessionStore] = []

    def cold() -> None:
        holder.append(SessionStore(path))
        if len(resume(holder[-1], "base")) != SIZE:
            raise RuntimeError("the resumed session is not the saved one")

    opened = timed(cold)
    loaded = timed(lambda: holder[-1].load("base"))
    holder[-1].close()
    return opened, loaded


def medians(saves: list[float], inserts: list[float]) -> tuple[float, float]:
    return statistics.median(saves), statistics.median(inserts)


def report_saves(where: str, rounds: list[tuple[float, float]]) -> None:
    """The medians over rounds of the save, its floor and their ratio; then every round."""
    save_ms = statistics.median(ms(s) for s, _ in rounds)
    floor_ms = statistics.median(ms(f) for _, f in rounds)
    ratio = statistics.median(s / f for s, f in rounds)
    print(f"\n{where}")
    print(
        tabulate(
            [[f"{save_ms:.3f}", f"{floor_ms:.3f}", f"{ratio:.2f}"]],
            headers=["save (ms)", "bare 2-row insert, floor (ms)", "ratio"],
        )
    )
    print("rounds (median ms), save:  ", ", ".join(f"{ms(s):.3f}" for s, _ in rounds))
    print("rounds (median ms), floor: ", ", ".join(f"{ms(f):.3f}" for _, f in rounds))
    print("rounds, ratio:             ", ", ".join(f"{s / f:.2f}" for s, f in rounds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else args.rounds

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sessions.sqlite3"
        store, memory = SessionStore(path), SessionStore(":memory:")
        full = timed(lambda: store.save("base", [message(i) for i in range(SIZE)]))
        floor, memory_floor = floor_db(f"{folder}/floor.sqlite3"), floor_db(":memory:")
        on_disk, in_memory, resume_rounds = [], [], []
        resume_round(path)  # warm-up: the OS caches the file
        for number in range(rounds):
            on_disk.append(medians(*save_round(store, floor, number)))
            in_memory.append(medians(*save_round(memory, memory_floor, number)))
            resume_rounds.append(resume_round(path))
        for closing in (store, memory, floor, memory_floor):
            closing.close()

    print(f"Incremental save of 2 new messages to a {SIZE}-message session ({rounds} rounds)")
    print(f"(a full save of the {SIZE} messages, for scale: {ms(full):.1f} ms)")
    report_saves("file (WAL, synchronous=FULL)", on_disk)
    report_saves(":memory: (the store's own work, no disk)", in_memory)

    cold_ms = statistics.median(ms(c) for c, _ in resume_rounds)
    load_ms = statistics.median(ms(w) for _, w in resume_rounds)
    verdict = "OK" if cold_ms < RESUME_TARGET_MS else "OVER"
    print(f"\nResume of {SIZE} messages ({rounds} rounds, median ms)")
    print(
        tabulate(
            [[f"{cold_ms:.2f}", f"{load_ms:.2f}", verdict]],
            headers=["open + resume", "load (store open)", f"target < {RESUME_TARGET_MS:g} ms"],
        )
    )
    print("rounds (ms), open + resume:", ", ".join(f"{ms(c):.2f}" for c, _ in resume_rounds))
    print("rounds (ms), load:         ", ", ".join(f"{ms(w):.2f}" for _, w in resume_rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
