"""Malformed input ends in a value or a documented error, never a raw Python error (issue 24).

Four surfaces read what the harness does not control:

- a cassette file, its bytes and its parsed structure, loaded as a test opens its cassette
  (``store.load``), then replayed, missed, and recorded into (``write.merge_and_write``);
- a provider's chat completion and its stream (``read_completion`` / ``read_stream``);
- recorded model traffic in four wire formats, plain and SSE (``_wire.recognise``);
- a judge's reply, read as a tribunal reads it (``Agent.parse``).

The property tests feed plausible-but-wrong values: a well-formed document with one field
replaced by a value of another type, removed, or nested deep; recursive JSON-like values;
cut or spliced text; YAML that JSON cannot hold. Each asserts a value, or the error
``pytest_harness.errors`` documents for that surface. The example tests pin each crash the
fuzzing found to the message that now replaces it.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from pytest_harness._agent import Agent
from pytest_harness._cassettes import bodies, interactions, matching, store
from pytest_harness._cassettes.scrub import Redaction
from pytest_harness._cassettes.write import FORMAT_VERSION, merge_and_write
from pytest_harness._model.response import ModelResponse
from pytest_harness._wire import Recognised, recognise
from pytest_harness._wire.chat import read_completion, read_stream
from pytest_harness.errors import (
    AllAgentsFailed,
    CassetteError,
    JudgeOutputError,
    ProviderResponseError,
)
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal._tribunal import Tribunal

pytestmark = pytest.mark.harness(cassette=False)
T = TypeVar("T")

# Property tests run bounded (the same examples every time, a few seconds each at most);
# deep values make slow, large examples on purpose.
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
HINT = "re-record it with pytest 'test' --harness-live"


# Values: JSON-like, recursive, some deep, some of the wrong type for anything.


class Deep:
    """A value nested ``depth`` levels, written into JSON text as it is (``dumps``): Python's
    own json.dumps would run out of stack on the deepest ones."""

    def __init__(self, depth: int, opener: str) -> None:
        self.depth, self.opener = depth, opener

    def text(self) -> str:
        if self.opener == "[":
            return "[" * self.depth + "1" + "]" * self.depth
        return '{"a": ' * self.depth + "1" + "}" * self.depth

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.opener!r})"


def dumps(value: Any) -> str:
    """JSON text of ``value``, each ``Deep`` in it written out in full."""
    deep: list[Deep] = []

    def placeholder(found: Any) -> str:  # longer than any text the strategies generate
        deep.append(found)
        return f"\0pytest-harness-deep-{len(deep) - 1}\0"

    text = json.dumps(value, default=placeholder)
    pattern = r'"\\u0000pytest-harness-deep-(\d+)\\u0000"'
    return re.sub(pattern, lambda m: deep[int(m.group(1))].text(), text)


TRICKY_TEXT = [
    "",
    "abc",
    "http://host:99999/",
    "http://[::1/",
    "relative/path",
    "gzip",
    "REDACTED",
    "{",
    '{"a": [1, 2',
    "[1]",
    "\x00",
    "data: {}\n\n",
    "sk-" + "a" * 30,
]
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(TRICKY_TEXT)
)
json_like = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
# Up to 5,000 levels: hypothesis raises the recursion limit while it runs a test (to about
# 2,000), so the deepest go past it as they go past the usual 1,000 outside it.
deep_values = st.builds(Deep, st.integers(1, 5_000), st.sampled_from(["[", "{"]))
# The same as text inside a string: a request body, tool arguments, a judge's reply.
deep_texts = deep_values.map(Deep.text)
wrong_values = json_like | deep_values | deep_texts
json_texts = st.text(max_size=20) | deep_texts | json_like.map(dumps)


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path to every value inside a JSON value (the root excluded)."""
    if isinstance(value, (dict, list)):
        for key, child in value.items() if isinstance(value, dict) else enumerate(value):
            yield (*path, key)
            yield from paths(child, (*path, key))


DELETE = object()


class Added:
    """A value to add beside the one at a path, as a field the harness does not read."""

    def __init__(self, value: Any) -> None:
        self.value = value


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``value`` with the value at ``path`` replaced by ``new`` (``DELETE``: removed;
    ``Added``: kept, the new value added beside it)."""
    if not path:
        return new
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    head, rest = path[0], path[1:]
    if rest:
        copy[head] = replaced(value[head], rest, new)
    elif new is DELETE:
        del copy[head]
    elif isinstance(new, Added) and isinstance(copy, dict):
        copy[f"{head}_extra"] = new.value
    else:
        copy[head] = new.value if isinstance(new, Added) else new
    return copy


def mutations(document: Any) -> st.SearchStrategy[Any]:
    """``document`` with one of its values replaced by a wrong one, removed, or added to."""
    where = st.sampled_from(list(paths(document)))
    change = wrong_values | st.just(DELETE) | st.builds(Added, wrong_values)
    return st.builds(replaced, st.just(document), where, change)


# Cassettes.

REQUEST_BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Capital of France?"}],
    "temperature": 0,
    "api_key": "not-a-real-key",
}
COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Paris.",
                "reasoning_content": "The capital.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
}
CHAT_URL = "https://api.openai.com/v1/chat/completions"
INTERACTION: dict[str, Any] = {
    "request": {
        "method": "POST",
        "uri": CHAT_URL + "?key=REDACTED",
        "body": json.dumps(REQUEST_BODY),
        "headers": {"content-type": ["application/json"], "authorization": ["REDACTED"]},
    },
    "response": {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["application/json"], "set-cookie": ["REDACTED"]},
        "body": {"string": json.dumps(COMPLETION)},
    },
}
BINARY_INTERACTION: dict[str, Any] = {
    "request": {
        "method": "POST",
        "uri": "http://127.0.0.1:8000/upload",
        "body": {"base64": base64.b64encode(b"\xff\xfe binary").decode()},
        "headers": {"content-type": "application/octet-stream"},
    },
    "response": {
        "status": {"code": 201},
        "headers": {},
        "body": {"base64": base64.b64encode(b"\x89PNG").decode()},
    },
}
CASSETTE: dict[str, Any] = {
    "version": FORMAT_VERSION,
    "metadata": {"run": "run-1", "verdicts": {"tests/t.py::test_x": {"run": "run-1"}}},
    "interactions": [INTERACTION, BINARY_INTERACTION],
}


def load(path: Path) -> store.HarnessCassette:
    """The cassette at ``path``, loaded as a test in replay mode opens it."""
    return store.load(
        path,
        mode="none",
        ignore=("temperature",),
        redaction=Redaction.with_extra(body_fields=("api_key", "messages.0.content")),
        rerecord_hint=lambda: HINT,
        watcher=watch,
    )


def watch(request: Any, response: Mapping[str, Any], replayed: bool) -> None:
    """What a test's cassette slot does with each interaction: read the model reply in it."""
    found = recognise(
        request.uri,
        request.body,
        int(response["status"]["code"]),
        response["headers"],
        response["body"]["string"],
    )
    assert found is None or isinstance(found, Recognised)


