"""``harness.trajectory``: the application's own model traffic read back as a trajectory.

Unit tests read literal request and response bodies of the four wire formats (what a request
asks; calls matched to the results sent back, by id, or by name and order for Gemini).
End to end, pytest sessions (pytester) run a hand-written two-tool agent loop over the OpenAI
SDK against a loopback model: recorded with ``--harness-live``, then replayed with the
server stopped; the same assertions hold in both, a failing one prints the table, and the
report shows the traffic beside orchestrator runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes.slot import Seen
from pytest_harness._report.session import trajectory_property
from pytest_harness._trajectory import TrafficTrajectory, from_traffic
from pytest_harness._wire import Asked, SentResult, Turn, read_request, recognise
from pytest_harness.orchestrator import Run
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

SYSTEM = "You are the weather agent."


def seen(uri: str, request: dict[str, Any], response: Any, *, replayed: bool = False) -> Seen:
    """One exchange of the application's, as the cassette hands it to the watch."""
    body = json.dumps(request).encode()
    found = recognise(uri, body, 200, {}, json.dumps(response))
    assert found is not None, response
    return Seen(found=found, uri=uri, replayed=replayed, request=body, latency_s=0.5)


# Real traffic (tests/corpus/, its README says who recorded it): Gemini calls without ids,
# answered with the client's own ids (pydantic-ai) or none (ADK); Responses replies with
# tools the provider ran itself.
CORPUS = {
    record["case"]: record
    for path in sorted((Path(__file__).parent / "corpus").glob("*.json"))
    for record in json.loads(path.read_text(encoding="utf-8"))
}


def recorded(case: str) -> Seen:
    """A corpus record as the cassette hands it to the watch: its request, its reply."""
    record = CORPUS[case]
    body = json.dumps(record["request"]).encode()
    headers = {"content-type": [record["content_type"]]}
    found = recognise(record["uri"], body, 200, headers, record["response"].encode())
    assert found is not None, case
    return Seen(found=found, uri=record["uri"], replayed=True, request=body, latency_s=0.5)


# What a request asks, in each wire format.


def test_chat_request() -> None:
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": "Paris?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
    }
    asked = read_request("openai.chat", json.dumps(body))
    assert asked == Asked(
        turns=(
            Turn(role="system", text=SYSTEM),
            Turn(role="user", text="Paris?"),
            Turn(role="assistant", text="get_weather()"),
            Turn(role="tool", text="sunny"),
        ),
        tools=("get_weather",),
        results=(SentResult(call_id="c1", name="get_weather", text="sunny"),),
    )
    assert (asked.system, asked.messages) == (SYSTEM, 4)


def test_responses_request() -> None:
    body = {
        "instructions": SYSTEM,
        "input": [
            {"role": "user", "content": "Paris?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [{"type": "function", "name": "get_weather"}, {"type": "web_search"}],
    }
    asked = read_request("openai.responses", json.dumps(body))
    assert asked == Asked(
        instructions=SYSTEM,
        turns=(
            Turn(role="user", text="Paris?"),
            Turn(role="assistant", text="get_weather({})"),
            Turn(role="tool", text="sunny"),
        ),
        tools=("get_weather", "web_search"),
        results=(SentResult(call_id="c1", name="get_weather", text="sunny"),),
    )
    assert (asked.system, asked.messages) == (SYSTEM, 3)
    plain = read_request("openai.responses", json.dumps({"input": "Paris?"}))
    assert (plain.messages, plain.results) == (1, ())


def test_anthropic_request() -> None:
    body = {
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": [
            {"role": "user", "content": "Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w"}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "no data"}],
                        "is_error": True,
                    }
                ],
            },
        ],
        "tools": [{"name": "w", "input_schema": {}}],
    }
    asked = read_request("anthropic.messages", json.dumps(body))
    assert asked == Asked(
        instructions=SYSTEM,
        turns=(
            Turn(role="user", text="Paris?"),
            Turn(role="assistant", text="w()"),
            Turn(role="tool", text="no data"),
        ),
        tools=("w",),
        results=(SentResult(call_id="t1", name="w", text="no data", error=True),),
    )
    assert (asked.system, asked.messages) == (SYSTEM, 3)


