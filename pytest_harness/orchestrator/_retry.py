"""Retry: a model request that failed for a passing reason is sent again, after a wait."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any

from pytest_harness._local.route import LOCAL_MODEL
from pytest_harness._model import seam as model
from pytest_harness._model.response import ModelResponse
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import (
    ConfigError,
    HarnessError,
    RetriesExhausted,
    StopRun,
    causes,
    describe,
)
from pytest_harness.orchestrator._pipeline import ModelCall, Next

_PASSING_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
_SLICE = 0.05  # seconds: how soon an abort ends a wait


@dataclass(frozen=True, slots=True)
class Transient:
    """A failure worth another attempt.

    Attributes:
        kind: what failed, for the event: ``HTTP 429``, ``timeout``, ``connection error``.
        retry_after: the seconds the provider asked to wait, or None when it named none.
    """

    kind: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """Send a request again when it failed for a passing reason (a middleware).

    Attributes:
        max_attempts: times a request is sent at most (the first one included).
        base_delay: seconds before the second attempt; each further wait doubles it.
        max_delay: the longest wait of the doubling (a ``Retry-After`` may ask for more).
        max_total_wait: seconds of waiting per request, in all; a wait that would pass it
            gives up instead.
        jitter: randomise each doubling wait between half of it and all of it.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_wait: float = 30.0
    jitter: bool = True

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ConfigError(
                f"Retry(max_attempts=...) expects a whole number, 1 or more (1: never retry), "
                f"got {attempts!r}."
            )
        for name in ("base_delay", "max_delay", "max_total_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"Retry({name}=...) expects seconds, 0 or more, got {value!r}.")
        if self.base_delay > self.max_delay:
            raise ConfigError(
                f"Retry(base_delay={self.base_delay!r}) is above max_delay={self.max_delay!r}: "
                "raise max_delay or lower base_delay."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        if scope.current().replay or model.resolve(call.model) == LOCAL_MODEL:
            return await next(call)
        call.params = {**call.params, "num_retries": 0, "max_retries": 0}  # one owner
        waited = 0.0
        for attempt in range(1, self.max_attempts + 1):
            try:
                return await next(call)
            except Exception as error:
                wait = self.pause(call, attempt, waited, error)
                if wait is None:
                    raise
            await _sleep(wait, call)
            waited += wait
        raise AssertionError("unreachable: the last attempt returns or gives up")

    def pause(self, call: ModelCall, attempt: int, waited: float, error: Exception) -> float | None:
        """The wait before the next attempt (noted as an event), or None for an error to raise.

        Raises:
            RetriesExhausted: no attempt left, or the wait would pass ``max_total_wait``.
        """
        failure = transient(error)
        if failure is None:
            return None
        wait = self.wait(attempt, failure)
        refusal = self.refusal(attempt, wait, waited, failure)
        if refusal:
            raise _exhausted(call, attempt, waited, refusal, error) from error
        detail = f"{failure.kind}; waiting {_seconds(wait)} s"
        call.event("retry", f"{detail} (attempt {attempt + 1} of {self.max_attempts})")
        model.retried(error)  # its cassette keeps the answer it gets in the end
        return wait

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1 for the first) when none is asked."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(attempt - 1, 64))
        return ceiling / 2 + random.uniform(0, ceiling / 2) if self.jitter else ceiling

    def wait(self, attempt: int, failure: Transient) -> float:
        """The wait after failed attempt ``attempt``: the provider's, else the backoff."""
        return self.backoff(attempt) if failure.retry_after is None else failure.retry_after

    def refusal(self, attempt: int, wait: float, waited: float, failure: Transient) -> str:
        """Why no further attempt is made, or "" to go on."""
        if attempt >= self.max_attempts:
            return f"no attempt left (max_attempts={self.max_attempts})"
        left = self.max_total_wait - waited
        if wait <= left:
            return ""
        asked = " (Retry-After)" if failure.retry_after is not None else ""
        return (
            f"the next wait, {_seconds(wait)} s{asked}, is more than the {_seconds(left)} s "
            f"left of max_total_wait={self.max_total_wait:g}"
        )


def transient(error: BaseException) -> Transient | None:
    """The passing failure behind ``error``, or None when asking again would not help.

    An HTTP status the provider really sent decides first (a ``Timeout`` of litellm's may
    be a 504); then a timeout, then a connection failure anywhere in the error's chain. A
    status litellm made up (it reports a body it could not read, or a refused connection,
    as HTTP 500) does not count: the chain shows what happened.
    """
    chain = list(causes(error))
    if any(isinstance(e, HarnessError) for e in chain):
        return None  # the harness's own verdict (an invalid response, a blocked host)
    answer = _http_answer(chain)
    if answer is not None:
        status, headers = answer
        if status not in _PASSING_STATUS:
            return None
        asked = retry_after(headers)
        note = "" if asked is None else f", Retry-After {_seconds(asked)} s"
        return Transient(f"HTTP {status}{note}", asked)
    import httpx  # litellm's and the OpenAI SDK's HTTP client: loaded if they raised

    if any(
        isinstance(e, (httpx.TimeoutException, TimeoutError, asyncio.TimeoutError)) for e in chain
    ):
        return Transient("timeout")
    broken = (httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError)
    if any(isinstance(e, broken) for e in chain):
        return Transient("connection error")
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds a ``retry-after-ms`` or ``Retry-After`` header asks to wait, or None."""
    named = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    milliseconds = _number(named.get("retry-after-ms", ""))
    if milliseconds is not None:
        return max(0.0, milliseconds / 1000)
    value = named.get("retry-after", "")
    seconds = _number(value)
    if seconds is not None:
        return max(0.0, seconds)
    try:  # an HTTP date
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, not the local time
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - time.time())


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _http_answer(chain: list[BaseException]) -> tuple[int, Mapping[str, str]] | None:
    """(status, headers) of the HTTP error answer behind the chain, or None when none came."""
    import httpx

    for error in chain:
        if isinstance(error, httpx.HTTPStatusError):
            return error.response.status_code, error.response.headers
    # litellm keeps the answer's headers on its exceptions when a provider answered.
    top = chain[0]
    headers: Any = getattr(top, "litellm_response_headers", None)
    status = getattr(top, "status_code", None)
    if isinstance(headers, Mapping) and isinstance(status, int):
        return status, headers
    return None


async def _sleep(seconds: float, call: ModelCall) -> None:
    """Wait, in short slices: an ``abort()`` of the agent ends the wait and the run."""
    flag = getattr(call.agent, "abort_requested", None)  # an Orchestrator's threading.Event
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while True:
        if flag is not None and flag.is_set():
            raise StopRun("aborted", "while waiting to retry a model request")
        left = until - loop.time()
        if left <= 0:
            return
        await asyncio.sleep(min(left, _SLICE))


def _exhausted(
    call: ModelCall, attempts: int, waited: float, why: str, last: Exception
) -> RetriesExhausted:
    message = (
        f"model request {call.number} of the run failed {attempts} time(s), after "
        f"{_seconds(waited)} s of waiting in all; Retry gave up: {why}. "
        f"Last error: {describe(last)}\n"
        "The provider is overloaded or unreachable: try again later, or allow more with "
        "Retry(max_attempts=..., max_total_wait=...)."
    )
    return RetriesExhausted(message, attempts=attempts, waited=waited, last=last)


def _seconds(value: float) -> str:
    return f"{value:.1f}" if value >= 0.1 or value == 0 else f"{value:.3f}"
