"""The agent loop against a scripted model on loopback: real litellm calls over real HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import RunFailed
from pytest_harness.orchestrator._loop import MAX_REQUESTS_PER_TURN, Orchestrator
from pytest_harness.orchestrator._middleware import defaults
from pytest_harness.orchestrator._pipeline import ModelCall, Next
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run
TIMEOUT_HINT = " (its timeout: @tool(timeout=...), else the orchestrator's tool_timeout)"


@tool
def lookup(order: str) -> dict[str, str]:
    """Look an order up.

    Args:
        order: the order number, like A-1.
    """
    return {"order": order, "status": "shipped"}


@tool
async def refund(order: str, amount: float) -> str:
    """Refund part of an order."""
    return f"refunded {amount:.2f} on {order}"


def agent(server: LoopbackServer, *tools: Any, **options: Any) -> Orchestrator:
    return Orchestrator(server.model, tools or [lookup, refund], params=server.params, **options)


def calls(*specs: tuple[str, Any]) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name=n, arguments=a) for n, a in specs])


def test_a_batch_runs_and_its_results_go_back_in_the_models_order(server: LoopbackServer) -> None:
    server.queue(
        calls(("lookup", {"order": "A-1"}), ("refund", {"order": "A-1", "amount": 5})),
        Reply(content="Your order shipped; 5.00 refunded."),
    )
    run = agent(server, system_prompt="You are a support agent.").run("Where is A-1?")
    assert run.stop_reason == "done"
    assert run.output == "Your order shipped; 5.00 refunded."
    assert run.requests == 2
    assert run.tools_called == ["lookup", "refund"]
    assert [c.request for c in run.tool_calls] == [1, 1]
    assert run.tool_calls[0].result == '{"order":"A-1","status":"shipped"}'
    assert run.tool_calls[1].result == "refunded 5.00 on A-1"
    first, second = server.requests
    assert first["messages"][0] == {"role": "system", "content": "You are a support agent."}
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup", "refund"]
    sent = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == ["call_0", "call_1"]
    assert sent[1]["content"] == "refunded 5.00 on A-1"
    assert run.usage.total_tokens > 0
    assert [m["role"] for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]


def test_tools_of_a_batch_run_concurrently(server: LoopbackServer) -> None:
    @tool
    async def slow(n: int) -> int:
        """Sleep, then echo."""
        await asyncio.sleep(0.4)
        return n

    @tool
    def slow_sync(n: int) -> int:
        """Sleep in a thread, then echo."""
        time.sleep(0.4)
        return n

    batch = [("slow", {"n": i}) for i in range(4)] + [("slow_sync", {"n": i}) for i in range(4)]
    server.queue(calls(*batch), Reply(content="done"))
    run = agent(server, slow, slow_sync).run("go")
    # Every tool started before any finished: all eight were running at once.
    assert max(c.started for c in run.tool_calls) < min(c.ended for c in run.tool_calls)
    assert [c.result for c in run.tool_calls] == ["0", "1", "2", "3"] * 2


def test_callbacks_hear_the_batch_first_then_each_result(server: LoopbackServer) -> None:
    heard: list[Any] = []
    server.queue(
        calls(("lookup", {"order": "A-1"}), ("nope", {})),
        Reply(content="ok"),
    )
    agent(
        server,
        on_tool_call_start=lambda batch: heard.append(("start", batch)),
        on_tool_result=lambda name, result: heard.append(("result", name, result)),
    ).run("hi")
    assert heard[0] == (
        "start",
        [{"name": "lookup", "arguments": {"order": "A-1"}}, {"name": "nope", "arguments": {}}],
    )
    assert sorted(heard[1:]) == [
        ("result", "lookup", '{"order":"A-1","status":"shipped"}'),
        ("result", "nope", "Error: there is no tool named 'nope'; the tools are: lookup, refund"),
    ]


def test_async_callbacks_are_awaited_in_order_before_the_next_request(
    server: LoopbackServer,
) -> None:
    heard: list[Any] = []

    async def sent(call: ModelCall, next: Next) -> ModelResponse:
        heard.append(("request", call.number))
        return await next(call)

    # The two hooks yield to the loop first: one left running beside the run (or never
    # awaited at all) would be heard after the tools ran or the next request, or not at all.
    async def on_tool_call_start(batch: list[dict[str, Any]]) -> None:
        await asyncio.sleep(0.01)
        heard.append(("start", batch))

    async def on_tool_result(name: str, result: str) -> None:
        await asyncio.sleep(0.01)
        heard.append(("result", name, result))

    async def on_question(question: str) -> str:  # the tool's body: heard as it starts
        heard.append(("question", question))
        return "A-1"

    server.queue(
        calls(("question", {"question": "Which order?"})),
        calls(("lookup", {"order": "A-1"})),
        Reply(content="It shipped."),
    )
    run = agent(
        server,
        middleware=[*defaults(), sent],
        on_tool_call_start=on_tool_call_start,
        on_tool_result=on_tool_result,
        on_question=on_question,
    ).run("help")
    assert run.output == "It shipped."
    assert heard == [
        ("request", 1),
        ("start", [{"name": "question", "arguments": {"question": "Which order?"}}]),
        ("question", "Which order?"),
        ("result", "question", "A-1"),
        ("request", 2),
        ("start", [{"name": "lookup", "arguments": {"order": "A-1"}}]),
        ("result", "lookup", '{"order":"A-1","status":"shipped"}'),
        ("request", 3),
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{not json", "lookup"),
        ({"order": 5}, "order"),
        ({}, "order"),
    ],
    ids=["not-json", "wrong-type", "missing"],
)
def test_bad_arguments_become_an_error_result_for_the_model(
    server: LoopbackServer, arguments: Any, expected: str
) -> None:
    server.queue(calls(("lookup", arguments)), Reply(content="sorry"))
    run = agent(server).run("hi")
    (record,) = run.tool_calls
    assert record.error is not None
    assert expected in record.error
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == f"Error: {record.error}"
    assert run.stop_reason == "done"


def test_a_raising_tool_and_a_hanging_tool_become_error_results(server: LoopbackServer) -> None:
    ended: list[str] = []

    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("database down")

    @tool(timeout=0.2)
    async def hangs() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        ended.append("slept")
        return "never"

    server.queue(calls(("broken", {}), ("hangs", {})), Reply(content="both failed"))
    run = agent(server, broken, hangs).run("hi")
    assert run.tool_calls[0].error == "tool 'broken' raised RuntimeError: database down"
    assert run.tool_calls[1].error == "tool 'hangs' did not finish within 0.2 s" + TIMEOUT_HINT
    assert ended == ["cancelled"]  # cut at its timeout, never left to sleep on
    assert run.output == "both failed"


def test_a_model_that_never_stops_calling_tools_meets_the_cap(server: LoopbackServer) -> None:
    # A new order each time: the same call again and again would be a doom loop instead.
    server.handler = lambda body: calls(("lookup", {"order": f"A-{len(body['messages'])}"}))
    run = agent(server).run("loop forever")
    assert run.stop_reason == "max_requests"
    assert run.requests == MAX_REQUESTS_PER_TURN
    assert len(server.requests) == MAX_REQUESTS_PER_TURN


def test_the_tool_error_limit_stops_the_run(server: LoopbackServer) -> None:
    server.handler = lambda body: calls(("nope", {}))
    run = agent(server, max_tool_errors=3).run("hi")
    assert run.stop_reason == "tool_error_limit"
    assert run.requests == 3
    assert all(not c.ok for c in run.tool_calls)


def test_abort_from_another_thread_cancels_tools_and_stops(server: LoopbackServer) -> None:
    ended: list[str] = []
    entered = threading.Event()

    @tool
    async def long_task() -> str:
        """Takes long."""
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise
        ended.append("slept")
        return "late"

    server.queue(calls(("long_task", {})))
    orchestrator = agent(server, long_task)
    threading.Thread(target=lambda: entered.wait(10) and orchestrator.abort()).start()
    run = orchestrator.run("hi")
    assert run.stop_reason == "aborted"
    assert ended == ["cancelled"]  # cut by the abort, never left to sleep on
    assert run.tool_calls[0].error == "aborted before the tool finished"
    assert len(server.requests) == 1  # no request after the abort


def test_run_again_continues_the_conversation(server: LoopbackServer) -> None:
    server.queue(Reply(content="Hello!"), Reply(content="Still here."))
    orchestrator = agent(server, system_prompt="Be brief.")
    assert orchestrator.run("hi").output == "Hello!"
    second = orchestrator.run("and now?")
    assert second.output == "Still here."
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert second.requests == 1


def test_streamed_content_and_tool_calls(server: LoopbackServer) -> None:
    pieces: list[str] = []
    thoughts: list[str] = []
    server.queue(
        Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "B-2"})]),
        Reply(content="It shipped yesterday.", reasoning="check the status"),
    )
    run = agent(server, on_content=pieces.append, on_reasoning=thoughts.append).run("B-2?")
    assert server.requests[0]["stream"] is True
    assert run.tool_calls[0].arguments == {"order": "B-2"}
    assert "".join(pieces) == "It shipped yesterday."
    assert "".join(thoughts) == "check the status"
    assert run.response is not None
    assert run.response.reasoning == "check the status"


def test_the_question_tool_is_offered_only_with_its_callback(server: LoopbackServer) -> None:
    server.queue(
        calls(("question", {"question": "Which order?"})),
        Reply(content="Thanks, looking up A-1."),
    )
    asked: list[str] = []
    run = agent(server, on_question=lambda q: asked.append(q) or "A-1").run("help")
    assert asked == ["Which order?"]
    assert run.tool_calls[0].result == "A-1"
    assert "question" in [t["function"]["name"] for t in server.requests[0]["tools"]]
    server.reset()
    server.queue(Reply(content="hi"))
    agent(server).run("hello")
    assert "question" not in [t["function"]["name"] for t in server.requests[0]["tools"]]


def test_a_provider_error_mid_run_keeps_the_messages(server: LoopbackServer) -> None:
    server.queue(calls(("lookup", {"order": "A-1"})), Reply(status=400, error="bad request"))
    with pytest.raises(RunFailed, match="request 2 of the run failed") as failure:
        agent(server).run("hi")
    run = failure.value.run
    assert run.stop_reason == "error"
    assert run.tools_called == ["lookup"]
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool"]


def test_arun_is_the_async_core(server: LoopbackServer) -> None:
    server.queue(Reply(content="async hello"))
    run = asyncio.run(agent(server).arun("hi"))
    assert run.output == "async hello"
    assert json.loads(json.dumps(run.messages[-1]))["content"] == "async hello"


def trajectory_run(server: LoopbackServer) -> Any:
    server.queue(
        calls(("lookup", {"order": "A-1"}), ("lookup", {"order": "B-2"})),
        calls(("refund", {"order": "A-1", "amount": 5})),
        Reply(content="done"),
    )
    return agent(server).run("sort it out")


def test_trajectory_assertions_pass_on_what_happened(server: LoopbackServer) -> None:
    run = trajectory_run(server)
    assert run.assert_called("lookup", {"order": "B-2"}).request == 1
    assert run.assert_called("refund", lambda args: args["amount"] > 1).request == 2
    run.assert_not_called("question")
    run.assert_called_times("lookup", 2)
    run.assert_order("lookup", "refund")
    run.assert_requests_at_most(3)
    run.assert_stopped("done")


@pytest.mark.parametrize(
    ("check", "problem"),
    [
        (
            lambda r: r.assert_called("lookup", {"order": "Z-9"}),
            'expected lookup to be called with {"order": "Z-9"}; it was called 2 time(s)',
        ),
        (
            lambda r: r.assert_called("question"),
            "expected question to be called; it was never called",
        ),
        (
            lambda r: r.assert_not_called("refund"),
            "expected refund not to be called; it was, 1 time(s)",
        ),
        (
            lambda r: r.assert_called_times("lookup", 1),
            "expected lookup to be called 1 time(s); it was 2",
        ),
        (
            lambda r: r.assert_order("refund", "lookup"),
            "expected the tools in the order ['refund', 'lookup']; the order was "
            "['lookup', 'lookup', 'refund']",
        ),
        (
            lambda r: r.assert_requests_at_most(2),
            "expected at most 2 model requests; the run made 3",
        ),
        (
            lambda r: r.assert_stopped("aborted"),
            "expected the run to stop with 'aborted'; it stopped with 'done'",
        ),
    ],
    ids=["called-with", "called", "not-called", "times", "order", "requests", "stopped"],
)
def test_a_failing_trajectory_assertion_prints_the_trajectory(
    server: LoopbackServer, check: Any, problem: str
) -> None:
    run = trajectory_run(server)
    with pytest.raises(AssertionError) as failure:
        check(run)
    message = str(failure.value)
    assert message.startswith(problem + ".\nstop reason: done; requests: 3")
    table = message.split("\n\n", 1)[1].splitlines()
    assert table[0].split() == ["request", "tool", "arguments", "result", "or", "error", "time"]
    assert table[2].split()[:3] == ["1", "lookup", '{"order":']
    assert "refunded 5.00 on A-1" in table[4]
    assert len(table) == 5  # header, rule, three calls


RUNS = """
import pytest
from pytest_harness.orchestrator import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

