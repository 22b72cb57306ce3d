"""Subagents: the delegate tool, the registry, steer, and the read-only probe (as the seed)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._sessions import SessionStore
from pytest_harness.orchestrator._subagents import PREAMBLE, SubagentEntry, SubagentProbe, steer
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

QUESTION = "Where is A-1?"
TASK = "Find the status of order A-1."


def calls(name: str, **arguments: Any) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name=name, arguments=arguments)])


def first_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def answered(body: dict[str, Any]) -> bool:
    return any(m["role"] == "tool" for m in body["messages"])


def script(probe_answer: str = "Checking A-1.") -> Any:
    """Parent: delegate, then answer. Child: lookup, then answer. Probe: its answer."""

    def handler(body: dict[str, Any]) -> Reply:
        if first_user(body) == PREAMBLE:
            return Reply(content=probe_answer)
        if first_user(body) == TASK:
            return Reply(content="A-1 shipped.") if answered(body) else calls("lookup", order="A-1")
        if answered(body):
            return Reply(content="Your order shipped.")
        return calls("delegate", task=TASK)

    return handler


def parent(server: LoopbackServer, lookup: Any, **options: Any) -> Orchestrator:
    return Orchestrator(
        server.model, [lookup], params=server.params, subagents=True, store=":memory:", **options
    )


def test_delegate_runs_a_child_and_returns_its_answer(server: LoopbackServer) -> None:
    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"{order}: shipped"

    server.handler = script()
    agent = parent(server, lookup)
    run = agent.run(QUESTION)
    assert run.output == "Your order shipped."
    assert run.assert_called("delegate", {"task": TASK}).result == "A-1 shipped."
    (child,) = agent.children
    assert (child.id, child.task, child.status) == ("sub-1", TASK, "done")
    assert child.session_id == f"{agent.session_id}/sub-1"
    assert child.run is not None
    assert child.run.tools_called == ["lookup"]
    child_requests = [b for b in server.requests if first_user(b) == TASK]
    assert len(child_requests) == 2
    offered = [t["function"]["name"] for t in child_requests[0]["tools"]]
    assert offered == ["lookup"]  # no delegate: children do not spawn children
    assert agent.store.load(child.session_id) == list(child.agent.messages)
    before = child.snapshot()
    assert SubagentProbe().peek(child, "What did you find?") == "Checking A-1."  # finished
    assert child.snapshot() == before


def test_a_probe_peeks_without_touching_the_child(server: LoopbackServer) -> None:
    seen: dict[str, Any] = {}

    @tool
    async def lookup(order: str) -> str:
        """Look an order up."""
        entry = agent.children[-1]
        before = entry.snapshot()
        seen["answer"] = await SubagentProbe().apeek(entry, "What are you doing?")
        seen["same"] = entry.snapshot() == before and list(entry.agent.messages) == before
        return f"{order}: shipped"

    server.handler = script(probe_answer="  Checking A-1.  ")
    agent = parent(server, lookup)
    run = agent.run(QUESTION)
    assert seen == {"answer": "Checking A-1.", "same": True}
    assert run.output == "Your order shipped."  # the child's loop went on unchanged
    (probe,) = [b for b in server.requests if first_user(b) == PREAMBLE]
    assert probe["messages"][-1] == {"role": "user", "content": "What are you doing?"}
    assert probe["tool_choice"] == "none"  # read-only: it may not call the child's tools
    child_after = [b for b in server.requests if first_user(b) == TASK][-1]
    assert "What are you doing?" not in json.dumps(child_after["messages"])
    assert agent.children[0].status == "done"


def test_a_probe_reads_the_message_store_it_is_given_and_leaves_the_child_alone(
    server: LoopbackServer,
) -> None:
    child = Orchestrator(
        server.model, [], params=server.params, session="s/sub-1", store=":memory:"
    )
    child.messages += [
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": "Looking A-1 up."},
    ]
    child.store.save("s/sub-1", child.messages)
    entry = SubagentEntry(id="sub-1", task=TASK, session_id="s/sub-1", agent=child)
    elsewhere = SessionStore(":memory:")  # another copy of the child's session, further on
    kept = [*child.messages, {"role": "assistant", "content": "A-1 shipped on Monday."}]
    elsewhere.save("s/sub-1", kept)
    before = [dict(m) for m in child.messages]
    server.queue(Reply(content="It shipped on Monday."))
    probe = SubagentProbe(message_store=elsewhere)
    assert probe.peek(entry, "When did it ship?") == "It shipped on Monday."
    (sent,) = server.requests  # one side request; the child made none
    assert sent["messages"] == [
        {"role": "user", "content": PREAMBLE},
        *kept,
        {"role": "user", "content": "When did it ship?"},
    ]
    # Read-only: the child, its own session and the given store are as they were.
    assert child.messages == before
    assert child.store.load("s/sub-1") == before
    assert elsewhere.load("s/sub-1") == kept
    assert child.store.pending_notes("s/sub-1") == elsewhere.pending_notes("s/sub-1") == []
    assert (entry.status, entry.run) == ("pending", None)


def test_probe_texts_for_blank_answers_failures_and_children_not_started(
    server: LoopbackServer,
) -> None:
    asked: list[str] = []

    def factory(model: str) -> Any:
        asked.append(model)
        return lambda messages: SimpleNamespace(content="   ")

    child = Orchestrator("openai/child-model", [])
    child.messages += [{"role": "user", "content": TASK}]
    entry = SubagentEntry(id="sub-1", task=TASK, session_id="s/sub-1", agent=child)
    assert SubagentProbe(model_factory=factory).peek(entry, "status?") == "(no answer)"
    assert asked == ["openai/child-model"]

    def broken(model: str) -> Any:
        raise RuntimeError("no adapter for this model")

    assert SubagentProbe(model_factory=broken).peek(entry, "status?") == (
        "(probe failed: no adapter for this model)"
    )
    fresh = SubagentEntry(id="sub-2", task=TASK, session_id="s/sub-2", agent=Orchestrator("m"))
    assert SubagentProbe().peek(fresh, "status?") == (
        "(probe failed: the subagent has no messages yet (it has not started))"
    )
    server.queue(Reply(status=400, error="model down"))
    child.params.update(server.params)
    child.model = server.model
    failed = SubagentProbe().peek(entry, "status?")
    assert failed.startswith("(probe failed: ")
    assert "model down" in failed


def test_steer_reaches_the_child_on_its_next_request(server: LoopbackServer) -> None:
    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        steer(agent.children[-1], "Also check order B-2.")
        return f"{order}: shipped"

    server.handler = script()
    agent = parent(server, lookup)
    agent.run(QUESTION)
    first, second = [b for b in server.requests if first_user(b) == TASK]
    assert "Also check order B-2." not in json.dumps(first["messages"])
    notes = [m for m in second["messages"] if "Also check order B-2." in str(m.get("content"))]
    assert len(notes) == 1
    assert notes[0]["role"] == "user"
    with pytest.raises(ValueError, match="subagent sub-1 is done: a note would never be read"):
        steer(agent.children[0], "too late")


def test_subagents_without_a_session_keep_nothing_on_disk(
    server: LoopbackServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"{order}: shipped"

    server.handler = script()
    agent = Orchestrator(server.model, [lookup], params=server.params, subagents=True)
    assert agent.run(QUESTION).output == "Your order shipped."
    assert agent.children[0].status == "done"
    assert list(tmp_path.iterdir()) == []  # no .harness/ folder
