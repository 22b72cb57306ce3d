"""Simulated users: a persona plays the user against an application for several turns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_harness import Agent, Harness, Tribunal, _aio
from pytest_harness.errors import ConfigError, SimulationError
from pytest_harness.team._simulate import Transcript, asimulate, simulate
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal import rule

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

PERSONA = "an impatient customer whose parcel is late"
GOAL = "a delivery date"
VOTE = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}


def persona_says(*replies: tuple[str, str]) -> Any:
    """A handler: the persona's calls get these (message, status) in order."""
    queue = list(replies)

    def handler(body: dict[str, Any]) -> Reply:
        message, status = queue.pop(0)
        return Reply(content=json.dumps({"message": message, "status": status, "reason": "r"}))

    return handler


def echo_app(seen: list[list[dict[str, str]]]) -> Any:
    def app(conversation: list[dict[str, str]]) -> str:
        seen.append([dict(m) for m in conversation])
        return f"reply {len(conversation) // 2 + 1}"

    return app


def run(server: LoopbackServer, app: Any, **options: Any) -> Transcript:
    return simulate(
        app, persona=PERSONA, goal=GOAL, model=server.model, params=server.params, **options
    )


def test_it_stops_after_max_turns_and_the_app_sees_the_whole_conversation(
    server: LoopbackServer,
) -> None:
    server.handler = persona_says(
        ("Where is it?", "continue"), ("Still?", "continue"), ("Hello??", "continue")
    )
    seen: list[list[dict[str, str]]] = []
    transcript = run(server, echo_app(seen), max_turns=3)
    assert transcript.stopped_by == "max_turns"
    assert [(t.role, t.content) for t in transcript.turns] == [
        ("user", "Where is it?"),
        ("assistant", "reply 1"),
        ("user", "Still?"),
        ("assistant", "reply 2"),
        ("user", "Hello??"),
        ("assistant", "reply 3"),
    ]
    assert [len(conversation) for conversation in seen] == [1, 3, 5]
    assert seen[-1][:4] == transcript.messages[:4]
    second = server.requests[1]["messages"]
    assert PERSONA in second[0]["content"]
    assert GOAL in second[0]["content"]
    assert "Application: reply 1" in second[-1]["content"]  # the persona read the reply


def test_the_persona_ends_it_when_its_goal_is_reached(server: LoopbackServer) -> None:
    server.handler = persona_says(("When will it come?", "continue"), ("Thanks!", "goal_reached"))
    transcript = run(server, echo_app([]), max_turns=5)
    assert transcript.stopped_by == "goal_reached"
    assert transcript.reason == "r"
    assert [t.role for t in transcript.turns] == ["user", "assistant"]  # "Thanks!" not sent
    assert transcript.replies == ["reply 1"]


def test_the_persona_can_give_up(server: LoopbackServer) -> None:
    server.handler = persona_says(("Where?", "continue"), ("Forget it.", "abandoned"))
    assert run(server, echo_app([]), max_turns=5).stopped_by == "abandoned"


def test_an_opening_is_sent_as_given_and_an_async_app_works(server: LoopbackServer) -> None:
    server.handler = persona_says(("Done, thanks.", "goal_reached"))

    async def app(conversation: list[dict[str, str]]) -> str:
        return "It arrives tomorrow."

    transcript = run(server, app, opening="My parcel is late!")
    assert transcript.text == "User: My parcel is late!\nApplication: It arrives tomorrow."
    assert len(server.requests) == 1  # the persona wrote only its second message


def test_an_application_that_raises_keeps_the_transcript(server: LoopbackServer) -> None:
    server.handler = persona_says(("Where?", "continue"), ("And now?", "continue"))
    answers = iter(["Soon.", None])

    def app(conversation: list[dict[str, str]]) -> str:
        answer = next(answers)
        if answer is None:
            raise RuntimeError("database down")
        return answer

    with pytest.raises(SimulationError, match="raised on user turn 2: RuntimeError: database") as e:
        run(server, app, max_turns=3)
    assert [t.content for t in e.value.transcript.turns] == ["Where?", "Soon.", "And now?"]


