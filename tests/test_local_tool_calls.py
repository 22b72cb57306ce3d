"""The embedded model's tool calls: tools offered as a prompt and a grammar, read back."""

from __future__ import annotations

import json

import pytest

from pytest_harness._local import grammar, route
from pytest_harness._local.route import REPLAY_BASE, make_route
from pytest_harness._model.response import ModelResponse

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
    assert routed[route.MARK] is True
    schema = routed["response_format"]["schema"]
    assert routed["response_format"]["type"] == "json_object"
    # lookup was called since the user spoke: only the answer is offered now
    assert schema["required"] == ["answer"]
    first = make_route(REPLAY_BASE)({"model": "local", "messages": messages[:2], "tools": [LOOKUP]})
    schema = first["response_format"]["schema"]
    assert schema["anyOf"][0]["properties"]["tool"] == {"enum": ["lookup"]}
    assert schema["anyOf"][0]["properties"]["arguments"]["required"] == ["order"]
    assert schema["anyOf"][1]["required"] == ["answer"]
    roles = [m["role"] for m in routed["messages"]]
    assert roles == ["user", "assistant", "user"]  # system text folded, tool turns made plain
    first = routed["messages"][0]["content"]
    assert "lookup: Look an order up." not in first  # called already: no longer offered
    assert first.endswith("Where is A-1?")
    assert json.loads(routed["messages"][1]["content"]) == {
        "tool": "lookup",
        "arguments": {"order": "A-1"},
    }
    assert routed["messages"][2]["content"] == (
        "The user asked: Where is A-1?\n"
        "The tool lookup returned: shipped\n"
        "Write the reply to the user."
    )


