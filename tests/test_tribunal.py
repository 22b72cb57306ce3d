"""Tribunal: a panel of judge agents over real HTTP (litellm to the loopback server)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._agent import Agent, AgentResult
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.fixture import Harness
from pytest_harness.errors import (
    AgentTimeout,
    AllAgentsFailed,
    ConfigError,
    DegenerateResponse,
    InvalidResponse,
    JudgeOutputError,
)
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal._panel import (
    JudgeFailure,
    TribunalEvent,
    Verdict,
    at_least,
    majority,
)
from pytest_harness.tribunal._tribunal import Tribunal, hook, process, rule

pytestmark = pytest.mark.harness(cassette=False)

VERDICT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pass": {"type": "boolean"},
        "score": {"type": "number"},
        "reason": {"type": "string"},
    },
    "required": ["pass"],
}
HOLD = 30.0  # seconds a handler waits for what it waits on; only a broken panel reaches it
VALID_HOOKS = (
    "Valid hooks: before_call, before_agent, after_agent, agent_error, after_call, "
    "before_verdict, after_verdict"
)
VALID_STRATEGIES = "Valid strategies: unanimous, majority, at_least, fraction, mean"


def judge(server: LoopbackServer, name: str, **attrs: Any) -> type[Agent]:
    """A judge Agent class called ``name`` whose instructions are its name."""
    body: dict[str, Any] = {
        "model": server.model,
        "params": server.params,
        "instructions": name,
        "output": VERDICT,
        "structured": True,  # the system message is exactly the instructions
        **attrs,
    }
    return type(name, (Agent,), body)


def says(passed: bool, reason: str | None = None, *, score: float | None = None) -> str:
    """A judge's JSON reply text."""
    reply: dict[str, Any] = {"pass": passed}
    if reason is not None:
        reply["reason"] = reason
    if score is not None:
        reply["score"] = score
    return json.dumps(reply)


def script(server: LoopbackServer, replies: dict[str, Reply | str]) -> None:
    """Answer each judge by its instructions (the start of the system message)."""

    def handler(body: dict[str, Any]) -> Reply:
        key = body["messages"][0]["content"].split("\n\n")[0]
        reply = replies.get(key, f"unscripted judge {key}")
        return Reply(content=reply) if isinstance(reply, str) else reply

    server.handler = handler


def warm_up(server: LoopbackServer) -> None:
    """Make litellm's first call of the process (imports, clients) before a panel whose
    deadline only the judges' own calls should count against."""
    script(server, {"WarmUp": says(True)})
    Tribunal(input="warm up", agents=[judge(server, "WarmUp")]).call()
    server.requests.clear()


def user_turns(server: LoopbackServer) -> list[str]:
    """The user turns the server received, sorted (judges run concurrently)."""
    return sorted(body["messages"][-1]["content"] for body in server.requests)


# Direct use ---------------------------------------------------------------------------


def test_direct_use(server: LoopbackServer) -> None:
    """Tribunal(..., process=fn) with on() chaining; judges get input, context, params, memory."""
    script(
        server,
        {
            "Toxicity": Reply(content=says(False, "no slurs"), delay=0.1),
            "Bias": says(False, "balanced"),
        },
    )
    seen: list[tuple[AgentResult, int]] = []
    processed: list[list[AgentResult]] = []

    def not_toxic(results: list[AgentResult]) -> bool:
        processed.append(list(results))
        return all(result.processed["pass"] is False for result in results)

    memory = [
        {"role": "user", "content": "Earlier message"},
        {"role": "assistant", "content": "Earlier answer"},
    ]
    Toxicity, Bias = judge(server, "Toxicity"), judge(server, "Bias")
    tribunal = Tribunal(
        input="Is this message toxic?",
        context={"user_id": 42},
        agents=[Toxicity, Bias],
        timeout=5,
        params={"max_tokens": 20},
        memory=memory,
        process=not_toxic,
    )
    assert (
        tribunal.on("after_agent", lambda result, index: seen.append((result, index))) is tribunal
    )
    assert tribunal.timeout == 5
    assert tribunal.call() is tribunal

    assert [result.agent for result in tribunal.results] == ["Toxicity", "Bias"]  # panel order
    assert [result.processed for result in tribunal.results] == [
        {"pass": False, "reason": "no slurs"},
        {"pass": False, "reason": "balanced"},
    ]
    assert tribunal.results[0].input == "Is this message toxic?"
    assert tribunal.errors == []
    assert seen == [(tribunal.results[0], 0), (tribunal.results[1], 1)]
    assert processed == [tribunal.results]
    assert [entry["agent"] for entry in tribunal.agent_execution_times] == ["Toxicity", "Bias"]
    assert tribunal.agent_execution_times[0]["time"] >= 0.1
    assert isinstance(tribunal.execution_time, float)
    assert tribunal.execution_time >= 0.1
    assert isinstance(tribunal.verdict, Verdict)
    assert tribunal.verdict.value is True
    assert tribunal.verdict.rule == "process: not_toxic"

    assert len(server.requests) == 2
    for body in server.requests:
        assert body["max_tokens"] == 20
        assert body["messages"][1:] == [
            *memory,
            {
                "role": "user",
                "content": 'Is this message toxic?\n\nContext:\n{\n  "user_id": 42\n}',
            },
        ]


def test_defaults_before_a_call() -> None:
    """A new tribunal has not run: no results, no verdict, the class's 7 s timeout."""
    tribunal = Tribunal(input="x")
    assert tribunal.timeout == 7
    assert Tribunal(input="x", timeout=None).timeout is None
    assert tribunal.results == []
    assert tribunal.errors == []
    assert tribunal.agent_execution_times == []
    assert tribunal.execution_time is None
    assert tribunal.verdict is None
    assert tribunal.result().processed == {"verdict": None}
    assert repr(tribunal) == "<Tribunal 0 judges, not run>"


def test_no_judges_is_a_config_error() -> None:
    """A panel without judges says how to declare them."""
    with pytest.raises(ConfigError, match=r"Tribunal has no judges: declare `agents = \[...\]`"):
        Tribunal(input="x").call()


