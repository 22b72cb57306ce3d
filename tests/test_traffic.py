"""Recognising model responses in raw HTTP traffic: each API plain and streamed, cut-off
streams, empty and think-only replies, and everything that must come back None (never raise).

The bodies follow the providers' documented shapes (OpenAI chat completion and its chunks,
the Responses API and its streaming events, Anthropic Messages and its event stream, Gemini
generateContent and streamGenerateContent, as SSE and as a JSON array).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_harness._model.response import ModelResponse, ResponseValidator, ToolCall, Usage
from pytest_harness._wire import NO_TEXT, Asked, Recognised, read_request, recognise
from pytest_harness._wire.sse import events, is_event_stream

pytestmark = pytest.mark.harness(cassette=False)

JSON_HEADERS = {"Content-Type": ["application/json; charset=utf-8"]}
SSE_HEADERS = {"content-type": ["text/event-stream; charset=utf-8"]}

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
OPENAI_RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
GEMINI_PLAIN = f"{GEMINI}:generateContent"
GEMINI_SSE = f"{GEMINI}:streamGenerateContent?alt=sse"
GEMINI_ARRAY = f"{GEMINI}:streamGenerateContent"

Event = tuple[str, Any]


def sse(stream: list[Event], *, newline: str = "\n") -> bytes:
    """An SSE body: ``event:`` lines for named events, one ``data:`` line each."""
    lines: list[str] = []
    for name, data in stream:
        lines += [f"event: {name}"] if name else []
        lines += ["data: " + (data if isinstance(data, str) else json.dumps(data)), ""]
    return newline.join([*lines, ""]).encode()


def plain(data: Any) -> bytes:
    return json.dumps(data).encode()


def found(
    uri: str,
    body: bytes | str | None,
    *,
    request: Any = None,
    status: int = 200,
    headers: dict[str, Any] | None = None,
) -> Recognised | None:
    request_body = json.dumps(request) if request is not None else None
    return recognise(uri, request_body, status, headers or JSON_HEADERS, body)


def recognised(uri: str, body: bytes | str, **kwargs: Any) -> Recognised:
    result = found(uri, body, **kwargs)
    assert result is not None
    return result


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy


def weather(call_id: str | None, raw: str) -> ToolCall:
    return ToolCall(id=call_id, name="get_weather", arguments=json.loads(raw), raw_arguments=raw)


# OpenAI Chat Completions.

CHAT_COMPLETION = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello! How can I assist you today?",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 10,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    },
    "service_tier": "default",
    "system_fingerprint": "fp_50cad350e4",
}

CHAT_TOOL_CALL = {
    **CHAT_COMPLETION,
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


CHAT_USAGE_CHUNK = {
    **chat_chunk({}),
    "choices": [],
    "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
}
CHAT_STREAM: list[Event] = [
    ("", chat_chunk({"role": "assistant", "content": ""})),
    ("", chat_chunk({"content": "Hello"})),
    ("", chat_chunk({"content": " there"})),
    ("", chat_chunk({}, "stop")),
    ("", CHAT_USAGE_CHUNK),
    ("", "[DONE]"),
]


def test_openai_chat_completion() -> None:
    result = recognised(OPENAI_CHAT, plain(CHAT_COMPLETION))
    assert (result.api, result.provider, result.model) == (
        "openai.chat",
        "openai",
        "gpt-4.1-2025-04-14",
    )
    assert result.streamed is False
    assert result.response == ModelResponse(
        content="Hello! How can I assist you today?",
        finish_reason="stop",
        usage=Usage(prompt_tokens=19, completion_tokens=10, total_tokens=29),
        model="gpt-4.1-2025-04-14",
    )
    assert (result.response.cost, result.response.latency_s) == (None, 0.0)


def test_openai_chat_completion_without_object_field_is_recognised_by_its_choices() -> None:
    body = {k: v for k, v in CHAT_COMPLETION.items() if k != "object"}
    assert recognised(OPENAI_CHAT, plain(body)).response.content == (
        "Hello! How can I assist you today?"
    )


def test_openai_chat_tool_call() -> None:
    response = recognised(OPENAI_CHAT, plain(CHAT_TOOL_CALL)).response
    assert response.content is None
    assert response.tool_calls == (weather("call_abc123", '{"city":"Paris"}'),)
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("message", "content", "reasoning"),
    [
        pytest.param(
            {"content": "4", "reasoning_content": "2 + 2 is 4."}, "4", "2 + 2 is 4.", id="field"
        ),
        pytest.param(
            {"content": "<think>2 + 2 is 4.</think>4"},
            "<think>2 + 2 is 4.</think>4",
            "2 + 2 is 4.",
            id="think-block",
        ),
    ],
)
def test_openai_chat_reasoning(message: dict[str, Any], content: str, reasoning: str) -> None:
    body = {
        **CHAT_COMPLETION,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    response = recognised(OPENAI_CHAT, plain(body)).response
    assert (response.content, response.reasoning) == (content, reasoning)


def test_openai_chat_stream_with_usage_in_its_last_chunk() -> None:
    result = recognised(OPENAI_CHAT, sse(CHAT_STREAM), headers=SSE_HEADERS)
    assert (result.api, result.model, result.streamed) == (
        "openai.chat",
        "gpt-4o-mini-2024-07-18",
        True,
    )
    assert result.response == ModelResponse(
        content="Hello there",
        finish_reason="stop",
        usage=Usage(prompt_tokens=9, completion_tokens=3, total_tokens=12),
        model="gpt-4o-mini-2024-07-18",
    )


def test_openai_chat_stream_tool_call_arguments_arrive_in_pieces() -> None:
    call = {"index": 0, "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function"}
    stream: list[Event] = [
        (
            "",
            chat_chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{**call, "function": {"name": "get_weather", "arguments": ""}}],
                }
            ),
        ),
        ("", chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]})),
        ("", chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty":"Paris"}'}}]})),
        ("", chat_chunk({}, "tool_calls")),
        ("", "[DONE]"),
    ]
    response = recognised(OPENAI_CHAT, sse(stream), headers=SSE_HEADERS).response
    assert response.tool_calls == (weather("call_DdmO9pD3xa9XTPNJ32zg2hcA", '{"city":"Paris"}'),)
    assert (response.content, response.finish_reason, response.interrupted) == (
        None,
        "tool_calls",
        False,
    )


def test_openai_chat_stream_cut_off_is_interrupted() -> None:
    response = recognised(OPENAI_CHAT, sse(CHAT_STREAM[:3]), headers=SSE_HEADERS).response
    assert (response.content, response.finish_reason, response.interrupted) == (
        "Hello there",
        None,
        True,
    )
    assert response.usage == Usage()


def test_sse_is_recognised_by_its_content_type_even_after_a_comment_line() -> None:
    body = b": OPENROUTER PROCESSING\n\n" + sse(CHAT_STREAM)
    assert found(OPENAI_CHAT, body) is None  # neither the header nor the first line says SSE
    result = recognised(OPENAI_CHAT, body, headers={"Content-Type": "text/event-stream"})
    assert (result.streamed, result.response.content) == (True, "Hello there")


def test_sse_is_recognised_by_its_first_line_without_a_content_type() -> None:
    result = recognised(OPENAI_CHAT, sse(CHAT_STREAM), headers={})
    assert (result.streamed, result.response.content) == (True, "Hello there")


@pytest.mark.parametrize(
    ("body", "request_body", "model"),
    [
        pytest.param(CHAT_COMPLETION, {"model": "gpt-4o"}, "gpt-4.1-2025-04-14", id="body-first"),
        pytest.param({**CHAT_COMPLETION, "model": None}, {"model": "gpt-4o"}, "gpt-4o", id="req"),
        pytest.param({**CHAT_COMPLETION, "model": ""}, {"messages": []}, "", id="none"),
        pytest.param({**CHAT_COMPLETION, "model": 5}, "not json", "", id="bad-request-body"),
    ],
)
def test_the_model_comes_from_the_response_else_the_request(
    body: dict[str, Any], request_body: Any, model: str
) -> None:
    result = recognised(OPENAI_CHAT, plain(body), request=request_body)
    assert (result.model, result.response.model) == (model, model)


# OpenAI Responses API.

RESPONSE_BASE = {
    "id": "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41",
    "object": "response",
    "created_at": 1741476777,
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "o4-mini-2025-04-16",
    "parallel_tool_calls": True,
    "tools": [],
}
REASONING_ITEM = {
    "id": "rs_6876cf02e0bc8192b74af0fb64b715ff",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "**Answering a simple question**"},
        {"type": "summary_text", "text": "The user asks for the capital of France."},
    ],
}
MESSAGE_ITEM = {
    "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c45c1d41",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [
        {"type": "output_text", "text": "The capital of France is Paris.", "annotations": []}
    ],
}
FUNCTION_ITEM = {
    "id": "fc_12345xyz",
    "type": "function_call",
    "status": "completed",
    "call_id": "call_12345xyz",
    "name": "get_weather",
    "arguments": '{"location":"Paris, France"}',
}
RESPONSES_USAGE = {
    "input_tokens": 328,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 52,
    "output_tokens_details": {"reasoning_tokens": 32},
    "total_tokens": 380,
}
RESPONSE = {
    **RESPONSE_BASE,
    "status": "completed",
    "output": [REASONING_ITEM, MESSAGE_ITEM],
    "usage": RESPONSES_USAGE,
}


def test_openai_responses_with_reasoning_summary() -> None:
    result = recognised(OPENAI_RESPONSES, plain(RESPONSE))
    assert (result.api, result.provider, result.model, result.streamed) == (
        "openai.responses",
        "openai",
        "o4-mini-2025-04-16",
        False,
    )
    assert result.response == ModelResponse(
        content="The capital of France is Paris.",
        reasoning="**Answering a simple question**\n\nThe user asks for the capital of France.",
        finish_reason="stop",
        usage=Usage(prompt_tokens=328, completion_tokens=52, total_tokens=380),
        model="o4-mini-2025-04-16",
    )


def test_openai_responses_full_reasoning_text_is_preferred_to_its_summary() -> None:
    item = {**REASONING_ITEM, "content": [{"type": "reasoning_text", "text": "Paris, plainly."}]}
    body = {**RESPONSE, "output": [item, MESSAGE_ITEM]}
    assert recognised(OPENAI_RESPONSES, plain(body)).response.reasoning == "Paris, plainly."


def test_openai_responses_function_call() -> None:
    body = {**RESPONSE, "output": [REASONING_ITEM, FUNCTION_ITEM]}
    response = recognised(OPENAI_RESPONSES, plain(body)).response
    assert response.tool_calls == (weather("call_12345xyz", '{"location":"Paris, France"}'),)
    assert (response.content, response.finish_reason) == (None, "tool_calls")


@pytest.mark.parametrize(
    ("status", "details", "finish", "interrupted"),
    [
        ("incomplete", {"reason": "max_output_tokens"}, "max_output_tokens", False),
        ("incomplete", {"reason": "content_filter"}, "content_filter", False),
        ("incomplete", None, "incomplete", False),
        ("failed", None, "failed", True),
        ("cancelled", None, "cancelled", True),
    ],
)
def test_openai_responses_status_gives_the_finish_reason(
    status: str, details: Any, finish: str, interrupted: bool
) -> None:
    body = {**RESPONSE, "status": status, "incomplete_details": details}
    response = recognised(OPENAI_RESPONSES, plain(body)).response
    assert (response.finish_reason, response.interrupted) == (finish, interrupted)
    assert response.content == "The capital of France is Paris."


def responses_stream(final: str | None) -> list[Event]:
    """A reasoning model's documented event sequence, ending in ``final`` (None: cut off)."""
    created = {**RESPONSE_BASE, "status": "in_progress", "output": [], "usage": None}
    item = {"item_id": MESSAGE_ITEM["id"], "output_index": 1, "content_index": 0}
    summary = {"item_id": REASONING_ITEM["id"], "output_index": 0, "summary_index": 0}
    events: list[Event] = [
        ("response.created", {"response": created}),
        ("response.in_progress", {"response": created}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": {**REASONING_ITEM, "summary": []}},
        ),
        (
            "response.reasoning_summary_part.added",
            {**summary, "part": {"type": "summary_text", "text": ""}},
        ),
        ("response.reasoning_summary_text.delta", {**summary, "delta": "**Answering"}),
        ("response.reasoning_summary_text.delta", {**summary, "delta": " a simple question**"}),
        (
            "response.reasoning_summary_text.done",
            {**summary, "text": "**Answering a simple question**"},
        ),
        ("response.output_item.done", {"output_index": 0, "item": REASONING_ITEM}),
        (
            "response.output_item.added",
            {"output_index": 1, "item": {**MESSAGE_ITEM, "content": []}},
        ),
        ("response.content_part.added", {**item, "part": {"type": "output_text", "text": ""}}),
        ("response.output_text.delta", {**item, "delta": "The capital", "logprobs": []}),
        ("response.output_text.delta", {**item, "delta": " of France", "logprobs": []}),
    ]
    if final is not None:
        events += [
            ("response.output_text.delta", {**item, "delta": " is Paris.", "logprobs": []}),
            ("response.output_text.done", {**item, "text": "The capital of France is Paris."}),
            ("response.output_item.done", {"output_index": 1, "item": MESSAGE_ITEM}),
            (final, {"response": {**RESPONSE, "status": final.rpartition(".")[2]}}),
        ]
    return [
        (name, {"type": name, "sequence_number": n, **data})
        for n, (name, data) in enumerate(events)
    ]


