"""Example: a team generates the customer messages the support bot is tested on.

``@pytest.mark.scenarios(EdgeCases, input=...)`` runs the team once when the test is
collected with ``--harness-live`` and records it in ``cassettes/scenarios/``; every other
run reads the recorded messages back (no model call, no key) and makes one test of each.
The support bot answers each message and the tribunal of ``support_quality`` judges the
reply. Recorded from the embedded model::

    pytest examples/test_edge_cases.py --harness-live

See ``edge_cases.py`` for what a 270M model's scenarios are worth.
"""

from __future__ import annotations

import pytest

from pytest_harness import Harness

from .edge_cases import EdgeCases
from .support_quality import ReplyQuality, SupportBot

pytestmark = pytest.mark.harness


@pytest.mark.scenarios(EdgeCases, input="Customers whose parcel is late", limit=4)
def test_the_support_bot_answers_each_message(harness: Harness, scenario: str) -> None:
    assert isinstance(scenario, str)
    assert scenario.strip()
    reply = harness.ask(SupportBot, scenario)
    assert reply.output  # the degenerate-output check ran on it too
    verdict = harness.get_verdict(ReplyQuality, reply)
    assert len(verdict.votes) + len(verdict.errors) == 3
