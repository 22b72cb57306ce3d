"""Faults mid-run: a degenerate response, an abort from a signal handler, a cut-off call."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any

import pytest

from pytest_harness.errors import InvalidResponse
from pytest_harness.orchestrator.loop import Orchestrator
from pytest_harness.orchestrator.run import RunFailed
from pytest_harness.orchestrator.tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def agent(server: LoopbackServer, *tools: Any, **options: Any) -> Orchestrator:
    return Orchestrator(server.model, tools or [lookup], params=server.params, **options)


def call(order: str) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": order})])


def test_a_think_only_response_mid_run_fails_the_run_and_keeps_its_messages(
    server: LoopbackServer,
) -> None:
    server.queue(call("A-1"), Reply(content="<think>Maybe it shipped, maybe not</think>"))
    with pytest.raises(RunFailed, match="request 2 of the run failed") as failure:
        agent(server).run("Where is A-1?")
    assert isinstance(failure.value.__cause__, InvalidResponse)
    run = failure.value.run
    assert (run.stop_reason, run.requests, run.tools_called) == ("error", 2, ["lookup"])
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool"]
    assert run.tool_calls[0].result == "A-1 shipped"


@pytest.mark.harness(degenerate="warn")
def test_under_warn_a_degenerate_answer_ends_the_run_with_a_warning(
    server: LoopbackServer,
) -> None:
    server.queue(call("A-1"), Reply(content=""))
    with pytest.warns(UserWarning, match="empty"):
        run = agent(server).run("Where is A-1?")
    assert (run.stop_reason, run.output, run.requests) == ("done", "", 2)


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs POSIX signals")
def test_abort_from_a_signal_handler_cancels_the_tool_and_stops(server: LoopbackServer) -> None:
    entered, cleaned = threading.Event(), threading.Event()

    @tool
    async def long_task() -> str:
        """Takes long."""
        entered.set()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()
        return "late"

    orchestrator = agent(server, long_task)
    server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="long_task")]))
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: orchestrator.abort())
    sender = threading.Thread(
        target=lambda: entered.wait(10) and os.kill(os.getpid(), signal.SIGALRM)
    )
    try:
        sender.start()
        run = orchestrator.run("hi")
    finally:
        sender.join()
        signal.signal(signal.SIGALRM, previous)
    assert run.stop_reason == "aborted"
    assert cleaned.is_set()
    assert run.tool_calls[0].error == "aborted before the tool finished"
    assert len(server.requests) == 1