def test_openai_responses_stream_uses_the_completed_events_response() -> None:
    result = recognised(OPENAI_RESPONSES, sse(responses_stream("response.completed")))
    assert (result.api, result.model, result.streamed) == (
        "openai.responses",
        "o4-mini-2025-04-16",
        True,
    )
    assert result.response == recognised(OPENAI_RESPONSES, plain(RESPONSE)).response


@pytest.mark.parametrize(
    ("final", "finish", "interrupted"),
    [("response.incomplete", "incomplete", False), ("response.failed", "failed", True)],
)
def test_openai_responses_stream_other_final_events(
    final: str, finish: str, interrupted: bool
) -> None:
    response = recognised(OPENAI_RESPONSES, sse(responses_stream(final))).response
    assert (response.finish_reason, response.interrupted) == (finish, interrupted)
    assert response.content == "The capital of France is Paris."


def test_openai_responses_stream_cut_off_keeps_the_deltas() -> None:
    result = recognised(OPENAI_RESPONSES, sse(responses_stream(None)), headers=SSE_HEADERS)
    assert result.model == "o4-mini-2025-04-16"  # from response.created
    assert result.response == ModelResponse(
        content="The capital of France",
        reasoning="**Answering a simple question**",
        finish_reason=None,
        interrupted=True,
        model="o4-mini-2025-04-16",
    )


