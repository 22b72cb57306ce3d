"""``harness.trajectory`` read from agents on real frameworks, end to end.

Four pytest projects (pytester), each with a weather agent that has two tools
(``get_weather`` and ``get_time``) and a scripted loopback model that asks for both, then
answers with their results: an openai-agents ``Agent`` (Responses API, plain and streamed,
and on Chat Completions), a pydantic-ai ``Agent`` on ``OpenAIChatModel`` (plain and
streamed), and hand-written tool loops over the Anthropic and the google-genai SDKs (plain
and streamed). Each project is recorded with ``--harness-live`` against
``LoopbackServer``, then replayed with the server stopped and no API key; the same
trajectory assertions hold in both runs, and a deliberately failing one prints the table.

The projects run in subprocesses (``runpytest_subprocess``), as users run them. In this
process the frameworks' process-wide state would leak from one run into the next: openai-agents
keeps the thread's default event loop open between ``Runner.run_sync`` calls but shuts its
async generators down after each one, so the next run's first request warns
(ResourceWarning, an error under this suite's ``filterwarnings = error``, which in-process
runs inherit); and its default client is global.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

WEATHER = "You are the weather agent."
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a request sends back, in any of the four wire formats."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    texts = [m["content"] for m in messages if m.get("role") == "tool"]
    blocks = [b for m in messages if isinstance(m.get("content"), list) for b in m["content"]]
    texts += [b["content"] for b in blocks if b.get("type") == "tool_result"]
    items = body["input"] if isinstance(body.get("input"), list) else []
    texts += [i["output"] for i in items if i.get("type") == "function_call_output"]
    parts = [p for c in body.get("contents", []) for p in c.get("parts", [])]
    texts += [p["functionResponse"]["response"]["result"] for p in parts if "functionResponse" in p]
    return texts


def two_tools(body: dict[str, Any]) -> Reply:
    """Ask for the weather and the time in Paris; with their results, answer with them."""
    sent = tool_results(body)
    if sent:
        return Reply(content="Found: " + ", ".join(sent))
    return Reply(
        content=None,
        tool_calls=[
            ToolCallSpec(name="get_weather", arguments={"city": "Paris"}),
            ToolCallSpec(name="get_time", arguments={"city": "Paris"}),
        ],
    )


# Each project's tests: the agent answers, its trajectory is asserted, one assertion fails.
TRAJECTORY_TESTS = """
import pytest
from agent import WEATHER, ask


@pytest.mark.harness
@pytest.mark.parametrize("stream", [False, True])
def test_weather(harness, stream):
    assert ask("Weather and time in Paris?", stream=stream) == "Found: sunny, noon"
    trajectory = harness.trajectory
    weather = trajectory.assert_called("get_weather", {{"city": "Paris"}})
    assert (weather.result, weather.request) == ("{sunny}", 1)
    assert trajectory.assert_called("get_time", lambda a: a["city"] == "Paris").result == "{noon}"
    trajectory.assert_order("get_weather", "get_time")
    trajectory.assert_called_times("get_weather", 1)
    trajectory.assert_not_called("refund")
    trajectory.assert_requests_at_most(2)
    assert trajectory.tools_called == ["get_weather", "get_time"]
    first, second = trajectory.requests
    assert (first.api, first.model, first.streamed) == ("{api}", "{model}", stream)
    assert "{endpoint}" in first.endpoint
    assert (first.tools, first.system) == (("get_weather", "get_time"), WEATHER)
    assert [result.text for result in second.results] == ["{sunny}", "{noon}"]
    assert second.answer.text == "Found: sunny, noon"


@pytest.mark.harness
def test_wrong_city(harness):
    ask("Weather and time in Paris?")
    harness.trajectory.assert_called("get_weather", {{"city": "Rome"}})
