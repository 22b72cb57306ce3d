"""Replay answers the model seam's own calls by what they ask (``matching.seam_key``).

A seam call records the key of what it asked beside its interaction; in replay the seam
finds the interaction by that key and reads the recorded reply itself, without litellm
building a request (``_model._replayed``). Each kind of recorded reply is replayed twice
here, from the cassette as recorded (the fast path) and from the same cassette without its
keys (as one recorded before keys were kept: litellm builds the request and the HTTP match
finds it): the two give equal responses, equal streamed tokens, equal errors and equal
reports. Replies litellm might read otherwise (a think block, an error status) take the
HTTP path either way.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import interactions
from pytest_harness._cassettes.matching import SEAM_FIELD, seam_key
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model import seam as _model
from pytest_harness._model.seam import acomplete, complete
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.item import TrafficWatch
from pytest_harness._wire import chat
from pytest_harness.errors import CassetteError, CassetteMiss
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CALL = ToolCallSpec(name="get_weather", arguments={"city": "Paris"}, id="call_7")
PRICED_BODY = {
    "id": "chatcmpl-9",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-2024-08-06",  # the reply names another model than the one asked for
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "priced"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 200},
    },
}

CORPUS = {
    record["case"]: record
    for record in json.loads((Path(__file__).parent / "corpus/chat.json").read_text())
}


def recorded(case: str) -> Reply:
    """A provider's reply as ``tests/corpus/chat.json`` holds it, sent as it came."""
    record = CORPUS[case]
    return Reply(raw=record["response"], headers={"Content-Type": record["content_type"]})


# name: (the server's reply, the call's arguments, whether the seam reads it itself)
KINDS: dict[str, tuple[Reply, dict[str, Any], bool]] = {
    "plain": (Reply(content="hello there"), {}, True),
    "reasoning": (Reply(content="42", reasoning="added it up"), {}, True),
    "tool calls": (Reply(content=None, tool_calls=[CALL]), {"tools": [WEATHER]}, True),
    "structured": (Reply(content='{"a": 1}'), {"response_format": {"type": "json_object"}}, True),
    "cut at length": (Reply(content="cut", finish_reason="length"), {}, True),
    "streamed": (Reply(content="one two three four"), {"stream": True}, True),
    "streamed reasoning": (Reply(content="yes", reasoning="a b c"), {"stream": True}, True),
    "streamed tool calls": (
        Reply(content=None, tool_calls=[CALL]),
        {"stream": True, "tools": [WEATHER]},
        True,
    ),
    "priced": (Reply(raw=json.dumps(PRICED_BODY)), {}, True),
    "think block": (Reply(content="<think>hmm</think>The answer"), {}, False),
    "empty": (Reply(content=""), {}, True),
    "error status": (Reply(status=400, error="bad request"), {}, False),
    "not found": (Reply(status=404, error="no such model"), {}, False),
    # Real replies litellm reads otherwise than it was sent (issue 42): a content of parts
    # (litellm's OpenAI reader raises), a provider's reasoning field (it maps it), a stream
    # with no finish reason (it makes one up), an error chunk (the SDK raises at it).
    "content parts": (recorded("mistral_content_parts_thinking_text"), {}, False),
    "reasoning field": (recorded("groq_reasoning_field"), {}, False),
    "streamed without a finish reason": (
        recorded("chat_stream_no_finish_reason"),
        {"stream": True},
        False,
    ),
    "streamed error chunk": (
        recorded("openrouter_stream_error_chunk_after_reasoning"),
        {"stream": True},
        False,
    ),
}


