"""``LoopbackServer`` in each wire format, read by the official SDKs themselves.

One scripted ``Reply`` answers OpenAI Responses (``responses.create``, plain and streamed,
and the SDK's stricter ``responses.stream`` helper), Anthropic Messages (``messages.create``
and ``messages.stream``) and Gemini (``generate_content`` and ``generate_content_stream``):
text, reasoning, tool calls with their arguments parsed, usage, and an error status raising
the SDK's own error class. The harness's reader (``_wire.recognise``) reads every format back
as the reply that was scripted.
"""

from __future__ import annotations

import http.client
import json
import urllib.request
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from pytest_harness._wire import recognise
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)

KEY = "sk-loopback-0123456789"
WEATHER = ToolCallSpec(name="get_weather", arguments={"city": "Paris"})
TIME = ToolCallSpec(name="get_time", arguments={"city": "Paris", "utc": True})
TWO_CALLS = Reply(content=None, tool_calls=[WEATHER, TIME])
ANSWER = Reply(content="Sunny in Paris, at noon.", reasoning="They asked about Paris.")


def openai_client(server: LoopbackServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0)


def anthropic_client(server: LoopbackServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.root, api_key=KEY, max_retries=0)


def gemini_client(server: LoopbackServer) -> genai.Client:
    return genai.Client(api_key=KEY, http_options={"base_url": server.root})


# OpenAI Responses.

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def test_responses_text_reasoning_and_usage(server: LoopbackServer) -> None:
    server.queue(ANSWER)
    with openai_client(server) as client:
        response = client.responses.create(model="gpt-4.1", input="Weather in Paris?")
    assert response.output_text == "Sunny in Paris, at noon."
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].summary[0].text == "They asked about Paris."  # type: ignore[union-attr]
    assert (response.status, response.model) == ("completed", "gpt-4.1")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (3, 9)
    assert response.usage.total_tokens == 12
    assert server.paths == ["/v1/responses"]


def test_responses_tool_calls(server: LoopbackServer) -> None:
    server.queue(TWO_CALLS)
    with openai_client(server) as client:
        response = client.responses.create(model="gpt-4.1", input="Paris?", tools=[TOOL])  # type: ignore[list-item]
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris", "utc": True}),
    ]
    assert [c.call_id for c in calls] == ["call_1_0", "call_1_1"]


def test_responses_streamed_events(server: LoopbackServer) -> None:
    server.queue(Reply(content="Sunny in Paris.", tool_calls=[WEATHER]))
    with openai_client(server) as client:
        events = list(client.responses.create(model="gpt-4.1", input="Paris?", stream=True))
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    arguments = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    assert (text, json.loads(arguments)) == ("Sunny in Paris.", {"city": "Paris"})
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == "Sunny in Paris."
    assert final.usage is not None
    assert final.usage.output_tokens == 3


def test_responses_stream_helper_accumulates_the_reply(server: LoopbackServer) -> None:
    """The SDK's ``responses.stream`` checks each event against the snapshot it builds."""
    server.queue(Reply(content="Noon.", reasoning="Think.", tool_calls=[TIME]))
    with (
        openai_client(server) as client,
        client.responses.stream(model="gpt-4.1", input="Time?") as stream,
    ):
        final = stream.get_final_response()
    assert final.output_text == "Noon."
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert json.loads(call.arguments) == {"city": "Paris", "utc": True}


def test_responses_error_status_raises_the_sdks_error(server: LoopbackServer) -> None:
    server.queue(Reply(status=400, error="bad tool schema"))
    with openai_client(server) as client, pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="gpt-4.1", input="Paris?")
    assert raised.value.status_code == 400
    assert "bad tool schema" in raised.value.message


# Anthropic Messages.

ANTHROPIC_TOOL: Any = {"name": "get_weather", "input_schema": {"type": "object"}}
ASK: Any = [{"role": "user", "content": "Weather in Paris?"}]