"""


def trajectory_tests(
    api: str, model: str, endpoint: str, *, sunny: str = "sunny", noon: str = "noon"
) -> str:
    """The tests of a project whose agent speaks ``api`` to ``model`` at ``endpoint``."""
    return TRAJECTORY_TESTS.format(api=api, model=model, endpoint=endpoint, sunny=sunny, noon=noon)


OPENAI_AGENTS = '''
import asyncio

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from conftest import URL

WEATHER = "You are the weather agent."
set_tracing_disabled(True)  # nothing is sent to api.openai.com's trace ingestion


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@function_tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return "noon"


def weather_agent(chat=False):
    """The agent, on the Responses API (the SDK's default) or on Chat Completions."""
    client = AsyncOpenAI(base_url=URL)  # the key: OPENAI_API_KEY (replay needs none)
    set_default_openai_client(client, use_for_tracing=False)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    return Agent(
        name="weather",
        instructions=WEATHER,
        tools=[get_weather, get_time],
        model=model if chat else "gpt-4.1",
    )


def ask(question, *, stream=False, chat=False):
    agent = weather_agent(chat)
    if not stream:
        return Runner.run_sync(agent, question).final_output
    return asyncio.run(streamed(agent, question))


async def streamed(agent, question):
    result = Runner.run_streamed(agent, question)
    async for _ in result.stream_events():
        pass
    return result.final_output
'''

OPENAI_AGENTS_CHAT = """
import pytest
from agent import ask


@pytest.mark.harness
def test_chat_completions(harness):
    assert ask("Weather and time in Paris?", chat=True) == "Found: sunny, noon"
    trajectory = harness.trajectory
    assert trajectory.assert_called("get_time", {"city": "Paris"}).result == "noon"
    assert [request.api for request in trajectory.requests] == ["openai.chat"] * 2
    assert trajectory.requests[0].system == "You are the weather agent."
"""

PYDANTIC_AI = '''
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from conftest import URL

WEATHER = "You are the weather agent."


def weather_agent():
    provider = OpenAIProvider(base_url=URL)  # the key: OPENAI_API_KEY (replay needs none)
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), instructions=WEATHER)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    @agent.tool_plain
    def get_time(city: str) -> str:
        """The local time in a city."""
        return "noon"

    return agent


def ask(question, *, stream=False):
    agent = weather_agent()
    if not stream:
        return agent.run_sync(question).output
    with agent.run_stream_sync(question) as result:
        return result.get_output()
'''

ANTHROPIC = '''
import anthropic

from conftest import ROOT

WEATHER = "You are the weather agent."
RESULTS = {"get_weather": "sunny", "get_time": "noon"}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"name": name, "input_schema": CITY} for name in RESULTS]


def reply(client, stream, **request):
    """The model's message, whole or gathered from its stream."""
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        return events.get_final_message()


def ask(question, *, stream=False):
    """A hand-written tool loop: each tool_use answered by a tool_result of its id."""
    messages = [{"role": "user", "content": question}]
    with anthropic.Anthropic(base_url=ROOT) as client:  # the key: ANTHROPIC_API_KEY
        for _ in range(5):
            message = reply(
                client, stream, model="claude-sonnet-4-5", max_tokens=1024,
                system=WEATHER, tools=TOOLS, messages=messages,
            )
            uses = [block for block in message.content if block.type == "tool_use"]
            if not uses:
                return "".join(b.text for b in message.content if b.type == "text")
            messages.append({"role": "assistant", "content": message.content})
            results = [
                {"type": "tool_result", "tool_use_id": use.id, "content": RESULTS[use.name]}
                for use in uses
            ]
            messages.append({"role": "user", "content": results})
    raise AssertionError("the agent never answered")
'''

GEMINI = '''
from google import genai
from google.genai import types

from conftest import ROOT

WEATHER = "You are the weather agent."
RESULTS = {"get_weather": "sunny", "get_time": "noon"}
CITY = types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")})
TOOLS = [types.Tool(function_declarations=[
    types.FunctionDeclaration(name=name, parameters=CITY) for name in RESULTS
])]


def reply(client, stream, **request):
    """The parts of the model's answer, whole or gathered from its stream."""
    if not stream:
        return client.models.generate_content(**request).candidates[0].content.parts
    chunks = client.models.generate_content_stream(**request)
    return [part for chunk in chunks for part in chunk.candidates[0].content.parts or []]


def ask(question, *, stream=False):
    """A hand-written tool loop: each function_call answered by a function_response."""
    config = types.GenerateContentConfig(system_instruction=WEATHER, tools=TOOLS)
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    with genai.Client(http_options={"base_url": ROOT}) as client:  # the key: GEMINI_API_KEY
        for _ in range(5):
            parts = reply(
                client, stream, model="gemini-2.5-flash", contents=contents, config=config
            )
            calls = [part.function_call for part in parts if part.function_call]
            if not calls:
                return "".join(part.text or "" for part in parts)
            contents.append(types.Content(role="model", parts=parts))
            answers = [
                types.Part.from_function_response(
                    name=call.name, response={"result": RESULTS[call.name]}
                )
                for call in calls
            ]
            contents.append(types.Content(role="user", parts=answers))
    raise AssertionError("the agent never answered")
