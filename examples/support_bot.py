"""The feature under test: a tiny customer-support reply writer built on one model call."""

from __future__ import annotations

from typing import Any

from pytest_harness import complete

INSTRUCTIONS = "You are a polite support agent. Answer in one or two sentences."


def reply_to(message: str, *, model: str, **params: Any) -> str:
    """Write a support reply to a customer's message."""
    response = complete(
        [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": message}],
        model=model,
        temperature=0,
        **params,
    )
    return response.text
