"""Every exception of pytest-harness, in one place; each names what went wrong and the fix.

The tree (a test checks it against the classes below)::

    HarnessError
    ├── ConfigError (also ValueError)       a wrong option, ini value or marker argument
    │   └── DatasetError                    a dataset of cases that cannot be read
    │       └── LabelError                  a labelled set that cannot be read
    ├── MovedName (also ImportError)        an old import: the error names the new home
    ├── InvalidResponse                     a structurally unusable model response
    │   └── DegenerateResponse              valid, but nothing visible (blank / think-only)
    ├── ProviderResponseError               the provider answered something we cannot read
    ├── JudgeOutputError                    an agent's reply does not parse or fit its schema
    ├── AgentTimeout (also TimeoutError)    a judge still running at the panel's deadline
    ├── AllAgentsFailed                     every judge failed (or more than ``may_fail``)
    ├── CassetteError                       a cassette cannot be read or written safely
    ├── NetworkBlocked (also ConnectionError)  replay mode refused an outbound connection
    ├── EndpointUnreachable (also ConnectionError)  recording: nothing answers at an address
    ├── LocalModelError                     the embedded model cannot be installed or started
    │   └── UnsupportedRequest (also ValueError)  its endpoint cannot serve a request (a 400)
    ├── RunFailed                           an orchestrator request failed (its run is kept)
    ├── RetriesExhausted                    a transient provider error outlasted the retries
    ├── CompactionFailed                    the summary call of a compaction failed
    ├── SessionStoreError                   a session store is corrupt, locked or not one
    ├── UnknownSession (also LookupError)   no session with that id
    ├── ReplayedFailure                     a model call that failed while recorded, failing again
    ├── RecordedToolError                   a recorded tool's exception that replay cannot rebuild
    ├── TeamError                           a shared-state team could not finish (its findings kept)
    ├── ScenariosUnavailable                a test's scenarios could not be had
    ├── ReportError                         a JSON report cannot be read or merged
    └── SimulationError                     the application failed in a simulated conversation

    HarnessStop (a BaseException, as pytest.fail's is)  the test cannot go on
    ├── CassetteMiss                        replay found no recording for a request
    ├── UnrecordableTraffic                 what no cassette can hold (MCP over stdio, a
    │                                       recorded tool's value JSON cannot store)
    ├── BudgetExceeded                      the recorded spend passed harness_max_cost
    └── CallAbandoned                       replay of a call its caller abandoned (a deadline)

    ToolArgumentError (a ValueError)        a tool's arguments do not fit it (told to the model)
    StopRun (an Exception)                  raised by a middleware: the run ends, with a reason

``HarnessStop`` errors derive from ``BaseException``, so no ``except Exception`` of an SDK
or an application retries or swallows them. Provider failures (HTTP 429, 500, timeouts)
are not wrapped: they reach the caller as litellm's own exceptions. ``HarnessWarning`` (a
``UserWarning``) replaces a response error under ``harness_degenerate = warn``.
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
    return f"{type_name(error)}: {error}"


def type_name(error: BaseException) -> str:
    """An exception's type as messages name it: a ``ReplayedFailure`` by the type of the
    error it replays, so that a replayed failure reads as the recorded one did."""
    recorded = getattr(error, "recorded_type", None)
    return recorded if isinstance(recorded, str) and recorded else type(error).__name__


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


class MovedName(HarnessError, ImportError):
    """An import of a name the package no longer has there: it moved (the message says
    where) or was removed (the message says what to use). docs/migration.md lists them all.

    ``hasattr(pytest_harness, old_name)`` is still False: attribute access raises an
    ``AttributeError`` saying the same.
    """


class InvalidResponse(HarnessError):
    """A model response that is not a usable turn at all.

    Attributes:
        response: the offending ``ModelResponse``, or None when there was none. Typed ``Any``:
            ``pytest_harness._model.response`` raises the errors of this module, and the package's
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
    """A structurally valid text response with no visible content (blank or think-only).

    Attributes:
        response: The ``ModelResponse`` with nothing visible in it.
        reason: ``"degenerate"``.
        model: The model that produced it.
    """


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


class ReplayedFailure(HarnessError):
    """A model call of the harness that failed while its cassette was recorded, replayed:
    the same error, raised again at the same place (``describe`` names it by its type).

    Attributes:
        recorded_type: the type name of the error the call raised when recorded.
    """

    def __init__(self, message: str, *, recorded_type: str):
        super().__init__(message)
        self.recorded_type = recorded_type


