"""``python -m pytest_harness merge``: the JSON reports of several runs merged into one.

Real pytest runs (subprocesses) write the reports: tribunals judged by a scripted model on
loopback, sampled tests, and plain harness tests. Disjoint runs merged must give the
figures of one run over all their tests; a sampled test split across two runs (a counter
file decides which samples fail) must be pooled, its interval the Wilson interval of the
pooled counts (worked out here from the formula); the command is run as users run it.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from browser import parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_harness._report import merge
from pytest_harness.errors import ReportError
from pytest_harness.testing import LoopbackServer, Reply

CONFTEST = """
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

SCHEMA = {{
    "type": "object",
    "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
    "required": ["pass", "reason"],
}}


class Lenient(Agent):
    model = "openai/loopback"
    params = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}
    output = SCHEMA
    instructions = "You are a lenient judge of support replies."


class Strict(Lenient):
    instructions = "You are a strict judge of support replies."


class Quality(Tribunal):
    agents = [Lenient, Strict, Lenient]

    @rule("majority", may_fail=1)
    def passed(result):
        return result.processed["pass"]


class Kind(Tribunal):
    agents = [Lenient, Lenient]
"""


def judge(body: dict[str, Any]) -> Reply:
    """Lenient judges pass anything polite; strict ones fail everything."""
    system = body["messages"][0]["content"]
    passed = "rude" not in body["messages"][-1]["content"] and "strict" not in system
    reason = "polite and helpful" if passed else "too curt for a customer"
    return Reply(content=json.dumps({"pass": passed, "reason": reason}))


FIRST = """
import pytest
from conftest import Kind, Quality

pytestmark = pytest.mark.harness(cassette=False)

def test_polite(harness):
    harness.assert_verdict(Quality, "Thanks for waiting, it ships today.")

def test_rude(harness):
    harness.assert_verdict(Quality, "Go away, rude customer.")

@pytest.mark.harness(samples=10, pass_rate=0.8)
def test_sampled_tribunal(harness):
    harness.assert_verdict(Kind, "Happy to help." if harness.sample != 4 else "rude")

def test_plain():
    assert True
"""

SECOND = """
import pytest
from conftest import Kind, Quality

pytestmark = pytest.mark.harness(cassette=False)

def test_kind(harness):
    harness.assert_verdict(Kind, "You are welcome.")

@pytest.mark.harness(samples=10, pass_rate=0.8)
def test_below_rate(harness):
    assert harness.sample not in (2, 5, 9), f"sample {harness.sample} was rude"

def test_plain_harness(harness):
    assert harness.sample is None
"""


@pytest.fixture
def judges() -> Iterator[LoopbackServer]:
    with LoopbackServer(handler=judge) as server:
        yield server


@pytest.fixture
def suite(pytester: pytest.Pytester, judges: LoopbackServer) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.format(url=judges.url))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    return pytester


def run(suite: pytest.Pytester, report: str, *args: str) -> dict[str, Any]:
    suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", *args, f"--harness-report={report}"
    )
    return dict(json.loads((suite.path / report).read_text()))


def command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_harness ...`` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def steady(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Records comparable across runs: wall times (a run's, a vote's) left out, in one order."""
    return sorted(json.dumps(untimed(r), sort_keys=True) for r in records)


def untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("time", "latency_s")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def test_disjoint_runs_merge_into_the_figures_of_one_run(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_first=FIRST, test_second=SECOND)
    first = run(suite, "first.json", "test_first.py")
    second = run(suite, "second.json", "test_second.py")
    whole = run(suite, "whole.json")
    done = command(suite.path, "merge", "first.json", "second.json", "--output", "merged.json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "merged 2 reports (5 tests) into merged.json" in done.stdout
    merged = json.loads((suite.path / "merged.json").read_text())
    # The plain tests (with the harness fixture or not) made no records: not in the report.
    assert (len(first["tests"]), len(second["tests"])) == (3, 2)
    assert sorted(merged["tests"], key=str) == sorted(whole["tests"], key=str)
    for key in ("samples", "tribunals", "usage", "runs", "app_calls", "drift", "calibrations"):
        assert steady(merged[key]) == steady(whole[key]), key
    assert merged["agreement"] == whole["agreement"]
    assert {row["tribunal"] for row in merged["agreement"]} == {"Quality", "Kind"}
    for key in ("calls", "tokens"):
        assert sum(u[key] for u in merged["usage"]) == sum(u[key] for u in whole["usage"]) > 0
    assert merged["conflicts"] == []
    again = merge.merge([("merged.json", merged)]).data  # a merged report merges again
    assert again == merged


SPLIT = """
import pathlib
import pytest
from conftest import Kind, Quality

pytestmark = pytest.mark.harness(cassette=False)

def count(name):
    path = pathlib.Path(name)
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n

@pytest.mark.harness(samples=10, pass_rate=0.8)
def test_split():
    assert count("fixed") not in (3, 12, 15, 18)

@pytest.mark.harness(samples=15, pass_rate=0.8, confidence=0.95, inconclusive="xfail")
def test_split_sequential():
    assert count("sequential") != 2

def test_same(harness):
    harness.assert_verdict(Quality, "Thanks for waiting, it ships today.")

def test_flaky(harness):
    harness.assert_verdict(Kind, "You are welcome.")
    assert count("flaky") == 1, "failed on the second run"
"""


def wilson(passes: int, count: int, confidence: float) -> tuple[float, float]:
    """Wilson's score interval, from its formula: (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) /
    (1 + z²/n)."""
    z = statistics.NormalDist().inv_cdf((1 + confidence) / 2)
    p, n = passes / count, count
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def test_a_sampled_test_split_across_runs_is_pooled(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_split=SPLIT)
    one, two = run(suite, "one.json"), run(suite, "two.json")
    done = command(suite.path, "merge", "one.json", "two.json", "-o", "merged.json")
    assert done.returncode == 0, done.stderr
    merged = json.loads((suite.path / "merged.json").read_text())
    rows = {r["test"].split("::")[1]: r for r in merged["samples"]}
    alone = [{r["test"].split("::")[1]: r for r in run["samples"]} for run in (one, two)]
    assert [a["test_split"]["passes"] for a in alone] == [9, 7]  # 9/10 passed, 7/10 failed
    assert [a["test_split"]["outcome"] for a in alone] == ["pass", "fail"]
    fixed = rows["test_split"]
    assert (fixed["samples"], fixed["ran"], fixed["passes"]) == (20, 20, 16)
    assert fixed["pass_rate"] == 16 / 20
    assert fixed["interval"] == pytest.approx(wilson(16, 20, 0.95), abs=1e-6)
    assert fixed["outcome"] == "pass"  # 16 of 20 reach 80%
    assert fixed["pass_k"]["2"] == pytest.approx(16 * 15 / (20 * 19), abs=1e-6)
    assert [(f["sample"], f["report"]) for f in fixed["failures"]] == [
        (3, "one.json"),
        (2, "two.json"),
        (5, "two.json"),
        (8, "two.json"),
    ]
    assert [(s["report"], s["ran"], s["passes"]) for s in fixed["merged_from"]] == [
        ("one.json", 10, 9),
        ("two.json", 10, 7),
    ]
    # Sequential: 14/15 then 15/15, each undecided (xfailed); pooled, 29 passes and 1
    # failure: the SPRT's log likelihood ratio 29 ln(.85/.75) + ln(.15/.25) = 3.119 reaches
    # ln(1 / .05) = 2.996, so the pooled samples decide it passes.
    sequential = rows["test_split_sequential"]
    assert [a["test_split_sequential"]["outcome"] for a in alone] == ["inconclusive"] * 2
    assert 29 * math.log(0.85 / 0.75) + math.log(0.15 / 0.25) >= math.log(1 / 0.05)
    assert (sequential["ran"], sequential["passes"], sequential["outcome"]) == (30, 29, "pass")
    assert sequential["sequential"]["decided"] == "pass"
    assert sequential["interval"] == pytest.approx(wilson(29, 30, 0.95), abs=1e-6)
    outcomes = {t["test"].split("::")[1]: t["outcome"] for t in merged["tests"]}
    assert outcomes["test_split"] == outcomes["test_split_sequential"] == "passed"
    # The identical duplicate kept once, the conflicting one kept twice, marked.
    assert [t["test"].split("::")[1] for t in merged["tests"]].count("test_same") == 1
    same = [r for r in merged["tribunals"] if r["test"].endswith("test_same")]
    assert len(same) == 1
    assert "report" not in same[0]
    flaky = [t for t in merged["tests"] if t["test"].endswith("test_flaky")]
    assert [(t["outcome"], t["report"]) for t in flaky] == [
        ("passed", "one.json"),
        ("failed", "two.json"),
    ]
    (conflict,) = merged["conflicts"]
    assert conflict["test"] == "test_split.py::test_flaky"
    assert conflict["reports"] == ["one.json", "two.json"]
    assert conflict["differs"][0] == "outcome: passed (one.json), failed (two.json)"
    assert "conflict: test_split.py::test_flaky in one.json, two.json: outcome" in done.stderr
    strict = command(suite.path, "merge", "one.json", "two.json", "-o", "s.json", "--strict")
    assert strict.returncode == 1
    assert "--strict: failing on the conflicts above" in strict.stderr
    assert json.loads((suite.path / "s.json").read_text()) == merged
    check_html(suite.path)
    check_junit(suite.path)


def check_html(where: Path) -> None:
    done = command(where, "merge", "one.json", "two.json", "--output", "merged.html")
    assert done.returncode == 0, done.stderr
    page = parse((where / "merged.html").read_text())
    rows = page.find("section", id="samples").find_all("tr")
    found = {
        cells[0]: cells for cells in ([td.text for td in r.find_all("td")] for r in rows) if cells
    }
    assert found["test_split.py::test_split"][1:4] == ["16/20", "80.0%", "58.4% - 91.9% (95.0%)"]
    counts = page.find("section", id="summary")
    # 4 tests: test_flaky, kept twice (once per report), counts once, as a conflict.
    tests = counts.find("li", data_key="tests")
    assert tests.attrs["data-count"] == "4"
    assert tests.find("span", "split").text == "1 conflict, 3 passed"
    assert counts.find("li", data_key="conflicts").attrs["data-count"] == "1"
    (row,) = (
        page.find("section", id="conflicts").find("table", "conflicts").find_all("tr", "conflict")
    )
    said = [td.text for td in row.find_all("td")]
    assert said[:2] == ["test_split.py::test_flaky", "one.json, two.json"]
    assert "outcome: passed (one.json), failed (two.json)" in said[2]
    assert row.attrs["data-outcome"] == "conflict"
    assert page.find("nav").find("a").attrs["href"] == "#conflicts"  # first on the page


def check_junit(where: Path) -> None:
    done = command(where, "merge", "one.json", "two.json", "--output", "junit/merged.xml")
    assert done.returncode == 0, done.stderr
    cases = list(ET.parse(where / "junit" / "merged.xml").iter("testcase"))
    named = [(c.get("classname"), c.get("name")) for c in cases]
    assert ("test_split", "test_split") in named
    props = {
        (c.get("name"), c.findtext("properties/property[@name='harness_report']")): {
            p.get("name"): p.get("value") for p in c.iter("property")
        }
        for c in cases
    }
    split = props[("test_split", None)]
    assert split["harness_pass_rate"] == "16/20 passed (80%, 95% CI 58.4%-91.9%), needs 16"
    assert json.loads(split["harness_samples"])["passes"] == 16
    assert props[("test_same", None)]["harness_verdict"] == "Quality: pass"
    assert props[("test_same", None)]["harness_votes"] == "2/3"
    assert int(props[("test_same", None)]["harness_tokens"]) > 0
    flaky = [c for c in cases if c.get("name") == "test_flaky"]
    assert [c.find("failure") is not None for c in flaky] == [False, True]


def report(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return path.name


SAMPLED = {
    "test": "t.py::test_s",
    "samples": 10,
    "ran": 10,
    "passes": 8,
    "pass_rate": 0.8,
    "required": 0.8,
    "interval": [0.49, 0.943],
    "confidence": 0.95,
    "outcome": "pass",
    "pass_k": {"1": 0.8},
    "failures": [{"sample": 3, "reason": "AssertionError"}, {"sample": 7, "reason": "no"}],
    "stopped": None,
    "sequential": None,
    "test_outcome": "passed",
}
VOTE = {"agent": "A", "passed": True, "reason": "ok", "time": 0.1}
TRIBUNAL = {
    "test": "t.py::test_t",
    "tribunal": "Q",
    "outcome": "pass",
    "votes": [VOTE, VOTE],
    "votes_passed": 2,
    "votes_cast": 2,
}
USAGE = {"test": "t.py::test_t", "calls": 2, "tokens": 40, "cost": None, "models": {"m": 2}}
TESTS = [
    {"test": "t.py::test_s", "outcome": "passed"},
    {"test": "t.py::test_t", "outcome": "passed"},
]
VALID = {"tests": TESTS, "tribunals": [TRIBUNAL], "samples": [SAMPLED], "usage": [USAGE]}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "missing.json: no such file; pass the JSON files written by pytest "),
        ("<html>", "bad.json is not JSON (Expecting value: line 1 column 1 (char 0)); pass"),
        ([1, 2], "bad.json is not a pytest-harness report: expected an object, got [1, 2] (list)"),
        ({"tribunals": []}, "bad.json is not a pytest-harness report: expected the key 'tests'"),
        (
            {**VALID, "samples": [{**SAMPLED, "ran": "10"}]},
            "bad.json: samples[0]: 'ran' expected int, got \"10\" (str); pass the JSON files",
        ),
    ],
)
def test_a_report_that_cannot_be_merged_is_named_with_the_fix(
    tmp_path: Path, content: Any, said: str
) -> None:
    good = report(tmp_path / "good.json", VALID)
    bad = "missing.json"
    if content is not None:
        bad = "bad.json"
        (tmp_path / bad).write_text(content if isinstance(content, str) else json.dumps(content))
    done = command(tmp_path, "merge", good, bad, "--output", "out.json")
    assert done.returncode == 2
    assert done.stderr.startswith(f"pytest-harness merge: error: {said}"), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_an_unknown_output_extension_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    done = command(tmp_path, "merge", "missing.json", "--output", "merged.txt")
    assert done.returncode == 2
    assert done.stderr == (
        "pytest-harness merge: error: merged.txt: cannot tell what to write from its extension "
        "'.txt'; name the output with one of .json, .html, .htm, .xml (JSON, the HTML page, "
        "JUnit XML).\n"
    )


