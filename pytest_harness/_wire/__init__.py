"""The wire formats of model traffic: which interaction is a model reply, and what it says."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_harness._model.response import ModelResponse
from pytest_harness._wire import (
    anthropic,
    bedrock,
    chat,
    eventstream,
    gemini,
    ndjson,
    ollama,
    providers,
    responses,
    sse,
)
from pytest_harness._wire._json import as_dict, as_dicts, as_str, content_types, decode, loads
from pytest_harness._wire._values import (
    NO_TEXT,
    Asked,
    Events,
    Found,
    SentResult,
    Turn,
    event_kind,
)

__all__ = [
    "NO_TEXT",
    "Asked",
    "Recognised",
    "SentResult",
    "Turn",
    "as_dict",
    "as_dicts",
    "as_str",
    "decode",
    "loads",
    "read_request",
    "recognise",
    "recognise_parsed",
    "request_api",
    "request_model",
]


@dataclass(frozen=True, slots=True)
class Recognised:
    """A model response found in one HTTP interaction.

    Attributes:
        api: ``openai.chat``, ``openai.responses``, ``anthropic.messages``,
            ``gemini.generate``, ``bedrock.converse``, ``ollama.chat`` or ``ollama.generate``.
        provider: who served it, as litellm's price map names it: ``bedrock``, ``azure``,
            ``vertex_ai`` or ``ollama`` by the URL (``providers.provider``), else the
            format's own, ``openai``, ``anthropic`` or ``gemini``.
        model: named by the response body, else the request body, else (Gemini) the URL; or "".
        response: the reply, with that model (``cost`` None, ``latency_s`` 0). A chat reply
            is read as litellm's path reads it (its content "" when it sent ""); the other
            formats give None for no text.
        streamed: whether it came as a stream (SSE, Gemini's JSON array, NDJSON lines).
        payload: the body as read: its JSON value (an NDJSON body's: its lines' values), or
            a stream's events' JSON data in order (the seam's replay passes a stream's
            deltas on from it). An ``openai.chat`` payload is readable: ``chat.completion_problem``
            (``chat.chunk_problem`` for each chunk) found nothing in it.
    """

    api: str
    provider: str
    model: str
    response: ModelResponse
    streamed: bool
    payload: Any = None

    def as_sent(self, *, counted: bool = False) -> bool:
        """Whether litellm passes this reply on as it is (``chat.as_sent``, asked when
        wanted): the seam's replay answers a call with ``response`` itself. ``counted``:
        the tokens litellm counted for a reply that says none are known (kept with the
        recording)."""
        return self.api == "openai.chat" and chat.as_sent(
            self.payload, streamed=self.streamed, counted=counted
        )


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
    if _is_eventstream(headers):
        return _recognise_frames(uri, request_body, status, headers, body)
    text = decode(body)
    if not isinstance(status, int) or not 200 <= status < 300 or text is None:
        return None
    if sse.is_event_stream(headers, text):
        events = sse.stream_events(text)
        return recognise_parsed(uri, request_body, status, headers, events=events)
    return recognise_parsed(uri, request_body, status, headers, value=_json_value(headers, text))


def _json_value(headers: Mapping[str, Any], text: str) -> Any:
    """A body's JSON value; an NDJSON body's (by its content type, else by its look, when
    it is no JSON) is the list of its lines' values."""
    if ndjson.by_type(headers):
        return ndjson.values(text)
    value = loads(text)
    return ndjson.values(text) if value is None and ndjson.by_look(text) else value


def recognise_parsed(
    uri: str,
    request_body: bytes | str | Mapping[str, Any] | None,
    status: int,
    headers: Mapping[str, Any],
    *,
    value: Any = None,
    events: Sequence[tuple[str, Any]] | None = None,
) -> Recognised | None:
    """``recognise`` of a body already parsed: its JSON ``value``, or its ``events`` (name,
    JSON data) when it is a server-sent event stream, as ``sse.stream_events`` reads them (a
    ``data: [DONE]`` last, as ``(sse.DONE, {})``); never raises.

    A cassette keeps JSON bodies parsed (``_cassettes.bodies``): its reader need not write
    them out to parse them again. The request body may be given parsed too.
    """
    if not isinstance(status, int) or not 200 <= status < 300:
        return None
    if events is not None:
        data: Any = [data for _, data in sse.ended(events)[0]]
        found, streamed = _from_events(list(events)), True
    elif sse.is_event_stream(headers, ""):  # a JSON value served as a stream: no events in it
        return None
    else:
        data = value
        found, streamed = _from_json(value), isinstance(value, list)
    if found is None:
        return None
    api, response, model = found
    model = bedrock.model_in_url(uri) or model or request_model(uri, _as_request(request_body), api)
    # A chat reply keeps its content as sent ("" included), as litellm's path reads it: the
    # seam's replay answers with this very response.
    response = replace(
        response, finish_reason=response.finish_reason or None, model=model, latency_s=0.0
    )
    return Recognised(api, providers.provider(uri, api), model, response, streamed, data)


def _is_eventstream(headers: Mapping[str, Any]) -> bool:
    """Whether the content type says AWS's binary event stream (Bedrock's streams)."""
    return any(eventstream.CONTENT_TYPE in kind for kind in content_types(headers))


def _recognise_frames(
    uri: str,
    request_body: bytes | str | None,
    status: int,
    headers: Mapping[str, Any],
    body: bytes | str | None,
) -> Recognised | None:
    """A Bedrock stream's reply: its frames' events; None when damaged or an exception."""
    raw = body.encode("utf-8") if isinstance(body, str) else body
    frames = eventstream.decode(raw) if isinstance(raw, bytes) else None
    events = None if frames is None else bedrock.frame_events(frames)
    if not isinstance(status, int) or not 200 <= status < 300 or not events:
        return None
    return recognise_parsed(uri, request_body, status, {}, events=events)


def _as_request(body: bytes | str | Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(body) if isinstance(body, Mapping) else as_dict(loads(decode(body)))


def _from_json(data: Any) -> Found | None:
    """The reply in a whole body's JSON value, read by the format its shape says."""
    if isinstance(data, list) and any(map(ollama.is_response, data)):
        return ollama.read_lines(data)  # an NDJSON stream's lines
    if isinstance(data, list):
        return gemini.read_reply(data) if any(map(gemini.is_response, data)) else None
    if not isinstance(data, dict):
        return None
    if gemini.is_response(data):
        return gemini.read_reply(data)
    if ollama.is_response(data):
        return ollama.read_reply(data)
    if bedrock.is_reply(data):
        return bedrock.read_reply(data)
    if data.get("type") == "message":
        return anthropic.read_reply(data)
    if data.get("object") == "response":
        return responses.read_reply(data)
    if data.get("object") == "chat.completion" or "choices" in data:
        return chat.read_reply(data)
    return None


def _from_events(found: list[tuple[str, Any]]) -> Found | None:
    """The reply a stream's events hold, read by the format their kinds say. Only a chat
    stream is read with its ``data: [DONE]`` (the others never send one)."""
    events: Events = [(name, data) for name, data in found if isinstance(data, dict)]
    if not events or len(events) < len(found):
        return None
    sent, _ = sse.ended(events)
    kinds = {event_kind(name, data) for name, data in sent}
    if any(kind.startswith("response.") for kind in kinds):
        return responses.read_events(sent)
    if kinds & bedrock.CONVERSE_EVENTS:
        return bedrock.read_events(sent)
    if kinds & anthropic.EVENTS:
        return anthropic.read_events(sent)
    if any("choices" in data for _, data in sent):
        return chat.read_events(events)
    if any(gemini.is_response(data) for _, data in sent):
        return gemini.read_events(sent)
    return None


def read_request(api: str, body: bytes | str | None) -> Asked:
    """What a request of ``api`` (``Recognised.api``) asks: its turns, system prompt, tools
    and tool results, read by its format's module. The one reading of a request that the
    report, a cassette miss and a trajectory share. Never raises: a body that is not JSON,
    or of another shape, asks nothing."""
    data = as_dict(loads(decode(body)))
    read = _REQUEST_READERS.get(api)
    return read(data) if read is not None and data else Asked()


_REQUEST_READERS: dict[str, Callable[[dict[str, Any]], Asked]] = {
    "openai.chat": chat.read_request,
    "openai.responses": responses.read_request,
    "anthropic.messages": anthropic.read_request,
    "gemini.generate": gemini.read_request,
    "ollama.chat": ollama.read_request,
    "ollama.generate": ollama.read_request,
    bedrock.API: bedrock.read_request,
}


def request_model(uri: str, data: Mapping[str, Any], api: str | None) -> str:
    """The model a request asks for: a Bedrock URL's, else its body's ``model``, else
    (Gemini) its URL's; or ""."""
    model = bedrock.model_in_url(uri) or as_str(data.get("model"))
    return model or (gemini.model_in_url(uri) if api == "gemini.generate" else "")


def request_api(uri: str, body: bytes | str | None) -> str | None:
    """The API a request is made to (``Recognised.api``), by its URL, else by its body's
    shape; None for another request. For what a request says when no reply is at hand (a
    cassette miss)."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    data = as_dict(loads(decode(body)))
    api = bedrock.request_api(path, data) or next(
        (api for ending, api in _ENDPOINTS.items() if path.endswith(ending)), None
    )
    if api is not None:
        return api
    return next((api for field, api in _REQUEST_FIELDS.items() if field in data), None)


_ENDPOINTS = {
    "/chat/completions": "openai.chat",
    "/responses": "openai.responses",
    "/messages": "anthropic.messages",
    ":generateContent": "gemini.generate",
    ":streamGenerateContent": "gemini.generate",
    "/api/chat": "ollama.chat",
    "/api/generate": "ollama.generate",
}
# The field that holds a request's messages, by API.
_REQUEST_FIELDS = {
    "messages": "openai.chat",
    "input": "openai.responses",
    "contents": "gemini.generate",
}
