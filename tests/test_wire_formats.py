"""Every wire format read completely (issue 27, item 4): cached prompt tokens priced at
litellm's cache prices, every Responses tool-call item, background Responses, refusals and
blocked prompts, zstd and brotli bodies, one wording, one miss summary. And the replies of
OpenAI-compatible providers (issue 42): content parts, reasoning fields, streams that end
with ``data: [DONE]`` and no finish reason, error chunks.

Bodies are literal provider bodies, as the APIs document and send them; those of issue 42
are real recordings, from ``tests/corpus/chat.json``.
"""

from __future__ import annotations

import gzip
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_harness._cassettes import bodies, interactions, matching, store
from pytest_harness._model import seam as _model
from pytest_harness._model.response import ModelResponse, Usage
from pytest_harness._pytest_glue.scope import Scope
from pytest_harness._pytest_glue.watch import Spend, priced
from pytest_harness._wire import (
    Recognised,
    anthropic,
    chat,
    gemini,
    recognise,
    request_api,
    responses,
    sse,
)
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.harness(cassette=False)

JSON = {"Content-Type": ["application/json"]}
SSE = {"Content-Type": ["text/event-stream"]}
CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"


def read(uri: str, body: Any, headers: dict[str, Any] = JSON) -> ModelResponse:
    text = body if isinstance(body, str) else json.dumps(body)
    found = recognise(uri, None, 200, headers, text.encode())
    assert found is not None
    return found.response


def failure(response: ModelResponse, mode: str = "fail") -> str | None:
    error = _model.problem(response, within=Scope(degenerate=mode))  # type: ignore[arg-type]
    return None if error is None else str(error)


# Cached and cache-write prompt tokens.

ANTHROPIC_CACHED = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "The contract says 30 days."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 50,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 100000,
        "output_tokens": 12,
    },
}
CHAT_CACHED = {
    "id": "chatcmpl-C1",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Thirty days.", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 100050,
        "completion_tokens": 3,
        "total_tokens": 100053,
        "prompt_tokens_details": {"cached_tokens": 100000, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    },
}
RESPONSE = {
    "id": "resp_67ccd3a9da748190",
    "object": "response",
    "created_at": 1741476777,
    "status": "completed",
    "background": False,
    "error": None,
    "incomplete_details": None,
    "model": "gpt-4o-2024-08-06",
    "output": [
        {
            "type": "message",
            "id": "msg_67ccd3acc8d48190",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Thirty days.", "annotations": []}],
        }
    ],
    "usage": {
        "input_tokens": 100050,
        "input_tokens_details": {"cached_tokens": 100000},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 100053,
    },
}
GEMINI_CACHED = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Thirty days."}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 100050,
        "candidatesTokenCount": 3,
        "totalTokenCount": 100053,
        "cachedContentTokenCount": 100000,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "mAitaLmkHPPlz7IPvtfUqQ4",
}


def litellm_price(key: str, *, fresh: int, read: int, written: int, out: int) -> float:
    """The cost by litellm's own per-token prices for ``key`` in its model cost map."""
    prices = _model.lib().model_cost[key]
    assert prices["cache_read_input_token_cost"] < prices["input_cost_per_token"]
    return (
        fresh * prices["input_cost_per_token"]
        + read * prices["cache_read_input_token_cost"]
        + written * prices.get("cache_creation_input_token_cost", 0.0)
        + out * prices["output_cost_per_token"]
    )


@pytest.mark.parametrize(
    ("uri", "body", "provider", "key"),
    [
        (ANTHROPIC, ANTHROPIC_CACHED, "anthropic", "claude-sonnet-4-5-20250929"),
        (CHAT, CHAT_CACHED, "openai", "gpt-4o-2024-08-06"),
        (RESPONSES, RESPONSE, "openai", "gpt-4o-2024-08-06"),
        (f"{GEMINI}:generateContent", GEMINI_CACHED, "gemini", "gemini/gemini-2.5-flash"),
    ],
    ids=["anthropic", "chat", "responses", "gemini"],
)
def test_cache_read_tokens_are_priced_at_litellms_cache_read_price(
    uri: str, body: dict[str, Any], provider: str, key: str
) -> None:
    found = recognise(uri, None, 200, JSON, json.dumps(body).encode())
    assert found is not None
    usage = found.response.usage
    assert (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens) == (
        100050,
        100000,
        0,
    )
    spend = Spend()
    price = priced(found)
    assert price.provider == provider
    spend.add(found.model, usage, cost=price.cost)
    out = usage.completion_tokens
    expected = litellm_price(key, fresh=50, read=100000, written=0, out=out)
    assert spend.cost == pytest.approx(expected)
    full = litellm_price(key, fresh=100050, read=0, written=0, out=out)
    assert spend.cost is not None
    assert spend.cost < full * 0.75  # not the full input rate
    record = spend.record("t")
    assert (record["cached_tokens"], record["cache_write_tokens"]) == (100000, 0)


