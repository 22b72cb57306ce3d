"""Datasets: ``@pytest.mark.dataset`` makes one test per case of a file, and gates them.

The reader is checked on files written here (JSONL, CSV, YAML) and lists, with hypothesis
throwing arbitrary lines at it; the marker and the gate in real pytest runs (alone and on
two xdist workers), and a dataset whose cases call a model, recorded against the loopback
server and replayed with it stopped.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness.datasets import Case, load_cases
from pytest_harness.errors import DatasetError
from pytest_harness.testing import LoopbackServer, Reply


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_jsonl_dataset_gives_cases_with_ids_from_the_id_or_the_input(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cases.jsonl",
        '{"input": "Where is my order A-1?", "expected": "Monday"}\n'
        "\n"
        '{"id": "refund", "input": "I want my money back", "tone": "angry"}\n'
        '{"input": "Where is my order A-1?!"}\n'
        '{"input": "???"}\n'
        '{"input": {"order": "A-2", "lang": "fr"}}\n',
    )
    cases = load_cases(path)
    assert [c.id for c in cases] == [
        "where-is-my-order-a-1",
        "refund",
        "where-is-my-order-a-1-2",  # the same words: numbered in file order
        "line-5",  # no word in it: where it is
        "lang-fr-order-a-2",  # not text: its JSON, keys sorted
    ]
    first, refund = cases[0], cases[1]
    assert (first.input, first.expected, first.where) == (
        "Where is my order A-1?",
        "Monday",
        f"{path}:1",
    )
    assert (refund["tone"], refund["expected"], refund.fields) == ("angry", None, {"tone": "angry"})
    with pytest.raises(KeyError, match=r"case refund .* has no 'mood'; it has id, input, expected"):
        refund["mood"]


def test_a_long_input_is_cut_at_a_word_under_forty_characters() -> None:
    (case,) = load_cases(["Good morning, my parcel never arrived and nobody answers the phone"])
    assert case.id == "good-morning-my-parcel-never-arrived-and"
    assert len(case.id) <= 40


def test_csv_and_yaml_datasets_read_alike(tmp_path: Path) -> None:
    csv = write(
        tmp_path,
        "cases.csv",
        'id,input,expected,tone\nhello,"Hello, there",Hi,\n,Goodbye,,polite\n',
    )
    yaml = write(
        tmp_path,
        "cases.yaml",
        "# two cases\n- id: hello\n  input: Hello, there\n  expected: Hi\n  tone: ''\n"
        "- input: Goodbye\n  tone: polite\n",
    )
    for path, lines in ((csv, (2, 3)), (yaml, (2, 6))):
        hello, goodbye = load_cases(path)
        assert (hello.id, hello.input, hello.expected, hello.fields) == (
            "hello",
            "Hello, there",
            "Hi",
            {"tone": ""},
        )
        assert (goodbye.id, goodbye.expected, goodbye.fields) == (
            "goodbye",
            None,
            {"tone": "polite"},
        )
        assert [c.where for c in (hello, goodbye)] == [f"{path}:{n}" for n in lines]


def test_a_yaml_mapping_may_hold_its_cases_under_cases(tmp_path: Path) -> None:
    path = write(tmp_path, "suite.yml", "name: support\ncases:\n  - input: one\n  - input: two\n")
    assert [(c.id, c.where) for c in load_cases(path)] == [
        ("one", f"{path}:3"),
        ("two", f"{path}:4"),
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("c.jsonl", '{"input": "a"}\n{"input": "b"\n', ":2: not JSON"),
        ("c.jsonl", '{"input": "a"}\n["b"]\n', ":2: a line must be a JSON object, not list"),
        ("c.jsonl", '{"input": "a"}\n{"expected": "b"}\n', ":2: missing input"),
        ("c.jsonl", '{"id": "x", "input": "a"}\n{"id": "x", "input": "b"}\n', ":2: duplicate id"),
        ("c.jsonl", '{"id": ["x"], "input": "a"}\n', ":1: an id is text or a number"),
        ("c.jsonl", "\n\n", "has no cases"),
        ("c.csv", "question,expected\nwhy,because\n", ":1: the header has no input column"),
        ("c.csv", 'input\n"a",b\n', ":2: more cells than the header has columns"),
        ("c.csv", "input,expected\n,b\n", ":2: missing input"),
        ("c.yaml", "- input: a\n- input: [b\n", ":2: not YAML"),
        ("c.yaml", "input: a\n", ":1: a dataset in YAML is a list of mappings"),
        ("c.yaml", "- input: a\n- just text\n", ":2: a row must be a mapping"),
        ("c.yaml", "- input: a\n- 1: b\n", ":2: the key 1 is not text"),
        ("c.json", "[]", "a dataset must be a .jsonl, .csv or .yaml file"),
    ],
)
def test_a_bad_row_is_one_error_naming_file_and_line(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(DatasetError) as raised:
        load_cases(path)
    assert message in str(raised.value)
    assert str(path) in str(raised.value)


def test_a_missing_file_names_where_relative_paths_are_read_from(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no such dataset \(relative paths are read from "):
        load_cases("data/none.jsonl", base=tmp_path)


@pytest.mark.parametrize("source", [42, b"cases.jsonl", [{"input": "a"}, 3], [{1: "a"}]])
def test_a_source_that_is_no_dataset_is_refused(source: Any) -> None:
    with pytest.raises(DatasetError, match=r"a dataset is|is not a case"):
        load_cases(source)


def test_a_list_takes_texts_mappings_and_cases() -> None:
    cases = load_cases(
        ["Hello", {"input": "Bye", "expected": "Ciao"}, Case(id="kept", input="x", where="mine")]
    )
    assert [(c.id, c.where) for c in cases] == [
        ("hello", "item 0"),
        ("bye", "item 1"),
        ("kept", "mine"),
    ]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.dictionaries(
                st.sampled_from(["id", "input", "expected", "x"]),
                st.one_of(st.none(), st.text(max_size=12), st.integers(), st.booleans()),
            ).map(json.dumps),
        ),
        max_size=6,
    )
)
def test_any_jsonl_gives_cases_with_unique_ids_or_one_dataset_error(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), "cases.jsonl", "\n".join(lines))
        try:
            cases = load_cases(path)
        except DatasetError as error:
            said = str(error)
        else:
            said = ""
    if said:
        assert str(path) in said
        return
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids)
    assert all(ids)


def outcomes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


CASES = (
    '{"input": "Where is order A-1?", "expected": "A-1"}\n'
    '{"input": "Where is order A-2?", "expected": "A-2"}\n'
    '{"id": "refund", "input": "I want my money back", "expected": "refund"}\n'
    '{"input": "Where is order A-3?", "expected": "A-3"}\n'
)

GATED = """
import pytest