def test_something_that_is_not_a_judge(server: LoopbackServer) -> None:
    """A judge that is neither an Agent nor a Tribunal is a ConfigError naming it."""
    with pytest.raises(ConfigError, match="a judge must be an Agent or Tribunal class"):
        Tribunal(input="x", agents=[judge(server, "Fine"), "not a judge"]).call()
    assert server.requests == []


# Declared subclasses --------------------------------------------------------------------


def test_declared_subclass(server: LoopbackServer) -> None:
    """agents, timeout, @rule and @hook declared in the class body."""
    script(
        server,
        {
            "Polite": says(True, "says please"),
            "Helpful": says(False, "no answer"),
            "Accurate": says(True, "right date"),
            "Broken": "no JSON at all",
        },
    )
    Polite, Helpful = judge(server, "Polite"), judge(server, "Helpful")
    Accurate, Broken = judge(server, "Accurate"), judge(server, "Broken")
    log: list[tuple[Any, ...]] = []

    class ReplyQuality(Tribunal):
        agents = (Polite, Helpful, Accurate, Broken)
        timeout = 3

        @rule("majority", may_fail=1)
        def passed(result: AgentResult) -> bool:
            return result.processed["pass"] is True

        @hook("after_agent")
        def show(result: AgentResult, index: int) -> None:
            log.append(("on after_agent", result.agent, index))

        @hook("after_agent")
        def also(result: AgentResult, index: int) -> None:
            log.append(("after agent", result.agent, index))

        @hook("agent_error")
        def failed(name: str, error: Exception, index: int) -> None:
            log.append(("agent_error", name, type(error), index))

        @hook("before_verdict")
        def drop_helpful(results: list[AgentResult]) -> list[AgentResult]:
            return [result for result in results if result.agent != "Helpful"]

    tribunal = ReplyQuality(input="Thanks for waiting!")
    assert tribunal.timeout == 3
    assert tribunal.may_fail == 1
    tribunal.call()
    assert log == [
        ("on after_agent", "Polite", 0),
        ("after agent", "Polite", 0),
        ("on after_agent", "Helpful", 1),
        ("after agent", "Helpful", 1),
        ("on after_agent", "Accurate", 2),
        ("after agent", "Accurate", 2),
        ("agent_error", "Broken", JudgeOutputError, 3),
    ]
    verdict = tribunal.verdict
    assert [vote.agent for vote in verdict.votes] == ["Polite", "Accurate"]  # Helpful dropped
    assert verdict.value is True
    assert verdict.rule == "majority: more than half of the votes must pass; may_fail=1"
    assert ReplyQuality.passed(tribunal.results[1]) is False  # still a plain function
    assert user_turns(server) == ["Thanks for waiting!"] * 4


def test_declared_process(server: LoopbackServer) -> None:
    """@process in the class body computes the verdict from all results."""
    script(server, {"A": says(True), "B": says(False), "C": says(True)})

    class Count(Tribunal):
        agents = (judge(server, "A"), judge(server, "B"), judge(server, "C"))

        @process
        def passing(results: list[AgentResult]) -> int:
            return sum(1 for result in results if result.processed["pass"])

    tribunal = Count(input="x").call()
    assert tribunal.verdict.value == 2
    assert tribunal.verdict.passed is True
    assert tribunal.verdict.rule == "process: passing"


def test_strategy_and_may_fail_as_class_attributes(server: LoopbackServer) -> None:
    """strategy = "majority" and may_fail = 1 on the class; votes read from "pass"."""
    script(
        server,
        {"Yes1": says(True), "Yes2": says(True), "No": says(False), "Broken": "garbage"},
    )

    class Lenient(Tribunal):
        agents = tuple(judge(server, n) for n in ("Yes1", "Yes2", "No", "Broken"))
        strategy = "majority"
        may_fail = 1

    tribunal = Lenient(input="x")
    assert tribunal.may_fail == 1
    verdict = tribunal.call().verdict
    assert verdict.value is True
    assert [vote.vote for vote in verdict.votes] == [True, True, False]
    assert verdict.rule == "majority: more than half of the votes must pass; may_fail=1"
    assert [entry["agent"] for entry in tribunal.errors] == ["Broken"]


def test_may_fail_attribute_with_a_verdict_decorator(server: LoopbackServer) -> None:
    """may_fail = 0 declared on the class still holds when a verdict rule is declared too."""
    script(server, {"Good": says(True), "Broken": "garbage"})

    class Strict(Tribunal):
        agents = (judge(server, "Good"), judge(server, "Broken"))
        may_fail = 0

        @rule("majority")
        def passed(result: AgentResult) -> bool:
            return bool(result.processed["pass"])

    assert Strict(input="x").may_fail == Strict.may_fail == 0
    with pytest.raises(AllAgentsFailed):
        Strict(input="x").call()


def test_a_marked_function_cannot_hide_the_tribunals_own_names() -> None:
    """`verdict` names the result only: an evaluator (or hook) of that name is refused."""
    with pytest.raises(ConfigError, match=r"Panel.verdict: a function marked with rule, hook"):

        class Panel(Tribunal):
            @rule("unanimous")
            def verdict(result: AgentResult) -> bool:
                return bool(result.processed["pass"])

    with pytest.raises(ConfigError, match=r"Logged.call: .* cannot be named 'call'"):

        class Logged(Tribunal):
            @hook("after_call")
            def call(results: list[AgentResult], errors: list[Any]) -> None:
                pass


# Hooks ----------------------------------------------------------------------------------


