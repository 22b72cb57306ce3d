"""Our wire reader against the official SDKs, on real provider traffic (issue 42).

``tests/corpus/`` holds request and response bodies that public projects recorded against
the real APIs (its README says where each came from). Each response is read twice: by our
reader (``recognise``) and by the provider's own SDK, parsed as the SDK's client parses it
(``openai``, ``anthropic``, ``google-genai``). Design.md says a reply is read correctly when it
reads "as the provider's official SDK reads the same bytes"; this module lists every field
where the two differ, as plain lines such as ``"<case>: finish_reason ours='stop' sdk=None"``.

- ``test_disagreements_are_documented``: the lines, known defects aside, are exactly
  ``DOCUMENTED``, each a difference we keep on purpose, with its reason.
- ``test_reads_as_the_sdk``: cases our reader reads as the SDK does, named with what each
  shows (cached tokens, a Responses stream, provider-run Anthropic blocks, ADK's results).
- ``test_a_provider_run_tool_is_not_the_apps_call``: the Responses items the provider runs
  itself (web search, MCP...), not the app's calls, listed apart.
- ``test_known_defect``: each defect of issue 42 that a real body shows, asserting what the
  SDK reads; strict xfails while open, so a fix turns one into XPASS and its mark goes (the
  check stays, and passes).
- ``test_gemini_finish_reasons_refuse_as_the_sdk_reads_them`` and
  ``test_every_gemini_prompt_block_reason_is_a_refusal``: each value of the SDK's
  ``FinishReason`` and ``BlockedReason``, on the real Model Armor body with its reason
  replaced, is a refusal exactly when the SDK's reading says so (``GEMINI_BLOCKS``).

Fields are compared in our reader's terms: ``prompt`` counts cached and cache-written prompt
tokens, ``completion`` counts reasoning ("thoughts") tokens, ``total`` is prompt plus
completion where the provider sends none. The SDKs' raw fields are mapped to those terms here,
nowhere else. Nothing here touches the network: the SDK clients are built only to decode a
recorded stream the way they decode a live one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
genai_types = pytest.importorskip("google.genai.types")
openai = pytest.importorskip("openai")
ollama = pytest.importorskip("ollama")

pytestmark = pytest.mark.harness(cassette=False)

CORPUS = Path(__file__).parent / "corpus"


def readers() -> Any:
    """Our readers (``pytest_harness._wire``), imported in this one place."""
    from pytest_harness import _wire
    from pytest_harness._model.response import ResponseValidator

    class Readers:
        recognise = staticmethod(_wire.recognise)
        read_request = staticmethod(_wire.read_request)
        validator = ResponseValidator()

    return Readers


def load_corpus() -> list[dict[str, Any]]:
    return [
        record
        for path in sorted(CORPUS.glob("*.json"))
        for record in json.loads(path.read_text(encoding="utf-8"))
    ]


RECORDS = load_corpus()
BY_CASE = {record["case"]: record for record in RECORDS}


@dataclass(frozen=True)
class Reading:
    """One reply as either side reads it, in our reader's terms."""

    text: str | None = None
    reasoning: str | None = None
    calls: tuple[tuple[str, str, Any], ...] = ()  # (id or "", name, parsed arguments)
    finish_reason: str | None = None
    refusal: str | None = None
    media: tuple[str, ...] = ()  # the MIME type of each media part (an image), thoughts aside
    usage: dict[str, int] = field(default_factory=dict)
    failed: str | None = None  # the SDK raised while reading the body: why
    # The tools the provider ran itself, by name: ours lists them apart from the app's calls
    # (``provider_tool_calls``); the SDK has no such list (they are among ``output``'s items).
    provider_calls: tuple[str, ...] = ()


def usage(prompt: Any, completion: Any, total: Any = None, cached: Any = 0, written: Any = 0):
    """Token counts; ``total`` defaults to prompt plus completion, as in our reader."""
    p, c = int(prompt or 0), int(completion or 0)
    return {
        "prompt": p,
        "completion": c,
        "total": int(total or 0) or p + c,
        "cached": int(cached or 0),
        "cache_write": int(written or 0),
    }


