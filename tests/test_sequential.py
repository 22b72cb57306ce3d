"""Sequential sampling: ``samples=N, pass_rate=p, confidence=c`` stops when the samples decide.

The decision rule is checked three ways: against values worked by hand from the SPRT's
definition, by simulation (at the edges of the indifference zone, over thousands of simulated
tests, the wrong-verdict rate stays within 1 - confidence, where a naive rule that looks at a
fixed-size interval after every sample does not), and in real pytest runs, recorded against
a loopback judge and replayed offline.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
from typing import Any

import pytest

from pytest_harness._statistics import Sprt, pass_hat_k, pass_hat_ks, wilson
from pytest_harness.testing import LoopbackServer, Reply

# p = 0.8, margin 0.05, confidence 0.95: the zone is 0.75-0.85. By hand:
# a pass moves the log likelihood ratio by ln(0.85 / 0.75) = 0.125163,
# a failure by ln(0.15 / 0.25) = -0.510826; it decides at +-ln(1 / 0.05) = +-2.995732.
# All passes: 2.995732 / 0.125163 = 23.93, so the 24th pass decides "pass".
# All failures: 2.995732 / 0.510826 = 5.86, so the 6th failure decides "fail".
SPRT = Sprt(pass_rate=0.8, confidence=0.95, margin=0.05)


def test_the_ratio_and_bounds_are_the_hand_worked_ones() -> None:
    assert (SPRT.low, SPRT.high) == pytest.approx((0.75, 0.85))
    assert SPRT.step(True) == pytest.approx(0.125163, abs=1e-6)
    assert SPRT.step(False) == pytest.approx(-0.510826, abs=1e-6)
    assert SPRT.bound == pytest.approx(2.995732, abs=1e-6)
    assert SPRT.llr(10, 2) == pytest.approx(10 * 0.125163 - 2 * 0.510826, abs=1e-5)


def test_the_first_sample_count_that_decides_is_the_hand_worked_one() -> None:
    assert [SPRT.decide(n, 0) for n in (23, 24)] == [None, "pass"]
    assert [SPRT.decide(0, n) for n in (5, 6)] == [None, "fail"]
    # 40 passes (5.006654) and 4 failures (-2.043304): 2.963350, just short of 2.995732.
    assert SPRT.decide(40, 4) is None
    assert SPRT.decide(41, 4) == "pass"


def test_when_every_sample_must_pass_one_failure_decides() -> None:
    every = Sprt(pass_rate=1.0, confidence=0.95, margin=0.05)  # low 0.95, high 1
    assert every.decide(30, 1) == "fail"
    # ln(1 / 0.95) = 0.051293 a pass: 2.995732 / 0.051293 = 58.4, so 59 passes decide.
    assert [every.decide(n, 0) for n in (58, 59)] == [None, "pass"]
    assert every.more_needed(50, 0) == 9
    assert every.more_needed(59, 0) is None


def test_more_needed_is_the_distance_over_the_drift_at_the_observed_rate() -> None:
    # 80 of 100, undecided: llr = 80 * 0.125163 - 20 * 0.510826 = -0.203480. The observed
    # rate, a pass and a failure added half each, is 80.5 / 101; the expected step there is
    # 0.797030 * 0.125163 - 0.202970 * 0.510826 = -0.003926, toward "fail": the distance
    # -0.203480 + 2.995732 = 2.792252 takes about 712 more samples.
    rate = 80.5 / 101
    drift = rate * math.log(0.85 / 0.75) + (1 - rate) * math.log(0.15 / 0.25)
    llr = 80 * math.log(0.85 / 0.75) + 20 * math.log(0.15 / 0.25)
    assert SPRT.more_needed(80, 20) == math.ceil((llr + math.log(20)) / -drift) == 712
    # 18 of 20 drifts up: llr = 18 * 0.125163 - 2 * 0.510826 = 1.231282; rate 18.5 / 21.
    rate = 18.5 / 21
    drift = rate * math.log(0.85 / 0.75) + (1 - rate) * math.log(0.15 / 0.25)
    llr = 18 * math.log(0.85 / 0.75) + 2 * math.log(0.15 / 0.25)
    assert SPRT.more_needed(18, 2) == math.ceil((math.log(20) - llr) / drift)
    assert SPRT.more_needed(24, 0) is None  # decided


def test_pass_hat_k_is_the_unbiased_estimate() -> None:
    # 9 of 10 passed: pass^2 = C(9, 2) / C(10, 2) = 36 / 45; pass^10 = 0 (one failed).
    assert pass_hat_k(9, 10, 2) == pytest.approx(0.8)
    assert pass_hat_k(9, 10, 1) == pytest.approx(0.9)
    assert pass_hat_k(9, 10, 10) == 0.0
    assert pass_hat_k(3, 3, 4) is None  # fewer samples than k
    assert list(pass_hat_ks(9, 10)) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert list(pass_hat_ks(2, 3)) == [1, 2, 3]


def simulate(decide: Any, rate: float, count: int, tests: int, seed: int) -> dict[str | None, int]:
    """How many of ``tests`` simulated tests, each of at most ``count`` samples passing with
    probability ``rate``, ended pass, fail and undecided (None)."""
    rng = random.Random(seed)
    verdicts: dict[str | None, int] = {"pass": 0, "fail": 0, None: 0}
    for _ in range(tests):
        passes = failures = 0
        verdict = None
        for _ in range(count):
            if rng.random() < rate:
                passes += 1
            else:
                failures += 1
            verdict = decide(passes, failures)
            if verdict is not None:
                break
        verdicts[verdict] += 1
    return verdicts


@pytest.mark.parametrize(
    ("pass_rate", "confidence", "margin", "count"),
    [(0.8, 0.95, 0.05, 100), (0.8, 0.95, 0.05, 1000), (0.9, 0.9, 0.05, 200), (0.6, 0.99, 0.1, 300)],
)
def test_the_wrong_verdict_rate_stays_within_the_level_at_the_zone_edges(
    pass_rate: float, confidence: float, margin: float, count: int
) -> None:
    sprt = Sprt(pass_rate=pass_rate, confidence=confidence, margin=margin)
    tests = 3000
    below = simulate(sprt.decide, sprt.low, count, tests, seed=1)
    above = simulate(sprt.decide, sprt.high, count, tests, seed=2)
    # A feature at the lower edge must not pass, one at the upper edge must not fail, more
    # often than 1 - confidence, however many looks were taken.
    assert below["pass"] / tests <= 1 - confidence, below
    assert above["fail"] / tests <= 1 - confidence, above
    # And the test does decide: most of the simulated tests at the edges reached a verdict.
    assert below["fail"] > tests / 2
    assert above["pass"] > tests / 2


def test_a_fixed_size_interval_looked_at_after_every_sample_errs_more_often() -> None:
    """The control: the same simulation catches a rule whose error grows with its looks.

    Stopping as soon as the 95% Wilson interval lies wholly above or below the target is
    right 95% of the time for one look, not for a hundred.
    """

    def naive(passes: int, failures: int) -> str | None:
        low, high = wilson(passes, passes + failures)
        return "pass" if low > 0.8 else "fail" if high < 0.8 else None

    tests = 3000
    wrong = simulate(naive, 0.8, 100, tests, seed=3)  # at the target itself
    right = simulate(SPRT.decide, 0.8, 100, tests, seed=3)
    assert (wrong["pass"] + wrong["fail"]) / tests > 0.05 * 2, wrong
    assert (right["pass"] + right["fail"]) / tests > 0  # decides sometimes, either way is allowed


def outcomes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


BODIES = """
import pathlib
import pytest