def test_hook_order_and_arguments(server: LoopbackServer) -> None:
    """Hooks fire in the documented order with the documented arguments, in panel order."""
    # The failing judge is first and slow: hooks still follow the panel, not completion.
    script(
        server,
        {"Failing": Reply(content="not JSON", delay=0.2), "Fine": says(True, "ok")},
    )
    Failing, Fine = judge(server, "Failing"), judge(server, "Fine")
    calls: list[tuple[Any, ...]] = []
    tribunal = Tribunal(input="Hello", agents=[Failing, Fine])
    tribunal.on("before_call", lambda: calls.append(("before_call",)))
    tribunal.on("before_agent", lambda agent, index: calls.append(("before_agent", agent, index)))
    tribunal.on("after_agent", lambda result, index: calls.append(("after_agent", result, index)))
    tribunal.on(
        "agent_error", lambda name, error, index: calls.append(("agent_error", name, error, index))
    )
    tribunal.on(
        "after_call",
        lambda results, errors: calls.append(("after_call", list(results), list(errors))),
    )
    tribunal.on("before_verdict", lambda results: calls.append(("before_verdict", list(results))))
    tribunal.on("after_verdict", lambda verdict: calls.append(("after_verdict", verdict)))
    tribunal.call()

    assert [call[0] for call in calls] == [
        "before_call",
        "before_agent",
        "before_agent",
        "agent_error",
        "after_agent",
        "after_call",
        "before_verdict",
        "after_verdict",
    ]
    (fine,) = tribunal.results
    (failure,) = tribunal.errors
    error = failure["error"]
    assert failure == {"agent": "Failing", "error": error}
    assert isinstance(error, JudgeOutputError)
    assert error.raw == "not JSON"
    first, second = calls[1], calls[2]
    assert (type(first[1]), first[1].input, first[2]) == (Failing, "Hello", 0)
    assert (type(second[1]), second[1].input, second[2]) == (Fine, "Hello", 1)
    assert calls[3] == ("agent_error", "Failing", error, 0)
    assert calls[4] == ("after_agent", fine, 1)
    assert calls[5] == ("after_call", [fine], [{"agent": "Failing", "error": error}])
    assert calls[6] == ("before_verdict", [fine])
    assert calls[7] == ("after_verdict", tribunal.verdict)
    assert tribunal.verdict.value is True  # a None-returning before_verdict keeps the results


def test_before_verdict_replaces_the_results(server: LoopbackServer) -> None:
    """before_verdict's return value is what the verdict sees; None keeps the results."""
    script(server, {"Yes": says(True), "No": says(False)})
    tribunal = Tribunal(input="x", agents=[judge(server, "Yes"), judge(server, "No")])
    tribunal.on("before_verdict", lambda results: None)
    tribunal.on("before_verdict", lambda results: [r for r in results if r.processed["pass"]])
    verdict = tribunal.call().verdict
    assert [result.agent for result in tribunal.results] == ["Yes", "No"]
    assert [vote.agent for vote in verdict.votes] == ["Yes"]
    assert verdict.value is True  # unanimous over what the hook kept
    assert verdict.tally == "1/1"


def test_instance_hooks_add_to_class_hooks_for_that_instance(server: LoopbackServer) -> None:
    """An instance hook runs after the class's; other instances and the class are unchanged."""
    script(server, {"A": says(True), "B": says(False)})
    seen: list[str] = []

    class Logged(Tribunal):
        agents = (judge(server, "A"),)

        @hook("after_call")
        def log(results: list[AgentResult], errors: list[Any]) -> None:
            seen.append("class")

    first = Logged(input="x", process=lambda results: "instance process")
    assert first.on("after_call", lambda results, errors: seen.append("instance")) is first
    assert first.call().verdict.value == "instance process"
    assert seen == ["class", "instance"]

    seen.clear()
    second = Logged(input="x").call()
    assert seen == ["class"]
    assert second.verdict.value is True
    assert second.verdict.rule == "unanimous: every vote must pass"


def test_subclasses_are_isolated(server: LoopbackServer) -> None:
    """Hooks and rules of a child never reach its parent, its sibling or Tribunal itself."""
    script(server, {"A": says(True)})
    A = judge(server, "A")
    seen: list[str] = []

    class Parent(Tribunal):
        agents = (A,)

        @hook("after_call")
        def parent_hook(results: list[AgentResult], errors: list[Any]) -> None:
            seen.append("parent")

    class Child(Parent):
        @hook("after_call")
        def child_hook(results: list[AgentResult], errors: list[Any]) -> None:
            seen.append("child")

        @rule("at_least", 2)
        def passed(result: AgentResult) -> bool:
            return True

    class Sibling(Parent):
        pass

    class Other(Tribunal):
        agents = (A,)

        @hook("after_call")
        def other_hook(results: list[AgentResult], errors: list[Any]) -> None:
            seen.append("other")

    def run(cls: type[Tribunal]) -> tuple[list[str], str]:
        seen.clear()
        tribunal = cls(input="x").call()
        return list(seen), tribunal.verdict.rule

    unanimous = "unanimous: every vote must pass"
    assert run(Parent) == (["parent"], unanimous)
    assert run(Child) == (
        ["parent", "child"],
        "at_least(2): at least 2 votes must pass",
    )
    assert run(Sibling) == (["parent"], unanimous)
    assert run(Other) == (["other"], unanimous)
    assert run(type("Plain", (Tribunal,), {"agents": [A]})) == ([], unanimous)
    seen.clear()
    Tribunal(input="x", agents=[A]).call()
    assert seen == []


@pytest.mark.parametrize(
    "register",
    [
        lambda: Tribunal(input="x").on("after_lunch", print),
        lambda: Tribunal(input="x").on("after_lunch"),
        lambda: hook("after_lunch"),
        lambda: hook("error"),
    ],
)
def test_unknown_hook_lists_the_valid_ones(register: Any) -> None:
    """An unknown hook is a ValueError listing every valid hook."""
    with pytest.raises(ValueError, match=r"unknown Tribunal hook '(after_lunch|error)'"):
        register()
    with pytest.raises(ValueError) as caught:
        register()
    assert VALID_HOOKS in str(caught.value)


def test_unknown_hook_in_a_class_body() -> None:
    """An unknown hook declared in a class body fails when the class is defined."""
    with pytest.raises(ValueError, match="unknown Tribunal hook 'after_party'"):

        class Bad(Tribunal):
            @hook("after_party")
            def hook(self) -> None:
                pass


