"""Agent: one structured model call over real HTTP (litellm to the loopback server)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from pytest_harness._agent import Agent, AgentResult
from pytest_harness._model.response import ModelResponse, Usage
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import (
    ConfigError,
    DegenerateResponse,
    InvalidResponse,
    JudgeOutputError,
)
from pytest_harness.testing import LoopbackServer, Reply

pytestmark = pytest.mark.harness(cassette=False)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass"],
}
SCHEMA_PROMPT = (
    "Reply with one JSON object only, no prose and no code fences, matching this JSON "
    "schema:\n"
    '{"properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}}, '
    '"required": ["pass"], "type": "object"}'
)


class Rating(BaseModel):
    """A pydantic output schema."""

    passed: bool
    score: int


def judge(server: LoopbackServer, name: str, instructions: str, **attrs: Any) -> type[Agent]:
    """An Agent subclass called ``name`` that talks to ``server``."""
    body: dict[str, Any] = {
        "model": server.model,
        "params": server.params,
        "instructions": instructions,
        "output": SCHEMA,
        **attrs,
    }
    return type(name, (Agent,), body)


def words(body: dict[str, Any]) -> int:
    """The loopback server's prompt-token count: words in every message."""
    return sum(len(str(message["content"]).split()) for message in body["messages"])


# The AgentResult ------------------------------------------------------------------------------


def test_class_declared_agent_returns_a_frozen_result(server: LoopbackServer) -> None:
    """A class-declared agent sends its settings and returns every AgentResult field."""

    class Politeness(Agent):
        model = server.model
        instructions = "You judge whether a support reply is polite."
        output = SCHEMA
        temperature = 0
        params: ClassVar[dict[str, Any]] = {**server.params, "max_tokens": 50}

    reply = '{"pass": true, "reason": "says please"}'
    server.queue(Reply(content=reply))
    result = Politeness(input="Please hold on.").call()

    body = server.requests[-1]
    assert body["model"] == "loopback"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 50
    assert isinstance(result, AgentResult)
    assert result.input == "Please hold on."
    assert result.output == reply
    assert result.processed == {"pass": True, "reason": "says please"}
    assert result.model == "openai/loopback"
    prompt = words(body)
    assert result.usage == Usage(prompt_tokens=prompt, completion_tokens=5, total_tokens=prompt + 5)
    assert result.tokens == prompt + 5
    assert result.cost is None  # litellm has no price for the loopback model
    assert isinstance(result.execution_time, float)
    assert result.execution_time > 0
    assert result.agent == "Politeness"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.output = "changed"  # type: ignore[misc]


def test_instance_configuration(server: LoopbackServer) -> None:
    """Agent(model=..., instructions=..., output=..., input=...) needs no subclass."""
    server.queue(Reply(content='{"pass": false, "reason": "rude"}'))
    agent = Agent(
        input="Go away.",
        model=server.model,
        instructions="Rate the reply.",
        output=SCHEMA,
        params=server.params,
        temperature=0.5,
        structured=True,
        name="Rater",
    )
    result = agent.call()
    assert result.processed == {"pass": False, "reason": "rude"}
    assert result.input == "Go away."
    assert result.agent == "Rater"
    assert result.model == "openai/loopback"
    body = server.requests[-1]
    assert body["messages"] == [
        {"role": "system", "content": "Rate the reply."},
        {"role": "user", "content": "Go away."},
    ]
    assert body["temperature"] == 0.5
    assert Agent().name == "Agent"