def test_max_turns_must_be_a_whole_number() -> None:
    with pytest.raises(ConfigError, match=r"max_turns=\.\.\.\) expects a whole number >= 1"):
        simulate(lambda c: "", persona=PERSONA, goal=GOAL, max_turns=0)


def test_a_tribunal_judges_the_transcript(server: LoopbackServer, harness: Harness) -> None:
    server.handler = persona_says(("Where is my parcel?", "continue"), ("Thanks", "goal_reached"))
    transcript = run(server, lambda conversation: "It arrives on Friday.")
    server.handler = lambda body: Reply(content=json.dumps({"pass": True}))

    class Resolved(Agent):
        model = server.model
        params = server.params
        output = VOTE
        instructions = "Did the application answer the user's question?"

    class Conversation(Tribunal):
        agents = (Resolved,)

        @rule("unanimous")
        def passed(result: Any) -> bool:
            return bool(result.processed["pass"])

    assert harness.transcripts == [transcript]
    verdict = harness.get_verdict(Conversation, transcript.text)
    assert verdict.passed
    judged = server.requests[-1]["messages"][-1]["content"]
    assert "User: Where is my parcel?\nApplication: It arrives on Friday." in judged


SUITE = """
import json, os
from pytest_harness.team._simulate import simulate

def test_conversation():
    params = {"api_base": os.environ["URL"], "api_key": "loopback-not-a-secret"}

    def app(conversation):
        from pytest_harness import complete
        return complete(conversation, model="openai/loopback", **params).text

    transcript = simulate(app, persona="a customer", goal="a date", model="openai/loopback",
                          params=params, max_turns=2)
    print("TRANSCRIPT", json.dumps(transcript.messages))
"""


def test_a_simulation_records_and_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handler(body: dict[str, Any]) -> Reply:
        if "You play a user" in body["messages"][0]["content"]:
            turn = sum("Application:" in str(m.get("content")) for m in body["messages"])
            return Reply(content=json.dumps({"message": f"question {turn}", "status": "continue"}))
        return Reply(content=f"answer to {body['messages'][-1]['content']}")

    with LoopbackServer(handler) as server:
        monkeypatch.setenv("URL", server.url)
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        pytester.makepyfile(test_sim=SUITE)
        recorded = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-s", "--harness-live", "--harness-report=r.json"
        )
        recorded.assert_outcomes(passed=1)
        recorded.stdout.fnmatch_lines(
            [
                "*pytest-harness simulated conversations*",
                "*test_conversation*a customer*2*max_turns*",
            ]
        )
        (reported,) = json.loads((pytester.path / "r.json").read_text())["transcripts"]
        assert (reported["goal"], reported["stopped_by"]) == ("a date", "max_turns")
        assert len(reported["turns"]) == 4
        assert len(server.requests) == 4  # persona, app, persona, app
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")  # server gone
    replayed.assert_outcomes(passed=1)
    line = next(x for x in recorded.stdout.lines if "TRANSCRIPT" in x)
    assert line.split("TRANSCRIPT ", 1)[1] in replayed.stdout.str()
    messages = json.loads(line.split("TRANSCRIPT ", 1)[1])
    assert [m["content"] for m in messages] == [
        "question 0",
        "answer to question 0",
        "question 1",
        "answer to question 1",
    ]


def test_asimulate_is_the_async_core(server: LoopbackServer) -> None:
    server.handler = persona_says(("Hi", "continue"), ("Bye", "abandoned"))

    async def main() -> Transcript:
        return await asimulate(
            lambda c: "Hello.", persona=PERSONA, goal=GOAL, model=server.model, params=server.params
        )

    assert _aio.run_sync(main()).stopped_by == "abandoned"