@pytest.mark.dataset("cases.jsonl")
def test_plain(case):
    assert case.expected in case.input

@pytest.mark.dataset("cases.jsonl", pass_rate={rate})
def test_gated(case):
    assert case.expected in case.input
"""


def test_each_case_is_a_test_named_by_its_id(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=CASES)
    pytester.makepyfile(test_cases=GATED.format(rate=0.75))
    result = outcomes(pytester, "-v", "-k", "plain")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_plain[[]where-is-order-a-1[]] PASSED*",
            "*test_plain[[]where-is-order-a-2[]] PASSED*",
            "*test_plain[[]refund[]] FAILED*",
            "*test_plain[[]where-is-order-a-3[]] PASSED*",
        ]
    )
    assert "dataset gates" not in result.stdout.str()  # no gate asked for


def test_the_closest_dataset_marker_gives_the_cases(pytester: pytest.Pytester) -> None:
    """A module's or a class's marker applies to its tests; a closer one takes its place."""
    pytester.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.dataset(["module one", "module two"])

        def test_module(case):
            pass

        @pytest.mark.dataset(["own"])
        def test_own(case):
            pass

        @pytest.mark.dataset(["class"])
        class TestClass:
            def test_in_class(self, case):
                pass

            @pytest.mark.dataset(["method"])
            def test_method(self, case):
                pass
        """
    )
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:randomly")
    result.stdout.fnmatch_lines(
        [
            "*::test_module[[]module-one[]]",
            "*::test_module[[]module-two[]]",
            "*::test_own[[]own[]]",
            "*::TestClass::test_in_class[[]class[]]",
            "*::TestClass::test_method[[]method[]]",
            "5 tests collected*",
        ]
    )


