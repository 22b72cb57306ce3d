"""DoomLoop against a scripted model on loopback: real litellm calls over real HTTP.

The model is scripted by a handler that reads the request number (``len(server.requests)``
when it answers): what the server received is what the model was shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator._doom_loop import DoomLoop
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._pipeline import count_usage
from pytest_harness.orchestrator._run import Run
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

WARNING = "Warning from the harness:"


def agent(server: LoopbackServer, ran: list[dict[str, Any]], **options: Any) -> Orchestrator:
    """An agent whose ``lookup`` tool notes each call it really runs in ``ran``."""

    @tool
    def lookup(order: str, note: str = "") -> str:
        """Look an order up."""
        ran.append({"order": order, "note": note})
        return f"{order} shipped"

    return Orchestrator(
        server.model,
        [lookup],
        params=server.params,
        middleware=[DoomLoop(**options), count_usage],
    )


def calls(*arguments: dict[str, Any] | str) -> Reply:
    """A response asking for ``lookup`` once per arguments (a dict, or raw JSON text)."""
    return Reply(
        content=None, tool_calls=[ToolCallSpec(name="lookup", arguments=a) for a in arguments]
    )


def script(*replies: Reply, then: Reply | None = None) -> Callable[[dict[str, Any]], Reply]:
    """Answer request n with ``replies[n - 1]``, and every later one with ``then``."""
    seen = 0

    def handler(body: dict[str, Any]) -> Reply:
        nonlocal seen
        seen += 1
        if seen <= len(replies):
            return replies[seen - 1]
        assert then is not None, f"request {seen} was not scripted"
        return then

    return handler


def warnings_in(body: dict[str, Any]) -> list[str]:
    return [
        m["content"]
        for m in body["messages"]
        if m["role"] == "user" and str(m.get("content")).startswith(WARNING)
    ]


def test_the_same_call_forever_is_warned_then_stopped_before_it_runs_again(
    server: LoopbackServer,
) -> None:
    ran: list[dict[str, Any]] = []
    server.handler = lambda body: calls({"order": "A-1"})
    run = agent(server, ran).run("Where is A-1?")

    assert run.stop_reason == "doom_loop"
    assert len(ran) == 3  # the fourth identical call was never run
    assert [c.name for c in run.tool_calls] == ["lookup"] * 3
    assert run.requests == len(server.requests) == 4
    assert [warnings_in(body) for body in server.requests[:3]] == [[], [], []]
    (shown,) = warnings_in(server.requests[3])
    assert server.requests[3]["messages"][-1]["content"] == shown  # the last thing it read
    assert shown == (
        "Warning from the harness: you called `lookup` with the same arguments 3 times in a "
        "row. Do not call it again with these arguments: answer from what you have or try "
        "something else."
    )
    warned, stopped = run.events
    assert (warned.kind, warned.request) == ("doom_loop", 4)
    assert warned.detail == 'lookup called 3 times in a row with {"order":"A-1"}; warned the model'
    assert (stopped.kind, stopped.request) == ("doom_loop", 4)
    assert "4 times in a row" in stopped.detail
    assert "stopped before the last calls ran" in stopped.detail
    # The repeated response is not in the conversation: it ends on the warning, valid to go on.
    assert run.messages[-1]["content"] == shown
    assert [m["role"] for m in run.messages].count("assistant") == 3


def test_the_same_tool_with_different_arguments_never_trips_it(server: LoopbackServer) -> None:
    ran: list[dict[str, Any]] = []
    server.handler = script(*[calls({"order": f"A-{n}"}) for n in range(6)], then=Reply())
    run = agent(server, ran).run("Where are my orders?")
    assert run.stop_reason == "done"
    assert [r["order"] for r in ran] == [f"A-{n}" for n in range(6)]
    assert run.events == ()
    assert all(warnings_in(body) == [] for body in server.requests)


def test_key_order_and_spacing_do_not_make_a_call_different(server: LoopbackServer) -> None:
    ran: list[dict[str, Any]] = []
    spellings = ['{"order": "A-1", "note": "x"}', '{"note":"x","order":"A-1"}']
    server.handler = script(*[calls(spellings[n % 2]) for n in range(4)])
    run = agent(server, ran).run("Where is A-1?")
    assert run.stop_reason == "doom_loop"
    assert len(ran) == 3
    assert warnings_in(server.requests[3]) != []


def test_after_the_warning_a_different_call_goes_on_and_a_new_streak_is_warned_again(
    server: LoopbackServer,
) -> None:
    ran: list[dict[str, Any]] = []
    same, other = calls({"order": "A-1"}), calls({"order": "B-2"})
    server.handler = script(same, same, same, other, other, other, Reply(content="Both shipped."))
    run = agent(server, ran).run("Where are A-1 and B-2?")

    assert run.stop_reason == "done"
    assert run.output == "Both shipped."
    assert [r["order"] for r in ran] == ["A-1"] * 3 + ["B-2"] * 3
    assert [(e.kind, e.request) for e in run.events] == [("doom_loop", 4), ("doom_loop", 7)]
    assert '{"order":"B-2"}' in run.events[1].detail
    assert [len(warnings_in(body)) for body in server.requests] == [0, 0, 0, 1, 1, 1, 2]


def test_identical_calls_in_one_batch_are_one_decision_a_repeated_batch_is_a_loop(
    server: LoopbackServer,
) -> None:
    ran: list[dict[str, Any]] = []
    triple = calls(*[{"order": "A-1"}] * 3)
    server.handler = script(triple, Reply(content="ok"))
    run = agent(server, ran).run("Roll three times")
    assert run.stop_reason == "done"
    assert len(ran) == 3  # three calls in one response: no warning
    assert run.events == ()

    ran.clear()
    server.reset()
    pair, swapped = (
        calls({"order": "A-1"}, {"order": "B-2"}),
        calls({"order": "B-2"}, {"order": "A-1"}),
    )
    server.handler = script(pair, swapped, pair, swapped)
    run = agent(server, ran).run("Where are A-1 and B-2?")
    assert run.stop_reason == "doom_loop"  # the same batch, in any order, three times
    assert len(ran) == 6
    (shown,) = warnings_in(server.requests[3])
    assert "made the same tool calls (`lookup`) 3 times in a row" in shown
    assert "the same batch" in run.events[0].detail


def test_a_new_user_message_starts_counting_afresh(server: LoopbackServer) -> None:
    ran: list[dict[str, Any]] = []
    bot = agent(server, ran)
    server.handler = lambda body: calls({"order": "A-1"})
    first = bot.run("Where is A-1?")
    assert first.stop_reason == "doom_loop"

    server.handler = script(calls({"order": "A-1"}), Reply(content="It shipped."))
    second: Run = bot.run("Look once more, please.")
    assert second.stop_reason == "done"  # the streak before the user's message is over
    assert second.events == ()
    assert len(ran) == 4


def test_repeats_is_configurable(server: LoopbackServer) -> None:
    ran: list[dict[str, Any]] = []
    server.handler = lambda body: calls({"order": "A-1"})
    run = agent(server, ran, repeats=2).run("Where is A-1?")
    assert run.stop_reason == "doom_loop"
    assert len(ran) == 2
    assert warnings_in(server.requests[2]) != []


@pytest.mark.parametrize("repeats", [1, 0, True, 2.5, "3"])
def test_repeats_below_two_is_a_config_error_that_names_the_fix(repeats: Any) -> None:
    with pytest.raises(
        ConfigError, match=r"DoomLoop\(repeats=\.\.\.\) expects a whole number of 2"
    ):
        DoomLoop(repeats=repeats)


def test_arguments_that_are_not_json_compare_as_sent(server: LoopbackServer) -> None:
    ran: list[dict[str, Any]] = []
    server.handler = script(calls("{broken"), calls("{broken"), calls("{broken"), Reply())
    run = agent(server, ran).run("hi")
    assert run.stop_reason == "done"  # warned, then the model answered
    assert ran == []  # arguments that do not parse never reach the tool
    assert [e.kind for e in run.events] == ["doom_loop"]
    assert "lookup called 3 times in a row with {broken" in run.events[0].detail
