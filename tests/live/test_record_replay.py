"""Record from the real embedded model, then replay in a fresh process without network.

Runs in ``tox -e live`` (the ``local`` extra installed): plain, streamed and JSON-schema
calls are recorded from the llama.cpp server, then replayed with networking disabled
(``unshare -n`` where it works, else the harness's own network guard), and the replayed
``ModelResponse`` values must equal the recorded ones.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live

SUITE = """
import dataclasses, json, os, pathlib
from pytest_harness import complete

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "boolean"}},
          "required": ["verdict"]}

def dump(name, response):
    data = dataclasses.asdict(response)
    data.pop("latency_s")
    # In replay the latency is the recording's (and says so): compared apart.
    data["latency_recorded"] = [data.pop("latency_recorded"), response.latency_s > 0]
    out = pathlib.Path(os.environ["DUMP"])
    seen = json.loads(out.read_text()) if out.exists() else {}
    seen[name] = data
    out.write_text(json.dumps(seen, indent=1))

def test_plain():
    dump("plain", complete("Name a colour.", model="local", max_tokens=20))

def test_streamed():
    tokens = []
    response = complete("Count to three.", model="local", stream=True,
                        on_token=tokens.append, max_tokens=20)
    assert "".join(tokens) == response.content
    dump("streamed", response)

def test_json_schema():
    response = complete(
        [{"role": "system", "content": "Answer in JSON."},
         {"role": "user", "content": "Is the sky blue?"}],
        model="local", max_tokens=30,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "v", "schema": SCHEMA}},
    )
    assert isinstance(json.loads(response.content)["verdict"], bool)
    dump("json_schema", response)
"""

TRIBUNAL_SUITE = """
import json, os, pathlib
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

SCHEMA = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}

class Polite(Agent):
    model = "local"
    output = SCHEMA
    instructions = "Is this customer support reply polite? Answer in JSON."
    params = {"max_tokens": 20}

class Helpful(Polite):
    instructions = "Does this customer support reply offer help? Answer in JSON."

class Calm(Polite):
    instructions = "Is this customer support reply calm? Answer in JSON."

class Panel(Tribunal):
    agents = [Polite, Helpful, Calm]
    timeout = 120  # one llama.cpp server: the judges queue

    @rule("majority")
    def passed(result):
        return result.processed["pass"]

def test_panel(harness):
    verdict = harness.get_verdict(Panel, "Thanks for waiting! Your parcel ships today.")
    assert [vote.agent for vote in verdict.votes] == ["Polite", "Helpful", "Calm"]
    assert all(isinstance(vote.vote, bool) for vote in verdict.votes)
    seen = [(v.agent, v.vote, v.tokens, v.model) for v in verdict.votes]
    pathlib.Path(os.environ["DUMP"]).write_text(json.dumps([verdict.passed, seen]))
"""


def offline_command() -> list[str]:
    """``unshare -n`` (no network at all) when this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], check=False).returncode == 0:
        return [unshare, "-n"]
    return []


def test_recorded_responses_replay_identically_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_local=SUITE)
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live")
    recorded.assert_outcomes(passed=3)
    files = sorted(p.name for p in (pytester.path / "cassettes/test_local").iterdir())
    assert files == ["test_json_schema.yaml", "test_plain.yaml", "test_streamed.yaml"]

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    replayed.stdout.fnmatch_lines(["*3 passed*"])

    before = json.loads((pytester.path / "recorded.json").read_text())
    after = json.loads((pytester.path / "replayed.json").read_text())
    flags = {
        name: (before[name].pop("latency_recorded"), after[name].pop("latency_recorded"))
        for name in before
    }
    # Recorded: its own wall time. Replayed: the latency the cassette kept, labelled so.
    assert all(flag == ([False, True], [True, True]) for flag in flags.values()), flags
    assert after == before
    assert before["plain"]["content"]
    assert before["streamed"]["content"]
    assert before["streamed"]["finish_reason"] in ("stop", "length")


@pytest.mark.parametrize(
    ("model", "flags"),
    [("local", ()), ("gpt-4o-mini", ("--harness-model=local",))],
    ids=["agents-ask-local", "recorded-with-harness-model-local"],
)
def test_recorded_tribunal_replays_the_same_votes_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, model: str, flags: tuple[str, ...]
) -> None:
    """Replay needs no flag, whichever way the recording reached the embedded model."""
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_panel=TRIBUNAL_SUITE.replace('model = "local"', f"model = {model!r}"))
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-live", *flags
    ).assert_outcomes(passed=1)
    cassette = json.loads((pytester.path / "cassettes/test_panel/test_panel.yaml").read_text())
    assert len(cassette["interactions"]) == 3

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    recorded = json.loads((pytester.path / "recorded.json").read_text())
    assert json.loads((pytester.path / "replayed.json").read_text()) == recorded
    assert all(tokens > 0 for _, _, tokens, _ in recorded[1])