def test_gemini_request() -> None:
    body = {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Paris?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "w", "response": {"result": "sunny"}}}],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "w"}, {"name": "t"}]}],
    }
    asked = read_request("gemini.generate", json.dumps(body))
    assert asked == Asked(
        instructions=SYSTEM,
        turns=(
            Turn(role="user", text="Paris?"),
            Turn(role="model", text="w({})"),
            Turn(role="tool", text='{"result": "sunny"}'),
        ),
        tools=("w", "t"),
        results=(SentResult(call_id=None, name="w", text='{"result": "sunny"}'),),
    )
    assert (asked.system, asked.messages) == (SYSTEM, 3)


def test_a_gemini_request_whose_tools_is_one_object_offers_its_tools() -> None:
    """No recording sends ``tools`` as one object (the API takes it, as a repeated field in
    JSON may be): a real request (Google ADK's, tests/corpus/gemini.json) with its list
    replaced by the one tool object it holds offers the same tools."""
    request = CORPUS["adk_parallel_calls_without_id"]["request"]
    (tool,) = request["tools"]
    listed = read_request("gemini.generate", json.dumps(request))
    single = read_request("gemini.generate", json.dumps({**request, "tools": tool}))
    assert listed.tools == ("get_weather",)
    assert single == listed


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)
SHAPED = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(
        ("messages", "input", "contents", "tools", "system", "systemInstruction"), JSON
    ),
)


@given(
    api=st.sampled_from(["openai.chat", "openai.responses", "anthropic.messages", "gemini.x"]),
    body=JSON | SHAPED,
)
def test_a_request_of_any_shape_is_read_without_raising(api: str, body: Any) -> None:
    asked = read_request(api, json.dumps(body))
    assert asked.messages == len(asked.turns)
    assert all(isinstance(name, str) and name for name in asked.tools)
    shown = asked.conversation  # what the report and a miss show: the same turns, in order
    assert shown[len(shown) - len(asked.turns) :] == asked.turns
    assert all(isinstance(turn.text, str) and turn.shown for turn in shown)


@pytest.mark.parametrize("body", [None, b"\xff\xfe", "not json", "[1, 2]"])
def test_a_body_that_is_no_request_asks_nothing(body: Any) -> None:
    assert read_request("openai.chat", body) == Asked()


# Calls matched to the results the application sent back.

RESPONSES = "https://api.openai.com/v1/responses"


def responses_output(*items: dict[str, Any]) -> dict[str, Any]:
    return {"object": "response", "model": "gpt-4.1", "status": "completed", "output": items}


def test_responses_trajectory_matches_results_by_call_id() -> None:
    call = {"type": "function_call", "call_id": "c9", "name": "get_weather"}
    call["arguments"] = '{"city": "Paris"}'
    text = {"type": "output_text", "text": "Sunny."}
    first = {"instructions": SYSTEM, "input": "Paris?", "tools": [{"name": "get_weather"}]}
    second = {
        "instructions": SYSTEM,
        "input": [call, {"type": "function_call_output", "call_id": "c9", "output": "sunny"}],
    }
    trajectory = from_traffic(
        [
            seen(RESPONSES, first, responses_output(call)),
            seen(RESPONSES, second, responses_output({"type": "message", "content": [text]})),
        ]
    )
    found = trajectory.assert_called("get_weather", {"city": "Paris"})
    assert (found.id, found.result, found.request, found.ok) == ("c9", "sunny", 1, True)
    assert [r.tools for r in trajectory.requests] == [("get_weather",), ()]
    assert trajectory.requests[1].answer.text == "Sunny."
    assert trajectory.requests[0].endpoint == RESPONSES


ANTHROPIC = "https://api.anthropic.com/v1/messages"


def anthropic_reply(*blocks: dict[str, Any], stop: str) -> dict[str, Any]:
    usage = {"input_tokens": 5, "output_tokens": 3}
    reply = {"type": "message", "model": "claude-x", "role": "assistant"}
    return {**reply, "content": list(blocks), "stop_reason": stop, "usage": usage}