def test_anthropic_text_thinking_and_usage(server: LoopbackServer) -> None:
    server.queue(ANSWER)
    with anthropic_client(server) as client:
        message = client.messages.create(model="claude-x", max_tokens=100, messages=ASK)
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "They asked about Paris."  # type: ignore[union-attr]
    assert message.content[1].text == "Sunny in Paris, at noon."  # type: ignore[union-attr]
    assert (message.stop_reason, message.model) == ("end_turn", "claude-x")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (3, 9)
    assert server.paths == ["/v1/messages"]


def test_anthropic_tool_use(server: LoopbackServer) -> None:
    server.queue(TWO_CALLS)
    with anthropic_client(server) as client:
        message = client.messages.create(
            model="claude-x", max_tokens=100, messages=ASK, tools=[ANTHROPIC_TOOL]
        )
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(use.id, use.name, use.input) for use in uses] == [
        ("toolu_loopback_1_0", "get_weather", {"city": "Paris"}),
        ("toolu_loopback_1_1", "get_time", {"city": "Paris", "utc": True}),
    ]
    assert message.stop_reason == "tool_use"


def test_anthropic_stream(server: LoopbackServer) -> None:
    server.queue(Reply(content="Sunny in Paris.", reasoning="Hm.", tool_calls=[TIME]))
    with (
        anthropic_client(server) as client,
        client.messages.stream(model="claude-x", max_tokens=100, messages=ASK) as stream,
    ):
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "Sunny in Paris."
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[2].input == {"city": "Paris", "utc": True}  # type: ignore[union-attr]
    assert (message.stop_reason, message.usage.output_tokens) == ("tool_use", 4)


def test_anthropic_error_status_raises_the_sdks_error(server: LoopbackServer) -> None:
    server.queue(Reply(status=404, error="no such model"))
    with anthropic_client(server) as client, pytest.raises(anthropic.NotFoundError) as raised:
        client.messages.create(model="claude-x", max_tokens=100, messages=ASK)
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "no such model"},
    }


# Gemini generateContent.

GEMINI_TOOL = genai_types.Tool(
    function_declarations=[genai_types.FunctionDeclaration(name="get_weather")]
)


def test_gemini_text_thoughts_and_usage(server: LoopbackServer) -> None:
    server.queue(ANSWER)
    with gemini_client(server) as client:
        response = client.models.generate_content(
            model="gemini-2.5-flash", contents="Weather in Paris?"
        )
    assert response.text == "Sunny in Paris, at noon."
    assert response.candidates is not None
    assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
    parts = response.candidates[0].content.parts  # type: ignore[union-attr]
    assert [(p.text, p.thought) for p in parts or []] == [
        ("They asked about Paris.", True),
        ("Sunny in Paris, at noon.", None),
    ]
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (3, 5)
    assert response.model_version == "gemini-2.5-flash"
    assert server.paths == ["/v1/models/gemini-2.5-flash:generateContent"]


def test_gemini_function_calls(server: LoopbackServer) -> None:
    server.queue(TWO_CALLS)
    config = genai_types.GenerateContentConfig(tools=[GEMINI_TOOL])
    with gemini_client(server) as client:
        response = client.models.generate_content(
            model="gemini-2.5-flash", contents="Paris?", config=config
        )
    assert [(call.name, call.args, call.id) for call in response.function_calls or []] == [
        ("get_weather", {"city": "Paris"}, None),
        ("get_time", {"city": "Paris", "utc": True}, None),
    ]


def test_gemini_stream(server: LoopbackServer) -> None:
    server.queue(Reply(content="Sunny in Paris.", tool_calls=[WEATHER]))
    with gemini_client(server) as client:
        chunks = list(
            client.models.generate_content_stream(model="gemini-2.5-flash", contents="Paris?")
        )
    assert "".join(chunk.text or "" for chunk in chunks) == "Sunny in Paris."
    calls = [call for chunk in chunks for call in chunk.function_calls or []]
    assert [(call.name, call.args) for call in calls] == [("get_weather", {"city": "Paris"})]
    assert chunks[-1].usage_metadata is not None
    assert chunks[-1].usage_metadata.candidates_token_count == 3
    assert server.paths == ["/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"]


