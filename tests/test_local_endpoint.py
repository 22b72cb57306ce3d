"""The embedded model's endpoint for application code, in front of a scripted server.

The endpoint (``pytest_harness._local.endpoint``) stands where the llama.cpp server's own
API would: the OpenAI SDK calls it over real HTTP, and a ``LoopbackServer`` plays the
llama.cpp server behind it, recording what reached it. What is checked is what an
application written for OpenAI depends on: its system message reaches the model, its
``json_schema`` is enforced by the server's grammar form, its tools come back as tool calls
(streamed or not), and what the model cannot do is a 400 that says so, sent once.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness._local import endpoint, grammar, route
from pytest_harness._local.install import MODEL_NAME
from pytest_harness.errors import UnsupportedRequest
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.harness(cassette=False)

SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["positive", "negative"]}},
    "required": ["label"],
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Today's weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def upstream() -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        yield server


@pytest.fixture
def client(upstream: LoopbackServer) -> Iterator[openai.OpenAI]:
    server = endpoint.Endpoint(0, upstream.url.removesuffix("/v1"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with openai.OpenAI(base_url=url, api_key="local", max_retries=0) as sdk:
            yield sdk
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def ask(client: openai.OpenAI, **kwargs: Any) -> Any:
    messages = kwargs.pop("messages", [{"role": "user", "content": "How is it in Paris?"}])
    return client.chat.completions.create(model="gpt-4o-mini", messages=messages, **kwargs)


def test_the_system_message_reaches_the_model_folded_as_gemma_does(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    messages = [
        {"role": "system", "content": "Reply only with the word BANANA."},
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
    ]
    upstream.queue(Reply(content="BANANA"))
    reply = ask(client, messages=messages)
    assert reply.choices[0].message.content == "BANANA"
    (sent,) = upstream.requests
    assert sent["messages"] == [
        {"role": "user", "content": "Reply only with the word BANANA.\n\nHello"}
    ]


def test_json_schema_is_sent_in_the_form_the_server_enforces_by_grammar(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content='{"label": "positive"}'))
    form = {"type": "json_schema", "json_schema": {"name": "label", "schema": SCHEMA}}
    reply = ask(client, response_format=form)
    assert json.loads(reply.choices[0].message.content or "") == {"label": "positive"}
    bounded = grammar.bound(SCHEMA)  # the schema as the grammar needs it: bounded
    assert upstream.requests[0]["response_format"] == {
        "type": "json_object",
        "schema": bounded.schema,
    }
    assert upstream.requests[0]["max_tokens"] == bounded.tokens


def test_the_defaults_repeat_a_recording_and_the_applications_settings_win(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    ask(client, max_completion_tokens=12)
    ask(client, temperature=0.7, seed=3, parallel_tool_calls=False, store=True)
    first, second = upstream.requests
    assert (first["temperature"], first["seed"], first["max_tokens"]) == (0, 42, 12)
    assert "max_completion_tokens" not in first
    assert (second["temperature"], second["seed"]) == (0.7, 3)
    assert "parallel_tool_calls" not in second
    assert "store" not in second


def test_tools_come_back_as_openai_tool_calls(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content='{"tool": "weather", "arguments": {"city": "Paris"}}'))
    reply = ask(client, tools=[WEATHER])
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "weather",
        {"city": "Paris"},
    )
    sent = upstream.requests[0]
    assert "tools" not in sent
    assert "tool_choice" not in sent
    assert sent["response_format"]["type"] == "json_object"
    assert "weather" in json.dumps(sent["response_format"]["schema"])
    assert "weather" in sent["messages"][0]["content"]  # the tools, as a prompt


def test_a_conversation_with_tool_results_goes_on_and_answers(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content='{"tool": "weather", "arguments": {"city": "Paris"}}'))
    first = ask(client, tools=[WEATHER])
    call = (first.choices[0].message.tool_calls or [])[0]
    messages: list[Any] = [
        {"role": "user", "content": "How is it in Paris?"},
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    upstream.queue(Reply(content='{"answer": "Sunny and 21 C."}'))
    second = ask(client, messages=messages, tools=[WEATHER])
    assert second.choices[0].message.content == "Sunny and 21 C."
    assert second.choices[0].message.tool_calls is None
    assert "sunny, 21 C" in json.dumps(upstream.requests[1]["messages"])
    assert call.id == ask_id_again(client, upstream)  # the same conversation, the same id


def ask_id_again(client: openai.OpenAI, upstream: LoopbackServer) -> str:
    upstream.queue(Reply(content='{"tool": "weather", "arguments": {"city": "Paris"}}'))
    return (ask(client, tools=[WEATHER]).choices[0].message.tool_calls or [])[0].id


def test_a_streamed_tool_call_arrives_as_chunks(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content='{"tool": "weather", "arguments": {"city": "Oslo"}}'))
    stream = ask(client, tools=[WEATHER], stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert upstream.requests[0].get("stream") is None  # asked whole, sent as a stream
    calls = [
        c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []
    ]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("weather", {"city": "Oslo"})
    ]
    finishes = [choice.finish_reason for chunk in chunks for choice in chunk.choices]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0


def test_a_plain_stream_passes_through_piece_by_piece(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content="Sunny all day"))
    pieces = [c.choices[0].delta.content for c in ask(client, stream=True) if c.choices]
    assert "".join(p or "" for p in pieces) == "Sunny all day"
    assert len([p for p in pieces if p]) > 1


def test_a_request_the_server_refuses_is_a_400_with_its_message_sent_once(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(status=500, error="Input should be 'text' or 'json_object'"))
    retrying = openai.OpenAI(base_url=str(client.base_url), api_key="local")
    with retrying, pytest.raises(openai.BadRequestError) as caught:
        ask(retrying)  # an SDK retries a 500, never a 400
    assert "Input should be 'text' or 'json_object'" in str(caught.value)
    assert "embedded model's server refused" in str(caught.value)
    assert len(upstream.requests) == 1


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "reads text only: messages[0] has a 'image_url' part",
        ),
        ({"n": 2}, "returns one choice: n=2"),
        ({"response_format": {"type": "grammar"}}, "response_format type 'grammar'"),
        ({"tools": [{"type": "web_search"}]}, "tools[0] is a 'web_search' tool"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "names the tool 'x'",
        ),
    ],
)
def test_what_the_model_cannot_do_is_a_400_naming_it(
    client: openai.OpenAI, upstream: LoopbackServer, kwargs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        ask(client, **kwargs)
    assert expected in str(caught.value)
    assert upstream.requests == []


def test_the_responses_api_is_a_400_pointing_at_chat_completions(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o-mini", input="Hello")
    assert "Chat Completions only" in str(caught.value)
    assert "set_default_openai_api('chat_completions')" in str(caught.value)


def test_a_server_that_is_gone_is_a_502_saying_so() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    server = endpoint.Endpoint(0, f"http://127.0.0.1:{dead}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        sdk = openai.OpenAI(base_url=url, api_key="local", max_retries=0)
        with sdk, pytest.raises(openai.APIStatusError) as caught:
            ask(sdk)
    finally:
        server.shutdown()
        server.server_close()
    assert caught.value.status_code == 502
    assert f"llama.cpp at 127.0.0.1:{dead}) did not answer" in str(caught.value)
    assert "it is not running" in str(caught.value)


def test_a_server_that_is_busy_past_the_timeout_is_a_504_saying_so(
    client: openai.OpenAI, upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoint, "_UPSTREAM_TIMEOUT", 0.2)
    upstream.queue(Reply(content="late", delay=1.0))
    with pytest.raises(openai.APIStatusError) as caught:
        ask(client)
    assert caught.value.status_code == 504
    assert "is alive but gave no answer within 0.2 s" in str(caught.value)
    assert "died" not in str(caught.value)


def test_a_tool_conversation_goes_on_without_tools_and_with_null_content(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    """What agents send: calls with null (or no) content, results, and no tools offered."""
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How is it in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "tool_calls": [{**call, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "21 C"}]},
    ]
    upstream.queue(Reply(content="Sunny, 21 C."))
    reply = ask(client, messages=messages)
    assert reply.choices[0].message.content == "Sunny, 21 C."
    (sent,) = upstream.requests
    assert "tools" not in sent
    assert all(isinstance(m["content"], str) for m in sent["messages"])
    assert {m["role"] for m in sent["messages"]} == {"user", "assistant"}
    assert [m["role"] for m in sent["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert sent["messages"][0]["content"] == "Be brief.\n\nHow is it in Paris?"
    assert sent["messages"][-1]["content"] == (
        "The user asked: How is it in Paris?\n"
        "The tool weather returned: 21 C\n"
        "Write the reply to the user."
    )


def test_after_every_tool_is_called_only_the_answer_is_offered(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    messages: list[Any] = [
        {"role": "user", "content": "How is it in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    upstream.queue(Reply(content='{"answer": "Sunny."}'))
    reply = ask(client, messages=messages, tools=[WEATHER])
    assert (reply.choices[0].message.content, reply.choices[0].finish_reason) == ("Sunny.", "stop")
    assert upstream.requests[0]["response_format"]["schema"]["required"] == ["answer"]


def test_a_reply_names_the_embedded_model_and_has_a_token_limit(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    upstream.queue(Reply(content="hi"), Reply(content="hi"))
    assert ask(client).model == MODEL_NAME  # not the gpt-4o-mini the application asked for
    chunks = list(ask(client, stream=True))
    assert {chunk.model for chunk in chunks} == {MODEL_NAME}
    first, _ = upstream.requests
    assert (first["model"], first["max_tokens"]) == (MODEL_NAME, route.DEFAULT_MAX_TOKENS)


def test_the_endpoint_runs_as_its_own_process(upstream: LoopbackServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "pytest_harness._local.endpoint"]
    process = subprocess.Popen([*command, upstream.url.removesuffix("/v1"), str(port)])
    try:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="l") as sdk:
            models = _when_up(lambda: sdk.models.list())
            assert [m.id for m in models] == ["loopback"]
            upstream.queue(Reply(content="hi"))
            assert ask(sdk).choices[0].message.content == "hi"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _when_up(call: Any) -> Any:
    for _ in range(200):
        try:
            return call()
        except openai.APIConnectionError:
            time.sleep(0.05)
    return call()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    ["messages", "tools", "tool_choice", "response_format", "n", "max_completion_tokens"]
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "x"]), "content": JSON},
    optional={"tool_calls": JSON, "tool_call_id": JSON, "function_call": JSON, "name": JSON},
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        JSON,
        st.dictionaries(FIELDS, JSON, max_size=4),
        st.fixed_dictionaries(
            {"messages": st.lists(MESSAGE, max_size=3)},
            optional={"tools": JSON, "tool_choice": JSON, "response_format": JSON},
        ),
    )
)
def test_any_request_is_adapted_or_refused_by_name(body: Any) -> None:
    try:
        request, _ = endpoint.adapt(body)
    except UnsupportedRequest as refused:
        message = str(refused)
    else:
        message = ""
        assert all(m.get("role") not in ("system", "developer") for m in request["messages"])
        json.dumps(request)
    assert message or request


def test_a_body_that_is_not_json_is_a_400_saying_so(
    client: openai.OpenAI, upstream: LoopbackServer
) -> None:
    url = urllib.parse.urlsplit(str(client.base_url))
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        connection.request("POST", "/v1/chat/completions", body=b"{not json")
        response = connection.getresponse()
        body = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 400
    assert body["error"]["message"] == "the request body is not JSON"
    assert upstream.requests == []
