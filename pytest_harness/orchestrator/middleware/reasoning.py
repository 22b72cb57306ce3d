"""Reasoning: the reasoning effort of every request, passed through litellm.

``Reasoning("low")`` sets litellm's ``reasoning_effort`` on each request (unless the
request sets its own): litellm maps it to each provider's form (OpenAI's
``reasoning_effort``, Anthropic's and Gemini's thinking budgets). A model that does not
take it fails its first request with litellm's ``UnsupportedParamsError``, which names the
parameter: drop the middleware for that model.

Reasoning content is kept apart from the answer: the seam puts it in
``ModelResponse.reasoning`` (``reasoning_content``, or the text of think blocks), never in
``text``; a streamed run hands its deltas to ``on_reasoning`` and its text to
``on_content``; ``Run.output`` is the answer alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator.pipeline import ModelCall, Next
from pytest_harness.response import ModelResponse

Effort = Literal["minimal", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = ("minimal", "low", "medium", "high")


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Ask every request of a run for this much reasoning.

    Attributes:
        effort: ``"minimal"``, ``"low"``, ``"medium"`` or ``"high"``.
    """

    effort: Effort = "medium"

    def __post_init__(self) -> None:
        if self.effort not in EFFORTS:
            raise ConfigError(
                f"Reasoning(effort=...) expects one of {', '.join(EFFORTS)}, got {self.effort!r}."
            )

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        call.params.setdefault("reasoning_effort", self.effort)
        return await next(call)
