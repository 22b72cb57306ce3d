"""Judges on the embedded model: what their grammar holds them to, and what a cut-off says.

A judge that knows its reply's shape better than its output schema says (one verdict per
statement, one decision per argument asked about, MT-Bench's ``[[A]]``, the fact spec's
letter on its last lines) notes it for the embedded model's route, which makes a grammar
of it (``tests/test_local_tool_calls.py`` checks the route's side); no other model sees
the notes. A reply cut off at a token limit too small for the schema says how many tokens
the schema needs.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest

from pytest_harness import Agent
from pytest_harness._local import grammar, route
from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import JudgeOutputError
from pytest_harness.judges import FactualAgreement, Faithfulness, Pairwise, ToolCallMatch
from pytest_harness.judges._tool_call import check_arguments

VOTE = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass", "reason"],
}


class Polite(Agent):
    model = "local"
    output = VOTE
    params: ClassVar[dict[str, Any]] = {"max_tokens": 5}


def test_a_cut_off_reply_says_how_many_tokens_the_schema_needs() -> None:
    cut = ModelResponse(content='{"pass": tr', finish_reason="length")
    with pytest.raises(JudgeOutputError) as caught:
        Polite(input="Thanks!").parse(cut)
    needed = grammar.bound(VOTE).tokens
    assert needed is not None
    assert f"(it is 5 now; the longest reply its output schema allows takes {needed} tokens" in str(
        caught.value
    )
    elsewhere = Polite(input="Thanks!", model="openai/gpt-4o-mini")
    with pytest.raises(JudgeOutputError) as caught:
        elsewhere.parse(cut)
    assert "takes" not in str(caught.value)
    assert elsewhere._needed_tokens() is None


def _grammar_rules(judge: Agent) -> str:
    free = judge._grammar_notes()[route.GRAMMAR_NOTE]
    assert isinstance(free, route.FreeText)
    return free.grammar


def test_free_text_judges_give_the_form_their_reply_is_read_in() -> None:
    pair = Pairwise(input={"candidates": ["a", "b"]}, context={"question": "q"}, model="local")
    assert re.search(r'" \[\[" \[ABC\] "\]\]"$', _grammar_rules(pair))
    assert pair.read_score("A is more useful. [[A]]", "")[2]["winner"] == "A"
    fact = FactualAgreement(input="x", context={"question": "q", "reference": "r"})
    rules = _grammar_rules(fact)
    assert all(f'"{c}\\n{c}"' in rules for c in "ABCDE")
    assert fact.read_score("Same capital.\nC\nC", "")[2]["choice"] == "C"


def test_a_statement_judge_is_held_to_one_verdict_per_statement() -> None:
    judge = Faithfulness(input="x", context={"question": "q", "retrieved_context": "c"})
    assert judge._grammar_notes() == {}  # before the statements are known
    judge.statements = ["We open at 10.", "On Sundays."]
    schema: Any = judge._grammar_notes()[route.SCHEMA_NOTE]
    verdicts = schema["properties"]["verdicts"]
    assert [v["properties"]["statement"] for v in verdicts["prefixItems"]] == [
        {"const": "We open at 10."},
        {"const": "On Sundays."},
    ]
    assert verdicts["items"] is False
    assert grammar.bound(schema).tokens is not None


def test_a_tool_call_judge_is_held_to_one_decision_per_argument_asked() -> None:
    expected = {"name": "get_weather", "arguments": {"city": ["New York City"], "day": ["Monday"]}}
    judge = ToolCallMatch(input={"name": "get_weather"}, context={"expected": expected})
    judge.checks = check_arguments({"city": "NYC", "day": "Mon"}, expected["arguments"])
    schema: Any = judge._grammar_notes()[route.SCHEMA_NOTE]
    decisions = schema["properties"]["arguments"]["prefixItems"]
    assert [d["properties"]["argument"] for d in decisions] == [
        {"const": "city"},
        {"const": "day"},
    ]
