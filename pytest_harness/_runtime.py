"""The settings in force for model calls right now (per test, or the library defaults).

The plugin activates a ``Scope`` around each test; the model seam reads it on every call.
A plain module global rather than a ContextVar: a test may call the model from a worker
thread, which would not inherit a ContextVar, and pytest runs one test at a time per process.
Nothing heavy is imported here: the plugin imports this module at start-up.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from pytest_harness.errors import DegenerateResponse, HarnessWarning, InvalidResponse, quote
from pytest_harness.validator import ResponseValidator

if TYPE_CHECKING:
    from pytest_harness.model import ModelResponse

DegenerateMode: TypeAlias = Literal["fail", "warn", "off"]
DEGENERATE_MODES: tuple[DegenerateMode, ...] = ("fail", "warn", "off")
ResponseListener: TypeAlias = Callable[["ModelResponse"], None]
# Called when a tribunal finishes: the tribunal, and the error it raised (None on a verdict).
TribunalListener: TypeAlias = Callable[[Any, "BaseException | None"], None]

_VALIDATOR = ResponseValidator()


class CallHook(Protocol):
    """Call-time behaviour installed around the model seam (cassettes, the local model).

    ``prepare`` may change the litellm keyword arguments of a call before it is made;
    ``translate`` may replace an exception the call raised by a clearer one (or return None).
    """

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def translate(self, error: BaseException) -> BaseException | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What governs model calls in the current test (or outside any test).

    Attributes:
        degenerate: what to do with an invalid or degenerate response.
        model: when set, replaces the model every call asks for.
        retries: when set, the provider SDK's retry count (0 in replay: a miss must not hide
            behind retries).
        timeout: per-call HTTP timeout in seconds, unless the call passes its own.
        test_id: the pytest node id of the running test, for messages.
        listeners: called with every response that passed validation.
        tribunal_listeners: called when a tribunal finishes (the plugin's report).
        call_hooks: call-time behaviour, applied in order (local-model route, cassette).
    """

    degenerate: DegenerateMode = "fail"
    model: str | None = None
    retries: int | None = None
    timeout: float | None = None
    test_id: str | None = None
    listeners: tuple[ResponseListener, ...] = ()
    tribunal_listeners: tuple[TribunalListener, ...] = ()
    call_hooks: tuple[CallHook, ...] = ()


_current = Scope()


def current() -> Scope:
    """The scope in force now."""
    return _current


@contextmanager
def activate(scope: Scope) -> Iterator[Scope]:
    """Make ``scope`` the one in force until the block ends."""
    global _current
    previous, _current = _current, scope
    try:
        yield scope
    finally:
        _current = previous


@contextmanager
def override(**changes: Any) -> Iterator[Scope]:
    """Change some fields of the scope in force until the block ends.

    Example: ``with override(degenerate="off"): complete(...)``.
    """
    with activate(replace(_current, **changes)) as scope:
        yield scope


def quiet_dependencies() -> None:
    """Ignore the warnings litellm and pydantic raise from inside litellm on every call.

    litellm touches deprecated pydantic attributes on each streamed chunk; under a user's
    ``filterwarnings = error`` that would break every stream. Called inside pytest's
    per-test warning capture, so the filters are undone after each test.
    """
    warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
    warnings.filterwarnings("ignore", message=r"Item .* is using the .ReadOnly. qualifier")


def prepare(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Let the scope's call hooks adjust a call's litellm arguments, in order."""
    for hook in _current.call_hooks:
        kwargs = hook.prepare(kwargs)
    return kwargs


def translate(error: BaseException) -> BaseException | None:
    """The clearer exception a call hook offers for ``error``, if any."""
    for hook in _current.call_hooks:
        better = hook.translate(error)
        if better is not None:
            return better
    return None


def check(response: ModelResponse) -> None:
    """Apply the scope's degenerate policy to one response; notify listeners if it passes."""
    scope = _current
    problem = None if scope.degenerate == "off" else _VALIDATOR.problem(response)
    if problem is not None:
        error = _problem_error(response, problem, scope)
        if scope.degenerate == "fail":
            raise error
        warnings.warn(HarnessWarning(str(error)), stacklevel=3)
    for listener in scope.listeners:
        listener(response)


def tribunal_done(tribunal: Any, error: BaseException | None) -> None:
    """Tell the scope's tribunal listeners that ``tribunal`` finished (or failed)."""
    for listener in _current.tribunal_listeners:
        listener(tribunal, error)


def _problem_error(response: ModelResponse, problem: str, scope: Scope) -> InvalidResponse:
    what = {
        "interrupted": "an interrupted response (the stream ended without a finish reason)",
        "empty_response": "an empty response (no text and no tool calls)",
        "degenerate": "a degenerate response (no visible text once think blocks are removed)",
    }.get(problem, problem)
    where = f" in {scope.test_id}" if scope.test_id else ""
    message = (
        f"model {response.model!r} returned {what}{where}.\n"
        f"  content: {quote(response.content)}\n"
        f"  reasoning: {quote(response.reasoning)}\n"
        f"  finish_reason: {response.finish_reason!r}\n"
        + (
            "Check the prompt and the model; to accept such responses set "
            "harness_degenerate = warn (or off) in your pytest ini, or mark the test with "
            '@pytest.mark.harness(degenerate="warn").'
            if scope.degenerate == "fail"
            else "Reported, not failed: harness_degenerate = warn for this test."
        )
    )
    kind = DegenerateResponse if problem == "degenerate" else InvalidResponse
    return kind(message, response=response, reason=problem, model=response.model)
