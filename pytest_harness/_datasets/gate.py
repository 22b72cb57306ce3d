"""The dataset gate: the share of a dataset's cases that pass must reach ``pass_rate``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_harness._datasets import sampling as samples
from pytest_harness._datasets.sampling import SampleFailure, Sampling
from pytest_harness._report.text import clip, tabulate
from pytest_harness._statistics import Sprt
from pytest_harness.errors import ConfigError, find_cause

CASE_PROPERTY = "harness_dataset_case"
GATE = ("pass_rate", "confidence", "margin", "inconclusive")
_RESULT = pytest.StashKey[str | None]()  # a case's result so far: "pass", "fail" or None
_REASON = pytest.StashKey[str]()  # the first line of a counted failure


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSpec:
    """A dataset's gate, from its marker."""

    pass_rate: float
    confidence: float | None = None
    margin: float = 0.05
    inconclusive: str = "fail"

    @classmethod
    def of(cls, kwargs: Mapping[str, Any]) -> GateSpec | None:
        """The gate the ``dataset`` marker's arguments ask for, or None (``ConfigError``)."""
        from pytest_harness._pytest_glue.settings import sequential_arguments, share

        if "pass_rate" not in kwargs:
            given = [name for name in GATE if name in kwargs]
            if given:
                raise ConfigError(
                    f"@pytest.mark.dataset({given[0]}=...) belongs to the dataset gate, which "
                    'pass_rate= turns on: for example @pytest.mark.dataset("cases.jsonl", '
                    "pass_rate=0.9)."
                )
            return None
        rate = kwargs["pass_rate"]
        if not share(rate) or rate == 0:
            raise ConfigError(
                "@pytest.mark.dataset(pass_rate=...) expects the share of cases that must "
                f"pass, above 0 and at most 1 (0.9 for 90%), got {rate!r}."
            )
        sequential = sequential_arguments(dict(kwargs), float(rate), marker="dataset")
        if sequential.get("inconclusive") == "xfail":
            raise ConfigError(
                "@pytest.mark.dataset(inconclusive='xfail') has no test to xfail: an "
                "undecided gate fails the run ('fail') or lets it pass ('pass')."
            )
        return cls(pass_rate=float(rate), **sequential)


def key(item: pytest.Item, argname: str) -> str:
    """The gate an item's case belongs to: its test, and any other simple parameter."""
    parent = item.parent.nodeid if item.parent is not None else ""
    name = f"{parent}::{getattr(item, 'originalname', item.name)}"
    params = getattr(getattr(item, "callspec", None), "params", {})
    others = [
        f"{k}={v}"
        for k, v in params.items()
        if k != argname and isinstance(v, (str, int, float, bool, type(None)))
    ]
    return f"{name}[{'-'.join(others)}]" if others else name