def test_instance_settings_override_the_class_only_for_that_instance(
    server: LoopbackServer,
) -> None:
    """Keywords override class attributes on the instance; the class keeps its own."""
    Judge = judge(server, "Judge", "class instructions", temperature=1, params={"top_p": 0.5})
    server.queue(Reply(content='{"pass": true}'), Reply(content='{"pass": true}'))
    Judge(
        input="x", instructions="instance instructions", temperature=0, params=server.params
    ).call()
    overridden = server.requests[-1]
    assert overridden["messages"][0]["content"].startswith("instance instructions\n\n")
    assert overridden["temperature"] == 0
    assert overridden["top_p"] == 0.5  # instance params merge over the class's
    assert Judge.instructions == "class instructions"
    assert Judge.temperature == 1
    Judge(input="x", params=server.params).call()
    plain = server.requests[-1]
    assert plain["messages"][0]["content"].startswith("class instructions\n\n")
    assert plain["temperature"] == 1


def test_params_temperature_wins_over_the_attribute(server: LoopbackServer) -> None:
    """A temperature in params is not replaced by the temperature attribute."""
    Judge = judge(server, "Judge", "j", temperature=1, params={**server.params, "temperature": 0.2})
    server.queue(Reply(content='{"pass": true}'))
    Judge(input="x").call()
    assert server.requests[-1]["temperature"] == 0.2


def test_pydantic_output_schema(server: LoopbackServer) -> None:
    """A pydantic model class as output: its schema is asked for, processed is a plain dict."""
    Judge = judge(server, "Judge", "Score it.", output=Rating)
    server.queue(Reply(content='{"passed": true, "score": 3}'))
    result = Judge(input="text").call()
    assert result.processed == {"passed": True, "score": 3}
    assert type(result.processed) is dict
    system = server.requests[-1]["messages"][0]["content"]
    assert system == (
        "Score it.\n\nReply with one JSON object only, no prose and no code fences, matching "
        f"this JSON schema:\n{json.dumps(Rating.model_json_schema(), sort_keys=True)}"
    )


def test_pydantic_output_that_does_not_fit(server: LoopbackServer) -> None:
    """A reply that fails pydantic validation is a JudgeOutputError naming the model."""
    Judge = judge(server, "Judge", "Score it.", output=Rating)
    reply = '{"passed": true, "score": "high"}'
    server.queue(Reply(content=reply))
    with pytest.raises(JudgeOutputError, match="the reply does not fit Rating") as caught:
        Judge(input="text").call()
    assert "score" in str(caught.value)
    assert caught.value.raw == reply


def test_free_text_agent(server: LoopbackServer) -> None:
    """Without an output schema the processed value is the visible text."""
    Judge = judge(server, "Judge", "Say something.", output=None)
    server.queue(Reply(content="Looks fine.", reasoning="let me think"))
    result = Judge(input="x").call()
    assert result.processed == "Looks fine."
    assert result.output == "Looks fine."
    assert server.requests[-1]["messages"][0] == {"role": "system", "content": "Say something."}


# What reaches the server ----------------------------------------------------------------


def test_instructions_context_and_memory_messages(server: LoopbackServer) -> None:
    """System instructions, memory messages before the user turn, context as sorted JSON."""
    memory = [
        {"role": "user", "content": "Earlier question"},
        {"role": "assistant", "content": "Earlier answer"},
    ]
    Judge = judge(server, "Judge", "Judge it.", output=None)
    server.queue(Reply(content="fine"))
    Judge(input="the reply", context={"user_id": 42, "tone": "formal"}, memory=memory).call()
    assert server.requests[-1]["messages"] == [
        {"role": "system", "content": "Judge it."},
        {"role": "user", "content": "Earlier question"},
        {"role": "assistant", "content": "Earlier answer"},
        {
            "role": "user",
            "content": 'the reply\n\nContext:\n{\n  "tone": "formal",\n  "user_id": 42\n}',
        },
    ]


def test_string_memory_is_notes_in_the_system_text(server: LoopbackServer) -> None:
    """A string memory becomes notes after the instructions; a non-text input is JSON."""
    Judge = judge(server, "Judge", "Judge it.", output=None)
    server.queue(Reply(content="fine"))
    Judge(input={"b": 1, "a": [1, 2]}, memory="the user is a child").call()
    assert server.requests[-1]["messages"] == [
        {"role": "system", "content": "Judge it.\n\nNotes from earlier:\nthe user is a child"},
        {"role": "user", "content": '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}'},
    ]


