"""Krippendorff's alpha (nominal) and its observed agreement, against values worked by hand.

Notation of Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": a unit u with
m_u >= 2 values adds (ordered pairs of values c, k in u) / (m_u - 1) to the coincidence o_ck;
n_c is the row total of c, n the number of pairable values, and for nominal data
alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness._statistics import krippendorff_alpha, observed_agreement

pytestmark = pytest.mark.harness(cassette=False)

# No example database: property tests must not write files into the repository.
quick = settings(database=None, deadline=None)
T, F = True, False


def test_the_issues_runs_with_a_missing_vote() -> None:
    """Issue 28's runs [[T, T, T], [T, F]]: one judge of the second run errored."""
    # Run 1 (m = 3, all T): o_TT += 3 * 2 / 2 = 3, no pair of different values.
    # Run 2 (m = 2, T and F): o_TF += 1 / 1 = 1, o_FT += 1.
    # Matrix [[o_TT, o_TF], [o_FT, o_FF]] = [[3, 1], [1, 0]]: n_T = 4, n_F = 1, n = 5.
    # alpha = 1 - (5 - 1) * (1 + 1) / (4 * 1 + 1 * 4) = 1 - 8 / 8 = 0.
    # Observed agreement 1 - D_o = 1 - 2 / 5 = 0.6 (the pairs' 3 + 0 matching, of 5).
    # (The old figure, Fleiss' P-bar and pooled pass rate, was -0.5625 here.)
    runs = [[T, T, T], [T, F]]
    assert krippendorff_alpha(runs) == 0.0
    assert observed_agreement(runs) == pytest.approx(0.6)


def test_perfect_agreement_is_one() -> None:
    # Every run unanimous: no o_ck off the diagonal, so alpha = 1 - 0 = 1, whatever
    # n_T = 6, n_F = 3 give for the expected disagreement (2 * 6 * 3 = 36, not 0).
    runs = [[T, T], [F, F, F], [T, T, T, T]]
    assert krippendorff_alpha(runs) == 1.0
    assert observed_agreement(runs) == 1.0


def test_runs_of_different_sizes() -> None:
    # [T, T]: 0. [T, F, F] (m = 3): o_TF = o_FT = 1 * 2 / 2 = 1. [F, F, F, F]: 0.
    # n_T = 2 + 1 = 3, n_F = 2 + 4 = 6, n = 9.
    # alpha = 1 - 8 * 2 / (2 * 3 * 6) = 1 - 16 / 36 = 5/9.
    # Observed: 1 - 2 / 9 = 7/9.
    runs = [[T, T], [T, F, F], [F, F, F, F]]
    assert krippendorff_alpha(runs) == pytest.approx(5 / 9)
    assert observed_agreement(runs) == pytest.approx(7 / 9)
    # A unit with one value (or none) is not pairable: it changes nothing.
    assert krippendorff_alpha([[F], *runs, [], [T]]) == pytest.approx(5 / 9)
    assert observed_agreement([[F], *runs, [], [T]]) == pytest.approx(7 / 9)


def test_judges_that_always_split_are_worse_than_chance() -> None:
    # Three runs [T, F]: o_TF = o_FT = 3, n_T = n_F = 3, n = 6.
    # alpha = 1 - 5 * 6 / (2 * 3 * 3) = 1 - 30 / 18 = -2/3. Observed: 1 - 6 / 6 = 0.
    runs = [[T, F], [F, T], [T, F]]
    assert krippendorff_alpha(runs) == pytest.approx(-2 / 3)
    assert observed_agreement(runs) == 0.0


def test_krippendorff_2011_binary_example() -> None:
    """Krippendorff (2011), section A: two coders, ten units, published alpha 0.095."""
    coder_a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    coder_b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    # Units 1, 3, 6 and 9 disagree: o_01 = o_10 = 4. n_1 = 2 + 4 = 6, n_0 = 14, n = 20.
    # alpha = 1 - 19 * 8 / (2 * 6 * 14) = 1 - 152 / 168 = 2/21 = 0.0952...
    runs = [[a == 1, b == 1] for a, b in zip(coder_a, coder_b, strict=True)]
    alpha = krippendorff_alpha(runs)
    assert alpha is not None
    assert alpha == pytest.approx(2 / 21)
    assert round(alpha, 3) == 0.095