@tool
def lookup(order: str) -> str:
    "Look an order up."
    return "shipped"

@pytest.mark.harness(cassette=False)
def test_agent(harness):
    with LoopbackServer() as server:
        server.queue(Reply(content=None, tool_calls=[ToolCallSpec(name="lookup",
                                                                  arguments={"order": "A-1"})]),
                     Reply(content="It shipped."))
        run = harness.orchestrator(server.model, [lookup], params=server.params).run("A-1?")
    assert harness.runs == [run]
    run.assert_called("lookup", {"order": "A-1"})
"""


def test_each_run_is_in_the_session_report_and_json(pytester: pytest.Pytester) -> None:
    # In a subprocess: an in-process run would import and then forget litellm's lazy
    # modules (openai's), leaving this process with two copies of their classes.
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")  # its own server
    pytester.makepyfile(test_runs=RUNS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*pytest-harness agent runs*", "*test_agent*lookup*0*2*done*"])
    (data,) = json.loads((pytester.path / "r.json").read_text())["runs"]
    assert data["tools"] == ["lookup"]
    assert (data["requests"], data["stop_reason"], data["tool_errors"]) == (2, "done", 0)
    assert (data["question"], data["answer"]) == ("A-1?", "It shipped.")
    assert data["steps"] == [  # the trajectory, for the HTML report
        {
            "kind": "tool",
            "request": 1,
            "tool": "lookup",
            "arguments": '{"order": "A-1"}',
            "result": "shipped",
            "error": None,
            "server": None,  # the MCP server that ran it (traffic only)
        }
    ]


def test_abort_from_a_callback_runs_no_tool_and_makes_no_request(
    server: LoopbackServer,
) -> None:
    ran: list[str] = []

    @tool
    def side_effect() -> str:
        """Must not run once aborted."""
        ran.append("ran")
        return "ran"

    server.queue(calls(("side_effect", {})))
    holder: list[Orchestrator] = []
    orchestrator = agent(server, side_effect, on_tool_call_start=lambda batch: holder[0].abort())
    holder.append(orchestrator)
    run = orchestrator.run("hi")
    assert run.stop_reason == "aborted"
    assert ran == []
    assert run.tool_calls[0].error == "aborted before the tool finished"
    assert len(server.requests) == 1


def test_a_lower_request_cap_per_orchestrator(server: LoopbackServer) -> None:
    server.handler = lambda body: calls(("lookup", {"order": "A-1"}))
    run = agent(server, max_requests=2).run("hi")
    assert (run.stop_reason, run.requests, len(server.requests)) == ("max_requests", 2, 2)
    with pytest.raises(ValueError, match="expects 1 to 100, got 0"):
        agent(server, max_requests=0)


@pytest.mark.parametrize("middleware", [[], [defaults()[-1]]], ids=["none", "retry-only"])
def test_the_request_cap_holds_without_count_usage(
    server: LoopbackServer, middleware: list[Any]
) -> None:
    """A pipeline of one's own may leave count_usage out: the loop still stops at the cap."""
    server.handler = lambda body: calls(("lookup", {"order": "A-1"}))
    run = agent(server, max_requests=3, middleware=middleware).run("hi")
    assert (run.stop_reason, run.requests, len(server.requests)) == ("max_requests", 3, 3)
    assert [call.request for call in run.tool_calls] == [1, 2, 3]