def test_a_gate_counts_failing_cases_and_decides_the_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=CASES)
    pytester.makepyfile(test_cases=GATED.format(rate=0.75))
    result = outcomes(pytester, "-v", "-rx", "-k", "gated", "--harness-report=r.json")
    result.assert_outcomes(passed=3, xfailed=1)
    assert result.ret == 0  # 3 of 4 reach 0.75: the failing case does not fail the run
    out = result.stdout.str()
    assert "test_gated[refund] XFAIL" in out
    assert (
        "counted by the dataset gate (pass_rate=0.75): AssertionError: assert 'refund' in "
        "'I want my money back'"
    ) in out
    table = out[out.index("pytest-harness dataset gates") :]
    row = next(line for line in table.splitlines() if "test_cases.py::test_gated" in line)
    assert row.split()[1:4] == ["3/4", "75%", "30.1%-95.4%"]
    (gate,) = json.loads((pytester.path / "r.json").read_text())["datasets"]
    # The Wilson interval of 3 of 4 at 95%, worked here from its formula.
    z, n, p = 1.959963984540054, 4, 0.75
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert gate["interval"] == pytest.approx([centre - half, centre + half], abs=1e-6)
    assert (gate["passes"], gate["ran"], gate["cases"], gate["outcome"]) == (3, 4, 4, "pass")
    assert (gate["source"], gate["required"]) == ("cases.jsonl", 0.75)
    assert gate["failures"] == [
        {
            "case": "refund",
            "test": "test_cases.py::test_gated[refund]",
            "reason": "AssertionError: assert 'refund' in 'I want my money back'",
        }
    ]


def test_a_gate_that_is_not_reached_fails_the_run_on_its_own(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=CASES)
    pytester.makepyfile(test_cases=GATED.format(rate=0.9))
    result = outcomes(pytester, "-k", "gated", "--harness-report=r.html")
    result.assert_outcomes(passed=3, xfailed=1)  # no test failed...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ...but the gate did
    result.stdout.fnmatch_lines(
        ["FAILED dataset gate test_cases.py::test_gated: 3/4 passed (75%, 95% CI *), needs 4"]
    )
    page = (pytester.path / "r.html").read_text()
    assert "Dataset gates" in page
    assert "3/4 of 4 cases" in page
    assert 'data-case="refund"' in page


SEQUENTIAL = """
import pytest

@pytest.mark.dataset("cases.jsonl", pass_rate=0.5, confidence=0.9, margin=0.2{extra})
def test_answers(case):
    assert case.expected in case.input
"""


def many_cases(passing: int, failing: int) -> str:
    rows = [{"input": f"answer {n}", "expected": "answer"} for n in range(passing)]
    rows += [{"input": f"question {n}", "expected": "answer"} for n in range(failing)]
    return "\n".join(json.dumps(row) for row in rows) + "\n"


def test_a_sequential_gate_decides_on_all_its_cases(pytester: pytest.Pytester) -> None:
    # low 0.3, high 0.7: a pass adds ln(0.7/0.3) = 0.847298, a failure ln(0.3/0.7) = -0.847298;
    # 7 passes and 2 failures: 4.236489 >= ln(10) = 2.302585, decided "pass".
    pytester.makefile(".jsonl", cases=many_cases(7, 2))
    pytester.makepyfile(test_cases=SEQUENTIAL.format(extra=""))
    result = outcomes(pytester, "--harness-report=r.json")
    assert result.ret == 0
    (gate,) = json.loads((pytester.path / "r.json").read_text())["datasets"]
    assert (gate["outcome"], gate["sequential"]["decided"]) == ("pass", "pass")
    assert gate["summary"].endswith("rate 50% reached at 90% confidence after 9 of 9 cases")


@pytest.mark.parametrize(("extra", "code"), [("", 1), (", inconclusive='pass'", 0)])
def test_an_undecided_gate_is_inconclusive(
    pytester: pytest.Pytester, extra: str, code: int
) -> None:
    # 2 passes and 1 failure: 0.847298, between -2.302585 and 2.302585.
    pytester.makefile(".jsonl", cases=many_cases(2, 1))
    pytester.makepyfile(test_cases=SEQUENTIAL.format(extra=extra))
    result = outcomes(pytester, "--harness-report=r.json")
    assert result.ret == code
    (gate,) = json.loads((pytester.path / "r.json").read_text())["datasets"]
    assert gate["outcome"] == "inconclusive"
    # At the observed rate 2.5/4 the step is 0.625 * 0.847298 - 0.375 * 0.847298 = 0.211824:
    # (2.302585 - 0.847298) / 0.211824 = 6.87, so about 7 more cases.
    assert gate["sequential"]["more_needed"] == 7
    out = result.stdout.str()
    assert f"inconclusive ({'pass' if code == 0 else 'fail'}), ~7 more" in out
    assert ("about 7 more cases would likely decide it" in out) is (code == 1)