def test_unknown_strategy_lists_the_valid_ones() -> None:
    """An unknown strategy is a ValueError listing the valid ones, wherever it is given."""
    with pytest.raises(ValueError, match="unknown verdict strategy 'plurality'") as caught:
        rule("plurality")
    assert VALID_STRATEGIES in str(caught.value)
    with pytest.raises(ValueError, match=VALID_STRATEGIES):

        class Bad(Tribunal):
            strategy = "plurality"

    with pytest.raises(ValueError, match=VALID_STRATEGIES):
        Tribunal(input="x", strategy="plurality")


@pytest.mark.parametrize("may_fail", [-1, True, 1.5, "1"])
def test_bad_may_fail(may_fail: Any) -> None:
    """may_fail must be None or a whole number >= 0."""
    with pytest.raises(ConfigError, match="may_fail expects None or a whole number >= 0"):
        Tribunal(input="x", may_fail=may_fail)
    with pytest.raises(ConfigError, match="may_fail expects None or a whole number >= 0"):
        rule("majority", may_fail=may_fail)


def test_unknown_stream() -> None:
    """An unknown stream name is a ValueError listing the valid ones."""
    with pytest.raises(ValueError, match=r"unknown Tribunal stream\(s\) tokens. Valid streams"):
        Tribunal(input="x", streams={"tokens": print})


# Verdict strategies ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "votes", "expected"),
    [
        ("unanimous", [True, True, True], True),
        ("unanimous", [True, True, False], False),
        ("majority", [True, False], False),  # 1 of 2 is not a majority
        ("majority", [True, True, False], True),  # 2 of 3 is
        ("majority", [True, False, False], False),
    ],
)
def test_unanimous_and_majority(
    server: LoopbackServer, rule: str, votes: list[bool], expected: bool
) -> None:
    """The built-in rules over the judges' "pass" votes."""
    names = [f"J{index}" for index in range(len(votes))]
    script(server, {name: says(vote) for name, vote in zip(names, votes, strict=True)})
    tribunal = Tribunal(input="x", agents=[judge(server, name) for name in names], strategy=rule)
    verdict = tribunal.call().verdict
    assert verdict.value is expected
    assert bool(verdict) is expected
    assert [vote.vote for vote in verdict.votes] == votes


@pytest.mark.parametrize(
    ("name", "args", "field", "expected", "tally"),
    [
        ("at_least", (2,), "pass", True, "2/3"),
        ("at_least", (3,), "pass", False, "2/3"),
        ("fraction", (0.6,), "pass", True, "2/3"),
        ("fraction", (0.7,), "pass", False, "2/3"),
        ("mean", (0.75,), "score", True, "2/3"),  # (1.0 + 0.5 + 0.75) / 3 = 0.75
        ("mean", (0.8,), "score", False, "1/3"),
    ],
)
def test_parametrised_strategies(
    server: LoopbackServer,
    name: str,
    args: tuple[Any, ...],
    field: str,
    expected: bool,
    tally: str,
) -> None:
    """@rule("at_least", 2), ("fraction", 0.6), ("mean", 0.75) with an evaluator."""
    script(
        server,
        {
            "A": says(True, score=1.0),
            "B": says(False, score=0.5),
            "C": says(True, score=0.75),
        },
    )

    class Scored(Tribunal):
        agents = (judge(server, "A"), judge(server, "B"), judge(server, "C"))

        @rule(name, *args)
        def vote(result: AgentResult) -> Any:
            return result.processed[field]

    verdict = Scored(input="x").call().verdict
    assert verdict.value is expected
    assert verdict.tally == tally
    assert [vote.vote for vote in verdict.votes] == (
        [True, False, True] if field == "pass" else [1.0, 0.5, 0.75]
    )


def test_process_takes_priority_over_a_strategy(server: LoopbackServer) -> None:
    """With both a strategy and process, process decides; the votes are still shown."""
    script(server, {"A": says(True), "B": says(True)})

    class Both(Tribunal):
        agents = (judge(server, "A"), judge(server, "B"))

        @rule("unanimous")
        def passed(result: AgentResult) -> bool:
            return bool(result.processed["pass"])

        @process
        def failing(results: list[AgentResult]) -> int:
            return sum(1 for result in results if not result.processed["pass"])

    verdict = Both(input="x").call().verdict
    assert verdict.value == 0
    assert verdict.passed is False
    assert not verdict
    assert verdict.rule == "process: failing"
    assert [(vote.vote, vote.passed) for vote in verdict.votes] == [(True, True), (True, True)]

    instance = Tribunal(
        input="x",
        agents=Both.agents,
        strategy="majority",
        process=lambda results: "decided by process",
    )
    assert instance.call().verdict.value == "decided by process"


# Failures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("may_fail", "failing", "raises"),
    [
        (1, 1, None),
        (1, 2, "2 of 3 judges failed (may_fail=1)"),
        (None, 2, None),
        (None, 3, "all 3 judges failed"),
        (0, 0, None),
        (0, 1, "1 of 3 judges failed (may_fail=0)"),
        (2, 2, None),
        (5, 3, "all 3 judges failed"),
    ],
)
def test_may_fail_boundaries(
    server: LoopbackServer, may_fail: int | None, failing: int, raises: str | None
) -> None:
    """Up to may_fail judge errors are tolerated; None tolerates all but every judge failing."""
    names = ["J0", "J1", "J2"]
    broken = names[len(names) - failing :]
    script(server, {name: "no JSON" if name in broken else says(True) for name in names})
    events: list[TribunalEvent] = []
    tribunal = Tribunal(
        input="x",
        agents=[judge(server, name) for name in names],
        may_fail=may_fail,
        streams={"tribunal": events.append},
    )
    if raises is None:
        verdict = tribunal.call().verdict
        assert verdict.value is True
        assert [vote.agent for vote in verdict.votes] == names[: len(names) - failing]
        assert [failure.agent for failure in verdict.errors] == broken
        assert [event.kind for event in events] == ["started", "finished"]
        return
    with pytest.raises(AllAgentsFailed) as caught:
        tribunal.call()
    assert f"Tribunal: {raises}:" in str(caught.value)
    assert "  J2: JudgeOutputError: the reply has no JSON object in it" in str(caught.value)
    assert [entry["agent"] for entry in caught.value.errors] == broken
    assert all(type(entry["error"]) is JudgeOutputError for entry in caught.value.errors)
    assert caught.value.errors == tribunal.errors
    assert tribunal.verdict is None
    assert [event.kind for event in events] == ["started", "failed"]
    assert events[1].error is caught.value