def test_anthropic_cache_writes_have_their_own_price() -> None:
    usage = {**ANTHROPIC_CACHED["usage"], "cache_creation_input_tokens": 2000}  # type: ignore[dict-item]
    response = read(ANTHROPIC, {**ANTHROPIC_CACHED, "usage": usage})
    assert (response.usage.cached_tokens, response.usage.cache_write_tokens) == (100000, 2000)
    assert response.usage.prompt_tokens == 50 + 100000 + 2000
    cost = _model.price("claude-sonnet-4-5-20250929", response.usage, "anthropic")
    key = "claude-sonnet-4-5-20250929"
    assert cost == pytest.approx(litellm_price(key, fresh=50, read=100000, written=2000, out=12))


def test_usages_add_their_cache_figures_and_compare_by_all_of_them() -> None:
    a = Usage(prompt_tokens=10, completion_tokens=1, total_tokens=11, cached_tokens=8)
    b = Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7, cache_write_tokens=4)
    assert a + b == Usage(
        prompt_tokens=15,
        completion_tokens=3,
        total_tokens=18,
        cached_tokens=8,
        cache_write_tokens=4,
    )
    assert a != Usage(prompt_tokens=10, completion_tokens=1, total_tokens=11)


# Every kind of Responses tool call: those the application runs, and those the provider runs
# itself (its hosted tools), each item shaped as the openai SDK's type of it.

TOOL_ITEMS = [
    (
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "run_sql",
         "input": "SELECT 1"},
        "run_sql",
        "SELECT 1",
    ),
    (
        {"type": "computer_call", "id": "cu_1", "call_id": "call_2", "status": "completed",
         "action": {"type": "click", "button": "left", "x": 156, "y": 50},
         "pending_safety_checks": []},
        "computer_call",
        '{"type": "click", "button": "left", "x": 156, "y": 50}',
    ),
    (
        {"type": "local_shell_call", "id": "ls_1", "call_id": "call_3", "status": "completed",
         "action": {"type": "exec", "command": ["ls", "-la"], "env": {}}},
        "local_shell_call",
        '{"type": "exec", "command": ["ls", "-la"], "env": {}}',
    ),
    (
        {"type": "shell_call", "id": "sh_1", "call_id": "call_4", "status": "completed",
         "action": {"commands": ["ls"]}, "environment": {"type": "local"}},
        "shell_call",
        '{"commands": ["ls"]}',
    ),
    (
        {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_5", "status": "completed",
         "operation": {"type": "delete_file", "path": "old.txt"}},
        "apply_patch_call",
        '{"operation": {"type": "delete_file", "path": "old.txt"}}',
    ),
    (
        {"type": "tool_search_call", "id": "tsc_1", "call_id": "call_6", "status": "completed",
         "arguments": {"queries": ["refunds"]}, "execution": "client"},
        "tool_search_call",
        '{"queries": ["refunds"]}',
    ),
]  # fmt: skip

