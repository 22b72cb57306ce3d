"""Calibration as an assertion: ``assert_calibrated``.

The calibration runs with the thresholds (so its report row shows them and its failures)
and is reported whatever its outcome; the assertion then fails when the panel's accuracy or
Cohen's kappa is below its threshold, or a bias probe flagged a judge. The message lists
each failure, then the calibration's tables.
"""

from __future__ import annotations

from typing import Any

from pytest_harness.calibration.result import Calibration
from pytest_harness.calibration.run import acalibrate, calibrate
from pytest_harness.tribunal.declare import Tribunal


def assert_calibrated(
    tribunal: type[Tribunal],
    labelled: Any,
    *,
    min_accuracy: float | None = None,
    min_kappa: float | None = None,
    **options: Any,
) -> Calibration:
    """Calibrate ``tribunal`` on ``labelled`` and fail on a shortfall.

    Args:
        min_accuracy: the panel's accuracy must reach this share (0 to 1).
        min_kappa: the panel's Cohen's kappa must reach this (-1 to 1); an undefined kappa
            fails it.
        options: ``calibrate``'s (``probes``, ``max_flip_rate``, ``base``, ``concurrency``).

    Returns:
        The Calibration, when nothing failed.

    Raises:
        AssertionError: a threshold was missed or a judge was flagged (the message says
            which, with the tables).
    """
    __tracebackhide__ = True
    calibration = calibrate(
        tribunal, labelled, min_accuracy=min_accuracy, min_kappa=min_kappa, **options
    )
    return check(calibration)


async def aassert_calibrated(
    tribunal: type[Tribunal], labelled: Any, **options: Any
) -> Calibration:
    """Async ``assert_calibrated``: same arguments, same outcome."""
    __tracebackhide__ = True
    return check(await acalibrate(tribunal, labelled, **options))


def check(calibration: Calibration) -> Calibration:
    """``calibration`` if it meets its thresholds and no judge is flagged, else fail."""
    __tracebackhide__ = True
    failures = calibration.failures()
    if failures:
        raise AssertionError(failure_message(calibration, failures))
    return calibration


def failure_message(calibration: Calibration, failures: list[str]) -> str:
    """The failures, one per line, then the calibration's tables."""
    head = f"{calibration.tribunal} calibration failed:"
    return "\n".join([head, *(f"- {failure}" for failure in failures), "", calibration.table()])
