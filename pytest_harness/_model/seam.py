"""The model seam: every model call of pytest-harness goes through here, and litellm behind it."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, overload

from pytest_harness._model import env as _env
from pytest_harness._model import quiet_imports as _quiet_imports
from pytest_harness._model.replay import replayed
from pytest_harness._model.response import (
    Messages,
    ModelResponse,
    ResponseValidator,
    TokenCallback,
    Usage,
)
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.scope import NOTE_PREFIX
from pytest_harness._wire.chat import read_completion, read_stream
from pytest_harness.errors import (
    DegenerateResponse,
    HarnessWarning,
    InvalidResponse,
    ProviderResponseError,
    causes,
    quote,
)

_VALIDATOR = ResponseValidator()
_PROBLEMS = {
    "interrupted": "an interrupted response (it ended without a finish reason: a cut stream, "
    "or a failed or cancelled reply)",
    "refused": "a refusal or a block instead of an answer",
    "empty_response": "an empty response (no text, no tool calls and no media)",
    "degenerate": "a degenerate response (no visible text, only reasoning)",
}


@dataclass(frozen=True, slots=True)
class Request:
    """One model call, ready to send.

    Attributes:
        model: the model asked for, after ``--harness-model`` (what the response reports).
        kwargs: litellm's keyword arguments, after the scope's call hooks.
        hooks: the call hooks that prepared it, which read its response and errors too.
    """

    model: str
    kwargs: dict[str, Any]
    hooks: tuple[scope.CallHook, ...] = ()


@overload
def resolve(model: str) -> str: ...


@overload
def resolve(model: str | None) -> str | None: ...


def resolve(model: str | None) -> str | None:
    """The model a call asking for ``model`` uses: ``--harness-model`` wins when set."""
    return scope.current().model or model


def request(
    messages: Messages,
    *,
    model: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    response_format: Mapping[str, Any] | None = None,
    stream: bool = False,
    **params: Any,
) -> Request:
    """Build a call to ``model`` (already resolved) under the scope in force."""
    current = scope.current()
    kwargs: dict[str, Any] = {"model": model, "messages": _messages(messages), **params}
    if tools:
        kwargs["tools"] = list(tools)
    if response_format is not None:
        kwargs["response_format"] = dict(response_format)
    if stream:
        kwargs["stream"] = True
    if current.retries is not None:
        kwargs.setdefault("num_retries", current.retries)
        kwargs.setdefault("max_retries", current.retries)
    if current.timeout is not None:
        kwargs.setdefault("timeout", current.timeout)
    hooks = current.hooks_for(model)
    for hook in hooks:
        kwargs = hook.prepare(kwargs)
    return Request(model=model, kwargs=kwargs, hooks=hooks)


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
    built = request(
        messages,
        model=resolve(model),
        tools=tools,
        response_format=response_format,
        stream=stream,
        **params,
    )
    return send(built, on_token=on_token)


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
    built = request(
        messages,
        model=resolve(model),
        tools=tools,
        response_format=response_format,
        stream=stream,
        **params,
    )
    return await asend(built, on_token=on_token)


def send(
    call: Request,
    *,
    on_token: TokenCallback | None = None,
    on_reasoning: TokenCallback | None = None,
) -> ModelResponse:
    """Make a built call, then check its response (``complete`` is request + send).

    ``on_token`` and ``on_reasoning`` receive the text and reasoning deltas of a stream.
    """
    with _clearer_errors(call):
        response = replayed(call, on_token, on_reasoning) or completion(
            call.kwargs, model=call.model, on_token=on_token, on_reasoning=on_reasoning
        )
    response = _received(call, response)
    judged = _judged(call)
    response = _as_recorded(response, judged)
    check(response, judged=judged)
    return response


async def asend(
    call: Request,
    *,
    on_token: TokenCallback | None = None,
    on_reasoning: TokenCallback | None = None,
) -> ModelResponse:
    """Async twin of ``send``."""
    with _clearer_errors(call):
        response = replayed(call, on_token, on_reasoning) or await acompletion(
            call.kwargs, model=call.model, on_token=on_token, on_reasoning=on_reasoning
        )
    response = _received(call, response)
    judged = _judged(call)
    response = _as_recorded(response, judged)
    check(response, judged=judged)
    return response


def check(response: ModelResponse, *, judged: scope.Judged | None = None) -> None:
    """The validation policy: apply the scope's ``degenerate`` mode to one response.

    ``fail`` raises ``InvalidResponse`` / ``DegenerateResponse``, ``warn`` warns
    (``HarnessWarning``), ``off`` accepts. A response that is not failed is reported to the
    scope's listeners.

    Args:
        response: the response the caller gets.
        judged: what the traffic check found in its HTTP reply; without it the response is
            judged here.
    """
    current = scope.current()
    reason = None
    if current.degenerate != "off":
        reason = defect(response) if judged is None else judged.problem
    error = _problem_error(response, reason, current)
    if error is not None:
        if current.degenerate == "fail":
            raise error
        warnings.warn(HarnessWarning(str(error)), stacklevel=4)
    scope.emit("response", response)


def problem(
    response: ModelResponse, *, call: str = "", within: scope.Scope | None = None
) -> InvalidResponse | None:
    """The error a response deserves under the scope's ``degenerate`` mode, or None.

    Args:
        response: the response to check.
        call: what made the call, for the message (the application's request, say).
        within: the scope whose policy applies (default: the one in force).
    """
    current = within or scope.current()
    if current.degenerate == "off":
        return None
    return _problem_error(response, defect(response), current, call)


def defect(response: ModelResponse) -> str | None:
    """What is wrong with a response whatever the policy (a validator reason), or None."""
    return _VALIDATOR.problem(response)


def _received(call: Request, response: ModelResponse) -> ModelResponse:
    """The response as the scope's call hooks read it (the embedded model's tool calls)."""
    for hook in call.hooks:
        response = hook.receive(call.kwargs, response)
    return response


def _as_recorded(response: ModelResponse, judged: scope.Judged | None) -> ModelResponse:
    """In replay, the response with the latency its cassette recorded (when it kept one):
    a replayed call's own time says nothing about the model."""
    if judged is None or judged.latency_s is None or not scope.current().replay:
        return response
    return replace(response, latency_s=judged.latency_s, latency_recorded=True)