PROVIDER_ITEMS = [
    (
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "weather paris"}},
        "web_search_call",
        '{"type": "search", "query": "weather paris"}',
    ),
    (
        {"type": "file_search_call", "id": "fs_1", "status": "completed",
         "queries": ["refund policy"], "results": None},
        "file_search_call",
        '{"queries": ["refund policy"]}',
    ),
    (
        {"type": "code_interpreter_call", "id": "ci_1", "status": "completed",
         "code": "print(2 + 2)", "container_id": "cntr_1", "outputs": None},
        "code_interpreter_call",
        '{"code": "print(2 + 2)", "container_id": "cntr_1"}',
    ),
    (
        {"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask_question",
         "arguments": '{"question":"What is MCP?"}', "output": "MCP is...", "error": None},
        "ask_question",
        '{"question":"What is MCP?"}',
    ),
    (
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "deepwiki", "tools": []},
        "mcp_list_tools",
        '{"server_label": "deepwiki", "tools": []}',
    ),
    (
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "deepwiki",
         "name": "ask_question", "arguments": '{"question":"?"}'},
        "ask_question",
        '{"question":"?"}',
    ),
    (
        {"type": "image_generation_call", "id": "ig_1", "status": "completed",
         "result": "iVBORw0KGgo="},
        "image_generation_call",
        "{}",
    ),
    (
        {"type": "tool_search_call", "id": "tsc_1", "call_id": None, "status": "completed",
         "arguments": {"paths": ["get_weather"]}, "execution": "server"},
        "tool_search_call",
        '{"paths": ["get_weather"]}',
    ),
    (
        {"type": "shell_call", "id": "sh_1", "call_id": "call_4", "status": "completed",
         "action": {"commands": ["ls"]},
         "environment": {"type": "container_reference", "container_id": "cntr_1"}},
        "shell_call",
        '{"commands": ["ls"]}',
    ),
    (
        {"type": "program", "id": "prg_1", "call_id": "call_7", "code": "text(1)",
         "fingerprint": "f"},
        "program",
        '{"code": "text(1)", "fingerprint": "f"}',
    ),
    (
        {"type": "x_search_call", "id": "xs_1", "status": "completed", "query": "q"},
        "x_search_call",
        '{"query": "q"}',
    ),
]  # fmt: skip


@pytest.mark.parametrize(("item", "name", "arguments"), TOOL_ITEMS, ids=lambda v: str(v)[:20])
def test_every_responses_tool_call_item_is_a_tool_call(
    item: dict[str, Any], name: str, arguments: str
) -> None:
    body = {**RESPONSE, "output": [item]}
    for response in (read(RESPONSES, body), read(RESPONSES, stream_of(body), SSE)):
        (call,) = response.tool_calls
        assert (call.name, call.raw_arguments) == (name, arguments)
        assert (response.finish_reason, response.provider_tool_calls) == ("tool_calls", ())
        assert failure(response) is None


@pytest.mark.parametrize(("item", "name", "arguments"), PROVIDER_ITEMS, ids=lambda v: str(v)[:20])
def test_a_tool_the_provider_ran_is_no_tool_call_but_is_listed_apart(
    item: dict[str, Any], name: str, arguments: str
) -> None:
    """Issue 42: a hosted tool's item (and one of a kind not known yet without a call_id)
    leaves the application nothing to run: the reply finishes ``stop``, and it is accepted
    as it was when it read as a tool call, even without text."""
    body = {**RESPONSE, "output": [item]}
    for response in (read(RESPONSES, body), read(RESPONSES, stream_of(body), SSE)):
        (ran,) = response.provider_tool_calls
        assert (ran.name, ran.raw_arguments) == (name, arguments)
        assert (response.tool_calls, response.finish_reason) == ((), "stop")
        assert failure(response) is None


def test_a_reply_with_both_kinds_calls_only_the_applications_tools() -> None:
    web, function = PROVIDER_ITEMS[0][0], TOOL_ITEMS[0][0]
    body = {**RESPONSE, "output": [web, function, *RESPONSE["output"]]}  # type: ignore[list-item]
    for response in (read(RESPONSES, body), read(RESPONSES, stream_of(body), SSE)):
        assert [c.name for c in response.tool_calls] == ["run_sql"]
        assert [c.name for c in response.provider_tool_calls] == ["web_search_call"]
        assert response.finish_reason == "tool_calls"
        assert response.content


def stream_of(response: dict[str, Any]) -> str:
    """The SSE stream of a Responses reply: created, each item done, completed."""
    created = {**response, "status": "in_progress", "output": []}
    events = [("response.created", {"type": "response.created", "response": created})]
    for index, item in enumerate(response["output"]):
        done = {"type": "response.output_item.done", "output_index": index, "item": item}
        events.append(("response.output_item.done", done))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


# Background responses: polled until they finish.


@pytest.mark.parametrize("status", ["queued", "in_progress"])
def test_a_background_response_not_finished_is_no_call(status: str) -> None:
    body = {**RESPONSE, "status": status, "background": True, "output": [], "usage": None}
    assert recognise(f"{RESPONSES}/resp_1", None, 200, JSON, json.dumps(body).encode()) is None