def arguments(raw: Any) -> Any:
    """Arguments as a value: JSON text parsed, an object as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def joined(texts: Iterator[str | None] | list[str | None], sep: str = "") -> str | None:
    return sep.join(t for t in texts if t) or None


# The SDKs' reading of each API. A stream is decoded by the SDK's own Stream class from an
# httpx response holding the recorded bytes: it is what raises on an in-stream error.
def sdk_stream(module: Any, cast_to: Any, record: dict[str, Any]) -> Iterator[Any]:
    import httpx2

    body = record["response"].encode("utf-8")
    request = httpx2.Request("POST", record["uri"])
    response = httpx2.Response(
        200, headers={"content-type": record["content_type"]}, content=body, request=request
    )
    client_class = module.OpenAI if module is openai else module.Anthropic
    client = client_class(api_key="recorded", base_url="http://127.0.0.1:9", max_retries=0)
    yield from module.Stream(cast_to=cast_to, response=response, client=client)


def chat_message_reading(message: Any, finish: str | None, counted: Any) -> Reading:
    extra = message.model_extra or {}
    content = message.content
    if isinstance(content, list):  # Mistral's parts: the SDK keeps them as they came
        text = joined(p.get("text") for p in content if p.get("type") == "text")
        thinking = [t for p in content if p.get("type") == "thinking" for t in p["thinking"]]
        reasoning = joined((t.get("text") for t in thinking), "\n\n")
    else:
        text, reasoning = content or None, None
    reasoning = reasoning or extra.get("reasoning_content") or extra.get("reasoning") or None
    calls = tuple(
        (c.id or "", c.function.name, arguments(c.function.arguments))
        for c in message.tool_calls or []
    )
    return Reading(
        text=text,
        reasoning=reasoning,
        calls=calls,
        finish_reason=finish,
        refusal=message.refusal or None,
        usage=chat_usage(counted),
    )


def chat_usage(counted: Any) -> dict[str, int]:
    if counted is None:
        return usage(0, 0)
    details = counted.prompt_tokens_details
    cached = details.cached_tokens if details is not None else 0
    return usage(counted.prompt_tokens, counted.completion_tokens, counted.total_tokens, cached)


def openai_model(model: Any, data: Any) -> Any:
    """``model_validate``; where a recorded body fails it (a field this SDK version requires,
    a list for a string), the lenient construction the SDK's client itself uses."""
    from openai._models import construct_type

    try:
        return model.model_validate(data)
    except ValueError:
        return construct_type(type_=model, value=data)


def sdk_chat(record: dict[str, Any]) -> Reading:
    from openai.types.chat import ChatCompletion

    completion = openai_model(ChatCompletion, json.loads(record["response"]))
    choice = completion.choices[0]
    return chat_message_reading(choice.message, choice.finish_reason, completion.usage)


def sdk_chat_stream(record: dict[str, Any]) -> Reading:
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    reasoning: list[str] = []
    try:
        for chunk in sdk_stream(openai, ChatCompletionChunk, record):
            state.handle_chunk(chunk)
            for choice in chunk.choices:
                extra = choice.delta.model_extra or {}
                reasoning.append(extra.get("reasoning_content") or extra.get("reasoning") or "")
    except openai.APIError as error:
        return Reading(failed=f"APIError: {error.message}")
    snapshot = state.current_completion_snapshot
    choice = snapshot.choices[0]
    read = chat_message_reading(choice.message, choice.finish_reason, snapshot.usage)
    return Reading(**{**read.__dict__, "reasoning": joined(reasoning) or read.reasoning})


# Responses API items the provider runs itself: the app has nothing to run for them.
PROVIDER_RUN = {
    "web_search_call",
    "file_search_call",
    "image_generation_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
}


def app_runs(item: Any) -> bool:
    """Whether the app runs an output item's tool: a ``*_call`` item the provider does not
    run; a tool search only when its ``execution`` is the client's (the SDK's type says
    "whether tool search was executed by the server or by the client")."""
    if item.type == "tool_search_call":
        return item.execution == "client"
    return item.type.endswith("_call") and item.type not in PROVIDER_RUN


def sdk_response(record: dict[str, Any]) -> Any:
    """The SDK's ``Response``: the body's, or a stream's final ``response.completed`` (or
    ``.incomplete``, ``.failed``) event's, the events parsed as ``ResponseStreamEvent``."""
    from openai.types.responses import Response, ResponseStreamEvent

    if not streamed(record):
        return openai_model(Response, json.loads(record["response"]))
    final = ("response.completed", "response.incomplete", "response.failed")
    events = [e for e in sdk_stream(openai, ResponseStreamEvent, record) if e.type in final]
    return events[-1].response


def sdk_responses(record: dict[str, Any]) -> Reading:
    return responses_reading(sdk_response(record))


def responses_reading(reply: Any) -> Reading:
    """The Responses API has no finish reason: ``completed`` reads as ``tool_calls`` when
    the app has calls to run (provider-run items aside), else ``stop``; ``incomplete`` as
    its reason."""
    app_calls = [i for i in reply.output if app_runs(i)]
    calls = tuple(
        (i.call_id, i.name, arguments(getattr(i, "arguments", None) or getattr(i, "input", None)))
        for i in app_calls
    )
    reasoning = [i for i in reply.output if i.type == "reasoning"]
    thoughts = [p.text for i in reasoning for p in (i.content or i.summary)]
    parts = [p for i in reply.output if i.type == "message" for p in i.content]
    counted = reply.usage
    details = counted.input_tokens_details
    written = getattr(details, "cache_write_tokens", None) or 0
    if reply.status == "completed":
        finish = "tool_calls" if calls else "stop"
    else:
        finish = reply.incomplete_details.reason if reply.incomplete_details else reply.status
    return Reading(
        text=reply.output_text or None,
        reasoning=joined(thoughts, "\n\n"),
        calls=calls,
        finish_reason=finish,
        refusal=joined((p.refusal for p in parts if p.type == "refusal"), "\n"),
        usage=usage(
            counted.input_tokens,
            counted.output_tokens,
            counted.total_tokens,
            details.cached_tokens,
            written,
        ),
    )


