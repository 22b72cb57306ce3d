"""The pipeline's protocol and its small built-ins: usage limits, reasoning, events, your own
middleware, and the trajectory table and report that show what the middleware did."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness.errors import StopRun
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import Reasoning, UsageLimits, count_usage, defaults
from pytest_harness.orchestrator._pipeline import ModelCall, Next
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def call_lookup(body: dict[str, Any]) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A"})])


def agent(server: LoopbackServer, **options: Any) -> Orchestrator:
    return Orchestrator(server.model, [lookup], params=server.params, **options)


def test_a_request_limit_stops_the_run_before_the_request_over_it(server: LoopbackServer) -> None:
    server.handler = call_lookup
    run = agent(server, limits=UsageLimits(requests=2)).run("go")
    assert (run.stop_reason, run.requests, len(server.requests)) == ("usage_limit", 2, 2)
    assert [(e.request, e.kind) for e in run.events] == [(3, "usage_limit")]
    assert run.events[0].detail == "2 requests made, the limit is 2"
    assert run.tools_called == ["lookup", "lookup"]  # the tool results are kept
    assert run.messages[-1]["role"] == "tool"


def test_a_token_limit_stops_the_run_once_reached(server: LoopbackServer) -> None:
    server.handler = call_lookup
    run = agent(server, limits=UsageLimits(total_tokens=1)).run("go")
    assert (run.stop_reason, run.requests, len(server.requests)) == ("usage_limit", 1, 1)
    used = run.usage.total_tokens
    assert run.events[0].detail == f"{used} total tokens used, the limit is 1"


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match=r"UsageLimits\(cost=\.\.\.\) expects a number of 0 or"):
        UsageLimits(cost=-1)


def test_reasoning_effort_goes_to_the_provider_and_reasoning_stays_apart(
    server: LoopbackServer,
) -> None:
    thoughts: list[str] = []
    server.queue(Reply(content="It shipped.", reasoning="The order is A; check status."))
    run = agent(server, reasoning="low", on_reasoning=thoughts.append).run("Where is A?")
    assert server.requests[0]["reasoning_effort"] == "low"
    assert run.output == "It shipped."
    assert "".join(thoughts) == "The order is A; check status."
    assert run.response is not None
    assert run.response.reasoning == "The order is A; check status."
    assert "check status" not in str(run.messages[-1]["content"])
    with pytest.raises(ValueError, match=r"Reasoning\(effort=\.\.\.\) expects one of minimal, low"):
        Reasoning("extreme")  # type: ignore[arg-type]


def test_your_own_middleware_in_a_few_lines(server: LoopbackServer) -> None:
    async def house_rules(call: ModelCall, next: Next) -> ModelResponse:
        call.params["temperature"] = 0  # change the request
        response = await next(call)
        if "refund" in response.text:  # read the response
            call.event("policy", "the model promised a refund")
        return response

    server.queue(Reply(content="A refund is on its way."))
    run = agent(server, middleware=[*defaults(), house_rules]).run("My parcel is late.")
    assert server.requests[0]["temperature"] == 0
    assert [(e.kind, e.detail) for e in run.events] == [("policy", "the model promised a refund")]


def test_a_call_that_came_without_an_id_is_named_for_its_result(server: LoopbackServer) -> None:
    """litellm gives every call an id; a middleware answering on its own may give none: the
    run names it (``call_<request>_<n>``) and sends its result back under that name."""

    async def scripted(call: ModelCall, next: Next) -> ModelResponse:
        if call.number > 1:
            return await next(call)
        raw = '{"order": "A"}'
        asked = ToolCall(id=None, name="lookup", arguments={"order": "A"}, raw_arguments=raw)
        return ModelResponse(content=None, tool_calls=(asked,), finish_reason="tool_calls")

    server.queue(Reply(content="A shipped."))
    run = agent(server, middleware=[scripted]).run("go")
    assert [(c.id, c.result) for c in run.tool_calls] == [("call_1_0", "A shipped")]
    (sent,) = [m for m in server.requests[0]["messages"] if m["role"] == "tool"]
    assert sent["tool_call_id"] == "call_1_0"
    assert server.requests[0]["messages"][-2]["tool_calls"][0]["id"] == "call_1_0"


def test_a_middleware_stops_the_run_with_its_reason(server: LoopbackServer) -> None:
    async def one_lookup_only(call: ModelCall, next: Next) -> ModelResponse:
        if call.number > 1:
            call.event("budget", "one lookup per question")
            raise StopRun("usage_limit", "one lookup per question")
        return await next(call)

    server.handler = call_lookup
    run = agent(server, middleware=[one_lookup_only, count_usage]).run("go")
    assert (run.stop_reason, run.requests, run.tools_called) == ("usage_limit", 1, ["lookup"])


def test_events_are_in_the_trajectory_table_before_the_tools_of_their_request(
    server: LoopbackServer,
) -> None:
    async def note(call: ModelCall, next: Next) -> ModelResponse:
        call.event("retry", f"note at request {call.number}")
        return await next(call)

    server.queue(
        call_lookup({}),
        Reply(content="A shipped."),
    )
    run = agent(server, middleware=[note, count_usage]).run("go")
    lines = run.table().splitlines()[2:]
    assert [line.split()[:2] for line in lines] == [
        ["1", "[retry]"],
        ["1", "lookup"],
        ["2", "[retry]"],
    ]
    with pytest.raises(AssertionError, match=r"(?s)expected lookup not to be called.*\[retry\]"):
        run.assert_not_called("lookup")


def test_options_of_the_default_pipeline_refuse_your_own_list(server: LoopbackServer) -> None:
    with pytest.raises(ValueError, match=r"Orchestrator\(limits=\.\.\.\) applies to the default"):
        agent(server, middleware=[count_usage], limits=UsageLimits(requests=1))


def test_events_reach_the_session_report_and_json(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")  # its own server
    pytester.makepyfile(
        test_agent="""
        import pytest
        from pytest_harness.orchestrator._loop import Orchestrator
        from pytest_harness.orchestrator._middleware import UsageLimits
        from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

        pytestmark = pytest.mark.harness(cassette=False)

        def lookup(order: str) -> str:
            '''Look an order up.'''
            return "shipped"

        def test_agent():
            with LoopbackServer() as server:
                server.handler = lambda body: Reply(
                    content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A"})]
                )
                agent = Orchestrator(server.model, [lookup], params=server.params,
                                     limits=UsageLimits(requests=1))
                assert agent.run("go").stop_reason == "usage_limit"
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--harness-report=report.json"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_agent*lookup*usage_limit*usage_limit x1*"])
    runs = json.loads((pytester.path / "report.json").read_text())["runs"]
    assert runs[0]["events"] == {"usage_limit": 1}
