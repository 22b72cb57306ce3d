"""Faults mid-run: a degenerate response, an abort from a signal handler, a cut-off call, a
sync tool that hangs."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_harness.errors import InvalidResponse, RunFailed
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run
TIMEOUT_HINT = " (its timeout: @tool(timeout=...), else the orchestrator's tool_timeout)"

HOLD = 30.0  # seconds a guard waits for what should come at once; only a broken loop reaches it


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
    waiting: list[asyncio.Future[None]] = []
    stopped_by_abort: list[bool] = []

    @tool
    async def long_task() -> str:
        """Waits for what never comes: no timer of its own wakes the loop."""
        waiting.append(asyncio.get_running_loop().create_future())
        entered.set()
        try:
            await waiting[0]
        finally:
            cleaned.set()
        return "late"

    def send() -> None:
        if not entered.wait(HOLD):
            return
        os.kill(os.getpid(), signal.SIGALRM)
        stopped_by_abort.append(cleaned.wait(HOLD))
        if not stopped_by_abort[-1]:  # the abort was not acted on: end the tool all the same
            future = waiting[0]
            future.get_loop().call_soon_threadsafe(future.cancel)

    orchestrator = agent(server, long_task)
    server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="long_task")]))
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: orchestrator.abort())
    sender = threading.Thread(target=send)
    try:
        sender.start()
        run = orchestrator.run("hi")
    finally:
        sender.join()
        signal.signal(signal.SIGALRM, previous)
    assert stopped_by_abort == [True]
    assert run.stop_reason == "aborted"
    assert run.tool_calls[0].error == "aborted before the tool finished"
    assert len(server.requests) == 1


# A sync tool that hangs ---------------------------------------------------------------------

HANG = 300.0  # seconds a hung tool sleeps; every bound below is a small fraction of it

HUNG_SCRIPT = """
import asyncio, json, sys, time
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._tools import tool

@tool
def stuck() -> str:
    \"\"\"Hangs far longer than its timeout.\"\"\"
    time.sleep(float(sys.argv[3]))
    return "late"

params = {"api_base": sys.argv[1], "api_key": "loopback-not-a-secret"}
agent = Orchestrator("openai/loopback", [stuck], params=params, tool_timeout=0.5)
run = asyncio.run(agent.arun("go")) if sys.argv[2] == "arun" else agent.run("go")
print(json.dumps({"error": run.tool_calls[0].error, "output": run.output}))
"""


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_a_hung_sync_tool_does_not_hold_the_process(
    server: LoopbackServer, tmp_path: Path, mode: str
) -> None:
    # ``run`` keeps a loop per thread, closed at exit; ``asyncio.run`` shuts its loop's default
    # executor down: a tool's thread joined by either would hold the process for HANG seconds.
    script = tmp_path / "hung.py"
    script.write_text(HUNG_SCRIPT)
    server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="stuck")]), Reply(content="ok"))
    done = subprocess.run(
        [sys.executable, str(script), server.url, mode, str(HANG)],
        capture_output=True,
        text=True,
        timeout=HANG / 5,  # TimeoutExpired: the interpreter waited for the tool's thread
    )
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout.splitlines()[-1])
    assert reported == {
        "error": "tool 'stuck' did not finish within 0.5 s" + TIMEOUT_HINT,
        "output": "ok",
    }
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert (
        tool_message["content"] == "Error: tool 'stuck' did not finish within 0.5 s" + TIMEOUT_HINT
    )


HUNG_TEST = """
import time
import pytest
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec
from pytest_harness.orchestrator._tools import tool

@tool
def stuck() -> str:
    \"\"\"Hangs far longer than its timeout.\"\"\"
    time.sleep(%r)
    return "late"

@pytest.mark.harness(cassette=False)
def test_agent(harness):
    with LoopbackServer() as server:
        server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="stuck")]),
                     Reply(content="gave up"))
        agent = harness.orchestrator(server.model, [stuck], params=server.params,
                                     tool_timeout=0.5)
        run = agent.run("go")
    assert run.tool_calls[0].error.startswith("tool 'stuck' did not finish within 0.5 s (")
    assert run.output == "gave up"
"""


def test_a_pytest_session_with_a_hung_sync_tool_finishes_and_reports(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")  # its own server
    pytester.makepyfile(test_hung=HUNG_TEST % HANG)
    # Timeout: the session's interpreter waited for the tool's thread.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=HANG / 5)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK


def test_a_sync_tool_past_its_timeout_is_left_running_and_its_late_result_dropped(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    release, returned = threading.Event(), threading.Event()

    @tool(timeout=0.2)
    def stuck() -> str:
        """Hangs until released."""
        release.wait(HANG)
        returned.set()
        return "late"

    server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="stuck")]), Reply(content="ok"))
    try:
        run = agent(server, stuck).run("go")
        assert not returned.is_set()  # the run went on while the tool still ran
        (thread,) = [t for t in threading.enumerate() if t.name == "harness-tool stuck"]
        assert thread.daemon  # nothing joins it at exit
    finally:
        release.set()
    assert run.tool_calls[0].error == "tool 'stuck' did not finish within 0.2 s" + TIMEOUT_HINT
    thread.join(HANG)
    # Its late result reaches the loop on its next run, and is dropped there without a word.
    server.queue(Reply(content="next"))
    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        assert agent(server).run("again").output == "next"
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
