"""Validation: a response that is no turn at all (empty, cut off) is asked for again.

The model seam already checks every response with the ``ResponseValidator``, under the
policy of the test in force (``harness_degenerate``; ``fail`` outside a test):

* ``fail``: it raises ``InvalidResponse`` for a structurally unusable response (reason
  ``nil_response``, ``interrupted``: a stream that ended without a finish reason, or
  ``empty_response``: no text and no tool calls), and ``DegenerateResponse`` for one with
  nothing visible once its think blocks are removed;
* ``warn``: it warns (``HarnessWarning``) and returns the response;
* ``off``: it returns the response unchecked.

``Validation`` acts on the first kind only: such a response is a glitch of the provider
or the connection, so the request is sent again (``retries`` times at most), each time
noted as an ``invalid_response`` event; if the last answer is invalid too, its error is
raised (the run fails with it). A degenerate response is not asked again: the model did
answer, only thinking, and the seam's policy decides. Under ``warn`` and ``off`` the seam
raises nothing, so nothing is asked again: the run takes the response as it is (an empty
final answer ends the run ``done`` with an empty output).

In replay it stays on: the invalid answer and the one after it were both recorded, in
order, so the replayed run asks again and gets what the recorded run got.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_harness.errors import ConfigError, InvalidResponse
from pytest_harness.orchestrator.pipeline import ModelCall, Next
from pytest_harness.response import ModelResponse

__all__ = ["Validation"]

_ASKED_AGAIN = frozenset({"nil_response", "interrupted", "empty_response"})


@dataclass(frozen=True, slots=True)
class Validation:
    """Send a request again when the seam finds its response invalid (a middleware).

    Attributes:
        retries: times a request is sent again after an invalid response (0: never).
    """

    retries: int = 1

    def __post_init__(self) -> None:
        retries = self.retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(
                f"Validation(retries=...) expects a whole number, 0 or more, got {retries!r}."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        for again in range(1, self.retries + 1):
            try:
                return await next(call)
            except InvalidResponse as error:
                if error.reason not in _ASKED_AGAIN:
                    raise  # degenerate: the seam's policy stands
                call.event(
                    "invalid_response", f"{error.reason}; asking again ({again} of {self.retries})"
                )
        return await next(call)
