"""Merging the JSON reports of several pytest runs (CI shards, machines) into one report."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_harness import _statistics as statistics
from pytest_harness._datasets import sampling as samples
from pytest_harness._datasets.gate import pool as pool_gates
from pytest_harness._pytest_glue import watch as spend
from pytest_harness._report import session, tribunals
from pytest_harness._report.text import OUTCOME
from pytest_harness._statistics import Sprt
from pytest_harness.errors import ReportError

Record = dict[str, Any]
REPORT = "report"  # the key naming the report a kept or pooled record came from
MERGED_FROM = "merged_from"  # a pooled samples record: each report's share of its samples
VOLATILE = ("time", "latency_s")  # wall times, at any depth: they differ run to run
SAMPLED_OUTCOMES = {"pass": "passed", "fail": "failed"}
INCONCLUSIVE_OUTCOMES = {"fail": "failed", "xfail": "xfailed", "pass": "passed"}
SEVERITY = ("error", "failed", "xpassed", "xfailed", "passed", "skipped")
REQUIRED = ("tests", "tribunals")  # every report ever written has these (others may be new)
FIX = "pass the JSON files written by pytest --harness-report=PATH.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    """The same test in several reports with different outcomes or records.

    Attributes:
        test: the test's node id.
        reports: the reports that hold it, in the order given.
        differs: what differs, one line each.
    """

    test: str
    reports: tuple[str, ...]
    differs: tuple[str, ...]

    def message(self) -> str:
        """``tests/t.py::test_a in a.json, b.json: outcome: passed (a.json), ...``."""
        return f"{self.test} in {', '.join(self.reports)}: {'; '.join(self.differs)}"

    def record(self) -> Record:
        return {"test": self.test, "reports": list(self.reports), "differs": list(self.differs)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """Reports merged into one.

    Attributes:
        data: the merged report's dict (``session.contents``' keys, and ``conflicts``).
        conflicts: the conflicting duplicates found.
        reports: how many reports were merged.
    """

    data: dict[str, Any]
    conflicts: tuple[Conflict, ...]
    reports: int


@dataclass(frozen=True, slots=True)
class _Part:
    """One report's account of one test: its outcome and its records in each section."""

    report: str
    outcome: str | None
    records: dict[str, list[Record]]


def sections() -> list[str]:
    """The report's sections of records, as the session report writes them."""
    return [s.key for s in session.SECTIONS]


def load(path: Path) -> dict[str, Any]:
    """Read one JSON report, checked (``check``).

    Raises:
        ReportError: the file is missing, is not JSON, or is not a harness report.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file; {FIX}.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path} cannot be read ({error}); {FIX}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(f"{path} is not JSON ({error}); {FIX}.") from None
    data = _matrix_cells(data, str(path))
    check(data, str(path))
    return dict(data)


def _matrix_cells(data: Any, name: str) -> Any:
    """A report with its ``matrix`` (written as rows of tests by model) as the cells it was
    made of, one record per test copy, so that they merge as any section's records do."""
    if not isinstance(data, Mapping) or not isinstance(data.get("matrix"), dict):
        return data
    pivoted = data["matrix"]
    rows = pivoted.get("rows", [])
    good = isinstance(rows, list) and all(
        isinstance(row, dict) and isinstance(row.get("cells"), dict) for row in rows
    )
    if not good:
        said = _expected("rows, each with its cells by model", rows)
        raise ReportError(f"{name}: 'matrix' {said}; {FIX}.")
    return {**data, "matrix": [cell for row in rows for cell in row["cells"].values()]}


def check(data: Any, name: str) -> None:
    """Check that ``data`` is a harness report, as far as merging reads it.

    Raises:
        ReportError: naming the report, the key and what was expected there.
    """
    if not isinstance(data, dict):
        raise ReportError(f"{name} is not a pytest-harness report: {_expected('an object', data)}")
    for key in REQUIRED:
        if key not in data:
            said = f"expected the key {key!r} (keys found: {', '.join(map(repr, data)) or 'none'})"
            raise ReportError(f"{name} is not a pytest-harness report: {said}; {FIX}.")
    for key in ("tests", *sections()):
        for index, record in enumerate(_list(data, key, name)):
            _check_record(key, record, f"{name}: {key}[{index}]")
    for index, conflict in enumerate(_list(data, "conflicts", name)):
        if not isinstance(conflict, dict):
            said = _expected("an object", conflict)
            raise ReportError(f"{name}: conflicts[{index}] {said}; {FIX}.")