def test_anthropic_trajectory_keeps_a_result_marked_as_an_error() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    question = {"role": "user", "content": "Oslo?"}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no data"}
    second = {
        "messages": [
            question,
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{**result, "is_error": True}]},
        ]
    }
    trajectory = from_traffic(
        [
            seen(ANTHROPIC, {"messages": [question]}, anthropic_reply(use, stop="tool_use")),
            seen(ANTHROPIC, second, anthropic_reply({"type": "text", "text": "?"}, stop="x")),
        ]
    )
    (call,) = trajectory.calls_of("get_weather")
    assert (call.ok, call.error, call.result) == (False, "no data", "no data")
    assert "ERROR no data" in trajectory.table()


GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"


def gemini_reply(*parts: dict[str, Any]) -> dict[str, Any]:
    content = {"role": "model", "parts": list(parts)}
    return {"candidates": [{"content": content, "finishReason": "STOP"}]}


def weather(city: str) -> dict[str, Any]:
    return {"functionCall": {"name": "get_weather", "args": {"city": city}}}


def answer(text: str) -> dict[str, Any]:
    return {"functionResponse": {"name": "get_weather", "response": {"result": text}}}


def test_gemini_results_without_ids_are_matched_by_name_and_order() -> None:
    """Each request repeats the history: the k-th result of a tool answers its k-th call."""
    ask = {"role": "user", "parts": [{"text": "Paris, Rome, then Oslo?"}]}
    round_one = [
        {"role": "model", "parts": [weather("Paris"), weather("Rome")]},
        {"role": "user", "parts": [answer("sunny"), answer("rain")]},
    ]
    round_two = [
        {"role": "model", "parts": [weather("Oslo")]},
        {"role": "user", "parts": [answer("snow")]},
    ]
    trajectory = from_traffic(
        [
            seen(GEMINI, {"contents": [ask]}, gemini_reply(weather("Paris"), weather("Rome"))),
            seen(GEMINI, {"contents": [ask, *round_one]}, gemini_reply(weather("Oslo"))),
            seen(GEMINI, {"contents": [ask, *round_one, *round_two]}, gemini_reply({"text": "."})),
        ]
    )
    results = {call.arguments["city"]: call.result for call in trajectory.tool_calls}  # type: ignore[index]
    assert results == {
        "Paris": '{"result": "sunny"}',
        "Rome": '{"result": "rain"}',
        "Oslo": '{"result": "snow"}',
    }
    assert [call.request for call in trajectory.tool_calls] == [1, 1, 2]
    assert trajectory.requests[0].model == "gemini-2.5-flash"


def test_a_call_whose_result_was_never_sent_has_none() -> None:
    trajectory = from_traffic([seen(GEMINI, {"contents": []}, gemini_reply(weather("Lima")))])
    (call,) = trajectory.tool_calls
    assert call.result is None
    assert "(no result sent)" in trajectory.table()


def test_pydantic_ai_results_with_its_own_ids_answer_gemini_calls_without_ids() -> None:
    """Gemini's three calls carry no id; pydantic-ai sends each result with an id of its own
    (``pyd_ai_...``): each answers, by name and in order, the call of its tool."""
    trajectory = from_traffic(
        [recorded("gemini_tool_calls_without_id"), recorded("gemini_results_with_own_ids")]
    )
    calls = trajectory.calls_of("generate_topic")
    assert [(call.id, call.request) for call in calls] == [(None, 1)] * 3 + [(None, 2)]
    assert [call.result for call in calls] == [
        '{"return_value": "golf"}',
        '{"return_value": "golf"}',
        '{"return_value": "penguins"}',
        None,  # the call of the second reply: its result came in a request not recorded here
    ]
    assert trajectory.table().count("(no result sent)") == 1


def test_adk_results_without_ids_answer_parallel_gemini_calls_by_name() -> None:
    """Google ADK sends Gemini's two parallel calls back without ids, and their results
    without ids: the k-th result of get_weather answers its k-th call."""
    trajectory = from_traffic(
        [recorded("adk_parallel_calls_without_id"), recorded("adk_results_by_name")]
    )
    new_york = trajectory.assert_called("get_weather", {"city": "New York"})
    london = trajectory.assert_called("get_weather", {"city": "London"})
    assert (new_york.id, london.id) == (None, None)
    assert "The weather in New York is sunny" in (new_york.result or "")
    assert "The weather in London is sunny" in (london.result or "")
    assert "(no result sent)" not in trajectory.table()