def test_no_instructions_no_system_message(server: LoopbackServer) -> None:
    """An agent without instructions, schema or notes sends only the user turn."""
    server.queue(Reply(content="fine"))
    Agent(input="hello", model=server.model, params=server.params).call()
    assert server.requests[-1]["messages"] == [{"role": "user", "content": "hello"}]


def test_a_parse_override_decides_the_processed_value(server: LoopbackServer) -> None:
    def parse(self: Agent, response: Any) -> Any:
        return {"verdict": Agent.parse(self, response)["pass"], "chars": len(response.text)}

    Judge = judge(server, "Judge", "Judge it.", parse=parse)
    server.queue(Reply(content='{"pass": true}'), Reply(content='{"pass": false}'))
    assert Judge(input="x").call().processed == {"verdict": True, "chars": 14}
    agent = Judge(input="y")
    assert agent.call().processed == {"verdict": False, "chars": 15}
    agent.output = {"type": "object"}  # a replaced declaration is read again
    assert agent.parse(ModelResponse(content='{"pass": 1}')) == {"verdict": 1, "chars": 11}


def test_schema_goes_into_the_prompt_without_response_format(server: LoopbackServer) -> None:
    """openai/loopback has no known schema support: the schema is in the system prompt."""
    Judge = judge(server, "Judge", "Judge it.")
    server.queue(Reply(content='{"pass": true}'))
    Judge(input="x").call()
    body = server.requests[-1]
    assert "response_format" not in body
    assert body["messages"][0] == {"role": "system", "content": f"Judge it.\n\n{SCHEMA_PROMPT}"}


def test_structured_true_sends_response_format(server: LoopbackServer) -> None:
    """structured=True sends a json_schema response_format and keeps the prompt clean."""
    Judge = judge(server, "My Judge!", "Judge it.", structured=True)
    server.queue(Reply(content='{"pass": true}'))
    result = Judge(input="x").call()
    body = server.requests[-1]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "My_Judge_", "schema": SCHEMA},
    }
    assert body["messages"][0] == {"role": "system", "content": "Judge it."}
    assert result.processed == {"pass": True}


def test_schema_support_known_to_litellm(server: LoopbackServer) -> None:
    """A model litellm knows takes schemas gets response_format unless structured=False."""
    Judge = judge(server, "Judge", "Judge it.", model="openai/gpt-4o-mini")
    server.queue(Reply(content='{"pass": true}'), Reply(content='{"pass": true}'))
    result = Judge(input="x").call()
    native = server.requests[-1]
    assert native["response_format"]["json_schema"] == {"name": "Judge", "schema": SCHEMA}
    assert native["messages"][0]["content"] == "Judge it."
    assert result.cost is not None
    assert result.cost > 0
    Judge(input="x", structured=False).call()
    prompted = server.requests[-1]
    assert "response_format" not in prompted
    assert prompted["messages"][0]["content"] == f"Judge it.\n\n{SCHEMA_PROMPT}"