def test_openai_responses_stream_cut_off_keeps_finished_function_calls() -> None:
    stream = [
        ("response.created", {"response": {**RESPONSE_BASE, "status": "in_progress"}}),
        ("response.output_item.done", {"output_index": 0, "item": FUNCTION_ITEM}),
        ("error", {"code": "server_error", "message": "The server had an error"}),
    ]
    response = recognised(OPENAI_RESPONSES, sse(stream)).response
    assert response.tool_calls == (weather("call_12345xyz", '{"location":"Paris, France"}'),)
    assert (response.content, response.interrupted) == (None, True)


# Anthropic Messages.

ANTHROPIC_MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "thinking", "thinking": "The user wants the capital.", "signature": "EqQBCgIYAh"},
        {"type": "text", "text": "Paris is the capital "},
        {"type": "text", "text": "of France."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 2095,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1024,
        "output_tokens": 503,
        "service_tier": "standard",
    },
}
TOOL_USE = {
    "type": "tool_use",
    "id": "toolu_01A09q90qw90lq917835lq9",
    "name": "get_weather",
    "input": {"location": "San Francisco, CA", "unit": "celsius"},
}


def test_anthropic_message_with_thinking_and_cache_usage() -> None:
    result = recognised(ANTHROPIC, plain(ANTHROPIC_MESSAGE))
    assert (result.api, result.provider, result.model, result.streamed) == (
        "anthropic.messages",
        "anthropic",
        "claude-sonnet-4-5-20250929",
        False,
    )
    assert result.response == ModelResponse(
        content="Paris is the capital of France.",
        reasoning="The user wants the capital.",
        finish_reason="end_turn",
        usage=Usage(
            prompt_tokens=2095 + 100 + 1024,
            completion_tokens=503,
            total_tokens=3722,
            cached_tokens=1024,
            cache_write_tokens=100,
        ),
        model="claude-sonnet-4-5-20250929",
    )


def test_anthropic_tool_use() -> None:
    body = {
        **ANTHROPIC_MESSAGE,
        "content": [{"type": "text", "text": "Let me check."}, TOOL_USE],
        "stop_reason": "tool_use",
    }
    response = recognised(ANTHROPIC, plain(body)).response
    raw = json.dumps(TOOL_USE["input"])
    assert response.tool_calls == (weather("toolu_01A09q90qw90lq917835lq9", raw),)
    assert (response.content, response.finish_reason) == ("Let me check.", "tool_use")


def test_anthropic_redacted_thinking_is_no_reasoning() -> None:
    blocks = [{"type": "redacted_thinking", "data": "EmwKAhgB"}, {"type": "text", "text": "Hi."}]
    response = recognised(ANTHROPIC, plain({**ANTHROPIC_MESSAGE, "content": blocks})).response
    assert (response.content, response.reasoning) == ("Hi.", None)