def _list(data: Mapping[str, Any], key: str, name: str) -> list[Any]:
    found = data.get(key, [])
    if not isinstance(found, list):
        raise ReportError(f"{name}: {key!r} {_expected('a list of records', found)}; {FIX}.")
    return found


def _check_record(key: str, record: Any, where: str) -> None:
    if not isinstance(record, dict):
        raise ReportError(f"{where} {_expected('an object', record)}; {FIX}.")
    _need(record, "test", (str,) if key == "tests" else (str, type(None)), where)
    _CHECKS.get(key, _nothing)(record, where)


def _nothing(record: Record, where: str) -> None:
    """Records merging copies without reading them."""


def _check_test(record: Record, where: str) -> None:
    _need(record, "outcome", (str,), where)


def _check_tribunal(record: Record, where: str) -> None:
    _need(record, "tribunal", (str,), where)
    for index, vote in enumerate(_need(record, "votes", (list,), where)):
        if not isinstance(vote, dict):
            raise ReportError(f"{where}: votes[{index}] {_expected('an object', vote)}; {FIX}.")
        _need(vote, "passed", (bool, type(None)), f"{where}: votes[{index}]")


def _check_usage(record: Record, where: str) -> None:
    for key in ("calls", "tokens"):
        _need(record, key, (int,), where)
    for key in _USAGE_COUNTS:
        if key in record:
            _need(record, key, (int,), where)
    _need(record, "cost", (int, float, type(None)), where)
    models = record.get("models", {})
    if not isinstance(models, dict) or not all(_is(n, (int,)) for n in models.values()):
        raise ReportError(f"{where}: 'models' {_expected('model: calls', models)}; {FIX}.")


def _check_samples(record: Record, where: str) -> None:
    counts = [_need(record, key, (int,), where) for key in ("samples", "ran", "passes")]
    failures = _need(record, "failures", (list,), where)
    if not 0 <= counts[2] <= counts[1] <= counts[0] or counts[1] - counts[2] != len(failures):
        said = "0 <= passes <= ran <= samples, and ran - passes failures"
        counts.append(len(failures))
        raise ReportError(
            f"{where}: samples, ran, passes, failures {_expected(said, counts)}; {FIX}."
        )
    _need(record, "outcome", (str,), where)
    rate = _need(record, "required", (int, float), where)
    confidence = _need(record, "confidence", (int, float), where)
    if not (0 <= rate <= 1 and 0 < confidence < 1):
        said = "0 <= required <= 1 and 0 < confidence < 1"
        raise ReportError(f"{where} {_expected(said, [rate, confidence])}; {FIX}.")
    for index, failure in enumerate(failures):
        _check_failure(failure, f"{where}: failures[{index}]")
    shares = record.get(MERGED_FROM, [])
    if not isinstance(shares, list) or not all(isinstance(s, dict) for s in shares):
        said = _expected("a list of objects", shares)
        raise ReportError(f"{where}: {MERGED_FROM!r} {said}; {FIX}.")
    stopped = _need(record, "stopped", (dict, type(None)), where)
    if stopped is not None:
        _check_failure(stopped, f"{where}: stopped")
    sequential = _need(record, "sequential", (dict, type(None)), where)
    if sequential is not None:
        _check_sequential(sequential, rate, f"{where}: sequential")


def _check_failure(failure: Any, where: str) -> None:
    if not isinstance(failure, dict):
        raise ReportError(f"{where} {_expected('an object', failure)}; {FIX}.")
    _need(failure, "sample", (int,), where)
    _need(failure, "reason", (str,), where)


