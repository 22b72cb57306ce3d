"""The Retry middleware against a scripted model on loopback: real litellm over real HTTP."""

from __future__ import annotations

import asyncio
import socket
import threading
from email.utils import formatdate
from typing import Any

import pytest

from pytest_harness._model.response import ModelResponse
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import ConfigError, NetworkBlocked, RetriesExhausted, RunFailed
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._pipeline import ModelCall, Next, count_usage
from pytest_harness.orchestrator._retry import Retry, transient
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

FAST = {"base_delay": 0.01, "max_delay": 0.04, "jitter": False}


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order} shipped"


class Attempts:
    """A middleware inside Retry: what each attempt sent, as the seam received it."""

    def __init__(self) -> None:
        self.params: list[dict[str, Any]] = []

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        self.params.append(dict(call.params))
        return await next(call)


def agent(params: dict[str, Any], retry: Retry, *inner: Any, **options: Any) -> Orchestrator:
    middleware = [count_usage, retry, *inner]
    return Orchestrator(
        "openai/loopback", [lookup], params=params, middleware=middleware, **options
    )


def events(run: Any) -> list[tuple[int, str, str]]:
    return [(e.request, e.kind, e.detail) for e in run.events]


def test_a_429_waits_as_long_as_its_retry_after_asks(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, headers={"Retry-After": "1"}), Reply(content="done"))
    run = agent(server.params, Retry(**FAST)).run("hi")
    assert (run.stop_reason, run.output, run.requests) == ("done", "done", 1)
    assert len(server.requests) == 2
    # 1 s, as asked: not the 0.01 s backoff.
    assert events(run) == [
        (1, "retry", "HTTP 429, Retry-After 1.0 s; waiting 1.0 s (attempt 2 of 4)")
    ]


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ({"Retry-After": formatdate(0, usegmt=True)}, "HTTP 503, Retry-After 0.0 s; waiting 0.0 s"),
        (
            {"retry-after-ms": "20", "Retry-After": "9"},
            "HTTP 503, Retry-After 0.020 s; waiting 0.020 s",
        ),
        ({"Retry-After": "soon"}, "HTTP 503; waiting 0.010 s"),
    ],
    ids=["http-date-past", "milliseconds-first", "unreadable"],
)
def test_the_forms_of_retry_after(
    server: LoopbackServer, headers: dict[str, str], detail: str
) -> None:
    server.queue(Reply(status=503, headers=headers), Reply(content="done"))
    run = agent(server.params, Retry(**FAST)).run("hi")
    assert run.output == "done"
    assert events(run) == [(1, "retry", f"{detail} (attempt 2 of 4)")]


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
def test_each_passing_status_is_retried_through_litellm(
    server: LoopbackServer, status: int
) -> None:
    # litellm reports a 504 (and a 408) as a Timeout: the status the server sent decides.
    server.queue(Reply(status=status, error="try again"), Reply(content="done"))
    run = agent(server.params, Retry(**FAST)).run("hi")
    assert (run.stop_reason, run.output, run.requests) == ("done", "done", 1)
    assert len(server.requests) == 2  # the failed attempt and the retry, as the server saw them
    assert events(run) == [(1, "retry", f"HTTP {status}; waiting 0.010 s (attempt 2 of 4)")]


def test_a_retry_after_beyond_the_wait_left_gives_up_at_once(server: LoopbackServer) -> None:
    server.queue(Reply(status=429, headers={"Retry-After": "120"}, error="slow down"))
    with pytest.raises(RunFailed, match="request 1 of the run failed") as failure:
        agent(server.params, Retry(max_total_wait=30)).run("hi")
    gave_up = failure.value.__cause__
    assert isinstance(gave_up, RetriesExhausted)
    assert (gave_up.attempts, gave_up.waited) == (1, 0.0)
    assert "the next wait, 120.0 s (Retry-After), is more than the 30.0 s left" in str(gave_up)
    assert len(server.requests) == 1
    assert failure.value.run.events == ()


