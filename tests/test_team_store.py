"""KnowledgeStore: an append-only findings store, safe across threads and tasks."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from typing import Any

import pytest

from pytest_harness.team._findings import Finding, KnowledgeStore

pytestmark = pytest.mark.harness(cassette=False)


def test_a_finding_keeps_its_author_cycle_content_kind_and_time() -> None:
    store = KnowledgeStore()
    first = store.write(author="Skeptic", cycle=1, content="  A parcel marked delivered  ")
    second = store.write(author="Persona", cycle=2, content="Angry tone", kind=" tone ")
    assert (first.author, first.cycle, first.content, first.kind) == (
        "Skeptic",
        1,
        "A parcel marked delivered",
        "",
    )
    assert (second.kind, second.cycle) == ("tone", 2)
    assert first.time <= second.time
    assert store.read_all() == [first, second]
    assert store.size == len(store) == 2
    assert list(store) == [first, second]
    assert repr(store) == "<KnowledgeStore 2 findings>"


def test_read_all_hands_out_copies_the_store_never_changes() -> None:
    store = KnowledgeStore()
    store.write(author="A", cycle=1, content="one")
    taken = store.read_all()
    taken.append(taken[0])
    taken.clear()
    assert store.size == 1
    assert store.read_all() is not store.read_all()
    with pytest.raises(dataclasses.FrozenInstanceError):
        store.read_all()[0].content = "changed"  # type: ignore[misc]
    earlier = store.read_all()
    store.write(author="B", cycle=1, content="two")
    assert [f.content for f in earlier] == ["one"]  # what a reader holds does not grow


def test_the_json_view_is_what_a_model_may_see_the_same_on_every_run() -> None:
    store = KnowledgeStore()
    assert store.to_json() == "[]"
    finding = store.write(author="A", cycle=1, content="Colis perdu à Genève")
    store.write(author="B", cycle=1, content="late", kind="edge case")
    assert json.loads(store.to_json()) == [
        {"author": "A", "cycle": 1, "content": "Colis perdu à Genève"},
        {"author": "B", "cycle": 1, "kind": "edge case", "content": "late"},
    ]
    assert "à" in store.to_json()  # readable text for the model, not \u escapes
    with_times = json.loads(store.to_json(times=True))
    assert with_times[0]["time"] == finding.time
    assert finding.as_dict() == {
        "author": "A",
        "cycle": 1,
        "content": "Colis perdu à Genève",
        "time": finding.time,
    }


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ({"content": "   "}, ValueError, "the finding is empty"),
        ({"content": 5}, TypeError, r"content is text, got 5 \(int\)"),
        ({"content": None}, TypeError, "content is text"),
        ({"author": " "}, ValueError, "needs an author"),
        ({"cycle": -1}, ValueError, "cycle is 0 or more, got -1"),
        ({"cycle": "1"}, TypeError, "cycle is a whole number"),
        ({"cycle": True}, TypeError, "cycle is a whole number"),
        ({"kind": ["a"]}, TypeError, "kind is text"),
    ],
)
def test_a_malformed_finding_is_refused_and_nothing_is_written(
    values: dict[str, Any], error: type[Exception], message: str
) -> None:
    store = KnowledgeStore()
    finding = {"author": "A", "cycle": 1, "content": "fine", **values}
    with pytest.raises(error, match=message):
        store.write(**finding)
    assert store.size == 0


def test_unique_refuses_a_finding_already_there_whatever_its_case_and_blanks() -> None:
    store = KnowledgeStore()
    store.write(author="A", cycle=1, content="Parcel  lost in transit")
    with pytest.raises(ValueError, match=r"already in the store \(written by A in cycle 1\)"):
        store.write(author="B", cycle=2, content=" parcel lost IN transit ", unique=True)
    assert store.size == 1
    store.write(author="B", cycle=2, content="parcel lost in transit")  # allowed unless unique
    assert store.size == 2


def test_many_threads_appending_at_once_lose_nothing_and_keep_each_writers_order() -> None:
    store = KnowledgeStore()
    writers, each = 16, 250
    start = threading.Barrier(writers + 1)
    snapshots: list[list[Finding]] = []

    def write(author: str) -> None:
        start.wait()
        for n in range(each):
            store.write(author=author, cycle=1, content=f"{author}-{n}")

    def read() -> None:
        start.wait()
        for _ in range(200):
            snapshots.append(store.read_all())

    threads = [threading.Thread(target=write, args=(f"w{i}",)) for i in range(writers)]
    threads.append(threading.Thread(target=read))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = store.read_all()
    assert store.size == len(final) == writers * each
    for i in range(writers):
        mine = [f.content for f in final if f.author == f"w{i}"]
        assert mine == [f"w{i}-{n}" for n in range(each)]
    # Append-only: every snapshot a reader took is a prefix of the final store.
    assert all(final[: len(snapshot)] == snapshot for snapshot in snapshots)


def test_tasks_on_one_loop_writing_in_turns_all_land() -> None:
    store = KnowledgeStore()

    async def write(author: str) -> None:
        for n in range(20):
            store.write(author=author, cycle=n, content=f"{author}:{n}")
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(write(f"t{i}") for i in range(10)))

    asyncio.run(main())
    assert store.size == 200
    assert {f.content for f in store.read_all()} == {
        f"t{i}:{n}" for i in range(10) for n in range(20)
    }
