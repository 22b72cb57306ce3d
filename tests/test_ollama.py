"""Ollama's own API (``/api/chat``, ``/api/generate``) with the real ``ollama`` client.

End to end (pytester): chat and generate, whole and NDJSON-streamed, the async client and a
tool-call loop, recorded with ``--harness-live`` against ``LoopbackServer``, then replayed with
the server stopped: the same answers, the trajectory, the tokens in the report, the
degenerate check. Then the stored NDJSON body (its lines as JSON, byte-exact), a
re-recording that keeps the file still, and properties of the reader and the storage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness import _wire
from pytest_harness._cassettes import bodies, steady
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytest.importorskip("ollama")

pytest_plugins = ["pytester"]


def answer(body: dict[str, Any]) -> Reply:
    """Ollama's answers: a tool call to ``add`` then its sum, ``empty``, ``unfinished``
    (a stream that never says ``done: true``), else ``echo: <prompt>``."""
    messages = body.get("messages") or [{"role": "user", "content": body.get("prompt", "")}]
    last = messages[-1]
    if last["role"] == "tool":
        return Reply(content=f"the sum is {last['content']}")
    text = str(last["content"])
    if text.startswith("add"):
        return Reply(
            content=None, tool_calls=[ToolCallSpec(name="add", arguments={"a": 2, "b": 3})]
        )
    if text == "empty":
        return Reply(content="")
    if text == "unfinished":
        return Reply(content="a reply that never finishes", finish_reason=None)
    return Reply(content=f"echo: {text}", reasoning="thinking it over")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(answer) as running:
        yield running


APP = """
import asyncio
import ollama
import pytest
from conftest import URL

MODEL = "llama3.2"

def ask(text):
    return [{"role": "user", "content": text}]

@pytest.fixture
def client():
    client = ollama.Client(host=URL)
    yield client
    client.close()

def add(a: int, b: int) -> int:
    '''Add two numbers.

    Args:
      a: the first
      b: the second
    '''
    return a + b

@pytest.mark.harness
def test_chat(client):
    reply = client.chat(model=MODEL, messages=ask("hello there"))
    assert reply.message.content == "echo: hello there"
    assert reply.message.thinking == "thinking it over"

@pytest.mark.harness
def test_chat_streamed(client):
    parts = client.chat(model=MODEL, messages=ask("a stream"), stream=True)
    texts = [part.message.content for part in parts]
    assert len(texts) > 2 and "".join(texts) == "echo: a stream"

@pytest.mark.harness
def test_generate(client):
    reply = client.generate(model=MODEL, prompt="one word")
    assert reply.response == "echo: one word" and reply.done_reason == "stop"

@pytest.mark.harness
def test_generate_streamed(client):
    parts = client.generate(model=MODEL, prompt="two words", stream=True)
    assert "".join(part.response for part in parts) == "echo: two words"

@pytest.mark.harness
def test_async_chat():
    async def main():
        client = ollama.AsyncClient(host=URL)
        replies = [client.chat(model=MODEL, messages=ask(f"a{i}")) for i in range(2)]
        try:
            return [r.message.content for r in await asyncio.gather(*replies)]
        finally:
            await client.close()
    assert asyncio.run(main()) == ["echo: a0", "echo: a1"]

@pytest.mark.harness
def test_tool_loop(harness, client):
    messages = ask("add 2 and 3")
    reply = client.chat(model=MODEL, messages=messages, tools=[add])
    messages.append(reply.message)
    for call in reply.message.tool_calls:
        result = add(**call.function.arguments)
        messages.append({"role": "tool", "content": str(result), "tool_name": call.function.name})
    final = client.chat(model=MODEL, messages=messages, tools=[add])
    assert final.message.content == "the sum is 5"
    call = harness.trajectory.assert_called("add", {"a": 2, "b": 3})
    assert (call.id, call.result) == (None, "5")
    assert len(harness.trajectory.tool_calls) == 1
"""

BAD = """
import ollama
import pytest
from conftest import URL

def chat(text, **options):
    with ollama.Client(host=URL) as client:
        asked = [{"role": "user", "content": text}]
        reply = client.chat(model="llama3.2", messages=asked, **options)
        return list(reply) if options.get("stream") else reply

@pytest.mark.harness
def test_empty():
    assert chat("empty").message.content == ""

@pytest.mark.harness
def test_unfinished_stream():
    assert not any(part.done for part in chat("unfinished", stream=True))
