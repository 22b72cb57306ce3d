"""Judges that split an answer into statements, then give each statement a verdict
(``Faithfulness``, ``AnswerRelevance``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pytest_harness._agent import Agent, AgentResult, totals
from pytest_harness._local.route import SCHEMA_NOTE
from pytest_harness._model.response import TokenCallback
from pytest_harness.judges._judge import Judge, bad_reply, passages

STATEMENTS = {
    "type": "object",
    "properties": {"statements": {"type": "array", "items": {"type": "string"}}},
    "required": ["statements"],
}


def verdicts_schema(values: Sequence[Any]) -> dict[str, Any]:
    """The verdicts' reply: one ``{statement, reason, verdict}`` per statement, in order."""
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "statement": {"type": "string"},
                        "reason": {"type": "string"},
                        "verdict": {"enum": list(values)},
                    },
                    "required": ["statement", "reason", "verdict"],
                },
            }
        },
        "required": ["verdicts"],
    }


class Statements(Agent):
    """The first step: the answer broken into statements (RAGAS's statement generator)."""

    output = STATEMENTS
    temperature = 0
    instructions = (
        "Given a question and an answer, analyze the complexity of each sentence in the "
        "answer. Break down each sentence into one or more fully understandable statements. "
        "Ensure that no pronouns are used in any statement. Reply with a JSON object whose "
        '"statements" is the list of statements.'
    )

    def prompt(self) -> str:
        return f"Question: {self.context['question']}\n\nAnswer: {self.input}"


