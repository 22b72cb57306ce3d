"""Example: a support-triage feature, replayed offline from cassettes.

The cassettes under ``cassettes/examples/test_triage/`` were recorded from the embedded model
(Gemma 3 270M on llama.cpp, no API key: the feature asks for ``model="local"``) with::

    pytest examples --harness-live

and replay byte-exact without network or key. The model is a 270M base model: these tests
check the plumbing (structured output that fits its schema, streaming, the degenerate-output
check), not the wisdom of its answers.
"""

from __future__ import annotations

import pytest

from .triage import SCHEMA, draft_reply, triage


def test_triage_answers_in_the_schema() -> None:
    result = triage("My card was charged twice for order #1042, please fix it today!")
    assert set(result) >= set(SCHEMA["required"])
    assert isinstance(result["urgent"], bool)
    assert isinstance(result["topic"], str)


def test_draft_reply_is_not_empty() -> None:
    reply = draft_reply("Hello, I forgot my password. How can I reset it?")
    assert reply.strip()


def test_streamed_reply_matches_its_tokens() -> None:
    tokens: list[str] = []
    reply = draft_reply("Where is my parcel? It is three days late.", stream_to=tokens.append)
    assert tokens
    assert "".join(tokens).strip() == reply


@pytest.mark.harness(cassette="examples/shared-greetings")
@pytest.mark.parametrize("greeting", ["Hi there!", "Good morning, team."])
def test_greetings_share_one_cassette(greeting: str) -> None:
    assert draft_reply(greeting)