def use(cassette: store.HarnessCassette) -> None:
    """Replay every recording, describe a miss, as a test does with its cassette."""
    from vcr.request import Request

    for request, _ in list(cassette.data):
        _, error = outcome(functools.partial(cassette.play_response, request), CassetteError)
        if error is not None:  # a body its headers say is damaged: named, with the fix
            assert str(cassette.file) in error
            assert "--harness-live" in error
    elsewhere = Request("POST", CHAT_URL, json.dumps({**REQUEST_BODY, "model": "other"}), {})
    assert "no recording in" in cassette.miss_message(elsewhere)


def record_into(path: Path) -> None:
    """Add an interaction to the file, as a recording test does once it passes."""
    merge_and_write(path, [INTERACTION], mode="new", run_id="run-2", secrets=())


def outcome(call: Callable[[], T], documented: type[Exception]) -> tuple[T | None, str | None]:
    """``call``'s value, or the message of the ``documented`` error it raised; any other
    exception propagates and fails the test."""
    try:
        return call(), None
    except documented as error:
        return None, str(error)


def check_cassette_text(path: Path, text: bytes) -> None:
    """Load ``text`` as a cassette: it loads, replays and takes a recording, or every step is a
    CassetteError that names the file and the fix, and the file stays as it was."""
    path.write_bytes(text)
    cassette, error = outcome(lambda: load(path), CassetteError)
    if cassette is None:
        assert str(path) in str(error)
        assert "--harness-live" in str(error)  # the fix
        if "it is empty" in str(error) or "holds no recorded interactions" in str(error):
            record_into(path)  # nothing to lose: recording gives it its first interaction
            assert len(load(path).data) == 1
            return
        with pytest.raises(CassetteError):  # recording into it would not overwrite it either
            record_into(path)
        assert path.read_bytes() == text
        return
    use(cassette)
    _, error = outcome(lambda: record_into(path), CassetteError)
    if error is not None:  # a key-like string the generator wrote: the secret scan refused it
        assert error.startswith(f"refusing to write cassette {path}")
        return
    assert len(load(path).data) == len(cassette.data) + 1  # what it wrote, it reads back


@pytest.fixture(scope="module")
def cassette_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cassettes")


def as_yaml(document: Any) -> str:
    return yaml.safe_dump(document, width=10_000)


def serialized(document: Any, style: str) -> bytes:
    if style == "yaml" and "Deep(" not in repr(document):
        return as_yaml(document).encode()
    return dumps(document).encode()


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(document=mutations(CASSETTE) | wrong_values, style=st.sampled_from(["json", "yaml"]))
def test_a_cassette_with_any_field_wrong_loads_or_is_a_cassette_error(
    cassette_dir: Path, document: Any, style: str
) -> None:
    check_cassette_text(cassette_dir / "structure.yaml", serialized(document, style))


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    interactions=st.lists(mutations(INTERACTION), min_size=1, max_size=4),
    metadata=wrong_values,
)
def test_cassettes_of_several_wrong_interactions(
    cassette_dir: Path, interactions: list[Any], metadata: Any
) -> None:
    document = {"version": 1, "metadata": metadata, "interactions": interactions}
    check_cassette_text(cassette_dir / "several.yaml", dumps(document).encode())


@settings(derandomize=True, max_examples=100, deadline=None, suppress_health_check=SLOW)
@given(request=json_texts, response=json_texts)
def test_any_body_text_in_a_cassette_is_matched_and_read(
    cassette_dir: Path, request: str, response: str
) -> None:
    """Bodies are the application's text: matched, redacted and read (or left) as they are."""
    document = replaced(CASSETTE, ("interactions", 0, "request", "body"), request)
    document = replaced(document, ("interactions", 0, "response", "body", "string"), response)
    path = cassette_dir / "bodies.yaml"
    path.write_text(dumps(document))
    cassette = load(path)
    assert cassette.data[0][0].body == request.encode()
    use(cassette)


def spliced(text: bytes, at: int, cut: int, insert: bytes) -> bytes:
    at = at % (len(text) + 1)
    return text[:at] + insert + text[at + cut :]


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    style=st.sampled_from(["json", "yaml"]),
    at=st.integers(0, 10_000),
    cut=st.integers(0, 40),
    insert=st.binary(max_size=8) | st.sampled_from([b"[", b"{", b'"', b"\n", b": ", b"&a", b"*a"]),
)
def test_any_cassette_bytes_load_or_are_a_cassette_error(
    cassette_dir: Path, style: str, at: int, cut: int, insert: bytes
) -> None:
    whole = serialized(CASSETTE, style)
    check_cassette_text(cassette_dir / "bytes.yaml", spliced(whole, at, cut, insert))


