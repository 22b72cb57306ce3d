"""The ready-made judges over real HTTP to a scripted model on loopback.

Each judge's request is read back from the server (``server.requests``): its prompt must
carry what its published definition needs. Its reply is scripted, read into a score and a
reason, and the threshold decides. Each labelled set loads, and ``calibrate`` runs over it
against a model scripted to agree with the labels (or, for the position probe, not to).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from pytest_harness import Tribunal
from pytest_harness._model.response import ToolCall
from pytest_harness.calibration import Position, calibrate
from pytest_harness.calibration._labels import load
from pytest_harness.errors import ConfigError, JudgeOutputError
from pytest_harness.judges import (
    AnswerRelevance,
    FactualAgreement,
    Faithfulness,
    Judge,
    Pairwise,
    Rubric,
    ToolCallMatch,
    labelled_set,
)
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal import assert_verdict, get_verdict

pytestmark = pytest.mark.harness(cassette=False)

J = TypeVar("J", bound=Judge)


def on(server: LoopbackServer, judge: type[J], **attributes: Any) -> type[J]:
    """The judge, pointed at the loopback server (a subclass under the same name)."""
    body = {"model": server.model, "params": server.params, **attributes}
    return type(judge.__name__, (judge,), body)


def alone(judge: type[Judge]) -> type[Tribunal]:
    return type(f"{judge.__name__}Panel", (Tribunal,), {"agents": [judge]})


def user(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def system(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    return str(first["content"]) if first["role"] == "system" else ""


class Coherence(Rubric):
    criteria = (
        "the collective quality of all sentences. The answer should be well-structured "
        "and well-organized, building from sentence to sentence to a coherent body of "
        "information about the question."
    )
    steps = (
        "Read the question and the answer carefully.",
        "Check whether the answer presents its information in a clear and logical order.",
        "Assign a score for coherence on a scale of 1 to 5.",
    )


def ask(judge: type[Judge], input: Any, **context: Any) -> dict[str, Any]:
    processed: dict[str, Any] = judge(input=input, context=context).call().processed
    return processed


# Rubric (G-Eval) -------------------------------------------------------------------------


def test_rubric_prompt_is_g_evals_and_the_threshold_decides(server: LoopbackServer) -> None:
    rubric = on(server, Coherence)
    server.queue(Reply(content=json.dumps({"reason": "clear order", "score": 3})))
    judged = ask(rubric, "First unplug it. Then plug it back in.", question="Reset a router?")
    assert judged == {"score": 3.0, "reason": "clear order", "passed": True, "threshold": 3.0}
    prompt = user(server.requests[0])
    assert prompt.startswith("You will be given one response.\n\nYour task is to rate")
    assert "Evaluation Criteria:\n\nCoherence (1-5) - the collective quality" in prompt
    assert (
        "Evaluation Steps:\n\n1. Read the question and the answer carefully.\n2. Check "
        "whether the answer presents" in prompt
    )
    assert "Question:\n\nReset a router?" in prompt
    assert "Response:\n\nFirst unplug it. Then plug it back in." in prompt
    assert prompt.index("Question:") < prompt.index("Response:") < prompt.index("Evaluation Form")
    assert server.requests[0]["temperature"] == 0

    server.queue(Reply(content=json.dumps({"reason": "jumbled", "score": 2})))
    assert ask(rubric, "Plug. Unplug it then.")["passed"] is False


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (json.dumps({"reason": "great", "score": 6}), r"does not fit the output schema at score"),
        (json.dumps({"reason": "great"}), r"'score' is a required property"),
        ("Coherence: 4", r"no JSON object in it"),
    ],
)
def test_rubric_replies_that_are_not_a_form_are_judge_output_errors(
    server: LoopbackServer, content: str, match: str
) -> None:
    server.queue(Reply(content=content))
    with pytest.raises(JudgeOutputError, match=match) as caught:
        ask(on(server, Coherence), "An answer.")
    assert caught.value.raw == content


def test_a_rubric_must_have_criteria_steps_and_a_threshold_from_1_to_5() -> None:
    with pytest.raises(ConfigError, match=r"judge Empty has no criteria: a G-Eval rubric"):
        type("Empty", (Rubric,), {"model": "m"})(input="x").prompt()
    with pytest.raises(ConfigError, match=r"judge NoSteps has no steps"):
        type("NoSteps", (Rubric,), {"criteria": "clear"})(input="x").prompt()
    with pytest.raises(ConfigError, match=r"steps is one string; give a list of steps"):
        type("OneString", (Rubric,), {"steps": "Read it."})
    with pytest.raises(ConfigError, match=r"threshold = 7 is outside the scores 1 to 5"):
        type("TooHigh", (Coherence,), {"threshold": 7})
    with pytest.raises(ConfigError, match=r"threshold = '3' is not a number"):
        type("Text", (Coherence,), {"threshold": "3"})


def test_a_judge_in_a_tribunal_votes_with_its_score_and_threshold(
    server: LoopbackServer,
) -> None:
    server.queue(Reply(content=json.dumps({"reason": "jumbled", "score": 2})))
    panel = alone(on(server, Coherence))
    with pytest.raises(AssertionError) as caught:
        assert_verdict(panel, "Plug. Unplug it then.")
    assert "Coherence  openai/loopback  FAIL (score 2, needs 3)  jumbled" in str(caught.value)

    server.queue(Reply(content=json.dumps({"reason": "clear", "score": 5})))
    (vote,) = get_verdict(panel, "Unplug it, then plug it back in.").votes
    assert (vote.vote, vote.passed, vote.score, vote.threshold) == (True, True, 5.0, 3.0)
    assert vote.reason == "clear"


# Faithfulness and answer relevance: statements, then verdicts ----------------------------


def statements_then(verdicts: list[dict[str, Any]], *statements: str) -> list[Reply]:
    return [
        Reply(content=json.dumps({"statements": list(statements)})),
        Reply(content=json.dumps({"verdicts": verdicts})),
    ]


def verdict(statement: str, value: Any, reason: str = "because") -> dict[str, Any]:
    return {"statement": statement, "reason": reason, "verdict": value}


def test_faithfulness_extracts_statements_then_checks_each_against_the_context(
    server: LoopbackServer,
) -> None:
    server.queue(
        *statements_then(
            [verdict("The store opens at 10:00.", 1), verdict("Coffee is free.", 0, "not said")],
            "The store opens at 10:00.",
            "Coffee is free.",
        )
    )
    judged = ask(
        on(server, Faithfulness),
        "It opens at 10:00 and the coffee is free.",
        question="When does it open on Sundays?",
        retrieved_context=["Sunday 10:00-16:00.", "Closed on holidays."],
    )
    assert (judged["score"], judged["passed"], judged["threshold"]) == (0.5, False, 1.0)
    assert judged["reason"] == (
        "1 of 2 statements are not supported by the context: 'Coffee is free.': not said"
    )
    assert [s["verdict"] for s in judged["statements"]] == [1, 0]
    first, second = server.requests
    assert "Break down each sentence into one or more fully understandable statements" in (
        system(first)
    )
    assert user(first) == (
        "Question: When does it open on Sundays?\n\n"
        "Answer: It opens at 10:00 and the coffee is free."
    )
    assert "judge the faithfulness of a series of statements based on a given context" in (
        system(second)
    )
    assert user(second) == (
        "Context:\nSunday 10:00-16:00.\n\nClosed on holidays.\n\n"
        "Statements:\n1. The store opens at 10:00.\n2. Coffee is free."
    )


def test_faithfulness_sums_both_calls_and_passes_when_every_statement_holds(
    server: LoopbackServer,
) -> None:
    server.queue(*statements_then([verdict("Open at 10.", 1)], "Open at 10."))
    panel = alone(on(server, Faithfulness))
    verdict_ = get_verdict(
        panel, "Open at 10.", context={"question": "When?", "retrieved_context": "10-16."}
    )
    assert verdict_.passed
    (vote,) = verdict_.votes
    assert vote.reason == "all 1 statements are supported by the context"
    # the tokens of both calls: the scripted server counts words of prompts and replies
    assert vote.tokens == sum(
        len(str(m["content"]).split()) for body in server.requests for m in body["messages"]
    ) + len(json.dumps({"statements": ["Open at 10."]}).split()) + len(
        json.dumps({"verdicts": [verdict("Open at 10.", 1)]}).split()
    )


def test_an_answer_without_statements_is_faithful_without_a_second_call(
    server: LoopbackServer,
) -> None:
    server.queue(Reply(content=json.dumps({"statements": []})))
    judged = ask(on(server, Faithfulness), "Hm.", question="When?", retrieved_context="10-16.")
    assert (judged["score"], judged["passed"]) == (1.0, True)
    assert len(server.requests) == 1


def test_a_verdict_missing_for_a_statement_is_a_judge_output_error(
    server: LoopbackServer,
) -> None:
    server.queue(*statements_then([verdict("A.", 1)], "A.", "B."))
    with pytest.raises(JudgeOutputError, match=r"2 statements were given, but the reply has 1"):
        ask(on(server, Faithfulness), "A. B.", question="Q?", retrieved_context="A.")


def test_a_missing_fact_names_the_context_key_to_pass(server: LoopbackServer) -> None:
    with pytest.raises(ConfigError, match=r"pass context=\{'retrieved_context': \.\.\.\}"):
        ask(on(server, Faithfulness), "A.", question="Q?")
    with pytest.raises(ConfigError, match=r"needs the question the answer replies to"):
        ask(on(server, AnswerRelevance), "A.")
    assert server.requests == []  # checked before the first call


def test_answer_relevance_counts_yes_and_idk_against_the_question(
    server: LoopbackServer,
) -> None:
    server.queue(
        *statements_then(
            [verdict("Canberra is the capital.", "yes"), verdict("It has lakes.", "idk"),
             verdict("Koalas sleep a lot.", "no", "about koalas")],
            "Canberra is the capital.",
            "It has lakes.",
            "Koalas sleep a lot.",
        )
    )  # fmt: skip
    judged = ask(on(server, AnswerRelevance), "...", question="What is the capital?")
    assert judged["score"] == pytest.approx(2 / 3)
    assert (judged["passed"], judged["threshold"]) == (True, 0.5)
    assert "'Koalas sleep a lot.': about koalas" in judged["reason"]
    verdicts = server.requests[1]
    assert "The verdict must be strictly 'yes', 'no' or 'idk'" in system(verdicts)
    assert user(verdicts).startswith("Input:\nWhat is the capital?\n\nStatements:\n1. Canberra")

    server.queue(*statements_then([verdict("Koalas sleep.", "maybe")], "Koalas sleep."))
    with pytest.raises(JudgeOutputError, match=r"verdicts/0/verdict"):
        ask(on(server, AnswerRelevance), "...", question="What is the capital?")


# Factual agreement (OpenAI evals' fact spec) ---------------------------------------------


def test_factual_agreement_asks_the_fact_spec_and_reads_the_last_letter(
    server: LoopbackServer,
) -> None:
    server.queue(Reply(content="The submission says 90, the expert 100.\nD\nD"))
    judged = ask(
        on(server, FactualAgreement),
        "Water boils at 90 °C.",
        question="Boiling point of water?",
        reference="100 degrees Celsius.",
    )
    assert (judged["score"], judged["passed"], judged["choice"]) == (0.0, False, "D")
    assert judged["reason"] == (
        "(D) the answer and the reference disagree: The submission says 90, the expert 100."
    )
    prompt = user(server.requests[0])
    assert "[Question]: Boiling point of water?" in prompt
    assert "[Expert]: 100 degrees Celsius." in prompt
    assert "[Submission]: Water boils at 90 °C." in prompt
    assert "(B) The submitted answer is a superset of the expert answer" in prompt
    assert "(E) The answers differ, but these differences don't matter" in prompt
    assert 'single choice from "A" or "B" or "C" or "D" or "E"' in prompt
    assert prompt.endswith("Reasoning:")
    assert system(server.requests[0]) == ""  # the spec is one user message


def test_factual_agreement_scores_by_choice_scores(server: LoopbackServer) -> None:
    server.queue(Reply(content="It leaves Saturn out.\n(A)"), Reply(content="A"))
    facts = {"question": "Gas giants?", "reference": "Jupiter and Saturn."}
    assert ask(on(server, FactualAgreement), "Jupiter.", **facts)["passed"] is True
    strict = on(server, FactualAgreement, choice_scores={"A": 0, "B": 1, "C": 1, "D": 0, "E": 1})
    judged = ask(strict, "Jupiter.", **facts)
    assert (judged["score"], judged["passed"], judged["reason"]) == (
        0.0,
        False,
        "(A) the answer is a subset of the reference and fully consistent with it",
    )


@pytest.mark.parametrize("content", ["I cannot tell.", "AB", "The answer is (F)."])
def test_factual_agreement_without_a_choice_is_a_judge_output_error(
    server: LoopbackServer, content: str
) -> None:
    server.queue(Reply(content=content))
    with pytest.raises(JudgeOutputError, match=r"no line of the reply is one of the choices"):
        ask(on(server, FactualAgreement), "x", question="q", reference="r")


# Tool-call correctness (BFCL's AST check) ------------------------------------------------

WEATHER = {"name": "get_weather", "arguments": {"city": ["New York City"], "unit": ["c", ""]}}


@pytest.mark.parametrize(
    ("call", "score", "reason"),
    [
        ({"name": "get_weather", "arguments": {"city": "new york city"}}, 1.0, "the call matches"),
        ({"name": "get_time", "arguments": {"city": "NYC"}}, 0.0, "called 'get_time'"),
        ({"name": "get_weather", "arguments": {}}, 0.5, "city: a required argument is missing"),
        (
            {"name": "get_weather", "arguments": '{"city": 7, "unit": "c"}'},
            0.5,
            "city: int 7 given, str expected",
        ),
        (
            {"name": "get_weather", "arguments": {"city": "New York City", "days": 3}},
            2 / 3,
            "days: the expected call takes no such argument",
        ),
    ],
)
def test_the_ast_check_decides_without_the_model(
    server: LoopbackServer, call: dict[str, Any], score: float, reason: str
) -> None:
    judged = ask(on(server, ToolCallMatch), call, expected=WEATHER)
    assert judged["score"] == pytest.approx(score)
    assert judged["passed"] is (score == 1.0)
    assert judged["reason"].startswith(reason)
    assert server.requests == []


def test_a_string_the_ast_check_cannot_match_goes_to_the_model(server: LoopbackServer) -> None:
    decided = {"arguments": [{"argument": "city", "reason": "same city", "equivalent": True}]}
    server.queue(Reply(content=json.dumps(decided)))
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "NYC"}, raw_arguments="")
    judged = ask(on(server, ToolCallMatch), call, expected=WEATHER, question="Weather in NYC?")
    assert (judged["score"], judged["passed"]) == (1.0, True)
    assert judged["arguments"] == [
        {"argument": "city", "right": True, "why": "same city"},
        {"argument": "unit", "right": True, "why": "optional, left out"},
    ]
    assert "Berkeley Function Calling Leaderboard's AST evaluation" in system(server.requests[0])
    assert user(server.requests[0]) == (
        "Function: get_weather\nThe call answers: Weather in NYC?\nArguments to decide:\n"
        '- city: the call gave "NYC"; accepted: "New York City"'
    )

    refused = {"arguments": [{"argument": "city", "reason": "another city", "equivalent": False}]}
    server.queue(Reply(content=json.dumps(refused)))
    newark = {"name": "get_weather", "arguments": {"city": "Newark", "unit": "c"}}
    judged = ask(on(server, ToolCallMatch), newark, expected=WEATHER)
    assert (judged["score"], judged["passed"]) == (0.5, False)
    assert judged["reason"] == "city: another city"

    server.queue(Reply(content=json.dumps({"arguments": []})))
    with pytest.raises(JudgeOutputError, match=r"the reply decides nothing for city"):
        ask(on(server, ToolCallMatch), newark, expected=WEATHER)


def test_a_tool_call_judge_names_what_it_needs() -> None:
    with pytest.raises(ConfigError, match=r"give a ToolCall or \{\"name\""):
        ToolCallMatch(input="get_weather(NYC)", context={"expected": WEATHER}).call_made()
    with pytest.raises(ConfigError, match=r"the expected call is 'get_weather'; write it as"):
        ToolCallMatch(input={}, context={"expected": "get_weather"}).expected()


# Pairwise (MT-Bench) ---------------------------------------------------------------------

PAIR = {"candidates": ["Buenos días.", "Buenas noches."]}


@pytest.mark.parametrize(
    ("content", "score", "winner"),
    [
        ("A is correct, B says good night. [[A]]", 1.0, "A"),
        ("B is better.\n\n[[B]]", 0.0, "B"),
        ("Both fine. [[C]]", 0.5, "tie"),
    ],
)
def test_pairwise_asks_mt_benchs_prompt_and_reads_its_verdict(
    server: LoopbackServer, content: str, score: float, winner: str
) -> None:
    server.queue(Reply(content=content))
    judged = ask(on(server, Pairwise), PAIR, question="Say good morning in Spanish.")
    assert (judged["score"], judged["winner"], judged["passed"]) == (score, winner, score == 1)
    assert judged["reason"] == content[: content.index("[[")].strip()
    body = server.requests[0]
    assert system(body).startswith("Please act as an impartial judge and evaluate the quality")
    assert "You should choose the assistant that follows the user's instructions" in system(body)
    assert '"[[A]]" if assistant A is better' in system(body)
    assert user(body) == (
        "[User Question]\nSay good morning in Spanish.\n\n"
        "[The Start of Assistant A's Answer]\nBuenos días.\n[The End of Assistant A's Answer]\n\n"
        "[The Start of Assistant B's Answer]\nBuenas noches.\n[The End of Assistant B's Answer]"
    )


def test_pairwise_with_a_reference_uses_mt_benchs_reference_prompt(
    server: LoopbackServer,
) -> None:
    server.queue(Reply(content="[[A]]"))
    ask(on(server, Pairwise), PAIR, question="Good morning?", reference="Buenos días.")
    body = server.requests[0]
    assert "You will be given a reference answer, assistant A's answer" in system(body)
    assert "[The Start of Reference Answer]\nBuenos días.\n[The End of Reference Answer]" in (
        user(body)
    )


@pytest.mark.parametrize(
    ("content", "match"),
    [("A is better.", r"the reply has no verdict"), ("[[A]] or [[B]]", r"verdicts A, B at once")],
)
def test_pairwise_without_one_verdict_is_a_judge_output_error(
    server: LoopbackServer, content: str, match: str
) -> None:
    server.queue(Reply(content=content))
    with pytest.raises(JudgeOutputError, match=match):
        ask(on(server, Pairwise), PAIR, question="q")


def test_pairwise_needs_two_candidates() -> None:
    with pytest.raises(ConfigError, match=r'give the input as \{"candidates": \[first, second\]\}'):
        Pairwise(input=["a", "b"], context={"question": "q"}).prompt()


# Labelled sets and calibration -----------------------------------------------------------

ALL = [Coherence, AnswerRelevance, Faithfulness, FactualAgreement, ToolCallMatch, Pairwise]


@pytest.mark.parametrize("judge", ALL, ids=lambda judge: judge.__name__)
def test_each_labelled_set_loads_with_both_labels(judge: type[Judge]) -> None:
    path = labelled_set(judge)
    assert path.parent.name == "labels"
    items = load(path)
    assert 8 <= len(items) <= 12
    assert {item.label for item in items} == {True, False}


def test_labelled_set_refuses_a_class_without_one() -> None:
    with pytest.raises(ConfigError, match=r"ships no labelled set: labelled_set takes a judge"):
        labelled_set(Judge)


def oracle(judge: type[Judge]) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers each request of ``judge`` as its item's label says."""
    items = load(labelled_set(judge))

    def label_of(text: str) -> bool:
        found = [item for item in items if _shown(item.input) in text]
        assert found, f"no labelled item in {text!r:.200}"
        return max(found, key=lambda item: len(_shown(item.input))).label

    def reply(body: dict[str, Any]) -> Reply:
        text = user(body)
        if text.startswith("Question: "):  # the statements step: the answer, whole
            answer = text.split("\n\nAnswer: ", 1)[1]
            return Reply(content=json.dumps({"statements": [answer]}))
        if text.startswith(("Context:", "Input:")):
            statement = text.rsplit("\n1. ", 1)[1]
            good = label_of(statement)
            value = (1 if good else 0) if text.startswith("Context:") else ("yes" if good else "no")
            return Reply(content=json.dumps({"verdicts": [verdict(statement, value)]}))
        if text.startswith("Function: "):
            asked = [line[2:] for line in text.split("\n") if line.startswith("- ")]
            decided = [
                {
                    "argument": line.split(":")[0],
                    "reason": "scripted",
                    "equivalent": not any(w in line for w in ("Newark", "June", "euros")),
                }
                for line in asked
            ]
            return Reply(content=json.dumps({"arguments": decided}))
        if text.startswith("[User Question]"):
            first = text.split("Assistant A's Answer]\n", 1)[1].split("\n[The End", 1)[0]
            second = text.split("Assistant B's Answer]\n", 1)[1].split("\n[The End", 1)[0]
            return Reply(content="[[A]]" if _better(items, first, second) else "[[B]]")
        if "[Submission]" in text:
            return Reply(content="Compared.\n" + ("C" if label_of(text) else "D"))
        score = 4 if label_of(text) else 2
        return Reply(content=json.dumps({"reason": "scripted", "score": score}))

    return reply


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _better(items: list[Any], first: str, second: str) -> bool:
    """Whether ``first`` is the better answer: the one a passing item lists first."""
    for item in items:
        if item.input["candidates"] == [first, second]:
            return bool(item.label)
        if item.input["candidates"] == [second, first]:
            return not item.label
    raise AssertionError(f"no labelled pair of {first!r} and {second!r}")


