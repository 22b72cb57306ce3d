"""Rubric: a G-Eval judge, scoring a text from 1 to 5 on criteria by evaluation steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pytest_harness.errors import ConfigError
from pytest_harness.judges._judge import Judge, passages

SCORE = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["reason", "score"],
}


class Rubric(Judge):
    """A G-Eval judge: a score from 1 to 5 on ``criteria``, following ``steps``.

    Attributes:
        criteria: what the metric measures, as G-Eval writes it after
            ``<metric> (1-5) -``; the metric's name is the class's.
        steps: the evaluation steps, in order (G-Eval's chain of thought).
        threshold: the lowest passing score (default 3).
        subject: what is judged, as the task names it (default ``"response"``).

    The input is the text to judge (a string). Every entry of ``context`` is shown before
    it as a source text under its key (``{"question": ...}``, ``{"article": ...}``).
    ``processed`` is ``{"score", "reason", "passed", "threshold"}``.

    Example:

        class Coherence(Rubric):
            model = "gpt-4o-mini"
            criteria = "the collective quality of all sentences ..."
            steps = ["Read the text ...", "Assign a score for coherence ..."]
            threshold = 3
    """

    criteria: ClassVar[str] = ""
    steps: ClassVar[Sequence[str]] = ()
    subject: ClassVar[str] = "response"
    threshold = 3
    output = SCORE
    labels = "rubric_coherence.jsonl"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check the steps and threshold the class sets (``ConfigError``)."""
        super().__init_subclass__(**kwargs)
        steps = cls.__dict__.get("steps", ())
        if isinstance(steps, str):
            raise ConfigError(
                f"judge {cls.__name__}: steps is one string; give a list of steps, "
                'e.g. steps = ["Read the response.", "Compare it with the criteria."]'
            )
        if not 1 <= cls.threshold <= 5:
            raise ConfigError(
                f"judge {cls.__name__}: threshold = {cls.threshold!r} is outside the scores "
                "1 to 5 of a G-Eval rubric; set threshold = 1 to 5"
            )

    def prompt(self) -> str:
        """G-Eval's prompt: task, criteria, steps, the source texts, the text, the form."""
        criteria, steps = self.criteria.strip(), [s.strip() for s in self.steps if s.strip()]
        if not criteria or not steps:
            missing = "criteria" if not criteria else "steps"
            raise ConfigError(
                f"judge {self.name} has no {missing}: a G-Eval rubric needs both, e.g. "
                'criteria = "the answer is easy to follow" and steps = ["Read the answer.", '
                '"Score how easy it is to follow, from 1 to 5."]'
            )
        numbered = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
        task = (
            f"You will be given one {self.subject}.\n\n"
            f"Your task is to rate the {self.subject} on one metric.\n\n"
            "Please make sure you read and understand these instructions carefully.\n\n"
            f"Evaluation Criteria:\n\n{self.name} (1-5) - {criteria}\n\n"
            f"Evaluation Steps:\n\n{numbered}"
        )
        sources = [f"{_title(key)}:\n\n{passages(value)}" for key, value in self.context.items()]
        judged = f"{_title(self.subject)}:\n\n{self.judged_text()}"
        form = (
            "Evaluation Form: reply with a JSON object, the reason for your rating in "
            f'"reason" and the {self.name} score (an integer from 1 to 5) in "score".'
        )
        return "\n\n".join([task, *sources, judged, form])

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The form's score and reason (the schema holds the score to 1-5)."""
        return float(reply["score"]), str(reply["reason"]), {}


def _title(key: str) -> str:
    """A context key as a heading: ``source_text`` -> ``Source text``."""
    return key.replace("_", " ").capitalize()