def _judged(call: Request) -> scope.Judged | None:
    """What a call hook's traffic check found in the call's HTTP reply, if one saw it."""
    return next(filter(None, (hook.judged(call.kwargs) for hook in call.hooks)), None)


def _note_timeout(error: BaseException, timeout: Any) -> None:
    """A timed-out call's error gains a note saying which setting gave it its time."""
    if not any(
        isinstance(cause, TimeoutError) or "Timeout" in type(cause).__name__
        for cause in causes(error)
    ):
        return
    limit = f"{timeout:g} s" if isinstance(timeout, (int, float)) else "the provider's default"
    add_note = getattr(error, "add_note", None)  # Python 3.11 and later
    if add_note is not None:
        add_note(
            f"pytest-harness: the call timed out after {limit}. Its timeout is the call's "
            "timeout=..., else the test's @pytest.mark.harness(timeout=...), else the "
            "harness_timeout ini key, else the provider SDK's default: raise the one that "
            "applies."
        )


@contextmanager
def _clearer_errors(call: Request) -> Iterator[None]:
    """Replace an SDK error by the clearer one a call hook finds behind it; tell the call
    hooks how the call failed (``_failed``).

    The provider SDK wraps whatever the transport raised (a cassette miss, a blocked
    connection) into a generic connection error; the test should see the real cause.
    """
    started = time.perf_counter()
    try:
        yield
    except asyncio.CancelledError as cancelled:  # its caller gave up on it (a deadline)
        _failed(call, cancelled, started)
        raise
    except Exception as error:
        better = next(filter(None, (hook.translate(error) for hook in call.hooks)), None)
        if better is None:
            _note_timeout(error, call.kwargs.get("timeout"))
            _failed(call, error, started)
            raise
        _failed(call, better, started)
        # It says what happened; the SDK's chain of wrappers (kept as its context) would
        # bury that under pages of their frames.
        raise better from None


