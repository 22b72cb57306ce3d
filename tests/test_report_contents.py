"""What the session report says a test did, in its JSON: each test's outcome beside its
records, an agent run's question, steps and answer, the application's own model calls (the
messages sent, the response, tokens, latency) and, in replay, the latencies recorded.

Real runs throughout: pytest sessions (pytester) whose judges and applications call a
loopback model server, the orchestrator on that server, and the traffic watch fed what the
cassette reads from real response bodies. The HTML drawn from these records is checked in
Chromium by ``test_report_html``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_harness import complete
from pytest_harness._cassettes.slot import Seen
from pytest_harness._model.response import ModelResponse
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.watch import CALLS_PROPERTY, MAX_CALLS, TrafficWatch
from pytest_harness._report.session import run_property
from pytest_harness._report.tribunals import records_in
from pytest_harness._wire import recognise
from pytest_harness.orchestrator import Orchestrator, tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every call

KEY = "sk-app-secret-0123456789abcdef"


def report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the test project with a JSON report; the result and the report."""
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-report=report.json", *args)
    return result, json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))


# Each test's outcome, beside its records.

JUDGED = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule
from conftest import URL

pytestmark = pytest.mark.harness(cassette=False)


class Judge(Agent):
    model = "openai/judge"
    params = {"api_base": URL, "api_key": "loopback-not-a-secret"}
    output = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}
    instructions = "Is this reply good?"


class Panel(Tribunal):
    agents = [Judge]

    @rule("unanimous")
    def passed(result):
        return result.processed["pass"]


def test_passes(harness):
    harness.assert_verdict(Panel, "good")

def test_fails(harness):
    harness.assert_verdict(Panel, "bad")

@pytest.mark.xfail(reason="a known gap")
def test_expected_to_fail(harness):
    harness.assert_verdict(Panel, "bad")

@pytest.mark.xfail(reason="fixed since")
def test_unexpectedly_passes(harness):
    harness.assert_verdict(Panel, "good")

def test_skipped_after_judging(harness):
    harness.assert_verdict(Panel, "good")
    pytest.skip("the rest needs a database")

@pytest.fixture
def broken():
    yield
    raise RuntimeError("the teardown broke")

def test_teardown_errors(harness, broken):
    harness.assert_verdict(Panel, "good")

def test_without_records():
    pass