"""


def run(app: pytest.Pytester, *args: str) -> pytest.RunResult:
    return app.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def project(pytester: pytest.Pytester, server: LoopbackServer, **modules: str) -> pytest.Pytester:
    pytester.makeini("[pytest]\nharness_record_failed = true\n")
    pytester.makeconftest(f"URL = {server.root!r}\n")
    pytester.makepyfile(**modules)
    return pytester


def cassettes(app: pytest.Pytester) -> dict[str, str]:
    root = app.path / "cassettes"
    return {str(path.relative_to(root)): path.read_text() for path in sorted(root.rglob("*.yaml"))}


def tokens(app: pytest.Pytester) -> dict[str, Any]:
    records = json.loads((app.path / "r.json").read_text())["usage"]
    return {r["test"].rpartition("::")[2]: r for r in records}


def test_the_ollama_client_records_then_replays_offline(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    app = project(pytester, server, test_app=APP)
    run(app, "--harness-live", "--harness-report=r.json").assert_outcomes(passed=6)
    recorded = cassettes(app)
    live = tokens(app)
    assert len(server.requests) == 8
    server.stop()

    run(app, "--harness-report=r.json").assert_outcomes(passed=6)
    assert cassettes(app) == recorded  # replay writes nothing
    replayed = tokens(app)
    for name in ("test_chat", "test_generate_streamed", "test_tool_loop"):
        assert replayed[name]["tokens"] == live[name]["tokens"]
        assert replayed[name]["prompt_tokens"] > 0
        assert replayed[name]["completion_tokens"] > 0


def test_a_stream_is_stored_as_its_lines_and_replayed_byte_exact(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    app = project(pytester, server, test_app=APP)
    run(app, "--harness-live", "-k", "test_chat_streamed").assert_outcomes(passed=1)
    (text,) = cassettes(app).values()
    (interaction,) = json.loads(text)["interactions"]
    body = interaction["response"]["body"]
    assert body["form"] == "spaced+newline"  # json.dumps's default, as the server writes
    said = [line["message"] for line in body["lines"]]
    assert "".join(message["content"] for message in said) == "echo: a stream"
    assert "".join(message.get("thinking", "") for message in said) == "thinking it over"
    assert body["lines"][-1]["done"] is True
    sent = b"".join(
        (json.dumps(part) + "\n").encode() for part in _stream_parts(server, "a stream")
    )
    assert bodies.body_bytes(body) == sent


def _stream_parts(server: LoopbackServer, text: str) -> list[dict[str, Any]]:
    from pytest_harness.testing import ollama_parts

    body = {"model": "llama3.2", "messages": [{"role": "user", "content": text}], "stream": True}
    return list(ollama_parts(body, "ollama_chat", answer(body)))


@pytest.mark.parametrize("replay", [False, True], ids=["live", "replay"])
def test_an_empty_reply_and_an_unfinished_stream_fail_the_degenerate_check(
    pytester: pytest.Pytester, server: LoopbackServer, replay: bool
) -> None:
    app = project(pytester, server, test_bad=BAD)
    if replay:
        run(app, "--harness-live")
        server.stop()
    result = run(app) if replay else run(app, "--harness-live")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*returned an empty response*(POST http://127.0.0.1:*/api/chat) in "
            "test_bad.py::test_empty*",
            "*returned an interrupted response*in test_bad.py::test_unfinished_stream*",
        ]
    )


# Units: the reader and the storage.

CHAT_LINES = [
    {"model": "m", "created_at": "2024-05-01T10:00:00.1Z", "message": {"role": "assistant",
     "content": "Hi"}, "done": False},
    {"model": "m", "created_at": "2024-05-01T10:00:00.2Z", "message": {"role": "assistant",
     "content": ""}, "done": True, "done_reason": "length", "total_duration": 812,
     "load_duration": 5, "prompt_eval_count": 7, "prompt_eval_duration": 40, "eval_count": 2,
     "eval_duration": 60},
]  # fmt: skip


def ndjson(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def test_a_stream_reads_its_text_reason_and_counts() -> None:
    found = _wire.recognise("http://localhost:11434/api/chat", None, 200, {}, ndjson(CHAT_LINES))
    assert found is not None
    assert (found.api, found.provider, found.model, found.streamed) == (
        "ollama.chat",
        "ollama",
        "m",
        True,
    )
    reply = found.response
    assert (reply.content, reply.finish_reason, reply.interrupted) == ("Hi", "length", False)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 2)


def test_a_stream_cut_before_done_is_unfinished() -> None:
    text = ndjson(CHAT_LINES)
    cut = text[: text.index("\n") + 20]  # the first line and a piece of the last
    found = _wire.recognise("http://h/api/chat", None, 200, {}, cut)
    assert found is not None
    assert (found.response.finish_reason, found.response.interrupted) == (None, True)


def test_a_model_load_is_no_reply() -> None:
    loaded = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True}
    found = _wire.recognise("http://h/api/chat", None, 200, {}, json.dumps(loaded))
    assert found is not None
    assert found.response.finish_reason == "stop"
    loaded["done_reason"] = "load"
    assert _wire.recognise("http://h/api/chat", None, 200, {}, json.dumps(loaded)) is None


def test_tool_results_answer_the_calls_in_order_without_ids() -> None:
    calls = [{"function": {"name": n, "arguments": {"x": i}}} for i, n in enumerate("ab")]
    asked = _wire.read_request(
        "ollama.chat",
        json.dumps(
            {
                "model": "m",
                "messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": "", "tool_calls": calls},
                    {"role": "tool", "content": "A"},
                    {"role": "tool", "content": {"b": 1}},
                ],
                "tools": [{"type": "function", "function": {"name": "a"}}],
                "format": {"type": "object"},
            }
        ),
    )
    assert [(r.call_id, r.name, r.text) for r in asked.results] == [
        (None, "a", "A"),
        (None, "b", '{"b": 1}'),
    ]
    assert asked.tools == ("a",)
    assert (asked.structured, asked.schema) == (True, {"type": "object"})
    assert asked.turns[1].text == 'a({"x": 0})\nb({"x": 1})'


def test_generate_asks_its_system_and_prompt() -> None:
    asked = _wire.read_request(
        "ollama.generate",
        '{"model": "m", "prompt": "Why?", "system": "Be brief.", "format": "json"}',
    )
    assert (asked.system, asked.turns[0].text, asked.structured) == ("Be brief.", "Why?", True)
    assert _wire.request_api("http://h:11434/api/generate", None) == "ollama.generate"


def test_a_re_recording_of_the_same_answer_is_the_same() -> None:
    again = [{**line, "created_at": "2025-01-01T00:00:00Z"} for line in CHAT_LINES]
    again[-1] = {**again[-1], "total_duration": 9120, "eval_duration": 99}
    old, new = (
        {"status": {"code": 200}, "body": bodies.stored(ndjson(lines))}
        for lines in (CHAT_LINES, again)
    )
    assert steady.same_answer(old, new) == {"2025-01-01T00:00:00Z"}
    changed = [*again[:-1], {**again[-1], "eval_count": 3}]
    assert steady.same_answer(old, {**new, "body": bodies.stored(ndjson(changed))}) is None


def test_a_stored_stream_is_read_as_the_stream() -> None:
    from pytest_harness._cassettes.interactions import recognised

    stored = bodies.stored(ndjson(CHAT_LINES))
    assert isinstance(stored, dict)
    assert stored["form"] == "compact+newline"
    interaction = {
        "request": {"uri": "http://h/api/chat", "body": None},
        "response": {"status": {"code": 200}, "headers": {}, "body": stored},
    }
    found = recognised(interaction)
    assert found is not None
    assert (found.response.content, found.streamed) == ("Hi", True)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.lists(JSON_VALUES, max_size=4), st.text(max_size=20), st.booleans())
def test_any_json_lines_are_read_and_stored_without_raising(
    values: list[Any], tail: str, typed: bool
) -> None:
    text = "".join(json.dumps(value) + "\n" for value in values) + tail
    headers = {"Content-Type": "application/x-ndjson"} if typed else {}
    _wire.recognise("http://h/api/chat", None, 200, headers, text)
    stored = bodies.stored(text)
    assert (bodies.text(stored) if isinstance(stored, dict) else stored) == text
    if isinstance(stored, dict) and "lines" in stored:
        from pytest_harness._cassettes.interactions import recognised

        response = {"status": {"code": 200}, "headers": headers, "body": stored}
        recognised({"request": {"uri": "http://h/api/chat"}, "response": response})


MESSAGES = st.fixed_dictionaries(
    {}, optional=dict.fromkeys(("content", "thinking", "tool_calls"), JSON_VALUES)
)
PARTS = st.fixed_dictionaries(
    {"done": st.booleans()},
    optional={
        "message": MESSAGES | JSON_VALUES,
        **dict.fromkeys(("response", "done_reason", "eval_count", "model"), JSON_VALUES),
    },
)


@given(st.lists(PARTS, max_size=4))
def test_any_ollama_parts_read_without_raising(parts: list[dict[str, Any]]) -> None:
    _wire.recognise("http://h/api/chat", None, 200, {}, ndjson(parts))
    _wire.recognise("http://h/api/chat", None, 200, {}, json.dumps(parts[0] if parts else {}))


def test_ollama_is_priced_without_raising() -> None:
    from pytest_harness._model.response import Usage
    from pytest_harness._model.seam import price

    cost = price("llama3.2", Usage(prompt_tokens=3, completion_tokens=4, total_tokens=7), "ollama")
    assert cost is None or cost == 0


def test_real_ollama_bodies_are_stored_readably_and_byte_exact() -> None:
    """The corpus's bodies as a real Ollama server wrote them (tests/corpus/ollama.json):
    Go's compact JSON, a whole reply as its value, a stream as its lines."""
    corpus = Path(__file__).parent / "corpus" / "ollama.json"
    records = {r["case"]: r for r in json.loads(corpus.read_text(encoding="utf-8"))}
    for case, kind in [("ollama_generate_whole", "json"), ("ollama_generate_stream", "lines")]:
        text = records[case]["response"]
        stored = bodies.stored(text)
        assert isinstance(stored, dict)
        assert kind in stored
        assert bodies.text(stored) == text


