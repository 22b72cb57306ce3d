"""Sampled tests: one test body run N times, passed when enough of the runs pass."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_harness._report.text import clip, tabulate
from pytest_harness._statistics import METHOD, Decision, Sprt, pass_hat_ks, required, wilson, z_of
from pytest_harness.errors import (
    CassetteError,
    CassetteMiss,
    ConfigError,
    LocalModelError,
    NetworkBlocked,
    find_cause,
    type_name,
)

SAMPLES_PROPERTY = "harness_samples"
LINE_PROPERTY = "harness_pass_rate"
# Not the feature's fault: the test cannot run as written, so sampling stops.
SETUP_ERRORS = (CassetteMiss, CassetteError, NetworkBlocked, ConfigError, LocalModelError)


@dataclass(frozen=True, slots=True)
class SampleFailure:
    """One failed sample: its number (from 1), its first line, and its full account."""

    sample: int
    line: str
    full: str


@dataclass(eq=False)
class Sampling:
    """The samples of one test and how they went.

    Attributes:
        count: samples to run (at most, when sequential).
        pass_rate: the share of them that must pass.
        sprt: the sequential test deciding as the samples come (``confidence=``), else None.
        inconclusive: what an undecided sequential test becomes: fail, xfail or pass.
        unit: what its samples are called in its summary (a dataset gate's are cases).
        ran: samples run so far.
        failures: the failed ones, in order.
        stop: the sample that stopped the sampling (a cassette miss, a wrong setting: the
            test cannot run as written), or None.
        decided: what the sequential test decided so far, or None.
        alike: every sample ran got the same model answers (the replies in the test's
            traffic, in any order), at least one each: its samples are copies, whatever
            their rate says.
    """

    count: int
    pass_rate: float
    sprt: Sprt | None = None
    inconclusive: str = "fail"
    unit: str = "samples"
    ran: int = 0
    failures: list[SampleFailure] = field(default_factory=list)
    stop: SampleFailure | None = None
    decided: Decision | None = None
    alike: bool = False

    @property
    def passes(self) -> int:
        return self.ran - len(self.failures)

    @property
    def passed(self) -> bool:
        """The rate is reached: at the test's confidence when sequential."""
        if self.sprt is not None:
            return self.stop is None and self.decided == "pass"
        return self.ran == self.count and self.passes >= required(self.pass_rate, self.count)

    @property
    def outcome(self) -> str:
        """``pass``, ``fail``, or ``inconclusive`` (sequential, all samples ran undecided)."""
        if self.sprt is not None and self.stop is None and self.decided is None:
            return "inconclusive" if self.ran == self.count else "fail"
        return "pass" if self.passed else "fail"

    @property
    def confidence(self) -> float:
        return 0.95 if self.sprt is None else self.sprt.confidence

    def run(
        self,
        once: Callable[[], object],
        *,
        starting: Callable[[int], None],
        problem: Callable[[], str | None],
        explain: Callable[[BaseException], str],
        answered: Callable[[], Sequence[str]] = tuple,
    ) -> None:
        """Run ``once`` for each sample (until decided, when sequential); fail
        (``pytest.fail``) when the rate is not reached; an inconclusive test fails, xfails or
        passes as ``inconclusive`` says.

        Args:
            once: the test body.
            starting: told each sample's number before it runs.
            problem: after a sample that raised nothing, why it failed anyway (a bad model
                response the application received), or None.
            explain: the full account of a sample's exception (pytest's failure report).
            answered: after a sample, the model answers of its traffic (``alike``).
        """
        answers: set[tuple[str, ...]] = set()
        for number in range(1, self.count + 1):
            starting(number)
            self._sample(number, once, problem, explain)
            answers.add(tuple(sorted(answered())))
            self.alike = number > 1 and len(answers) == 1 and () not in answers
            self.ran = number
            if self.sprt is not None:
                self.decided = self.sprt.decide(self.passes, len(self.failures))
                if self.decided is not None:
                    break
        if self.outcome == "inconclusive" and self.inconclusive != "fail":
            if self.inconclusive == "xfail":
                pytest.xfail(self.summary())
            return
        if not self.passed:
            pytest.fail(self.failure_message(), pytrace=False)

    def _sample(
        self,
        number: int,
        once: Callable[[], object],
        problem: Callable[[], str | None],
        explain: Callable[[BaseException], str],
    ) -> None:
        """Run one sample; keep its failure (the sampling goes on) or stop (re-raised)."""
        try:
            once()
        except (pytest.skip.Exception, pytest.xfail.Exception):
            raise  # skipping or xfailing one sample says so of the test
        except Exception as error:  # any failure is the sample's
            if find_cause(error, SETUP_ERRORS) is not None:
                self._stopped(number, error)
                raise
            self._failed(number, error, explain)
        except pytest.fail.Exception as error:
            self._failed(number, error, explain)
        except BaseException as error:  # a HarnessStop (a cassette miss), an interrupt
            self._stopped(number, error)
            raise
        else:
            found = problem()
            if found is not None:
                self.failures.append(SampleFailure(number, found.splitlines()[0], found))

    def _failed(
        self, number: int, error: BaseException, explain: Callable[[BaseException], str]
    ) -> None:
        full = explain(error) if not self.failures else ""  # only the first is shown in full
        self.failures.append(SampleFailure(number, _line(error), full))

    def _stopped(self, number: int, error: BaseException) -> None:
        # The error itself is the test's failure, in full; here its first line, which the
        # line ends with a colon introducing what follows (a miss: the request) loses.
        self.stop = SampleFailure(number, clip(_line(error).rstrip(":"), 200), "")

    def more_needed(self) -> int | None:
        """About how many more samples would decide an inconclusive test, or None."""
        if self.sprt is None or self.outcome != "inconclusive":
            return None
        return self.sprt.more_needed(self.passes, len(self.failures))

    def summary(self) -> str:
        """``"7/10 passed (70%, 95% CI 40%-89%), needs 8"``; sequential: ``"22/23 passed
        (..., 95% CI ...), rate 80% reached at 95% confidence after 23 of 100 samples"``, or
        ``"inconclusive: 80/100 passed (...) ...; about 140 more samples would likely decide
        it"``; when a sample stopped the sampling, how many completed and why: ``"no sample
        of 10 completed: CassetteMiss: ..."``, ``"3 of 10 samples completed (3 passed), then
        sample 4 stopped: ..."``; a test whose samples all got the same answers says so:
        ``"..., all 5 samples answered alike"``."""
        if self.stop is not None:
            return self._stopped_summary(self.stop)
        return self._counted_summary() + self._alike_said()

    def _alike_said(self) -> str:
        return f", all {self.ran} {self.unit} answered alike" if self.alike else ""

    def _counted_summary(self) -> str:
        low, high = wilson(self.passes, self.ran, z_of(self.confidence))
        rate = self.passes / self.ran if self.ran else 0.0
        counted = (
            f"{self.passes}/{self.ran} passed ({percent(rate)}, {percent(self.confidence)} "
            f"CI {percent(low)}-{percent(high)})"
        )
        if self.sprt is None:
            return f"{counted}, needs {required(self.pass_rate, self.count)}"
        return self._sequential_summary(counted)

    def _sequential_summary(self, counted: str) -> str:
        at = f"at {percent(self.confidence)} confidence"
        target = f"rate {percent(self.pass_rate)}"
        if self.decided is not None:
            word = "reached" if self.decided == "pass" else "not reached"
            said = f"after {self.ran} of {self.count} {self.unit}"
            return f"{counted}, {target} {word} {at} {said}"
        more = self.more_needed()
        likely = (
            f"about {more} more {self.unit} would likely decide it"
            if more is not None
            else f"its rate is within the margin of the target: many more {self.unit}, or a "
            "wider margin, would decide it"
        )
        return f"inconclusive: {counted}, {target} undecided {at}; {likely}"

    def _stopped_summary(self, stop: SampleFailure) -> str:
        # No rate: the samples that did not run are not failures, and 0 of 0 has no interval.
        if self.ran == 0:
            return f"no sample of {self.count} completed: {stop.line}"
        return (
            f"{self.ran} of {self.count} samples completed ({self.passes} passed), "
            f"then sample {stop.sample} stopped: {stop.line}"
        )

    def failure_message(self) -> str:
        """Why a sampled test failed: the rate, the first failure in full, the others briefly."""
        said = (
            self.summary()
            if self.sprt is not None or self.stop is not None
            else f"{self._counted_summary()} of {self.count}{self._alike_said()}"
        )
        lines = [f"pytest-harness: {said} ({self._settings()}).{self._fix()}"]
        lines.append("Failed samples: " + ", ".join(str(f.sample) for f in self.failures) + ".")
        if self.failures:
            first = self.failures[0]
            lines += ["", f"sample {first.sample} failed:", first.full or first.line]
        if len(self.failures) > 1:
            lines += [""] + [f"sample {f.sample}: {clip(f.line, 200)}" for f in self.failures[1:]]
        return "\n".join(lines)

    def _settings(self) -> str:
        said = f"pass_rate={self.pass_rate:g}"
        if self.sprt is not None:
            said += f", confidence={self.sprt.confidence:g}, margin={self.sprt.margin:g}"
        return said

    def _fix(self) -> str:
        """For an inconclusive test: what would decide it."""
        if self.outcome != "inconclusive":
            return ""
        more = self.more_needed()
        samples = f"samples={self.count + more}" if more is not None else "more samples"
        return (
            f" Run {samples}, widen margin=, or accept an undecided test with "
            "inconclusive='xfail' or 'pass'."
        )

    def record(self, test: str) -> dict[str, Any]:
        """The JSON-ready account: the JUnit property, the session table's row."""
        low, high = wilson(self.passes, self.ran, z_of(self.confidence))
        stop = self.stop
        found = {
            "test": test,
            "samples": self.count,
            "ran": self.ran,
            "passes": self.passes,
            "pass_rate": self.passes / self.ran if self.ran else None,
            "required": self.pass_rate,
            "interval": [round(low, 6), round(high, 6)] if self.ran else None,
            "confidence": self.confidence,
            "outcome": self.outcome,
            "pass_k": {str(k): round(v, 6) for k, v in pass_hat_ks(self.passes, self.ran).items()},
            "failures": [{"sample": f.sample, "reason": f.line} for f in self.failures],
            "stopped": {"sample": stop.sample, "reason": stop.line} if stop else None,
            "alike": self.alike,
            "sequential": None,
        }
        if self.sprt is not None:
            found["sequential"] = {
                "method": METHOD,
                "margin": self.sprt.margin,
                "decided": self.decided,
                "inconclusive": self.inconclusive,
                "more_needed": self.more_needed(),
            }
        return found

    def junit_properties(self, test: str) -> list[tuple[str, str]]:
        return [
            (SAMPLES_PROPERTY, json.dumps(self.record(test), sort_keys=True)),
            (LINE_PROPERTY, self.summary()),
        ]


def samples_table(records: Sequence[Mapping[str, Any]]) -> str:
    """The session's sampled tests: passes/N, rate, interval, what was needed, pass^k, the
    outcome (``inconclusive`` with how many more samples would likely decide it), and the
    first failure."""
    rows = []
    for r in records:
        interval, rate = r["interval"], r["pass_rate"]
        rows.append(
            [
                r["test"],
                passed_cell(r),
                "-" if rate is None else percent(rate),
                "-" if interval is None else interval_cell(interval, r.get("confidence", 0.95)),
                needs_cell(r),
                pass_k_cell(r.get("pass_k") or {}),
                outcome_cell(r),
                clip(_first_failure(r), 60),
            ]
        )
    headers = ["test", "passed", "rate", "CI", "needs", "pass^k", "outcome", "first failure"]
    return tabulate(rows, headers=headers)


def passed_cell(record: Mapping[str, Any]) -> str:
    """``7/10``; ``22/23 of 100`` when a sequential test stopped early."""
    said = f"{record['passes']}/{record['ran']}"
    return said if record["ran"] == record["samples"] else f"{said} of {record['samples']}"


def interval_cell(interval: Sequence[float], confidence: float) -> str:
    said = f"{percent(interval[0])}-{percent(interval[1])}"
    return said if confidence == 0.95 else f"{said} ({percent(confidence)})"


def needs_cell(record: Mapping[str, Any]) -> str:
    """``80%``; sequential: ``80% ±5% @95%`` (the margin, the confidence)."""
    needs, sequential = percent(record["required"]), record.get("sequential")
    if not sequential:
        return needs
    return f"{needs} ±{percent(sequential['margin'])} @{percent(record['confidence'])}"


def pass_k_cell(pass_k: Mapping[str, float]) -> str:
    """The largest k's pass^k: ``43% (k=8)``."""
    if not pass_k:
        return "-"
    k = max(pass_k, key=int)
    return f"{percent(pass_k[k])} (k={k})"


def outcome_cell(record: Mapping[str, Any]) -> str:
    """The outcome; an inconclusive one says what it counts as and how far it is from a
    decision: ``inconclusive (fail), ~140 more``."""
    outcome, sequential = record["outcome"], record.get("sequential")
    if outcome != "inconclusive" or not sequential:
        return str(outcome)
    more = sequential.get("more_needed")
    said = f"inconclusive ({sequential['inconclusive']})"
    return said if more is None else f"{said}, ~{more} more"


def _first_failure(record: Mapping[str, Any]) -> str:
    """The first failed sample, else the one that stopped the sampling, else ``-``."""
    failures, stop = record["failures"], record.get("stopped")
    if failures:
        return f"#{failures[0]['sample']}: {failures[0]['reason']}"
    return f"#{stop['sample']} stopped: {stop['reason']}" if stop else "-"


def _line(error: BaseException) -> str:
    """An exception's type and the first line of its message."""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type_name(error)}: {first}" if first else type_name(error)


def percent(value: float) -> str:
    return f"{100 * value:.1f}%".replace(".0%", "%")
