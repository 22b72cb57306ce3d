"""The embedded model's tool calls: tools offered as a prompt and a grammar, read back."""

from __future__ import annotations

import json

from pytest_harness.local import tool_calls
from pytest_harness.local.route import REPLAY_BASE, make_route
from pytest_harness.response import ModelResponse

LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look an order up.",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "string"}},
            "required": ["order"],
        },
    },
}


def test_offered_tools_become_a_grammar_and_plain_turns() -> None:
    messages = [
        {"role": "system", "content": "Be helpful."},
        {"role": "user", "content": "Where is A-1?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "function": {"name": "lookup", "arguments": '{"order": "A-1"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "shipped"},
    ]
    routed = make_route(REPLAY_BASE)({"model": "local", "messages": messages, "tools": [LOOKUP]})
    assert "tools" not in routed
    assert routed[tool_calls.MARK] is True
    schema = routed["response_format"]["schema"]
    assert routed["response_format"]["type"] == "json_object"
    assert schema["anyOf"][0]["properties"]["tool"] == {"type": "string", "enum": ["lookup"]}
    assert schema["anyOf"][0]["properties"]["arguments"]["required"] == ["order"]
    assert schema["anyOf"][1]["required"] == ["answer"]
    roles = [m["role"] for m in routed["messages"]]
    assert roles == ["user", "assistant", "user"]  # system text folded, tool turns made plain
    first = routed["messages"][0]["content"]
    assert "lookup: Look an order up." in first
    assert first.endswith("Where is A-1?")
    assert json.loads(routed["messages"][1]["content"]) == {
        "tool": "lookup",
        "arguments": {"order": "A-1"},
    }
    assert routed["messages"][2]["content"] == "Tool result: shipped"


def test_a_call_without_tools_is_left_alone() -> None:
    routed = make_route(REPLAY_BASE)(
        {"model": "local", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert tool_calls.MARK not in routed
    assert "response_format" not in routed


def test_the_json_reply_reads_back_as_a_tool_call_or_an_answer() -> None:
    called = tool_calls.receive(
        ModelResponse(
            content='{"tool": "lookup", "arguments": {"order": "A-1"}}', finish_reason="stop"
        )
    )
    (call,) = called.tool_calls
    assert (call.name, call.arguments, called.content) == ("lookup", {"order": "A-1"}, None)
    assert called.finish_reason == "tool_calls"
    answered = tool_calls.receive(ModelResponse(content='{"answer": "It shipped."}'))
    assert (answered.text, answered.tool_calls) == ("It shipped.", ())
    cut = ModelResponse(content='{"tool": "look', interrupted=True)
    assert tool_calls.receive(cut) is cut  # left for the response check to judge
