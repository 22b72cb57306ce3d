"""Verdict strategies, the Verdict value and judge agreement, as plain functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness._agent import AgentResult
from pytest_harness._statistics import percent_agreement
from pytest_harness.errors import ConfigError
from pytest_harness.tribunal._panel import (
    VALID_STRATEGIES,
    JudgeFailure,
    Strategy,
    Verdict,
    Vote,
    at_least,
    default_vote,
    fraction,
    majority,
    mean,
    passes,
    reason_of,
    strategy,
    unanimous,
)

pytestmark = pytest.mark.harness(cassette=False)

# No example database: property tests must not write files into the repository.
quick = settings(database=None, deadline=None)
T, F = True, False


# Strategy resolution ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "args", "expected"),
    [
        ("unanimous", (), Strategy("unanimous")),
        ("majority", (), Strategy("majority")),
        ("at_least", (2,), Strategy("at_least", 2)),
        ("fraction", (0.5,), Strategy("fraction", 0.5)),
        ("fraction", (1,), Strategy("fraction", 1.0)),
        ("mean", (3,), Strategy("mean", 3.0)),
        ("mean", (-0.5,), Strategy("mean", -0.5)),
    ],
)
def test_strategy_by_name(spec: str, args: tuple[Any, ...], expected: Strategy) -> None:
    """A strategy name with its argument resolves to the matching Strategy value."""
    assert strategy(spec, *args) == expected


def test_builders_match_names() -> None:
    """The builder functions build the same values as the names."""
    assert unanimous() == strategy("unanimous")
    assert majority() == strategy("majority")
    assert at_least(3) == strategy("at_least", 3)
    assert fraction(0.25) == strategy("fraction", 0.25)
    assert mean(0.7) == strategy("mean", 0.7)
    assert VALID_STRATEGIES == ("unanimous", "majority", "at_least", "fraction", "mean")


def test_a_built_strategy_passes_through() -> None:
    """A Strategy given as such is returned as is; extra arguments are refused."""
    built = at_least(2)
    assert strategy(built) is built
    with pytest.raises(ConfigError, match=r"strategy at_least is already built; drop the extra"):
        strategy(built, 3)


@pytest.mark.parametrize("spec", ["plurality", "Majority", "", 3, None])
def test_unknown_strategy_lists_the_valid_ones(spec: Any) -> None:
    """An unknown name is a ConfigError (a ValueError) naming every valid strategy."""
    with pytest.raises(ValueError, match="unknown verdict strategy") as caught:
        strategy(spec)
    assert isinstance(caught.value, ConfigError)
    assert "Valid strategies: unanimous, majority, at_least, fraction, mean" in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "args", "fragment"),
    [
        ("at_least", (), "verdict strategy 'at_least' takes (k), got arguments ()"),
        ("fraction", (), "verdict strategy 'fraction' takes (min), got arguments ()"),
        ("mean", (1, 2), "verdict strategy 'mean' takes (min), got arguments (1, 2)"),
        ("majority", (1,), "verdict strategy 'majority' takes (), got arguments (1,)"),
        ("unanimous", (True,), "verdict strategy 'unanimous' takes (), got arguments (True,)"),
    ],
)
def test_wrong_number_of_arguments(spec: str, args: tuple[Any, ...], fragment: str) -> None:
    """A strategy given too few or too many arguments says what it takes."""
    with pytest.raises(ConfigError) as caught:
        strategy(spec, *args)
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: at_least(0), "at_least(k) expects a whole number k >= 1, got k=0"),
        (lambda: at_least(-2), "got k=-2"),
        (lambda: at_least(1.5), "got k=1.5"),
        (lambda: at_least(True), "got k=True"),
        (lambda: strategy("at_least", "2"), "got k='2'"),
        (lambda: fraction(1.5), "fraction(min) expects 0 < min <= 1, got min=1.5"),
        (lambda: fraction(0), "fraction(min) expects 0 < min <= 1, got min=0"),
        (lambda: fraction(-0.1), "got min=-0.1"),
        (lambda: fraction("x"), "fraction(min) expects a number, got min='x'"),
        (lambda: fraction(True), "fraction(min) expects a number, got min=True"),
        (lambda: mean("x"), "mean(min) expects a number, got min='x'"),
        (lambda: mean(None), "mean(min) expects a number, got min=None"),
        (lambda: mean(False), "mean(min) expects a number, got min=False"),
    ],
)
def test_bad_strategy_arguments_are_config_errors(build: Any, fragment: str) -> None:
    """Out-of-range or mistyped strategy arguments are ConfigErrors quoting the argument."""
    with pytest.raises(ConfigError) as caught:
        build()
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("built", "text"),
    [
        (unanimous(), "unanimous: every vote must pass"),
        (majority(), "majority: more than half of the votes must pass"),
        (at_least(2), "at_least(2): at least 2 votes must pass"),
        (fraction(0.75), "fraction(0.75): at least 0.75 of the votes must pass"),
        (mean(0.5), "mean(0.5): the mean score must be at least 0.5"),
    ],
)
def test_describe(built: Strategy, text: str) -> None:
    """Each rule describes itself in words for failure messages."""
    assert built.describe() == text


# decide() ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("built", "votes", "expected"),
    [
        (unanimous(), [T, T, T], True),
        (unanimous(), [T, T, F], False),
        (unanimous(), [T], True),
        (unanimous(), [], False),
        (majority(), [T, F], False),  # 1 of 2 is not more than half
        (majority(), [T, T, F], True),  # 2 of 3 is
        (majority(), [T, F, F], False),
        (majority(), [T, T, F, F], False),
        (majority(), [T, T, T, F], True),
        (majority(), [T], True),
        (majority(), [], False),
        (at_least(2), [T, F, T], True),
        (at_least(2), [T, F, F], False),
        (at_least(1), [], False),
        (at_least(3), [T, T], False),
        (fraction(0.5), [T, F], True),
        (fraction(0.5), [T, F, F], False),
        (fraction(2 / 3), [T, T, F], True),
        (fraction(1), [T, T, F], False),
        (fraction(0.1), [], False),
        (mean(0.75), [1.0, 0.5, 0.75], True),
        (mean(0.8), [1.0, 0.5, 0.75], False),
        (mean(3), [2, 4], True),
        (mean(0.5), [True, False], True),  # True counts 1, False 0
        (mean(0.6), [True, False], False),
        (mean(0), [], False),
    ],
)
def test_decide(built: Strategy, votes: list[Any], expected: bool) -> None:
    """Each strategy turns votes into the documented pass/fail; no votes never pass."""
    assert built.decide(votes) is expected


@pytest.mark.parametrize(
    ("vote", "expected"),
    [
        ("yes", True),
        ("true", True),
        (" TRUE ", True),
        ("Pass", True),
        ("passed", True),
        ("ok", True),
        ("1", True),
        ("false", False),
        ("no", False),
        ("0", False),
        ("", False),
        ("maybe", False),
        ("yes, mostly", False),
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        (None, False),
        ([], False),
        ({"a": 1}, True),
    ],
)
def test_passes(vote: Any, expected: bool) -> None:
    """A text vote passes only as a yes-like word; anything else by its truthiness."""
    assert passes(vote) is expected


def test_string_votes_in_strategies() -> None:
    """Strategies read "yes"/"false" votes as words, not as non-empty strings."""
    assert unanimous().decide(["yes", "true", "pass"]) is True
    assert unanimous().decide(["yes", "false"]) is False
    assert majority().decide(["no", "false", "yes"]) is False
    assert majority().decide(["Yes", "OK", "false"]) is True
    assert at_least(2).decide(["yes", "nope", "1"]) is True


def test_mean_needs_numbers() -> None:
    """mean() refuses a non-numeric vote with a ConfigError telling what to return."""
    with pytest.raises(ConfigError, match=r"needs numeric votes \(scores\), got 'high'"):
        mean(0.5).decide([0.9, "high"])
    assert mean(0.7).vote_passes(0.7) is True
    assert mean(0.7).vote_passes(0.69) is False
    assert mean(0.7).vote_passes(True) is True


# default_vote, reason_of, the Verdict value ---------------------------------------------


def result_with(processed: Any) -> AgentResult:
    return AgentResult(input="x", output=None, processed=processed, agent="Judge")


@pytest.mark.parametrize(
    ("processed", "vote"),
    [
        ({"verdict": "yes", "pass": False}, "yes"),
        ({"pass": False, "score": 9}, False),
        ({"passed": True, "result": False}, True),
        ({"result": 0}, 0),
        ({"score": 0.25, "reason": "meh"}, 0.25),
    ],
)
def test_default_vote_reads_the_first_vote_field(processed: dict[str, Any], vote: Any) -> None:
    """Without an evaluator the vote is the first of verdict/pass/passed/result/score."""
    assert default_vote(result_with(processed)) == vote


@pytest.mark.parametrize("processed", [{"ok": True}, "free text", None])
def test_default_vote_without_a_vote_field(processed: Any) -> None:
    """A result without a vote field is a ConfigError naming the judge and the fields."""
    with pytest.raises(ConfigError) as caught:
        default_vote(result_with(processed))
    message = str(caught.value)
    assert "cannot tell the vote of judge Judge" in message
    assert "verdict, pass, passed, result, score" in message
    assert "@rule('majority')" in message


def test_reason_of() -> None:
    """The reason is the first string among reason/reasoning/explanation/rationale/why."""
    assert reason_of(result_with({"reason": "kind", "why": "other"})) == "kind"
    assert reason_of(result_with({"reason": 3, "rationale": "polite"})) == "polite"
    assert reason_of(result_with({"pass": True})) is None
    assert reason_of(result_with("text")) is None


def vote(agent: str, passed: bool | None, reason: str | None = None) -> Vote:
    return Vote(
        agent=agent,
        model="m",
        vote=passed,
        passed=passed,
        reason=reason,
        time=0.1,
        tokens=3,
        cost=None,
    )


def test_verdict_value() -> None:
    """A Verdict is truthy when it passes; tally counts passing votes over votes cast."""
    votes = (vote("A", True, "fine"), vote("B", False, "rude"), vote("C", True))
    failure = JudgeFailure(agent="D", error=TimeoutError("slow"))
    passed = Verdict(tribunal="T", value=True, passed=True, rule="r", votes=votes)
    failed = Verdict(tribunal="T", value=False, passed=False, rule="r", errors=(failure,))
    assert passed
    assert bool(passed) is True
    assert not failed
    assert bool(failed) is False
    assert passed.tally == "2/3"
    assert failed.tally == "0/0"
    assert passed.reasons == {"A": "fine", "B": "rude", "C": None}
    assert failure.describe() == "TimeoutError: slow"
    assert repr(passed) == "<Verdict T passed: 2/3 votes; r>"
    assert repr(failed) == "<Verdict T failed: 0/0 votes, 1 judge error(s); r>"


# Agreement ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([], None),
        ([T], None),
        ([T, T], 1.0),
        ([F, F], 1.0),
        ([T, F], 0.0),
        ([T, T, F], 1 / 3),  # pairs: TT agree, TF, TF disagree
        ([T, T, F, F], 1 / 3),  # 2 of 6 pairs agree
        ([T, T, T, F], 0.5),  # 3 of 6 pairs agree
        ([T, T, T, T, F], 0.6),  # 6 of 10 pairs agree
    ],
)
def test_percent_agreement(votes: list[bool], expected: float | None) -> None:
    """Percent agreement is the share of judge pairs that voted alike."""
    if expected is None:
        assert percent_agreement(votes) is None
    else:
        assert percent_agreement(votes) == pytest.approx(expected)


# Properties -----------------------------------------------------------------------------

bool_lists = st.lists(st.booleans(), min_size=2, max_size=30)


@quick
@given(bool_lists)
def test_percent_agreement_bounds(votes: list[bool]) -> None:
    """Percent agreement lies in [0, 1] and is 1 exactly when all votes are equal."""
    agreement = percent_agreement(votes)
    assert agreement is not None
    assert 0.0 <= agreement <= 1.0
    assert (agreement == 1.0) == (len(set(votes)) == 1)


@quick
@given(bool_lists, st.randoms(use_true_random=False))
def test_percent_agreement_symmetries(votes: list[bool], random: Any) -> None:
    """Order does not matter, and neither does which side is called pass."""
    shuffled = list(votes)
    random.shuffle(shuffled)
    flipped = [not vote for vote in votes]
    assert percent_agreement(shuffled) == pytest.approx(percent_agreement(votes))
    assert percent_agreement(flipped) == pytest.approx(percent_agreement(votes))


@quick
@given(st.lists(st.booleans(), max_size=20), st.integers(1, 5))
def test_strategies_count_passing_votes(votes: list[bool], k: int) -> None:
    """majority, unanimous and at_least agree with counting the passing votes."""
    passing = sum(votes)
    assert majority().decide(votes) is (2 * passing > len(votes))
    assert unanimous().decide(votes) is (bool(votes) and passing == len(votes))
    assert at_least(k).decide(votes) is (passing >= k)
