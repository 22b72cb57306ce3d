"""The model seam: every model call of pytest-harness goes through here.

``complete`` / ``acomplete`` return a plain, frozen ``ModelResponse``. A call is built once
(``request``: the model after ``--harness-model``, the scope's timeout and retries, then the
scope's call hooks: the embedded-model route and the test's cassette) and sent once
(``send`` / ``asend``, through ``_litellm``). On the way back every response is checked by
the ``ResponseValidator`` under the policy of the current test (``harness_degenerate``), and
a response that passes is reported to the scope's listeners (topic ``"response"``).

litellm is imported on the first call, never before, and only by ``_litellm``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, overload

from pytest_harness import _litellm
from pytest_harness import _scope as scope
from pytest_harness._response import Messages, ModelResponse, ResponseValidator, TokenCallback
from pytest_harness.errors import DegenerateResponse, HarnessWarning, InvalidResponse, quote

_VALIDATOR = ResponseValidator()
_PROBLEMS = {
    "interrupted": "an interrupted response (the stream ended without a finish reason)",
    "empty_response": "an empty response (no text and no tool calls)",
    "degenerate": "a degenerate response (no visible text once think blocks are removed)",
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
    with _clearer_errors(call), scope.seam_call():
        response = _litellm.completion(
            call.kwargs, model=call.model, on_token=on_token, on_reasoning=on_reasoning
        )
    response = _received(call, response)
    check(response)
    return response


async def asend(
    call: Request,
    *,
    on_token: TokenCallback | None = None,
    on_reasoning: TokenCallback | None = None,
) -> ModelResponse:
    """Async twin of ``send``."""
    with _clearer_errors(call), scope.seam_call():
        response = await _litellm.acompletion(
            call.kwargs, model=call.model, on_token=on_token, on_reasoning=on_reasoning
        )
    response = _received(call, response)
    check(response)
    return response


def check(response: ModelResponse) -> None:
    """The validation policy: apply the scope's ``degenerate`` mode to one response.

    ``fail`` raises ``InvalidResponse`` / ``DegenerateResponse``, ``warn`` warns
    (``HarnessWarning``), ``off`` accepts. A response that is not failed is reported to the
    scope's listeners.
    """
    error = problem(response)
    if error is not None:
        if scope.current().degenerate == "fail":
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
    reason = None if current.degenerate == "off" else _VALIDATOR.problem(response)
    return None if reason is None else _problem_error(response, reason, current, call)


def _received(call: Request, response: ModelResponse) -> ModelResponse:
    """The response as the scope's call hooks read it (the embedded model's tool calls)."""
    for hook in call.hooks:
        response = hook.receive(call.kwargs, response)
    return response


@contextmanager
def _clearer_errors(call: Request) -> Iterator[None]:
    """Replace an SDK error by the clearer one a call hook finds behind it.

    The provider SDK wraps whatever the transport raised (a cassette miss, a blocked
    connection) into a generic connection error; the test should see the real cause.
    """
    try:
        yield
    except Exception as error:
        better = next(filter(None, (hook.translate(error) for hook in call.hooks)), None)
        if better is None:
            raise
        raise better from error


def _messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _problem_error(
    response: ModelResponse, problem: str, current: scope.Scope, call: str = ""
) -> InvalidResponse:
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
        f"  finish_reason: {response.finish_reason!r}\n" + advice
    )
    kind = DegenerateResponse if problem == "degenerate" else InvalidResponse
    return kind(message, response=response, reason=problem, model=response.model)