def test_a_finished_background_response_is_the_call() -> None:
    response = read(f"{RESPONSES}/resp_1", {**RESPONSE, "background": True})
    assert (response.content, response.interrupted, response.finish_reason) == (
        "Thirty days.",
        False,
        "stop",
    )


# Refusals and blocked prompts.

GEMINI_BLOCKED = {
    "promptFeedback": {
        "blockReason": "PROHIBITED_CONTENT",
        "safetyRatings": [],
    },
    "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    "modelVersion": "gemini-2.5-flash",
}
REFUSALS = [
    pytest.param(
        ANTHROPIC,
        {**ANTHROPIC_CACHED, "content": [], "stop_reason": "refusal"},
        "stop_reason: refusal",
        id="anthropic",
    ),
    pytest.param(
        CHAT,
        {
            **CHAT_CACHED,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": "I'm sorry, I can't help with that.",
                    },
                    "finish_reason": "stop",
                }
            ],
        },
        "I'm sorry, I can't help with that.",
        id="chat",
    ),
    pytest.param(
        RESPONSES,
        {
            **RESPONSE,
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "I can't assist with that."}],
                }
            ],
        },
        "I can't assist with that.",
        id="responses",
    ),
    pytest.param(
        f"{GEMINI}:generateContent",
        GEMINI_BLOCKED,
        "promptFeedback.blockReason: PROHIBITED_CONTENT",
        id="gemini-blocked-prompt",
    ),
    pytest.param(
        f"{GEMINI}:generateContent",
        {**GEMINI_CACHED, "candidates": [{"finishReason": "SAFETY", "index": 0}]},
        "finishReason: SAFETY",
        id="gemini-safety",
    ),
]


@pytest.mark.parametrize(("uri", "body", "reason"), REFUSALS)
def test_a_refusal_or_block_fails_naming_its_reason(
    uri: str, body: dict[str, Any], reason: str
) -> None:
    response = read(uri, body)
    assert response.refusal == reason
    message = failure(response)
    assert message is not None
    assert "returned a refusal or a block instead of an answer" in message
    assert reason in message
    assert failure(response, "warn") is not None
    assert failure(response, "off") is None


def test_a_refusal_streamed_in_chat_deltas_is_read() -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        data = {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [choice],
        }
        return f"data: {json.dumps(data)}\n\n"

    body = "".join(
        [
            chunk({"role": "assistant", "refusal": ""}),
            chunk({"refusal": "I can't "}),
            chunk({"refusal": "help."}),
            chunk({}, "stop"),
            "data: [DONE]\n\n",
        ]
    )
    assert read(CHAT, body, SSE).refusal == "I can't help."


def test_a_blocked_gemini_prompt_is_counted_streamed_too() -> None:
    found = recognise(
        f"{GEMINI}:streamGenerateContent", None, 200, JSON, json.dumps([GEMINI_BLOCKED]).encode()
    )
    assert found is not None
    assert found.streamed
    assert (found.response.interrupted, found.response.usage.prompt_tokens) == (False, 8)
    assert found.response.refusal == "promptFeedback.blockReason: PROHIBITED_CONTENT"


# One wording for reasoning-only replies.


@pytest.mark.parametrize(
    ("uri", "body"),
    [
        (
            ANTHROPIC,
            {**ANTHROPIC_CACHED,
             "content": [{"type": "thinking", "thinking": "Hmm.", "signature": "x"}]},
        ),
        (
            f"{GEMINI}:generateContent",
            {**GEMINI_CACHED, "candidates": [
                {"content": {"parts": [{"text": "Hmm.", "thought": True}], "role": "model"},
                 "finishReason": "STOP"}]},
        ),
        (
            RESPONSES,
            {**RESPONSE, "output": [
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "Hmm."}]}]},
        ),
    ],
    ids=["anthropic", "gemini", "responses"],
)  # fmt: skip
def test_reasoning_only_replies_are_worded_alike(uri: str, body: dict[str, Any]) -> None:
    message = failure(read(uri, body))
    assert message is not None
    assert "returned a degenerate response (no visible text, only reasoning)" in message
    assert "think blocks" not in message


# zstd and brotli bodies.


def compressed(encoding: str, body: bytes) -> dict[str, Any]:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {
            "Content-Type": ["application/json"],
            "Content-Encoding": [encoding],
            "Content-Length": ["0"],
        },
        "body": {"string": body},
    }


def zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor().compress(data))


def brotli(data: bytes) -> bytes:
    return bytes(pytest.importorskip("brotli").compress(data))


@pytest.mark.parametrize(
    ("encoding", "pack"), [("zstd", zstd), ("br", brotli), ("gzip", gzip.compress)]
)
def test_compressed_bodies_are_decoded_as_gzip_is(encoding: str, pack: Any) -> None:
    plain = json.dumps(CHAT_CACHED).encode()
    decoded = store._decoded(compressed(encoding, pack(plain)))
    assert decoded["body"]["string"] == plain
    headers = {name.lower(): values for name, values in decoded["headers"].items()}
    assert headers == {"content-type": ["application/json"], "content-length": [str(len(plain))]}


def test_a_zstd_body_stays_as_it_came_without_a_zstd_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = zstd(json.dumps(CHAT_CACHED).encode())
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard raises ImportError
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    monkeypatch.setitem(sys.modules, "backports.zstd", None)
    store._zstd_decompressor.cache_clear()
    try:
        response = compressed("zstd", body)
        assert store._decoded(response) is response
    finally:
        store._zstd_decompressor.cache_clear()


def test_a_zstd_body_is_decoded_with_httpx2s_zstd_extra_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx2[zstd] installs backports.zstd (before Python 3.14): with it httpx2 asks for
    # zstd replies, so the harness must read them with it, zstandard or not.
    pytest.importorskip("backports.zstd")
    plain = json.dumps(CHAT_CACHED).encode()
    body = zstd(plain) + zstd(b"")  # two frames, one after the other
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    store._zstd_decompressor.cache_clear()
    try:
        assert store._decoded(compressed("zstd", body))["body"]["string"] == plain
    finally:
        store._zstd_decompressor.cache_clear()


def test_a_cut_zstd_body_stays_as_it_came() -> None:
    response = compressed("zstd", zstd(json.dumps(CHAT_CACHED).encode())[:-4])
    assert store._decoded(response) is response


# One miss summary for every format.

USER = "What is the refund window?"
REQUESTS = [
    (CHAT, {"model": "gpt-4o", "messages": [{"role": "user", "content": USER}]}),
    (
        ANTHROPIC,
        {"model": "claude-sonnet-4-5", "max_tokens": 64,
         "messages": [{"role": "user", "content": [{"type": "text", "text": USER}]}]},
    ),
    (RESPONSES, {"model": "gpt-4o", "input": [{"role": "user", "content": USER}]}),
    (RESPONSES, {"model": "gpt-4o", "input": USER}),
    (
        f"{GEMINI}:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": USER}]}]},
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("uri", "body"), REQUESTS, ids=["chat", "anthropic", "resp", "text", "gem"]
)
def test_a_miss_summary_shows_model_and_user_lines_for_every_format(
    uri: str, body: dict[str, Any]
) -> None:
    key = matching.request_key("POST", uri, json.dumps(body).encode(), ())
    lines = matching.describe(key).splitlines()
    model = body.get("model", "gemini-2.5-flash")
    assert lines[1:] == [f"model: {model}", f"user: {USER}"]


def test_request_api_goes_by_url_then_by_body() -> None:
    assert request_api("http://127.0.0.1:9/v1/responses", None) == "openai.responses"
    assert request_api("http://127.0.0.1:9/proxy", b'{"contents": []}') == "gemini.generate"
    assert request_api("http://127.0.0.1:9/v1/embeddings", b'{"input": "x"}') is not None
    assert request_api("http://127.0.0.1:9/v1/models", None) is None


# Generating these lists is slow on a loaded machine: not a failure of the reader.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["type", "name", "input", "action", "arguments", "call_id", "id"]),
            st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers())),
        ),
        max_size=4,
    ),
    st.sampled_from(["completed", "queued", "in_progress", "failed", "", 5]),
)
def test_any_responses_output_items_never_raise(items: list[Any], status: Any) -> None:
    body = json.dumps({**RESPONSE, "output": items, "status": status}).encode()
    found = recognise(RESPONSES, None, 200, JSON, body)
    if found is not None:
        assert all(isinstance(call.raw_arguments, str) for call in found.response.tool_calls)


# OpenAI-compatible providers' chat replies (issue 42), read from the real bodies of
# tests/corpus/chat.json (its README says where each came from).

