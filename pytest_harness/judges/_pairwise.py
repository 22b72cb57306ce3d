"""Pairwise: which of two answers to a question is better (MT-Bench's pairwise judge)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_harness._local.route import GRAMMAR_NOTE, FreeText
from pytest_harness.errors import ConfigError
from pytest_harness.judges._judge import Judge, bad_reply

_PAIR = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by "
    "two AI assistants to the user question displayed below. "
)
_FAIR = (
    "Avoid any positional biases and ensure that the order in which the responses were "
    "presented does not influence your decision. Do not allow the length of the responses "
    "to influence your evaluation. Do not favor certain names of the assistants. Be as "
    "objective as possible. After providing your explanation, output your final verdict by "
    'strictly following this format: "[[A]]" if assistant A is better, "[[B]]" if '
    'assistant B is better, and "[[C]]" for a tie.'
)
GENERAL = (
    _PAIR + "You should choose the assistant that follows the user's instructions and answers "
    "the user's question better. Your evaluation should consider factors such as the "
    "helpfulness, relevance, accuracy, depth, creativity, and level of detail of their "
    "responses. Begin your evaluation by comparing the two responses and provide a short "
    "explanation. " + _FAIR
)
WITH_REFERENCE = (
    _PAIR + "Your evaluation should consider correctness and helpfulness. You will be given a "
    "reference answer, assistant A's answer, and assistant B's answer. Your job is to "
    "evaluate which assistant's answer is better. Begin your evaluation by comparing both "
    "assistants' answers with the reference answer. Identify and correct any mistakes. " + _FAIR
)
_VERDICT = re.compile(r"\[\[([ABC])\]\]")
# The reply's form on the embedded model, whose grammar holds it to it: a line of
# explanation (no bracket, which would start a second verdict), then the verdict.
_EXPLANATION = 160
_FORM = FreeText(
    grammar=f'root ::= [^\\n\\x5b\\x5d]{{0,{_EXPLANATION}}} " [[" [ABC] "]]"',
    tokens=4 * _EXPLANATION + 7,
)


class Pairwise(Judge):
    """MT-Bench's pairwise judge: is the first of two answers better than the second?

    The input is ``{"candidates": [first, second]}`` (first = assistant A); ``context``
    gives the ``question`` and, optionally, a ``reference`` answer (then the prompt is
    MT-Bench's ``pair-math-v1``, else ``pair-v2``). The verdict's score is ``scores``'
    (A 1, tie 0.5, B 0); with ``threshold`` 1 the judgement passes when the first answer
    is better. ``processed`` adds ``winner``: ``"A"``, ``"B"`` or ``"tie"``.

    Calibrate it with the ``position`` probe: a fair judge's vote inverts when the two
    candidates are swapped. A tie does not invert, so the probe counts it as a flip: label
    pairs where one answer is clearly better.

    Attributes:
        scores: The score of each verdict: ``"A"`` (the first is better) 1, ``"C"`` (a tie)
            0.5, ``"B"`` 0.
        threshold: The lowest passing score (default 1: the first answer must win).
    """

    scores: ClassVar[Mapping[str, float]] = {"A": 1.0, "C": 0.5, "B": 0.0}
    threshold = 1.0
    labels = "pairwise.jsonl"

    @property
    def candidates(self) -> tuple[str, str]:
        """The two answers, first (A) and second (B)."""
        pair = self.input.get("candidates") if isinstance(self.input, Mapping) else None
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise ConfigError(
                f"judge {self.name} compares two answers: give the input as "
                f'{{"candidates": [first, second]}}, got {self.input!r:.80}'
            )
        return str(pair[0]), str(pair[1])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As an Agent; the system prompt is MT-Bench's, with or without a reference."""
        super().__init__(*args, **kwargs)
        if not self.instructions:  # neither the class nor the caller wrote its own
            chosen = WITH_REFERENCE if self.context.get("reference") else GENERAL
            setattr(self, "instructions", chosen)  # noqa: B010 (a ClassVar, set per instance)

    def prompt(self) -> str:
        """MT-Bench's prompt template: the question, the reference if any, the two answers."""
        first, second = self.candidates
        question = self.fact("question", "the question both answers reply to")
        parts = [f"[User Question]\n{question}"]
        reference = self.context.get("reference")
        if reference:
            parts.append(
                f"[The Start of Reference Answer]\n{reference}\n[The End of Reference Answer]"
            )
        parts.append(
            f"[The Start of Assistant A's Answer]\n{first}\n[The End of Assistant A's Answer]"
        )
        parts.append(
            f"[The Start of Assistant B's Answer]\n{second}\n[The End of Assistant B's Answer]"
        )
        return "\n\n".join(parts)

    def _grammar_notes(self) -> dict[str, Any]:
        return {GRAMMAR_NOTE: _FORM}

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The verdict ``[[A]]``, ``[[B]]`` or ``[[C]]``; the explanation before it."""
        text = str(reply)
        found = set(_VERDICT.findall(text))
        if len(found) != 1:
            what = "no verdict" if not found else f"verdicts {', '.join(sorted(found))} at once"
            raise bad_reply(
                self.name,
                f"the reply has {what}; MT-Bench's judge ends with exactly one of [[A]], "
                "[[B]] or [[C]]",
                raw,
            )
        (letter,) = found
        explanation = text[: _VERDICT.search(text).start()].strip()  # type: ignore[union-attr]
        winner = {"A": "A", "B": "B", "C": "tie"}[letter]
        return float(self.scores[letter]), explanation or f"[[{letter}]]", {"winner": winner}
