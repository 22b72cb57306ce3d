"""The docs' examples recorded on the embedded model: they finish, every vote is read.

The README's first test, the tribunals and ready-made judges of ``docs/guides/tribunals.md``
and ``docs/guides/judges.md`` (their files as the pages give them), and an agent on each
framework ``docs/guides/agents.md`` shows that speaks Chat Completions, recorded with
``--harness-live --harness-model=local`` against the real llama.cpp server. A 270M base model
judges no better than chance, so what is asserted is what the harness owes: every judge's
reply is read into a vote (no judge error, no cut-off, no timeout), and every agent ends on
its own within a few requests. A test may still fail on what the model said; none may fail
for want of a vote. How long each took is the run's own business (``--durations``).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pytest_harness._local.route import DEFAULT_MAX_TOKENS

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
FILE = re.compile(r'^```python title="(?P<name>[^"]+)"\n(?P<code>.*?)^```', re.M | re.S)
RECORD = ("--harness-live", "--harness-model=local", "-p", "no:randomly", "-p", "no:cacheprovider")
# A failure that means a judge gave no vote (the harness's fault), not a poor one.
NO_VOTE = re.compile(r"JudgeOutputError|AgentTimeout|AllAgentsFailed|no verdict|cut off")


def write_page(pytester: pytest.Pytester, page: str) -> None:
    """The page's titled Python blocks, as the files of a project."""
    files = {m["name"]: m["code"] for m in FILE.finditer((ROOT / page).read_text())}
    assert files, f"{page} has no titled Python block"
    for name, code in files.items():
        (pytester.path / name).write_text(code)
    pytester.makeini("[pytest]\n")


@pytest.fixture(autouse=True)
def no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def test_the_readme_first_test_records_a_short_reply(pytester: pytest.Pytester) -> None:
    write_page(pytester, "README.md")
    pytester.runpytest_subprocess(*RECORD).assert_outcomes(passed=1)
    (cassette,) = (pytester.path / "cassettes").rglob("*.yaml")
    (interaction,) = json.loads(cassette.read_text())["interactions"]
    reply = interaction["response"]["body"]["json"]
    assert reply["model"] == "gemma-3-270m"
    assert reply["usage"]["completion_tokens"] <= DEFAULT_MAX_TOKENS


def votes_of(pytester: pytest.Pytester, page: str, *selected: str) -> list[dict[str, object]]:
    """Record the page's tests ``selected``; every tribunal run's record, once each test's
    failure, if any, is one of what the model said (not of a judge without a vote)."""
    write_page(pytester, page)
    report = pytester.path / "report.xml"
    result = pytester.runpytest_subprocess(
        *RECORD, "-o", "harness_record_failed=true", f"--junitxml={report}", *selected
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    cases = list(ElementTree.parse(report).iter("testcase"))
    assert cases
    records = []
    for case in cases:
        for failure in case.iter("failure"):
            assert not NO_VOTE.search(failure.get("message", "")), failure.get("message")
        records += [
            json.loads(p.get("value", ""))
            for p in case.iter("property")
            if p.get("name") == "harness_tribunal"
        ]
    return records


def test_the_tribunals_page_records_a_vote_from_every_judge(pytester: pytest.Pytester) -> None:
    records = votes_of(pytester, "docs/guides/tribunals.md", "test_support.py", "test_one_judge.py")
    assert [r["tribunal"] for r in records] == ["ReplyQuality"]
    assert all((r["errors"], r["votes_cast"]) == ([], r["judges"]) for r in records)


def test_the_ready_made_judges_record_a_vote_each(pytester: pytest.Pytester) -> None:
    records = votes_of(
        pytester,
        "docs/guides/judges.md",
        "test_rubric.py",
        "test_rag.py::test_the_answer_sticks_to_the_opening_hours",
        "test_reference.py::test_the_capital_matches_the_reference",
        "test_tools.py::test_the_weather_call_is_right",
        "test_pairwise.py",
    )
    tribunals = ["CoherentAnswer", "RagAnswer", "SameFacts", "ToolUse", "Comparison"]
    assert sorted(r["tribunal"] for r in records) == sorted(tribunals)
    assert all((r["errors"], r["votes_cast"]) == ([], r["judges"]) for r in records)


AGENTS = '''
import asyncio

import openai
from agents import Agent as SdkAgent, Runner, function_tool
from agents import set_default_openai_api, set_tracing_disabled
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel

WEATHER = "You answer questions about the weather."
RESULTS = {"get_weather": "sunny", "get_time": "noon"}

set_tracing_disabled(True)
set_default_openai_api("chat_completions")  # the embedded model speaks Chat Completions


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@function_tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return "noon"


weather = SdkAgent(name="weather", instructions=WEATHER, tools=[get_weather, get_time],
                   model="gpt-4.1")


def test_openai_agent(harness):
    result = asyncio.run(Runner.run(weather, "Weather and time in Paris?"))
    assert isinstance(result.final_output, str)
    harness.trajectory.assert_requests_at_most(3)


helper = Agent(instructions=WEATHER)  # its model is made in the test: it reads OPENAI_BASE_URL


@helper.tool_plain
def get_forecast(city: str) -> str:
    """The weather in a city."""
    return RESULTS["get_weather"]


@helper.tool_plain
def get_clock(city: str) -> str:
    """The local time in a city."""
    return RESULTS["get_time"]


def test_pydantic_ai_agent(harness):
    output = helper.run_sync("Weather and time in Paris?", model=OpenAIChatModel("gpt-4o-mini"))
    assert isinstance(output.output, str)
    harness.trajectory.assert_requests_at_most(3)


CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": CITY}} for n in RESULTS]


def ask(question):
    messages = [{"role": "system", "content": WEATHER}, {"role": "user", "content": question}]
    with openai.OpenAI() as client:
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = RESULTS[call.function.name]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def test_openai_loop(harness):
    assert isinstance(ask("Weather and time in Paris?"), str)
    harness.trajectory.assert_requests_at_most(3)
'''


def test_agents_on_every_chat_completions_framework_end(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_agents=AGENTS)
    pytester.runpytest_subprocess(*RECORD).assert_outcomes(passed=3)
