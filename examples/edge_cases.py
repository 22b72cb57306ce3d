"""A shared-state team that writes edge-case customer messages, to test the support bot.

Two persona agents take turns: each reads what the team has written (``read_store``) and
writes one more customer message (``write_finding``). The team's output is the list of
messages; ``@pytest.mark.scenarios`` turns each into a test.

Everything asks for ``model="local"`` (the embedded Gemma 3 270M), so recording needs no
key. What a 270M base model's scenarios are worth: next to nothing as test design. In the
recording both members wrote the same plausible message (the store refused the repeats), so
the team yields one scenario; at a higher temperature it wrote nonsense; and it parrots its
prompt (given the built-in guide, it wrote the guide's own words as the finding, hence the
concrete ``coordination`` below). The example shows the machinery (a team on the agent
loop, recorded once, replayed as test parameters), not good edge cases: re-record with
``--harness-model`` set to a real model for those.
"""

from __future__ import annotations

from typing import Any

from pytest_harness import Agent
from pytest_harness.team import KnowledgeStore, SharedState


class Customer(Agent):
    model = "local"
    instructions = "You write one short message that a customer sends to a web shop's support."
    params = {"max_tokens": 120}


class AngryCustomer(Customer):
    instructions = "You write one short, angry message that a customer sends to a web shop."


class EdgeCases(SharedState):
    members = (Customer, SharedState.member(AngryCustomer, instruction="Be upset but polite."))
    coordination = (
        "You write test messages for a web shop's support bot, as customers would write "
        "them. Call read_store to see the messages already written. Then call write_finding "
        "with one new customer message as its content, for example: "
        "'Hi, my parcel was due on Monday and it is still not here. Where is it?'"
    )
    max_cycles = 2
    member_requests = 3
    member_tool_rounds = 2
    # Recorded with repeats refused: a member that repeats a message is told to write another.
    unique_findings = True

    def aggregate(self, store: KnowledgeStore) -> list[Any]:
        return [finding.content for finding in store.read_all()]