def gemini_call(city: str, call_id: str | None = None) -> dict[str, Any]:
    call = weather(city)["functionCall"]
    return {"functionCall": {**call, "id": call_id} if call_id else call}


def gemini_answer(text: str, call_id: str | None = None) -> dict[str, Any]:
    result = answer(text)["functionResponse"]
    return {"functionResponse": {**result, "id": call_id} if call_id else result}


@pytest.mark.parametrize(
    ("asked", "sent", "results"),
    [
        pytest.param(
            [gemini_call("Paris", "g1"), gemini_call("Rome")],
            [gemini_answer("sunny", "g1"), gemini_answer("rain")],
            ["sunny", "rain"],
            id="one-by-id-one-by-name",
        ),
        pytest.param(
            [gemini_call("Paris", "g1"), gemini_call("Rome")],
            [gemini_answer("rain"), gemini_answer("sunny", "g1")],
            ["sunny", "rain"],
            id="by-name-before-by-id",
        ),
        pytest.param(
            [gemini_call("Paris", "g1")],
            [gemini_answer("sunny")],
            ["sunny"],
            id="a-call-with-an-id-answered-by-name",
        ),
        pytest.param(
            [gemini_call("Paris", "g1")],
            [gemini_answer("sunny", "own-1")],
            [None],
            id="the-client's-own-id-never-answers-a-call-with-an-id",
        ),
    ],
)
def test_gemini_results_answer_by_id_else_by_name(
    asked: list[dict[str, Any]], sent: list[dict[str, Any]], results: list[str | None]
) -> None:
    """A result answers the call its id names; else, by name, a call without an id (or, a
    result without an id, a call no result names by id)."""
    ask = {"role": "user", "parts": [{"text": "Paris and Rome?"}]}
    history = [ask, {"role": "model", "parts": asked}, {"role": "user", "parts": sent}]
    trajectory = from_traffic(
        [
            seen(GEMINI, {"contents": [ask]}, gemini_reply(*asked)),
            seen(GEMINI, {"contents": history}, gemini_reply({"text": "."})),
        ]
    )
    shown = [call.result and json.loads(call.result)["result"] for call in trajectory.tool_calls]
    assert shown == results


def test_a_result_whose_id_no_call_has_answers_no_call_that_has_one() -> None:
    """Chat Completions: a result for a call outside the traffic does not answer another
    call of the same tool by name (its call has an id of its own)."""
    chat = "https://api.openai.com/v1/chat/completions"

    def asking(call_id: str) -> dict[str, Any]:
        use = {"id": call_id, "type": "function", "function": {"name": "w", "arguments": "{}"}}
        return {"role": "assistant", "content": None, "tool_calls": [use]}

    earlier = [asking("c0"), {"role": "tool", "tool_call_id": "c0", "content": "sunny"}]
    first = {"object": "chat.completion", "choices": [{"message": asking("c1")}]}
    done = {"object": "chat.completion", "choices": [{"message": {"content": "ok"}}]}
    trajectory = from_traffic(
        [seen(chat, {"messages": []}, first), seen(chat, {"messages": earlier}, done)]
    )
    assert trajectory.requests[1].results[0].name == "w"
    assert [(call.id, call.result) for call in trajectory.tool_calls] == [("c1", None)]


def test_filters_narrow_the_trajectory_and_say_so() -> None:
    weather_call = responses_output(
        {"type": "function_call", "call_id": "a", "name": "get_weather", "arguments": "{}"}
    )
    refund = responses_output(
        {"type": "function_call", "call_id": "b", "name": "refund", "arguments": "{}"}
    )
    trajectory = from_traffic(
        [
            seen(RESPONSES, {"instructions": SYSTEM, "input": "?"}, weather_call),
            seen(GEMINI, {"systemInstruction": {"parts": [{"text": "Billing."}]}}, refund),
        ]
    )
    assert trajectory.filter(system="weather").tools_called == ["get_weather"]
    assert trajectory.filter(endpoint="googleapis").tools_called == ["refund"]
    assert trajectory.filter(model="gpt-4.1").request_count == 2
    assert trajectory.filter(model="gpt-4").requests == ()
    narrowed = trajectory.filter(system="Billing").filter(endpoint="/responses")
    with pytest.raises(AssertionError) as failed:
        narrowed.assert_called("refund")
    assert str(failed.value).splitlines()[:2] == [
        "expected refund to be called; it was never called.",
        "the application's model traffic (system 'Billing'; endpoint '/responses'): 0 request(s)",
    ]