def note(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """In ``pytest_runtest_makereport``: count the case's phase against its gate.

    A case failing in its call (not for a set-up reason) becomes an expected failure that
    the gate counts; its teardown report carries the case's result to the gate.
    """
    marker = item.get_closest_marker("dataset")
    spec = GateSpec.of(marker.kwargs) if marker is not None else None
    index = item.get_closest_marker("harness_case")
    if spec is None or index is None:
        return
    if report.when == "setup":
        item.stash[_RESULT] = None
    elif report.when == "call":
        _count_call(item, call, report, spec)
    else:
        _carry(item, report, spec, index.kwargs)


def _count_call(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, spec: GateSpec
) -> None:
    if hasattr(report, "wasxfail") or report.skipped:
        return  # the user's own skip or xfail: not counted
    if report.passed:
        item.stash[_RESULT] = "pass"
        return
    raised = call.excinfo.value if call.excinfo is not None else None
    if raised is not None and find_cause(raised, samples.SETUP_ERRORS) is not None:
        return  # the test cannot run as written: an error of its own, not counted
    line = _first_line(report)
    item.stash[_RESULT], item.stash[_REASON] = "fail", line
    report.outcome = "skipped"
    report.wasxfail = f"counted by the dataset gate ({_spec_text(spec)}): {clip(line, 200)}"


def _carry(
    item: pytest.Item, report: pytest.TestReport, spec: GateSpec, index: Mapping[str, Any]
) -> None:
    marker = item.get_closest_marker("dataset")
    argname = (marker.kwargs.get("argname") if marker else None) or "case"
    case = getattr(getattr(item, "callspec", None), "params", {}).get(argname)
    value = {
        "gate": key(item, argname),
        "source": index.get("source"),
        "index": index.get("index"),
        "count": index.get("count"),
        "case": getattr(case, "id", None),
        "test": item.nodeid,
        "result": item.stash.get(_RESULT, None),
        "reason": item.stash.get(_REASON, None),
        "spec": {name: getattr(spec, name) for name in GATE},
    }
    report.user_properties.append((CASE_PROPERTY, json.dumps(value, sort_keys=True)))


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(report.longrepr or "failed")
    return (message.strip().splitlines() or ["failed"])[0]


def _spec_text(spec: GateSpec) -> str:
    said = f"pass_rate={spec.pass_rate:g}"
    if spec.confidence is not None:
        said += f", confidence={spec.confidence:g}"
    return said


def gates(values: Sequence[str]) -> list[dict[str, Any]]:
    """Each gate's record, from its cases' ``CASE_PROPERTY`` values (in any order)."""
    cases: dict[str, list[dict[str, Any]]] = {}
    for value in values:
        case = json.loads(value)
        cases.setdefault(case["gate"], []).append(case)
    return [gate_record(name, found) for name, found in cases.items()]


def gate_record(name: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """One gate's record from its cases (each a ``CASE_PROPERTY`` value, in any order): the
    fields of a sampled test's record over the cases counted, and ``source``, ``cases``,
    ``excluded``, ``summary``, ``failures``; ``spec`` and ``results`` (each case's result)
    let merged reports compute it again (``pool``)."""
    cases = sorted(cases, key=lambda c: c["index"])
    spec = cases[0]["spec"]
    counted = [c for c in cases if c["result"] is not None]
    sprt = None
    if spec["confidence"] is not None:
        sprt = Sprt(
            pass_rate=spec["pass_rate"], confidence=spec["confidence"], margin=spec["margin"]
        )
    sampling = Sampling(
        len(counted), spec["pass_rate"], sprt=sprt, inconclusive=spec["inconclusive"], unit="cases"
    )
    sampling.ran = len(counted)
    sampling.failures = [
        SampleFailure(number, c["reason"] or "failed", "")
        for number, c in enumerate(counted, 1)
        if c["result"] == "fail"
    ]
    if sprt is not None:
        sampling.decided = sprt.decide(sampling.passes, len(sampling.failures))
    record = sampling.record(name)
    del record["pass_k"]  # the chance that k runs of one test all pass: not a gate's
    record["outcome"] = record["outcome"] if counted else "fail"
    record.update(
        source=cases[0]["source"],
        cases=cases[0]["count"],
        excluded=len(cases) - len(counted),
        summary=sampling.summary() if counted else "no case was counted",
        failures=[
            {"case": c["case"], "test": c["test"], "reason": c["reason"]}
            for c in counted
            if c["result"] == "fail"
        ],
        spec=spec,
        results=[{k: c[k] for k in _RESULT_KEYS} for c in cases],
    )
    return record


_RESULT_KEYS = ("index", "case", "test", "result", "reason")


Clash = tuple[str, tuple[str, str], str]  # a gate, the two reports, what differs


def pool(reports: Sequence[tuple[str, Sequence[Any]]]) -> tuple[list[dict[str, Any]], list[Clash]]:
    """The gates of several reports' ``datasets`` records (CI shards), each computed again
    from the union of its cases' results, and what conflicts: a case counted in two reports
    with different results (the first report's is kept).

    Args:
        reports: each report's name and its ``datasets`` records.

    Raises:
        ReportError: a record that is not a gate's, naming the report and the key.
    """
    cases: dict[str, dict[int, dict[str, Any]]] = {}
    seen: dict[tuple[str, int], str] = {}
    conflicts: list[Clash] = []
    for name, records in reports:
        for number, record in enumerate(records):
            where = f"{name}: datasets[{number}]"
            gate, spec, source, count = _gate_fields(record, where)
            for result in _results(record, where):
                found = cases.setdefault(gate, {})
                kept = found.get(result["index"])
                if kept is None:
                    found[result["index"]] = {
                        **result,
                        "gate": gate,
                        "spec": spec,
                        "source": source,
                        "count": count,
                    }
                    seen[gate, result["index"]] = name
                elif kept["result"] != result["result"]:
                    first = seen[gate, result["index"]]
                    said = (
                        f"case {result['case']}: {kept['result']} ({first}), "
                        f"{result['result']} ({name}); {first}'s kept"
                    )
                    conflicts.append((gate, (first, name), said))
    return [gate_record(gate, list(found.values())) for gate, found in cases.items()], conflicts


def _gate_fields(record: Any, where: str) -> tuple[str, dict[str, Any], Any, Any]:
    """A gate record's name, settings, source and number of cases (``ReportError``)."""
    from pytest_harness.errors import ReportError

    if not isinstance(record, dict) or not isinstance(record.get("test"), str):
        raise ReportError(f"{where} is not a dataset gate's record (no 'test' name)")
    spec = record.get("spec")
    if not isinstance(spec, dict) or not _good_spec(spec):
        raise ReportError(
            f"{where}: 'spec' expected the gate's settings ({', '.join(GATE)}), got "
            f"{spec!r:.80}; merge reports written by this version of pytest-harness"
        )
    return record["test"], spec, record.get("source"), record.get("cases")


def _good_spec(spec: dict[str, Any]) -> bool:
    """Settings a gate could have had (as ``GateSpec.of`` accepts them)."""
    from pytest_harness._pytest_glue.settings import share

    if set(spec) != set(GATE) or spec["inconclusive"] not in ("fail", "pass"):
        return False
    rate, confidence, margin = spec["pass_rate"], spec["confidence"], spec["margin"]
    if not (share(rate) and rate > 0 and share(margin) and 0 < margin <= 0.5):
        return False
    sequential = confidence is None or (share(confidence) and 0.5 < confidence < 1)
    return bool(sequential and rate - margin > 0)


def _results(record: dict[str, Any], where: str) -> list[dict[str, Any]]:
    from pytest_harness.errors import ReportError

    results = record.get("results")
    if not isinstance(results, list):
        raise ReportError(f"{where}: 'results' expected each case's result, a list")
    for number, result in enumerate(results):
        fine = (
            isinstance(result, dict)
            and all(key in result for key in _RESULT_KEYS)
            and isinstance(result["index"], int)
            and not isinstance(result["index"], bool)
            and result["result"] in ("pass", "fail", None)
            and all(isinstance(result[k], (str, type(None))) for k in ("case", "test", "reason"))
        )
        if not fine:
            raise ReportError(
                f"{where}: results[{number}] expected index, case, test, result (pass, fail "
                f"or null) and reason, got {result!r:.80}"
            )
    return [{key: r[key] for key in _RESULT_KEYS} for r in results]


def failing(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The gates that fail the run: failed, or inconclusive counted as failing."""
    return [
        r
        for r in records
        if r["outcome"] == "fail"
        or (
            r["outcome"] == "inconclusive" and (r["sequential"] or {}).get("inconclusive") == "fail"
        )
    ]


def gates_table(records: Sequence[Mapping[str, Any]]) -> str:
    """One row per gate: its cases counted, rate, interval, what it needs, the outcome, and
    the first failing case."""
    rows = []
    for r in records:
        interval, rate = r["interval"], r["pass_rate"]
        first = r["failures"][0] if r["failures"] else None
        rows.append(
            [
                r["test"],
                f"{r['passes']}/{r['ran']}"
                + (f" ({r['excluded']} not counted)" if r["excluded"] else ""),
                "-" if rate is None else samples.percent(rate),
                "-" if interval is None else samples.interval_cell(interval, r["confidence"]),
                samples.needs_cell(r),
                samples.outcome_cell(r),
                clip(f"{first['case']}: {first['reason']}", 60) if first else "-",
            ]
        )
    headers = ["dataset gate", "passed", "rate", "CI", "needs", "outcome", "first failing case"]
    return tabulate(rows, headers=headers)


def finish(session: pytest.Session, values: Sequence[str]) -> list[dict[str, Any]]:
    """At the session's end: the gates' records, handed to the session's report if one is
    written; a failing gate fails the run."""
    records = gates(values)
    report = session.config.pluginmanager.get_plugin("harness-report")
    if report is not None:
        report.data["datasets"] = records
    if failing(records) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return records


def summary(terminal: Any, records: Sequence[Mapping[str, Any]]) -> None:
    """The gates' table, then a line for each gate that failed the run."""
    terminal.write_sep("=", "pytest-harness dataset gates")
    terminal.write_line(gates_table(records))
    for r in failing(records):
        terminal.write_line(f"FAILED dataset gate {r['test']}: {r['summary']}", red=True, bold=True)
