"""AWS Bedrock, the fifth wire format: event-stream frames, the reader, the loopback server,
and boto3's four runtime operations recorded and replayed with no credential on disk."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness._cassettes import bodies, steady
from pytest_harness._wire import (
    eventstream,
    read_request,
    recognise,
    recognise_parsed,
    request_api,
)
from pytest_harness._wire.eventstream import Frame, Header
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytest_plugins = ["pytester"]

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
STREAM = {"Content-Type": "application/vnd.amazon.eventstream"}
ANTHROPIC = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50}


def event(kind: str, payload: bytes, message: str = "event") -> Frame:
    headers = (
        Header(":event-type", 7, kind),
        Header(":content-type", 7, "application/json"),
        Header(":message-type", 7, message),
    )
    return Frame(headers, payload)


def url(operation: str, model: str = MODEL) -> str:
    return f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/{operation}"


# --- event-stream framing ------------------------------------------------------------------

headers = st.one_of(
    st.booleans().map(lambda b: (0 if b else 1, b)),
    st.integers(-(2**7), 2**7 - 1).map(lambda n: (2, n)),
    st.integers(-(2**15), 2**15 - 1).map(lambda n: (3, n)),
    st.integers(-(2**31), 2**31 - 1).map(lambda n: (4, n)),
    st.integers(-(2**63), 2**63 - 1).flatmap(lambda n: st.sampled_from([(5, n), (8, n)])),
    st.binary(max_size=40).map(lambda b: (6, b)),
    st.text(max_size=40).map(lambda s: (7, s)),
    st.binary(min_size=16, max_size=16).map(lambda b: (9, b)),
)
frames = st.lists(
    st.builds(
        Frame,
        st.lists(
            st.tuples(st.text(min_size=1, max_size=20), headers).map(
                lambda t: Header(t[0], t[1][0], t[1][1])
            ),
            max_size=4,
        ).map(tuple),
        st.binary(max_size=100),
    ),
    max_size=4,
)


@given(frames)
def test_decode_is_encodes_inverse(found: list[Frame]) -> None:
    assert eventstream.decode(eventstream.encode(found)) == found


@given(st.binary(max_size=300))
def test_decode_of_any_bytes_is_frames_or_none(data: bytes) -> None:
    found = eventstream.decode(data)
    assert found is None or eventstream.encode(found) == data


@given(frames, st.data())
def test_a_damaged_or_cut_stream_is_none(found: list[Frame], data: st.DataObject) -> None:
    raw = eventstream.encode(found)
    if not raw:
        return
    at = data.draw(st.integers(0, len(raw) - 1))
    flipped = raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1 :]
    assert eventstream.decode(flipped) is None
    assert eventstream.decode(raw[:at]) in (None, eventstream.decode(raw[:at]))
    assert eventstream.decode(raw[: len(raw) - 1]) is None


def test_botocore_reads_what_encode_writes() -> None:
    from botocore.eventstream import EventStreamBuffer

    written = [
        event("chunk", b'{"a":1}'),
        Frame((Header("n", 4, -5), Header("t", 0, True), Header("u", 9, b"u" * 16)), b"x"),
    ]
    buffer = EventStreamBuffer()
    buffer.add_data(eventstream.encode(written))
    read = [(m.headers, m.payload) for m in buffer]
    assert read[0] == ({h.name: h.value for h in written[0].headers}, b'{"a":1}')
    assert read[1] == ({"n": -5, "t": True, "u": b"u" * 16}, b"x")


def test_an_unwritable_header_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no value of type 7"):
        eventstream.encode([Frame((Header("x", 7, 3),), b"")])
    with pytest.raises(ValueError, match="at most 255 bytes"):
        eventstream.encode([Frame((Header("x" * 256, 7, ""),), b"")])


# --- the reader ----------------------------------------------------------------------------

CONVERSE = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "think", "signature": "s"}}},
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": "tu1", "name": "weather", "input": {"city": "Oslo"}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {
        "inputTokens": 7,  # the prompt's tokens neither read from nor written to the cache
        "outputTokens": 5,
        "totalTokens": 15,
        "cacheReadInputTokens": 2,
        "cacheWriteInputTokens": 1,
    },
    "metrics": {"latencyMs": 321},
}


def test_a_converse_reply() -> None:
    found = recognise(url("converse"), b"{}", 200, {}, json.dumps(CONVERSE))
    assert found is not None
    assert (found.api, found.provider, found.model) == ("bedrock.converse", "bedrock", MODEL)
    reply = found.response
    assert (reply.content, reply.reasoning, reply.finish_reason) == (
        "Let me look.",
        "think",
        "tool_use",
    )
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("tu1", "weather", {"city": "Oslo"})
    ]
    usage = reply.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 5, 15)
    assert (usage.cached_tokens, usage.cache_write_tokens) == (2, 1)
    assert not reply.interrupted
    assert reply.refusal is None


@pytest.mark.parametrize("reason", ["guardrail_intervened", "content_filtered"])
def test_a_blocked_reply_is_a_refusal(reason: str) -> None:
    found = recognise(
        url("converse"), None, 200, {}, json.dumps({**CONVERSE, "stopReason": reason})
    )
    assert found is not None
    assert found.response.refusal == f"stopReason: {reason}"


def test_the_model_is_the_urls_decoded_or_an_arns_resource() -> None:
    body = json.dumps(CONVERSE)
    quoted = url("converse", "us.anthropic.claude-3-5-haiku-20241022-v1%3A0")
    arn = url(
        "converse",
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.amazon.nova-lite-v1%3A0",
    )
    assert [recognise(u, None, 200, {}, body).model for u in (quoted, arn)] == [  # type: ignore[union-attr]
        "us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "us.amazon.nova-lite-v1:0",
    ]


def test_litellm_prices_a_bedrock_model_id() -> None:
    import litellm

    prompt, completion = litellm.cost_per_token(
        model=MODEL, prompt_tokens=1000, completion_tokens=1000, custom_llm_provider="bedrock"
    )
    assert prompt > 0
    assert completion > 0


STREAMED = [
    ("messageStart", {"role": "assistant", "p": "abc"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Let "}}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "me look."}}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
    (
        "contentBlockStart",
        {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tu1", "name": "weather"}}},
    ),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"city"'}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": ':"Oslo"}'}}}),
    ("contentBlockStop", {"contentBlockIndex": 2}),
    ("messageStop", {"stopReason": "tool_use"}),
    ("metadata", {"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}),
]


def stream_bytes(events: list[tuple[str, Any]]) -> bytes:
    return eventstream.encode([event(kind, json.dumps(data).encode()) for kind, data in events])


def test_a_converse_stream_adds_up_to_the_reply() -> None:
    found = recognise(url("converse-stream"), None, 200, STREAM, stream_bytes(STREAMED))
    assert found is not None
    assert found.streamed
    reply = found.response
    assert (reply.content, reply.reasoning, reply.finish_reason) == (
        "Let me look.",
        "hm",
        "tool_use",
    )
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("tu1", "weather", {"city": "Oslo"})
    ]
    assert reply.usage.total_tokens == 15
    assert not reply.interrupted
    cut = recognise(url("converse-stream"), None, 200, STREAM, stream_bytes(STREAMED[:4]))
    assert cut is not None
    assert cut.response.interrupted


def test_an_exception_frame_or_a_damaged_stream_is_no_reply() -> None:
    raw = stream_bytes(STREAMED)
    failed = eventstream.encode([event("throttlingException", b'{"message":"slow"}', "exception")])
    assert recognise(url("converse-stream"), None, 200, STREAM, raw + failed) is None
    assert recognise(url("converse-stream"), None, 200, STREAM, raw[:-3]) is None
    assert recognise(url("converse-stream"), None, 200, STREAM, "not frames") is None


def chunk(data: dict[str, Any]) -> bytes:
    inner = base64.b64encode(json.dumps(data).encode()).decode()
    return json.dumps({"bytes": inner, "p": "abcdef"}).encode()


def test_an_invoke_stream_is_read_as_the_anthropic_events_it_carries() -> None:
    events = [
        {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 4}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    raw = eventstream.encode([event("chunk", chunk(e)) for e in events])
    found = recognise(url("invoke-with-response-stream"), None, 200, STREAM, raw)
    assert found is not None
    assert (found.api, found.provider, found.model) == ("anthropic.messages", "bedrock", MODEL)
    assert (found.response.content, found.response.usage.total_tokens) == ("Hi", 5)


def test_a_converse_request() -> None:
    asked = read_request(
        "bedrock.converse",
        json.dumps(
            {
                "system": [{"text": "Be brief."}],
                "messages": [
                    {"role": "user", "content": [{"text": "Weather?"}]},
                    {"role": "assistant", "content": [{"toolUse": CONVERSE_CALL}]},
                    {
                        "role": "user",
                        "content": [
                            {
                                "toolResult": {
                                    "toolUseId": "tu1",
                                    "content": [{"json": {"sky": "clear"}}],
                                    "status": "error",
                                }
                            }
                        ],
                    },
                ],
                "toolConfig": {"tools": [{"toolSpec": {"name": "weather"}}]},
                "outputConfig": {
                    "textFormat": {
                        "type": "json_schema",
                        "structure": {"jsonSchema": {"schema": '{"type": "object"}'}},
                    }
                },
            }
        ),
    )
    assert asked.system == "Be brief."
    assert [(t.role, t.text) for t in asked.turns] == [
        ("user", "Weather?"),
        ("assistant", 'weather({"city": "Oslo"})'),
        ("tool", '{"sky": "clear"}'),
    ]
    assert asked.tools == ("weather",)
    assert [(r.call_id, r.name, r.text, r.error) for r in asked.results] == [
        ("tu1", "weather", '{"sky": "clear"}', True)
    ]
    assert (asked.structured, asked.schema) == (True, {"type": "object"})


CONVERSE_CALL = {"toolUseId": "tu1", "name": "weather", "input": {"city": "Oslo"}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "output",
                    "message",
                    "content",
                    "text",
                    "toolUse",
                    "input",
                    "stopReason",
                    "usage",
                    "toolResult",
                    "messages",
                    "system",
                    "reasoningContent",
                    "delta",
                    "start",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=200)
@given(json_values, st.sampled_from(["converse", "converse-stream", "invoke"]))
def test_arbitrary_json_never_raises(value: Any, operation: str) -> None:
    text = json.dumps(value)
    recognise(url(operation), text, 200, {}, text)
    read_request("bedrock.converse", text)
    names = ["messageStart", "contentBlockDelta", "contentBlockStart", "messageStop", "metadata"]
    events = [(name, value) for name in names] if isinstance(value, dict) else []
    recognise_parsed(url(operation), text, 200, {}, events=events)
    recognise(url(operation), text, 200, STREAM, stream_bytes(events))


# --- stored readably, byte-exact -----------------------------------------------------------


def test_a_stream_is_stored_as_its_frames_byte_exact() -> None:
    raw = stream_bytes(STREAMED)
    stored = bodies.stored_body(raw, frames=True)
    assert isinstance(stored, dict)
    assert stored["form"] == "spaced"
    assert stored["eventstream"][0] == {
        "headers": {
            ":event-type": "messageStart",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        "json": {"role": "assistant", "p": "abc"},
    }
    assert bodies.body_bytes(stored) == raw
    assert bodies.problem(stored) is None


def test_an_invoke_chunk_is_stored_with_its_event_decoded() -> None:
    raw = eventstream.encode([event("chunk", chunk({"type": "message_stop"}))])
    stored = bodies.stored_body(raw, frames=True)
    assert isinstance(stored, dict)
    assert stored["eventstream"][0]["json"] == {"bytes": {"type": "message_stop"}, "p": "abcdef"}
    assert bodies.body_bytes(stored) == raw


def test_frames_that_would_not_write_back_stay_base64() -> None:
    typed = eventstream.encode([Frame((Header("n", 4, 1),), b"{}")])
    assert bodies.stored_body(typed, frames=True) == {"base64": base64.b64encode(typed).decode()}
    assert "base64" in bodies.stored_body(typed + b"\x00", frames=True)  # type: ignore[operator]


@given(st.dictionaries(st.sampled_from(["eventstream", "form", "x"]), json_values, max_size=3))
def test_a_hand_edited_frame_list_is_a_problem_never_a_crash(body: dict[str, Any]) -> None:
    stored = {"eventstream": [], "form": "compact", **body}
    problem = bodies.problem(stored)
    if problem is None:
        assert isinstance(bodies.body_bytes(stored), bytes)


def test_a_nova_invoke_is_read_as_converse() -> None:
    """Nova's InvokeModel body and reply have Converse's shape."""
    nova = "amazon.nova-lite-v1:0"
    asked = {"schemaVersion": "messages-v1", "messages": USER, "system": [{"text": "Brief."}]}
    found = recognise(url("invoke", nova), json.dumps(asked), 200, {}, json.dumps(CONVERSE))
    assert found is not None
    assert (found.api, found.model, found.response.content) == (
        "bedrock.converse",
        nova,
        "Let me look.",
    )
    assert request_api(url("invoke", nova), json.dumps(asked)) == "bedrock.converse"
    assert read_request("bedrock.converse", json.dumps(asked)).system == "Brief."


def test_a_rerecording_differing_in_padding_and_latency_is_the_same_answer() -> None:
    def response(padding: str, latency: int) -> dict[str, Any]:
        events = [("messageStart", {"role": "assistant", "p": padding}), *STREAMED[1:]]
        events.append(("metadata", {"usage": {}, "metrics": {"latencyMs": latency}}))
        body = bodies.stored_body(stream_bytes(events), frames=True)
        return {"status": {"code": 200}, "headers": STREAM, "body": body}

    assert steady.same_answer(response("abc", 10), response("abcdefgh", 99)) is not None
    assert steady.same_answer(response("abc", 10), response("abc", 10)) == set()


# --- the loopback server, with boto3 ---------------------------------------------------------


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def client(server: LoopbackServer) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.root,
        region_name="us-east-1",
        aws_access_key_id="AKIAEXAMPLEEXAMPLE00",
        aws_secret_access_key="not-a-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


USER = [{"role": "user", "content": [{"text": "Weather in Oslo?"}]}]


def test_boto3_converse_and_its_stream(server: LoopbackServer) -> None:
    bedrock = client(server)
    call = ToolCallSpec(name="weather", arguments={"city": "Oslo"}, id="tu1")
    server.queue(Reply(content="Looking.", tool_calls=[call]), Reply(content="Sunny, 20 C."))
    reply = bedrock.converse(modelId=MODEL, messages=USER)
    assert reply["stopReason"] == "tool_use"
    assert reply["output"]["message"]["content"][1]["toolUse"] == {
        **CONVERSE_CALL,
        "toolUseId": "tu1",
    }
    events = list(bedrock.converse_stream(modelId=MODEL, messages=USER)["stream"])
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    assert text == "Sunny, 20 C."
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    quoted = MODEL.replace(":", "%3A")
    assert server.paths == [f"/model/{quoted}/converse", f"/model/{quoted}/converse-stream"]


def test_boto3_invoke_and_its_stream(server: LoopbackServer) -> None:
    bedrock = client(server)
    body = json.dumps({**ANTHROPIC, "messages": [{"role": "user", "content": "Hi"}]})
    server.queue(Reply(content="Hello."), Reply(content="Hello again."))
    reply = json.loads(bedrock.invoke_model(modelId=MODEL, body=body)["body"].read())
    assert (reply["content"], reply["stop_reason"]) == (
        [{"type": "text", "text": "Hello."}],
        "end_turn",
    )
    stream = bedrock.invoke_model_with_response_stream(modelId=MODEL, body=body)["body"]
    events = [json.loads(e["chunk"]["bytes"]) for e in stream]
    deltas = [e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta"]
    assert "".join(deltas) == "Hello again."


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, "ValidationException"), (429, "ThrottlingException"), (500, "InternalServerException")],
)
def test_boto3_raises_bedrocks_errors(server: LoopbackServer, status: int, error: str) -> None:
    from botocore.exceptions import ClientError

    server.queue(Reply(status=status, error="scripted"))
    with pytest.raises(ClientError) as raised:
        client(server).converse(modelId=MODEL, messages=USER)
    assert raised.value.response["Error"] == {"Code": error, "Message": "scripted"}


# --- recorded with boto3 and replayed, no credential on disk -----------------------------------

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "ASIAQEXAMPLE7KEY2ID9",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzSecretKey1",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN/" + "Zm9v" * 40,
}

APP = """
import json
import boto3
from botocore.config import Config
from conftest import ROOT, SIGNATURES

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"

