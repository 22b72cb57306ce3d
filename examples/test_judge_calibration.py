"""Example: measuring the support-reply judges against labels, and a sampled feature test.

``labels/replies.jsonl`` holds twelve support replies, six polite and six rude, each with
the verdict a person gave. ``harness.calibrate`` runs the ``ReplyQuality`` panel over every
one and scores the panel and each judge against those labels (accuracy, Cohen's kappa, the
confusion matrix, the judges' agreement), and the ``padding`` probe asks each judge again
with neutral filler appended, flagging a judge whose votes move with the text's length.

Recorded from the embedded model (``pytest examples --harness-live``, no key); replayed
offline by the README's main job. Run with ``-v`` to see the calibration table.

What the recordings show is the honest point of calibrating: Gemma 3 270M judges near
chance, so the assertion that the judges are good enough is a strict xfail. Re-record with
a real judge model (``--harness-live --harness-model=openai/gpt-4o-mini``) and it passes, and
the strict xfail tells you to drop the marker.
"""

from __future__ import annotations

import pytest

from pytest_harness import Harness

from .support_quality import ReplyQuality, SupportBot

LABELS = "labels/replies.jsonl"


def test_the_judges_are_scored_against_the_labels(harness: Harness) -> None:
    calibration = harness.calibrate(ReplyQuality, LABELS, probes=["padding"])
    assert calibration.items == 12
    assert [score.judge for score in calibration.judges] == [
        "Politeness",
        "Helpfulness",
        "OnTopic",
    ]
    panel = calibration.panel
    assert panel.scored + len(panel.no_verdict) == 12
    assert panel.confusion.total == panel.scored  # TP + FN + FP + TN: every scored item
    assert [(p.judge, p.probe) for p in calibration.probes] == [
        ("Politeness", "padding"),
        ("Helpfulness", "padding"),
        ("OnTopic", "padding"),
    ]
    assert harness.calibrations == [calibration]


@pytest.mark.xfail(
    strict=True,
    reason="a 270M base model judges near chance: its kappa against the labels is far "
    "below 0.5; re-record with a real judge model",
)
def test_the_judges_agree_with_people(harness: Harness) -> None:
    harness.assert_calibrated(ReplyQuality, LABELS, min_accuracy=0.8, min_kappa=0.5)


@pytest.mark.harness(samples=5, pass_rate=0.6)
def test_the_bot_answers_briefly_most_of_the_time(harness: Harness) -> None:
    reply = harness.ask(SupportBot, "My parcel says delivered but it is not here.")
    assert reply.output
    assert len(reply.output) <= 400, f"a {len(reply.output)}-character reply"
