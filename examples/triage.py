"""The feature under test: triage of customer messages with one structured model call."""

from __future__ import annotations

import json
from typing import Any

from pytest_harness import complete

SCHEMA = {
    "type": "object",
    "properties": {"urgent": {"type": "boolean"}, "topic": {"type": "string"}},
    "required": ["urgent", "topic"],
}


def triage(message: str, *, model: str = "local", **params: Any) -> dict[str, Any]:
    """Classify a customer message: is it urgent, and what is it about."""
    response = complete(
        [
            {"role": "system", "content": "Classify the customer message. Answer in JSON."},
            {"role": "user", "content": message},
        ],
        model=model,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "triage", "schema": SCHEMA},
        },
        **params,
    )
    result: dict[str, Any] = json.loads(response.text)
    return result


def draft_reply(message: str, *, model: str = "local", stream_to: Any = None) -> str:
    """Draft a short, polite reply to a customer message (streamed when ``stream_to``)."""
    response = complete(
        [
            {"role": "system", "content": "You are a polite support agent. Reply in one sentence."},
            {"role": "user", "content": message},
        ],
        model=model,
        stream=stream_to is not None,
        on_token=stream_to,
        max_tokens=60,
    )
    return response.text