# What YAML can say and JSON cannot: dates, bytes, sets, aliases, keys that are not text...
YAML_VALUES = [
    "2024-01-01",
    "2001-02-30",
    "!!binary aGVsbG8=",
    "!!set {a}",
    "!!omap [a: 1]",
    "&a [*a]",
    "[&b [x, x], [*b, *b]]",
    "{1: x}",
    "{? [a] : b}",
    "!!float abc",
    "!!int 0b" + "1" * 20_000,
    "1" * 5_000,
    ".nan",
    "-.inf",
    "~",
    "!!python/object:os.system x",
    "[" * 1_500 + "]" * 1_500,
    "'" + "x" * 200 + "'",
    "[GET]",
    "{code: 200}",
    "[]",
]
YAML_SLOTS = [
    ("metadata", "note"),
    ("interactions", 0, "request", "method"),
    ("interactions", 0, "request", "uri"),
    ("interactions", 0, "request", "body"),
    ("interactions", 0, "request", "headers", "content-type"),
    ("interactions", 0, "response", "status", "code"),
    ("interactions", 0, "response", "status"),
    ("interactions", 0, "response", "headers"),
    ("interactions", 0, "response", "body", "string"),
    ("interactions", 0, "response", "extra"),
    ("interactions", 1),
]
SLOT = "SLOT-VALUE"


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(slot=st.sampled_from(YAML_SLOTS), value=st.sampled_from(YAML_VALUES))
def test_a_hand_edited_yaml_cassette_holding_what_json_cannot(
    cassette_dir: Path, slot: tuple[Any, ...], value: str
) -> None:
    text = as_yaml(replaced(CASSETTE, slot, SLOT)).replace(SLOT, value)
    check_cassette_text(cassette_dir / "yaml.yaml", text.encode())


# Provider replies: a chat completion and its stream, read as the seam reads litellm's.

SSE_HEADERS = {"content-type": ["text/event-stream"]}
Events = list[tuple[str, Any]]


def sse(stream: Events) -> str:
    return "".join(
        (f"event: {name}\n" if name else "") + f"data: {dumps(data)}\n\n" for name, data in stream
    )


CHUNKS: list[dict[str, Any]] = [
    {"id": "c1", "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {"content": "Par"}}]},
    {"id": "c1", "choices": [{"index": 0, "delta": {"content": "is.", "reasoning_content": "r"}}]},
    {
        "id": "c1",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{"}}
                    ]
                },
            }
        ],
    },
    {
        "id": "c1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
            }
        ],
    },
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
]


def chunk(delta: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta}], **fields}


def read_body(data: Any) -> ModelResponse:
    return read_completion(data, model="openai/gpt-4o-mini", cost=lambda _: None, started=0.0)


def read_chunks(chunks: Any) -> ModelResponse:
    return read_stream(
        chunks, finish_reason="stop", model="openai/gpt-4o-mini", cost=lambda _: None, started=0
    )


def assert_well_typed(response: ModelResponse) -> None:
    for text in (response.content, response.reasoning, response.finish_reason):
        assert text is None or isinstance(text, str)
    for call in response.tool_calls:
        assert call.id is None or (isinstance(call.id, str) and call.id)  # as given, or None
        assert isinstance(call.name, str)
        assert isinstance(call.raw_arguments, str)
        assert call.arguments is None or isinstance(call.arguments, Mapping)
    assert all(isinstance(kind, str) and kind for kind in response.media)
    usage = response.usage
    assert all(type(n) is int for n in (usage.prompt_tokens, usage.completion_tokens))
    assert isinstance(response.text, str)


def reads_or_is_provider_error(read: Callable[[Any], ModelResponse], data: Any) -> None:
    response, error = outcome(lambda: read(data), ProviderResponseError)
    if response is None:
        assert re.match(r"model 'openai/gpt-4o-mini' answered a .* that cannot be read: ", error)
    else:
        assert_well_typed(response)


def materialized(value: Any) -> Any:
    """``value`` with each ``Deep`` made a real nested value, as a parsed body holds it."""
    if isinstance(value, Deep):
        inner: Any = 1
        for _ in range(value.depth):
            inner = [inner] if value.opener == "[" else {"a": inner}
        return inner
    if isinstance(value, dict):
        return {key: materialized(child) for key, child in value.items()}
    if isinstance(value, list):
        return [materialized(child) for child in value]
    return value


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(data=mutations(COMPLETION) | wrong_values)
def test_a_chat_completion_with_any_field_wrong(data: Any) -> None:
    reads_or_is_provider_error(read_body, materialized(data))
    found = recognise(CHAT_URL, json.dumps(REQUEST_BODY), 200, {}, dumps(data))
    if found is not None:
        assert found.api == "openai.chat"
        assert_well_typed(found.response)


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    index=st.integers(0, len(CHUNKS) - 1),
    changed=st.sampled_from(CHUNKS).flatmap(mutations) | wrong_values,
)
def test_a_stream_with_any_chunk_field_wrong(index: int, changed: Any) -> None:
    chunks = [*CHUNKS[:index], changed, *CHUNKS[index + 1 :]]
    reads_or_is_provider_error(read_chunks, [materialized(c) for c in chunks])
    found = recognise(CHAT_URL, None, 200, SSE_HEADERS, sse([("", c) for c in chunks]))
    if found is not None:
        assert found.api == "openai.chat"
        assert_well_typed(found.response)


# OpenAI-compatible providers' replies (issue 42): content parts (Mistral), a reasoning
# field (Groq, Cerebras, OpenRouter), reasoning_details (OpenRouter), error chunks, [DONE].

