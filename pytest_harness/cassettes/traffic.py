"""Model responses in recorded HTTP traffic: which interaction is a chat reply, and what it says.

``recognise`` reads one interaction (request URL and body, response status, headers, body)
and, when it holds a successful reply of a known chat API, plain or streamed, returns the API,
the provider and model (for price look-ups) and its ``ModelResponse``. Known: OpenAI Chat
Completions (read here, via ``read_completion`` / ``read_stream``) and Responses, Anthropic
Messages, Gemini generateContent (read by ``replies``). It goes by the body's shape; the URL
only names a Gemini model.

A cut-off stream is recognised as ``interrupted``, an empty reply as empty (the caller judges
both). Anything else is None: an error status or body, embeddings, a model list, malformed
JSON or SSE, a field of the wrong type. It never raises, never prices (``cost`` None), never
times (``latency_s`` 0). It imports the standard library, ``sse``, ``replies`` and
``pytest_harness.response`` only (no vcrpy, litellm or httpx): it runs on every recorded or
replayed interaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_harness.cassettes.replies import (
    Events,
    Found,
    as_dict,
    as_str,
    event_kind,
    read_anthropic,
    read_anthropic_stream,
    read_gemini,
    read_responses,
    read_responses_stream,
)
from pytest_harness.cassettes.sse import decode, is_event_stream, json_events, loads
from pytest_harness.response import (
    ModelResponse,
    chunk_problem,
    completion_problem,
    read_completion,
    read_stream,
)

__all__ = ["Recognised", "recognise"]

_ANTHROPIC_EVENTS = {"message_start", "content_block_start", "content_block_delta", "message_delta"}


@dataclass(frozen=True, slots=True)
class Recognised:
    """A model response found in one HTTP interaction.

    Attributes:
        api: ``openai.chat``, ``openai.responses``, ``anthropic.messages`` or ``gemini.generate``.
        provider: ``openai``, ``anthropic`` or ``gemini``.
        model: named by the response body, else the request body, else (Gemini) the URL; or "".
        response: the reply, with that model (``cost`` None, ``latency_s`` 0).
        streamed: whether it came as a stream (SSE, or Gemini's JSON array).
    """

    api: str
    provider: str
    model: str
    response: ModelResponse
    streamed: bool


def recognise(
    uri: str,
    request_body: bytes | str | None,
    status: int,
    headers: Mapping[str, Any],
    body: bytes | str | None,
) -> Recognised | None:
    """The model response in one interaction, or None when it holds none; never raises.

    ``headers`` are the response's (name -> list of values, or a value; any case); ``body``
    is the response body, already decompressed.
    """
    text = decode(body)
    if not isinstance(status, int) or not 200 <= status < 300 or text is None:
        return None
    if is_event_stream(headers, text):
        found, streamed = _from_events(json_events(text)), True
    else:
        data = loads(text)
        found, streamed = _from_json(data), isinstance(data, list)
    if found is None:
        return None
    api, response, model = found
    model = model or as_str(as_dict(loads(decode(request_body))).get("model"))
    model = model or (_gemini_model(uri) if api == "gemini.generate" else "")
    response = replace(
        response,
        content=response.content or None,
        reasoning=response.reasoning or None,
        finish_reason=response.finish_reason or None,
        model=model,
        latency_s=0.0,
    )
    return Recognised(api, api.partition(".")[0], model, response, streamed)


def _from_json(data: Any) -> Found | None:
    if isinstance(data, list):
        gemini = any(isinstance(c, dict) and "candidates" in c for c in data)
        return read_gemini(data, streamed=True) if gemini else None
    if not isinstance(data, dict):
        return None
    if "candidates" in data:
        return read_gemini([data], streamed=False)
    if data.get("type") == "message":
        return read_anthropic(data, stopped=True)
    if data.get("object") == "response":
        return read_responses(data)
    if data.get("object") == "chat.completion" or "choices" in data:
        return _chat(data)
    return None


def _from_events(found: list[tuple[str, Any]]) -> Found | None:
    events: Events = [(name, data) for name, data in found if isinstance(data, dict)]
    if not events or len(events) < len(found):
        return None
    kinds = {event_kind(name, data) for name, data in events}
    if any(kind.startswith("response.") for kind in kinds):
        return read_responses_stream(events)
    if kinds & _ANTHROPIC_EVENTS:
        return read_anthropic_stream(events)
    chunks = [data for _, data in events]
    if any("choices" in chunk for chunk in chunks):
        return _chat_stream(chunks)
    return read_gemini(chunks, streamed=True) if any("candidates" in c for c in chunks) else None


# OpenAI Chat Completions, once read_completion / read_stream accept their shape (they would
# raise ProviderResponseError otherwise).
def _chat(data: dict[str, Any]) -> Found | None:
    if completion_problem(data) is not None or not _as_sent(data["choices"]):
        return None
    response = read_completion(data, model="", cost=lambda _: None, started=0.0)
    return "openai.chat", response, as_str(data.get("model"))


def _chat_stream(chunks: list[dict[str, Any]]) -> Found | None:
    if any(chunk_problem(chunk) is not None for chunk in chunks):
        return None
    finish = None
    for chunk in chunks:
        finish = (chunk.get("choices") or [{}])[0].get("finish_reason") or finish
    response = read_stream(chunks, finish_reason=finish, model="", cost=lambda _: None, started=0)
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("model")))), "")
    return "openai.chat", response, model


def _as_sent(choices: list[dict[str, Any]]) -> bool:
    """Whether each choice has its message and its tool calls' arguments as JSON text: a
    completion as the API sends it (``read_completion`` also takes arguments parsed)."""
    messages = [choice.get("message") for choice in choices]
    return all(
        isinstance(message, dict)
        and not any(
            isinstance((call.get("function") or {}).get("arguments"), dict)
            for call in message.get("tool_calls") or []
        )
        for message in messages
    )


def _gemini_model(uri: str) -> str:
    """The model a Gemini URL names: ``…/models/<model>:generateContent``."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    _, found, rest = path.partition("/models/")
    return rest.partition(":")[0].partition("/")[0] if found else ""
