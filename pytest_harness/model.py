"""The model seam: every model call of pytest-harness goes through here.

``complete`` / ``acomplete`` call litellm and return a plain, frozen ``ModelResponse``. On the
way out every response is checked by the ``ResponseValidator`` under the policy of the
current test (``harness_degenerate``), and handed to the listeners that account for usage.

litellm is imported on the first call, never before (it costs about 1.5 s and 165 MB). This
is the only module that imports it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from pytest_harness import _runtime
from pytest_harness.errors import ProviderResponseError
from pytest_harness.validator import split_think, visible_text

__all__ = ["ModelResponse", "TokenCallback", "ToolCall", "Usage", "acomplete", "complete"]

TokenCallback: TypeAlias = Callable[[str], None]
Messages: TypeAlias = str | Sequence[Mapping[str, Any]]

_ENV_DEFAULTS = {
    # Without it litellm fetches its price map over the network at import.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # litellm's aiohttp transport consumes async bodies before vcrpy can record them.
    "DISABLE_AIOHTTP_TRANSPORT": "True",
}
_litellm: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        id: the provider's call id.
        name: the tool's name.
        arguments: the arguments parsed from JSON, or None when they did not parse to an object.
        raw_arguments: the arguments exactly as the model sent them.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = field(repr=False)

    @property
    def parsed(self) -> bool:
        """Whether ``arguments`` holds the parsed JSON object."""
        return self.arguments is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """One model turn, as plain data.

    Attributes:
        content: the text exactly as the model gave it (think blocks included), or None.
        reasoning: litellm's ``reasoning_content``, else the text of the think blocks.
        tool_calls: the tool calls requested.
        finish_reason: why the model stopped, as the provider said it.
        interrupted: a stream that ended without a finish reason (a partial, not a turn).
        usage: token counts.
        cost: USD cost when litellm knows the model's price, else None.
        model: the model the call was made with.
        latency_s: wall time of the call (not compared: replays differ only in it).
    """

    content: str | None
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    interrupted: bool = False
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    model: str = ""
    latency_s: float = field(default=0.0, compare=False)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def text(self) -> str:
        """The visible text: content without think blocks, stripped."""
        return visible_text(self.content).strip()


def complete(
    messages: Messages,
    *,
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    response_format: Mapping[str, Any] | None = None,
    stream: bool = False,
    on_token: TokenCallback | None = None,
    **params: Any,
) -> ModelResponse:
    """Call a model once and return its validated response.

    Args:
        messages: chat messages, or a string taken as one user message.
        model: a litellm model name (``"openai/gpt-4o-mini"``); ``--harness-model`` overrides it.
        tools: OpenAI-style tool definitions.
        response_format: OpenAI-style ``response_format`` (JSON schema for structured output).
        stream: stream the answer; ``on_token`` receives each text delta.
        on_token: called with each streamed text delta.
        **params: passed to litellm (``temperature``, ``api_base``, ``timeout``, ...).

    Raises:
        InvalidResponse / DegenerateResponse: under ``harness_degenerate = fail``.
        ProviderResponseError: the provider's answer is not a chat completion.
        litellm.exceptions.*: provider errors (rate limits, server errors, timeouts, ...).
    """
    call = _Call.build(messages, model, tools, response_format, stream, params)
    lib = _lib()
    started = time.perf_counter()
    with _clearer_errors():
        raw = lib.completion(**call.kwargs)
        chunks = _drain(raw, on_token) if stream else None
    if chunks is not None:
        response = _from_stream(call, chunks, raw, started)
    else:
        response = _from_completion(call, raw, started)
    _runtime.check(response)
    return response


async def acomplete(
    messages: Messages,
    *,
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    response_format: Mapping[str, Any] | None = None,
    stream: bool = False,
    on_token: TokenCallback | None = None,
    **params: Any,
) -> ModelResponse:
    """Async twin of ``complete``: same arguments, same response, same checks."""
    call = _Call.build(messages, model, tools, response_format, stream, params)
    lib = _lib()
    started = time.perf_counter()
    with _clearer_errors():
        raw = await lib.acompletion(**call.kwargs)
        chunks = [chunk async for chunk in _adrain(raw, on_token)] if stream else None
    if chunks is not None:
        response = _from_stream(call, chunks, raw, started)
    else:
        response = _from_completion(call, raw, started)
    _runtime.check(response)
    return response


def load() -> None:
    """Import litellm now (about 1.5 s), so that the first call's clock does not pay for it.

    A tribunal calls this before its deadline starts: otherwise the import, which blocks the
    event loop, would count against the panel's timeout.
    """
    _lib()


async def settle() -> None:
    """Let litellm's background logging worker finish on the running loop, then stop it.

    litellm queues a logging task after each async call on a worker bound to the loop. The
    harness's sync facade runs a fresh loop per call: without this, each closed loop leaves a
    task behind and litellm warns "event loop changed" on the next call.
    """
    if _litellm is None:
        return
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:  # a litellm without the worker has nothing to settle
        return
    await GLOBAL_LOGGING_WORKER.flush()
    await GLOBAL_LOGGING_WORKER.stop()


_SCHEMA_SUPPORT: dict[str, bool] = {}


def supports_schema(model: str) -> bool:
    """Whether ``model`` takes a JSON-schema ``response_format`` (litellm's own knowledge).

    The embedded model (``"local"``) does: its route hands the schema to llama.cpp's grammar.
    """
    if model == "local":
        return True
    known = _SCHEMA_SUPPORT.get(model)
    if known is None:
        try:
            known = bool(_lib().supports_response_schema(model=model))
        except Exception:  # litellm raises for model names it cannot place
            known = False
        _SCHEMA_SUPPORT[model] = known
    return known


@contextmanager
def _clearer_errors() -> Iterator[None]:
    """Replace an SDK error by the clearer one a call hook finds behind it.

    The provider SDK wraps whatever the transport raised (a cassette miss, a blocked
    connection) into a generic connection error; the test should see the real cause.
    """
    token = _QUIET.set(True) if _QUIET is not None else None
    try:
        yield
    except Exception as error:
        better = _runtime.translate(error)
        if better is None:
            raise
        raise better from error
    finally:
        if token is not None and _QUIET is not None:
            _QUIET.reset(token)


# litellm's own "internal call" switch: no success-logging thread or logging-worker task per
# call. The harness turns litellm's callbacks off, so that work logs to nobody; skipping it
# is a third of litellm's per-call overhead in replay. Kept when the user asks for
# litellm's callbacks (HARNESS_LITELLM_CALLBACKS=1).
_QUIET: Any = None


def _lib() -> Any:
    """Import litellm on first use, configured for testing."""
    global _litellm, _QUIET
    if _litellm is None:
        for name, value in _ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback" banners in test output
        litellm.telemetry = False
        if not os.environ.get("HARNESS_LITELLM_CALLBACKS"):
            try:
                from litellm._internal_context import is_internal_call

                _QUIET = is_internal_call
            except ImportError:  # older litellm: nothing to switch off
                _QUIET = None
            litellm.cache = None
            litellm.callbacks = []
            litellm.success_callback = []
            litellm.failure_callback = []
        _litellm = litellm
    return _litellm


@dataclass(frozen=True, slots=True)
class _Call:
    model: str
    kwargs: dict[str, Any]

    @classmethod
    def build(
        cls,
        messages: Messages,
        model: str,
        tools: Sequence[Mapping[str, Any]] | None,
        response_format: Mapping[str, Any] | None,
        stream: bool,
        params: dict[str, Any],
    ) -> _Call:
        scope = _runtime.current()
        model = scope.model or model
        kwargs: dict[str, Any] = {"model": model, "messages": _messages(messages), **params}
        if tools:
            kwargs["tools"] = list(tools)
            # litellm's MCP bridge imports the optional `mcp` package for any call with
            # tools (and fails without it); the harness runs tools itself, never over MCP.
            kwargs["_skip_mcp_handler"] = True
        if response_format is not None:
            kwargs["response_format"] = dict(response_format)
        if stream:
            kwargs["stream"] = True
            kwargs.setdefault("stream_options", {"include_usage": True})
        if scope.retries is not None:
            kwargs.setdefault("num_retries", scope.retries)
            kwargs.setdefault("max_retries", scope.retries)
        if scope.timeout is not None:
            kwargs.setdefault("timeout", scope.timeout)
        kwargs.setdefault("caching", False)
        kwargs = _runtime.prepare(kwargs)
        return cls(model=model, kwargs=kwargs)


def _messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _drain(stream: Iterable[Any], on_token: TokenCallback | None) -> list[Any]:
    """Collect a sync stream's chunks; a stream cut off mid-way keeps what arrived."""
    chunks: list[Any] = []
    iterator: Iterator[Any] = iter(stream)
    while True:
        try:
            chunk = next(iterator)
        except StopIteration:
            return chunks
        except Exception:
            if not chunks:
                raise
            return chunks  # interrupted: no finish reason will be recorded
        chunks.append(chunk)
        _emit(chunk, on_token)


async def _adrain(stream: Any, on_token: TokenCallback | None) -> AsyncIterator[Any]:
    iterator = stream.__aiter__()
    first = True
    while True:
        try:
            chunk = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except Exception:
            if first:
                raise
            return
        first = False
        _emit(chunk, on_token)
        yield chunk


def _emit(chunk: Any, on_token: TokenCallback | None) -> None:
    if on_token is None:
        return
    text = _delta_field(chunk, "content")
    if text:
        on_token(text)


def _delta_field(chunk: Any, name: str) -> Any:
    choices = getattr(chunk, "choices", None) or []
    delta = getattr(choices[0], "delta", None) if choices else None
    return getattr(delta, name, None) if delta is not None else None


def _from_completion(call: _Call, raw: Any, started: float) -> ModelResponse:
    data = _as_dict(raw)
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], Mapping):
        raise ProviderResponseError(
            f"model {call.model!r} answered without any choice: {json.dumps(data)[:300]}. "
            "The provider's reply is not a chat completion; check api_base and the model name."
        )
    message = choices[0].get("message") or {}
    content = message.get("content")
    usage = _usage(data.get("usage"))
    return ModelResponse(
        content=content,
        reasoning=message.get("reasoning_content") or split_think(content)[0],
        tool_calls=tuple(_tool_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])),
        finish_reason=choices[0].get("finish_reason"),
        interrupted=False,
        usage=usage,
        cost=_cost(call.model, usage, raw),
        model=call.model,
        latency_s=time.perf_counter() - started,
    )