def ran(name, sample):  # the last sample that ran, kept where the test can read it
    pathlib.Path(f"ran-{{name}}").write_text(str(sample))

@pytest.mark.harness(samples=100, pass_rate=0.8, confidence=0.95)
def test_always(harness):
    ran("always", harness.sample)

@pytest.mark.harness(samples=100, pass_rate=0.8, confidence=0.95)
def test_never(harness):
    ran("never", harness.sample)
    assert False, f"sample {{harness.sample}} was rude"

@pytest.mark.harness(samples=30, pass_rate=0.8, confidence=0.95{inconclusive})
def test_four_in_five(harness):
    ran("four_in_five", harness.sample)
    assert harness.sample % 5, "every fifth sample fails"
"""


NAMES = ("always", "never", "four_in_five")


def run_bodies(pytester: pytest.Pytester, inconclusive: str, *args: str) -> pytest.RunResult:
    said = "" if inconclusive == "default" else f", inconclusive={inconclusive!r}"
    pytester.makepyfile(test_sequential_bodies=BODIES.format(inconclusive=said))
    return outcomes(pytester, "-v", *args)


def test_a_sequential_test_stops_as_soon_as_its_samples_decide(pytester: pytest.Pytester) -> None:
    result = run_bodies(pytester, "default", "--harness-report=r.json", "--junitxml=j.xml")
    result.assert_outcomes(passed=1, failed=2)
    ran = {name: int((pytester.path / f"ran-{name}").read_text()) for name in NAMES}
    assert ran == {"always": 24, "never": 6, "four_in_five": 30}  # the hand-worked counts
    out = result.stdout.str()
    assert (
        "test_always PASSED (24/24 passed (100%, 95% CI 86.2%-100%), rate 80% reached at 95% "
        "confidence after 24 of 100 samples)"
    ) in out, out
    assert "test_never FAILED (0/6 passed (0%, 95% CI 0%-39%), rate 80% not reached at 95% " in out
    rows = {
        r["test"].split("::")[-1]: r
        for r in json.loads((pytester.path / "r.json").read_text())["samples"]
    }
    assert rows["test_always"]["outcome"] == "pass"
    assert rows["test_always"]["sequential"] == {
        "method": "SPRT",
        "margin": 0.05,
        "decided": "pass",
        "inconclusive": "fail",
        "more_needed": None,
    }
    assert rows["test_always"]["pass_k"]["8"] == 1.0
    assert rows["test_never"]["outcome"] == "fail"
    assert [f["sample"] for f in rows["test_never"]["failures"]] == [1, 2, 3, 4, 5, 6]


def test_an_undecided_test_is_inconclusive_and_fails_by_default(pytester: pytest.Pytester) -> None:
    result = run_bodies(pytester, "default", "-k", "four_in_five", "--harness-report=r.json")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # 24 passes, 6 failures: llr = 24 * 0.125163 - 6 * 0.510826 = -0.060044, undecided.
    assert "test_four_in_five FAILED (inconclusive: 24/30 passed (80%, 95% CI" in out, out
    assert "rate 80% undecided at 95% confidence; about" in out
    assert "more samples would likely decide it" in out
    (row,) = json.loads((pytester.path / "r.json").read_text())["samples"]
    more = Sprt(pass_rate=0.8, confidence=0.95).more_needed(24, 6)
    assert more is not None
    assert row["outcome"] == "inconclusive"
    assert row["sequential"]["more_needed"] == more
    assert f"Run samples={30 + more}, widen margin=" in out
    table = out[out.index("pytest-harness sampled tests") :]
    assert f"inconclusive (fail), ~{more} more" in table


@pytest.mark.parametrize(("mode", "word"), [("xfail", "XFAIL"), ("pass", "PASSED")])
def test_an_inconclusive_test_may_xfail_or_pass_as_the_user_says(
    pytester: pytest.Pytester, mode: str, word: str
) -> None:
    result = run_bodies(pytester, mode, "-k", "four_in_five", "-rx", "--harness-report=r.json")
    result.assert_outcomes(**{"xfailed" if mode == "xfail" else "passed": 1})
    out = result.stdout.str()
    assert f"test_four_in_five {word}" in out
    assert "inconclusive: 24/30 passed" in out
    (row,) = json.loads((pytester.path / "r.json").read_text())["samples"]
    assert (row["outcome"], row["sequential"]["inconclusive"]) == ("inconclusive", mode)


def test_the_html_report_says_inconclusive(pytester: pytest.Pytester) -> None:
    run_bodies(pytester, "default", "--harness-report=r.html")
    page = (pytester.path / "r.html").read_text()
    assert "inconclusive (counted as fail): about" in page
    assert "80.0% ±5.0% at 95.0% (SPRT)" in page
    assert "k=8 100.0%" in page


class CountingJudge:
    """Fails every fourth request it sees."""

    def __init__(self) -> None:
        self.seen = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            number = next(self.seen)
        return Reply(content=json.dumps({"pass": number % 4 != 0}))


JUDGED = """
import pytest
from pytest_harness import Agent, Tribunal

