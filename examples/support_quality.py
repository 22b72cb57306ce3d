"""A support-reply writer and the panel of judges that checks its replies.

``SupportBot`` is the feature under test: one model call that writes a reply to a customer.
``ReplyQuality`` is the test's assertion: three differently-instructed judges (politeness,
helpfulness, staying on topic) each vote pass or fail with a reason, and the majority rule
decides, tolerating one judge that fails to answer.

Everything asks for ``model="local"``: the embedded Gemma 3 270M, so recording needs no key.
A 270M base model is a weak judge (near chance on anything subtle): the example shows that
the plumbing is real (concurrent judges, schema-constrained votes, the majority rule, the
report), not that these judges are wise. With a real judge model, set ``harness_model`` or
``--harness-model`` and re-record.
"""

from __future__ import annotations

from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

# Verdict only. Asked for a reason too, this 270M model rambles until max_tokens cuts the
# JSON off (and, asked for the reason first, copies it from the instructions). With a real
# judge model add "reason": {"type": "string"}: the failure table shows it per judge.
VOTE = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}},
    "required": ["pass"],
}


class SupportBot(Agent):
    """The feature: a short, polite reply to a customer's message."""

    model = "local"
    instructions = "You are a polite customer support agent. Reply in one or two sentences."
    params = {"max_tokens": 80}


class Judge(Agent):
    """What every judge shares: the model, the vote schema, deterministic sampling."""

    model = "local"
    output = VOTE
    temperature = 0
    params = {"max_tokens": 20}

    def prompt(self) -> str:
        return f"Support reply to judge:\n{self.input}"


class Politeness(Judge):
    instructions = (
        "You check customer support replies for politeness. Answer pass=true if the reply "
        "is courteous and respectful, pass=false if it is rude or dismissive."
    )


class Helpfulness(Judge):
    instructions = (
        "You check customer support replies for helpfulness. Answer pass=true if the reply "
        "offers help or a next step, pass=false if it refuses or gives nothing useful."
    )


class OnTopic(Judge):
    instructions = (
        "You check that a customer support reply is about customer support. Answer "
        "pass=true if it is, pass=false if it talks about something unrelated."
    )


class ReplyQuality(Tribunal):
    """Majority of three judges; one judge may fail to answer."""

    agents = [Politeness, Helpfulness, OnTopic]
    timeout = 60  # the embedded model serves one request at a time: judges queue

    @rule("majority", may_fail=1)
    def passed(result):
        return result.processed["pass"] is True
