"""FactualAgreement: an answer's facts compared with a reference answer's (OpenAI evals)."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_harness._local.route import GRAMMAR_NOTE, FreeText
from pytest_harness.judges._judge import Judge, bad_reply

CHOICES = ("A", "B", "C", "D", "E")
# The reply's form on the embedded model, whose grammar holds it to it: a line of
# reasoning, then the letter on a line of its own, twice (as the prompt asks).
_REASONING = 160
_FORM = FreeText(
    grammar=f"root ::= [^\\n]{{1,{_REASONING}}} "
    + '"\\n" ('
    + " | ".join(f'"{c}\\n{c}"' for c in CHOICES)
    + ")",
    tokens=4 * _REASONING + 5,
)
CASES = {
    "A": "the answer is a subset of the reference and fully consistent with it",
    "B": "the answer is a superset of the reference and fully consistent with it",
    "C": "the answer contains all the same details as the reference",
    "D": "the answer and the reference disagree",
    "E": "the answers differ, but not in a way that matters for factuality",
}


class FactualAgreement(Judge):
    """The facts of an answer against a reference answer (OpenAI evals' ``fact`` spec).

    The input is the answer (a string); ``context`` gives the ``question`` and the
    ``reference`` answer. The model reasons, then picks one of the cases A-E;
    ``choice_scores`` turns it into the score. ``processed`` adds ``choice`` (the letter)
    and ``case`` (what it means).

    Attributes:
        choice_scores: the score of each case (default: promptfoo's, D 0 and the rest 1;
            ``{"A": 0, ...}`` makes an incomplete answer fail).
        threshold: the lowest passing score (default 1).
    """

    choice_scores: ClassVar[Mapping[str, float]] = {"A": 1, "B": 1, "C": 1, "D": 0, "E": 1}
    threshold = 1.0
    labels = "factual_agreement.jsonl"

    def prompt(self) -> str:
        """The fact spec with the question, reference and answer, then cot_classify's ask."""
        question = self.fact("question", "the question both answers reply to")
        reference = self.fact("reference", "the reference (expert) answer")
        rule = "*" * 12
        choices = " or ".join(f'"{c}"' for c in CHOICES)
        return (
            "You are comparing a submitted answer to an expert answer on a given question. "
            f"Here is the data:\n[BEGIN DATA]\n{rule}\n[Question]: {question}\n{rule}\n"
            f"[Expert]: {reference}\n{rule}\n[Submission]: {self.judged_text()}\n{rule}\n"
            "[END DATA]\n\n"
            "Compare the factual content of the submitted answer with the expert answer. "
            "Ignore any differences in style, grammar, or punctuation.\n"
            "The submitted answer may either be a subset or superset of the expert answer, "
            "or it may conflict with it. Determine which case applies. Answer the question "
            "by selecting one of the following options:\n"
            "(A) The submitted answer is a subset of the expert answer and is fully "
            "consistent with it.\n"
            "(B) The submitted answer is a superset of the expert answer and is fully "
            "consistent with it.\n"
            "(C) The submitted answer contains all the same details as the expert answer.\n"
            "(D) There is a disagreement between the submitted answer and the expert answer.\n"
            "(E) The answers differ, but these differences don't matter from the perspective "
            "of factuality.\n\n"
            "First, write out in a step by step manner your reasoning to be sure that your "
            "conclusion is correct. Avoid simply stating the correct answer at the outset. "
            f"Then print only a single choice from {choices} (without quotes or punctuation) "
            "on its own line corresponding to the correct answer. At the end, repeat just "
            "the answer by itself on a new line.\n\nReasoning:"
        )

    def _grammar_notes(self) -> dict[str, Any]:
        return {GRAMMAR_NOTE: _FORM}

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The last line that is a letter A-E (evals' ``get_choice``), and its score."""
        lines = [line.strip() for line in str(reply).strip().split("\n")]
        for at in range(len(lines) - 1, -1, -1):
            bare = _bare(lines[at])
            if bare and bare in CHOICES:
                before = lines[:at]
                while before and _bare(before[-1]) in ("", bare):  # the letter, said twice
                    before.pop()
                reasoning = "\n".join(before).strip()
                reason = f"({bare}) {CASES[bare]}" + (f": {reasoning}" if reasoning else "")
                score = float(self.choice_scores[bare])
                return score, reason, {"choice": bare, "case": CASES[bare]}
        raise bad_reply(
            self.name,
            "no line of the reply is one of the choices A, B, C, D or E (the fact spec asks "
            "for the letter alone on the last line)",
            raw,
        )


def _bare(line: str) -> str:
    """A line without punctuation, as evals compares it with the choices."""
    return "".join(c for c in line if c not in string.punctuation).strip()