PROVIDER_COMPLETION: dict[str, Any] = {
    "id": "9abe8b73",
    "object": "chat.completion",
    "model": "magistral-medium-latest",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "Rivers."}]},
                    {"type": "text", "text": "Find a ford."},
                ],
                "reasoning": "Rivers.",
                "reasoning_details": [{"type": "reasoning.text", "text": "Rivers.", "index": 0}],
            },
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
}
PROVIDER_CHUNKS: list[dict[str, Any]] = [
    chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Riv"}]}]}),
    chunk({"content": "", "reasoning": "ers.", "reasoning_details": [{"type": "reasoning.text"}]}),
    chunk({"content": [{"type": "text", "text": "Find a ford."}]}),
    {**chunk({"content": ""}), "error": {"code": 400, "message": "Token limit reached"}},
    {**chunk({}), "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
]


def assert_finished_or_not(response: ModelResponse, done: bool) -> None:
    """Interrupted: a failed stream (its error shown), or one with no finish reason that did
    not come to its end; an interrupted reply has no finish reason."""
    if response.interrupted:
        assert response.finish_reason is None
        assert not done or (response.refusal or "").startswith("error: ")
    elif not done:
        assert response.finish_reason


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(data=mutations(PROVIDER_COMPLETION))
def test_a_providers_chat_completion_with_any_field_wrong(data: Any) -> None:
    reads_or_is_provider_error(read_body, materialized(data))
    found = recognise(CHAT_URL, None, 200, {}, dumps(data))
    if found is not None:
        assert found.api == "openai.chat"
        assert_well_typed(found.response)
        assert isinstance(found.as_sent(), bool)


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    chunks=st.lists(
        st.sampled_from(PROVIDER_CHUNKS) | st.sampled_from(PROVIDER_CHUNKS).flatmap(mutations),
        max_size=5,
    ),
    done=st.booleans(),
)
def test_a_providers_stream_with_any_chunk_field_wrong(chunks: list[Any], done: bool) -> None:
    """Read as the seam reads litellm's chunks, and as recognition reads the stream's text
    and its stored form alike, whether it sent its ``data: [DONE]`` or was cut before it."""
    reads_or_is_provider_error(read_chunks, [materialized(c) for c in chunks])
    text = sse([("", c) for c in chunks]) + ("data: [DONE]\n\n" if done else "")
    found = recognise(CHAT_URL, None, 200, SSE_HEADERS, text)
    assert interactions.recognised(stored_reply(text, SSE_HEADERS)) == found
    if found is not None:
        assert found.api == "openai.chat"
        assert_well_typed(found.response)
        assert_finished_or_not(found.response, done)
        assert isinstance(found.as_sent(), bool)


def stored_reply(text: str, headers: dict[str, Any]) -> dict[str, Any]:
    """An interaction answering ``text``, its body in the form a cassette stores it."""
    stored = bodies.stored(text)
    return {
        "request": {"method": "POST", "uri": CHAT_URL, "body": None, "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": stored if isinstance(stored, dict) else {"string": stored},
        },
    }


@settings(derandomize=True, max_examples=100, deadline=None, suppress_health_check=SLOW)
@given(arguments=json_texts)
def test_any_tool_arguments_text_is_parsed_or_kept_raw(arguments: str) -> None:
    """A model writes the arguments: they parse to an object, or stay raw (``arguments``
    None), in a completion, a stream and recorded traffic alike."""
    where = ("choices", 0, "message", "tool_calls", 0, "function", "arguments")
    data = replaced(COMPLETION, where, arguments)
    delta = {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": arguments}}]}
    found = recognise(CHAT_URL, None, 200, {}, json.dumps(data))
    assert found is not None
    for response in (read_body(data), read_chunks([chunk(delta)]), found.response):
        (call,) = response.tool_calls
        assert call.raw_arguments == arguments
        assert call.arguments is None or isinstance(call.arguments, dict)


# Recorded traffic in the four wire formats, plain and streamed.

RESPONSE: dict[str, Any] = {
    "object": "response",
    "model": "gpt-4o-mini",
    "status": "completed",
    "output": [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        {"type": "message", "content": [{"type": "output_text", "text": "Paris."}]},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a": 1}'},
    ],
    "usage": {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12},
}
ANTHROPIC: dict[str, Any] = {
    "type": "message",
    "model": "claude-haiku-4-5",
    "content": [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "Paris."},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 9, "output_tokens": 3},
}
GEMINI: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {"text": "hmm", "thought": True},
                    {"text": "Paris."},
                    {"functionCall": {"name": "f", "args": {"city": "Paris"}}},
                ]
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3},
    "modelVersion": "gemini-2.5-flash",
}
RESPONSES_STREAM: Events = [
    ("response.created", {"type": "response.created", "response": {"model": "gpt-4o-mini"}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Paris."}),
    (
        "response.output_item.done",
        {"type": "response.output_item.done", "item": RESPONSE["output"][2]},
    ),
    ("response.completed", {"type": "response.completed", "response": RESPONSE}),
]
ANTHROPIC_STREAM: Events = [
    ("message_start", {"type": "message_start", "message": {"model": "claude-haiku-4-5"}}),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'},
        },
    ),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    ("message_stop", {"type": "message_stop"}),
]
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
WIRE: list[tuple[str, str, Any]] = [
    ("openai.responses", "https://api.openai.com/v1/responses", RESPONSE),
    ("anthropic.messages", "https://api.anthropic.com/v1/messages", ANTHROPIC),
    ("gemini.generate", f"{GEMINI_URL}:generateContent", GEMINI),
    ("gemini.generate", f"{GEMINI_URL}:streamGenerateContent", [GEMINI, GEMINI]),
    ("openai.chat", CHAT_URL, COMPLETION),
]
WIRE_STREAMS: list[tuple[str, str, Events]] = [
    ("openai.responses", "https://api.openai.com/v1/responses", RESPONSES_STREAM),
    ("anthropic.messages", "https://api.anthropic.com/v1/messages", ANTHROPIC_STREAM),
    ("gemini.generate", f"{GEMINI_URL}:streamGenerateContent?alt=sse", [("", GEMINI)] * 2),
    ("openai.chat", CHAT_URL, [("", data) for data in CHUNKS]),
]


