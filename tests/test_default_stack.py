"""The default middleware stack at work in one run: retry, validation, doom loop, and their
events in order in the trajectory; compaction in the stack with a budget."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import Compaction, defaults
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} is on its way, says the warehouse."


def again() -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A"})])


def test_retry_validation_and_doom_loop_compose(server: LoopbackServer) -> None:
    server.queue(
        Reply(status=429, headers={"Retry-After": "0"}),  # request 1: a fault, retried
        again(),
        again(),  # request 2
        Reply(content=""),  # request 3: empty, asked again
        again(),
        again(),  # request 4, after the warning: stop
    )
    run = Orchestrator(server.model, [lookup], params=server.params).run("Where is A?")
    assert run.stop_reason == "doom_loop"
    assert run.tools_called == ["lookup"] * 3
    kinds = [(event.request, event.kind) for event in run.events]
    assert kinds == [(1, "retry"), (3, "invalid_response"), (4, "doom_loop"), (4, "doom_loop")]
    assert (run.requests, len(server.requests)) == (4, 6)
    rows = [line.split()[:2] for line in run.table().splitlines()[2:]]
    assert rows == [
        ["1", "[retry]"],
        ["1", "lookup"],
        ["2", "lookup"],
        ["3", "[invalid_response]"],
        ["3", "lookup"],
        ["4", "[doom_loop]"],
        ["4", "[doom_loop]"],
    ]


def test_compaction_in_the_default_stack_summarises_once(server: LoopbackServer) -> None:
    stack = [Compaction(budget=200) if isinstance(m, Compaction) else m for m in defaults()]
    orders = ["A", "B", "C", "D", "E", "F"]

    def answer(body: dict[str, Any]) -> Reply:
        if body.get("tools") is None:  # the summary call offers no tools
            return Reply(content="The user asked about orders; all are on their way.")
        if not orders:
            return Reply(content="All six are on their way.")
        call = ToolCallSpec(name="lookup", arguments={"order": orders.pop(0)})
        return Reply(content=None, tool_calls=[call])

    server.handler = answer
    run = Orchestrator(server.model, [lookup], "Be brief.", params=server.params, middleware=stack)
    result = run.run("Where are my six orders? " * 10)
    assert result.stop_reason == "done"
    compactions = [e for e in result.events if e.kind == "compaction"]
    assert compactions
    summaries = [b for b in server.requests if b.get("tools") is None]
    assert len(summaries) == len(compactions)
    last = server.requests[-1]["messages"]
    assert last[0] == {"role": "system", "content": "Be brief."}
    assert any(str(m.get("content", "")).startswith("Summary of the earlier") for m in last)