def test_unusable_judge_replies_are_judge_errors(server: LoopbackServer) -> None:
    """Garbage, empty, think-only replies and provider errors fail that judge only."""
    import litellm

    script(
        server,
        {
            "Good": says(True, "fine"),
            "Garbage": "The answer is yes.",
            "Empty": Reply(content=""),
            "Thinker": Reply(content="<think>hmm</think>"),
            "Reasoner": Reply(content="", reasoning="only thoughts"),
            "Erroring": Reply(status=500, error="scripted outage"),
        },
    )
    names = ["Good", "Garbage", "Empty", "Thinker", "Reasoner", "Erroring"]
    agents = tuple(
        judge(server, name, params={**server.params, "max_retries": 0}) for name in names
    )
    tribunal = Tribunal(input="x", agents=agents).call()
    assert [result.agent for result in tribunal.results] == ["Good"]
    assert [entry["agent"] for entry in tribunal.errors] == names[1:]
    errors = [entry["error"] for entry in tribunal.errors]
    assert [type(error) for error in errors[:4]] == [
        JudgeOutputError,
        InvalidResponse,
        DegenerateResponse,
        DegenerateResponse,
    ]
    assert errors[0].raw == "The answer is yes."
    assert errors[1].reason == "empty_response"
    assert isinstance(errors[4], litellm.exceptions.InternalServerError)
    assert "scripted outage" in str(errors[4])
    assert tribunal.verdict.value is True
    assert tribunal.verdict.tally == "1/1"


def test_setup_errors_fail_the_panel_unchanged(server: LoopbackServer) -> None:
    """A judge without a model is the test's mistake: the ConfigError is raised as is."""
    script(server, {"Good": says(True)})
    events: list[TribunalEvent] = []
    tribunal = Tribunal(
        input="x",
        agents=[judge(server, "Good"), judge(server, "Modelless", model=None)],
        may_fail=5,
        streams={"tribunal": events.append},
    )
    visited: list[AgentResult] = []
    tribunal.on("after_agent", lambda result, index: visited.append(result))
    with pytest.raises(ConfigError, match="agent Modelless has no model"):
        tribunal.call()
    assert tribunal.verdict is None
    assert tribunal.errors == []  # not counted against may_fail
    assert visited == []  # the panel stops before visiting the results
    assert [event.kind for event in events] == ["started", "failed"]
    assert type(events[1].error) is ConfigError


NO_LIMIT = (
    "The reply had no token limit (its params set no max_tokens), so the model could write on "
    'past the deadline: set params = {"max_tokens": ...} on Slow, or raise the timeout '
    "(timeout = ... on the Tribunal class, or Tribunal(..., timeout=...))"
)
RAISE_IT = (
    "Raise it: timeout = ... on the Tribunal class, or Tribunal(..., timeout=...); None for no "
    "limit"
)


@pytest.mark.parametrize(("limit", "fix"), [(50, RAISE_IT), (None, NO_LIMIT)])
def test_timeout_with_a_slow_judge(server: LoopbackServer, limit: int | None, fix: str) -> None:
    """A judge still running at the deadline is an AgentTimeout; the others count. Its
    message says when its reply had no token limit."""
    warm_up(server)
    release = threading.Event()
    replied: list[str] = []

    def handler(body: dict[str, Any]) -> Reply:
        name = body["messages"][0]["content"].split("\n\n")[0]
        if name == "Slow":
            release.wait(HOLD)  # Slow's reply waits until the tribunal is over
            replied.append(name)
        return Reply(content=says(name != "Slow"))

    server.handler = handler
    events: list[TribunalEvent] = []
    tribunal = Tribunal(
        input="x",
        agents=[
            judge(server, "Slow", params={**server.params, "max_tokens": limit}),
            judge(server, "Quick"),
            judge(server, "Quicker"),
        ],
        timeout=1.0,
        streams={"agent": events.append},
    )
    try:
        tribunal.call()
        assert replied == []  # the verdict came before Slow's reply was even sent
    finally:
        release.set()
    (timed_out,) = tribunal.errors
    assert timed_out["agent"] == "Slow"
    assert type(timed_out["error"]) is AgentTimeout
    assert isinstance(timed_out["error"], TimeoutError)
    assert str(timed_out["error"]) == (
        "Agent Slow timed out after 1s, the timeout of panel Tribunal (7 s unless the tribunal "
        f"sets one; 180 s for the embedded model). {fix}"
    )
    assert [result.agent for result in tribunal.results] == ["Quick", "Quicker"]
    assert tribunal.verdict.value is True
    assert tribunal.verdict.tally == "2/2"
    assert [entry["agent"] for entry in tribunal.agent_execution_times] == [
        "Slow",
        "Quick",
        "Quicker",
    ]
    assert tribunal.agent_execution_times[0]["time"] >= 1.0
    slow = [event for event in events if event.agent == "Slow"]
    assert [event.kind for event in slow] == ["started", "timed_out"]
    assert slow[1].error is timed_out["error"]
    assert slow[1].index == 0


def test_a_cancelled_panel_cancels_its_judges(server: LoopbackServer) -> None:
    """Cancelling a running panel cancels every judge with it: no judge task outlives it."""
    warm_up(server)
    asked: list[str] = []
    release = threading.Event()

    def handler(body: dict[str, Any]) -> Reply:
        asked.append(body["messages"][0]["content"].split("\n\n")[0])
        release.wait(HOLD)  # no judge is answered before the panel is cancelled
        return Reply(content=says(True))

    server.handler = handler
    agents = [judge(server, name) for name in ("One", "Two", "Three")]

    async def cancel_midway() -> set[asyncio.Task[Any]]:
        running = asyncio.ensure_future(Tribunal(input="x", agents=agents).acall())

        async def all_asked() -> None:
            while len(asked) < 3:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(all_asked(), HOLD)  # every judge is waiting for its reply
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    try:
        left = asyncio.run(cancel_midway())
    finally:
        release.set()
    assert sorted(asked) == ["One", "Three", "Two"]
    assert left == set()