'''

# Gemini's results are the function_response's JSON (its own name for what the tool said).
GEMINI_RESULTS = {"sunny": '{"result": "sunny"}', "noon": '{"result": "noon"}'}


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(two_tools) as server:
        yield server


@pytest.fixture
def recording_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys for recording only: the replay runs with none of them."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    for name in KEYS[:3]:
        monkeypatch.setenv(name, "sk-loopback-0123456789")


def make_project(
    pytester: pytest.Pytester, server: LoopbackServer, agent: str, **tests: str
) -> pytest.Pytester:
    pytester.makeini("[pytest]\nharness_record_failed = true\n")
    pytester.makeconftest(f"URL = {server.url!r}\nROOT = {server.root!r}\n")
    pytester.makepyfile(agent=agent, **tests)
    return pytester


def record_then_replay(
    project: pytest.Pytester,
    server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
    *,
    requests: int,
    passed: int,
) -> pytest.RunResult:
    """Record against the server, stop it, drop the keys, replay; the replay's result."""
    run(project, "--harness-live").assert_outcomes(passed=passed, failed=1)
    assert len(server.requests) == requests
    server.stop()
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    result = run(project)
    result.assert_outcomes(passed=passed, failed=1)
    return result


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def table(sunny: str = "sunny", noon: str = "noon") -> list[str]:
    """The lines of a failed assertion on the weather agent's trajectory."""
    return [
        '*AssertionError: expected get_weather to be called with {"city": "Rome"};'
        " it was called 1 time(s).",
        "*the application's model traffic: 2 request(s)",
        "*request  tool*arguments*result or error*",
        f'*1  get_weather  {{"city": "Paris"}}  {sunny}*',
        f'*1  get_time     {{"city": "Paris"}}  {noon}*',
    ]


@pytest.mark.usefixtures("recording_keys")
def test_openai_agents_sdk(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Responses API, plain and streamed (``Runner.run_sync``, ``run_streamed``), then on
    Chat Completions (``OpenAIChatCompletionsModel``)."""
    tests = trajectory_tests("openai.responses", "gpt-4.1", "/v1/responses")
    project = make_project(
        pytester, model_server, OPENAI_AGENTS, test_agent=tests, test_chat=OPENAI_AGENTS_CHAT
    )
    result = record_then_replay(project, model_server, monkeypatch, requests=8, passed=3)
    result.stdout.fnmatch_lines(table())


@pytest.mark.usefixtures("recording_keys")
def test_pydantic_ai(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OpenAIChatModel`` with two ``tool_plain`` tools: ``run_sync``, ``run_stream_sync``."""
    tests = trajectory_tests("openai.chat", "gpt-4o-mini", "/v1/chat/completions")
    project = make_project(pytester, model_server, PYDANTIC_AI, test_agent=tests)
    result = record_then_replay(project, model_server, monkeypatch, requests=6, passed=2)
    result.stdout.fnmatch_lines(table())


@pytest.mark.usefixtures("recording_keys")
def test_anthropic_sdk_tool_loop(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``messages.create`` and ``messages.stream``: tool_use, then tool_result by id."""
    tests = trajectory_tests("anthropic.messages", "claude-sonnet-4-5", "/v1/messages")
    project = make_project(pytester, model_server, ANTHROPIC, test_agent=tests)
    result = record_then_replay(project, model_server, monkeypatch, requests=6, passed=2)
    result.stdout.fnmatch_lines(table())


@pytest.mark.usefixtures("recording_keys")
def test_google_genai_tool_loop(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``generate_content`` and ``generate_content_stream``: function_call, then
    function_response by name (Gemini's calls carry no id)."""
    escaped = {name: text.replace('"', '\\"') for name, text in GEMINI_RESULTS.items()}
    tests = trajectory_tests("gemini.generate", "gemini-2.5-flash", "enerateContent", **escaped)
    project = make_project(pytester, model_server, GEMINI, test_agent=tests)
    result = record_then_replay(project, model_server, monkeypatch, requests=6, passed=2)
    result.stdout.fnmatch_lines(table(*GEMINI_RESULTS.values()))