def anthropic_reading(message: Any) -> Reading:
    blocks = message.content
    counted = message.usage
    cached = counted.cache_read_input_tokens or 0
    written = counted.cache_creation_input_tokens or 0
    return Reading(
        text=joined(b.text for b in blocks if b.type == "text"),
        reasoning=joined((b.thinking for b in blocks if b.type == "thinking"), "\n\n"),
        calls=tuple((b.id, b.name, b.input) for b in blocks if b.type == "tool_use"),
        finish_reason=message.stop_reason,
        refusal="stop_reason: refusal" if message.stop_reason == "refusal" else None,
        usage=usage(
            counted.input_tokens + cached + written, counted.output_tokens, 0, cached, written
        ),
    )


def sdk_anthropic(record: dict[str, Any]) -> Reading:
    return anthropic_reading(anthropic.types.Message.model_validate(json.loads(record["response"])))


def sdk_anthropic_stream(record: dict[str, Any]) -> Reading:
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent

    message, buffers = None, {}
    for event in sdk_stream(anthropic, RawMessageStreamEvent, record):
        message = accumulate_event(event=event, current_snapshot=message, json_bufs=buffers)
    return anthropic_reading(message)


# Bedrock Converse and ConverseStream, read by botocore's own response parser (the
# ``bedrock-runtime`` service model's operation, ``rest-json``), the event stream included.
BEDROCK_REFUSALS = {"guardrail_intervened", "content_filtered"}


class _RawStream:
    """The recorded bytes, as botocore's parser takes a streamed body."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Iterator[bytes]:
        yield self.data


def response_bytes(record: dict[str, Any]) -> bytes:
    """The recorded body: an event stream's bytes (kept base64), else the text."""
    if "response_base64" in record:
        return base64.b64decode(record["response_base64"])
    return str(record["response"]).encode("utf-8")


def sdk_bedrock(record: dict[str, Any]) -> Reading:
    import botocore.session
    from botocore.parsers import create_parser

    stream = "response_base64" in record
    operation = "ConverseStream" if stream else "Converse"
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    raw = response_bytes(record)
    response = {
        "status_code": 200,
        "headers": {"content-type": record["content_type"]},
        "body": _RawStream(raw) if stream else raw,
        "context": {"operation_name": operation},
    }
    parsed = create_parser("rest-json").parse(
        response, model.operation_model(operation).output_shape
    )
    if stream:
        return bedrock_stream_reading(list(parsed["stream"]))
    message = parsed["output"]["message"]
    return bedrock_reading(message["content"], parsed["stopReason"], parsed["usage"])


def bedrock_stream_reading(events: list[dict[str, Any]]) -> Reading:
    """The reply a ConverseStream's parsed events add up to, as a boto3 user adds them."""
    blocks: dict[int, dict[str, Any]] = {}
    stop, counted = None, {}
    for item in events:
        ((kind, data),) = item.items()
        block = blocks.setdefault(data.get("contentBlockIndex", -1), {})
        if kind == "contentBlockStart" and "toolUse" in data["start"]:
            block["toolUse"] = {**data["start"]["toolUse"], "input": ""}
        elif kind == "contentBlockDelta":
            delta = data["delta"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            if "text" in delta.get("reasoningContent", {}):
                thought = block.setdefault("reasoningContent", {"reasoningText": {"text": ""}})
                thought["reasoningText"]["text"] += delta["reasoningContent"]["text"]
        elif kind == "messageStop":
            stop = data["stopReason"]
        elif kind == "metadata":
            counted = data["usage"]
    content = [blocks[i] for i in sorted(blocks) if i >= 0 and blocks[i]]
    return bedrock_reading(content, stop, counted)


def bedrock_reading(content: list[dict[str, Any]], stop: Any, counted: dict[str, Any]) -> Reading:
    calls = [block["toolUse"] for block in content if "toolUse" in block]
    thoughts = [
        b["reasoningContent"].get("reasoningText", {}) for b in content if "reasoningContent" in b
    ]
    cache = (counted.get("cacheReadInputTokens", 0), counted.get("cacheWriteInputTokens", 0))
    return Reading(
        text=joined(block.get("text") for block in content),
        reasoning=joined((t.get("text") for t in thoughts), "\n\n"),
        calls=tuple((c["toolUseId"], c["name"], arguments(c["input"])) for c in calls),
        finish_reason=stop,
        refusal=f"stopReason: {stop}" if stop in BEDROCK_REFUSALS else None,
        usage=usage(
            counted.get("inputTokens", 0) + sum(cache),
            counted.get("outputTokens"),
            counted.get("totalTokens"),
            *cache,
        ),
    )


# Gemini finish reasons that say the call was refused or blocked (every promptFeedback
# blockReason does), and those that do not: each value of the SDK's FinishReason is one or
# the other (test_every_gemini_finish_reason_is_sorted).
GEMINI_BLOCKS = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "MODEL_ARMOR",  # "blocked by Model Armor" (Vertex)
    "ESCALATION",  # "filtered by an escalation rule"
    "PUP_LIMITED_DISABLED",  # the account is limited for Prohibited Use Policy violations
}
GEMINI_NOT_BLOCKS = {
    "FINISH_REASON_UNSPECIFIED",
    "STOP",
    "MAX_TOKENS",
    "CONTINUATION",
    "OTHER",
    "LANGUAGE",  # an unsupported language: no content filter, no policy
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE",
    "IMAGE_OTHER",
    "NO_IMAGE",
}