def anthropic_stream(*, end: bool = True, stop: bool = True) -> list[Event]:
    """The documented stream: thinking, text and a tool_use block, then the message's end."""
    start = {
        **ANTHROPIC_MESSAGE,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 472, "cache_read_input_tokens": 28, "output_tokens": 2},
    }

    def delta(index: int, kind: str, **fields: Any) -> Event:
        return "content_block_delta", {"index": index, "delta": {"type": kind, **fields}}

    events: list[Event] = [
        ("message_start", {"message": start}),
        (
            "content_block_start",
            {"index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        ),
        ("ping", {}),
        delta(0, "thinking_delta", thinking="I need "),
        delta(0, "thinking_delta", thinking="the weather."),
        delta(0, "signature_delta", signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk"),
        ("content_block_stop", {"index": 0}),
        ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        delta(1, "text_delta", text="Let me "),
        delta(1, "text_delta", text="check."),
        ("content_block_stop", {"index": 1}),
        ("content_block_start", {"index": 2, "content_block": {**TOOL_USE, "input": {}}}),
        delta(2, "input_json_delta", partial_json=""),
        delta(2, "input_json_delta", partial_json='{"location": "San Fra'),
        delta(2, "input_json_delta", partial_json='ncisco, CA", "unit": "celsius"}'),
        ("content_block_stop", {"index": 2}),
    ]
    message_delta = {"delta": {"stop_reason": "tool_use", "stop_sequence": None}}
    events += [("message_delta", {**message_delta, "usage": {"output_tokens": 89}})] if stop else []
    events += [("message_stop", {})] if end else []
    return [(name, {"type": name, **data}) for name, data in events]


def test_anthropic_stream() -> None:
    result = recognised(ANTHROPIC, sse(anthropic_stream()), headers=SSE_HEADERS)
    assert (result.api, result.model, result.streamed) == (
        "anthropic.messages",
        "claude-sonnet-4-5-20250929",
        True,
    )
    raw = '{"location": "San Francisco, CA", "unit": "celsius"}'
    assert result.response == ModelResponse(
        content="Let me check.",
        reasoning="I need the weather.",
        tool_calls=(weather("toolu_01A09q90qw90lq917835lq9", raw),),
        finish_reason="tool_use",
        usage=Usage(prompt_tokens=500, completion_tokens=89, total_tokens=589, cached_tokens=28),
        model="claude-sonnet-4-5-20250929",
    )


@pytest.mark.parametrize(
    ("end", "stop", "finish"),
    [(False, False, None), (False, True, "tool_use"), (True, False, None)],
    ids=["no-message-delta", "no-message-stop", "no-stop-reason"],
)
def test_anthropic_stream_cut_off_is_interrupted(end: bool, stop: bool, finish: str | None) -> None:
    response = recognised(ANTHROPIC, sse(anthropic_stream(end=end, stop=stop))).response
    assert (response.interrupted, response.finish_reason) == (True, finish)
    assert (response.content, response.reasoning) == ("Let me check.", "I need the weather.")


def test_anthropic_stream_cut_mid_tool_input_keeps_the_raw_text() -> None:
    stream = anthropic_stream(end=False, stop=False)[:-2]  # the last delta and block stop lost
    response = recognised(ANTHROPIC, sse(stream)).response
    (call,) = response.tool_calls
    assert (call.name, call.arguments, call.raw_arguments) == (
        "get_weather",
        None,
        '{"location": "San Fra',
    )
    assert response.interrupted is True


def test_anthropic_stream_cut_after_message_start_is_interrupted_and_empty() -> None:
    result = recognised(ANTHROPIC, sse(anthropic_stream()[:1]))
    assert result.model == "claude-sonnet-4-5-20250929"
    assert result.response == ModelResponse(
        content=None,
        interrupted=True,
        usage=Usage(prompt_tokens=500, completion_tokens=2, total_tokens=502, cached_tokens=28),
        model="claude-sonnet-4-5-20250929",
    )


def test_anthropic_stream_error_event_leaves_it_interrupted() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stream = [*anthropic_stream(end=False, stop=False)[:10], ("error", error)]
    response = recognised(ANTHROPIC, sse(stream)).response
    assert (response.content, response.interrupted, response.usage.prompt_tokens) == (
        "Let me check.",
        True,
        500,
    )


# Gemini generateContent.

GEMINI_RESPONSE = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {"text": "**Considering the capital**\n\nFrance's capital.", "thought": True},
                    {"text": "The capital of France "},
                    {"text": "is Paris."},
                ],
                "role": "model",
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 8,
        "candidatesTokenCount": 7,
        "totalTokenCount": 135,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}],
        "thoughtsTokenCount": 120,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "2sDqaKvNB8ygz7IPpM-j6Q4",
}


def gemini_chunks(*, finish: bool = True) -> list[dict[str, Any]]:
    """streamGenerateContent's partial responses: a thought, text in two pieces, the end."""

    def chunk(part: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        usage = {"promptTokenCount": 8, "totalTokenCount": 8}
        return {
            "candidates": [
                {"content": {"parts": [part], "role": "model"}, "index": 0, **candidate}
            ],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
            "responseId": "2sDqaKvNB8ygz7IPpM-j6Q4",
        }

    chunks = [
        chunk({"text": "Thinking it over.", "thought": True}),
        chunk({"text": "The capital of France "}),
    ]
    if finish:
        last = chunk({"text": "is Paris."}, finishReason="STOP")
        chunks.append({**last, "usageMetadata": GEMINI_RESPONSE["usageMetadata"]})
    return chunks


def test_gemini_generate_content_with_thoughts() -> None:
    result = recognised(GEMINI_PLAIN, plain(GEMINI_RESPONSE))
    assert (result.api, result.provider, result.model, result.streamed) == (
        "gemini.generate",
        "gemini",
        "gemini-2.5-flash",
        False,
    )
    assert result.response == ModelResponse(
        content="The capital of France is Paris.",
        reasoning="**Considering the capital**\n\nFrance's capital.",
        finish_reason="STOP",
        usage=Usage(prompt_tokens=8, completion_tokens=127, total_tokens=135),
        model="gemini-2.5-flash",
    )


def gemini_parts(*parts: dict[str, Any]) -> dict[str, Any]:
    candidate = {"content": {"parts": list(parts), "role": "model"}, "finishReason": "STOP"}
    return {**GEMINI_RESPONSE, "candidates": [candidate]}


PNG = {"mimeType": "image/png", "data": "iVBORw0KGgo="}


@pytest.mark.parametrize(
    ("parts", "media"),
    [
        pytest.param([{"inlineData": PNG}], ("image/png",), id="inlineData"),
        pytest.param(
            [{"inline_data": {"mime_type": "image/jpeg", "data": ""}}],
            ("image/jpeg",),
            id="inline_data",
        ),
        pytest.param(
            [
                {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}},
                {"inlineData": {}},
            ],
            ("video/mp4", "inlineData"),
            id="fileData-and-no-mime-type",
        ),
        pytest.param([{"inlineData": PNG, "thought": True}], (), id="a-thought-image-is-no-output"),
        pytest.param([{"inlineData": None}, {"text": "x"}], (), id="no-media"),
    ],
)
def test_gemini_media_parts(parts: list[dict[str, Any]], media: tuple[str, ...]) -> None:
    """Each inlineData and fileData part of the answer, by its MIME type: a reply that
    carries one is not empty (the validator's ``media``)."""
    response = recognised(GEMINI_PLAIN, plain(gemini_parts(*parts))).response
    assert response.media == media
    problem = ResponseValidator().problem(response)
    assert problem == (None if media or response.content else "empty_response")


def test_a_streamed_gemini_image_is_media() -> None:
    chunks = [gemini_parts({"text": "Here:"}), gemini_parts({"inlineData": PNG})]
    response = recognised(GEMINI_ARRAY, plain(chunks)).response
    assert (response.content, response.media) == ("Here:", ("image/png",))


def test_gemini_function_call() -> None:
    part = {"functionCall": {"name": "get_weather", "args": {"location": "Boston, MA"}}}
    candidate = {"content": {"parts": [part], "role": "model"}, "finishReason": "STOP"}
    response = recognised(GEMINI_PLAIN, plain({**GEMINI_RESPONSE, "candidates": [candidate]}))
    assert response.response.tool_calls == (weather(None, '{"location": "Boston, MA"}'),)
    assert response.response.content is None