def client():
    bedrock = boto3.client("bedrock-runtime", endpoint_url=ROOT, region_name="us-east-1",
                           config=Config(retries={"total_max_attempts": 1}))
    bedrock.meta.events.register("before-send.bedrock-runtime.*", keep_signature)
    return bedrock

def keep_signature(request, **kwargs):
    with open(SIGNATURES, "a") as kept:
        kept.write(request.headers["Authorization"].decode() + "\\n")

def user(text):
    return [{"role": "user", "content": [{"text": text}]}]

def anthropic(text):
    return json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 50,
                       "messages": [{"role": "user", "content": text}]})
"""

TESTS = """
import json
import pytest
from app import MODEL, anthropic, client, user

TOOLS = {"tools": [{"toolSpec": {"name": "weather", "inputSchema": {"json": {"type": "object"}}}}]}

@pytest.mark.harness
def test_converse_tool_loop(harness):
    bedrock = client()
    messages = user("Weather in Oslo?")
    first = bedrock.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    call = first["output"]["message"]["content"][-1]["toolUse"]
    result = {"toolUseId": call["toolUseId"], "content": [{"json": {"sky": "clear"}}]}
    messages += [first["output"]["message"], {"role": "user", "content": [{"toolResult": result}]}]
    second = bedrock.converse(modelId=MODEL, messages=messages, toolConfig=TOOLS)
    assert second["output"]["message"]["content"][0]["text"] == "Clear skies in Oslo."
    trajectory = harness.trajectory
    weather = trajectory.assert_called("weather", {"city": "Oslo"})
    assert weather.result == '{"sky": "clear"}'
    first_request = trajectory.requests[0]
    assert (first_request.api, first_request.model) == ("bedrock.converse", MODEL)
    assert first_request.tools == ("weather",)