def _failed(call: Request, error: BaseException, started: float) -> None:
    """Tell the call hooks that keep failures (``failed``, optional: the test's cassette,
    which records it in the call's place) that the call ended in ``error``."""
    seconds = time.perf_counter() - started
    for hook in call.hooks:
        failed = getattr(hook, "failed", None)
        if failed is not None:
            failed(call.kwargs, error, seconds)


def retried(error: BaseException) -> None:
    """A call that failed with ``error`` is to be sent again (a retry middleware): the call
    hooks that keep failures (``retried``, optional: the test's cassette) forget its failure,
    as they never keep the transient replies of a retried call. Replay never retries."""
    for hook in scope.current().call_hooks:
        forget = getattr(hook, "retried", None)
        if forget is not None:
            forget(error)


def _messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _problem_error(
    response: ModelResponse, problem: str | None, current: scope.Scope, call: str = ""
) -> InvalidResponse | None:
    if problem is None:
        return None
    where = (f" to {call}" if call else "") + (f" in {current.test_id}" if current.test_id else "")
    advice = (
        "Check the prompt and the model; to accept such responses set "
        "harness_degenerate = warn (or off) in your pytest ini, or mark the test with "
        '@pytest.mark.harness(degenerate="warn").'
        if current.degenerate == "fail"
        else "Reported, not failed: harness_degenerate = warn for this test."
    )
    message = (
        f"model {response.model!r} returned {_PROBLEMS.get(problem, problem)}{where}.\n"
        f"  content: {quote(response.content)}\n"
        f"  reasoning: {quote(response.reasoning)}\n"
        + (f"  refusal: {quote(response.refusal)}\n" if response.refusal else "")
        + f"  finish_reason: {response.finish_reason!r}\n"
        + advice
    )
    kind = DegenerateResponse if problem == "degenerate" else InvalidResponse
    return kind(message, response=response, reason=problem, model=response.model)


_library: Any = None
_imported: float | None = None  # when litellm's import ended (time.perf_counter())
# litellm's own "internal call" switch: no success-logging thread or logging-worker task per
# call. The harness turns litellm's callbacks off, so that work logs to nobody; skipping it
# is a third of litellm's per-call overhead in replay. Kept when the user asks for
# litellm's callbacks (HARNESS_LITELLM_CALLBACKS=1).
_QUIET: Any = None
_SCHEMA_SUPPORT: dict[str, bool] = {}
_UNPRICED: set[tuple[str | None, str]] = set()  # models litellm has no price for: don't ask again


def lib() -> Any:
    """litellm, imported on first use and configured for testing."""
    global _library, _QUIET, _imported
    if _library is None:
        _env.apply()
        # Outside pytest too (a script running an Orchestrator): litellm's warnings, at its
        # import and its first calls, are not the caller's to fix. Inside a test the plugin
        # sets the same filters again under pytest's per-test capture.
        quiet_warnings()
        import litellm

        _imported = time.perf_counter()

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
        _library = litellm
    return _library


def load() -> None:
    """Import litellm now (about 1.5 s), so that the first call's clock does not pay for it.

    A tribunal calls this before its deadline starts: otherwise the import, which blocks the
    event loop, would count against the panel's timeout.
    """
    lib()


def imported_since(since: float) -> bool:
    """Whether litellm was imported after ``since`` (``time.perf_counter()``).

    A replayed tribunal does not import litellm before its deadline (``load``): a judge
    whose call takes the HTTP path imports it inside, and the panel gives its judges their
    time again.
    """
    return _imported is not None and _imported >= since


async def settle() -> None:
    """Let litellm's background logging worker finish on the running loop, then stop it.

    litellm queues a logging task after each async call on a worker bound to the loop. The
    harness's sync facade runs a fresh loop per call: without this, each closed loop leaves a
    task behind and litellm warns "event loop changed" on the next call.
    """
    if _library is None:
        return
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:  # a litellm without the worker has nothing to settle
        return
    await GLOBAL_LOGGING_WORKER.flush()
    await GLOBAL_LOGGING_WORKER.stop()