def gemini_chunks(record: dict[str, Any]) -> list[Any]:
    """The response, or each chunk of a stream (SSE data lines, or a JSON array)."""
    text = record["response"]
    if "event-stream" in record["content_type"]:
        values = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    else:
        value = json.loads(text)
        values = value if isinstance(value, list) else [value]
    return [genai_types.GenerateContentResponse.model_validate(untruncated(v)) for v in values]


def untruncated(value: Any) -> Any:
    """The value with each image the source project truncated (``__BINARY_TRUNCATED__...``)
    as empty data: the SDK checks that inline data is base64, and the marker is not."""
    if isinstance(value, dict):
        return {k: untruncated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untruncated(v) for v in value]
    truncated = isinstance(value, str) and value.startswith("__BINARY_TRUNCATED__")
    return "" if truncated else value


def sdk_gemini(record: dict[str, Any]) -> Reading:
    chunks = gemini_chunks(record)
    contents = [c.candidates[0].content for c in chunks if c.candidates]
    parts = [p for content in contents if content is not None for p in content.parts or []]
    finishes = [c.candidates[0].finish_reason for c in chunks if c.candidates]
    finish = next((f.value for f in reversed(finishes) if f is not None), None)
    blocked = next((c.prompt_feedback.block_reason for c in chunks if c.prompt_feedback), None)
    counted = next(c.usage_metadata for c in reversed(chunks) if c.usage_metadata)
    refusal = f"promptFeedback.blockReason: {blocked.value}" if blocked else None
    if refusal is None and finish in GEMINI_BLOCKS:
        refusal = f"finishReason: {finish}"
    media = [p.inline_data or p.file_data for p in parts if not p.thought]
    return Reading(
        text=joined(c.text for c in chunks),
        reasoning=joined(p.text for p in parts if p.thought),
        media=tuple(m.mime_type or "" for m in media if m is not None),
        calls=tuple((f.id or "", f.name, f.args) for c in chunks for f in c.function_calls or []),
        finish_reason=finish,
        refusal=refusal,
        usage=usage(
            counted.prompt_token_count,
            (counted.candidates_token_count or 0) + (counted.thoughts_token_count or 0),
            counted.total_token_count,
            counted.cached_content_token_count,
        ),
    )


def sdk_ollama(record: dict[str, Any]) -> Reading:
    """Ollama's client models (``ChatResponse``, ``GenerateResponse``), one per NDJSON line
    (a whole reply is one), added up as a caller of the streaming client adds them."""
    chat = record["api"] == "ollama.chat"
    model = ollama.ChatResponse if chat else ollama.GenerateResponse
    lines = [line for line in record["response"].splitlines() if line.strip()]
    parts = [model.model_validate(json.loads(line)) for line in lines]
    said = [p.message if chat else p for p in parts]
    text = (m.content if chat else m.response for m in said)
    calls = [c for m in said if chat for c in (m.tool_calls or [])]
    last = parts[-1]
    return Reading(
        text=joined(text),
        reasoning=joined(m.thinking for m in said),
        calls=tuple(("", c.function.name, dict(c.function.arguments)) for c in calls),
        finish_reason=last.done_reason,
        usage=usage(last.prompt_eval_count, last.eval_count),
    )


def streamed(record: dict[str, Any]) -> bool:
    return "event-stream" in record["content_type"]


def sdk_reading(record: dict[str, Any]) -> Reading:
    readers_by_api: dict[str, tuple[Callable[..., Reading], Callable[..., Reading]]] = {
        "openai.chat": (sdk_chat, sdk_chat_stream),
        "openai.responses": (sdk_responses, sdk_responses),
        "anthropic.messages": (sdk_anthropic, sdk_anthropic_stream),
        "gemini.generate": (sdk_gemini, sdk_gemini),
        "ollama.chat": (sdk_ollama, sdk_ollama),
        "ollama.generate": (sdk_ollama, sdk_ollama),
        "bedrock.converse": (sdk_bedrock, sdk_bedrock),
    }
    plain, stream = readers_by_api[record["api"]]
    return stream(record) if streamed(record) else plain(record)


