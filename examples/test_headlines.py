"""Example: testing a feature that calls the OpenAI SDK itself, judged by a tribunal.

``headlines.py`` knows nothing of the harness. Marked ``harness``, each test here has its
cassette open from set-up to teardown: the feature's own SDK calls (plain and streamed) and
the judges' calls are recorded into one cassette and replayed from it, every model response
in it is checked (an empty or think-only headline would fail the test), and each test's
tokens are counted (``-v`` shows the table).

Recorded from the embedded model, with no key::

    pytest examples/test_headlines.py --harness-live --harness-model=local

The harness pointed ``OPENAI_BASE_URL`` at the embedded model while recording and noted it in
each cassette, so the replay (``pytest examples``) points the feature at the same endpoint:
no flag, no key, no server. As in ``test_support_quality.py``, Gemma 3 270M is a base model:
as a headline writer it mostly repeats the story, as a judge it is near chance. The tests
assert what the harness makes real (the traffic, the streaming, the shared cassette, the
votes), not the wisdom of a 270M model; re-record with a real model to judge the feature.
"""

from __future__ import annotations

import pytest

from pytest_harness import Agent, Harness, Tribunal

from .headlines import headline, stream_headline

pytestmark = pytest.mark.harness

STORY = (
    "The city council voted on Tuesday to turn the old railway depot into a public library. "
    "Work starts in spring and the library should open in two years."
)


class HeadlineJudge(Agent):
    model = "local"
    output = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
    temperature = 0
    params = {"max_tokens": 20}
    instructions = (
        "You check newspaper headlines. Answer pass=true if the headline is about the story, "
        "pass=false if it is about something else."
    )

    def prompt(self) -> str:
        return f"Story: {STORY}\n\nHeadline: {self.input}"


class HeadlineQuality(Tribunal):
    agents = [HeadlineJudge, HeadlineJudge]
    strategy = "unanimous"


def test_the_headline_is_one_line() -> None:
    text = headline(STORY)
    assert text
    assert "\n" not in text


def test_the_streamed_headline_arrives_in_pieces() -> None:
    pieces: list[str] = []
    text = stream_headline(STORY, pieces.append)
    assert len(pieces) > 1
    assert text
    assert text in "".join(pieces)


def test_the_feature_and_its_judges_share_one_cassette(harness: Harness) -> None:
    verdict = harness.get_verdict(HeadlineQuality, headline(STORY))
    assert len(verdict.votes) == 2
    assert all(isinstance(vote.vote, bool) for vote in verdict.votes)
    assert verdict.passed == all(vote.passed for vote in verdict.votes)