def supports_schema(model: str) -> bool:
    """Whether ``model`` takes a JSON-schema ``response_format`` (litellm's own knowledge,
    as the test's recording kept it: ``recalled``)."""
    return recalled("supports_response_schema", model, _supports_schema) is True


def _supports_schema(model: str) -> bool:
    known = _SCHEMA_SUPPORT.get(model)
    if known is None:
        try:
            known = bool(lib().supports_response_schema(model=model))
        except Exception:  # litellm raises for model names it cannot place
            known = False
        _SCHEMA_SUPPORT[model] = known
    return known


def recalled(fact: str, model: str, ask: Callable[[str], Any]) -> Any:
    """What litellm knows of ``model`` (``fact``: ``supports_response_schema``,
    ``max_input_tokens``), as the test's recording kept it.

    A call hook that keeps such facts (the test's cassette: ``CassetteSlot.recall``) answers
    from its recording in replay, so that replay makes the choices the recording made
    without importing litellm, and keeps litellm's answer (``ask(model)``) when it records.
    Outside a test, or with no such hook, litellm is asked.
    """
    for hook in scope.current().hooks_for(model):
        recall = getattr(hook, "recall", None)  # optional: a hook without it keeps nothing
        if recall is not None:
            return recall(fact, model, ask)
    return ask(model)


def quiet_warnings() -> None:
    """Ignore the warnings litellm's own code causes on every call, by category and origin.

    Never by message text: texts change between releases. Under a user's
    ``filterwarnings = error`` each of these would fail the call it happens in:

    * litellm touches deprecated pydantic attributes on each streamed chunk (pydantic
      attributes the warning to litellm's line): every warning from litellm's modules.
    * litellm defers building the schemas of its ~800 pydantic models to their first use,
      inside a call; pydantic then warns about litellm's types (``ReadOnly`` items of its
      TypedDicts) from its schema generator: that origin's ``UserWarning``. A user's own
      model that warns there while its schema is built is quiet inside harness tests too.

    Warnings litellm's modules raise while they load (the application's imports too, from
    its first test on) are silenced at that import (``_model.quiet_imports``, installed here and
    by ``lib``, not when pytest starts: an import hook costs every later import a call). The
    plugin calls this inside pytest's per-test warning capture, so the filters are undone
    after each test.
    """
    _quiet_imports.install("litellm")
    warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
    warnings.filterwarnings(
        "ignore", category=UserWarning, module=r"pydantic\._internal\._generate_schema$"
    )


def completion(
    kwargs: dict[str, Any],
    *,
    model: str,
    on_token: TokenCallback | None,
    on_reasoning: TokenCallback | None = None,
) -> ModelResponse:
    """Make one litellm call and read its answer.

    Args:
        kwargs: the call's arguments as the seam built them (after its call hooks).
        model: the model the caller asked for (after ``--harness-model``): what the
            response reports and what its cost is looked up for.
        on_token: called with each text delta of a streamed answer.
        on_reasoning: called with each reasoning delta of a streamed answer.
    """
    litellm, started = lib(), time.perf_counter()
    stream = bool(kwargs.get("stream"))
    with _internal_call():
        raw = litellm.completion(**_for_litellm(kwargs))
        if stream:
            return _from_stream(model, _drain(raw, on_token, on_reasoning), raw, started)
        return _from_completion(model, raw, started)


async def acompletion(
    kwargs: dict[str, Any],
    *,
    model: str,
    on_token: TokenCallback | None,
    on_reasoning: TokenCallback | None = None,
) -> ModelResponse:
    """Async twin of ``completion``."""
    litellm, started = lib(), time.perf_counter()
    stream = bool(kwargs.get("stream"))
    with _internal_call():
        raw = await litellm.acompletion(**_for_litellm(kwargs))
        if stream:
            chunks = [chunk async for chunk in _adrain(raw, on_token, on_reasoning)]
            return _from_stream(model, chunks, raw, started)
        return _from_completion(model, raw, started)


@contextmanager
def _internal_call() -> Iterator[None]:
    token = _QUIET.set(True) if _QUIET is not None else None
    try:
        yield
    finally:
        if token is not None and _QUIET is not None:
            _QUIET.reset(token)