CORPUS = {
    record["case"]: record
    for record in json.loads((Path(__file__).parent / "corpus/chat.json").read_text())
}


def recorded(case: str, text: str | None = None) -> Recognised:
    """A corpus reply (or ``text`` in its place) as recognition reads it."""
    record = CORPUS[case]
    headers = {"Content-Type": [record["content_type"]]}
    body = (record["response"] if text is None else text).encode()
    found = recognise(record["uri"], None, 200, headers, body)
    assert found is not None
    return found


def as_stored(case: str, text: str | None = None) -> Recognised | None:
    """The same reply read from a cassette's stored form (``interactions.recognised``)."""
    record = CORPUS[case]
    stored = bodies.stored(record["response"] if text is None else text)
    interaction = {
        "request": {"method": "POST", "uri": record["uri"], "body": None, "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": [record["content_type"]]},
            "body": stored if isinstance(stored, dict) else {"string": stored},
        },
    }
    return interactions.recognised(interaction)


def message_of(case: str) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(CORPUS[case]["response"])["choices"][0]["message"]
    return message


def stream_chunks(case: str) -> list[dict[str, Any]]:
    """The JSON chunks of a corpus stream, in order."""
    return [json.loads(data) for _, data in sse.events(CORPUS[case]["response"]) if data[0] == "{"]