class Spy:
    """Counts the calls that went through litellm (the HTTP path); calls through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent = 0
        sync, asynchronous = _model.completion, _model.acompletion

        def completion(*args: Any, **kwargs: Any) -> Any:
            self.sent += 1
            return sync(*args, **kwargs)

        async def acompletion(*args: Any, **kwargs: Any) -> Any:
            self.sent += 1
            return await asynchronous(*args, **kwargs)

        monkeypatch.setattr(_model, "completion", completion)
        monkeypatch.setattr(_model, "acompletion", acompletion)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


def ask(model: str, params: dict[str, Any], extra: dict[str, Any], tokens: list[str]) -> Any:
    """One seam call; its response, or its error as (type, message)."""
    try:
        return complete(
            "What is the weather?", model=model, on_token=tokens.append, **params, **extra
        )
    except Exception as error:
        return type(error).__name__, str(error)


def record(
    path: Path, reply: Reply, model: str, extra: dict[str, Any], run: str = "r"
) -> dict[str, Any]:
    """Record one seam call in recording run ``run`` (a new run rewrites the file)."""
    with LoopbackServer(handler=lambda body: reply) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="t.py::test", run_id=run)
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            ask(model, server.params, extra, [])
        slot.close(keep=True)
        return server.params


def replay(
    path: Path, params: dict[str, Any], model: str, extra: dict[str, Any]
) -> tuple[Any, list[str], TrafficWatch]:
    watch = TrafficWatch("t.py::test")
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    slot.on_response = watch.seen
    tokens: list[str] = []
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)):
        answer = ask(model, params, extra, tokens)
    slot.close(keep=False)
    return answer, tokens, watch


def without_keys(path: Path) -> Path:
    data = json.loads(path.read_text())
    for interaction in data["interactions"]:
        interaction.pop(SEAM_FIELD, None)
    copy = path.with_name("old.yaml")
    copy.write_text(json.dumps(data, indent=2))
    return copy


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "gpt-4o-mini", "openai/unpriced"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_fast_path_and_the_http_path_give_the_same_response(
    tmp_path: Path, spy: Spy, kind: str, model: str
) -> None:
    reply, extra, fast = KINDS[kind]
    path = tmp_path / "c.yaml"
    params = record(path, reply, model, extra)
    keys = [interactions.seam(i) for i in json.loads(path.read_text())["interactions"]]
    assert keys
    assert all(keys)

    spy.sent = 0
    by_key, tokens, watch = replay(path, params, model, extra)
    assert spy.sent == (0 if fast else 1)
    spy.sent = 0
    by_http, http_tokens, http_watch = replay(without_keys(path), params, model, extra)
    assert spy.sent == 1

    assert by_key == by_http
    if not isinstance(by_key, tuple):
        assert by_key.id == by_http.id
        assert by_key.latency_recorded == by_http.latency_recorded
    assert tokens == http_tokens
    assert watch.spend.record("t") == http_watch.spend.record("t")
    if kind == "streamed":
        assert "".join(tokens) == "one two three four"
        assert len(tokens) > 1
    if kind == "priced":  # litellm prices the model the reply names, as the fast path does
        assert by_key.cost == _model.price("gpt-4o-2024-08-06", by_key.usage)


def test_async_calls_take_the_fast_path_too(tmp_path: Path, spy: Spy) -> None:
    path = tmp_path / "c.yaml"
    params = record(path, Reply(content="one two three"), "openai/m", {"stream": True})
    spy.sent = 0
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    tokens: list[str] = []

    async def main() -> Any:
        return await acomplete(
            "What is the weather?", model="openai/m", stream=True, on_token=tokens.append, **params
        )

    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)):
        response = asyncio.run(main())
    slot.close(keep=False)
    assert spy.sent == 0
    assert response.content == "one two three"
    assert "".join(tokens) == "one two three"


def answers(*said: str) -> Callable[[dict[str, Any]], Reply]:
    replies: Iterator[str] = iter(said)
    return lambda body: Reply(content=next(replies))


def test_the_same_question_asked_twice_replays_its_answers_in_recorded_order(
    tmp_path: Path, spy: Spy
) -> None:
    path = tmp_path / "c.yaml"
    with LoopbackServer(handler=answers("first", "second")) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="t", run_id="r")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            for _ in range(2):
                complete("same", model="openai/m", **server.params)
        slot.close(keep=True)
        params = server.params
    spy.sent = 0
    slot = CassetteSlot(path=path, mode="none", nodeid="t", run_id="r")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)):
        said = [complete("same", model="openai/m", **params).content for _ in range(2)]
        with pytest.raises(CassetteMiss, match="every recording is already used"):
            complete("same", model="openai/m", **params)  # the HTTP path says why
    slot.close(keep=False)
    assert said == ["first", "second"]
    assert spy.sent == 1  # only the third, which no key answered


def test_threads_asking_the_same_question_each_get_their_own_recording(
    tmp_path: Path, spy: Spy
) -> None:
    path = tmp_path / "c.yaml"
    recorded = [f"answer {number}" for number in range(8)]
    with LoopbackServer(handler=answers(*recorded)) as server:
        slot = CassetteSlot(path=path, mode="all", nodeid="t", run_id="r")
        with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
            for _ in recorded:
                complete("same", model="openai/m", **server.params)
        slot.close(keep=True)
        params = server.params
    spy.sent = 0
    slot = CassetteSlot(path=path, mode="none", nodeid="t", run_id="r")
    together = threading.Barrier(len(recorded))

    def ask() -> str | None:
        together.wait()
        return complete("same", model="openai/m", **params).content

    active = scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns between any two steps of a replay
    try:
        with scope.activate(active), ThreadPoolExecutor(len(recorded)) as pool:
            asked = [pool.submit(contextvars.copy_context().run, ask) for _ in recorded]
            said = [future.result() for future in asked]
    finally:
        sys.setswitchinterval(switching)
    slot.close(keep=False)
    assert sorted(map(str, said)) == sorted(recorded)  # each recording played once
    assert spy.sent == 0


def test_a_question_not_recorded_misses_with_the_http_diff(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    params = record(path, Reply(content="fine"), "openai/m", {})
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    active = scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)
    with scope.activate(active), pytest.raises(CassetteMiss) as miss:
        complete("What is the time?", model="openai/m", **params)
    slot.close(keep=False)
    assert "closest recorded request" in str(miss.value)
    assert "What is the time?" in str(miss.value)


def test_a_hand_edited_reply_replays_as_edited_and_a_cut_one_names_the_file(
    tmp_path: Path, spy: Spy
) -> None:
    path = tmp_path / "c.yaml"
    params = record(path, Reply(content="as recorded"), "openai/m", {})
    data = json.loads(path.read_text())
    body = data["interactions"][0]["response"]["body"]
    body["json"]["choices"][0]["message"]["content"] = "as edited"
    path.write_text(json.dumps(data, indent=2))
    spy.sent = 0
    assert replay(path, params, "openai/m", {})[0].content == "as edited"
    assert spy.sent == 1  # an edited file's seam keys are not trusted: its HTTP match answers

    response = data["interactions"][0]["response"]
    text = json.dumps(response["body"].pop("json"))
    response["body"]["string"] = text[: len(text) // 2]  # cut in the middle
    response["headers"]["Content-Length"] = [str(len(text))]
    path.write_text(json.dumps(data, indent=2))
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    active = scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)
    with scope.activate(active), pytest.raises(CassetteError, match="the file was cut or edited"):
        complete("What is the weather?", model="openai/m", **params)
    slot.close(keep=False)


def test_a_hand_edited_request_is_not_answered_by_its_stale_seam_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    params = record(path, Reply(content="as recorded"), "openai/m", {})
    data = json.loads(path.read_text())
    request = data["interactions"][0]["request"]["body"]["json"]
    request["messages"][-1]["content"] = "What is the time?"  # the prompt, edited
    path.write_text(json.dumps(data, indent=2))
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    active = scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)
    with scope.activate(active), pytest.raises(CassetteMiss, match="What is the time"):
        complete("What is the weather?", model="openai/m", **params)
    slot.close(keep=False)


def test_rerecording_the_same_answers_keeps_the_file_and_fills_in_missing_keys(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    record(path, Reply(content="steady"), "openai/m", {}, run="first")
    recorded = path.read_bytes()
    old = without_keys(path)
    old.replace(path)
    record(path, Reply(content="steady"), "openai/m", {}, run="second")
    assert path.read_bytes() == recorded  # the key came back, nothing else changed
    record(path, Reply(content="steady"), "openai/m", {}, run="third")
    assert path.read_bytes() == recorded


BASE = {"model": "openai/m", "messages": [{"role": "user", "content": "hi"}]}


def test_the_key_is_what_the_call_asks_not_how_it_is_sent() -> None:
    key = seam_key({**BASE, "api_base": "http://127.0.0.1:4001/v1"}, note="_harness_")
    sent_otherwise = {
        **BASE,
        "api_base": "http://localhost:5002/v1",  # a loopback server's port changes
        "api_key": "sk-secret",
        "timeout": 3,
        "num_retries": 2,
        "max_retries": 2,
        "extra_headers": {"x-pytest-harness-call": "4"},
        "_harness_cassette_call": 4,
    }
    assert seam_key(sent_otherwise, note="_harness_") == key
    assert "sk-secret" not in str(key)
    for changed in (
        {"model": "openai/other"},
        {"messages": [{"role": "user", "content": "hello"}]},
        {"temperature": 0.5},
        {"api_base": "https://api.example.com/v1"},
        {"tools": [WEATHER]},
        {"response_format": {"type": "json_object"}},
        {"stream": True},
    ):
        assert (
            seam_key({**BASE, "api_base": "http://127.0.0.1:1/v1", **changed}, note="_harness_")
            != key
        )
    ignored = seam_key({**BASE, "user": "a"}, ignore=["user"])
    assert ignored == seam_key({**BASE, "user": "b"}, ignore=["user"]) == seam_key(BASE)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    st.dictionaries(st.text(max_size=8), JSONISH | st.builds(object) | st.just(b"raw"), max_size=5),
    st.lists(st.text(alphabet="ab.0", max_size=5), max_size=3),
)
def test_any_arguments_give_a_key_or_none_never_an_error(
    kwargs: dict[str, Any], ignore: list[str]
) -> None:
    key = seam_key(kwargs, ignore, note="_harness_")
    assert key is None or (len(key) == 64 and key == seam_key(kwargs, ignore, note="_harness_"))


SUITE = """
import json
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness._model.seam import complete