@pytest.mark.parametrize(
    ("uri", "body", "headers"),
    [
        pytest.param(
            GEMINI_SSE,
            sse([("", c) for c in gemini_chunks()], newline="\r\n"),
            SSE_HEADERS,
            id="sse-crlf",
        ),
        pytest.param(GEMINI_ARRAY, plain(gemini_chunks()), JSON_HEADERS, id="json-array"),
    ],
)
def test_gemini_stream(uri: str, body: bytes, headers: dict[str, Any]) -> None:
    result = recognised(uri, body, headers=headers)
    assert (result.api, result.model, result.streamed) == (
        "gemini.generate",
        "gemini-2.5-flash",
        True,
    )
    assert result.response == ModelResponse(
        content="The capital of France is Paris.",
        reasoning="Thinking it over.",
        finish_reason="STOP",
        usage=Usage(prompt_tokens=8, completion_tokens=127, total_tokens=135),
        model="gemini-2.5-flash",
    )


@pytest.mark.parametrize(
    ("uri", "body"),
    [
        pytest.param(GEMINI_SSE, sse([("", c) for c in gemini_chunks(finish=False)]), id="sse"),
        pytest.param(GEMINI_ARRAY, plain(gemini_chunks(finish=False)), id="json-array"),
    ],
)
def test_gemini_stream_without_finish_reason_is_interrupted(uri: str, body: bytes) -> None:
    response = recognised(uri, body).response
    assert (response.content, response.finish_reason, response.interrupted) == (
        "The capital of France ",
        None,
        True,
    )
    assert response.usage == Usage(prompt_tokens=8, completion_tokens=0, total_tokens=8)


def test_gemini_max_tokens_finish_reason_is_kept() -> None:
    body = replaced(GEMINI_RESPONSE, ("candidates", 0, "finishReason"), "MAX_TOKENS")
    response = recognised(GEMINI_PLAIN, plain(body)).response
    assert (response.finish_reason, response.interrupted) == ("MAX_TOKENS", False)


@pytest.mark.parametrize(
    ("uri", "model"),
    [
        (GEMINI_PLAIN, "gemini-2.5-flash"),
        (GEMINI_SSE, "gemini-2.5-flash"),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
            "/publishers/google/models/gemini-2.0-flash-001:generateContent",
            "gemini-2.0-flash-001",
        ),
        ("https://example.test/generate", ""),
    ],
)
def test_gemini_model_from_the_url_when_the_body_has_none(uri: str, model: str) -> None:
    body = {k: v for k, v in GEMINI_RESPONSE.items() if k != "modelVersion"}
    assert recognised(uri, plain(body)).model == model


# Empty and think-only replies are recognised: the caller judges them. A chat reply's empty
# content stays "" as it was sent (as litellm's path reads it); the others have no content.

CHAT_MESSAGE = ("choices", 0, "message")
CHAT_CONTENT = (*CHAT_MESSAGE, "content")
GEMINI_PARTS = ("candidates", 0, "content", "parts")
THINKING = "Just thinking."


@pytest.mark.parametrize(
    ("uri", "body", "content"),
    [
        pytest.param(OPENAI_CHAT, replaced(CHAT_COMPLETION, CHAT_CONTENT, ""), "", id="chat"),
        pytest.param(
            OPENAI_CHAT, replaced(CHAT_COMPLETION, CHAT_CONTENT, None), None, id="chat-null"
        ),
        pytest.param(OPENAI_RESPONSES, {**RESPONSE, "output": []}, None, id="responses"),
        pytest.param(ANTHROPIC, {**ANTHROPIC_MESSAGE, "content": []}, None, id="anthropic"),
        pytest.param(
            GEMINI_PLAIN,
            replaced(GEMINI_RESPONSE, GEMINI_PARTS, [{"text": ""}]),
            None,
            id="gemini",
        ),
    ],
)
def test_an_empty_reply_is_recognised_with_no_content(
    uri: str, body: dict[str, Any], content: str | None
) -> None:
    response = recognised(uri, plain(body)).response
    assert (response.content, response.reasoning, response.tool_calls) == (content, None, ())
    assert (response.interrupted, response.has_tool_calls) == (False, False)


@pytest.mark.parametrize(
    ("uri", "body"),
    [
        pytest.param(
            OPENAI_CHAT,
            replaced(CHAT_COMPLETION, CHAT_MESSAGE, {"content": "", "reasoning_content": THINKING}),
            id="chat",
        ),
        pytest.param(
            OPENAI_RESPONSES,
            {
                **RESPONSE,
                "output": [
                    {**REASONING_ITEM, "summary": [{"type": "summary_text", "text": THINKING}]}
                ],
            },
            id="responses",
        ),
        pytest.param(
            ANTHROPIC,
            {
                **ANTHROPIC_MESSAGE,
                "content": [{"type": "thinking", "thinking": THINKING, "signature": "EqQBCgIYAh"}],
            },
            id="anthropic",
        ),
        pytest.param(
            GEMINI_PLAIN,
            replaced(GEMINI_RESPONSE, GEMINI_PARTS, [{"text": THINKING, "thought": True}]),
            id="gemini",
        ),
    ],
)
def test_a_think_only_reply_is_recognised_with_reasoning_and_no_content(
    uri: str, body: dict[str, Any]
) -> None:
    response = recognised(uri, plain(body)).response
    content = "" if uri == OPENAI_CHAT else None  # as sent (see above)
    assert (response.content, response.reasoning, response.tool_calls) == (content, THINKING, ())
    assert (response.interrupted, response.text) == (False, "")


# What is not a successful model response is None, and nothing raises.


@pytest.mark.parametrize("status", [100, 199, 300, 301, 400, 401, 429, 500, 529])
@pytest.mark.parametrize(
    ("uri", "body"),
    [
        (OPENAI_CHAT, CHAT_COMPLETION),
        (ANTHROPIC, ANTHROPIC_MESSAGE),
        (GEMINI_PLAIN, GEMINI_RESPONSE),
    ],
)
def test_a_status_outside_2xx_is_none(status: int, uri: str, body: dict[str, Any]) -> None:
    assert found(uri, plain(body), status=status) is None
    assert found(uri, plain(body), status=201) is not None  # the same body, a success