# Our side.
def request_text(record: dict[str, Any]) -> str | None:
    """The request body as text; None where the source kept only the response."""
    request = record["request"]
    if request is None:
        return None
    return request if isinstance(request, str) else json.dumps(request)


def ours(record: dict[str, Any]) -> Any:
    """Our reader's ``Recognised`` for the record, or None."""
    headers = {"content-type": [record["content_type"]]}
    body = response_bytes(record)
    return readers().recognise(record["uri"], request_text(record), 200, headers, body)


def our_reading(found: Any) -> Reading | None:
    if found is None:
        return None
    reply = found.response
    counted = reply.usage
    return Reading(
        text=reply.content,
        reasoning=reply.reasoning,
        calls=tuple((c.id or "", c.name, arguments(c.raw_arguments)) for c in reply.tool_calls),
        provider_calls=tuple(c.name for c in reply.provider_tool_calls),
        finish_reason=reply.finish_reason,
        refusal=reply.refusal,
        media=reply.media,
        usage=usage(
            counted.prompt_tokens,
            counted.completion_tokens,
            counted.total_tokens,
            counted.cached_tokens,
            counted.cache_write_tokens,
        ),
    )


# The comparison.
def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(case: str, mine: Reading, sdk: Reading) -> list[str]:
    lines = []
    for name in ("text", "reasoning", "finish_reason", "refusal", "media"):
        a, b = getattr(mine, name), getattr(sdk, name)
        if a != b:
            lines.append(f"{case}: {name} ours={shown(a)} sdk={shown(b)}")
    if [c[1:] for c in mine.calls] != [c[1:] for c in sdk.calls]:
        ours_calls = [f"{name}({shown(args)})" for _, name, args in mine.calls]
        sdk_calls = [f"{name}({shown(args)})" for _, name, args in sdk.calls]
        lines.append(f"{case}: tool_calls ours={ours_calls} sdk={sdk_calls}")
    elif [c[0] for c in mine.calls] != [c[0] for c in sdk.calls]:
        lines.append(
            f"{case}: tool_call ids ours={[c[0] for c in mine.calls]} "
            f"sdk={[c[0] for c in sdk.calls]}"
        )
    if mine.provider_calls != sdk.provider_calls:
        lines.append(
            f"{case}: provider_tool_calls ours={list(mine.provider_calls)} "
            f"sdk={list(sdk.provider_calls)}"
        )
    for name, value in sdk.usage.items():
        if mine.usage.get(name) != value:
            lines.append(f"{case}: usage.{name} ours={mine.usage.get(name)} sdk={value}")
    return lines


def reply_disagreements(record: dict[str, Any]) -> list[str]:
    case = record["case"]
    sdk = sdk_reading(record)
    found = ours(record)
    mine = our_reading(found)
    if sdk.failed is not None:
        state = "not recognised" if found is None else f"a reply (finish {mine.finish_reason!r})"
        interrupted = found is not None and found.response.interrupted
        return [] if found is None or interrupted else [f"{case}: ours={state} sdk={sdk.failed}"]
    if mine is None:
        return [f"{case}: ours=not recognised sdk=a reply"]
    return differences(case, mine, sdk)


def request_disagreements(record: dict[str, Any]) -> list[str]:
    """Our request reader against the body itself (one turn per message, input item or
    content it sends), and each result sent against the calls of the reply before it in the
    same recording (by id, or by name where ids are absent)."""
    case, api, body = record["case"], record["api"], request_text(record)
    if body is None:
        return []
    asked = readers().read_request(api, body)
    lines = []
    sent = sent_messages(api, json.loads(body))
    if sent != asked.messages:
        lines.append(f"{case}: request messages sent={sent} read_request={asked.messages}")
    before = previous(record)
    if before is not None and asked.results:
        for side, reading in (("ours", our_reading(ours(before))), ("sdk", sdk_reading(before))):
            calls = reading.calls if reading is not None else ()
            for result in asked.results:
                if not answers(result, calls):
                    lines.append(
                        f"{case}: tool result answers no call ({side}): "
                        f"{result.call_id or result.name!r} not in {[c[0] or c[1] for c in calls]}"
                    )
    return lines


def answers(result: Any, calls: tuple[tuple[str, str, Any], ...]) -> bool:
    """Whether a result sent answers one of the calls: by id where both have one, else by name."""
    for call_id, name, _ in calls:
        if result.call_id and call_id:
            if result.call_id == call_id:
                return True
        elif (result.name or name) and result.name == name:
            return True
    return False


def previous(record: dict[str, Any]) -> dict[str, Any] | None:
    source = record["source"]
    return next(
        (
            other
            for other in RECORDS
            if other["source"]["path"] == source["path"]
            and other["source"]["interaction"] == source["interaction"] - 1
        ),
        None,
    )


