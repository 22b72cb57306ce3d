"""Accuracy, Cohen's kappa and the confusion matrix, checked against figures worked by hand."""

from __future__ import annotations

import pytest

from pytest_harness._statistics import Confusion, accuracy, cohen_kappa, confusion, scored

T, F = True, False


def test_confusion_counts_label_against_prediction() -> None:
    labels = [T, T, T, F, F, T, F]
    predicted = [T, F, T, T, F, T, F]
    matrix = confusion(labels, predicted)
    assert matrix == Confusion(tp=3, fn=1, fp=1, tn=2)
    assert matrix.total == 7
    assert matrix.as_dict() == {"pass": {"pass": 3, "fail": 1}, "fail": {"pass": 1, "fail": 2}}


def test_kappa_against_a_hand_computed_value() -> None:
    # 10 items, 6 labelled pass and 4 fail; the judge is wrong on one of each:
    # TP=5, FN=1, FP=1, TN=3.
    # observed agreement  po = (5 + 3) / 10 = 0.8
    # label pass share    6/10; predicted pass share (5 + 1)/10 = 6/10
    # chance agreement    pe = 0.6 * 0.6 + 0.4 * 0.4 = 0.36 + 0.16 = 0.52
    # kappa = (po - pe) / (1 - pe) = 0.28 / 0.48 = 7/12 = 0.58333...
    matrix = Confusion(tp=5, fn=1, fp=1, tn=3)
    assert accuracy(matrix) == pytest.approx(0.8)
    assert cohen_kappa(matrix) == pytest.approx(7 / 12)


def test_kappa_of_a_lopsided_judge() -> None:
    # 20 items, 15 pass and 5 fail; the judge passes 18: TP=14, FN=1, FP=4, TN=1.
    # po = 15/20 = 0.75; label pass 0.75, predicted pass 0.9
    # pe = 0.75 * 0.9 + 0.25 * 0.1 = 0.675 + 0.025 = 0.7
    # kappa = (0.75 - 0.7) / 0.3 = 1/6: 75% accuracy is barely better than chance here.
    matrix = Confusion(tp=14, fn=1, fp=4, tn=1)
    assert accuracy(matrix) == pytest.approx(0.75)
    assert cohen_kappa(matrix) == pytest.approx(1 / 6)


def test_perfect_chance_and_inverse_judges() -> None:
    assert cohen_kappa(Confusion(tp=6, tn=4)) == pytest.approx(1.0)
    # Always "pass": po = 0.6, pe = 0.6 * 1 + 0.4 * 0 = 0.6, kappa 0.
    assert cohen_kappa(Confusion(tp=6, fp=4)) == pytest.approx(0.0)
    # Always wrong on a balanced set: po = 0, pe = 0.5, kappa = -1.
    assert cohen_kappa(Confusion(fn=5, fp=5)) == pytest.approx(-1.0)


def test_undefined_kappa_and_accuracy() -> None:
    # Every label and every prediction "pass": pe = 1, kappa undefined (not 0, not 1).
    assert cohen_kappa(Confusion(tp=10)) is None
    assert cohen_kappa(Confusion(tn=3)) is None
    assert accuracy(Confusion(tp=10)) == 1.0
    assert accuracy(Confusion()) is None
    assert cohen_kappa(Confusion()) is None
    # All labels pass but predictions mixed: defined (and not better than chance).
    assert cohen_kappa(Confusion(tp=8, fn=2)) == pytest.approx(0.0)


def test_scored_drops_items_without_a_prediction() -> None:
    assert scored([T, F, T, F], [T, None, F, None]) == ([T, T], [T, F])
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        confusion([T, T, F], [T, T])