@pytest.mark.parametrize(
    ("uri", "body"),
    [
        pytest.param(
            OPENAI_CHAT,
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            id="openai-error",
        ),
        pytest.param(
            ANTHROPIC,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            id="anthropic-error",
        ),
        pytest.param(
            "https://api.openai.com/v1/embeddings",
            {
                "object": "list",
                "data": [{"object": "embedding", "index": 0, "embedding": [0.0023, -0.0093]}],
                "model": "text-embedding-3-small",
                "usage": {"prompt_tokens": 8, "total_tokens": 8},
            },
            id="embeddings",
        ),
        pytest.param(
            "https://api.openai.com/v1/models",
            {
                "object": "list",
                "data": [
                    {"id": "gpt-4o", "object": "model", "created": 1686935002, "owned_by": "openai"}
                ],
            },
            id="model-list",
        ),
        pytest.param(
            "https://api.openai.com/v1/completions",
            {
                "object": "text_completion",
                "choices": [{"text": "legacy", "index": 0, "finish_reason": "stop"}],
            },
            id="legacy-completion",
        ),
        pytest.param(OPENAI_CHAT, {**CHAT_COMPLETION, "choices": []}, id="no-choices"),
        pytest.param(OPENAI_CHAT, {"id": "x", "object": "chat.completion"}, id="chat-bare"),
        pytest.param(
            OPENAI_RESPONSES,
            {"object": "response", "status": "completed"},
            id="responses-without-output",
        ),
        pytest.param(OPENAI_CHAT, {}, id="empty-object"),
    ],
)
def test_other_json_shapes_are_none(uri: str, body: dict[str, Any]) -> None:
    assert found(uri, plain(body)) is None


BAD_TYPES = [
    pytest.param(OPENAI_CHAT, {**CHAT_COMPLETION, "choices": "x"}, id="chat-choices-str"),
    pytest.param(OPENAI_CHAT, {**CHAT_COMPLETION, "choices": [5]}, id="chat-choice-int"),
    pytest.param(OPENAI_CHAT, replaced(CHAT_COMPLETION, CHAT_MESSAGE, "hi"), id="message-str"),
    pytest.param(OPENAI_CHAT, replaced(CHAT_COMPLETION, CHAT_CONTENT, 5), id="chat-content-int"),
    pytest.param(
        OPENAI_CHAT,
        replaced(CHAT_TOOL_CALL, (*CHAT_MESSAGE, "tool_calls"), "x"),
        id="tool-calls-str",
    ),
    pytest.param(
        OPENAI_CHAT,
        replaced(CHAT_TOOL_CALL, (*CHAT_MESSAGE, "tool_calls", 0), "x"),
        id="tool-call-str",
    ),
    pytest.param(
        OPENAI_CHAT,
        replaced(
            CHAT_TOOL_CALL,
            (*CHAT_MESSAGE, "tool_calls", 0, "function", "arguments"),
            {"city": "Paris"},
        ),
        id="arguments-object",
    ),
    pytest.param(
        OPENAI_CHAT, {**CHAT_COMPLETION, "usage": {"prompt_tokens": "ten"}}, id="usage-str"
    ),
    pytest.param(OPENAI_CHAT, {**CHAT_COMPLETION, "usage": [1, 2]}, id="usage-list"),
    pytest.param(OPENAI_RESPONSES, {**RESPONSE, "output": "x"}, id="responses-output-str"),
    pytest.param(ANTHROPIC, {**ANTHROPIC_MESSAGE, "content": 5}, id="anthropic-content-int"),
    pytest.param(ANTHROPIC, {**ANTHROPIC_MESSAGE, "content": "Hello"}, id="anthropic-content-str"),
    pytest.param(GEMINI_PLAIN, {**GEMINI_RESPONSE, "candidates": "x"}, id="gemini-candidates-str"),
    pytest.param(GEMINI_PLAIN, {**GEMINI_RESPONSE, "candidates": [5]}, id="gemini-candidate-int"),
    pytest.param(
        GEMINI_PLAIN,
        replaced(GEMINI_RESPONSE, ("candidates", 0, "content"), "hi"),
        id="gemini-content-str",
    ),
    pytest.param(GEMINI_PLAIN, replaced(GEMINI_RESPONSE, GEMINI_PARTS, 5), id="gemini-parts-int"),
    pytest.param(GEMINI_ARRAY, [GEMINI_RESPONSE, 5], id="gemini-array-item-int"),
]


@pytest.mark.parametrize(("uri", "body"), BAD_TYPES)
def test_wrong_types_inside_the_json_are_none(uri: str, body: Any) -> None:
    assert found(uri, plain(body)) is None


def test_wrong_types_in_leaves_the_reader_tolerates_are_dropped_not_raised() -> None:
    """A block's text or a count of the wrong type reads as absent."""
    blocks = [{"type": "text", "text": 5}, {"type": "text", "text": "Hi."}, "junk", TOOL_USE]
    usage = {"input_tokens": "many", "output_tokens": 3.5, "cache_read_input_tokens": True}
    body = {**ANTHROPIC_MESSAGE, "content": blocks, "usage": usage, "model": ["x"]}
    result = recognised(ANTHROPIC, plain(body), request={"model": "claude-haiku-4-5"})
    assert (result.response.content, result.response.usage, result.model) == (
        "Hi.",
        Usage(),
        "claude-haiku-4-5",
    )
    assert [call.name for call in result.response.tool_calls] == ["get_weather"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(None, id="none"),
        pytest.param(b"", id="empty"),
        pytest.param(b"<html><body>502 Bad Gateway</body></html>", id="html"),
        pytest.param(b"\xff\xfe\x00{", id="not-utf8"),
        pytest.param(plain(CHAT_COMPLETION)[:-1], id="truncated-json"),
        pytest.param(b'{"choices": [', id="cut-json"),
        pytest.param(b"5", id="json-number"),
        pytest.param(b'"chat.completion"', id="json-string"),
        pytest.param(b"null", id="json-null"),
        pytest.param(b"[1, 2]", id="json-array-of-numbers"),
        pytest.param(b"[]", id="json-empty-array"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply-nested"),
        pytest.param(b'{"a": ' * 100_000, id="deeply-nested-cut"),
    ],
)
def test_a_body_that_is_not_a_json_response_is_none(body: bytes | None) -> None:
    assert found(OPENAI_CHAT, body) is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"data: {not json\n\n", id="data-not-json"),
        pytest.param(b"data: [DONE]\n\n", id="only-done"),
        pytest.param(b"event: ping\n\n", id="event-without-data"),
        pytest.param(b"data: 5\n\ndata: {}\n\n", id="data-not-an-object"),
        pytest.param(b'event: ping\ndata: {"type": "ping"}\n\n', id="only-ping"),
        pytest.param(sse([("", chat_chunk({}))])[:40], id="cut-in-the-first-event"),
        pytest.param(sse([("", {**chat_chunk({}), "choices": "x"})]), id="chunk-choices-str"),
        pytest.param(sse([("", chat_chunk({"content": 5}))]), id="delta-content-int"),
        pytest.param(sse([("", chat_chunk({"tool_calls": [{"index": "a"}]}))]), id="tool-index"),
        pytest.param(
            sse([("", chat_chunk({"tool_calls": [{"function": {"arguments": {}}}]}))]),
            id="tool-arguments-object",
        ),
        pytest.param(
            sse(
                [
                    (
                        "response.completed",
                        {"type": "response.completed", "response": {"output": "x"}},
                    )
                ]
            ),
            id="responses-output-str",
        ),
        pytest.param(
            sse([("", {"candidates": [{"content": {"parts": "x"}}]})]), id="gemini-parts-str"
        ),
    ],
)
def test_malformed_sse_is_none(body: bytes) -> None:
    assert found(OPENAI_CHAT, body, headers=SSE_HEADERS) is None