@pytest.mark.harness
def test_converse_stream():
    events = list(client().converse_stream(modelId=MODEL, messages=user("Stream"))["stream"])
    text = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert "".join(text) == "streamed reply"

@pytest.mark.harness
def test_invoke():
    reply = client().invoke_model(modelId=MODEL, body=anthropic("Invoke"))
    assert json.loads(reply["body"].read())["content"][0]["text"] == "invoked reply"

@pytest.mark.harness
def test_invoke_stream():
    body = client().invoke_model_with_response_stream(modelId=MODEL, body=anthropic("Chunks"))
    events = [json.loads(e["chunk"]["bytes"]) for e in body["body"]]
    text = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(text) == "chunked reply"
"""


def answer(body: dict[str, Any]) -> Reply:
    """The scripted model: a tool call, then its answer; a fixed reply per prompt."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    said = content if isinstance(content, str) else json.dumps(content)
    if "toolResult" in said:
        return Reply(content="Clear skies in Oslo.")
    if "Weather" in said:
        call = ToolCallSpec(name="weather", arguments={"city": "Oslo"}, id="tooluse_1")
        return Reply(content=None, tool_calls=[call])
    if "Blocked" in said:
        return Reply(content="I can't help with that.", finish_reason="guardrail_intervened")
    replies = {"Stream": "streamed reply", "Invoke": "invoked reply", "Chunks": "chunked reply"}
    word = next((w for w in replies if w in said), "")
    return Reply(content=replies.get(word, ""))


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    outside = tmp_path_factory.mktemp("outside")
    with LoopbackServer(answer) as model:
        pytester.makeini("[pytest]\n")
        signatures = outside / "signatures.txt"
        pytester.makeconftest(f"ROOT = {model.root!r}\nSIGNATURES = {str(signatures)!r}\n")
        pytester.makepyfile(app=APP, test_bedrock_app=TESTS)
        yield pytester, model, outside, signatures