def _from_stream(call: _Call, chunks: list[Any], stream: Any, started: float) -> ModelResponse:
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    for chunk in chunks:
        data = _as_dict(chunk)
        usage = data.get("usage") or usage
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            for part in delta.get("tool_calls") or []:
                _merge_tool_delta(calls, part)
    # litellm closes every stream with a finish reason, even one the provider never sent;
    # what the provider sent is kept on the wrapper.
    finish = getattr(stream, "received_finish_reason", None)
    text = "".join(content) or None
    counted = _usage(usage)
    return ModelResponse(
        content=text,
        reasoning="".join(reasoning) or split_think(text)[0],
        tool_calls=tuple(_tool_call(i, calls[i]) for i in sorted(calls)),
        finish_reason=finish,
        interrupted=finish is None,
        usage=counted,
        cost=_cost(call.model, counted),
        model=call.model,
        latency_s=time.perf_counter() - started,
    )


def _merge_tool_delta(calls: dict[int, dict[str, Any]], part: Mapping[str, Any]) -> None:
    index = part.get("index") or 0
    slot = calls.setdefault(index, {"id": None, "function": {"name": "", "arguments": ""}})
    slot["id"] = part.get("id") or slot["id"]
    function = part.get("function") or {}
    slot["function"]["name"] += function.get("name") or ""
    slot["function"]["arguments"] += function.get("arguments") or ""