def sent_messages(api: str, data: dict[str, Any]) -> int:
    """How many messages (input items, contents) a request body sends, counted on the body."""
    fields = {
        "openai.responses": "input",
        "gemini.generate": "contents",
        "ollama.generate": "prompt",
    }
    field = fields.get(api, "messages")
    sent = data.get(field)
    return 1 if isinstance(sent, str) else len(sent) if isinstance(sent, list) else 0


def disagreements(record: dict[str, Any]) -> list[str]:
    """Every disagreement on one record: its reply, then its request."""
    return reply_disagreements(record) + request_disagreements(record)


# The replies with tools the provider ran itself (hosted tools), and their names as our
# reader lists them, apart from the app's tool calls (issue 42).
PROVIDER_TOOLS = {
    "responses_web_search_call": ["web_search_call"],
    "responses_file_search_call": ["file_search_call"],
    "responses_image_generation_call": ["image_generation_call"],
    "responses_mcp_call": ["mcp_list_tools", "get_my_games"],
    "responses_code_interpreter_call": ["code_interpreter_call"] * 3,
    "responses_tool_search_call": ["tool_search_call"],
    "responses_stream_tool_search_call": ["tool_search_call"],
}

# Differences kept on purpose, each with its reason.
DOCUMENTED = {
    "groq_think_tags_in_content: reasoning ours='Okay, let\\'s tackle this simple math "
    "question: What is 2... sdk=None": (
        "our reader reads <think> blocks in the content as reasoning; the SDK has no such field"
    ),
    "chat_stream_no_finish_reason: tool_call ids ours=['0'] sdk=['00']": (
        "Novita (through OpenRouter) sends the call's id again in each of its chunks; the SDK's "
        "stream accumulator appends every string but index and type ('0' + '0'); we keep the "
        "id once, as the project's next request answers it (tool_call_id '0')"
    ),
    "ollama_chat_tool_call: finish_reason ours='stop' sdk=None": (
        "a reply with done: true and no done_reason (older Ollama servers send none): it "
        "finished, so our reader says stop; the client's model leaves done_reason None"
    ),
    **{
        f"{case}: provider_tool_calls ours={names} sdk=[]": (
            "a provider-run tool listed apart from the app's tool calls: not the app's to run "
            "(no tool_calls, finish stop, as the SDK reads it), but shown in the report's "
            "exchange and as an event of the trajectory; the SDK has no such list, only "
            "output's items"
        )
        for case, names in PROVIDER_TOOLS.items()
    },
}

# The lines (by their start) that the defects of issue 42 produce today: each defect has its
# strict xfail in test_known_defect, which turns to XPASS when the reader is fixed.
KNOWN_DEFECTS: tuple[str, ...] = ()


def all_disagreements() -> list[str]:
    return [line for record in RECORDS for line in disagreements(record)]


def test_corpus_is_real_and_small() -> None:
    """Every record says where it came from; the corpus stays a few hundred KB."""
    size = sum(path.stat().st_size for path in CORPUS.glob("*.json"))
    assert size < 400_000
    for record in RECORDS:
        source = record["source"]
        assert all(source[key] for key in ("repo", "path", "commit", "license"))
    assert len(BY_CASE) == len(RECORDS), "case names are unique"


def test_disagreements_are_documented() -> None:
    """Known defects aside (they are xfailed below), every line is a documented difference:
    a new disagreement fails here, and so does a documented one that went away."""
    found = [line for line in all_disagreements() if not line.startswith(KNOWN_DEFECTS)]
    assert sorted(found) == sorted(DOCUMENTED)


# Cases our reader reads as the SDK does, each with what it shows.
AGREEING = {
    "chat_stream_cached_tokens": "cached prompt tokens in a chat stream's usage chunk",
    "responses_cached_tokens": "input_tokens_details.cached_tokens in a Responses reply",
    "responses_stream_text": "a Responses stream, read from its response.completed event",
    "anthropic_server_tool_use_tool_search": "server_tool_use (tool search): not the app's call",
    "anthropic_web_search_server_tool_use": "server_tool_use (web search): not the app's call",
    "adk_results_by_name": "ADK's functionResponses without ids answer its calls by name",
    "adk_parallel_calls_without_id": "Gemini's parallel calls without ids: none made up",
    "gemini_tool_calls_without_id": "Gemini's calls without ids: none made up",
    "gemini_results_with_own_ids": "pydantic-ai's results, with its own ids, answer by name",
    "gemini_image_only": "an image-only reply (inlineData): its media, no text",
    "gemini_model_armor_block": "a Model Armor block (Vertex): a refusal",
    "ollama_generate_whole": "Ollama's /api/generate reply (stream false), its counts",
    "ollama_generate_stream": "Ollama's NDJSON stream of /api/generate parts, added up",
    "ollama_chat_tool_call": "Ollama's tool call: no id, its arguments an object",
    "azure_content_filter_results": "Azure's content_filter_results and prompt_filter_results",
    "azure_stream_prompt_filter_chunk": "Azure's first stream chunk: no choices, no model",
    "bedrock_tool_use_with_reasoning": "Converse: reasoningContent, text and a toolUse",
    "bedrock_tool_result_answered": "Converse: a toolResult answers the toolUse before it",
    "bedrock_cache_write": "Converse: cacheWriteInputTokens counted in the prompt",
    "bedrock_cache_read": "Converse: cacheReadInputTokens counted in the prompt",
    "bedrock_stream_tool_use": "ConverseStream: a toolUse's input JSON in pieces",
    "bedrock_stream_reasoning": "ConverseStream: reasoningContent deltas",
}