@pytest.mark.parametrize(
    "headers",
    [{}, {"content-type": 5}, {"CONTENT-TYPE": [None, "text/event-stream"]}, {1: "x"}],
)
def test_odd_headers_do_not_stop_recognition(headers: dict[Any, Any]) -> None:
    result = recognised(OPENAI_CHAT, sse(CHAT_STREAM).decode(), headers=headers)
    assert (result.streamed, result.response.content) == (True, "Hello there")


# Robustness over every fixture: any cut of a body, any field of the wrong type.

PLAIN_BODIES = [
    pytest.param(OPENAI_CHAT, "openai.chat", CHAT_TOOL_CALL, id="chat"),
    pytest.param(OPENAI_RESPONSES, "openai.responses", RESPONSE, id="responses"),
    pytest.param(ANTHROPIC, "anthropic.messages", ANTHROPIC_MESSAGE, id="anthropic"),
    pytest.param(GEMINI_PLAIN, "gemini.generate", GEMINI_RESPONSE, id="gemini"),
]
STREAMS = [
    pytest.param(OPENAI_CHAT, "openai.chat", CHAT_STREAM, '"finish_reason": "stop"', id="chat"),
    pytest.param(
        OPENAI_RESPONSES,
        "openai.responses",
        responses_stream("response.completed"),
        "event: response.completed",
        id="responses",
    ),
    pytest.param(
        ANTHROPIC, "anthropic.messages", anthropic_stream(), "event: message_stop", id="anthropic"
    ),
    pytest.param(
        GEMINI_SSE,
        "gemini.generate",
        [("", c) for c in gemini_chunks()],
        '"finishReason"',
        id="gemini",
    ),
]


@pytest.mark.parametrize(("uri", "api", "body"), PLAIN_BODIES)
def test_every_cut_of_a_plain_body_is_none(uri: str, api: str, body: dict[str, Any]) -> None:
    whole = plain(body)
    assert recognised(uri, whole).api == api
    assert [cut for cut in range(len(whole)) if found(uri, whole[:cut]) is not None] == []


@pytest.mark.parametrize(("uri", "api", "stream", "end"), STREAMS)
def test_every_cut_of_a_stream_before_its_end_is_interrupted(
    uri: str, api: str, stream: list[Event], end: str
) -> None:
    whole = sse(stream)
    assert recognised(uri, whole, headers=SSE_HEADERS).response.interrupted is False
    for cut in range(whole.index(end.encode())):
        result = found(uri, whole[:cut], headers=SSE_HEADERS)
        assert result is None or (result.api, result.response.interrupted) == (api, True), cut