def _tool_call(index: int, data: Mapping[str, Any]) -> ToolCall:
    function = data.get("function") or {}
    raw = function.get("arguments")
    raw_text = raw if isinstance(raw, str) else json.dumps(raw)
    return ToolCall(
        id=data.get("id") or f"call_{index}",
        name=function.get("name") or "",
        arguments=_parse_arguments(raw),
        raw_arguments=raw_text,
    )


def _parse_arguments(raw: Any) -> Mapping[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _usage(data: Any) -> Usage:
    data = _as_dict(data) if data is not None else {}
    prompt = int(data.get("prompt_tokens") or 0)
    completion = int(data.get("completion_tokens") or 0)
    total = int(data.get("total_tokens") or prompt + completion)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


_UNPRICED: set[str] = set()  # models litellm has no price for: don't ask again


def _cost(model: str, usage: Usage, raw: Any = None) -> float | None:
    """USD cost: litellm's own figure for the response, else from its price map, else None."""
    hidden = getattr(raw, "_hidden_params", None) or {}
    if isinstance(hidden, Mapping) and isinstance(hidden.get("response_cost"), (int, float)):
        return float(hidden["response_cost"])
    if model in _UNPRICED:
        return None
    try:
        prompt, completion = _lib().cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
    except Exception:  # litellm raises a bare Exception for models it has no price for
        _UNPRICED.add(model)
        return None
    return float(prompt) + float(completion)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        result = dump()
        if isinstance(result, dict):
            return result
    raise ProviderResponseError(
        f"expected a chat completion from litellm, got {type(obj).__name__}: {obj!r:.200}"
    )