def stream_text(chunks: list[dict[str, Any]], done: bool = True) -> str:
    """Chunks as an SSE body, as the providers write it, ending with ``data: [DONE]``."""
    text = "".join(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n" for chunk in chunks)
    return text + ("data: [DONE]\n\n" if done else "")


def test_a_content_of_parts_reads_its_text_parts_as_content_and_thinking_as_reasoning() -> None:
    """Mistral's reply: a thinking part (its text in parts), then a text part."""
    thinking, text = message_of("mistral_content_parts_thinking_text")["content"]
    found = recorded("mistral_content_parts_thinking_text")
    response = found.response
    assert (response.content, response.reasoning) == (text["text"], thinking["thinking"][0]["text"])
    assert (response.finish_reason, response.interrupted, response.usage.total_tokens) == (
        "stop",
        False,
        1411,
    )
    assert failure(response) is None
    # litellm's OpenAI reader cannot read a list of parts (it raises): the seam's replay
    # sends such a reply through litellm, as recorded (test_seam_replay.py).
    assert not found.as_sent()


def test_a_streamed_content_of_parts_adds_up_to_the_same() -> None:
    """Magistral streams its parts as deltas (a part list each, or text): here the corpus
    reply's parts, cut into deltas of both kinds (no stream of it was recorded)."""
    thinking, text = message_of("mistral_content_parts_thinking_text")["content"]
    thought, said = thinking["thinking"][0]["text"], text["text"]
    base = {"id": "x", "object": "chat.completion.chunk", "model": "magistral-medium-latest"}

    def chunk(content: Any, finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
        }

    def think(piece: str) -> list[dict[str, Any]]:
        return [{"type": "thinking", "thinking": [{"type": "text", "text": piece}]}]

    half = len(thought) // 2
    chunks = [
        chunk(""),
        chunk(think(thought[:half])),
        chunk(think(thought[half:])),
        chunk([{"type": "text", "text": said[:10]}]),
        chunk(said[10:]),
        chunk("", "stop"),
    ]
    response = read(CHAT, stream_text(chunks), SSE)
    assert (response.content, response.reasoning, response.finish_reason) == (
        said,
        thought,
        "stop",
    )


@pytest.mark.parametrize(
    "case",
    ["groq_reasoning_field", "cerebras_reasoning_field", "cerebras_reasoning_field_second_turn"],
)
def test_reasoning_sent_as_its_own_field_is_read(case: str) -> None:
    message = message_of(case)
    found = recorded(case)
    assert (found.response.content, found.response.reasoning) == (
        message["content"],
        message["reasoning"],
    )
    assert not found.as_sent()  # litellm maps a provider's reasoning field: it reads it


def test_reasoning_streamed_with_its_details_is_read_once_and_from_the_details_alone() -> None:
    """OpenRouter sends each piece twice, as ``reasoning`` and in ``reasoning_details``."""
    chunks = stream_chunks("openrouter_stream_reasoning_details")
    said = "".join(c["choices"][0]["delta"].get("reasoning") or "" for c in chunks)
    assert said.startswith("The question asks for the capital of France.")
    assert recorded("openrouter_stream_reasoning_details").response.reasoning == said
    for chunk in chunks:
        chunk["choices"][0]["delta"].pop("reasoning", None)
    details_only = stream_text(chunks)
    assert recorded("openrouter_stream_reasoning_details", details_only).response.reasoning == said


def test_reasoning_details_of_a_reply_are_read_without_its_encrypted_ones() -> None:
    message = {
        "role": "assistant",
        "content": "Paris.",
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "The capital, asked."},
            {"type": "reasoning.encrypted", "data": "gAAAAB..."},
            {"type": "reasoning.text", "text": "France's capital is Paris."},
        ],
    }
    body = {**CHAT_CACHED, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    assert read(CHAT, body).reasoning == "The capital, asked.\n\nFrance's capital is Paris."


# A stream's end: its data: [DONE].

NO_FINISH = "chat_stream_no_finish_reason"


def test_a_stream_that_sent_its_done_finished_without_a_finish_reason() -> None:
    """OpenRouter (provider Novita) sends no finish_reason in any chunk; the usage chunk and
    [DONE] came: a whole reply, its finish reason None as sent (litellm makes one up)."""
    found = recorded(NO_FINISH)
    response = found.response
    assert (response.finish_reason, response.interrupted) == (None, False)
    # Novita sends the call's name again in each chunk: read as the SDK reads it, added up.
    assert [call.arguments for call in response.tool_calls] == [{}]
    assert response.usage == Usage(prompt_tokens=57, completion_tokens=17, total_tokens=74)
    assert failure(response) is None
    assert not found.as_sent()
    assert as_stored(NO_FINISH) == found


def test_every_cut_of_that_stream_before_its_done_is_interrupted() -> None:
    whole = CORPUS[NO_FINISH]["response"]
    end = whole.index("data: [DONE]")
    for cut in [*range(0, end, 7), end - 1, end]:
        found = recognise(CHAT, None, 200, SSE, whole[:cut].encode())
        assert found is None or found.response.interrupted, cut
        assert as_stored(NO_FINISH, whole[:cut]) == found, cut
    for cut in (end + len("data: [DONE]"), len(whole)):
        assert not recorded(NO_FINISH, whole[:cut]).response.interrupted, cut


def test_what_follows_done_is_not_read() -> None:
    """The SDK stops reading at [DONE]."""
    extra = 'data: {"choices":[{"index":0,"delta":{"content":"late"},"finish_reason":"stop"}]}\n\n'
    text = CORPUS[NO_FINISH]["response"] + extra
    response = recorded(NO_FINISH, text).response
    assert (response.content, response.finish_reason) == (None, None)
    assert as_stored(NO_FINISH, text) == recorded(NO_FINISH, text)


def test_a_finish_reason_of_empty_text_is_none_and_done_still_ends_the_stream() -> None:
    """No recording with ``finish_reason: ""`` was found (tests/corpus/README.md; Ollama sent
    it until mid-2024): this is the corpus's chat_stream_no_finish_reason with its last
    chunk's finish_reason set to ""."""
    chunks = stream_chunks(NO_FINISH)
    chunks[-1]["choices"][0]["finish_reason"] = ""
    ended = recorded(NO_FINISH, stream_text(chunks))
    assert (ended.response.finish_reason, ended.response.interrupted) == (None, False)
    assert as_stored(NO_FINISH, stream_text(chunks)) == ended
    cut = recorded(NO_FINISH, stream_text(chunks, done=False))
    assert (cut.response.finish_reason, cut.response.interrupted) == (None, True)
    assert as_stored(NO_FINISH, stream_text(chunks, done=False)) == cut


# A stream that failed: an error chunk.

FAILED = "openrouter_stream_error_chunk_after_reasoning"


def test_an_error_chunk_after_reasoning_is_a_failed_reply_whose_error_is_shown() -> None:
    """OpenRouter's chunk ``error: {code: 400, message: "Token limit reached"}`` after the
    reasoning and two ``length`` finishes: the SDK raises APIError("Token limit reached")."""
    found = recorded(FAILED)
    response = found.response
    assert (response.interrupted, response.finish_reason) == (True, None)
    assert response.refusal == "error: Token limit reached"
    assert response.reasoning == "We need to respond to a greeting. The user"
    assert response.usage == Usage(prompt_tokens=43, completion_tokens=10, total_tokens=53)
    assert not found.as_sent()
    assert as_stored(FAILED) == found
    message = failure(response)
    assert message is not None
    assert "returned an interrupted response" in message
    assert "refusal: 'error: Token limit reached'" in message
    assert "finish_reason: None" in message


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ({"code": 502, "message": "Provider disconnected"}, "error: Provider disconnected"),
        ({"code": 502}, "error: An error occurred during streaming"),  # the SDK's words
        ("upstream timed out", "error: upstream timed out"),
    ],
)
def test_an_error_chunk_after_text_is_read_up_to_it(error: Any, shown: str) -> None:
    """The corpus's error stream, its error replaced, and text before and after it: the SDK
    hands the app what came before the error, and reads nothing after it."""
    chunks = stream_chunks(FAILED)
    chunks[0]["choices"][0]["delta"]["content"] = "Hello"
    chunks[-1]["error"] = error
    late = {**chunks[1], "error": None, "choices": [{"index": 0, "delta": {"content": "!"}}]}
    response = recorded(FAILED, stream_text([*chunks, late])).response
    assert (response.content, response.refusal, response.interrupted) == ("Hello", shown, True)