def no_aws(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))


def written(root: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in root.rglob("*") if path.is_file())


def assert_nowhere(root: Path, secrets: list[str]) -> None:
    text = written(root)
    found = [secret[:8] for secret in secrets if secret in text]
    assert not found, f"credentials on disk: {found}"


def signatures(kept: Path) -> list[str]:
    lines = kept.read_text().splitlines()
    return [line.rpartition("Signature=")[2] for line in lines if "Signature=" in line]


def test_boto3_records_with_a_session_token_and_replays_with_no_credentials(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester, model, outside, kept = project
    no_aws(monkeypatch, outside)
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    live = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--harness-live",
        "--harness-report=report.json",
        "--junitxml=junit.xml",
    )
    live.assert_outcomes(passed=4)
    assert len(model.requests) == 5
    sent = signatures(kept)
    assert len(sent) == 5
    assert_nowhere(pytester.path, [*CREDENTIALS.values(), *sent])
    report = (pytester.path / "report.json").read_text()
    assert report.count('"api": "bedrock.converse"') == 3  # the tool loop's two, the stream
    assert report.count('"api": "anthropic.messages"') == 2  # the invokes
    stream = pytester.path / "cassettes" / "test_bedrock_app" / "test_converse_stream.yaml"
    assert '"eventstream": [' in stream.read_text()
    assert_rerecording_keeps_the_files(pytester)
    model.stop()

    no_aws(monkeypatch, outside)
    replay = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--harness-report=replay.json"
    )
    replay.assert_outcomes(passed=4)
    assert_nowhere(pytester.path, [*CREDENTIALS.values(), *sent])
    cost = json.loads((pytester.path / "replay.json").read_text())
    assert priced(cost) > 0