def recognised_or_none(api: str, uri: str, body: str, headers: Mapping[str, Any]) -> None:
    """``recognise`` never raises: a reply of the expected API, well typed, or None."""
    found = recognise(uri, json.dumps({"model": ["not", "text"]}), 200, headers, body)
    if found is not None:
        assert (found.api, found.provider) == (api, api.partition(".")[0])
        assert isinstance(found.model, str)
        assert_well_typed(found.response)


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    wire=st.sampled_from(WIRE).flatmap(
        lambda w: st.tuples(st.just(w[0]), st.just(w[1]), mutations(w[2]))
    ),
    cut=st.integers(0, 5_000) | st.none(),
)
def test_a_plain_reply_in_any_wire_format_with_any_field_wrong(
    wire: tuple[str, str, Any], cut: int | None
) -> None:
    api, uri, body = wire
    text = dumps(body)
    recognised_or_none(api, uri, text if cut is None else text[:cut], {})


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    wire=st.sampled_from(WIRE_STREAMS).flatmap(
        lambda w: st.tuples(
            st.just(w[0]),
            st.just(w[1]),
            st.just(w[2]),
            st.integers(0, len(w[2]) - 1),
            st.sampled_from([data for _, data in w[2]]).flatmap(mutations) | wrong_values,
        )
    ),
    cut=st.integers(0, 5_000) | st.none(),
)
def test_a_streamed_reply_in_any_wire_format_with_any_event_wrong(
    wire: tuple[str, str, Events, int, Any], cut: int | None
) -> None:
    api, uri, stream, index, data = wire
    changed = [*stream[:index], (stream[index][0], data), *stream[index + 1 :]]
    text = sse(changed)
    recognised_or_none(api, uri, text if cut is None else text[:cut], SSE_HEADERS)


# A judge's reply, read as a tribunal reads it.

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass"],
}


class VerdictModel(BaseModel):
    passed: bool
    reason: str = ""
    details: Any = None


def read_reply(text: str, output: Any) -> Any:
    """What ``Agent.acall`` does with the reply's text once the model answered."""
    return Agent(input="Is it polite?", output=output).parse(ModelResponse(content=text))


replies = st.one_of(
    st.text(max_size=40),
    json_like.map(dumps),
    deep_values.map(dumps),
    st.tuples(st.text(max_size=10), wrong_values.map(dumps), st.text(max_size=10)).map("".join),
    wrong_values.map(lambda value: f"Verdict:\n```json\n{dumps(value)}\n```"),
    st.builds(
        lambda value, cut: dumps({"pass": True, "reason": value})[:cut],
        wrong_values,
        st.integers(0, 3_000),
    ),
    st.builds(lambda n: "[" * n, st.integers(1, 3_000)),
    # Fits VerdictModel but for one field: pydantic reads (and dumps) the rest.
    st.builds(
        lambda passed, details: dumps({"passed": passed, "reason": "ok", "details": details}),
        wrong_values,
        wrong_values,
    ),
)


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(text=replies, output=st.sampled_from([VERDICT_SCHEMA, VerdictModel]))
def test_a_judge_reply_reads_or_is_a_judge_output_error(text: str, output: Any) -> None:
    value, error = outcome(lambda: read_reply(text, output), JudgeOutputError)
    if error is None:
        assert isinstance(value, dict)
    else:
        assert error.startswith("the reply ")


# The crashes the fuzzing found, each pinned to its message.


def write(path: Path, document: Any) -> Path:
    path.write_text(dumps(document))
    return path


def cassette_error(path: Path) -> str:
    before = path.read_bytes()
    with pytest.raises(CassetteError) as caught:
        load(path)
    assert path.read_bytes() == before  # nothing the user had is lost
    message = str(caught.value)
    assert message.startswith(f"cassette {path} cannot be read: ")
    assert message.endswith(
        "The file was left as it is: fix it, or delete it and re-record the test with "
        "pytest --harness-live."
    )
    return message.removeprefix(f"cassette {path} cannot be read: ").partition(". The file")[0]


def with_interaction(change: tuple[Any, ...], value: Any, count: int = 3) -> dict[str, Any]:
    interactions = [INTERACTION] * (count - 1) + [replaced(INTERACTION, change, value)]
    return {**CASSETTE, "interactions": interactions}