# Issue 42, on real Responses bodies (``tests/corpus/responses.json``): the tools the provider
# ran itself are not the application's calls, and what a request sends back for them (a tool
# search's items, a hosted tool's item) is no result of the application's calls.


def corpus_seen(case: str, request: dict[str, Any] | None = None) -> Seen:
    """The corpus record as the cassette hands it to the watch (its request, or ``request``)."""
    record = CORPUS[case]
    body = json.dumps(request or record["request"] or {}).encode()
    headers = {"content-type": [record["content_type"]]}
    found = recognise(record["uri"], body, 200, headers, record["response"].encode())
    assert found is not None, case
    return Seen(found=found, uri=record["uri"], replayed=True, request=body, latency_s=None)


def test_a_tool_the_provider_ran_is_an_event_not_a_tool_call() -> None:
    trajectory = from_traffic([corpus_seen("responses_mcp_call")])
    assert trajectory.tool_calls == ()
    listed, called = trajectory.events
    assert (listed.request, listed.kind, listed.name) == (1, "provider tool", "mcp_list_tools")
    assert json.loads(listed.raw_arguments)["server_label"] == "test_server"
    assert (called.request, called.kind, called.detail) == (1, "provider tool", "get_my_games({})")
    assert trajectory.requests[0].provider_tool_calls == ["mcp_list_tools", "get_my_games"]
    assert trajectory.requests[0].tool_calls == []
    with pytest.raises(AssertionError) as failed:
        trajectory.assert_called("get_my_games")
    shown = str(failed.value)
    assert shown.startswith("expected get_my_games to be called; it was never called.")
    assert "[provider tool]" in shown
    assert "get_my_games({})" in shown  # the table shows what the provider ran
    row = json.loads(trajectory_property(trajectory, "t::mcp")[1])  # the report's run row
    assert (row["tools"], row["events"]) == ([], {"provider tool": 2})


def test_hosted_tool_items_sent_back_are_no_results() -> None:
    """The application sends the web search the provider ran back in its next request's
    input (as a history kept without ``previous_response_id`` is sent): a turn, no result."""
    first = corpus_seen("responses_web_search_call")
    output = json.loads(CORPUS["responses_web_search_call"]["response"])["output"]
    question = CORPUS["responses_web_search_call"]["request"]["input"]
    again = {"model": "gpt-4o", "input": [*question, *output, {"role": "user", "content": "?"}]}
    second = corpus_seen("responses_web_search_call", again)
    trajectory = from_traffic([first, second])
    assert trajectory.requests[1].results == ()
    assert trajectory.requests[1].messages == len(again["input"])
    assert trajectory.tool_calls == ()
    assert [e.request for e in trajectory.events] == [1, 2]


def test_a_tool_search_sent_back_is_no_result_of_the_applications_calls() -> None:
    """pydantic-ai's second request sends its function call's output, then a tool search of
    its own (``execution: "client"``, ``tool_search_call`` and ``tool_search_output``): only
    the function call's output is a result, and it answers the call the first reply made."""
    trajectory = from_traffic(
        [
            corpus_seen("responses_function_call"),
            corpus_seen("responses_tool_search_items_in_request"),
        ]
    )
    (result,) = trajectory.requests[1].results
    assert (result.name, result.text) == ("load_capability", "{}")
    assert [(c.name, c.request, c.result) for c in trajectory.tool_calls] == [
        ("load_capability", 1, "{}"),
        ("lookup_refund_policy", 2, None),
    ]
    assert trajectory.events == ()
    sent = json.dumps(CORPUS["responses_tool_search_items_in_request"]["request"])
    roles = [turn.role for turn in read_request("openai.responses", sent).turns]
    assert roles == ["user", "assistant", "tool", "tool_search_call", "tool_search_output"]


