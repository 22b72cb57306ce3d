"""Example: a tribunal of three judges as the assertion of a support-reply suite.

Recorded from the embedded model (``pytest examples --harness-live``, no key) into
``cassettes/examples/test_support_quality/``; replayed offline by the README's main job.
Run with ``-v`` (or ``--harness-report``) to see the table of every panel at the end.

Be honest about the judges: Gemma 3 270M is a base model and, as a judge, near chance. In
these recordings it votes "fail" on almost every reply, polite or not. So the suite asserts
what is real (three concurrent judges, schema-constrained votes, the majority rule, the
failure message), and the test that needs a wise judge is a strict xfail: re-record with a
real judge model (``--harness-live --harness-model=openai/gpt-4o-mini``) and it will pass,
and the strict xfail will tell you to drop the marker.
"""

from __future__ import annotations

import pytest

from pytest_harness import Harness
from pytest_harness.tribunal import rule

from .support_quality import ReplyQuality, SupportBot

POLITE = (
    "Thank you for your patience! I have checked your order and it will arrive tomorrow. "
    "Let me know if I can help with anything else."
)
RUDE = "Stop bothering us. Not my problem, figure it out yourself."


def test_every_judge_votes_and_the_majority_decides(harness: Harness) -> None:
    reply = harness.ask(SupportBot, "My order is two weeks late. Where is it?")
    assert reply.output  # the feature answered (the degenerate-output check ran too)
    verdict = harness.get_verdict(ReplyQuality, reply)
    assert len(verdict.votes) + len(verdict.errors) == 3
    assert all(isinstance(vote.vote, bool) for vote in verdict.votes)
    passing = sum(vote.passed is True for vote in verdict.votes)
    assert verdict.passed == (passing > len(verdict.votes) / 2)
    assert verdict.rule == "majority: more than half of the votes must pass; may_fail=1"


def test_a_rude_reply_fails_with_every_vote_in_view(harness: Harness) -> None:
    with pytest.raises(AssertionError) as failure:
        harness.assert_verdict(ReplyQuality, RUDE)
    message = str(failure.value)
    assert message.startswith("ReplyQuality verdict: FAIL")
    for judge in ("Politeness", "Helpfulness", "OnTopic"):
        assert judge in message


@pytest.mark.xfail(
    strict=True,
    reason="a 270M base model judges near chance and fails this polite reply; "
    "re-record with a real judge model",
)
def test_a_polite_reply_passes(harness: Harness) -> None:
    harness.assert_verdict(ReplyQuality, POLITE)


def test_a_looser_rule_over_the_same_judges(harness: Harness) -> None:
    class OneIsEnough(ReplyQuality):
        """The same three judges; one passing vote is enough."""

        @rule("at_least", 1)
        def passed(result):  # type: ignore[no-untyped-def]
            return result.processed["pass"] is True

    verdict = harness.get_verdict(OneIsEnough, RUDE)
    # The rule changed; the parent's may_fail=1 is kept.
    assert verdict.rule == "at_least(1): at least 1 votes must pass; may_fail=1"
    assert verdict.passed == any(vote.passed for vote in verdict.votes)