def _for_litellm(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What litellm needs beyond an OpenAI-style request."""
    kwargs = dict(kwargs)
    for key in [key for key in kwargs if key.startswith(NOTE_PREFIX)]:
        del kwargs[key]  # a call hook's note to itself, not litellm's
    if kwargs.get("tools"):
        # litellm's MCP bridge imports the optional `mcp` package for any call with tools
        # (and fails without it); the harness runs tools itself, never over MCP.
        kwargs["_skip_mcp_handler"] = True
    if kwargs.get("stream"):
        kwargs.setdefault("stream_options", {"include_usage": True})
    kwargs.setdefault("caching", False)
    return kwargs


def _drain(
    stream: Iterable[Any], on_token: TokenCallback | None, on_reasoning: TokenCallback | None
) -> list[Any]:
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
        _emit(chunk, on_token, on_reasoning)


async def _adrain(
    stream: Any, on_token: TokenCallback | None, on_reasoning: TokenCallback | None
) -> AsyncIterator[Any]:
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
        _emit(chunk, on_token, on_reasoning)
        yield chunk


def _emit(chunk: Any, on_token: TokenCallback | None, on_reasoning: TokenCallback | None) -> None:
    if on_token is None and on_reasoning is None:
        return
    choices = getattr(chunk, "choices", None) or []
    delta = getattr(choices[0], "delta", None) if choices else None
    if delta is None:
        return
    text = getattr(delta, "content", None)
    if text and on_token is not None:
        on_token(text)
    thought = getattr(delta, "reasoning_content", None)
    if thought and on_reasoning is not None:
        on_reasoning(thought)


def _from_completion(model: str, raw: Any, started: float) -> ModelResponse:
    data = _as_dict(raw)
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], Mapping):
        raise ProviderResponseError(
            f"model {model!r} answered without any choice: {json.dumps(data)[:300]}. "
            "The provider's reply is not a chat completion; check api_base and the model name."
        )
    return read_completion(
        data, model=model, cost=lambda usage: _cost(model, usage, raw), started=started
    )


def _from_stream(model: str, chunks: list[Any], stream: Any, started: float) -> ModelResponse:
    # litellm closes every stream with a finish reason, even one the provider never sent;
    # what the provider sent is kept on the wrapper.
    return read_stream(
        [_as_dict(chunk) for chunk in chunks],
        finish_reason=getattr(stream, "received_finish_reason", None),
        model=model,
        cost=lambda usage: _cost(model, usage),
        started=started,
    )


def _cost(model: str, usage: Usage, raw: Any = None) -> float | None:
    """USD cost: litellm's own figure for the response, else from its price map, else None."""
    hidden = getattr(raw, "_hidden_params", None) or {}
    if isinstance(hidden, Mapping) and isinstance(hidden.get("response_cost"), (int, float)):
        return float(hidden["response_cost"])
    return price(model, usage)


@functools.lru_cache(maxsize=256)
def provider_of(model: str) -> str | None:
    """The provider litellm sends ``model`` (a name without a provider prefix) to, or None
    when litellm cannot place it."""
    try:
        return str(lib().get_llm_provider(model)[1])
    except Exception:  # litellm raises for model names it cannot place
        return None


def price(model: str, usage: Usage, provider: str | None = None) -> float | None:
    """The cost of ``usage`` on ``model`` from litellm's price map, or None when unpriced.

    Prompt tokens read from the prompt cache are priced at the model's cache-read rate and
    those written to it at its cache-write rate (litellm's ``cache_read_input_token_cost``,
    ``cache_creation_input_token_cost``; the input rate where the map has none). litellm
    takes ``prompt_tokens`` as every prompt token, the cached ones included, as ``Usage``
    counts them.
    """
    if (provider, model) in _UNPRICED:
        return None
    try:
        prompt, completion = lib().cost_per_token(
            model=model,
            custom_llm_provider=provider,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cache_read_input_tokens=usage.cached_tokens,
            cache_creation_input_tokens=usage.cache_write_tokens,
        )
    except Exception:  # litellm raises a bare Exception for models it has no price for
        _UNPRICED.add((provider, model))
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
