"""Errors raised by pytest-harness.

Every error names what went wrong and what to do about it. The tree::

    HarnessError
    ├── ConfigError (also ValueError)       a wrong option, ini value or marker argument
    ├── InvalidResponse                     a structurally unusable model response
    │   └── DegenerateResponse              valid, but nothing visible (blank / think-only)
    ├── ProviderResponseError               the provider answered something we cannot read
    ├── JudgeOutputError                    an agent's reply does not parse or fit its schema
    ├── AgentTimeout (also TimeoutError)    a judge still running at the panel's deadline
    ├── AllAgentsFailed                     every judge failed (or more than ``may_fail``)
    ├── CassetteError                       a cassette cannot be read or written safely
    ├── NetworkBlocked (also ConnectionError)  replay mode refused an outbound connection
    ├── LocalModelError                     the embedded model cannot be installed or started
    ├── RunFailed                           an orchestrator request failed (its run is kept)
    ├── RetriesExhausted                    a transient provider error outlasted the retries
    ├── CompactionFailed                    the summary call of a compaction failed
    ├── SessionStoreError                   a session store is corrupt, locked or not one
    ├── UnknownSession (also LookupError)   no session with that id
    ├── TeamError                           a shared-state team could not finish (its findings kept)
    └── SimulationError                     the application failed in a simulated conversation

    HarnessStop (a BaseException, as pytest.fail's is)  the test cannot go on
    ├── CassetteMiss                        replay found no recording for a request
    └── BudgetExceeded                      the recorded spend passed harness_max_cost

``HarnessStop`` errors are raised inside the HTTP transport of whatever client the code
under test uses. Deriving from ``BaseException`` keeps them out of every ``except
Exception``: provider SDKs do not retry them (a miss fails in milliseconds, not after
seconds of backoff) or wrap them, and application fallbacks do not swallow them.

Provider failures (HTTP 429, 500, timeouts, ...) are not wrapped: they reach the caller as
litellm's own typed exceptions, which carry the provider's message and status code.

Warnings: ``HarnessWarning`` (a ``UserWarning``), raised for degenerate or invalid responses
when ``harness_degenerate = warn``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what led to it, nearest first: causes, contexts, and the
    ``original_exception`` SDK wrappers (litellm's) keep. Each exception once."""
    seen: set[int] = set()
    todo: list[Any] = [error]
    while todo:
        current = todo.pop(0)
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [
            current.__cause__,
            current.__context__,
            getattr(current, "original_exception", None),
        ]


def find_cause(
    error: BaseException, kinds: tuple[type[BaseException], ...]
) -> BaseException | None:
    """The nearest exception of ``kinds`` behind ``error`` (itself included), or None."""
    return next((found for found in causes(error) if isinstance(found, kinds)), None)


def describe(error: BaseException) -> str:
    """An exception in one line: its type and message."""
    return f"{type(error).__name__}: {error}"


def quote(text: str | None, limit: int = 300) -> str:
    """How an error message shows model text: its repr, cut at ``limit`` with the length."""
    shown = repr(text)
    if text is None or len(shown) <= limit:
        return shown
    return shown[:limit] + f"... ({len(text)} chars)"


class HarnessError(Exception):
    """Root of every error raised by pytest-harness."""


class ConfigError(HarnessError, ValueError):
    """A user mistake in options, ini keys, markers or arguments."""


class InvalidResponse(HarnessError):
    """A model response that is not a usable turn at all.

    Attributes:
        response: the offending ``ModelResponse``, or None when there was none. Typed ``Any``:
            ``pytest_harness.response`` raises the errors of this module, and the package's
            modules import one another one way only (tests/test_layout.py).
        reason: ``"nil_response"``, ``"interrupted"``, ``"empty_response"`` or ``"degenerate"``.
        model: the model that produced it.
    """

    def __init__(self, message: str, *, response: Any, reason: str, model: str):
        super().__init__(message)
        self.response = response
        self.reason = reason
        self.model = model


class DegenerateResponse(InvalidResponse):
    """A structurally valid text response with no visible content (blank or think-only)."""


class ProviderResponseError(HarnessError):
    """The provider answered with something that cannot be read as a chat completion."""


class JudgeOutputError(HarnessError):
    """An agent's reply did not parse as JSON or did not fit its output schema.

    Attributes:
        raw: the reply text exactly as the model gave it.
    """

    def __init__(self, message: str, *, raw: str | None):
        super().__init__(message)
        self.raw = raw


class AgentTimeout(HarnessError, TimeoutError):
    """A judge was still running when its panel's timeout expired."""


class AllAgentsFailed(HarnessError):
    """Every judge of a panel failed, or more than its ``may_fail`` allowance did.

    Attributes:
        errors: ``[{"agent": name, "error": exception}, ...]`` for each failed judge.
    """

    def __init__(self, message: str, *, errors: list[dict[str, Any]]):
        super().__init__(message)
        self.errors = errors


class HarnessStop(BaseException):
    """An error that ends the test whatever code sits between it and the test.

    Like ``pytest.fail``'s exception it is a ``BaseException``: SDK retry loops and
    ``except Exception`` blocks in the code under test let it through.
    """


class CassetteMiss(HarnessStop):
    """Replay found no recorded interaction matching a request."""


class BudgetExceeded(HarnessStop):
    """A live model call was refused: the spend recorded so far passed ``harness_max_cost``."""


class CassetteError(HarnessError):
    """A cassette could not be read, or refused to be written (for example: a secret in it)."""


class NetworkBlocked(HarnessError, ConnectionError):
    """In replay mode a test tried to connect to a host that is not allowed."""


class LocalModelError(HarnessError):
    """The embedded model is not installed, or its server did not start."""


class HarnessWarning(UserWarning):
    """Raised as a warning, not an error, when ``harness_degenerate = warn``."""
