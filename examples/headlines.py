"""A feature written the way applications are: a headline writer on the OpenAI SDK.

Nothing here knows about pytest-harness. The client comes from the environment
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), as in production; ``headline`` makes one call,
``stream_headline`` streams the same answer and hands each piece to a callback (say, a UI).

Its tests (``test_headlines.py``) record this traffic into cassettes and replay it offline:
recorded from the embedded model (``--harness-model=local`` points these variables at it
for each test), so no key was needed, and replay needs none either.
"""

from __future__ import annotations

from collections.abc import Callable

from openai import OpenAI

MODEL = "gpt-4o-mini"
PROMPT = "News story: {story}\n\nA short headline for this story:"


def _first_line(text: str) -> str:
    lines = [line.strip(" #*\"'") for line in text.strip().splitlines()]
    return next((line for line in lines if line), "")


def headline(story: str, *, model: str = MODEL) -> str:
    """One headline for ``story``: the first non-blank line of the model's answer."""
    with OpenAI() as client:
        reply = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": PROMPT.format(story=story)}],
            temperature=0,
            seed=7,
            max_tokens=24,
        )
    return _first_line(reply.choices[0].message.content or "")


def stream_headline(
    story: str, on_piece: Callable[[str], None] | None = None, *, model: str = MODEL
) -> str:
    """``headline``, streamed: ``on_piece`` gets each text delta as it arrives."""
    pieces: list[str] = []
    with OpenAI() as client:
        stream = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": PROMPT.format(story=story)}],
            temperature=0,
            seed=7,
            max_tokens=24,
            stream=True,
        )
        for chunk in stream:
            delta = chunk.choices[0].delta.content if chunk.choices else None
            if delta:
                pieces.append(delta)
                if on_piece is not None:
                    on_piece(delta)
    return _first_line("".join(pieces))