class StatementJudge(Judge):
    """A judge whose score is the share of the answer's statements its verdicts accept.

    Subclasses set ``instructions`` and ``output`` (the verdicts' prompt and schema),
    ``accepted`` (the verdicts that count for the answer) and ``verdict_prompt``.
    """

    accepted: ClassVar[frozenset[Any]] = frozenset()
    statements_agent: ClassVar[type[Agent]] = Statements

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements: list[str] = []

    async def acall(self, *, on_token: TokenCallback | None = None) -> AgentResult:
        """Both steps: the statements (``STATEMENTS``), then their verdicts (``instructions``).

        An answer with no statement makes no claim to check: it scores 1, and the second call
        is not made.
        """
        started = time.perf_counter()
        self.required_facts()  # before any call: a missing fact is the test's mistake
        split = self.statements_agent(
            input=self.judged_text(),
            context={"question": self.fact("question", "the question the answer replies to")},
            params=self.params,
            model=self.model,
            structured=self.structured,
            name=self.name,
        )
        first = await split.acall()
        self.statements = [s.strip() for s in first.processed["statements"] if s.strip()]
        if not self.statements:
            why = "the answer makes no statement, so there is nothing to check"
            return dataclasses.replace(first, processed=self.judgement(1.0, why, statements=[]))
        second = await super().acall(on_token=on_token)
        usage, cost = totals([first, second])
        took = round(time.perf_counter() - started, 6)
        return dataclasses.replace(second, usage=usage, cost=cost, execution_time=took)

    def _grammar_notes(self) -> dict[str, Any]:
        """On the embedded model, one verdict per statement, in order, each naming its
        statement: its grammar holds it to that."""
        schema = self._output().schema or {}
        entry = _at(schema, "properties", "verdicts", "items")
        if not isinstance(_at(entry, "properties"), Mapping) or not self.statements:
            return {}  # an output of a subclass's own: its schema as it is
        verdicts = [
            {**entry, "properties": {**entry["properties"], "statement": {"const": statement}}}
            for statement in self.statements
        ]
        exact = {"type": "array", "prefixItems": verdicts, "items": False}
        return {SCHEMA_NOTE: {**schema, "properties": {**schema["properties"], "verdicts": exact}}}

    def required_facts(self) -> None:
        """Raise ``ConfigError`` for a fact the verdicts' prompt needs and did not get."""
        self.fact("question", "the question the answer replies to")

    def numbered(self) -> str:
        """The statements as the verdicts' prompt lists them."""
        return "\n".join(f"{n}. {s}" for n, s in enumerate(self.statements, 1))

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The share of accepted verdicts; the reason names the statements not accepted."""
        verdicts = reply["verdicts"]
        if len(verdicts) != len(self.statements):
            raise bad_reply(
                self.name,
                f"{len(self.statements)} statements were given, but the reply has "
                f"{len(verdicts)} verdicts (one per statement, in order, was asked)",
                raw,
            )
        kept = [v for v in verdicts if v["verdict"] in self.accepted]
        score = len(kept) / len(verdicts)
        return score, self.reason(verdicts), {"statements": verdicts}

    def reason(self, verdicts: Sequence[Any]) -> str:
        """The statements not accepted with why, or that all were."""
        refused = [v for v in verdicts if v["verdict"] not in self.accepted]
        if not refused:
            return f"all {len(verdicts)} statements {self.accepted_words}"
        shown = "; ".join(f"{v['statement']!r}: {v['reason']}" for v in refused)
        return f"{len(refused)} of {len(verdicts)} statements {self.refused_words}: {shown}"

    accepted_words: ClassVar[str] = "accepted"
    refused_words: ClassVar[str] = "refused"


class Faithfulness(StatementJudge):
    """RAGAS faithfulness: the share of the answer's statements the context supports.

    The input is the answer (a string); ``context`` gives the ``question`` and the
    ``retrieved_context`` the answer was written from (a string, or a list of passages).
    ``processed`` adds ``statements``: ``{"statement", "reason", "verdict"}`` each, verdict
    1 or 0.

    Sources: Es et al. 2023 (RAGAS), section 3 "Faithfulness", and the statement and NLI
    prompts of the ragas library (``ragas/metrics/_faithfulness.py``).

    Attributes:
        threshold: The lowest passing share of supported statements (default 1.0: every
            statement must be supported).
    """

    threshold = 1.0
    labels = "faithfulness.jsonl"
    accepted = frozenset({1})
    output = verdicts_schema([0, 1])
    accepted_words = "are supported by the context"
    refused_words = "are not supported by the context"
    instructions = (
        "Your task is to judge the faithfulness of a series of statements based on a given "
        "context. For each statement you must return verdict as 1 if the statement can be "
        "directly inferred based on the context or 0 if the statement can not be directly "
        'inferred based on the context. Reply with a JSON object whose "verdicts" lists, '
        "for each statement in order, the statement, the reason and the verdict."
    )

    def required_facts(self) -> None:
        super().required_facts()
        self.fact("retrieved_context", "the context the answer was given")

    def prompt(self) -> str:
        context = self.fact("retrieved_context", "the context the answer was given")
        return f"Context:\n{passages(context)}\n\nStatements:\n{self.numbered()}"


class AnswerRelevance(StatementJudge):
    """DeepEval's answer relevancy: the share of the answer's statements relevant to the question.

    The input is the answer (a string); ``context`` gives the ``question``. A statement is
    relevant (``yes``), irrelevant (``no``) or ambiguous but supporting (``idk``, counted as
    relevant, as DeepEval counts it). ``processed`` adds ``statements``:
    ``{"statement", "reason", "verdict"}`` each.

    Sources: DeepEval's ``AnswerRelevancyMetric`` (its statements and verdicts templates);
    Es et al. 2023 (RAGAS) section 3 for why the answer is split into statements first.

    Attributes:
        threshold: The lowest passing share of relevant statements (default 0.5, DeepEval's).
    """

    threshold = 0.5
    labels = "answer_relevance.jsonl"
    accepted = frozenset({"yes", "idk"})
    output = verdicts_schema(["yes", "no", "idk"])
    accepted_words = "address the question"
    refused_words = "do not address the question"
    instructions = (
        "For the provided list of statements, determine whether each statement is relevant "
        "to address the input. The verdict must be strictly 'yes', 'no' or 'idk'. Answer "
        "'yes' if the statement is relevant to addressing the original input, 'no' if the "
        "statement is irrelevant, and 'idk' if it is ambiguous (e.g., not directly relevant "
        "but could be used as a supporting point to address the input). Reply with a JSON "
        'object whose "verdicts" lists, for each statement in order, the statement, the '
        "reason for the verdict and the verdict."
    )

    def prompt(self) -> str:
        question = self.fact("question", "the question the answer replies to")
        return f"Input:\n{question}\n\nStatements:\n{self.numbered()}"


def _at(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]...``, or None where a step is missing or not a mapping."""
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
