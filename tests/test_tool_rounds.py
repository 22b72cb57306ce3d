"""Orchestrator(max_tool_rounds=...): after the allowed batches of tool calls, the model must
answer (``tool_choice="none"``), and a model that calls tools anyway stops the run."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def calls(*orders: str) -> Reply:
    specs = [ToolCallSpec(name="lookup", arguments={"order": o}) for o in orders]
    return Reply(content=None, tool_calls=specs)


def agent(server: LoopbackServer, **options: Any) -> Orchestrator:
    params = {**server.params, "temperature": 0.5}
    return Orchestrator(server.model, [lookup], params=params, **options)


def test_after_the_last_round_the_model_is_told_to_answer(server: LoopbackServer) -> None:
    server.queue(calls("A-1", "B-2"), Reply(content="Both shipped."))
    run = agent(server, max_tool_rounds=1).run("Where are A-1 and B-2?")
    assert (run.stop_reason, run.output, run.requests) == ("done", "Both shipped.", 2)
    assert [c.result for c in run.tool_calls] == ["A-1 shipped", "B-2 shipped"]
    first, second = server.requests
    assert "tool_choice" not in first
    assert second["tool_choice"] == "none"
    assert [t["function"]["name"] for t in second["tools"]] == ["lookup"]  # still described


def test_a_model_calling_tools_after_the_last_round_stops_the_run(
    server: LoopbackServer,
) -> None:
    server.handler = lambda body: calls("A-1")
    run = agent(server, max_tool_rounds=2).run("loop")
    assert run.stop_reason == "max_tool_rounds"
    assert run.requests == 3
    assert [c.request for c in run.tool_calls] == [1, 2]  # the third request's call never ran
    assert [r.get("tool_choice") for r in server.requests] == [None, None, "none"]
    assert run.messages[-1]["tool_calls"][0]["function"]["name"] == "lookup"  # kept, not run
    run.assert_stopped("max_tool_rounds")


def test_zero_rounds_asks_for_an_answer_at_once(server: LoopbackServer) -> None:
    server.queue(Reply(content="I cannot look that up."))
    run = agent(server, max_tool_rounds=0).run("Where is A-1?")
    assert (run.stop_reason, run.tool_calls) == ("done", ())
    assert server.requests[0]["tool_choice"] == "none"


def test_the_user_params_are_kept_and_not_changed(server: LoopbackServer) -> None:
    server.queue(calls("A-1"), Reply(content="Shipped."))
    orchestrator = agent(server, max_tool_rounds=1)
    before = dict(orchestrator.params)
    orchestrator.run("Where is A-1?")
    assert orchestrator.params == before
    assert [r["temperature"] for r in server.requests] == [0.5, 0.5]


def test_the_rounds_count_per_run(server: LoopbackServer) -> None:
    server.queue(calls("A-1"), Reply(content="A-1 shipped."), calls("B-2"), Reply(content="Ok."))
    orchestrator = agent(server, max_tool_rounds=1)
    orchestrator.run("Where is A-1?")
    second = orchestrator.run("And B-2?")
    assert (second.stop_reason, second.tools_called) == ("done", ["lookup"])
    assert [r.get("tool_choice") for r in server.requests] == [None, "none", None, "none"]


def test_a_negative_limit_is_refused(server: LoopbackServer) -> None:
    with pytest.raises(ValueError, match=r"max_tool_rounds=\.\.\.\) expects None or 0 and up"):
        agent(server, max_tool_rounds=-1)