@pytest.mark.parametrize("case", sorted(AGREEING))
def test_reads_as_the_sdk(case: str) -> None:
    """No disagreement on the case, documented differences of its request aside."""
    assert [line for line in disagreements(BY_CASE[case]) if line not in DOCUMENTED] == []
    if "cached" in case:
        assert sdk_reading(BY_CASE[case]).usage["cached"] > 0


def test_bedrock_streams_are_stored_as_their_frames_byte_exact() -> None:
    """Each real ConverseStream body is stored readably (its frames, their JSON) and writes
    back to the recorded bytes."""
    from pytest_harness._cassettes import bodies

    for record in [r for r in RECORDS if "response_base64" in r]:
        raw = response_bytes(record)
        stored = bodies.stored_body(raw, frames=True)
        assert isinstance(stored, dict), record["case"]
        assert "eventstream" in stored, record["case"]
        assert bodies.body_bytes(stored) == raw, record["case"]


def provider_items(reply: Any) -> list[Any]:
    """The SDK's output items whose tool the provider runs (a ``*_call`` item or
    ``mcp_list_tools`` that the app does not run)."""
    tool_items = [i for i in reply.output if i.type.endswith("_call") or i.type in PROVIDER_RUN]
    return [i for i in tool_items if not app_runs(i)]


@pytest.mark.parametrize("case", sorted(PROVIDER_TOOLS))
def test_a_provider_run_tool_is_not_the_apps_call(case: str) -> None:
    """Issue 42, fixed: the tools the provider ran are not the app's calls (its calls and the
    finish reason are the SDK's), each item is listed apart under its id, and the reply
    passes the response check (an image generated without a word of text is an answer)."""
    same_calls_and_finish(case)
    response = ours(BY_CASE[case]).response
    items = provider_items(sdk_response(BY_CASE[case]))
    assert [c.id for c in response.provider_tool_calls] == [i.id for i in items]
    assert [c.name for c in response.provider_tool_calls] == PROVIDER_TOOLS[case]
    assert readers().validator.problem(response) is None


# What the SDK reads, asserted of our reader: one check per defect.
def results_answer_our_calls(case: str) -> None:
    """The results sent after the reply answer the calls we read in it (Gemini sends no ids:
    by name, as the SDK's calls, whose id is None, are matched)."""
    record = BY_CASE[case]
    after = next(r for r in RECORDS if previous(r) is record)
    calls = our_reading(ours(record)).calls
    results = readers().read_request(after["api"], request_text(after)).results
    assert results
    assert all(answers(result, calls) for result in results)


def same_calls_and_finish(case: str) -> None:
    mine, sdk = our_reading(ours(BY_CASE[case])), sdk_reading(BY_CASE[case])
    assert (mine.calls, mine.finish_reason) == (sdk.calls, sdk.finish_reason)


def same_text_and_reasoning(case: str) -> None:
    mine, sdk = our_reading(ours(BY_CASE[case])), sdk_reading(BY_CASE[case])
    assert mine is not None
    assert (mine.text, mine.reasoning) == (sdk.text, sdk.reasoning)


def not_a_finished_reply(case: str) -> None:
    """The SDK raises APIError at the stream's error chunk: no finished turn to read."""
    assert sdk_reading(BY_CASE[case]).failed
    found = ours(BY_CASE[case])
    assert found is None or found.response.interrupted


def same_call_ids(case: str) -> None:
    """The calls read with the ids the reply gave them: none made up where it gave none."""
    mine, sdk = our_reading(ours(BY_CASE[case])), sdk_reading(BY_CASE[case])
    assert [c[0] for c in mine.calls] == [c[0] for c in sdk.calls]


def a_finished_reply(case: str) -> None:
    """The SDK reads the stream to its end without an error: a finished reply, not one cut
    short (no chunk carries a finish_reason, but the usage chunk and [DONE] came)."""
    assert sdk_reading(BY_CASE[case]).failed is None
    assert not ours(BY_CASE[case]).response.interrupted


def refused(case: str) -> None:
    sdk = sdk_reading(BY_CASE[case])
    assert our_reading(ours(BY_CASE[case])).refusal == sdk.refusal


def not_empty(case: str) -> None:
    """The SDK reads an inline_data image part: the reply is not empty."""
    assert gemini_chunks(BY_CASE[case])[0].parts[0].inline_data is not None
    assert our_reading(ours(BY_CASE[case])).media == sdk_reading(BY_CASE[case]).media
    assert readers().validator.problem(ours(BY_CASE[case]).response) is None


