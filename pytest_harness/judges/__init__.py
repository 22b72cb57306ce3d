"""Ready-made judges: published LLM-as-a-judge metrics as Agents to put in a Tribunal.

Each is a ``Judge`` whose reply is read into a score and a reason, passing when the score
reaches its ``threshold``: ``Rubric`` (G-Eval), ``AnswerRelevance`` (DeepEval),
``Faithfulness`` (RAGAS), ``FactualAgreement`` (OpenAI evals' ``fact``), ``ToolCallMatch``
(BFCL) and ``Pairwise`` (MT-Bench). ``labelled_set(Judge)`` is each one's hand-labelled set,
to calibrate it on your model.
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