WRONG_VALUES: list[Any] = [None, 5, -1.5, True, "x", "", [], [5], {}, {"type": "text"}]


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path to every value inside a JSON value (the root excluded)."""
    if not isinstance(value, (dict, list)):
        return
    for key, child in value.items() if isinstance(value, dict) else enumerate(value):
        yield (*path, key)
        yield from paths(child, (*path, key))


def assert_well_typed(result: Recognised | None, api: str) -> None:
    if result is None:
        return
    response = result.response
    assert (result.api, result.provider) == (api, api.partition(".")[0])
    assert isinstance(result.model, str)
    assert response.finish_reason is None or isinstance(response.finish_reason, str)
    assert response.finish_reason != ""
    for text in (response.content, response.reasoning):
        # A chat reply's text is kept as sent, "" too: litellm's path reads it so, and the
        # seam's replay answers with this response (test_seam_replay.py). Others say None.
        assert text is None or isinstance(text, str)
        assert text != "" or api == "openai.chat"
    for call in response.tool_calls:
        # The id the reply gave (a string, never ""), or None where it gave none: never
        # one made up.
        assert call.id is None or (isinstance(call.id, str) and call.id)
        assert isinstance(call.name, str)
        assert isinstance(call.raw_arguments, str)
        assert call.arguments is None or isinstance(call.arguments, dict)
    counts = (response.usage.prompt_tokens, response.usage.completion_tokens)
    assert all(type(n) is int for n in (*counts, response.usage.total_tokens))


@pytest.mark.parametrize(("uri", "api", "body"), PLAIN_BODIES)
def test_any_field_of_a_plain_body_replaced_by_a_wrong_type(
    uri: str, api: str, body: dict[str, Any]
) -> None:
    for path in paths(body):
        for value in WRONG_VALUES:
            assert_well_typed(found(uri, plain(replaced(body, path, value))), api)


@pytest.mark.parametrize(("uri", "api", "stream", "end"), STREAMS)
def test_any_field_of_a_stream_event_replaced_by_a_wrong_type(
    uri: str, api: str, stream: list[Event], end: str
) -> None:
    for n, (name, data) in enumerate(stream):
        for path in paths(data) if isinstance(data, dict) else ():
            for value in WRONG_VALUES:
                changed = [*stream[:n], (name, replaced(data, path, value)), *stream[n + 1 :]]
                assert_well_typed(found(uri, sse(changed), headers=SSE_HEADERS), api)


# The SSE reader itself.


def test_sse_events_join_data_lines_and_skip_comments_and_other_fields() -> None:
    text = ": keep-alive\nid: 7\nretry: 10\nevent: a\ndata: x\ndata:y\n\n\n\ndata: z"
    assert list(events(text)) == [("a", "x\ny"), ("", "z")]


@pytest.mark.parametrize(
    ("headers", "text", "expected"),
    [
        ({"Content-Type": ["text/event-stream"]}, "{}", True),
        ({"content-type": "Text/Event-Stream; charset=utf-8"}, "", True),
        ({"Content-Type": ["application/json"]}, "\n  data: {}", True),
        ({"Content-Type": ["application/json"]}, "event: x", True),
        ({"Content-Type": ["application/json"]}, '{"data: ": 1}', False),
        ({}, "", False),
    ],
)
def test_is_event_stream(headers: dict[str, Any], text: str, expected: bool) -> None:
    assert is_event_stream(headers, text) is expected


# What a request sent: its messages, read once for the report, a miss and a trajectory.

WEATHER_ARGS = {"city": "Paris"}


@pytest.mark.parametrize(
    ("api", "request_body"),
    [
        (
            "openai.chat",
            {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city": "Paris"}',
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                ],
            },
        ),
        (
            "openai.responses",
            {
                "model": "gpt-4o-mini",
                "instructions": "Be brief.",
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_text", "text": "Weather in Paris?"}],
                    },
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "get_weather",
                        "arguments": '{"city": "Paris"}',
                    },
                    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                ],
            },
        ),
        (
            "anthropic.messages",
            {
                "model": "claude-sonnet-4-5",
                "system": [{"type": "text", "text": "Be brief."}],
                "messages": [
                    {"role": "user", "content": "Weather in Paris?"},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "c1",
                                "name": "get_weather",
                                "input": WEATHER_ARGS,
                            }
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}
                        ],
                    },
                ],
            },
        ),
        (
            "gemini.generate",
            {
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                    {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "get_weather", "args": WEATHER_ARGS}}],
                    },
                    {
                        "role": "user",
                        "parts": [
                            {"functionResponse": {"name": "get_weather", "response": "sunny"}}
                        ],
                    },
                ],
            },
        ),
    ],
    ids=["chat", "responses", "anthropic", "gemini"],
)
def test_a_request_reads_as_each_apis_conversation(api: str, request_body: Any) -> None:
    asked = read_request(api, json.dumps(request_body).encode())
    assistant = "model" if api == "gemini.generate" else "assistant"
    assert conversation(asked) == [
        ("system", "Be brief."),
        ("user", "Weather in Paris?"),
        (assistant, 'get_weather({"city": "Paris"})'),
        ("tool", "sunny"),
    ]
    assert (asked.system, asked.messages) == ("Be brief.", 4 if api == "openai.chat" else 3)


def conversation(asked: Asked) -> list[tuple[str, str]]:
    """What the report and a miss show of a request: (role, text) of each turn."""
    return [(turn.role, turn.shown) for turn in asked.conversation]


def test_a_plain_text_input_and_no_instructions() -> None:
    body = json.dumps({"model": "gpt-4o-mini", "input": "Hello?"})
    assert conversation(read_request("openai.responses", body)) == [("user", "Hello?")]


# Each message sent is one turn, text or not: counted, and shown as NO_TEXT (the report and a
# miss used to leave such a message out, and so counted one fewer than the trajectory).
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
WITHOUT_TEXT = [
    (
        "openai.chat",
        {"messages": [{"role": "user", "content": [IMAGE]}, {"role": "assistant", "content": ""}]},
        [("user", NO_TEXT), ("assistant", NO_TEXT)],
    ),
    (
        "openai.responses",
        {
            "instructions": "Look.",
            "input": [
                {"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"role": "user", "content": "And now?"},
            ],
        },
        [("system", "Look."), ("user", NO_TEXT), ("reasoning", NO_TEXT), ("user", "And now?")],
    ),
    (
        "anthropic.messages",
        {
            "messages": [
                {"role": "user", "content": [{"type": "image", "source": {}}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
            ]
        },
        [("user", NO_TEXT), ("assistant", NO_TEXT)],
    ),
    (
        "gemini.generate",
        {
            "contents": [
                {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png"}}]},
                {"role": "model", "parts": [{"text": "thinking...", "thought": True}]},
            ]
        },
        [("user", NO_TEXT), ("model", NO_TEXT)],
    ),
]


@pytest.mark.parametrize(
    ("api", "body", "shown"), WITHOUT_TEXT, ids=["chat", "responses", "anthropic", "gemini"]
)
def test_a_message_without_text_is_counted_and_shown(
    api: str, body: dict[str, Any], shown: list[tuple[str, str]]
) -> None:
    asked = read_request(api, json.dumps(body))
    assert conversation(asked) == shown
    assert asked.messages == len(shown) - bool(asked.instructions)


# The system prompt, read one way per format; the report shows the same text.
SYSTEMS = [
    (
        "openai.chat",
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
                {"role": "user", "content": "Hi"},
            ]
        },
    ),
    (
        "openai.responses",
        {
            "instructions": "Be brief.",
            "input": [
                {"role": "developer", "content": "Use tools."},
                {"type": "message", "role": "user", "content": "Hi"},
            ],
        },
    ),
    (
        "anthropic.messages",
        {
            "system": [{"type": "text", "text": "Be brief."},
                       {"type": "text", "text": "Use tools."}],
            "messages": [{"role": "user", "content": "Hi"}],
        },
    ),
    (
        "gemini.generate",
        {
            "systemInstruction": {
                "parts": [{"text": "Be brief."}, {"text": "a thought", "thought": True},
                          {"text": "Use tools."}]
            },
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        },
    ),
]  # fmt: skip


@pytest.mark.parametrize(("api", "body"), SYSTEMS, ids=["chat", "responses", "anthropic", "gemini"])
def test_the_system_prompt_is_read_one_way_per_format(api: str, body: dict[str, Any]) -> None:
    asked = read_request(api, json.dumps(body))
    assert asked.system == "Be brief.\nUse tools."
    said = conversation(asked)
    system = [text for role, text in said if role in ("system", "developer")]
    assert "\n".join(system) == asked.system
    assert said[-1] == ("user", "Hi")


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"",
        b"\xff\xfe",
        b"not json",
        b"[1, 2]",
        b'{"messages": "no list"}',
        b'{"messages": [1]}',
    ],
)
@pytest.mark.parametrize(
    "api", ["openai.chat", "openai.responses", "anthropic.messages", "gemini.generate", "x"]
)
def test_an_unreadable_request_asks_nothing_and_never_raises(api: str, body: bytes | None) -> None:
    assert read_request(api, body) == Asked()
