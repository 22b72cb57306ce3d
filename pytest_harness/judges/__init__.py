"""Ready-made judges: the published LLM-as-a-judge metrics as Agents to subclass.

Each is a ``Judge`` (an ``Agent``) configured by class attributes, whose reply is read into
a score and a reason and passes when the score reaches its ``threshold``. Put one or more
in a ``Tribunal``'s ``agents`` and assert the verdict as with any judge:

- ``Rubric``: G-Eval (Liu et al. 2023), a 1-5 score on your criteria by your steps;
- ``AnswerRelevance``: DeepEval's answer relevancy, the share of relevant statements;
- ``Faithfulness``: RAGAS (Es et al. 2023), the share of statements the context supports;
- ``FactualAgreement``: OpenAI evals' ``fact`` spec against a reference answer;
- ``ToolCallMatch``: a tool call against the expected one, BFCL's AST check;
- ``Pairwise``: MT-Bench's pairwise judge (Zheng et al. 2023), A better than B?

Each ships a small hand-labelled set, ``labelled_set(Judge)``, to calibrate it on your
model with ``harness.calibrate``.
"""

from __future__ import annotations

from pytest_harness.judges._factual import FactualAgreement
from pytest_harness.judges._judge import Judge, labelled_set
from pytest_harness.judges._pairwise import Pairwise
from pytest_harness.judges._rubric import Rubric
from pytest_harness.judges._statements import AnswerRelevance, Faithfulness
from pytest_harness.judges._tool_call import ToolCallMatch

__all__ = [
    "AnswerRelevance",
    "FactualAgreement",
    "Faithfulness",
    "Judge",
    "Pairwise",
    "Rubric",
    "ToolCallMatch",
    "labelled_set",
]