class RecordedToolError(HarnessError):
    """In replay, the exception a recorded tool raised when its cassette was recorded, when
    its type cannot be imported or made from its message (``describe`` names it by that type).

    Attributes:
        recorded_type: the type of the exception recorded (``module.qualname``).
        recorded_message: its message.
    """

    def __init__(self, message: str, *, recorded_type: str, recorded_message: str) -> None:
        super().__init__(message)
        self.recorded_type = recorded_type
        self.recorded_message = recorded_message


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


class CallAbandoned(HarnessStop):
    """Replay of a model call its caller abandoned while recording (a tribunal's or a team
    member's deadline passed, and the call was cancelled): the deadline that cut it off
    counts it as still running at the deadline, without waiting. Reaching the test, it
    says that nothing abandoned the call at the same place in replay."""


class UnrecordableTraffic(HarnessStop):
    """The test started traffic a cassette cannot record (an MCP server over stdio), or a
    recorded tool got or returned a value the cassette cannot store."""


class BudgetExceeded(HarnessStop):
    """A live model call was refused: the spend recorded so far passed ``harness_max_cost``."""


class CassetteError(HarnessError):
    """A cassette could not be read, or refused to be written (for example: a secret in it)."""


class NetworkBlocked(HarnessError, ConnectionError):
    """In replay mode a test tried to connect to a host that is not allowed."""


class EndpointUnreachable(HarnessError, ConnectionError):
    """While recording, a request found nothing at its address (refused, or no such host)."""


class LocalModelError(HarnessError):
    """The embedded model is not installed, or its server did not start."""


class UnsupportedRequest(LocalModelError, ValueError):
    """A request the embedded model's endpoint cannot serve; the client gets a 400 saying so.

    Attributes:
        param: the request field at fault (OpenAI's error ``param``), or None.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class HarnessWarning(UserWarning):
    """Raised as a warning, not an error, when ``harness_degenerate = warn``."""


class RunFailed(HarnessError):
    """A model call failed mid-run (a provider error, an invalid response).

    Attributes:
        run: the run up to the failure (``stop_reason`` ``error``): its messages are kept.
    """

    def __init__(self, message: str, *, run: Any):
        super().__init__(message)
        self.run = run


class RetriesExhausted(HarnessError):
    """A model request kept failing for passing reasons, and ``Retry`` gave up on it.

    Raised from the last error (its ``__cause__``).

    Attributes:
        attempts: how many times the request was sent.
        waited: seconds waited between the attempts, in all.
        last: the last attempt's error.
    """

    def __init__(self, message: str, *, attempts: int, waited: float, last: BaseException):
        super().__init__(message)
        self.attempts = attempts
        self.waited = waited
        self.last = last


class CompactionFailed(HarnessError):
    """The summary call of a compaction failed; the conversation was left unchanged."""


class UnknownSession(HarnessError, LookupError):
    """No session with that id in the store."""


class SessionStoreError(HarnessError):
    """The session store cannot be opened, read or written (corrupt, locked, not one)."""


class StopRun(Exception):
    """Raised by a middleware to end the run with ``reason`` (its messages are kept).

    Attributes:
        reason: The run's stop reason (``Run.stop_reason``).
        detail: What stopped it, in words (may be empty).
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class ToolArgumentError(ValueError):
    """The arguments a model sent for a tool are not JSON, or do not fit the tool.

    The message is written for the model, to be sent back as the tool's result: it names the
    tool and every problem, and asks for the call again.
    """


class TeamError(HarnessError):
    """A shared-state team could not finish.

    Attributes:
        team: the team's name.
        findings: the store's findings when it stopped.
        turns: the member turns run so far (their errors included).
        cycles: the cycles that ran to their end.
    """

    def __init__(
        self,
        message: str,
        *,
        team: str,
        findings: list[Any],
        turns: tuple[Any, ...],
        cycles: int,
    ) -> None:
        super().__init__(message)
        self.team = team
        self.findings = findings
        self.turns = turns
        self.cycles = cycles


class SimulationError(HarnessError):
    """The application failed during a simulated conversation.

    Attributes:
        transcript: The ``Transcript`` of the conversation up to the failure.
    """

    def __init__(self, message: str, *, transcript: Any) -> None:
        super().__init__(message)
        self.transcript = transcript


class ScenariosUnavailable(HarnessError):
    """A test's scenarios could not be had (reported as that test's error)."""


class DatasetError(ConfigError):
    """A dataset of cases that cannot be read: the message names the file and line, or the
    item, and what to write instead."""


class ReportError(HarnessError):
    """A JSON report that cannot be read or merged (``python -m pytest_harness merge``):
    the message names the file, what was expected in it, and what to do."""


class LabelError(DatasetError):
    """A labelled set that cannot be read: the message names the file and line, or the item."""