def test_a_tool_search_the_provider_ran_is_an_event_plain_or_streamed() -> None:
    for case in ("responses_tool_search_call", "responses_stream_tool_search_call"):
        trajectory = from_traffic([corpus_seen(case)])
        assert trajectory.tools_called == ["get_weather"]
        (searched,) = trajectory.events
        assert searched.detail == 'tool_search_call({"paths": ["get_weather"]})'
        assert trajectory.requests[0].answer.finish_reason == "tool_calls"


def test_an_empty_trajectory_fails_every_positive_assertion() -> None:
    empty = TrafficTrajectory()
    empty.assert_not_called("anything")
    empty.assert_requests_at_most(0)
    with pytest.raises(AssertionError, match=r"expected x to be called 1 time\(s\); it was 0"):
        empty.assert_called_times("x", 1)
    with pytest.raises(AssertionError, match=r"(?s)the order was \[\].*\(no tool calls\)"):
        empty.assert_order("x")


def test_run_and_traffic_share_the_assertions_and_the_table() -> None:
    trajectory = from_traffic([seen(GEMINI, {"contents": []}, gemini_reply(weather("Lima")))])
    assert type(trajectory).assert_called is Run.assert_called
    assert type(trajectory).table is Run.table
    with pytest.raises(AssertionError) as failed:
        trajectory.assert_requests_at_most(0)
    text = str(failed.value)
    assert text.startswith("expected at most 0 model requests; the application made 1.")
    assert "request  tool         arguments         result or error    time" in text


# End to end: an agent loop over the OpenAI SDK, recorded then replayed.


def agent_model(body: dict[str, Any]) -> Reply:
    """Weather asks for two tools, billing for one; after the results, an answer (and with
    no tools offered, a plain one)."""
    messages = body["messages"]
    if not body.get("tools"):
        return Reply(content="Hello.")
    if messages[-1]["role"] == "tool":
        sent = [m["content"] for m in messages if m["role"] == "tool"]
        return Reply(content="Found: " + ", ".join(sent))
    if "billing" in messages[0]["content"]:
        return Reply(tool_calls=[ToolCallSpec(name="refund", arguments={"order": "A-1"})])
    return Reply(
        content=None,
        tool_calls=[
            ToolCallSpec(name="get_weather", arguments={"city": "Paris"}),
            ToolCallSpec(name="get_time", arguments={"city": "Paris"}),
        ],
    )


AGENT = '''
import json
import openai
from conftest import KEY, URL

RESULTS = {"get_weather": "sunny", "get_time": "noon", "refund": "refunded"}


def tool(name):
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def ask(client, stream, **request):
    """The assistant message, as a dict; streamed chunks added up."""
    if not stream:
        return client.chat.completions.create(**request).choices[0].message.model_dump()
    message = {"role": "assistant", "content": "", "tool_calls": []}
    for chunk in client.chat.completions.create(stream=True, **request):
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is None:
            continue
        message["content"] += delta.content or ""
        for part in delta.tool_calls or []:
            if part.index == len(message["tool_calls"]):
                message["tool_calls"].append(
                    {"id": part.id, "type": "function", "function": {"name": "", "arguments": ""}}
                )
            function = message["tool_calls"][part.index]["function"]
            function["name"] += part.function.name or ""
            function["arguments"] += part.function.arguments or ""
    return message


def agent(question, *, system, tools, model="gpt-4o-mini", stream=False):
    """A hand-written tool loop: ask, run the tools asked for, send their results back."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    with openai.OpenAI(base_url=URL, api_key=KEY) as client:
        for _ in range(5):
            offered = [tool(name) for name in tools]
            message = ask(client, stream, model=model, messages=messages, tools=offered)
            calls = message.get("tool_calls") or []
            if not calls:
                return message["content"]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                result = RESULTS[call["function"]["name"]]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the agent never answered")
'''

