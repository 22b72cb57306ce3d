"""Gemini ``generateContent`` and ``streamGenerateContent``: requests, replies and streams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_harness._model.response import ModelResponse
from pytest_harness._wire._json import as_dict, as_dicts, as_int, as_str, json_text
from pytest_harness._wire._values import (
    Asked,
    Events,
    Found,
    SentResult,
    Turn,
    call_text,
    joined,
    names,
    refused,
    reply_format,
    tool_call,
    usage,
)

_API = "gemini.generate"

# The finish reasons that say the reply was blocked instead of given (google-genai's
# FinishReason): by a safety, recitation, blocklist, prohibited-content or SPII filter, by
# Model Armor (Vertex), by an escalation rule, or for an account limited by the Prohibited
# Use Policy. The others say the model stopped (STOP, MAX_TOKENS...) or failed
# (MALFORMED_FUNCTION_CALL, NO_IMAGE...): not a refusal. Any promptFeedback.blockReason is one.
_BLOCKS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
        "PUP_LIMITED_DISABLED",
    }
)


def read_request(data: dict[str, Any]) -> Asked:
    """``systemInstruction``, then ``contents`` (text, functionCall and functionResponse
    parts; thought parts left out), and the ``functionDeclarations`` of ``tools`` (a list,
    or one tool object, which the API takes too); the REST API's snake_case spellings too."""
    contents = as_dicts(data.get("contents"))
    system = as_dict(data.get("systemInstruction") or data.get("system_instruction"))
    tools = data.get("tools")
    declared = [
        d
        for t in as_dicts(tools if isinstance(tools, list) else [tools])
        for d in as_dicts(t.get("functionDeclarations") or t.get("function_declarations"))
    ]
    return Asked(
        instructions=_parts(system)[1],
        turns=tuple(map(_turn, contents)),
        tools=names([as_str(d.get("name")) for d in declared]),
        results=_results(contents),
        **_reply_format(as_dict(data.get("generationConfig") or data.get("generation_config"))),
    )


def _reply_format(config: dict[str, Any]) -> dict[str, Any]:
    """A JSON reply (``responseMimeType: application/json``) and its schema: the JSON
    Schema of ``responseJsonSchema``, else ``responseSchema`` (OpenAPI's subset, its type
    names upper-case: read as JSON Schema's)."""
    mime = as_str(config.get("responseMimeType") or config.get("response_mime_type"))
    if mime != "application/json":
        return reply_format(None, None)
    schema = config.get("responseJsonSchema") or config.get("response_json_schema")
    if schema is None:
        schema = _lower_types(config.get("responseSchema") or config.get("response_schema"))
    return reply_format("json_schema" if isinstance(schema, dict) else "json_object", schema)


def _lower_types(schema: Any) -> Any:
    """An OpenAPI schema with JSON Schema's type names (``OBJECT`` -> ``object``)."""
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: value.lower() if key == "type" and isinstance(value, str) else _lower_types(value)
        for key, value in schema.items()
    }


def _turn(content: dict[str, Any]) -> Turn:
    """A content; one that sends function responses back is a ``tool`` turn."""
    role, said = _parts(content)
    return Turn(role=role or as_str(content.get("role")) or "user", text=said)


def _parts(content: dict[str, Any]) -> tuple[str, str]:
    """(``tool`` for a content of function responses, else ""; its text) of its parts."""
    said, role = [], ""
    for part in as_dicts(content.get("parts")):
        call = as_dict(part.get("functionCall") or part.get("function_call"))
        answer = _answer(part)
        if call:
            said.append(call_text(call.get("name"), call.get("args")))
        elif answer:
            role = "tool"
            said.append(json_text(answer.get("response")))
        elif part.get("thought") is not True:
            said.append(as_str(part.get("text")))
    return role, joined(said)


def _answer(part: dict[str, Any]) -> dict[str, Any]:
    return as_dict(part.get("functionResponse") or part.get("function_response"))