def test_go_escapes_are_kept_byte_exact() -> None:
    """Ollama's server writes ``<``, ``>`` and ``&`` as ``\\u003c``... (Go's encoding/json)."""
    line = {"model": "qwen3", "message": {"role": "assistant", "content": "<think>a & b</think>"}}
    text = json.dumps(line, separators=(",", ":"), ensure_ascii=False)
    go = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    stored = bodies.stored(go + "\n" + go + "\n")
    assert isinstance(stored, dict)
    assert stored["form"] == "compact-go+newline"
    assert stored["lines"][0]["message"]["content"] == "<think>a & b</think>"
    assert bodies.text(stored) == go + "\n" + go + "\n"


RERECORDED = """
import ollama
import pytest
from conftest import URL

@pytest.mark.harness
def test_whole():
    with ollama.Client(host=URL) as client:
        reply = client.chat(model="llama3.2", messages=[{"role": "user", "content": "refund?"}])
    assert reply.message.content
"""


class Timed:
    """Ollama's whole reply as a real server sends it: its time and durations new each call."""

    def __init__(self, text: str) -> None:
        self.text, self.calls = text, 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.calls += 1
        message = {"role": "assistant", "content": self.text}
        reply = {
            "model": "llama3.2",
            "created_at": f"2025-09-07T02:22:4{self.calls}.828353215Z",
            "message": message,
            "done_reason": "stop",
            "done": True,
            "total_duration": 6566213714 + self.calls,
            "load_duration": 5294118352 * self.calls,
            "prompt_eval_count": 25,
            "prompt_eval_duration": 382828622 - self.calls,
            "eval_count": 5,
            "eval_duration": 883124962 + 7 * self.calls,
        }
        return Reply(raw=json.dumps(reply, separators=(",", ":")))


def test_a_re_recording_keeps_the_file_still_and_changes_name_a_new_answer(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    app = project(pytester, server, test_app=RERECORDED)
    server.handler = Timed("The refund takes five days.")
    run(app, "--harness-live").assert_outcomes(passed=1)
    (first,) = cassettes(app).values()
    run(app, "--harness-live", "--harness-report=r.json").assert_outcomes(passed=1)
    assert cassettes(app) == {"test_app/test_whole.yaml": first}  # times and durations aside
    (same,) = json.loads((app.path / "r.json").read_text())["changes"]
    assert same["kind"] == "same"

    server.handler = Timed("The refund takes three days.")
    run(app, "--harness-live", "--harness-report=r.json").assert_outcomes(passed=1)
    (changed,) = json.loads((app.path / "r.json").read_text())["changes"]
    assert changed["kind"] == "changed"
    assert changed["reasons"] == ["application call 1: the answer changed"]