def test_a_stream_with_an_error_chunk_is_not_passed_on_as_sent() -> None:
    """Fields litellm passes on, a finish reason and usage, but an error chunk: the SDK
    raises at it, so litellm's reading is not recognition's."""
    chunks = [
        {"id": "x", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]},
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
    ]
    assert chat.as_sent(chunks, streamed=True)
    failed = [*chunks, {"id": "x", "choices": [], "error": {"message": "overloaded"}}]
    assert not chat.as_sent(failed, streamed=True)


# End to end: an application's zstd reply and refusal, recorded then replayed.

APP = """
import httpx, pytest
from conftest import URL

def ask(text):
    reply = httpx.post(f"{URL}/chat/completions", headers={"Accept-Encoding": "zstd"},
                       json={"model": "gpt-4o", "messages": [{"role": "user", "content": text}]})
    return reply.json()["choices"][0]["message"]

@pytest.mark.harness
def test_zstd():
    assert ask("zstd")["content"] == "Thirty days."

@pytest.mark.harness
def test_refused():
    assert ask("refuse")["content"] is None
"""


def test_an_application_zstd_reply_is_stored_readable_and_a_refusal_fails(
    pytester: pytest.Pytester,
) -> None:
    refusal = {**CHAT_CACHED, "choices": [REFUSALS[1].values[1]["choices"][0]]}  # type: ignore[index]

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "zstd":
            packed = zstd(json.dumps(CHAT_CACHED).encode())
            return Reply(raw=packed, headers={"Content-Encoding": "zstd"})
        return Reply(raw=json.dumps(refusal))

    with LoopbackServer(answer) as server:
        pytester.makeini("[pytest]\nharness_record_failed = true\n")
        pytester.makeconftest(f"URL = {server.url!r}\n")
        pytester.makepyfile(test_app=APP)
        args = ("-p", "no:cacheprovider", "-p", "no:randomly", "--junitxml=out.xml")
        recorded = pytester.runpytest(*args, "--harness-live")
    replayed = pytester.runpytest(*args)
    for result in (recorded, replayed):
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            ["*returned a refusal or a block instead of an answer*test_refused*",
             "*refusal: *I'm sorry, I can't help with that.*"]
        )  # fmt: skip
    stored = json.loads((pytester.path / "cassettes/test_app/test_zstd.yaml").read_text())
    (interaction,) = stored["interactions"]
    assert interaction["response"]["body"]["json"]["usage"]["prompt_tokens"] == 100050
    junit = (pytester.path / "out.xml").read_text()
    assert "&quot;cached_tokens&quot;: 100000" in junit


@pytest.mark.parametrize("module", [chat, responses, anthropic, gemini], ids=lambda m: m.__name__)
def test_each_format_reads_a_request_a_reply_and_a_stream_the_same_way(module: Any) -> None:
    """Each format's module has the same three readers, with the same signatures."""
    for reader in ("read_request", "read_reply", "read_events"):
        assert inspect.signature(getattr(module, reader)) == inspect.signature(
            getattr(chat, reader)
        )