def _check_sequential(sequential: Record, rate: float, where: str) -> None:
    margin = _need(sequential, "margin", (int, float), where)
    if not 0 < margin < rate:
        said = f"a number between 0 and the required rate {rate}"
        raise ReportError(f"{where}: 'margin' {_expected(said, margin)}; {FIX}.")
    policy = _need(sequential, "inconclusive", (str,), where)
    if policy not in INCONCLUSIVE_OUTCOMES:
        said = " or ".join(map(repr, INCONCLUSIVE_OUTCOMES))
        raise ReportError(f"{where}: 'inconclusive' {_expected(said, policy)}; {FIX}.")
    decided = sequential.get("decided")
    if decided not in (None, "pass", "fail"):
        raise ReportError(f"{where}: 'decided' {_expected('pass, fail or null', decided)}.")


_USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens")
_CHECKS: dict[str, Callable[[Record, str], None]] = {
    "tests": _check_test,
    "tribunals": _check_tribunal,
    "usage": _check_usage,
    "samples": _check_samples,
}


def _need(record: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str) -> Any:
    """``record[key]``, which must be one of ``kinds`` (a bool is no int here)."""
    if key not in record:
        raise ReportError(f"{where}: expected the key {key!r}; {FIX}.")
    value = record[key]
    if not _is(value, kinds):
        said = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ReportError(f"{where}: {key!r} {_expected(said, value)}; {FIX}.")
    return value


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds) and value == value  # NaN is no number of a report


def _expected(what: str, got: Any) -> str:
    shown = json.dumps(got, default=repr)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return f"expected {what}, got {shown} ({type(got).__name__})"