"""

OUTCOMES = {
    "test_judged.py::test_passes": "passed",
    "test_judged.py::test_fails": "failed",
    "test_judged.py::test_expected_to_fail": "xfailed",
    "test_judged.py::test_unexpectedly_passes": "xpassed",
    "test_judged.py::test_skipped_after_judging": "skipped",
    "test_judged.py::test_teardown_errors": "error",
}


def judge(body: Mapping[str, Any]) -> Reply:
    """Pass a reply that says ``good``."""
    return Reply(content=json.dumps({"pass": "good" in body["messages"][-1]["content"]}))


def test_each_tests_outcome_is_in_the_json_and_the_table_beside_its_records(
    pytester: pytest.Pytester,
) -> None:
    with LoopbackServer(judge) as judges:
        pytester.makeconftest(f"URL = {judges.url!r}\n")
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        pytester.makepyfile(test_judged=JUDGED)
        result, data = report(pytester)
    result.assert_outcomes(passed=3, failed=1, xfailed=1, xpassed=1, skipped=1, errors=1)
    assert {t["test"]: t["outcome"] for t in data["tests"]} == OUTCOMES  # none without records
    verdicts = {r["test"]: (r["outcome"], r["test_outcome"]) for r in data["tribunals"]}
    assert verdicts["test_judged.py::test_fails"] == ("fail", "failed")
    assert verdicts["test_judged.py::test_expected_to_fail"] == ("fail", "xfailed")
    assert all(u["test_outcome"] == OUTCOMES[u["test"]] for u in data["usage"])
    result.stdout.fnmatch_lines(
        ["*pytest-harness tribunals*", "*test_expected_to_fail*xfailed*Panel*fail*0/1*"]
    )


# An agent run: its question, each step and the answer.


@tool
def lookup(order: str) -> dict[str, str]:
    """Look an order up.

    Args:
        order: the order number.
    """
    if order != "42":
        raise LookupError(f"no order {order}")
    return {"order": order, "status": "shipped"}


def asks(*orders: str, text: str | None = None) -> Reply:
    calls = [ToolCallSpec(name="lookup", arguments={"order": order}) for order in orders]
    return Reply(content=text, tool_calls=calls)


def test_an_agent_runs_record_holds_its_question_each_step_and_its_answer(
    server: LoopbackServer,
) -> None:
    server.queue(
        asks("42", "7", text="Let me look both orders up."),
        Reply(content="Order 42 has shipped; there is no order 7."),
    )
    agent = Orchestrator(server.model, [lookup], "You help with orders.", params=server.params)
    run = agent.run("Where are orders 42 and 7?")
    _, value = run_property(run, "t::run")
    data = json.loads(value)
    assert data["question"] == "Where are orders 42 and 7?"  # not the system prompt
    assert data["answer"] == "Order 42 has shipped; there is no order 7."
    assert [(s["kind"], s["request"], s.get("tool")) for s in data["steps"]] == [
        ("message", 1, None),
        ("tool", 1, "lookup"),
        ("tool", 1, "lookup"),
    ]  # the answer is not a step again
    message, found, missing = data["steps"]
    assert message["text"] == "Let me look both orders up."
    assert (found["arguments"], found["result"]) == (
        '{"order": "42"}',
        '{"order":"42","status":"shipped"}',
    )
    assert missing["result"] is None
    assert "no order 7" in missing["error"]
    assert data["recorded_time"] is None  # nothing was replayed
    assert data["time"] == round(run.wall_time, 3)


def test_a_long_answer_is_clipped_with_its_lines_kept(server: LoopbackServer) -> None:
    long = "first line\n" + "x" * 5000
    server.queue(Reply(content=long))
    run = Orchestrator(server.model, params=server.params).run("Say a lot")
    data = json.loads(run_property(run, None)[1])
    assert len(data["answer"]) == 2000
    assert data["answer"].startswith("first line\nxxx")
    assert data["answer"].endswith("x…")
    assert data["steps"] == []


# The application's own model calls.

CHAT = "http://127.0.0.1:8080/v1/chat/completions"


def chat_reply(content: str | None, *calls: str) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            for n, name in enumerate(calls)
        ]
    completion = {
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }
    return json.dumps(completion).encode()


def seen(
    question: str, reply: bytes, *, latency: float | None = None, replayed: bool = True
) -> Seen:
    """What the cassette shows the watch for one call of the application's."""
    request = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}
    ).encode()
    found = recognise(CHAT + "?api-version=1&key=secret", request, 200, {}, reply)
    assert found is not None
    return Seen(
        found, CHAT + "?api-version=1&key=secret", replayed, request=request, latency_s=latency
    )


def calls_in(watch: TrafficWatch) -> dict[str, Any]:
    (record,) = records_in(watch.finish(), CALLS_PROPERTY)
    return record


def test_each_application_call_is_recorded_with_what_it_sent_and_what_came_back() -> None:
    watch = TrafficWatch("t::app")
    watch.seen(seen("Where is my order?", chat_reply(None, "lookup"), latency=1.25))
    watch.seen(seen("And the refund?", chat_reply("It is on its way."), replayed=False))
    record = calls_in(watch)
    assert (record["test"], record["total"]) == ("t::app", 2)
    first, second = record["calls"]
    assert first == {
        "call": 1,
        "endpoint": CHAT,  # without the query, which may hold a key
        "api": "openai.chat",
        "model": "gpt-4o-mini",
        "replayed": True,
        "streamed": False,
        "request": [{"role": "user", "content": "Where is my order?"}],
        "response": None,
        "reasoning": None,
        "tool_calls": [{"name": "lookup", "arguments": "{}"}],
        "provider_tool_calls": [],
        "finish_reason": "stop",
        "prompt_tokens": 11,
        "completion_tokens": 3,
        "tokens": 14,
        "latency_s": 1.25,
        "latency_recorded": True,  # replayed: the recording's latency
        "problem": None,
    }
    assert second["response"] == "It is on its way."
    assert (second["latency_s"], second["latency_recorded"]) == (None, False)