@pytest.mark.parametrize("judge", ALL, ids=lambda judge: judge.__name__)
def test_calibrate_measures_each_judge_on_its_labelled_set(
    server: LoopbackServer, judge: type[Judge]
) -> None:
    server.handler = oracle(judge)
    panel = alone(on(server, judge))
    calibration = calibrate(panel, labelled_set(judge))
    assert (calibration.items, calibration.panel.scored) == (10, 10)
    assert (calibration.panel.accuracy, calibration.panel.kappa) == (1.0, 1.0)


def test_the_position_probe_flags_a_pairwise_judge_that_prefers_the_first(
    server: LoopbackServer,
) -> None:
    server.handler = oracle(Pairwise)
    fair = calibrate(alone(on(server, Pairwise)), labelled_set(Pairwise), probes=[Position()])
    (probe,) = fair.probes
    assert (probe.probe, probe.applicable, probe.flips, probe.flagged) == ("position", 10, 0, False)

    server.handler = lambda body: Reply(content="The first one reads better. [[A]]")
    biased = calibrate(alone(on(server, Pairwise)), labelled_set(Pairwise), probes=["position"])
    (probe,) = biased.probes
    assert (probe.flips, probe.applicable, probe.flagged) == (10, 10, True)
    assert biased.flagged == ("Pairwise",)
    assert biased.panel.accuracy == 0.5


def test_a_malformed_statements_reply_is_a_judge_output_error(server: LoopbackServer) -> None:
    server.queue(Reply(content=json.dumps({"claims": ["A."]})))
    with pytest.raises(JudgeOutputError, match=r"'statements' is a required property"):
        ask(on(server, Faithfulness), "A.", question="Q?", retrieved_context="A.")
    assert len(server.requests) == 1


def test_a_verdict_cut_off_at_the_token_limit_says_so(server: LoopbackServer) -> None:
    server.queue(Reply(content="Assistant A explains the steps, while", finish_reason="length"))
    capped = on(server, Pairwise, params={**server.params, "max_tokens": 12})
    with pytest.raises(JudgeOutputError, match=r"cut off at the token limit") as caught:
        ask(capped, PAIR, question="q")
    assert 'raise "max_tokens" in the agent\'s params (it is 12 now)' in str(caught.value)