def _results(contents: list[dict[str, Any]]) -> tuple[SentResult, ...]:
    """``functionResponse`` parts, by name (and by ``id`` when they have one: Gemini's
    function calls often have none)."""
    answers = [_answer(p) for c in contents for p in as_dicts(c.get("parts"))]
    return tuple(
        SentResult(
            call_id=as_str(answer.get("id")) or None,
            name=as_str(answer.get("name")),
            text=json_text(answer.get("response")),
        )
        for answer in answers
        if answer
    )


def read_reply(data: Any) -> Found | None:
    """One response, or a stream's responses sent as one JSON array, added up."""
    if isinstance(data, list):
        return _responses(data, streamed=True)
    return _responses([data], streamed=False)


def read_events(events: Events) -> Found | None:
    """A stream's responses sent as server-sent events, added up."""
    return _responses([data for _, data in events], streamed=True)


def is_response(data: Any) -> bool:
    """A Gemini response: candidates, or only the feedback of a blocked prompt."""
    return isinstance(data, dict) and ("candidates" in data or "promptFeedback" in data)


def model_in_url(uri: str) -> str:
    """The model a Gemini URL names: ``…/models/<model>:generateContent``."""
    path = uri.partition("?")[0] if isinstance(uri, str) else ""
    _, found, rest = path.partition("/models/")
    return rest.partition(":")[0].partition("/")[0] if found else ""


def _responses(chunks: Sequence[Any], *, streamed: bool) -> Found | None:
    """One response, or the partial responses of a stream added up."""
    parts: list[dict[str, Any]] = []
    finish = ""
    for chunk in chunks:
        read = _chunk(chunk)
        if read is None:
            return None
        parts, finish = parts + read[0], read[1] or finish
    counted = next((u for c in reversed(chunks) if (u := as_dict(c.get("usageMetadata")))), {})
    text = [p for p in parts if isinstance(p.get("text"), str)]
    calls = [c for p in parts if (c := as_dict(p.get("functionCall")))]
    media = [m for p in parts if p.get("thought") is not True and (m := _media(p))]
    completion = sum(as_int(counted.get(k)) for k in ("candidatesTokenCount", "thoughtsTokenCount"))
    blocked = next((r for c in chunks if (r := _block(c))), None)
    response = ModelResponse(
        content="".join(p["text"] for p in text if p.get("thought") is not True) or None,
        reasoning="".join(p["text"] for p in text if p.get("thought") is True) or None,
        tool_calls=tuple(
            tool_call(n, c.get("id"), c.get("name"), c.get("args")) for n, c in enumerate(calls)
        ),
        media=tuple(media),
        finish_reason=finish or None,
        interrupted=streamed and not finish and blocked is None,
        refusal=blocked or refused("finishReason", finish, _BLOCKS),
        usage=usage(
            counted.get("promptTokenCount"),
            completion,
            counted.get("totalTokenCount"),
            counted.get("cachedContentTokenCount"),
        ),
    )
    model = next((m for c in reversed(chunks) if (m := as_str(c.get("modelVersion")))), "")
    return _API, response, model


def _media(part: dict[str, Any]) -> str:
    """The MIME type of an ``inlineData`` or ``fileData`` part (the part's kind when it names
    none), else ""."""
    for kind in ("inlineData", "inline_data", "fileData", "file_data"):
        data = part.get(kind)
        if isinstance(data, dict):
            return as_str(data.get("mimeType") or data.get("mime_type")) or kind
    return ""


def _block(chunk: dict[str, Any]) -> str | None:
    """``promptFeedback.blockReason: <reason>`` when the prompt was blocked, else None."""
    reason = as_str(as_dict(chunk.get("promptFeedback")).get("blockReason"))
    return f"promptFeedback.blockReason: {reason}" if reason else None


def _chunk(chunk: Any) -> tuple[list[dict[str, Any]], str] | None:
    """(parts, finish reason) of a response's first candidate; None when mistyped."""
    candidates = (chunk.get("candidates") or [{}]) if isinstance(chunk, dict) else None
    if not isinstance(candidates, list) or not isinstance(candidates[0], dict):
        return None
    content = candidates[0].get("content") or {}
    parts = (content.get("parts") or []) if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return None
    return as_dicts(parts), as_str(candidates[0].get("finishReason"))