# Reading the reply ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "processed"),
    [
        ('```json\n{"pass": true, "reason": "fenced"}\n```', {"pass": True, "reason": "fenced"}),
        (
            'My verdict:\n```\n{"pass": false, "reason": "bare fence"}\n```\nThanks!',
            {"pass": False, "reason": "bare fence"},
        ),
        (
            'Sure. {"pass": true, "reason": "has {braces} inside"} and also {"pass": false}',
            {"pass": True, "reason": "has {braces} inside"},
        ),
        (
            'Verdict (final): {"pass": false, "detail": {"n": 1}} - end of verdict.',
            {"pass": False, "detail": {"n": 1}},
        ),
        (' \n{"pass": true}\n', {"pass": True}),
        (
            'Example: {"pass": false}\n```json\n{"pass": true, "reason": "fenced wins"}\n```',
            {"pass": True, "reason": "fenced wins"},
        ),
        (
            '{"pass": true, "reason": "line one\nline two"}',
            {"pass": True, "reason": "line one\nline two"},
        ),
        (
            'Verdict:\n{"pass": false, "reason": "a\nb"}\nDone.',
            {"pass": False, "reason": "a\nb"},
        ),
    ],
    ids=[
        "json-fence",
        "bare-fence-in-prose",
        "first-object",
        "nested-object",
        "whitespace",
        "fence-before-prose-object",
        "raw-newline-in-string",
        "raw-newline-in-prose-object",
    ],
)
def test_json_read_from_fences_and_prose(
    server: LoopbackServer, reply: str, processed: dict[str, Any]
) -> None:
    """JSON is found in a fenced block or as the first balanced object in prose."""
    server.queue(Reply(content=reply))
    result = judge(server, "Judge", "j")(input="x").call()
    assert result.processed == processed
    assert result.output == reply


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("I think it is polite.", "the reply has no JSON object in it: 'I think it is polite.'"),
        ('{"pass": "yes"}', "does not fit the output schema at pass: 'yes' is not of type"),
        ('{"reason": "forgot"}', "at (the top level): 'pass' is a required property"),
        ('{"pass": tru', "the reply has no JSON object in it"),
        ("[true]", "[True] is not of type 'object'"),
    ],
    ids=["garbage", "wrong-type", "missing-field", "truncated", "array"],
)
def test_reply_that_does_not_parse_or_fit(
    server: LoopbackServer, reply: str, fragment: str
) -> None:
    """A reply without JSON, or not fitting the schema, is a JudgeOutputError with the raw text."""
    server.queue(Reply(content=reply))
    with pytest.raises(JudgeOutputError) as caught:
        judge(server, "Judge", "j")(input="x").call()
    assert fragment in str(caught.value)
    assert caught.value.raw == reply


def test_judge_output_error_raw_is_the_exact_reply(server: LoopbackServer) -> None:
    """raw keeps the reply exactly, including its surrounding whitespace."""
    reply = '  {"pass": "yes"}\n'
    server.queue(Reply(content=reply))
    with pytest.raises(JudgeOutputError) as caught:
        judge(server, "Judge", "j")(input="x").call()
    assert caught.value.raw == reply


def test_bracketed_prose_before_the_object(server: LoopbackServer) -> None:
    """A citation like [1] in the prose does not hide the JSON object that follows."""
    server.queue(Reply(content='Per rubric items [1] and [2]: {"pass": true}'))
    result = judge(server, "Judge", "j")(input="x").call()
    assert result.processed == {"pass": True}


@pytest.mark.parametrize(
    ("reply", "error", "reason"),
    [
        (Reply(content=""), InvalidResponse, "empty_response"),
        (Reply(content=None), InvalidResponse, "empty_response"),
        (Reply(content="<think>hmm</think>"), DegenerateResponse, "degenerate"),
        (Reply(content="", reasoning="only thinking"), DegenerateResponse, "degenerate"),
    ],
    ids=["empty", "none", "think-only", "reasoning-only"],
)
def test_unusable_reply_is_a_harness_error(
    server: LoopbackServer, reply: Reply, error: type[InvalidResponse], reason: str
) -> None:
    """An empty or think-only reply is the harness's InvalidResponse family, not a crash."""
    server.queue(reply)
    with pytest.raises(InvalidResponse) as caught:
        judge(server, "Judge", "j")(input="x").call()
    assert type(caught.value) is error
    assert caught.value.reason == reason
    assert caught.value.model == "openai/loopback"


# The model ------------------------------------------------------------------------------