def merge(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> Merged:
    """Merge reports (each a name, for messages and marks, and its checked dict; see the
    module for what is merged how).

    Raises:
        ReportError: a report that is not one (``check``).
    """
    reports = [(name, _matrix_cells(data, name)) for name, data in reports]
    for name, data in reports:
        check(data, name)
    keys = sections()
    by_test: dict[str, list[_Part]] = {}
    for name, data in reports:
        for test, part in _parts(name, data, keys):
            by_test.setdefault(test, []).append(part)
    out: dict[str, Any] = {key: [] for key in (*keys, "tests")}
    conflicts = []
    for test, parts in by_test.items():
        found = _merge_test(test, parts, out)
        conflicts += [found] if found is not None else []
    gates, clashes = pool_gates([(name, _list(data, "datasets", name)) for name, data in reports])
    out["datasets"] = gates
    conflicts += [Conflict(test=g, reports=both, differs=(said,)) for g, both, said in clashes]
    full = session.contents(out)
    earlier = [c for _, data in reports for c in data.get("conflicts") or []]
    full["conflicts"] = earlier + [c.record() for c in conflicts]
    return Merged(data=full, conflicts=tuple(conflicts), reports=len(reports))


def _parts(name: str, data: Mapping[str, Any], keys: Sequence[str]) -> Iterator[tuple[str, _Part]]:
    """Each test of one report (in the order first named) with its records."""
    outcomes: dict[str, str | None] = {}
    for entry in data["tests"]:
        outcomes.setdefault(entry["test"], entry["outcome"])
    records: dict[str, dict[str, list[Record]]] = {}
    for key in keys:
        for record in data.get(key, []):
            test = str(record["test"])  # a record of no test (None) is the test "None"
            outcomes.setdefault(test, None)
            records.setdefault(test, {}).setdefault(key, []).append(record)
    for test, outcome in outcomes.items():
        yield test, _Part(name, outcome, records.get(test, {}))


def _merge_test(test: str, parts: list[_Part], out: dict[str, Any]) -> Conflict | None:
    """Add one test's merged records to ``out``; the conflict it is, or None."""
    versions = _distinct(parts)
    if len(versions) == 1:
        _emit(out, test, versions[0], mark=False)
        return None
    if _poolable(versions):
        _emit(out, test, _pool(test, versions), mark=False)
        return None
    for part in versions:
        _emit(out, test, part, mark=True)
    reports = tuple(dict.fromkeys(p.report for p in parts))
    return Conflict(test=test, reports=reports, differs=tuple(_differences(versions)))


def _distinct(parts: list[_Part]) -> list[_Part]:
    """The parts that differ (wall times aside), each version once, first seen first."""
    seen: dict[str, _Part] = {}
    for part in parts:
        seen.setdefault(_comparable(part), part)
    return list(seen.values())


def _comparable(part: _Part) -> str:
    records = {key: [_steady(r) for r in rows] for key, rows in part.records.items() if rows}
    return json.dumps([part.outcome, records], sort_keys=True, default=repr)


def _steady(value: Any) -> Any:
    """``value`` without its wall times (``VOLATILE`` keys, at any depth)."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _emit(out: dict[str, Any], test: str, part: _Part, *, mark: bool) -> None:
    """Add a part's records and test entry to ``out``; ``mark``: each names its report."""
    extra = {REPORT: part.report} if mark else {}
    for key, rows in part.records.items():
        out[key] += [{**r, **extra} for r in rows]
    if part.outcome is not None:
        out["tests"].append({"test": test, "outcome": part.outcome, **extra})


def _poolable(parts: list[_Part]) -> bool:
    """Every part holds one samples record, all with the same settings."""
    found = [p.records.get("samples", []) for p in parts]
    if any(len(rows) != 1 for rows in found):
        return False
    return len({json.dumps(_settings(rows[0]), sort_keys=True) for rows in found}) == 1


def _settings(record: Record) -> list[Any]:
    sequential = record["sequential"] or {}
    kept = [sequential.get(k) for k in ("method", "margin", "inconclusive")]
    return [record["required"], record["confidence"], *kept]


def _pool(test: str, parts: list[_Part]) -> _Part:
    """One part holding the pooled samples record and every part's other records."""
    pooled = pool_samples(test, [(p.report, p.records["samples"][0]) for p in parts])
    outcome = _pooled_outcome(pooled, parts)
    pooled[OUTCOME] = outcome
    records: dict[str, list[Record]] = {"samples": [pooled]}
    for part in parts:
        for key, rows in part.records.items():
            if key != "samples":
                marked = [{**r, OUTCOME: outcome, REPORT: r.get(REPORT, part.report)} for r in rows]
                records.setdefault(key, []).extend(marked)
    if "usage" in records:
        records["usage"] = [add_usage(records["usage"])]
    return _Part("pooled", outcome, records)


def pool_samples(test: str, shares: Sequence[tuple[str, Record]]) -> Record:
    """One sampled test's records from several reports, pooled: counts added, the rate,
    interval, pass^k and outcome computed again from them (the plugin's own ``Sampling``)."""
    first = shares[0][1]
    sequential = first["sequential"]
    sprt = _sprt(first)
    failures = [_from(f, name) for name, r in shares for f in r["failures"]]
    stops = [_from(r["stopped"], name) for name, r in shares if r["stopped"]]
    passes = sum(r["passes"] for _, r in shares)
    sampling = samples.Sampling(
        count=sum(r["samples"] for _, r in shares),
        pass_rate=first["required"],
        sprt=sprt,
        inconclusive=sequential["inconclusive"] if sequential else "fail",
        ran=sum(r["ran"] for _, r in shares),
        failures=[samples.SampleFailure(f["sample"], f["reason"], "") for f in failures],
    )
    sampling.decided = None if sprt is None else sprt.decide(passes, len(failures))
    pooled = sampling.record(test)
    pooled.update(failures=failures, stopped=stops[0] if stops else None)
    pooled["outcome"] = _sample_outcome(sampling, sprt, stopped=bool(stops))
    if sprt is not None and sequential is not None:
        more = (
            sprt.more_needed(passes, len(failures)) if pooled["outcome"] == "inconclusive" else None
        )
        pooled["sequential"] = {**pooled["sequential"], "more_needed": more}
    pooled[MERGED_FROM] = [s for name, r in shares for s in _shares(name, r)]
    return pooled


def _sprt(record: Record) -> Sprt | None:
    sequential = record["sequential"]
    if sequential is None:
        return None
    rate, confidence = record["required"], record["confidence"]
    return Sprt(pass_rate=rate, confidence=confidence, margin=sequential["margin"])


def _from(failure: Record, name: str) -> Record:
    """A failed (or stopping) sample, its number kept, naming its report."""
    return {**failure, REPORT: failure.get(REPORT, name)}


def _sample_outcome(sampling: samples.Sampling, sprt: Sprt | None, *, stopped: bool) -> str:
    """Pass or fail; a sequential test the pooled counts do not decide is inconclusive."""
    if stopped:
        return "fail"  # a sample that stopped its run: the test cannot run as written
    if sprt is None:
        return (
            "pass"
            if sampling.passes >= statistics.required(sampling.pass_rate, sampling.count)
            else "fail"
        )
    return sampling.decided or "inconclusive"


def _shares(name: str, record: Record) -> list[Record]:
    """Which report ran how many of a pooled test's samples (a pooled record: its shares)."""
    if record.get(MERGED_FROM):
        return list(record[MERGED_FROM])
    counts: Record = {k: record[k] for k in ("samples", "ran", "passes", "outcome")}
    return [{REPORT: name, **counts}]


def _pooled_outcome(pooled: Record, parts: list[_Part]) -> str:
    """The pooled test's outcome: what its pooled samples say, when each part's outcome was
    what its own samples said; otherwise (an xfail marker, a teardown error) the parts'
    most severe outcome."""
    said = _said(pooled)
    if all(p.outcome == _said(p.records["samples"][0]) for p in parts):
        return said
    found = {p.outcome for p in parts if p.outcome is not None} or {said}
    return min(found, key=lambda o: SEVERITY.index(o) if o in SEVERITY else 0)


def _said(record: Record) -> str:
    """The test outcome a samples record alone gives."""
    if record["outcome"] == "inconclusive":
        return INCONCLUSIVE_OUTCOMES[(record["sequential"] or {}).get("inconclusive", "fail")]
    return SAMPLED_OUTCOMES.get(record["outcome"], "failed")


def add_usage(records: Sequence[Record]) -> Record:
    """One test's usage records added: calls, tokens, cost (None while none is priced) and
    each model's calls."""
    total = {**records[0]}
    for key in ("calls", "tokens", *_USAGE_COUNTS):
        if key in total:
            total[key] = sum(r.get(key, 0) for r in records)
    costs = [r["cost"] for r in records if r.get("cost") is not None]
    total["cost"] = sum(costs) if costs else None
    models: dict[str, int] = {}
    for record in records:
        for model, calls in (record.get("models") or {}).items():
            models[model] = models.get(model, 0) + calls
    total["models"] = models
    total.pop(REPORT, None)
    return total


def _differences(versions: list[_Part]) -> list[str]:
    """What differs between a test's versions, one line each, against the first one."""
    first, found = versions[0], []
    for other in versions[1:]:
        if other.outcome != first.outcome:
            found.append(
                f"outcome: {first.outcome} ({first.report}), {other.outcome} ({other.report})"
            )
        for key in sorted(set(first.records) | set(other.records)):
            found += _section_differences(key, first, other)
    return list(dict.fromkeys(found)) or ["records"]


def _section_differences(key: str, first: _Part, other: _Part) -> list[str]:
    mine, theirs = first.records.get(key, []), other.records.get(key, [])
    if len(mine) != len(theirs):
        return [f"{key}: {len(mine)} records ({first.report}), {len(theirs)} ({other.report})"]
    keys: set[str] = set()
    for one, two in zip(mine, theirs, strict=True):
        a, b = _steady(one), _steady(two)
        keys |= {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    if not keys:
        return []
    return [f"{key}: {', '.join(sorted(keys))} ({first.report} and {other.report})"]


def sampling(record: Record) -> samples.Sampling:
    """A samples record as the plugin's ``Sampling`` (its failures' full accounts aside)."""
    stopped, sequential = record["stopped"], record["sequential"]
    return samples.Sampling(
        count=record["samples"],
        pass_rate=record["required"],
        sprt=_sprt(record),
        inconclusive=sequential["inconclusive"] if sequential else "fail",
        ran=record["ran"],
        failures=[samples.SampleFailure(f["sample"], f["reason"], "") for f in record["failures"]],
        stop=samples.SampleFailure(stopped["sample"], stopped["reason"], "") if stopped else None,
        decided=sequential.get("decided") if sequential else None,
        alike=bool(record.get("alike")),
    )


OUTPUTS = (".json", ".html", ".htm", ".xml")


def check_output(path: Path) -> None:
    """Raises ReportError unless ``path`` names an output the merge can write."""
    if path.suffix.lower() not in OUTPUTS:
        said = ", ".join(OUTPUTS)
        raise ReportError(
            f"{path}: cannot tell what to write from its extension {path.suffix or '(none)'!r}; "
            f"name the output with one of {said} (JSON, the HTML page, JUnit XML)."
        )


def write(path: Path, merged: Merged) -> None:
    """Write the merged report to ``path``: JSON, HTML or JUnit XML by its extension.

    Raises:
        ReportError: an unknown extension, a file that cannot be written, or records that
            cannot be drawn (a report's record lacks what the page or a property shows).
    """
    check_output(path)
    try:
        if path.suffix.lower() == ".xml":
            _write_junit(path, merged.data)
        else:
            session.write_contents(path, merged.data)
    except OSError as error:
        raise ReportError(f"{path} cannot be written ({error}); choose another path.") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        said = f"{type(error).__name__}: {error}"
        raise ReportError(
            f"{path}: a record of the merged reports lacks what this output shows ({said}); "
            "write .json instead, or merge reports written by this version of pytest-harness."
        ) from None


def junit(data: Mapping[str, Any]) -> ET.Element:
    """The merged report as JUnit XML: a test case per ``tests`` entry, carrying the
    properties the plugin gives it under ``--junitxml`` (from the same functions), and its
    outcome as pytest's JUnit XML says it. A conflicting version's case also names its
    report (``harness_report``)."""
    found: dict[str, list[tuple[str, Record]]] = {}
    for key in sections():
        for record in data.get(key, []):
            found.setdefault(str(record["test"]), []).append((key, record))
    tests = data["tests"]
    cases = [_case(entry, found.get(entry["test"], [])) for entry in tests]
    outcomes = [entry["outcome"] for entry in tests]
    suite = ET.Element(
        "testsuite",
        name="pytest-harness merge",
        tests=str(len(cases)),
        failures=str(outcomes.count("failed")),
        errors=str(outcomes.count("error")),
        skipped=str(outcomes.count("skipped") + outcomes.count("xfailed")),
    )
    suite.extend(cases)
    root = ET.Element("testsuites")
    root.append(suite)
    return root


def properties(key: str, record: Record) -> list[tuple[str, str]]:
    """A record's JUnit properties, as the plugin writes them for its test."""
    plain = {k: v for k, v in record.items() if k != OUTCOME}
    if key == "tribunals":
        return tribunals.junit_properties(plain)
    if key == "usage":
        return spend.junit_properties(plain)
    whole = (_PROPERTIES[key], json.dumps(plain, sort_keys=True))
    if key == "samples":
        return [whole, (samples.LINE_PROPERTY, sampling(plain).summary())]
    return [whole]


_PROPERTIES = {s.key: s.property for s in session.SECTIONS}


def _case(entry: Record, records: list[tuple[str, Record]]) -> ET.Element:
    classname, name = _names(entry["test"])
    case = ET.Element("testcase", classname=classname, name=name)
    mark = entry.get(REPORT)
    shown = [([(REPORT_PROPERTY, str(mark))] if mark is not None else [])]
    shown += [properties(k, r) for k, r in records if mark is None or r.get(REPORT) == mark]
    if any(shown):
        listed = ET.SubElement(case, "properties")
        for name, value in (pair for pairs in shown for pair in pairs):
            ET.SubElement(listed, "property", name=name, value=value)
    _outcome(case, entry["outcome"])
    return case


REPORT_PROPERTY = "harness_report"


def _names(nodeid: str) -> tuple[str, str]:
    """A node id as pytest's JUnit XML names it: ``a/test_b.py::C::test_d[1]`` is class
    ``a.test_b.C``, test ``test_d[1]``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _outcome(case: ET.Element, outcome: str) -> None:
    """pytest's elements: ``failure``, ``error``, ``skipped`` (an xfail's typed so)."""
    said = f"{outcome} (merged report: the failure's text is in the job that ran it)"
    if outcome == "failed":
        ET.SubElement(case, "failure", message=said)
    elif outcome == "error":
        ET.SubElement(case, "error", message=said)
    elif outcome == "skipped":
        ET.SubElement(case, "skipped", type="pytest.skip", message=said)
    elif outcome == "xfailed":
        ET.SubElement(case, "skipped", type="pytest.xfail", message=said)


def _write_junit(path: Path, data: Mapping[str, Any]) -> None:
    tree = ET.ElementTree(junit(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tree.write(temporary, encoding="utf-8", xml_declaration=True)
    os.replace(temporary, path)
