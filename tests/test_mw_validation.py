"""The Validation middleware against a scripted model on loopback: real litellm, real HTTP."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_harness.errors import (
    ConfigError,
    DegenerateResponse,
    HarnessWarning,
    InvalidResponse,
    RunFailed,
)
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._pipeline import Validation, count_usage
from pytest_harness.orchestrator._retry import Retry
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

THINK_ONLY = Reply(content="<think>It may have shipped, or not.</think>")


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


def agent(
    server: LoopbackServer, validation: Validation | None = None, **options: Any
) -> Orchestrator:
    # The planned default order: count_usage, Validation, Retry, then the seam.
    stack = [count_usage, validation or Validation(), Retry(base_delay=0.01, max_delay=0.04)]
    return Orchestrator(server.model, [lookup], params=server.params, middleware=stack, **options)


def lookup_call() -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A-1"})])


def events(run: Any) -> list[tuple[int, str, str]]:
    return [(e.request, e.kind, e.detail) for e in run.events]


def test_an_empty_reply_is_asked_for_again(server: LoopbackServer) -> None:
    server.queue(Reply(content=""), Reply(content="It shipped."))
    run = agent(server).run("Where is A-1?")
    assert (run.stop_reason, run.output, run.requests) == ("done", "It shipped.", 1)
    assert len(server.requests) == 2
    # The empty answer never joined the conversation: the same request went again.
    assert server.requests[1]["messages"] == server.requests[0]["messages"]
    assert [m["role"] for m in run.messages] == ["user", "assistant"]
    assert events(run) == [(1, "invalid_response", "empty_response; asking again (1 of 1)")]


def test_two_empty_replies_fail_the_run_and_keep_its_messages(server: LoopbackServer) -> None:
    server.queue(lookup_call(), Reply(content=""), Reply(content=" "))
    with pytest.raises(RunFailed, match="request 2 of the run failed") as failure:
        agent(server).run("Where is A-1?")
    cause = failure.value.__cause__
    assert isinstance(cause, InvalidResponse)
    assert cause.reason == "empty_response"
    assert cause.response is not None
    assert cause.response.content == " "  # the second one
    run = failure.value.run
    assert (run.stop_reason, run.tools_called) == ("error", ["lookup"])
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool"]
    assert events(run) == [(2, "invalid_response", "empty_response; asking again (1 of 1)")]
    assert len(server.requests) == 3


def test_a_stream_cut_off_mid_way_is_asked_for_again(server: LoopbackServer) -> None:
    pieces: list[str] = []
    # The role chunk and two words arrive, then the connection drops: no finish reason.
    server.queue(Reply(content="one two three four", cut_after=3), Reply(content="whole answer"))
    run = agent(server, on_content=pieces.append).run("hi")
    assert server.requests[0]["stream"] is True
    assert (run.output, len(server.requests)) == ("whole answer", 2)
    assert events(run) == [(1, "invalid_response", "interrupted; asking again (1 of 1)")]
    # The stream's listener heard the cut-off words before the whole answer.
    assert pieces == ["one ", "two ", "whole ", "answer"]


def test_it_asks_again_as_many_times_as_allowed(server: LoopbackServer) -> None:
    server.queue(Reply(content=""), Reply(content=""), Reply(content="third time"))
    run = agent(server, Validation(retries=2)).run("hi")
    assert (run.output, len(server.requests)) == ("third time", 3)
    assert [e.detail for e in run.events] == [
        "empty_response; asking again (1 of 2)",
        "empty_response; asking again (2 of 2)",
    ]


def test_with_no_retries_an_invalid_reply_fails_at_once(server: LoopbackServer) -> None:
    server.queue(Reply(content=""))
    with pytest.raises(RunFailed) as failure:
        agent(server, Validation(retries=0)).run("hi")
    assert isinstance(failure.value.__cause__, InvalidResponse)
    assert (len(server.requests), failure.value.run.events) == (1, ())


@pytest.mark.parametrize(
    "reply",
    [THINK_ONLY, Reply(content="", reasoning="It may have shipped, or not.")],
    ids=["think-block", "reasoning-only"],
)
def test_a_think_only_reply_is_not_asked_again_and_fails_per_policy(
    server: LoopbackServer, reply: Reply
) -> None:
    server.queue(reply)
    with pytest.raises(RunFailed) as failure:
        agent(server).run("Where is A-1?")
    cause = failure.value.__cause__
    assert isinstance(cause, DegenerateResponse)
    assert "harness_degenerate = warn" in str(cause)  # the seam's advice, unchanged
    assert (len(server.requests), failure.value.run.events) == (1, ())


@pytest.mark.harness(degenerate="warn")
def test_under_warn_a_think_only_reply_warns_and_ends_the_run(server: LoopbackServer) -> None:
    server.queue(THINK_ONLY)
    with pytest.warns(HarnessWarning, match="degenerate response"):
        run = agent(server).run("Where is A-1?")
    assert (run.stop_reason, run.output, run.requests) == ("done", "", 1)
    assert (len(server.requests), run.events) == (1, ())
    assert run.response is not None
    assert run.response.reasoning == "It may have shipped, or not."


@pytest.mark.harness(degenerate="warn")
def test_under_warn_an_empty_reply_is_taken_as_it_is(server: LoopbackServer) -> None:
    server.queue(Reply(content=""))
    with pytest.warns(HarnessWarning, match="empty response"):
        run = agent(server).run("hi")
    assert (run.stop_reason, run.output, len(server.requests), run.events) == ("done", "", 1, ())


@pytest.mark.harness(degenerate="off")
def test_under_off_nothing_is_checked_or_asked_again(server: LoopbackServer) -> None:
    server.queue(Reply(content=""))
    with warnings.catch_warnings():
        warnings.simplefilter("error", HarnessWarning)
        run = agent(server).run("hi")
    assert (run.stop_reason, run.output, len(server.requests), run.events) == ("done", "", 1, ())


@pytest.mark.parametrize("retries", [-1, 1.5, True])
def test_a_wrong_retries_names_the_fix(retries: Any) -> None:
    with pytest.raises(ConfigError, match=r"Validation\(retries=...\) expects a whole number, 0"):
        Validation(retries=retries)