def assert_rerecording_keeps_the_files(pytester: pytest.Pytester) -> None:
    """Recorded again, the same answers leave every cassette as it was; each reads as a
    recording whose comparison with itself is ``same``, the tool loop's call in it."""
    from pytest_harness._changes import compare, read

    files = sorted((pytester.path / "cassettes").rglob("*.yaml"))
    before = [path.read_bytes() for path in files]
    again = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live")
    again.assert_outcomes(passed=4)
    assert [path.read_bytes() for path in files] == before
    recordings = {path.stem: read(json.loads(path.read_text())) for path in files}
    assert recordings["test_converse_tool_loop"].trajectory == (("weather", {"city": "Oslo"}),)
    for name, recording in recordings.items():
        assert recording.calls, name
        assert compare(recording, recording, test=name, cassette=name)["kind"] == "same"


def priced(report: Any) -> float:
    """The sum of every ``cost`` in a JSON report."""
    if isinstance(report, dict):
        own = report.get("cost") if isinstance(report.get("cost"), (int, float)) else 0
        return float(own) + sum(priced(v) for k, v in report.items() if k != "cost")
    if isinstance(report, list):
        return sum(priced(v) for v in report)
    return 0.0


def test_a_session_token_from_the_credentials_file_reaches_no_file(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester, _model, outside, kept = project
    no_aws(monkeypatch, outside)
    shared = outside / ".aws" / "credentials"
    shared.parent.mkdir()
    shared.write_text(
        "[default]\n"
        f"aws_access_key_id = {CREDENTIALS['AWS_ACCESS_KEY_ID']}\n"
        f"aws_secret_access_key = {CREDENTIALS['AWS_SECRET_ACCESS_KEY']}\n"
        f"aws_session_token = {CREDENTIALS['AWS_SESSION_TOKEN']}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(shared))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(outside / ".aws" / "config"))
    live = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live")
    live.assert_outcomes(passed=4)
    assert_nowhere(pytester.path, [*CREDENTIALS.values(), *signatures(kept)])


DEGENERATE = """
import pytest
from app import MODEL, client, user

@pytest.mark.harness
def test_empty():
    client().converse(modelId=MODEL, messages=user("nothing"))

@pytest.mark.harness
def test_blocked():
    client().converse(modelId=MODEL, messages=user("Blocked"))
"""


def test_an_empty_or_blocked_converse_reply_fails_the_response_check(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester, _model, outside, _kept = project
    no_aws(monkeypatch, outside)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
    pytester.makepyfile(test_bedrock_app=DEGENERATE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        [
            f"*model '{MODEL}' returned an empty response*test_empty*",
            f"*model '{MODEL}' returned a refusal or a block*test_blocked*",
        ]
    )


LITELLM = """
import pytest
import pytest_harness
from conftest import ROOT

MODEL = "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0"

@pytest.mark.harness
def test_litellm_bedrock():
    reply = pytest_harness.complete(
        "Invoke", model=MODEL, aws_bedrock_runtime_endpoint=ROOT, aws_region_name="us-east-1"
    )
    assert reply.content == "invoked reply"
    assert reply.usage.total_tokens > 0
"""


def test_litellm_bedrock_models_record_and_replay_through_the_seam(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester, model, outside, _kept = project
    no_aws(monkeypatch, outside)
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_bedrock_app=LITELLM)
    live = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live")
    live.assert_outcomes(passed=1)
    assert [path.rpartition("/")[2] for path in model.paths] == ["converse"]
    assert_nowhere(pytester.path, list(CREDENTIALS.values()))
    model.stop()
    no_aws(monkeypatch, outside)
    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=1)