def test_no_model_anywhere_is_a_config_error() -> None:
    """An agent with no model, and no --harness-model, says how to give one."""
    agent = Agent(input="x", name="Lonely")
    with pytest.raises(ConfigError) as caught:
        agent.call()
    message = str(caught.value)
    assert "agent Lonely has no model" in message
    assert "--harness-model" in message
    assert "harness_model" in message
    assert isinstance(caught.value, ValueError)


def test_harness_model_override_replaces_the_agent_model(server: LoopbackServer) -> None:
    """The --harness-model override replaces the agent's own model."""
    Judge = judge(server, "Judge", "j", model="openai/never-asked")
    server.queue(Reply(content='{"pass": true}'))
    with scope.override(model="openai/other"):
        assert Judge().resolved_model() == "openai/other"
        result = Judge(input="x").call()
    assert server.requests[-1]["model"] == "other"
    assert result.model == "openai/other"
    assert Judge().resolved_model() == "openai/never-asked"


def test_override_supplies_a_missing_model(server: LoopbackServer) -> None:
    """An agent without a model runs on the --harness-model one."""
    server.queue(Reply(content="fine"))
    with scope.override(model=server.model):
        result = Agent(input="x", params=server.params).call()
    assert result.model == "openai/loopback"
    assert result.processed == "fine"


# Sync, async, streaming -----------------------------------------------------------------


def test_call_inside_a_running_event_loop(server: LoopbackServer) -> None:
    """The sync call() works from a coroutine running on an event loop."""
    Judge = judge(server, "Judge", "j")
    server.queue(Reply(content='{"pass": true, "reason": "from a loop"}'))

    async def inside() -> AgentResult:
        asyncio.get_running_loop()  # a loop is running here
        return Judge(input="x").call()

    result = asyncio.run(inside())
    assert result.processed == {"pass": True, "reason": "from a loop"}
    assert result.agent == "Judge"


def test_acall_streams_tokens(server: LoopbackServer) -> None:
    """acall(on_token=...) streams: the deltas, joined, are the reply text."""
    Judge = judge(server, "Judge", "j")
    reply = '{"pass": true, "reason": "kind words"}'
    server.queue(Reply(content=reply))
    deltas: list[str] = []
    result = asyncio.run(Judge(input="x").acall(on_token=deltas.append))
    assert deltas == ['{"pass": ', "true, ", '"reason": ', '"kind ', 'words"}']
    assert "".join(deltas) == reply
    assert result.output == reply
    assert result.processed == {"pass": True, "reason": "kind words"}
    assert server.requests[-1]["stream"] is True


def test_sync_call_streams_tokens(server: LoopbackServer) -> None:
    """call(on_token=...) streams too; without it the request is not streamed."""
    Judge = judge(server, "Judge", "j")
    server.queue(Reply(content='{"pass": false}'), Reply(content='{"pass": false}'))
    deltas: list[str] = []
    assert Judge(input="x").call(on_token=deltas.append).processed == {"pass": False}
    assert "".join(deltas) == '{"pass": false}'
    assert server.requests[-1]["stream"] is True
    Judge(input="x").call()
    assert "stream" not in server.requests[-1]


def test_repeated_sync_calls_share_one_loop_and_keep_litellm_quiet(
    server: LoopbackServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """The sync facade reuses its loop: litellm never warns that the event loop changed."""
    loops: list[asyncio.AbstractEventLoop] = []

    class Polite(judge(server, "Polite", "Is it polite?")):  # type: ignore[misc]
        async def acall(self, **kwargs: Any) -> AgentResult:
            loops.append(asyncio.get_running_loop())
            return await super().acall(**kwargs)

    server.queue(*[Reply(content='{"pass": true}')] * 3)
    for _ in range(3):
        assert Polite(input="Thanks!").call().processed == {"pass": True}
    assert len(loops) == 3
    assert loops[0] is loops[1] is loops[2]
    assert "event loop changed" not in capfd.readouterr().err