def test_a_call_without_tools_is_left_alone() -> None:
    routed = make_route(REPLAY_BASE)(
        {"model": "local", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert route.MARK not in routed
    assert "response_format" not in routed


def test_the_json_reply_reads_back_as_a_tool_call_or_an_answer() -> None:
    called = route.receive(
        ModelResponse(
            content='{"tool": "lookup", "arguments": {"order": "A-1"}}', finish_reason="stop"
        )
    )
    (call,) = called.tool_calls
    assert (call.name, call.arguments, called.content) == ("lookup", {"order": "A-1"}, None)
    assert called.finish_reason == "tool_calls"
    answered = route.receive(ModelResponse(content='{"answer": "It shipped."}'))
    assert (answered.text, answered.tool_calls) == ("It shipped.", ())
    cut = ModelResponse(content='{"tool": "look', interrupted=True)
    assert route.receive(cut) is cut  # left for the response check to judge


def test_a_reply_cut_off_by_the_token_limit_reads_as_openai_would_send_it() -> None:
    cut_call = '{ "tool": "lookup", "arguments": {"order": "1042-1042-10'
    called = route.receive(ModelResponse(content=cut_call, finish_reason="length"))
    (call,) = called.tool_calls
    assert (call.name, call.arguments, call.raw_arguments) == (
        "lookup",
        None,
        '{"order": "1042-1042-10',
    )
    assert (called.content, called.finish_reason) == (None, "length")
    cut_answer = '{"answer": "Your order \\"A-1\\" shipped on Mon'
    answered = route.receive(ModelResponse(content=cut_answer, finish_reason="length"))
    assert (answered.text, answered.tool_calls) == ('Your order "A-1" shipped on Mon', ())
    mid_escape = route.receive(ModelResponse(content='{"answer": "a\\', finish_reason="length"))
    assert mid_escape.text == "a"


def _routed(**call: object) -> dict:
    return make_route(REPLAY_BASE)({"model": "local", "messages": [], "tools": [LOOKUP], **call})


def _called(name: str, call_id: str = "c1") -> list[dict]:
    """A user's question, a call of ``name`` and its result."""
    call = {"id": call_id, "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "user", "content": "Where is A-1?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "shipped"},
    ]


def test_tool_choice_decides_what_the_grammar_allows() -> None:
    auto = _routed(tool_choice="auto")["response_format"]["schema"]
    assert [sorted(choice["properties"]) for choice in auto["anyOf"]] == [
        ["arguments", "tool"],
        ["answer"],
    ]
    required = _routed(tool_choice="required")
    assert sorted(required["response_format"]["schema"]["properties"]) == ["arguments", "tool"]
    # asked to call a tool, it is offered every tool: called already or not
    again = _routed(tool_choice="required", messages=_called("lookup"))
    assert sorted(again["response_format"]["schema"]["properties"]) == ["arguments", "tool"]
    assert '{"answer": <text>}' not in required["messages"][0]["content"]
    named = _routed(tool_choice={"type": "function", "function": {"name": "lookup"}})
    assert named["response_format"]["schema"]["properties"]["tool"]["enum"] == ["lookup"]
    none = _routed(tool_choice="none")
    assert none["response_format"]["schema"]["required"] == ["answer"]
    guide = none["messages"][0]["content"]
    assert guide == 'Reply with one JSON object: {"answer": <text>} to answer.'
    assert "tool_choice" not in none
    assert none[route.MARK] is True


def test_a_tool_choice_naming_no_offered_tool_says_which_are() -> None:
    with pytest.raises(ValueError, match=r"names the tool 'refund'.*\(lookup\): name one"):
        _routed(tool_choice={"type": "function", "function": {"name": "refund"}})


def test_the_results_of_one_batch_are_one_turn_under_the_question() -> None:
    batch = [
        {"id": "a", "function": {"name": "lookup", "arguments": '{"order": "A-1"}'}},
        {"id": "b", "function": {"name": "lookup", "arguments": '{"order": "B-2"}'}},
    ]
    messages = [
        {"role": "user", "content": "Where are A-1 and B-2?"},
        {"role": "assistant", "content": None, "tool_calls": batch},
        {"role": "tool", "tool_call_id": "a", "content": "shipped"},
        {"role": "tool", "tool_call_id": "b", "content": "lost"},
    ]
    routed = _routed(messages=messages)
    assert [m["role"] for m in routed["messages"]] == ["user", "assistant", "assistant", "user"]
    assert routed["messages"][-1]["content"] == (
        "The user asked: Where are A-1 and B-2?\n"
        "The tool lookup returned: shipped\n"
        "The tool lookup returned: lost\n"
        "Write the reply to the user."
    )


REFUND = {
    "type": "function",
    "function": {"name": "refund", "description": "Refund an order.", "parameters": None},
}


def test_an_agent_ends_each_tool_offered_until_it_is_called() -> None:
    """auto: the tools not called since the user spoke, and the answer; then the answer."""
    schema = _routed(tools=[LOOKUP, REFUND], messages=_called("lookup"))["response_format"]
    (refund, answer) = schema["schema"]["anyOf"]
    assert refund["properties"]["tool"] == {"enum": ["refund"]}
    assert refund["properties"]["arguments"]["properties"] == {}  # no parameters: {} only
    assert answer["required"] == ["answer"]
    both = [*_called("lookup"), *_called("refund", "c2")[1:]]
    done = _routed(tools=[LOOKUP, REFUND], messages=both)["response_format"]["schema"]
    assert done["required"] == ["answer"]
    asked_again = [*both, {"role": "user", "content": "And B-2?"}]
    fresh = _routed(tools=[LOOKUP, REFUND], messages=asked_again)["response_format"]["schema"]
    assert len(fresh["anyOf"]) == 3  # a new question: every tool again


def test_tool_turns_are_plain_turns_without_tools_too() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        *_called("lookup"),
        {"role": "assistant", "content": [{"type": "text", "text": "It shipped."}]},
        {"role": "user", "content": "Thanks"},
    ]
    routed = make_route(REPLAY_BASE)({"model": "local", "messages": messages})
    assert route.MARK not in routed
    assert "response_format" not in routed
    assert [m["role"] for m in routed["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert all(isinstance(m["content"], str) for m in routed["messages"])
    assert all("tool_calls" not in m for m in routed["messages"])
    assert routed["messages"][2]["content"].startswith("The user asked: Where is A-1?")
    assert routed["messages"][3]["content"] == "It shipped."


def test_a_reply_gets_a_token_limit_from_its_schema_or_the_default() -> None:
    free = make_route(REPLAY_BASE)(
        {"model": "local", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert free["max_tokens"] == route.DEFAULT_MAX_TOKENS
    label = {"type": "object", "properties": {"l": {"enum": ["yes", "no"]}}, "required": ["l"]}
    form = {"type": "json_schema", "json_schema": {"name": "l", "schema": label}}
    shaped = _routed(tools=None, response_format=form)
    assert shaped["max_tokens"] == grammar.bound(label).tokens < 30
    assert shaped["response_format"]["schema"] == grammar.bound(label).schema
    assert _routed(max_tokens=7)["max_tokens"] == 7
    assert "max_tokens" not in _routed(max_completion_tokens=9)
    with_tools = _routed()
    assert with_tools["max_tokens"] == grammar.bound(with_tools["response_format"]["schema"]).tokens


def test_an_agents_notes_shape_the_embedded_models_grammar() -> None:
    label = {"type": "object", "properties": {"l": {"type": "string"}}, "required": ["l"]}
    narrow = {"type": "object", "properties": {"l": {"const": "yes"}}, "required": ["l"]}
    form = {"type": "json_schema", "json_schema": {"name": "l", "schema": label}}
    noted = _routed(tools=None, response_format=form, **{route.SCHEMA_NOTE: narrow})
    assert noted["response_format"]["schema"] == grammar.bound(narrow).schema
    assert route.SCHEMA_NOTE not in noted
    free = route.FreeText(grammar='root ::= "yes" | "no"', tokens=4)
    text = _routed(tools=None, **{route.GRAMMAR_NOTE: free})
    assert text["extra_body"] == {"grammar": 'root ::= "yes" | "no"'}
    assert text["max_tokens"] == 4
    assert route.GRAMMAR_NOTE not in text