COUNTED = """
import pytest

CASES = [
    {"id": "fine", "input": "right"},
    {"id": "skipped", "input": "right"},
    {"id": "known", "input": "wrong"},
    {"id": "set-up", "input": "right"},
    {"id": "also-fine", "input": "right"},
]

@pytest.fixture
def broken(case):
    if case.id == "set-up":
        raise RuntimeError("no database")

@pytest.mark.dataset(CASES, pass_rate=1.0)
def test_counted(case, broken):
    if case.id == "skipped":
        pytest.skip("not today")
    if case.id == "known":
        pytest.xfail("a known bug")
    assert case.input != "wrong"
"""


def test_skips_xfails_and_set_up_errors_are_not_counted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_counted=COUNTED)
    result = outcomes(pytester, "--harness-report=r.json")
    result.assert_outcomes(passed=2, skipped=1, xfailed=1, errors=1)
    (gate,) = json.loads((pytester.path / "r.json").read_text())["datasets"]
    assert (gate["passes"], gate["ran"], gate["excluded"], gate["outcome"]) == (2, 2, 3, "pass")


def test_two_workers_give_the_gate_of_one(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=many_cases(7, 2))
    pytester.makepyfile(test_cases=SEQUENTIAL.format(extra=""))
    outcomes(pytester, "--harness-report=one.json")
    outcomes(pytester, "-n", "2", "--harness-report=two.json")
    one, two = (
        json.loads((pytester.path / n).read_text())["datasets"] for n in ("one.json", "two.json")
    )
    assert one == two


WRONG = [
    ("", "@pytest.mark.dataset takes one dataset, a path or a list, got 0 positional"),
    ("'a.jsonl', 'b.jsonl'", "got 2 positional arguments"),
    ("'cases.jsonl', colour='red'", "@pytest.mark.dataset got unknown argument(s) colour"),
    ("'cases.jsonl', argname='my case'", "@pytest.mark.dataset(argname=...) expects the name"),
    ("'cases.jsonl', pass_rate=2", "@pytest.mark.dataset(pass_rate=...) expects the share"),
    (
        "'cases.jsonl', confidence=0.9",
        "@pytest.mark.dataset(confidence=...) belongs to the dataset gate",
    ),
    ("'cases.jsonl', pass_rate=0.8, margin=0.1", "(margin=...) belongs to sequential sampling"),
    (
        "'cases.jsonl', pass_rate=0.8, confidence=0.9, inconclusive='xfail'",
        "(inconclusive='xfail') has no test to xfail",
    ),
    ("'none.jsonl'", "none.jsonl: no such dataset"),
    ("'cases.jsonl', argname='row'", "gives each test a `row` argument (a Case)"),
]


def test_a_wrong_dataset_marker_errors_its_test_alone(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=CASES)
    tests = [
        f"@pytest.mark.dataset({arguments})\ndef test_{n}(case):\n    pass\n"
        for n, (arguments, _) in enumerate(WRONG)
    ]
    pytester.makepyfile("import pytest\n\n" + "\n".join(tests) + "\ndef test_fine():\n    pass\n")
    result = outcomes(pytester)
    result.assert_outcomes(passed=1, errors=len(WRONG))
    sections = result.stdout.str().split(" ERROR at setup of test_")[1:]
    said = {section.split("[")[0]: section for section in sections}
    for n, (_, message) in enumerate(WRONG):
        assert message in said[str(n)], said[str(n)]


APP = """
import pytest

URL = "{url}"

def answer(question):
    import openai
    client = openai.OpenAI(base_url=URL, api_key="sk-loopback-not-a-secret", max_retries=0)
    reply = client.chat.completions.create(
        model="loopback", messages=[{{"role": "user", "content": question}}]
    )
    return reply.choices[0].message.content

@pytest.mark.harness
@pytest.mark.dataset("cases.jsonl", pass_rate=0.7)
def test_answers(case):
    assert case.expected in answer(case.input)
"""