def test_help_names_the_command_its_options_and_exit_codes(tmp_path: Path) -> None:
    done = command(tmp_path, "merge", "--help")
    assert done.returncode == 0
    for said in ("REPORT.json", "--output OUT", "--strict", "pooled", "exit codes: 0 merged"):
        assert said in done.stdout
    assert command(tmp_path).returncode == 2  # no command: argparse's usage error


def test_identical_reports_merge_into_one_copy_without_conflict() -> None:
    merged = merge.merge([("a.json", VALID), ("b.json", VALID)])
    assert merged.conflicts == ()
    assert merged.data["tests"] == TESTS
    assert merged.data["samples"] == [SAMPLED]
    assert merged.data["usage"] == [USAGE]


def test_a_plain_test_that_differs_is_a_conflict_with_both_versions_kept() -> None:
    other = {**VALID, "tribunals": [{**TRIBUNAL, "outcome": "fail"}]}
    merged = merge.merge([("a.json", VALID), ("b.json", other)])
    (conflict,) = merged.conflicts
    assert (
        conflict.message()
        == "t.py::test_t in a.json, b.json: tribunals: outcome (a.json and b.json)"
    )
    assert [r["report"] for r in merged.data["tribunals"]] == ["a.json", "b.json"]
    assert [u["report"] for u in merged.data["usage"]] == ["a.json", "b.json"]


def mutated(draw: Any) -> Any:
    """The valid report with one value somewhere replaced by any JSON value, or removed."""
    data = json.loads(json.dumps(VALID))
    holder: Any = data
    key: Any = draw(st.sampled_from(sorted(data)))
    while isinstance(holder[key], (dict, list)) and holder[key] and draw(st.booleans()):
        holder = holder[key]
        keys = sorted(holder) if isinstance(holder, dict) else range(len(holder))
        key = draw(st.sampled_from(list(keys)))
    if isinstance(holder, dict) and draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = draw(JSON)
    return data


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_malformed_report_raises_only_report_error(data: st.DataObject) -> None:
    broken = data.draw(JSON) if data.draw(st.booleans()) else mutated(data.draw)
    refused: ReportError | None = None
    try:
        merged = merge.merge([("a.json", VALID), ("b.json", broken)])
    except ReportError as error:
        refused = error
    if refused is not None:
        assert str(refused).startswith("b.json")  # the report at fault is named
        return
    with tempfile.TemporaryDirectory() as folder:
        for name in ("out.xml", "out.html", "out.json"):  # written, or refused as ReportError
            with contextlib.suppress(ReportError):
                merge.write(Path(folder) / name, merged)