def test_a_500_storm_gives_up_after_max_attempts_and_keeps_the_messages(
    server: LoopbackServer,
) -> None:
    def storm(body: dict[str, Any]) -> Reply:
        if len(server.requests) == 1:
            return Reply(
                content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A-1"})]
            )
        return Reply(status=500, error="overloaded")

    server.handler = storm
    with pytest.raises(RunFailed, match="request 2 of the run failed") as failure:
        agent(server.params, Retry(max_attempts=3, **FAST)).run("Where is A-1?")
    gave_up = failure.value.__cause__
    assert isinstance(gave_up, RetriesExhausted)
    assert gave_up.attempts == 3
    assert gave_up.waited == pytest.approx(0.03)
    assert gave_up.__cause__ is gave_up.last
    assert getattr(gave_up.last, "status_code", None) == 500
    message = str(gave_up)
    assert "failed 3 time(s)" in message
    assert "no attempt left (max_attempts=3)" in message
    assert "overloaded" in message  # the last error
    assert "Retry(max_attempts=..., max_total_wait=...)" in message  # what to do
    assert len(server.requests) == 1 + 3  # the SDK retried none of them
    run = failure.value.run
    assert (run.stop_reason, run.tools_called) == ("error", ["lookup"])
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool"]
    assert events(run) == [
        (2, "retry", "HTTP 500; waiting 0.010 s (attempt 2 of 3)"),
        (2, "retry", "HTTP 500; waiting 0.020 s (attempt 3 of 3)"),
    ]