@pytest.mark.parametrize(
    ("change", "value", "problem"),
    [
        pytest.param(
            ("request", "method"),
            DELETE,
            "interaction 3 of 3: request.method is missing",
            id="no-method",
        ),
        pytest.param(
            ("request", "method"),
            ["POST"],
            "interaction 3 of 3: request.method must be text, got a list of 1 item",
            id="method-list",
        ),
        pytest.param(
            ("response", "status"),
            None,
            "interaction 3 of 3: response.status must be a mapping, got null",
            id="status-null",
        ),
        pytest.param(
            ("response", "status"),
            {"message": "OK"},
            "interaction 3 of 3: response.status.code is missing",
            id="status-without-code",
        ),
        pytest.param(
            ("response", "status", "code"),
            None,
            "interaction 3 of 3: response.status.code must be an integer, got null",
            id="code-null",
        ),
        pytest.param(
            ("response", "status", "code"),
            {"value": 200},
            "interaction 3 of 3: response.status.code must be an integer, got a mapping of 1 item",
            id="code-object",
        ),
        pytest.param(
            ("response", "status", "code"),
            "200",
            "interaction 3 of 3: response.status.code must be an integer, got text ('200')",
            id="code-text",
        ),
        pytest.param(
            ("response", "status", "code"),
            2000,
            "interaction 3 of 3: response.status.code must be an HTTP status (100-599), got an "
            "integer (2000)",
            id="code-out-of-range",
        ),
        pytest.param(
            ("request", "uri"),
            ["https://x"],
            "interaction 3 of 3: request.uri must be text, got a list of 1 item",
            id="uri-list",
        ),
        pytest.param(
            ("request", "uri"),
            "http://host:99999/v1",
            "interaction 3 of 3: request.uri is not a URL (Port out of range 0-65535): "
            "'http://host:99999/v1'",
            id="uri-bad-port",
        ),
        pytest.param(
            ("request", "headers", "content-type"),
            [],
            "interaction 3 of 3: request.headers.content-type must be text or a list of text, "
            "got a list of 0 items",
            id="header-empty-list",
        ),
        pytest.param(
            ("response", "headers"),
            "content-type: application/json",
            "interaction 3 of 3: response.headers must be a mapping of names to lists of text, "
            "got text ('content-type: application/json')",
            id="headers-text",
        ),
        pytest.param(
            ("response", "body"),
            "Paris.",
            "interaction 3 of 3: response.body must be a mapping with 'string', 'base64', "
            "'json' or 'events', got text ('Paris.')",
            id="body-text",
        ),
        pytest.param(
            ("response", "body"),
            {"base64": "abc"},
            "interaction 3 of 3: response.body.base64 is not base64 (Incorrect padding)",
            id="body-bad-base64",
        ),
        pytest.param(
            ("response", "body"),
            {"json": {"a": 1}, "form": "pretty"},
            "interaction 3 of 3: response.body: form must be one of compact, compact-ascii, "
            "spaced, spaced-ascii, indented, indented-ascii, compact-go (+newline), got 'pretty'",
            id="body-unknown-form",
        ),
        pytest.param(
            ("response", "body"),
            {"events": [{"event": "x"}], "form": "compact"},
            "interaction 3 of 3: response.body: each event must be a mapping with 'data' or 'text'",
            id="body-event-without-data",
        ),
        pytest.param(
            ("request", "body"),
            7,
            "interaction 3 of 3: request.body must be text or a mapping with 'base64' or "
            "'json', got an integer (7)",
            id="request-body-number",
        ),
        pytest.param(
            ("response",),
            ["status", 200],
            "interaction 3 of 3: response must be a mapping, got a list of 2 items",
            id="response-list",
        ),
    ],
)
def test_a_wrong_field_names_the_interaction_and_the_field(
    tmp_path: Path, change: tuple[Any, ...], value: Any, problem: str
) -> None:
    path = write(tmp_path / "c.yaml", with_interaction(change, value))
    assert cassette_error(path) == problem


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        pytest.param("run-1", "metadata must be a mapping, got text ('run-1')", id="text"),
        pytest.param(["run-1"], "metadata must be a mapping, got a list of 1 item", id="list"),
        pytest.param(
            {"note": Deep(150, "[")}, "metadata nests deeper than 100 levels", id="150-deep"
        ),
        pytest.param(
            {"note": Deep(1_000, "{")}, "its values nest deeper than 100 levels", id="1000-deep"
        ),
    ],
)
def test_wrong_metadata_is_a_cassette_error(tmp_path: Path, metadata: Any, problem: str) -> None:
    path = write(tmp_path / "c.yaml", {**CASSETTE, "metadata": metadata})
    assert cassette_error(path) == problem


def test_a_cassette_nested_a_thousand_deep_is_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(Deep(1_000, "[").text())
    assert cassette_error(path) == "its values nest deeper than 100 levels"


def test_an_interaction_nested_deep_under_a_field_the_harness_does_not_read(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "c.yaml", with_interaction(("response", "note"), Deep(120, "[")))
    assert cassette_error(path) == "interaction 3 of 3: response.note nests deeper than 100 levels"


@pytest.mark.parametrize(
    ("slot", "value", "problem"),
    [
        pytest.param(
            ("metadata", "note"),
            "&a [*a]",
            "metadata.note[0] repeats a value (a YAML alias): write it out in full",
            id="alias-cycle",
        ),
        pytest.param(
            ("metadata", "note"),
            "2024-01-01",
            "metadata.note is a date value (datetime.date(2024, 1, 1)), which a JSON cassette "
            "cannot hold",
            id="date",
        ),
        pytest.param(
            ("interactions", 0, "request", "headers"),
            "{1: [a]}",
            "interaction 1 of 2: request.headers has a name that is not text: an integer (1)",
            id="header-name-number",
        ),
        pytest.param(
            ("interactions", 0, "response", "body", "string"),
            "!!binary aGVsbG8=",
            "interaction 1 of 2: response.body.string must be text, got a bytes value (b'hello')",
            id="binary-body",
        ),
    ],
)
def test_yaml_that_json_cannot_hold_is_a_cassette_error(
    tmp_path: Path, slot: tuple[Any, ...], value: str, problem: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(as_yaml(replaced(CASSETTE, slot, SLOT)).replace(SLOT, value))
    assert cassette_error(path) == problem


def test_a_value_pyyaml_cannot_convert_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        as_yaml(replaced(CASSETTE, ("metadata", "when"), SLOT)).replace(SLOT, "2001-02-30")
    )
    with pytest.raises(
        CassetteError, match=r"does not parse: day is out of range for month\. Fix the file"
    ):
        load(path)


def test_a_thousand_deep_request_body_is_matched_as_text(tmp_path: Path) -> None:
    """A body too deep for Python's JSON parser still replays, compared as the text it is."""
    body = Deep(1_000, "[").text()
    path = write(tmp_path / "c.yaml", with_interaction(("request", "body"), body, count=1))
    cassette = load(path)
    ((request, _),) = cassette.data
    assert request.body == body.encode()
    use(cassette)


def test_a_replay_miss_of_a_request_too_deep_to_parse_is_described(tmp_path: Path) -> None:
    from vcr.request import Request

    cassette = load(write(tmp_path / "c.yaml", CASSETTE))
    missed = Request("POST", CHAT_URL, Deep(1_000, "{").text(), {})
    message = cassette.miss_message(missed)
    assert message.startswith(f"no recording in {tmp_path / 'c.yaml'} matches this request:")
    assert "closest recorded request:" in message
    assert message.endswith(HINT)