def test_krippendorff_2011_nominal_example_with_missing_data() -> None:
    """Krippendorff (2011), section C: 4 coders, 12 units, values 1-5, published 0.743."""
    missing = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, missing, missing, missing],  # A
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, missing, 3],  # B
        [missing, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, missing],  # C
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, missing],  # D
    ]
    units = [[v for v in unit if v is not missing] for unit in zip(*coders, strict=True)]
    # Unit 12 has one value: not pairable. Off the diagonal only units 2, 6 and 8 add:
    #   unit 2 (2, 2, 3, 2; m = 4): o_23 = o_32 = 3 * 1 / 3 = 1          -> 2
    #   unit 6 (1, 2, 3, 4; m = 4): each of 12 ordered pairs 1 / 3       -> 4
    #   unit 8 (1, 1, 2, 1; m = 4): o_12 = o_21 = 1                      -> 2
    # sum_{c != k} o_ck = 8. Row totals n_1..n_5 = 9, 13, 10, 5, 3; n = 40 (the paper's
    # matrix: diagonal 7, 10, 8, 4, 3 = 32 = 40 - 8).
    # sum_{c != k} n_c n_k = 40^2 - (81 + 169 + 100 + 25 + 9) = 1600 - 384 = 1216.
    # alpha = 1 - 39 * 8 / 1216 = 1 - 39 / 152 = 113/152 = 0.7434...
    alpha = krippendorff_alpha(units)
    assert alpha is not None
    assert alpha == pytest.approx(113 / 152)
    assert round(alpha, 3) == 0.743
    assert observed_agreement(units) == pytest.approx(32 / 40)


@pytest.mark.parametrize(
    "runs",
    [
        [],
        [[]],
        [[T], [F]],  # no run with two or more votes
        [[T, T], [T, T, T]],  # every pairable vote in one category
        [[F, F], [F, F], [T]],  # the lone T is not pairable
    ],
)
def test_alpha_undefined(runs: list[list[bool]]) -> None:
    """None, not 0 or 1: nothing to pair, or no disagreement to expect."""
    assert krippendorff_alpha(runs) is None


def test_observed_agreement_undefined_only_without_pairs() -> None:
    assert observed_agreement([]) is None
    assert observed_agreement([[T], [], [F]]) is None
    assert observed_agreement([[T, T], [T, T, T]]) == 1.0


# Properties -----------------------------------------------------------------------------

votes = st.one_of(st.booleans(), st.integers(0, 3))
units = st.lists(st.lists(votes, max_size=8), max_size=12)


@quick
@given(units, st.randoms(use_true_random=False))
def test_alpha_ignores_the_order_of_units_and_of_votes(
    runs: list[list[Hashable]], random: Any
) -> None:
    """Alpha never raises, is None or at most 1, and depends on neither order."""
    alpha = krippendorff_alpha(runs)
    assert alpha is None or alpha <= 1.0
    shuffled = [random.sample(run, len(run)) for run in runs]
    random.shuffle(shuffled)
    assert krippendorff_alpha(shuffled) == alpha  # exact: the sums are fractions
    agreement = observed_agreement(runs)
    assert agreement is None or 0.0 <= agreement <= 1.0
    assert observed_agreement(shuffled) == agreement


@quick
@given(units)
def test_alpha_ignores_what_the_values_are_called(runs: list[list[Hashable]]) -> None:
    """Nominal data: renaming the categories one to one changes nothing."""
    renamed = [[("category", vote) for vote in run] for run in runs]
    assert krippendorff_alpha(renamed) == krippendorff_alpha(runs)


@quick
@given(
    st.lists(st.tuples(st.booleans(), st.integers(2, 8)), min_size=1, max_size=12).filter(
        lambda runs: len({value for value, _ in runs}) == 2
    )
)
def test_unanimous_runs_of_both_verdicts_give_one(runs: list[tuple[bool, int]]) -> None:
    assert krippendorff_alpha([[value] * size for value, size in runs]) == 1.0


def textbook_fleiss(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from a subjects x categories count table (fixed raters per subject)."""
    subjects = len(table)
    raters = sum(table[0])
    per_subject = [(sum(n * n for n in row) - raters) / (raters * (raters - 1)) for row in table]
    p_bar = sum(per_subject) / subjects
    shares = [sum(row[j] for row in table) / (subjects * raters) for j in range(len(table[0]))]
    p_e = sum(share * share for share in shares)
    return None if math.isclose(p_e, 1.0) else (p_bar - p_e) / (1 - p_e)


@quick
@given(
    st.integers(2, 7).flatmap(
        lambda n: st.lists(st.integers(0, n), min_size=1, max_size=15).map(lambda ys: (n, ys))
    )
)
def test_without_missing_votes_alpha_is_fleiss_with_a_small_sample_correction(
    case: tuple[int, list[int]],
) -> None:
    """With m votes in each of N runs (n = N * m values), alpha = 1 - (1 - kappa)(n - 1)/n.

    Both share observed agreement (P-bar = 1 - D_o); alpha's chance term draws pairs
    without replacement, so 1 - A_e = n / (n - 1) * (1 - P_e).
    """
    raters, yes_counts = case
    runs = [[T] * yes + [F] * (raters - yes) for yes in yes_counts]
    kappa = textbook_fleiss([[yes, raters - yes] for yes in yes_counts])
    alpha = krippendorff_alpha(runs)
    if kappa is None:
        assert alpha is None
    else:
        n = len(runs) * raters
        assert alpha == pytest.approx(1 - (1 - kappa) * (n - 1) / n, abs=1e-9)