def test_judges_run_concurrently(server: LoopbackServer) -> None:
    """No judge is answered until all three have asked: they run at once, not in turn."""
    together = threading.Barrier(3, timeout=HOLD)

    def handler(body: dict[str, Any]) -> Reply:
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return Reply(content=says(False, "the judges did not all ask at once"))
        return Reply(content=says(True))

    server.handler = handler
    agents = tuple(judge(server, name) for name in ("A", "B", "C"))
    tribunal = Tribunal(input="x", agents=agents, timeout=None).call()  # the barrier bounds it
    assert len(server.requests) == 3
    assert tribunal.errors == []
    assert tribunal.verdict.tally == "3/3"


# Nesting --------------------------------------------------------------------------------


def test_nested_tribunal(server: LoopbackServer) -> None:
    """A tribunal is a judge: as an instance (its own input) or a class (the outer input)."""
    script(server, {"A": says(True), "B": says(True), "C": says(True, "outer judge")})
    A, B, C = judge(server, "A"), judge(server, "B"), judge(server, "C")

    class Inner(Tribunal):
        agents = (A, B)

    inner = Inner(input="inner input")
    outer = Tribunal(input="outer input", agents=[C, inner, Inner]).call()

    assert [result.agent for result in outer.results] == ["C", "Inner", "Inner"]
    nested = outer.results[1]
    assert isinstance(nested, AgentResult)
    assert nested.processed == {"verdict": True}
    assert nested.output is None
    assert nested.input == "inner input"
    assert outer.results[2].input == "outer input"
    assert outer.results[2].processed == {"verdict": True}
    assert inner.result() == nested
    assert inner.verdict.tally == "2/2"
    assert outer.verdict.value is True
    assert [vote.vote for vote in outer.verdict.votes] == [True, True, True]
    assert user_turns(server) == ["inner input"] * 2 + ["outer input"] * 3


def test_failing_nested_tribunal_is_a_judge_error(server: LoopbackServer) -> None:
    """A nested panel whose judges all fail is one judge error of the outer panel."""
    script(server, {"A": "garbage", "C": says(True)})

    class Inner(Tribunal):
        agents = (judge(server, "A"),)

    outer = Tribunal(input="x", agents=[judge(server, "C"), Inner]).call()
    (failure,) = outer.errors
    assert failure["agent"] == "Inner"
    assert type(failure["error"]) is AllAgentsFailed
    assert outer.verdict.value is True


def test_nested_tribunal_tokens_count(server: LoopbackServer) -> None:
    """The outer verdict's tokens include the tokens of a nested panel's judges."""
    script(server, {"A": says(True), "C": says(True)})

    class Inner(Tribunal):
        agents = (judge(server, "A", model="openai/gpt-4o-mini"),)

    inner = Inner(input="x")
    outer = Tribunal(
        input="x", agents=[judge(server, "C", model="openai/gpt-4o-mini"), inner]
    ).call()
    inner_tokens = inner.verdict.tokens
    own_tokens = outer.results[0].tokens
    assert inner_tokens > 0
    assert outer.verdict.cost == pytest.approx(outer.results[0].cost + inner.verdict.cost)
    assert outer.verdict.tokens == own_tokens + inner_tokens


# The Verdict ----------------------------------------------------------------------------


def test_verdict_object(server: LoopbackServer) -> None:
    """The Verdict carries votes, errors, agreement, tokens and the tally."""
    script(
        server,
        {
            "Polite": says(True, "says please"),
            "Helpful": says(True, "answers"),
            "Accurate": says(False, "wrong date"),
            "Broken": "no JSON",
        },
    )

    class Quality(Tribunal):
        agents = tuple(judge(server, n) for n in ("Polite", "Helpful", "Accurate", "Broken"))

        @rule("majority", may_fail=1)
        def passed(result: AgentResult) -> bool:
            return bool(result.processed["pass"])

    tribunal = Quality(input="Thanks for waiting!").call()
    verdict = tribunal.verdict
    assert isinstance(verdict, Verdict)
    assert verdict
    assert verdict.tribunal == "Quality"
    assert (verdict.value, verdict.passed) == (True, True)
    assert [(v.agent, v.model, v.vote, v.passed, v.reason) for v in verdict.votes] == [
        ("Polite", "openai/loopback", True, True, "says please"),
        ("Helpful", "openai/loopback", True, True, "answers"),
        ("Accurate", "openai/loopback", False, False, "wrong date"),
    ]
    (failure,) = verdict.errors
    assert isinstance(failure, JudgeFailure)
    assert failure.agent == "Broken"
    assert type(failure.error) is JudgeOutputError
    assert verdict.agreement == pytest.approx(1 / 3)  # 1 of 3 judge pairs agree
    # Prompt: 1 word of instructions + 3 of input; replies of 5, 4 and 5 words.
    assert verdict.tokens == (4 + 5) + (4 + 4) + (4 + 5)
    assert verdict.tokens == sum(result.tokens for result in tribunal.results)
    assert verdict.cost is None
    assert verdict.tally == "2/3"
    assert verdict.reasons == {
        "Polite": "says please",
        "Helpful": "answers",
        "Accurate": "wrong date",
    }
    assert verdict.execution_time == tribunal.execution_time
    assert [vote.tokens for vote in verdict.votes] == [9, 8, 9]
    assert repr(tribunal) == "<Quality 4 judges, passed>"
    assert tribunal.result().processed == {"verdict": True}
    assert tribunal.result().agent == "Quality"


def test_failing_verdict_is_falsy(server: LoopbackServer) -> None:
    """A verdict that does not pass is falsy and says so."""
    script(server, {"A": says(True), "B": says(False), "C": says(False)})
    tribunal = Tribunal(
        input="x", agents=[judge(server, n) for n in "ABC"], strategy="majority"
    ).call()
    assert not tribunal.verdict
    assert bool(tribunal.verdict) is False
    assert tribunal.verdict.value is False
    assert tribunal.verdict.tally == "1/3"
    assert repr(tribunal) == "<Tribunal 3 judges, failed>"
    assert tribunal.result().processed == {"verdict": False}