def test_a_hand_edited_cassette_may_leave_out_what_vcrpy_needs(tmp_path: Path) -> None:
    """No status message, a header as plain text, no body: filled in, not a crash in replay."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "interactions:\n"
        "- request: {method: GET, uri: 'https://example.com/v1/models'}\n"
        "  response:\n"
        "    status: {code: 200}\n"
        "    headers: {content-type: application/json}\n"
    )
    cassette = load(path)
    ((_, response),) = cassette.data
    assert response["status"] == {"code": 200, "message": ""}
    assert response["headers"] == {"content-type": ["application/json"]}
    assert response["body"] == {"string": b""}
    use(cassette)


@pytest.mark.parametrize(
    ("chunks", "problem"),
    [
        pytest.param(  # a list of parts is read (Mistral's), a part on its own is not
            [chunk({"content": "Hi"}), chunk({"content": {"type": "text", "text": "there"}})],
            "chunk 2 of 2: choices[0].delta.content must be a string or a list, got an object "
            "with keys 'type', 'text'",
            id="content-object",
        ),
        pytest.param(
            [chunk({"tool_calls": {"index": 0, "function": {"name": "f"}}})],
            "chunk 1 of 1: choices[0].delta.tool_calls must be a list, got an object with keys "
            "'index', 'function'",
            id="tool-calls-object",
        ),
        pytest.param(
            [chunk({"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]})],
            "chunk 1 of 1: choices[0].delta.tool_calls[0].function.arguments must be a string, "
            "got an object with keys 'a'",
            id="arguments-object",
        ),
        pytest.param(
            [chunk({"tool_calls": [{"index": "0"}]})],
            "chunk 1 of 1: choices[0].delta.tool_calls[0].index must be an integer, got a "
            "string ('0')",
            id="index-text",
        ),
        pytest.param(
            [chunk({}, usage={"prompt_tokens": "9"})],
            "chunk 1 of 1: usage.prompt_tokens must be an integer, got a string ('9')",
            id="usage-text",
        ),
        pytest.param(
            [{"choices": "Hi"}],
            "chunk 1 of 1: choices must be a list, got a string ('Hi')",
            id="choices-text",
        ),
        pytest.param(
            ["data: {}"],
            "chunk 1 of 1: expected an object, got a string ('data: {}')",
            id="chunk-text",
        ),
    ],
)
def test_a_malformed_stream_chunk_is_a_provider_response_error(
    chunks: list[Any], problem: str
) -> None:
    with pytest.raises(ProviderResponseError) as caught:
        read_chunks(chunks)
    assert str(caught.value) == (
        f"model 'openai/gpt-4o-mini' answered a stream that cannot be read: {problem}. The "
        "provider's reply is not an OpenAI-style chat completion; check api_base and the "
        "model name."
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(
            {**COMPLETION, "choices": []},
            "choices must be a list of at least one choice, got a list of 0 items",
            id="no-choice",
        ),
        pytest.param(
            {"id": "x"}, "choices must be a list of at least one choice, got null", id="no-choices"
        ),
        pytest.param(
            replaced(COMPLETION, ("choices", 0, "message"), "Paris."),
            "choices[0].message must be an object, got a string ('Paris.')",
            id="message-text",
        ),
        pytest.param(
            replaced(COMPLETION, ("choices", 0, "message", "tool_calls", 0, "function"), "f"),
            "choices[0].message.tool_calls[0].function must be an object, got a string ('f')",
            id="function-text",
        ),
        pytest.param(
            {**COMPLETION, "usage": [9, 3]},
            "usage must be an object, got a list of 2 items",
            id="usage-list",
        ),
        pytest.param(
            replaced(COMPLETION, ("choices", 0, "finish_reason"), True),
            "choices[0].finish_reason must be a string, got a boolean (True)",
            id="finish-reason-bool",
        ),
    ],
)
def test_a_malformed_chat_completion_is_a_provider_response_error(data: Any, problem: str) -> None:
    with pytest.raises(ProviderResponseError) as caught:
        read_body(data)
    assert str(caught.value).startswith(
        f"model 'openai/gpt-4o-mini' answered a chat completion that cannot be read: {problem}. "
    )


def test_a_chunk_whose_model_is_an_object_still_reads() -> None:
    """``model`` is not read from a chunk (the call's model is): no error, the model asked."""
    chunks = [chunk({"content": "Hi"}, model={"name": "gpt-4o-mini"})]
    assert read_chunks(chunks).model == "openai/gpt-4o-mini"
    found = recognise(CHAT_URL, None, 200, SSE_HEADERS, sse([("", c) for c in chunks]))
    assert found is not None
    assert (found.model, found.response.content) == ("", "Hi")


def test_tool_arguments_too_deep_to_parse_are_kept_unparsed() -> None:
    raw = Deep(1_000, "{").text()
    data = replaced(
        COMPLETION, ("choices", 0, "message", "tool_calls", 0, "function", "arguments"), raw
    )
    (call,) = read_body(data).tool_calls
    assert (call.arguments, call.raw_arguments) == (None, raw)
    found = recognise(CHAT_URL, None, 200, {}, json.dumps(data))
    assert found is not None
    assert found.response.tool_calls[0].arguments is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(Deep(1_000, "[").text(), id="array"),
        pytest.param(Deep(1_000, "{").text(), id="object"),
        pytest.param("Verdict: " + Deep(1_000, "[").text(), id="in-prose"),
        pytest.param("```json\n" + Deep(1_000, "{").text() + "\n```", id="fenced"),
        pytest.param(Deep(150, "{").text(), id="parses-but-too-deep"),
        pytest.param("[" * 5_000, id="unclosed"),
    ],
)
def test_a_judge_reply_nested_too_deep_is_not_readable_json(text: str) -> None:
    with pytest.raises(
        JudgeOutputError, match="the reply is not readable JSON: it nests deeper than 100 levels"
    ) as caught:
        read_reply(text, VERDICT_SCHEMA)
    assert caught.value.raw == text


