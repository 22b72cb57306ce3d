"""Judge calibration: a tribunal scored against people's labels, with bias probes.

``calibrate(Tribunal, "labels.jsonl")`` scores each judge and the panel against the labels
(accuracy, Cohen's kappa), measures how the judges agree (Krippendorff's alpha) and re-asks
with bias probes that must not move a fair verdict; ``assert_calibrated`` fails the test
below ``min_accuracy`` / ``min_kappa`` or when a probe flags a judge.
"""

from __future__ import annotations

from pytest_harness.calibration._calibrate import (
    aassert_calibrated,
    acalibrate,
    assert_calibrated,
    calibrate,
)
from pytest_harness.calibration._labels import Labelled
from pytest_harness.calibration._probes import Examples, Padding, Perturbation, Position, Probe
from pytest_harness.calibration._result import Agreement, Calibration, ProbeResult, Score

__all__ = [
    "Agreement",
    "Calibration",
    "Examples",
    "Labelled",
    "Padding",
    "Perturbation",
    "Position",
    "Probe",
    "ProbeResult",
    "Score",
    "aassert_calibrated",
    "acalibrate",
    "assert_calibrated",
    "calibrate",
]