def test_verdict_cost_sums_the_judges(server: LoopbackServer) -> None:
    """With priced models the verdict's cost is the sum of the judges' costs."""
    script(server, {"A": says(True), "B": says(True)})
    agents = tuple(judge(server, n, model="openai/gpt-4o-mini") for n in "AB")
    tribunal = Tribunal(input="x", agents=agents).call()
    costs = [result.cost for result in tribunal.results]
    assert all(cost is not None and cost > 0 for cost in costs)
    assert tribunal.verdict.cost == pytest.approx(sum(costs))
    assert tribunal.result().cost == tribunal.verdict.cost


# Streams and async ----------------------------------------------------------------------


def test_streams(server: LoopbackServer) -> None:
    """token gets (agent, delta); agent and tribunal streams get TribunalEvent objects."""
    polite = says(True, "kind words")
    script(server, {"Polite": polite, "Broken": "not json"})
    tokens: list[tuple[str, str]] = []
    agent_events: list[TribunalEvent] = []
    tribunal_events: list[TribunalEvent] = []
    tribunal = Tribunal(
        input="x",
        agents=[judge(server, "Polite"), judge(server, "Broken")],
        streams={
            "token": lambda agent, delta: tokens.append((agent, delta)),
            "agent": agent_events.append,
            "tribunal": tribunal_events.append,
        },
    ).call()

    assert all(body["stream"] is True for body in server.requests)
    assert "".join(delta for agent, delta in tokens if agent == "Polite") == polite
    assert "".join(delta for agent, delta in tokens if agent == "Broken") == "not json"
    assert {agent for agent, _ in tokens} == {"Polite", "Broken"}

    assert all(isinstance(event, TribunalEvent) for event in agent_events + tribunal_events)
    by_agent = {
        name: [event for event in agent_events if event.agent == name]
        for name in ("Polite", "Broken")
    }
    assert [e.kind for e in by_agent["Polite"]] == ["started", "finished"]
    assert [e.kind for e in by_agent["Broken"]] == ["started", "failed"]
    assert [e.index for e in by_agent["Polite"]] == [0, 0]
    assert [e.index for e in by_agent["Broken"]] == [1, 1]
    assert by_agent["Polite"][1].result is tribunal.results[0]
    assert by_agent["Broken"][1].error is tribunal.errors[0]["error"]
    assert all(event.tribunal == "Tribunal" for event in agent_events)
    assert [event.kind for event in tribunal_events] == ["started", "finished"]
    assert tribunal_events[1].verdict is tribunal.verdict
    assert tribunal.verdict.value is True


def test_async_hooks_and_process_are_awaited(server: LoopbackServer) -> None:
    """Coroutine-function hooks and process run to completion, in order."""
    script(server, {"Polite": says(True), "Rude": says(False)})
    log: list[Any] = []

    class AsyncHooks(Tribunal):
        agents = (judge(server, "Polite"), judge(server, "Rude"))

        @hook("before_call")
        async def starting() -> None:
            await asyncio.sleep(0)
            log.append("before_call")

        @hook("before_verdict")
        async def only_polite(results: list[AgentResult]) -> list[AgentResult]:
            await asyncio.sleep(0)
            return [result for result in results if result.agent == "Polite"]

        @hook("after_verdict")
        async def done(verdict: Verdict) -> None:
            await asyncio.sleep(0)
            log.append(("after_verdict", verdict.value))

    async def after_agent(result: AgentResult, index: int) -> None:
        await asyncio.sleep(0)
        log.append(("after_agent", result.agent, index))

    tribunal = AsyncHooks(input="x").on("after_agent", after_agent).call()
    assert log == [
        "before_call",
        ("after_agent", "Polite", 0),
        ("after_agent", "Rude", 1),
        ("after_verdict", True),
    ]
    assert tribunal.verdict.value is True  # unanimous over the Polite judge only

    async def count(results: list[AgentResult]) -> int:
        await asyncio.sleep(0)
        return len(results)

    processed = AsyncHooks(input="x", process=count).call()
    assert processed.verdict.value == 1


def test_acall_in_an_async_test(server: LoopbackServer) -> None:
    """await tribunal.acall() runs the panel on the running loop and returns the tribunal."""
    script(server, {"A": says(True), "B": says(True)})
    agents = (judge(server, "A"), judge(server, "B"))

    async def main() -> tuple[Tribunal, Tribunal, Tribunal]:
        tribunal = Tribunal(input="x", agents=agents)
        returned = await tribunal.acall()
        synced = Tribunal(input="y", agents=agents).call()  # sync facade inside a loop
        return tribunal, returned, synced

    tribunal, returned, synced = asyncio.run(main())
    assert returned is tribunal
    assert tribunal.verdict.value is True
    assert tribunal.verdict.tally == "2/2"
    assert synced.verdict.value is True
    assert user_turns(server) == ["x", "x", "y", "y"]


HUNG_JUDGE = """
import sys, time
from pytest_harness import Tribunal
from pytest_harness.errors import AllAgentsFailed

class Stuck:
    \"\"\"A judge with only a sync call(), hanging far past the panel's timeout.\"\"\"

    def call(self):
        time.sleep(float(sys.argv[1]))

try:
    Tribunal(input="x", agents=[Stuck()], timeout=0.5).call()
except AllAgentsFailed as error:
    print(error)
"""