def test_the_sdks_own_retries_stay_off_whatever_asks_for_them(server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(status=502)
    attempts = Attempts()
    params = {**server.params, "num_retries": 5, "max_retries": 5}
    with scope.override(retries=5), pytest.raises(RunFailed):
        agent(params, Retry(max_attempts=2, **FAST), attempts).run("hi")
    assert len(server.requests) == 2  # 12 if the SDK retried each attempt five times
    assert [(p["num_retries"], p["max_retries"]) for p in attempts.params] == [(0, 0), (0, 0)]


@pytest.mark.parametrize(
    "reply",
    [Reply(status=400), Reply(status=401), Reply(status=404), Reply(raw="not json")],
    ids=["400", "401", "404", "malformed-body"],
)
def test_an_error_asking_again_would_not_cure_is_raised_at_once(
    server: LoopbackServer, reply: Reply
) -> None:
    server.handler = lambda body: reply
    with pytest.raises(RunFailed) as failure:
        agent(server.params, Retry(**FAST)).run("hi")
    assert not isinstance(failure.value.__cause__, RetriesExhausted)
    assert len(server.requests) == 1
    assert failure.value.run.events == ()


def test_a_timeout_is_retried(server: LoopbackServer) -> None:
    server.queue(Reply(delay=3.0), Reply(content="done"))
    run = agent({**server.params, "timeout": 0.5}, Retry(**FAST)).run("hi")
    assert run.output == "done"
    assert len(server.requests) == 2
    assert events(run) == [(1, "retry", "timeout; waiting 0.010 s (attempt 2 of 4)")]


def test_a_stream_dropped_before_its_first_chunk_is_retried(server: LoopbackServer) -> None:
    pieces: list[str] = []
    server.queue(Reply(content="lost words", cut_after=0), Reply(content="hello there"))
    run = agent(server.params, Retry(**FAST), on_content=pieces.append).run("hi")
    assert server.requests[0]["stream"] is True
    assert (run.output, "".join(pieces)) == ("hello there", "hello there")
    assert events(run) == [(1, "retry", "connection error; waiting 0.010 s (attempt 2 of 4)")]


def test_a_refused_connection_is_retried_until_the_attempts_are_spent() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    params = {"api_base": f"http://127.0.0.1:{port}/v1", "api_key": "loopback-not-a-secret"}
    attempts = Attempts()
    with pytest.raises(RunFailed) as failure:
        agent(params, Retry(max_attempts=3, **FAST), attempts).run("hi")
    gave_up = failure.value.__cause__
    assert isinstance(gave_up, RetriesExhausted)
    assert len(attempts.params) == gave_up.attempts == 3
    assert [e.detail.split(";")[0] for e in failure.value.run.events] == ["connection error"] * 2


def test_an_abort_ends_a_retry_wait_and_the_run(server: LoopbackServer) -> None:
    answered = threading.Event()

    def slow_down(body: dict[str, Any]) -> Reply:
        answered.set()
        return Reply(status=429, headers={"Retry-After": "20"})

    server.handler = slow_down
    orchestrator = agent(server.params, Retry(**FAST))
    threading.Thread(target=lambda: answered.wait(10) and orchestrator.abort()).start()
    run = orchestrator.run("hi")
    assert (run.stop_reason, run.requests, len(server.requests)) == ("aborted", 1, 1)
    assert [e.detail for e in run.events] == [
        "HTTP 429, Retry-After 20.0 s; waiting 20.0 s (attempt 2 of 4)"
    ]


def test_in_replay_it_passes_the_request_on_untouched(server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(status=500, error="recorded failure")
    attempts = Attempts()
    # What a replay cassette sets itself: the SDK does not retry a miss either.
    params = {**server.params, "num_retries": 0, "max_retries": 0, "temperature": 0}
    with scope.override(replay=True), pytest.raises(RunFailed) as failure:
        agent(params, Retry(**FAST), attempts).run("hi")
    assert getattr(failure.value.__cause__, "status_code", None) == 500  # the error itself
    assert len(server.requests) == 1
    assert attempts.params == [params]
    assert failure.value.run.events == ()


MISS = """
import pytest
from pytest_harness.errors import CassetteMiss
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._retry import Retry
from pytest_harness.orchestrator._pipeline import count_usage
from pytest_harness.testing import LoopbackServer

def test_agent():
    sent = []

    async def attempts(call, next):
        sent.append(call.number)
        return await next(call)

    with LoopbackServer() as server:
        stack = [count_usage, Retry(base_delay=5), attempts]
        agent = Orchestrator(server.model, [], params=server.params, middleware=stack)
        with pytest.raises(CassetteMiss, match="no recording"):
            agent.run("hi")
        assert (sent, server.requests) == ([1], [])  # one attempt; vcrpy answered it
    print("MISS SURFACED AT ONCE")
"""


def test_a_cassette_miss_in_replay_surfaces_at_once(pytester: pytest.Pytester) -> None:
    # In a subprocess: a real replay (harness_record none, no cassette file), as a user runs it.
    pytester.makepyfile(test_miss=MISS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(failed=1)  # the harness fails a test that missed, caught or not
    result.stdout.fnmatch_lines(["*MISS SURFACED AT ONCE*", "*CassetteMiss: no recording*"])


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ConnectionRefusedError(111, "refused"), "connection error"),
        (TimeoutError("slow"), "timeout"),
        (asyncio.TimeoutError(), "timeout"),
        (NetworkBlocked("replay refused a connection to example.com"), None),
        (ValueError("not a chat completion"), None),
    ],
    ids=["refused", "timeout", "asyncio-timeout", "harness-verdict", "other"],
)
def test_what_counts_as_passing(error: Exception, kind: str | None) -> None:
    found = transient(error)
    assert (found.kind if found else None) == kind


def test_the_backoff_doubles_up_to_its_ceiling_with_equal_jitter() -> None:
    steady = Retry(base_delay=0.5, max_delay=2.0, jitter=False)
    assert [steady.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 2.0, 2.0]
    assert steady.backoff(10_000) == 2.0
    jittered = Retry(base_delay=0.5, max_delay=2.0)
    waits = [jittered.backoff(3) for _ in range(200)]
    assert all(1.0 <= wait <= 2.0 for wait in waits)
    assert len(set(waits)) > 1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"max_attempts": 0}, r"max_attempts=...\) expects a whole number, 1 or more"),
        ({"max_attempts": 2.5}, r"max_attempts=...\) expects a whole number"),
        ({"base_delay": -1}, r"base_delay=...\) expects seconds, 0 or more, got -1"),
        ({"max_total_wait": "30"}, r"max_total_wait=...\) expects seconds"),
        ({"base_delay": 10}, r"base_delay=10\) is above max_delay=8.0: raise max_delay"),
    ],
)
def test_wrong_arguments_name_the_fix(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        Retry(**options)