APP_SUITE = """
import json, os, pathlib
import litellm, openai, pytest

def ask(text, **options):
    with openai.OpenAI() as client:  # OPENAI_BASE_URL / OPENAI_API_KEY from the environment
        return client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": text}],
            max_tokens=16, temperature=0, seed=1, **options)

def dump(name, value):
    out = pathlib.Path(os.environ["DUMP"])
    seen = json.loads(out.read_text()) if out.exists() else {}
    seen[name] = value
    out.write_text(json.dumps(seen))

@pytest.mark.harness
def test_sdk_plain_and_streamed():
    text = ask("Name a fruit.").choices[0].message.content
    pieces = [c.choices[0].delta.content or "" for c in ask("Name a tree.", stream=True)
              if c.choices]
    dump("sdk", [text, "".join(pieces), os.environ["OPENAI_BASE_URL"].startswith("http://127.")])

LABEL = {"type": "object", "required": ["label"],
         "properties": {"label": {"type": "string", "enum": ["positive", "negative"]}}}
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "Today's weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}

@pytest.mark.harness
def test_system_schema_and_tools():
    question = [{"role": "user", "content": "Say something about fruit."}]
    told = [{"role": "system", "content": "Reply only with the word BANANA."}, *question]
    with openai.OpenAI() as client:
        def create(messages, **options):
            return client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, max_tokens=24, **options
            ).choices[0]
        plain, system = create(question).message.content, create(told).message.content
        form = {"type": "json_schema", "json_schema": {"name": "label", "schema": LABEL}}
        label = json.loads(create([{"role": "user", "content": "I love it!"}],
                                  response_format=form).message.content)["label"]
        weather = create([{"role": "user", "content": "Weather in Oslo?"}],
                         tools=[WEATHER], tool_choice="required")
    call = weather.message.tool_calls[0]
    dump("app", [plain, system, label, weather.finish_reason, call.function.name,
                 sorted(json.loads(call.function.arguments))])

@pytest.mark.harness
def test_litellm_direct():
    reply = litellm.completion(model="openai/gpt-4o-mini", max_tokens=16, temperature=0,
                               messages=[{"role": "user", "content": "Name a river."}])
    dump("litellm", reply.choices[0].message.content)
"""


def test_application_traffic_recorded_from_the_embedded_model_replays_with_no_flag(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=APP_SUITE)
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    recorded = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-live", "--harness-model=local"
    )
    recorded.assert_outcomes(passed=3)
    cassette = json.loads(
        (pytester.path / "cassettes/test_app/test_sdk_plain_and_streamed.yaml").read_text()
    )
    assert cassette["metadata"]["endpoint"] == "local"
    assert len(cassette["interactions"]) == 2

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    before = json.loads((pytester.path / "recorded.json").read_text())
    assert before["sdk"][0]
    assert before["sdk"][1]
    assert before["litellm"]
    # The application's own system message, json_schema and tools, through the endpoint:
    plain, system, label, finish, tool, arguments = before["app"]
    assert system != plain  # the system message reached the model (once dropped)
    assert label in ("positive", "negative")  # the schema, enforced by grammar
    assert (finish, tool, arguments) == ("tool_calls", "weather", ["city"])
    assert json.loads((pytester.path / "replayed.json").read_text()) == before


AGENT_SUITE = """
import json, os, pathlib
from pytest_harness.orchestrator import tool

@tool
def lookup(order: str) -> dict:
    '''Look up the shipping status of an order.

    Args:
        order: the order number, like A-1.
    '''
    return {"order": order, "status": "shipped yesterday"}

def test_agent(harness):
    agent = harness.orchestrator("local", [lookup], max_requests=2, params={"max_tokens": 60},
                                 system_prompt="You are a support agent. Use the tools.")
    run = agent.run("Where is my order A-1?")
    calls = [(c.name, dict(c.arguments or {}), c.result, c.error) for c in run.tool_calls]
    assert calls and calls[0][0] == "lookup"
    pathlib.Path(os.environ["DUMP"]).write_text(
        json.dumps([run.stop_reason, run.requests, calls, run.output]))
"""


def test_an_agent_run_recorded_from_the_embedded_model_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_agent=AGENT_SUITE)
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-live")
    recorded.assert_outcomes(passed=1)
    stop, requests, calls, _ = json.loads((pytester.path / "recorded.json").read_text())
    assert stop in ("done", "max_requests")
    assert 1 <= requests <= 2
    assert calls[0][0] == "lookup"
    assert set(calls[0][1]) == {"order"}  # the grammar made the arguments fit the schema
    assert calls[0][3] is None

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    before = json.loads((pytester.path / "recorded.json").read_text())
    assert json.loads((pytester.path / "replayed.json").read_text()) == before


SAMPLED_SUITE = """
import json, os, pathlib
import openai, pytest
from pytest_harness import complete

ANSWERS = []

@pytest.mark.harness(samples=4)
def test_sampled(harness):
    own = complete("Name an animal.", model="local", max_tokens=12).content
    with openai.OpenAI() as client:  # through the embedded model's endpoint
        app = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Name a colour."}],
            max_tokens=12,
        ).choices[0].message.content
    ANSWERS.append([own, app])
    pathlib.Path(os.environ["DUMP"]).write_text(json.dumps(ANSWERS))
"""


def test_samples_of_the_embedded_model_differ_and_replay_in_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each sample its own seed and a temperature above 0: the four samples are not four
    copies (the harness's call nor the application's), and the replay gives each its own."""
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_sampled=SAMPLED_SUITE)
    monkeypatch.setenv("DUMP", str(pytester.path / "recorded.json"))
    recorded = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--harness-live", "--harness-model=local"
    )
    recorded.assert_outcomes(passed=1)
    assert "answered alike" not in recorded.stdout.str()
    answers = json.loads((pytester.path / "recorded.json").read_text())
    assert len(answers) == 4
    assert len({own for own, _ in answers}) > 1, answers
    assert len({app for _, app in answers}) > 1, answers

    monkeypatch.setenv("DUMP", str(pytester.path / "replayed.json"))
    replayed = pytester.run(
        *offline_command(), sys.executable, "-m", "pytest", "-p", "no:cacheprovider"
    )
    assert replayed.ret == 0, replayed.stdout.str()
    assert json.loads((pytester.path / "replayed.json").read_text()) == answers