def test_a_hung_sync_judge_does_not_hold_the_process(tmp_path: Path) -> None:
    script = tmp_path / "hung_judge.py"
    script.write_text(HUNG_JUDGE)
    hang = 300.0  # the judge's sleep; the process must end long before it
    done = subprocess.run(
        [sys.executable, str(script), str(hang)],
        capture_output=True,
        text=True,
        timeout=hang / 5,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Stuck: AgentTimeout: Agent Stuck timed out after 0.5s, the timeout of" in done.stdout


class _LocalJudge(Agent):
    model = "local"


class _OwnTimeout(Tribunal):
    timeout = 3


@pytest.mark.parametrize(
    ("tribunal", "override", "expected"),
    [
        (lambda: Tribunal(agents=[_LocalJudge]), None, 180.0),
        (lambda: Tribunal(agents=[Agent]), "local", 180.0),  # --harness-model=local
        (lambda: Tribunal(agents=[Agent]), None, 7.0),
        (lambda: Tribunal(agents=[_LocalJudge], timeout=2), None, 2),
        (lambda: _OwnTimeout(agents=[_LocalJudge]), None, 3),
        (lambda: Tribunal(agents=[_LocalJudge], timeout=None), None, None),
    ],
    ids=["local-judge", "harness-model-local", "other-model", "given", "class", "no-limit"],
)
def test_the_default_timeout_grows_for_the_embedded_model_and_a_chosen_one_stays(
    tribunal: Callable[[], Tribunal], override: str | None, expected: float | None
) -> None:
    with scope.override(model=override):
        assert tribunal()._plan().timeout == expected


# Declarations ---------------------------------------------------------------------------


def test_a_marker_only_marks_and_each_class_collects_its_own() -> None:
    """rule/hook/process return the function itself; a class adds its marks to a copy of
    its parent's, so the parent, a sibling and Tribunal keep theirs."""

    def parent_hook(results: list[AgentResult], errors: list[Any]) -> None:
        pass

    def child_hook(results: list[AgentResult], errors: list[Any]) -> None:
        pass

    def passed(result: AgentResult) -> bool:
        return True

    assert hook("after_call")(parent_hook) is parent_hook
    Parent = type("Parent", (Tribunal,), {"agents": [Agent], "parent_hook": parent_hook})
    Child = type(
        "Child",
        (Parent,),
        {
            "child_hook": hook("after_call")(child_hook),
            "passed": rule("at_least", 2, may_fail=1)(passed),
        },
    )
    Sibling = type("Sibling", (Parent,), {"may_fail": 0})

    def plan(cls: type[Tribunal]) -> Any:
        return cls()._plan()

    assert plan(Parent).hooks == {"after_call": (parent_hook,)}
    assert plan(Child).hooks == {"after_call": (parent_hook, child_hook)}
    assert plan(Sibling).hooks == {"after_call": (parent_hook,)}
    assert (plan(Child).strategy, plan(Child).evaluate) == (at_least(2), passed)
    assert (plan(Parent).strategy, plan(Parent).evaluate) == (None, None)
    assert (Parent.may_fail, Child.may_fail, Sibling.may_fail) == (None, 1, 0)
    assert Child.passed is passed  # still a plain function on the class
    assert plan(type("Plain", (Tribunal,), {"agents": [Agent]})).hooks == {}


def test_an_instance_hook_leaves_the_class_unchanged() -> None:
    """tribunal.on(event, fn) returns the tribunal; @tribunal.on(event) returns fn; either
    adds to that instance only."""

    class Logged(Tribunal):
        agents = (Agent,)

        @hook("after_call")
        def log(results: list[AgentResult], errors: list[Any]) -> None:
            pass

    def mine(results: list[AgentResult], errors: list[Any]) -> None:
        pass

    first = Logged()
    assert first.on("after_call", mine) is first

    @first.on("before_call")
    def starting() -> None:
        pass

    assert first._plan().hooks == {"after_call": (Logged.log, mine), "before_call": (starting,)}
    assert Logged()._plan().hooks == {"after_call": (Logged.log,)}


def test_a_process_for_one_instance() -> None:
    """Tribunal(..., process=fn, strategy=..., evaluate=fn) for this instance only."""

    def count(results: list[AgentResult]) -> int:
        return len(results)

    def vote(result: AgentResult) -> bool:
        return True

    plan = Tribunal(agents=[Agent], process=count, strategy="majority", evaluate=vote)._plan()
    assert (plan.process, plan.strategy, plan.evaluate) == (count, majority(), vote)
    plain = Tribunal(agents=[Agent])._plan()
    assert (plain.process, plain.strategy, plain.evaluate) == (None, None, None)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (lambda: Tribunal.verdict("majority"), '@rule("majority", may_fail=1) in the class body'),
        (lambda: Tribunal.on("after_agent"), '@hook("after_agent") in the class body'),
        (lambda: Tribunal.before("call"), '@hook("before_<event>") in the class body'),
        (lambda: Tribunal.after("agent"), '@hook("after_<event>") in the class body'),
        (lambda: Tribunal.callback("agent_error"), "@hook(event) in the class body"),
        (lambda: Tribunal.process, "@process in the class body"),
        (lambda: Tribunal().before("call", print), 'tribunal.on("before_<event>", fn)'),
        (lambda: Tribunal().after("call", print), 'tribunal.on("after_<event>", fn)'),
        (lambda: Tribunal().callback("agent_error", print), "tribunal.on(event, fn)"),
        (lambda: Tribunal().process(print), "Tribunal(..., process=fn)"),
        (lambda: Harness().verdict, "harness.get_verdict(tribunal, input)"),
    ],
)
def test_an_old_spelling_names_the_new_one(old: Callable[[], Any], new: str) -> None:
    """The class-level registrars and harness.verdict of earlier releases fail, saying
    what to write instead; a removed attribute stays absent (AttributeError)."""
    with pytest.raises((ConfigError, AttributeError)) as raised:
        old()
    assert new in str(raised.value)
    assert "docs/migration.md" in str(raised.value)


def test_an_old_spelling_in_a_class_body_fails_when_the_class_is_defined() -> None:
    with pytest.raises(ConfigError, match=r"Tribunal.verdict is spelled differently now: @rule"):

        class Old(Tribunal):
            @Tribunal.verdict("majority")
            def passed(result: AgentResult) -> bool:
                return True

    assert not hasattr(Tribunal, "before")
    assert not hasattr(Tribunal(), "process")
    with pytest.raises(AttributeError, match=r"^'Tribunal' object has no attribute 'nope'$"):
        _ = Tribunal().nope  # type: ignore[attr-defined]