class Judge(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = {{
        "type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]
    }}
    instructions = "Judge the reply."

class Panel(Tribunal):
    agents = [Judge]

@pytest.mark.harness(samples=200, pass_rate=0.5, confidence=0.9, margin=0.1)
def test_judged(harness):
    harness.assert_verdict(Panel, "Thanks, it ships today.")
"""


def test_a_recorded_sequential_test_replays_offline_to_the_same_verdict(
    pytester: pytest.Pytester,
) -> None:
    with LoopbackServer(handler=CountingJudge()) as server:
        pytester.makepyfile(test_judged=JUDGED.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        outcomes(pytester, "--harness-live", "--harness-report=live.json").assert_outcomes(passed=1)
    cassette = json.loads((pytester.path / "cassettes/test_judged/test_judged.yaml").read_text())
    live = json.loads((pytester.path / "live.json").read_text())["samples"][0]
    # Only the samples it needed were recorded; replayed with the server gone, it stops there.
    assert len(cassette["interactions"]) == live["ran"] < 200
    outcomes(pytester, "--harness-report=replay.json").assert_outcomes(passed=1)
    replay = json.loads((pytester.path / "replay.json").read_text())["samples"][0]
    keys = ("ran", "passes", "outcome", "sequential")
    assert {k: replay[k] for k in keys} == {k: live[k] for k in keys}
    assert replay["sequential"]["decided"] == "pass"


WRONG = [
    ("samples=10, confidence=0.95", "harness(confidence=...) needs samples=N and pass_rate=p"),
    ("samples=10, pass_rate=0.8, margin=0.1", "harness(margin=...) belongs to sequential"),
    (
        "samples=10, pass_rate=0.8, inconclusive='xfail'",
        "harness(inconclusive=...) belongs to sequential sampling",
    ),
    ("samples=10, pass_rate=0.8, confidence=1", "harness(confidence=...) expects a level"),
    ("samples=10, pass_rate=0.8, confidence=0.4", "harness(confidence=...) expects a level"),
    ("samples=10, pass_rate=0.8, confidence='high'", "harness(confidence=...) expects a level"),
    (
        "samples=10, pass_rate=0.05, confidence=0.9",
        "harness(margin=...) expects the difference from pass_rate",
    ),
    (
        "samples=10, pass_rate=0.8, confidence=0.9, margin=0",
        "harness(margin=...) expects the difference from pass_rate",
    ),
    (
        "samples=10, pass_rate=0.8, confidence=0.9, inconclusive='maybe'",
        "harness(inconclusive=...) expects one of fail, xfail, pass, got 'maybe'",
    ),
]


def test_wrong_sequential_arguments_are_named_each_on_its_test(pytester: pytest.Pytester) -> None:
    tests = [
        f"@pytest.mark.harness({arguments})\ndef test_{n}():\n    pass\n"
        for n, (arguments, _) in enumerate(WRONG)
    ]
    pytester.makepyfile("import pytest\n\n" + "\n".join(tests))
    result = outcomes(pytester)
    result.assert_outcomes(errors=len(WRONG))
    text = result.stdout.str()
    sections = text.split(" ERROR at setup of test_")[1:]
    said = {section.split(" ")[0]: section for section in sections}
    for n, (_, message) in enumerate(WRONG):
        assert message in said[str(n)], said[str(n)]