def test_the_tools_the_provider_ran_are_recorded_apart_from_the_tool_calls() -> None:
    """Issue 42, on a real reply (``tests/corpus``): the web search OpenAI ran itself is no
    tool call of the application's, the reply finished, and the search is listed apart."""
    records = json.loads((Path(__file__).parent / "corpus" / "responses.json").read_text())
    record = next(r for r in records if r["case"] == "responses_web_search_call")
    request = json.dumps(record["request"]).encode()
    found = recognise(record["uri"], request, 200, {}, record["response"].encode())
    assert found is not None
    watch = TrafficWatch("t::search")
    watch.seen(Seen(found, record["uri"], True, request=request, latency_s=None))
    (call,) = calls_in(watch)["calls"]
    assert (call["tool_calls"], call["finish_reason"], call["problem"]) == ([], "stop", None)
    assert call["provider_tool_calls"] == [
        {
            "name": "web_search_call",
            "arguments": '{"query": "latest news in Iceland October 2023", "type": "search"}',
        }
    ]
    assert call["response"].startswith(found.response.text[:40])


def test_a_test_keeps_its_first_calls_and_counts_the_rest() -> None:
    watch = TrafficWatch("t::chatty")
    for number in range(MAX_CALLS + 5):
        watch.seen(seen(f"question {number}", chat_reply(f"answer {number}")))
    record = calls_in(watch)
    assert record["total"] == MAX_CALLS + 5
    assert [c["call"] for c in record["calls"]] == list(range(1, MAX_CALLS + 1))
    assert record["calls"][-1]["response"] == f"answer {MAX_CALLS - 1}"


def test_a_bad_reply_is_recorded_with_its_problem() -> None:
    watch = TrafficWatch("t::empty")
    watch.seen(seen("Hello?", chat_reply("")))
    (call,) = calls_in(watch)["calls"]
    assert call["response"] is None
    assert call["problem"] == "empty_response"


def test_a_known_secret_never_reaches_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_API_KEY", KEY)
    watch = TrafficWatch("t::leaky")
    watch.seen(seen(f"my key is {KEY}", chat_reply("noted")))
    text = dict(watch.finish())[CALLS_PROPERTY]
    assert KEY not in text
    assert json.loads(text)["calls"][0]["request"][0]["content"] == "my key is REDACTED"


def test_a_test_without_application_calls_has_no_calls_record() -> None:
    watch = TrafficWatch("t::quiet")
    watch.harness_response(ModelResponse(content="a judge's answer", model="m"))
    assert records_in(watch.finish(), CALLS_PROPERTY) == []


# Latency: in replay, the one recorded.