def test_a_dataset_of_model_calls_records_and_replays_to_the_same_gate(
    pytester: pytest.Pytester,
) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"]
        return Reply(content="no idea" if "A-3" in question else f"Yes: {question}")

    pytester.makefile(".jsonl", cases=CASES.replace("refund", "money"))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    with LoopbackServer(handler=reply) as server:
        pytester.makepyfile(test_app=APP.format(url=server.url))
        live = outcomes(pytester, "--harness-live", "--harness-report=live.json")
    assert live.ret == 0
    cassettes = sorted(p.name for p in (pytester.path / "cassettes/test_app").iterdir())
    assert len(cassettes) == 4  # the failing case's recording is kept: the gate counts it
    replay = outcomes(pytester, "--harness-report=replay.json")
    assert replay.ret == 0
    gates = [
        json.loads((pytester.path / n).read_text())["datasets"]
        for n in ("live.json", "replay.json")
    ]
    assert gates[0] == gates[1]
    assert (gates[0][0]["passes"], gates[0][0]["ran"]) == (3, 4)


FLIPPING = """
import os
import pytest

@pytest.mark.dataset("cases.jsonl", pass_rate=0.5, confidence=0.9, margin=0.1)
def test_answers(case):
    if os.environ.get("FLIP") and case.id == "answer-0":
        raise AssertionError("flipped")
    assert case.expected in case.input
"""


def merge(pytester: pytest.Pytester, *reports: str, output: str) -> Any:
    done = pytester.run(sys.executable, "-m", "pytest_harness", "merge", *reports, "-o", output)
    return done, json.loads((pytester.path / output).read_text())


def test_shards_of_a_dataset_merge_into_the_gate_of_one_run(pytester: pytest.Pytester) -> None:
    # A pass adds ln(0.6/0.4) = 0.405465, a failure as much less; ln(10) = 2.302585 decides.
    # Each shard: 4 passes, 1 failure, 1.216395: undecided. Both: 8 and 2, 2.432790: pass.
    pytester.makefile(".jsonl", cases=many_cases(8, 2))
    pytester.makepyfile(test_cases=FLIPPING)
    first = "answer-0 or answer-1 or answer-2 or answer-3 or question-0"
    outcomes(pytester, "-k", first, "--harness-report=a.json")
    outcomes(pytester, "-k", f"not ({first})", "--harness-report=b.json")
    outcomes(pytester, "--harness-report=all.json")
    halves = [
        json.loads((pytester.path / n).read_text())["datasets"][0] for n in ("a.json", "b.json")
    ]
    assert [(h["ran"], h["outcome"]) for h in halves] == [(5, "inconclusive")] * 2
    done, merged = merge(pytester, "a.json", "b.json", output="merged.json")
    assert done.ret == 0
    whole = json.loads((pytester.path / "all.json").read_text())["datasets"]
    assert merged["datasets"] == whole
    assert whole[0]["outcome"] == "pass"  # 8 of 10 decides it; neither shard could alone
    assert merged["conflicts"] == []


def test_a_case_with_two_results_in_two_shards_is_a_conflict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".jsonl", cases=many_cases(7, 2))
    pytester.makepyfile(test_cases=FLIPPING)
    outcomes(pytester, "--harness-report=a.json")
    monkeypatch.setenv("FLIP", "1")
    outcomes(pytester, "-k", "answer-0", "--harness-report=b.json")
    _, merged = merge(pytester, "a.json", "b.json", output="merged.json")
    (conflict,) = [c for c in merged["conflicts"] if c["test"] == "test_cases.py::test_answers"]
    assert conflict == {
        "test": "test_cases.py::test_answers",
        "reports": ["a.json", "b.json"],
        "differs": ["case answer-0: pass (a.json), fail (b.json); a.json's kept"],
    }
    (gate,) = merged["datasets"]
    assert (gate["passes"], gate["ran"]) == (7, 9)  # the case counted once


@pytest.mark.parametrize(
    "record",
    [
        [],
        {"test": 1},
        {"test": "g", "spec": {"pass_rate": 2}},
        {
            "test": "g",
            "spec": {"pass_rate": 0.5, "confidence": None, "margin": 0.6, "inconclusive": "fail"},
        },
        {
            "test": "g",
            "spec": {"pass_rate": 0.5, "confidence": None, "margin": 0.05, "inconclusive": "fail"},
            "results": {},
        },
        {
            "test": "g",
            "spec": {"pass_rate": 0.5, "confidence": None, "margin": 0.05, "inconclusive": "fail"},
            "results": [{"index": "0"}],
        },
    ],
)
def test_a_gate_record_that_is_not_one_is_a_report_error(record: Any) -> None:
    from pytest_harness._datasets.gate import pool
    from pytest_harness.errors import ReportError

    with pytest.raises(ReportError, match=r"r\.json: datasets\[0\]"):
        pool([("r.json", [record])])
