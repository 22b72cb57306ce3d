"""Judge: an Agent whose reply is read into a score and a reason, and passes by a threshold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_harness._agent import Agent
from pytest_harness._model.response import ModelResponse
from pytest_harness._model.structured import cut_off
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import ConfigError, JudgeOutputError, quote

LABELS = Path(__file__).parent / "labels"


class Judge(Agent):
    """An Agent that scores what it judges, with a reason, and passes by ``threshold``.

    Besides the Agent's attributes (``model``, ``params``, ...):

    Attributes:
        threshold: The judgement passes when its score is at least this.
        labels: The file name of the judge's labelled set in the package (see
            ``labelled_set``).
        temperature: 0, as the published judges are run.

    A subclass reads its reply in ``read_score`` and builds its prompt in ``prompt``.
    """

    threshold: ClassVar[float] = 1.0
    labels: ClassVar[str | None] = None
    temperature = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check a threshold the class sets now (``ConfigError``), not at its first call."""
        super().__init_subclass__(**kwargs)
        threshold = cls.__dict__.get("threshold", 1.0)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ConfigError(
                f"judge {cls.__name__}: threshold = {threshold!r} is not a number; set a "
                "score, e.g. threshold = 0.8 (the judgement passes at or above it)"
            )

    def resolved_model(self) -> str:
        """The judge model in force (``--harness-judge-model``), else the Agent's choice."""
        return scope.current().judge_model or super().resolved_model()

    def parse(self, response: ModelResponse) -> dict[str, Any]:
        """The judgement: ``score``, ``reason``, ``passed``, ``threshold`` and details.

        Raises:
            JudgeOutputError: the reply does not parse, or holds no score this judge reads.
        """
        reply = super().parse(response)
        raw = response.content or ""
        try:
            score, reason, details = self.read_score(reply, raw)
        except JudgeOutputError as error:
            if response.finish_reason != "length":
                raise
            raise cut_off(error, self.name, self.params, self._needed_tokens()) from error
        return self.judgement(score, reason, **details)

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The score, the reason and any details in a parsed reply (subclasses define it).

        Raises:
            JudgeOutputError: the reply holds no score this judge can read.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define read_score")

    def judgement(self, score: float, reason: str, **details: Any) -> dict[str, Any]:
        """The processed reply: the score against ``threshold``, the reason, the details."""
        threshold = float(self.threshold)
        return {
            "score": score,
            "reason": reason,
            "passed": score >= threshold,
            "threshold": threshold,
            **details,
        }

    def fact(self, key: str, what: str) -> Any:
        """A fact the prompt needs from the context (``ConfigError`` naming the key)."""
        value = self.context.get(key)
        if value is None or value == "":
            raise ConfigError(
                f"judge {self.name} needs {what}: pass context={{{key!r}: ...}} (in a labelled "
                f'set, a "{key}" key on each line)'
            )
        return value

    def judged_text(self) -> str:
        """The judged text: the input, which must be a string."""
        if not isinstance(self.input, str):
            raise ConfigError(
                f"judge {self.name} judges a text: give the reply as a string, got "
                f"{type(self.input).__name__} {self.input!r:.60}"
            )
        return self.input


def bad_reply(judge: str, what: str, raw: str) -> JudgeOutputError:
    """A reply that parsed but holds no usable judgement, saying what was expected."""
    return JudgeOutputError(
        f"judge {judge}: {what}. Reply: {quote(raw, 200)}. A stronger judge model, or "
        "params = {'max_tokens': ...} if the reply was cut short, usually fixes it",
        raw=raw,
    )


def passages(value: Any) -> str:
    """Context passages as the prompt shows them: one per paragraph."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "\n\n".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return "\n\n".join(f"{key}: {item}" for key, item in value.items())
    return str(value)


def labelled_set(judge: type[Agent]) -> Path:
    """The path of a ready-made judge's hand-labelled set, for ``calibrate``.

    Args:
        judge: a judge class of ``pytest_harness.judges`` or a subclass of one.

    Raises:
        ConfigError: the class ships no labelled set.
    """
    name = judge.labels if isinstance(judge, type) and issubclass(judge, Judge) else None
    if name is None:
        raise ConfigError(
            f"{judge!r:.80} ships no labelled set: labelled_set takes a judge class of "
            "pytest_harness.judges (Rubric, AnswerRelevance, Faithfulness, "
            "FactualAgreement, ToolCallMatch, Pairwise) or a subclass of one"
        )
    return LABELS / name