PARAMS = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}


class Judge(Agent):
    model = "openai/judge"
    params = PARAMS
    output = {{
        "type": "object",
        "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
        "required": ["pass", "reason"],
    }}
    instructions = "You judge support replies."


class Strict(Judge):
    instructions = "You judge support replies strictly."


class Polite(Tribunal):
    agents = [Judge, Strict]


class Bot(Agent):
    model = "openai/bot"
    params = PARAMS


def test_tribunal(harness):
    harness.assert_verdict(Polite, "Thanks for waiting, it ships today.")


def test_agent(harness):
    assert harness.ask(Bot, "hello").output == "bot says hi"


def test_stream(harness):
    tokens = []
    said = complete("count", model="openai/bot", stream=True, on_token=tokens.append, **PARAMS)
    assert "".join(tokens) == said.content == "bot says hi"
    assert len(tokens) > 1
"""


def scripted(body: dict[str, Any]) -> Reply:
    if body["model"] == "judge":
        return Reply(content=json.dumps({"pass": True, "reason": "polite"}))
    return Reply(content="bot says hi")


def test_a_suite_replayed_by_key_reports_what_the_http_path_reports(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = scripted
    pytester.makepyfile(test_suite=SUITE.format(url=server.url))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    run = ("-p", "no:cacheprovider", "-p", "no:randomly")
    pytester.runpytest_subprocess(*run, "--harness-live").assert_outcomes(passed=3)
    server.stop()

    def report(name: str) -> dict[str, Any]:
        result = pytester.runpytest_subprocess(*run, "-v", f"--harness-report={name}")
        result.assert_outcomes(passed=3)
        return json.loads((pytester.path / name).read_text())

    by_key = report("by_key.json")
    cassettes = sorted((pytester.path / "cassettes").rglob("*.yaml"))
    assert len(cassettes) == 3
    for path in cassettes:
        stored = json.loads(path.read_text())["interactions"]
        assert all(interactions.seam(interaction) for interaction in stored)
        without_keys(path).replace(path)
    by_http = report("by_http.json")
    assert by_key["tribunals"]
    assert by_key["usage"]
    assert untimed(by_key) == untimed(by_http)


def untimed(data: Any) -> Any:
    """A report without its wall times (``time``: how long a judge took in this run; the
    model calls' latencies are the recorded ones, and stay)."""
    if isinstance(data, dict):
        return {key: untimed(value) for key, value in data.items() if key != "time"}
    if isinstance(data, list):
        return [untimed(value) for value in data]
    return data


@pytest.mark.parametrize("extra", [{}, {"stream": True}], ids=["plain", "streamed"])
def test_a_replayed_reply_is_read_once(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any]
) -> None:
    """Recognition reads the recorded reply; the seam takes that response, not a second read."""
    path = tmp_path / "c.yaml"
    params = record(path, Reply(content="hello there"), "openai/m", extra)
    reads: list[str] = []
    for name in ("read_completion", "read_stream"):
        real = getattr(chat, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            reads.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(chat, name, counted)
    spy.sent = 0
    answer, tokens, _ = replay(path, params, "openai/m", extra)
    assert spy.sent == 0
    assert (answer.content, answer.model) == ("hello there", "openai/m")
    assert len(reads) == 1
    assert "".join(tokens) == ("hello there" if extra else "")