# A defect the corpus shows and the reader still gets wrong: a strict xfail until fixed (none
# open today; each fixed one above stays as a plain check).
def defect(case: str, check: Callable[[str], None], what: str) -> Any:
    return pytest.param(
        case,
        check,
        id=case,
        # Only a failed assertion is the defect: an exception would be a broken check.
        marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"issue 42: {what}"),
    )


@pytest.mark.parametrize(
    ("case", "check"),
    [
        # Fixed: Gemini function calls without an id got made-up ids (call_0...), and no
        # result (pydantic-ai's, with its own ids; ADK's, without) answered them.
        pytest.param(
            "gemini_tool_calls_without_id",
            results_answer_our_calls,
            id="gemini_tool_calls_without_id",
        ),
        pytest.param(
            "gemini_results_with_own_ids", same_call_ids, id="gemini_results_with_own_ids"
        ),
        pytest.param(
            "adk_parallel_calls_without_id", same_call_ids, id="adk_parallel_calls_without_id"
        ),
        # Fixed: an image-only Gemini reply (inlineData, finish STOP) read as an empty reply.
        pytest.param("gemini_image_only", not_empty, id="gemini_image_only"),
        # Fixed: a chat reply whose message.content is a list of parts (Mistral's
        # thinking and text parts) was not recognised.
        pytest.param(
            "mistral_content_parts_thinking_text",
            same_text_and_reasoning,
            id="mistral_content_parts_thinking_text",
        ),
        # Fixed: reasoning sent as message.reasoning (Cerebras, Groq, OpenRouter), or as
        # delta.reasoning with reasoning_details in a stream, was not read.
        pytest.param(
            "cerebras_reasoning_field", same_text_and_reasoning, id="cerebras_reasoning_field"
        ),
        pytest.param("groq_reasoning_field", same_text_and_reasoning, id="groq_reasoning_field"),
        pytest.param(
            "openrouter_stream_reasoning_details",
            same_text_and_reasoning,
            id="openrouter_stream_reasoning_details",
        ),
        # Fixed: a chat stream that ends with its usage chunk and [DONE] but no finish_reason
        # read as interrupted.
        pytest.param(
            "chat_stream_no_finish_reason", a_finished_reply, id="chat_stream_no_finish_reason"
        ),
        # Fixed: an error chunk in a chat stream was ignored: the stream read as a finished
        # reply.
        pytest.param(
            "openrouter_stream_error_chunk_after_reasoning",
            not_a_finished_reply,
            id="openrouter_stream_error_chunk_after_reasoning",
        ),
        # Fixed: a Gemini MODEL_ARMOR finish (a block) was not read as a refusal.
        pytest.param("gemini_model_armor_block", refused, id="gemini_model_armor_block"),
    ],
)
def test_known_defect(case: str, check: Callable[[str], None]) -> None:
    check(case)


# Every block reason of the SDK, on the real Model Armor body (Vertex) with its reason
# replaced: our reader refuses exactly what the SDK's reading (GEMINI_BLOCKS) refuses.
def test_every_gemini_finish_reason_is_sorted() -> None:
    """A FinishReason a new google-genai adds fails here until it is sorted."""
    values = {reason.value for reason in genai_types.FinishReason}
    assert values == GEMINI_BLOCKS | GEMINI_NOT_BLOCKS
    assert not GEMINI_BLOCKS & GEMINI_NOT_BLOCKS


def with_response(case: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    record = BY_CASE[case]
    return {**record, "response": json.dumps(change(json.loads(record["response"])))}


@pytest.mark.parametrize("reason", sorted(GEMINI_BLOCKS | GEMINI_NOT_BLOCKS))
def test_gemini_finish_reasons_refuse_as_the_sdk_reads_them(reason: str) -> None:
    def finished(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "candidates": [{**body["candidates"][0], "finishReason": reason}]}

    record = with_response("gemini_model_armor_block", finished)
    mine, sdk = our_reading(ours(record)), sdk_reading(record)
    assert (
        mine.refusal
        == sdk.refusal
        == (f"finishReason: {reason}" if reason in GEMINI_BLOCKS else None)
    )


@pytest.mark.parametrize("reason", sorted(r.value for r in genai_types.BlockedReason))
def test_every_gemini_prompt_block_reason_is_a_refusal(reason: str) -> None:
    def blocked(body: dict[str, Any]) -> dict[str, Any]:
        kept = {key: body[key] for key in ("usageMetadata", "modelVersion", "responseId")}
        return {**kept, "promptFeedback": {"blockReason": reason}}

    record = with_response("gemini_model_armor_block", blocked)
    mine, sdk = our_reading(ours(record)), sdk_reading(record)
    assert mine.refusal == sdk.refusal == f"promptFeedback.blockReason: {reason}"