TESTS = """
import pytest
from agent import agent

WEATHER = "You are the weather agent."


@pytest.mark.harness
@pytest.mark.parametrize("stream", [False, True])
def test_weather(harness, stream):
    answer = agent("Paris?", system=WEATHER, tools=["get_weather", "get_time"], stream=stream)
    assert answer == "Found: sunny, noon"
    trajectory = harness.trajectory
    call = trajectory.assert_called("get_weather", {"city": "Paris"})
    assert (call.result, call.request) == ("sunny", 1)
    assert trajectory.assert_called("get_time", lambda a: a["city"] == "Paris").result == "noon"
    trajectory.assert_order("get_weather", "get_time")
    trajectory.assert_called_times("get_weather", 1)
    trajectory.assert_not_called("refund")
    trajectory.assert_requests_at_most(2)
    assert trajectory.tools_called == ["get_weather", "get_time"]
    first, second = trajectory.requests
    assert (first.tools, first.system, first.messages, second.messages) == (
        ("get_weather", "get_time"), WEATHER, 2, 5)
    assert (first.model, first.streamed, first.tool_calls) == (
        "gpt-4o-mini", stream, ["get_weather", "get_time"])
    assert first.endpoint.endswith("/chat/completions")
    assert second.answer.text == "Found: sunny, noon"


@pytest.mark.harness
def test_two_agents(harness):
    agent("Paris?", system=WEATHER, tools=["get_weather", "get_time"])
    agent("Order A-1?", system="You are the billing agent.", tools=["refund"], model="gpt-4o")
    trajectory = harness.trajectory
    assert trajectory.tools_called == ["get_weather", "get_time", "refund"]
    billing = trajectory.filter(system="billing")
    assert billing.tools_called == ["refund"]
    assert billing.assert_called("refund", {"order": "A-1"}).result == "refunded"
    assert trajectory.filter(model="gpt-4o-mini").request_count == 2
    trajectory.filter(model="gpt-4o").assert_requests_at_most(2)


@pytest.mark.harness
def test_wrong_city(harness):
    agent("Paris?", system=WEATHER, tools=["get_weather", "get_time"])
    harness.trajectory.assert_called("get_weather", {"city": "Rome"})


@pytest.mark.harness
def test_no_tools(harness):
    assert agent("Hello?", system="You are the billing agent.", tools=[]) == "Hello."
"""


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(agent_model) as server:
        yield server


@pytest.fixture
def project(pytester: pytest.Pytester, model_server: LoopbackServer) -> pytest.Pytester:
    pytester.makeini("[pytest]\nharness_record_failed = true\n")
    pytester.makeconftest(f"URL = {model_server.url!r}\nKEY = 'sk-loopback-0123456789'\n")
    pytester.makepyfile(agent=AGENT, test_agents=TESTS)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_agent_loop_trajectory_records_then_replays(
    project: pytest.Pytester, model_server: LoopbackServer
) -> None:
    run(project, "--harness-live").assert_outcomes(passed=4, failed=1)
    assert len(model_server.requests) == 11
    model_server.stop()

    result = run(project, "--harness-report=report.json")  # the server is gone
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            '*AssertionError: expected get_weather to be called with {"city": "Rome"};'
            " it was called 1 time(s).",
            "*the application's model traffic: 2 request(s)",
            "*request  tool         arguments          result or error    time",
            '*1  get_weather  {"city": "Paris"}  sunny',
            '*1  get_time     {"city": "Paris"}  noon',
        ]
    )
    result.stdout.fnmatch_lines(["*pytest-harness agent runs*", "*test_weather*traffic*"])
    runs = json.loads((project.path / "report.json").read_text())["runs"]
    rows = {row["test"].partition("::")[2]: row for row in runs}
    assert sorted(rows) == [
        "test_two_agents",
        "test_weather[False]",
        "test_weather[True]",
        "test_wrong_city",
    ]  # no row for the test whose model asked for no tool
    row = rows["test_weather[True]"]
    assert (row["source"], row["tools"], row["requests"], row["stop_reason"]) == (
        "traffic",
        ["get_weather", "get_time"],
        2,
        None,
    )
    assert row["answer"] == "Found: sunny, noon"
    assert row["recorded_time"] is not None
    assert [(s["tool"], s["result"]) for s in row["steps"]] == [
        ("get_weather", "sunny"),
        ("get_time", "noon"),
    ]
    assert rows["test_wrong_city"]["test_outcome"] == "failed"


def test_html_report_shows_the_traffic_beside_the_runs(project: pytest.Pytester) -> None:
    run(project, "--harness-live", "-k", "weather and False", "--harness-report=r.html")
    html = (project.path / "r.html").read_text()
    assert "Agent runs" in html
    section = html[html.index("Agent runs") :]
    for shown in ("traffic", "get_weather", "sunny", "Found: sunny, noon"):
        assert shown in section