class Recorded:
    """A call hook that says what a cassette says of each reply in replay: no defect, and
    the latency recorded with it (the cassette's own hook, as far as the seam can tell)."""

    def __init__(self, *latencies: float) -> None:
        self.latencies = list(latencies)

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return kwargs

    def receive(self, kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse:
        return response

    def judged(self, kwargs: Mapping[str, Any]) -> scope.Judged:
        return scope.Judged(None, latency_s=self.latencies.pop(0))

    def translate(self, error: BaseException) -> BaseException | None:
        return None


def test_a_replayed_seam_call_reports_the_latency_recorded(server: LoopbackServer) -> None:
    server.queue(Reply(content="Paris"), Reply(content="Paris"))
    with scope.override(replay=True, call_hooks=(Recorded(2.5),)):
        replayed = complete("Capital of France?", model=server.model, **server.params)
    with scope.override(replay=False, call_hooks=(Recorded(2.5),)):
        live = complete("Capital of France?", model=server.model, **server.params)
    assert (replayed.latency_s, replayed.latency_recorded) == (2.5, True)
    assert live.latency_s < 2.5  # measured now: the recording's is for replay only
    assert not live.latency_recorded


def test_a_replayed_runs_recorded_time_adds_up_its_requests_recorded_latencies(
    server: LoopbackServer,
) -> None:
    server.queue(asks("42"), Reply(content="Order 42 has shipped."))
    agent = Orchestrator(server.model, [lookup], params=server.params)
    with scope.override(replay=True, call_hooks=(Recorded(1.5, 0.75),)):
        run = agent.run("Where is order 42?")
    assert run.recorded_time == 2.25
    data = json.loads(run_property(run, "t::replayed")[1])
    assert data["recorded_time"] == 2.25
    assert data["time"] < 2.25  # the replay's own time, beside it


# End to end: an application recorded, then replayed with the latencies its cassette kept.

APP = """
import openai
import pytest
from conftest import KEY, URL

SYSTEM = "You are a support bot."


def ask(question, *earlier):
    with openai.OpenAI(base_url=URL, api_key=KEY, max_retries=0) as client:
        messages = [{"role": "system", "content": SYSTEM}, *earlier,
                    {"role": "user", "content": question}]
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        return reply.choices[0].message.content


@pytest.mark.harness
def test_support_bot():
    first = ask("Where is my order?")
    ask("Thanks. And the refund?", {"role": "assistant", "content": first})


@pytest.mark.harness
def test_agent(harness):
    from pytest_harness.orchestrator import Orchestrator

    params = {"api_base": URL, "api_key": KEY}
    run = Orchestrator("openai/gpt-4o-mini", params=params).run("Is it late?")
    assert run.output == "echo: Is it late?"
"""
# Latencies a recording kept, per cassette file (each interaction in order).
LATENCIES = {"test_support_bot.yaml": (1.5, 0.81), "test_agent.yaml": (2.25,)}


def echo(body: Mapping[str, Any]) -> Reply:
    return Reply(content=f"echo: {body['messages'][-1]['content']}")


def test_a_replayed_test_shows_the_latencies_its_cassette_recorded(
    pytester: pytest.Pytester,
) -> None:
    with LoopbackServer(echo) as server:
        pytester.makeconftest(f"URL = {server.url!r}\nKEY = {KEY!r}\n")
        pytester.makepyfile(test_app=APP)
        result, recorded = report(pytester, "--harness-live")
    result.assert_outcomes(passed=2)
    (live,) = recorded["app_calls"]  # the agent's calls are the harness's: its run shows them
    assert live["test_outcome"] == "passed"
    first, second = live["calls"]
    assert first["endpoint"] == f"{server.url}/chat/completions"
    assert first["request"] == [
        {"role": "system", "content": "You are a support bot."},
        {"role": "user", "content": "Where is my order?"},
    ]
    assert first["response"] == "echo: Where is my order?"
    assert second["request"][-2:] == [
        {"role": "assistant", "content": "echo: Where is my order?"},
        {"role": "user", "content": "Thanks. And the refund?"},
    ]
    assert not any(call["latency_recorded"] for call in live["calls"])  # measured, live

    assert recorded["runs"][0]["recorded_time"] is None
    for cassette in (pytester.path / "cassettes").rglob("*.yaml"):
        stored = json.loads(cassette.read_text(encoding="utf-8"))
        latencies = LATENCIES[cassette.name]
        for interaction, latency in zip(stored["interactions"], latencies, strict=True):
            interaction["latency_s"] = latency  # as the recording keeps it
        cassette.write_text(json.dumps(stored, indent=2), encoding="utf-8")
    result, replayed = report(pytester)  # the server is gone: all from the cassettes
    result.assert_outcomes(passed=2)
    (run,) = replayed["runs"]
    assert (run["question"], run["answer"]) == ("Is it late?", "echo: Is it late?")
    assert run["recorded_time"] == 2.25
    assert run["time"] < 2.25  # the replay's own time, beside it
    (calls,) = replayed["app_calls"]
    assert [c["request"] for c in calls["calls"]] == [c["request"] for c in live["calls"]]
    assert [(c["latency_s"], c["latency_recorded"]) for c in calls["calls"]] == [
        (1.5, True),
        (0.81, True),
    ]


def test_a_session_without_records_has_empty_lists(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result, data = report(pytester)
    result.assert_outcomes(passed=1)
    assert data["tests"] == []
    assert data["app_calls"] == []