def test_a_tribunal_judge_replying_deep_json_fails_with_judge_output_error(
    server: LoopbackServer,
) -> None:
    """Over real HTTP: the judge fails as for any unreadable reply, the panel reports it."""
    server.queue(Reply(content=Deep(1_000, "[").text()))
    judge = type(
        "Deep",
        (Agent,),
        {"model": server.model, "params": server.params, "output": VERDICT_SCHEMA},
    )
    with pytest.raises(AllAgentsFailed) as caught:
        Tribunal(input="Is it polite?", agents=[judge]).call()
    (failure,) = caught.value.errors
    assert isinstance(failure["error"], JudgeOutputError)
    assert "the reply is not readable JSON" in str(failure["error"])


_HEADER_TEXT = st.text(max_size=12) | st.text("0123456789²٣ -", max_size=6)
_HEADER_VALUES = st.one_of(
    _HEADER_TEXT, st.lists(_HEADER_TEXT, max_size=3), st.integers(), st.none()
)


@given(
    st.dictionaries(
        st.sampled_from(["x-pytest-harness-call", "X-Pytest-Harness-Call", "accept", "X-Other"]),
        _HEADER_VALUES,
    )
)
def test_any_request_headers_give_a_seam_call_number_or_none(headers: dict[str, Any]) -> None:
    """The traffic check reads the seam's call number off any request without raising; the
    saved request never carries it, whatever the header's spelling."""
    number = matching.seam_call(headers)
    assert number is None or (isinstance(number, int) and number >= 0)
    saved = matching.untagged({"uri": "http://x", "headers": headers})
    assert all(name.lower() != matching.SEAM_HEADER for name in saved["headers"])
    assert {k: v for k, v in headers.items() if k.lower() != matching.SEAM_HEADER} == saved[
        "headers"
    ]


def test_a_numbered_seam_request_reads_back_its_number() -> None:
    assert matching.seam_call({"X-Pytest-Harness-Call": ["7"]}) == 7
    assert matching.seam_call({"x-pytest-harness-call": "12"}) == 12
    assert matching.seam_call({"accept": "gzip"}) is None
    assert matching.seam_call({"x-pytest-harness-call": "²"}) is None  # a digit, not a number


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_SPACINGS = st.sampled_from(
    [{}, {"separators": (",", ":")}, {"indent": 2}, {"indent": 3}, {"ensure_ascii": False}]
)


@settings(max_examples=200, deadline=None)
@given(text=json_texts | st.text(max_size=40), value=_JSON_VALUES, spacing=_SPACINGS)
def test_any_body_is_stored_so_that_it_gives_back_the_same_bytes(
    text: str, value: Any, spacing: dict[str, Any]
) -> None:
    """Bodies become JSON in the file only when writing them back is byte for byte exact."""
    written = json.dumps(value, **spacing)
    events = "".join(f"event: e{i}\ndata: {written}\n\n" for i in range(2)) + "data: [DONE]\n\n"
    for body in (text, written, written + "\n", events, events.replace("\n", "\r\n")):
        stored = bodies.stored(body)
        assert (stored if isinstance(stored, str) else bodies.text(stored)) == body
        assert bodies.body_bytes(stored) == body.encode()


def stream_text(chunks: list[Any], named: bool, done: bool = True) -> str:
    head = "event: chunk\n" if named else ""
    end = "data: [DONE]\n\n" if done else ""
    return "".join(f"{head}data: {dumps(chunk)}\n\n" for chunk in chunks) + end


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(
    reply=st.one_of(
        mutations(COMPLETION).map(dumps),
        json_like.map(dumps),
        st.builds(
            stream_text,
            st.lists(
                mutations(CHUNKS[1])
                | st.sampled_from(CHUNKS + PROVIDER_CHUNKS)
                | st.sampled_from(PROVIDER_CHUNKS).flatmap(mutations)
            ),
            st.booleans(),
            st.booleans(),
        ),
        st.text(max_size=20),
    ),
    request=st.sampled_from([REQUEST_BODY, {"messages": []}, "not json", None]),
    status=st.sampled_from([200, 200, 200, 201, 404, None, "200"]),
    streamed=st.booleans(),
)
def test_a_stored_reply_is_recognised_as_its_text_is(
    reply: str, request: Any, status: Any, streamed: bool
) -> None:
    """The seam's replay reads a reply from the file's stored form (``interactions.recognised``):
    it finds what ``recognise`` finds in the bytes that form writes back, for any body."""
    sent = (
        None
        if request is None
        else bodies.stored(request if isinstance(request, str) else json.dumps(request))
    )
    headers = {"Content-Type": ["text/event-stream" if streamed else "application/json"]}
    stored = bodies.stored(reply)
    interaction = {
        "request": {"method": "POST", "uri": CHAT_URL, "body": sent, "headers": {}},
        "response": {
            "status": {"code": status, "message": "OK"},
            "headers": headers,
            "body": stored if isinstance(stored, dict) else {"string": stored},
        },
    }
    asked = bodies.body_bytes(sent)
    assert interactions.recognised(interaction) == recognise(
        CHAT_URL, asked, status, headers, reply.encode()
    )


def test_a_json_body_and_an_event_stream_are_stored_as_their_values() -> None:
    reply = json.dumps({"id": "x", "choices": [{"message": {"content": "Paris"}}]}, indent=2)
    assert bodies.stored(reply + "\n") == {
        "json": {"id": "x", "choices": [{"message": {"content": "Paris"}}]},
        "form": "indented+newline",
    }
    stream = 'data: {"a":1}\n\ndata: [DONE]\n\n'
    assert bodies.stored(stream) == {
        "events": [{"data": {"a": 1}}, {"text": "[DONE]"}],
        "form": "compact",
    }
    assert bodies.stored('{"a": 1.0e5}') == '{"a": 1.0e5}'  # written back as 100000.0: text