def test_gemini_error_status_raises_the_sdks_error(server: LoopbackServer) -> None:
    server.queue(Reply(status=400, error="bad contents"))
    with gemini_client(server) as client, pytest.raises(genai_errors.ClientError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="Paris?")
    assert (raised.value.code, raised.value.status, raised.value.message) == (
        400,
        "INVALID_ARGUMENT",
        "bad contents",
    )


# Every format, as the harness reads it back.

USAGE = {"include_usage": True}
REQUESTS = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": [], "stream_options": USAGE}),
    "responses": ("/v1/responses", {"model": "m", "input": "?"}),
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": []}),
    "gemini": ("/v1beta/models/m:generateContent", {"contents": []}),
}


def fetch(server: LoopbackServer, path: str, body: dict[str, Any]) -> tuple[str, bytes, str]:
    """POST ``body`` to ``path``; the URL, the reply's bytes, its content type."""
    request = urllib.request.Request(server.root + path, data=json.dumps(body).encode())
    with urllib.request.urlopen(request) as answer:
        return server.root + path, answer.read(), answer.headers["Content-Type"]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_every_format_reads_back_as_the_scripted_reply(
    server: LoopbackServer, api: str, streamed: bool
) -> None:
    path, body = REQUESTS[api]
    if streamed:
        body = {**body, "stream": True}
        path = path.replace(":generateContent", ":streamGenerateContent?alt=sse")
    server.queue(Reply(content="Sunny, at noon.", reasoning="Hm, Paris.", tool_calls=[TIME]))
    uri, sent, content_type = fetch(server, path, body)
    found = recognise(uri, json.dumps(body), 200, {"content-type": content_type}, sent)
    assert found is not None
    assert (found.streamed, found.model) == (streamed, "m")
    response = found.response
    assert (response.content, response.reasoning) == ("Sunny, at noon.", "Hm, Paris.")
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_time", {"city": "Paris", "utc": True})
    ]
    assert not response.interrupted
    assert response.usage.completion_tokens == 5


@pytest.mark.parametrize("api", ["responses", "anthropic", "gemini"])
def test_a_cut_stream_reads_as_interrupted(server: LoopbackServer, api: str) -> None:
    path, body = REQUESTS[api]
    path = path.replace(":generateContent", ":streamGenerateContent?alt=sse")
    server.queue(Reply(content="Sunny in Paris today.", cut_after=3))
    asked = json.dumps({**body, "stream": True}).encode()
    request = urllib.request.Request(server.root + path, data=asked)
    with (
        urllib.request.urlopen(request) as answer,
        pytest.raises(http.client.IncompleteRead) as cut,
    ):
        answer.read()
    sent = cut.value.partial
    found = recognise(server.root + path, None, 200, {"content-type": "text/event-stream"}, sent)
    assert found is not None
    assert found.response.interrupted


def test_same_requests_get_the_same_bytes() -> None:
    """Fixed ids and timestamps: a recording made twice is the same recording."""
    bodies = []
    for _ in range(2):
        with LoopbackServer(lambda body: TWO_CALLS) as server:
            bodies.append([fetch(server, *REQUESTS[api])[1] for api in sorted(REQUESTS)])
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(
    ("api", "finish"),
    [
        ("chat", "length"),
        ("responses", "max_output_tokens"),
        ("anthropic", "max_tokens"),
        ("gemini", "MAX_TOKENS"),
    ],
)
def test_a_cut_short_reply_says_so_in_each_format(
    server: LoopbackServer, api: str, finish: str
) -> None:
    """``finish_reason="length"`` becomes each format's own word for a reply cut short."""
    server.queue(Reply(content="Sunny", finish_reason="length"))
    path, body = REQUESTS[api]
    uri, sent, content_type = fetch(server, path, body)
    found = recognise(uri, json.dumps(body), 200, {"content-type": content_type}, sent)
    assert found is not None
    assert (found.response.content, found.response.finish_reason) == ("Sunny", finish)
