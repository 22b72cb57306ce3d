"""Samples a sequential test uses, against a fixed number of samples.

A sampled test with ``samples=100, pass_rate=0.8`` runs its body 100 times; with
``confidence=0.95`` (margin 0.05, the default) it stops as soon as its samples decide. This
script runs the package's own sampling loop (``Sampling.run``, the loop a test's samples go
through, with a body that passes with a chosen probability) for simulated features whose
true pass rate is 0.5, 0.7, 0.8, 0.9 and 0.99, ``--tests`` times each, once per seed, and
prints per rate: the mean samples used (each seed's, then their median), that over the fixed
N, and the share of tests that passed, failed and were inconclusive.

Run::

    python benchmarks/sequential.py [--tests 2000] [--seeds 5]

Target: the mean samples used at most half of N (50) when the true rate is 0.1 or more from
``pass_rate`` (0.5, 0.7, 0.9, 0.99). At 0.8 itself (inside the margin) either verdict is
fair and many tests end inconclusive. The script always exits 0: it is a report, not a gate.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
from collections import Counter

import pytest
from tabulate import tabulate

from pytest_harness._datasets.sampling import Sampling
from pytest_harness._statistics import Sprt

PASS_RATE = 0.8
SAMPLES = 100
CONFIDENCE = 0.95
RATES = (0.5, 0.7, 0.8, 0.9, 0.99)
FAR = 0.1  # rates at least this far from PASS_RATE should take at most half of SAMPLES


def one_test(rate: float, rng: random.Random) -> tuple[int, str]:
    """Run one sequential test whose samples pass with probability ``rate``: (ran, outcome)."""
    sprt = Sprt(pass_rate=PASS_RATE, confidence=CONFIDENCE)
    sampling = Sampling(SAMPLES, PASS_RATE, sprt=sprt)

    def once() -> None:
        assert rng.random() < rate

    # A failed or inconclusive test raises pytest's failure: its outcome is in the sampling.
    with contextlib.suppress(pytest.fail.Exception):
        sampling.run(once, starting=lambda _: None, problem=lambda: None, explain=str)
    return sampling.ran, sampling.outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="simulated tests per rate")
    parser.add_argument("--seeds", type=int, default=5, help="runs, each with its own seed")
    args = parser.parse_args(argv)
    rows = []
    for rate in RATES:
        means, outcomes = [], Counter[str]()
        for seed in range(args.seeds):
            rng = random.Random(f"{seed}-{rate}")
            tests = [one_test(rate, rng) for _ in range(args.tests)]
            means.append(statistics.mean(ran for ran, _ in tests))
            outcomes.update(outcome for _, outcome in tests)
        median = statistics.median(means)
        total = args.tests * args.seeds
        far = abs(rate - PASS_RATE) >= FAR - 1e-9
        verdict = ("OK" if median <= SAMPLES / 2 else "OVER") if far else ""
        rows.append(
            [
                rate,
                " ".join(f"{m:.1f}" for m in means),
                median,
                SAMPLES,
                median / SAMPLES,
                *(100 * outcomes[o] / total for o in ("pass", "fail", "inconclusive")),
                "<= 50" if far else "",
                verdict,
            ]
        )
    print(
        f"Sequential sampling (SPRT) at pass_rate={PASS_RATE}, samples={SAMPLES}, "
        f"confidence={CONFIDENCE}, margin=0.05: samples used over {args.tests} simulated "
        f"tests per run, {args.seeds} runs (seeds) per true rate"
    )
    headers = [
        "true rate",
        "mean used, each run",
        "median",
        "fixed N",
        "used / N",
        "pass %",
        "fail %",
        "inconclusive %",
        "target",
        "verdict",
    ]
    print(tabulate(rows, headers=headers, floatfmt=".2f"))
    over = [str(row[0]) for row in rows if row[-1] == "OVER"]
    print("OVER target at rates: " + ", ".join(over) if over else "All targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
