"""Example: testing a tool-using agent: what it did (its trajectory) and what it said (judged).

``orders.py`` is an order-lookup support agent built on the harness's ``Orchestrator``.
Marked ``harness``, each test's cassette holds the agent's requests and the judges' calls,
and each run (tools called, requests, stop reason, tokens) is in the session report
(``-v``), the JSON report and JUnit properties.

Recorded from the embedded model, with no key::

    pytest examples/test_orders.py --harness-live

Gemma 3 270M is a base model with no tool calling of its own: the harness offers it the
tools through a grammar, and it does pick the right tool and the order id from the
question. Its answers are loosely tied to what the tool found (in this recording it makes
up a shipping date, and the judge, near chance in general, fails it), and it sometimes
makes up an order id. So the trajectory is asserted in full, and the two tests that need a
wiser agent are strict xfails: ``pytest examples -rx`` names them, and run on their own they
show what a failing verdict and a failing trajectory assertion print. Re-record with a real
model (``--harness-live --harness-model=openai/gpt-4o-mini``) to test the agent for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_harness import Agent, Harness, Tribunal
from pytest_harness.tribunal import rule

from .orders import support_agent

pytestmark = pytest.mark.harness


class FactJudge(Agent):
    model = "local"
    output = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
    temperature = 0
    params = {"max_tokens": 20}
    instructions = (
        "You check a support agent's answer against the facts its tools found. "
        "Answer pass=true if the answer agrees with the facts, pass=false if it does not."
    )

    def prompt(self) -> str:
        return f"Facts: {self.input['facts']}\n\nAnswer: {self.input['answer']}"


class AnswerQuality(Tribunal):
    agents = [FactJudge]
    timeout = 120

    @rule("unanimous")
    def passed(result: Any) -> bool:
        return bool(result.processed["pass"])


def test_an_order_question_looks_the_order_up() -> None:
    run = support_agent().run("Where is my order A-1042?")
    run.assert_called("lookup_order", {"order_id": "A-1042"})
    run.assert_not_called("open_ticket")
    run.assert_requests_at_most(2)  # one lookup, then the answer
    run.assert_stopped("done")
    assert run.output  # the degenerate-output check passed on every response too


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="the 270M agent says the order shipped on 2026-11-20, a date its tool never "
    "returned, and the judge fails it; re-record with a real model",
)
def test_the_answer_is_judged_against_what_the_tool_found(harness: Harness) -> None:
    run = support_agent().run("Where is my order A-1042?")
    lookup = run.assert_called("lookup_order")
    harness.assert_verdict(AnswerQuality, {"facts": lookup.result, "answer": run.output})


def test_a_policy_question_reads_the_policy_and_no_order() -> None:
    run = support_agent().run("What is your refund policy?")
    run.assert_called_times("refund_policy", 1)
    run.assert_not_called("lookup_order")
    assert "30 days" in run.assert_called("refund_policy").sent


def test_the_callbacks_hear_each_batch_before_it_runs_and_each_result() -> None:
    heard: list[tuple[str, Any]] = []
    agent = support_agent(
        on_tool_call_start=lambda batch: heard.append(("batch", batch)),
        on_tool_result=lambda name, result: heard.append(("result", name)),
    )
    agent.run("Where is my order A-1042?")
    batch = [{"name": "lookup_order", "arguments": {"order_id": "A-1042"}}]
    assert heard == [("batch", batch), ("result", "lookup_order")]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="a 270M base model asks for an order id it makes up; re-record with a real model",
)
def test_the_agent_looks_up_the_order_the_customer_named() -> None:
    run = support_agent().run("Has order B-7 shipped?")
    run.assert_called("lookup_order", lambda arguments: arguments.get("order_id") == "B-7")
