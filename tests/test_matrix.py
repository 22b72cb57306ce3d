"""The model matrix end to end (``--harness-models``): record, replay, ids, cassettes, report.

The suites run in-process (litellm imported beforehand, as in test_cassettes) against a
loopback server that answers each requested model in its own words, and the judges (model
``judge``) with a verdict.
"""

from __future__ import annotations

import json
from glob import escape
from pathlib import Path
from typing import Any

import pytest
from browser import parse

from pytest_harness.testing import LoopbackServer, Reply

CONFTEST = """
import openai
import pytest
from pytest_harness import Agent, Tribunal

URL = "{url}"
PARAMS = {{"api_base": URL, "api_key": "loopback-not-a-secret"}}


class Bot(Agent):
    model = "openai/bot"
    params = PARAMS


class Judge(Agent):
    model = "openai/own-judge"
    params = PARAMS
    output = {{
        "type": "object",
        "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
        "required": ["pass", "reason"],
    }}
    instructions = "You judge support replies."


class Polite(Tribunal):
    agents = [Judge]


@pytest.fixture
def reply(harness_model):
    client = openai.OpenAI(base_url=URL, api_key="loopback-not-a-secret", max_retries=0)

    def reply(question):
        asked = [{{"role": "user", "content": question}}]
        answer = client.chat.completions.create(model=harness_model, messages=asked)
        return answer.choices[0].message.content

    return reply
"""

SUITE = """
import pytest
from conftest import Bot, Polite


@pytest.mark.parametrize("question", ["late order", "refund"], ids=["case-1", "case-2"])
def test_reply(harness, reply, harness_model, question):
    answer = reply(question)
    assert answer == f"{harness_model} on {question}"
    harness.assert_verdict(Polite, answer)


def test_agent(harness, harness_model):
    asked = harness_model.removeprefix("openai/")  # litellm sends the name without it
    assert harness.ask(Bot, "hello").output == f"{asked} on hello"


def test_plain():
    pass
"""

MODELS = "--harness-models=openai/m1,openai/m2"


def answer(body: dict[str, Any]) -> Reply:
    """The judge's verdict for a judge's request; otherwise the model's own answer."""
    said = body["messages"][-1]["content"]
    if body["model"] == "judge":
        return Reply(content=json.dumps({"pass": "m2" not in said, "reason": "read it"}))
    return Reply(content=f"{body['model']} on {said}")


@pytest.fixture
def suite(pytester: pytest.Pytester, server: LoopbackServer) -> pytest.Pytester:
    server.handler = answer
    pytester.makeconftest(CONFTEST.format(url=server.url))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    pytester.makepyfile(test_chat=SUITE)
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def cassettes(suite: pytest.Pytester) -> list[str]:
    root = suite.path / "cassettes"
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.yaml"))


def test_record_then_replay_a_matrix(suite: pytest.Pytester, server: LoopbackServer) -> None:
    judged = "--harness-judge-model=openai/judge"
    result = run(suite, "--harness-live", MODELS, judged, "-v")
    result.assert_outcomes(passed=5, failed=2)  # m2's replies fail the judge; test_plain once
    result.stdout.fnmatch_lines_random(
        [
            escape("test_chat.py::test_reply[case-1-openai/m1]") + " PASSED*",
            escape("test_chat.py::test_reply[case-2-openai/m2]") + " FAILED*",
            escape("test_chat.py::test_agent[openai/m1]") + " PASSED*",
            escape("test_chat.py::test_agent[openai/m2]") + " PASSED*",
            "test_chat.py::test_plain PASSED*",
        ]
    )
    asked = [body["model"] for body in server.requests]
    assert sorted(set(asked)) == ["judge", "m1", "m2", "openai/m1", "openai/m2"]
    assert asked.count("judge") == 4  # every judge pinned, none on the matrix's models
    assert {"bot", "own-judge"}.isdisjoint(asked)
    # A failed test keeps no cassette (harness_record_failed is off): m2's replies did fail.
    assert cassettes(suite) == [
        "test_chat/test_agent[openai_m1].yaml",
        "test_chat/test_agent[openai_m2].yaml",
        "test_chat/test_reply_case-1[openai_m1].yaml",
        "test_chat/test_reply_case-2[openai_m1].yaml",
    ]
    metadata = _file(suite, "test_chat/test_reply_case-1[openai_m1].yaml")["metadata"]
    assert (metadata["model"], metadata["judge_model"]) == ("openai/m1", "openai/judge")

    server.stop()
    result = run(suite, "--harness-models=openai/m1")  # offline; judges pinned as recorded
    result.assert_outcomes(passed=4)


def _file(suite: pytest.Pytester, relative: str) -> Any:
    return json.loads((suite.path / "cassettes" / relative).read_text())


def test_a_miss_names_the_model_and_the_command(suite: pytest.Pytester) -> None:
    result = run(suite, MODELS, "-k", "test_agent")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recording in *"
            + escape("cassettes/test_chat/test_agent[openai_m1].yaml")
            + "*",
            "*The recording of model 'openai/m1' (this test's copy in the model matrix) is "
            "missing it. To record it: pytest "
            + escape("'test_chat.py::test_agent[openai/m1]'")
            + " --harness-record=new --harness-models=openai/m1 (adds what is missing)*",
        ]
    )


def test_the_report_shows_the_matrix(suite: pytest.Pytester, server: LoopbackServer) -> None:
    server.handler = lambda body: Reply(
        content=json.dumps({"pass": True, "reason": "fine"})
        if body["model"] == "judge"
        else f"{body['model']} on {body['messages'][-1]['content']}"
    )
    suite.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\nharness_judge_model = openai/judge\n")
    run(suite, "--harness-live", MODELS).assert_outcomes(passed=7)
    server.stop()

    result = run(suite, MODELS, "--harness-report=report.json")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(
        [
            "*= pytest-harness model matrix =*",
            "test * openai/m1 * openai/m2",
            escape("test_chat.py::test_reply[case-1]") + " * passed, * tok, *s * passed, * tok, *s",
        ]
    )
    matrix = json.loads((suite.path / "report.json").read_text())["matrix"]
    assert matrix["models"] == ["openai/m1", "openai/m2"]
    rows = {row["row"]: row["cells"] for row in matrix["rows"]}
    assert sorted(rows) == [
        "test_chat.py::test_agent",
        "test_chat.py::test_reply[case-1]",
        "test_chat.py::test_reply[case-2]",
    ]
    cell = rows["test_chat.py::test_reply[case-2]"]["openai/m2"]
    assert cell["responses"] == ["openai/m2 on refund"]
    assert (cell["test"], cell["test_outcome"]) == (
        "test_chat.py::test_reply[case-2-openai/m2]",
        "passed",
    )
    assert cell["calls"] == 2  # the application's call and the judge's
    assert cell["tokens"] > 0
    assert cell["latency_s"] > 0  # as recorded

    run(suite, MODELS, "--harness-report=report.html").assert_outcomes(passed=7)
    page = parse((suite.path / "report.html").read_text())
    table = page.find("section", id="matrix").find("table", "matrix")
    assert [th.text for th in table.find("thead").find_all("th")] == [
        "test",
        "openai/m1",
        "openai/m2",
    ]
    row = table.find("tbody", "entry", data_test="test_chat.py::test_reply[case-1]")
    said = {
        td.attrs["data-model"]: [li.text for li in td.find_all("li", "response")]
        for td in row.find_all("td", "matrix-cell")
    }
    assert said == {
        "openai/m1": ["openai/m1 on late order"],
        "openai/m2": ["openai/m2 on late order"],
    }


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--harness-models=a,,b"], "*--harness-models got 'a,,b', which has an empty entry*"),
        (["--harness-models=a,b,a"], "*--harness-models lists 'a' twice; list each model once.*"),
        (
            ["--harness-models=openai/m1,openai_m1"],
            "*lists 'openai/m1' and 'openai_m1', which would share the cassette name*",
        ),
        (["--harness-models=a b"], "*got the model name 'a b', which holds ' '*"),
        (
            ["--harness-models=a,b", "--harness-model=c"],
            "*--harness-models=a,b and --harness-model=c were both given*",
        ),
    ],
)
def test_bad_matrices_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], said: str
) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([said])


def test_the_command_line_model_turns_off_the_ini_matrix(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_models = a, b\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.harness(cassette=False)
        def test_x(harness_model):
            assert harness_model in ("a", "b", "c")
        """
    )
    run(pytester).assert_outcomes(passed=2)
    run(pytester, "--harness-model=c").assert_outcomes(passed=1)


def test_no_matrix_no_parameter(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.harness(cassette=False, model="marked")
        def test_x(harness_model, request):
            assert harness_model == "marked"
            assert not hasattr(request.node, "callspec")
        """
    )
    run(pytester).assert_outcomes(passed=1)


def test_cassette_paths_per_model(tmp_path: Path) -> None:
    from pytest_harness._cassettes.slot import cassette_path

    assert cassette_path(tmp_path, "t/m.py::test[a-b]", None, model="openai/x") == (
        tmp_path / "t" / "m" / "test_a-b[openai_x].yaml"
    )
    assert cassette_path(tmp_path, "t/m.py::test", "shared/one", model="x:1") == (
        tmp_path / "shared" / "one[x_1].yaml"
    )


SAMPLED = """
import pytest
from conftest import Polite


@pytest.mark.harness(samples=3, pass_rate=0.5, judge_model="openai/judge")
def test_sampled(harness, reply):
    harness.assert_verdict(Polite, reply("late order"))
"""


def test_a_sampled_copy_shows_its_rate_and_the_marker_pins_the_judges(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    suite.makepyfile(test_chat=SAMPLED)
    result = run(suite, "--harness-live", MODELS, "--harness-report=report.json")
    result.assert_outcomes(passed=1, failed=1)  # m2's replies fail the judge
    result.stdout.fnmatch_lines(["*passed 3/3 100% (44%-100%)*failed 0/3 0% (0%-56%)*"])
    assert [body["model"] for body in server.requests].count("judge") == 6
    matrix = json.loads((suite.path / "report.json").read_text())["matrix"]
    (row,) = matrix["rows"]
    samples = row["cells"]["openai/m1"]["samples"]
    assert (samples["passes"], samples["ran"], samples["pass_rate"]) == (3, 3, 1.0)
    assert [round(bound, 2) for bound in samples["interval"]] == [0.44, 1.0]


DIRECT = """
from conftest import PARAMS
from pytest_harness.judges import Rubric


class Clarity(Rubric):
    model = "openai/own-judge"
    params = PARAMS
    criteria = "how clearly the reply says what happens next."
    steps = ["Read the reply.", "Assign a score for clarity on a scale of 1 to 5."]


def test_direct(harness, reply):
    judged = harness.ask(Clarity, reply("late order")).processed
    assert (judged["score"], judged["passed"]) == (4, True)


def test_without_asking_for_the_model(harness):  # the matrix copies it all the same
    assert harness.ask(Clarity, "We ship on Monday.").processed["score"] == 4
"""


def rubric_answer(body: dict[str, Any]) -> Reply:
    """A score for a rubric's request (on whatever model it came), else the model's words."""
    if "Evaluation Steps" in body["messages"][-1]["content"]:
        return Reply(content=json.dumps({"reason": "says it", "score": 4}))
    return Reply(content=f"{body['model']} on {body['messages'][-1]['content']}")


@pytest.mark.parametrize(
    ("pin", "judged_on"),
    [(["--harness-judge-model=openai/judge"], ["judge"] * 4), ([], ["m1", "m1", "m2", "m2"])],
    ids=["pinned", "unpinned"],
)
def test_a_ready_made_judge_asked_directly_follows_the_pin(
    suite: pytest.Pytester, server: LoopbackServer, pin: list[str], judged_on: list[str]
) -> None:
    """A ready-made judge called with ``harness.ask`` (no tribunal) runs on the pinned judge
    model in every copy of the matrix; unpinned, it follows each copy's model, as any agent
    does. Replay offline reaches the same scores."""
    server.handler = rubric_answer
    suite.makepyfile(test_chat=DIRECT)
    run(suite, "--harness-live", MODELS, *pin).assert_outcomes(passed=4)
    scored = [b["model"] for b in server.requests if "Evaluation Steps" in str(b["messages"])]
    assert sorted(scored) == judged_on
    assert "own-judge" not in [body["model"] for body in server.requests]
    server.stop()
    run(suite, MODELS).assert_outcomes(passed=4)


def test_a_matrix_under_xdist_reports_as_one_process_does(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    """Recorded by two xdist workers, the matrix replays on two workers into the same
    matrix (rows, models, cells) as a one-process replay, and the same cassettes."""
    server.handler = lambda body: Reply(
        content=json.dumps({"pass": True, "reason": "fine"})
        if body["model"] == "judge"
        else f"{body['model']} on {body['messages'][-1]['content']}"
    )
    judged = "--harness-judge-model=openai/judge"
    live = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2", "--harness-live", MODELS, judged
    )
    live.assert_outcomes(passed=7)
    assert len(cassettes(suite)) == 6  # test_plain uses no harness: no copies, no cassette
    server.stop()

    def matrix(*args: str) -> dict[str, Any]:
        report = f"report{len(args)}.json"
        result = suite.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            MODELS,
            f"--harness-report={report}",
            *args,
        )
        result.assert_outcomes(passed=7)
        found = json.loads((suite.path / report).read_text())["matrix"]
        found["rows"].sort(key=lambda row: row["row"])
        return found

    two, one = matrix("-n", "2"), matrix()
    assert two == one
    assert [row["row"] for row in one["rows"]] == [
        "test_chat.py::test_agent",
        "test_chat.py::test_reply[case-1]",
        "test_chat.py::test_reply[case-2]",
    ]
    assert sorted(one["models"]) == ["openai/m1", "openai/m2"]


def test_the_columns_follow_the_matrix_whichever_copy_finished_first() -> None:
    """xdist workers report the copies in any order: the columns stay in --harness-models
    order; a cell from an older report (no ``column``) comes after the others."""
    from pytest_harness._pytest_glue.matrix import pivot

    def cell(model: str, row: str, column: object = None) -> dict[str, object]:
        placed = {} if column is None else {"column": column}
        return {"model": model, "row": row, **placed}

    cells = [cell("m2", "a", 1), cell("m3", "b"), cell("m1", "b", 0), cell("m1", "a", 0)]
    matrix = pivot(cells)
    assert matrix["models"] == ["m1", "m2", "m3"]
    assert [(row["row"], sorted(row["cells"])) for row in matrix["rows"]] == [
        ("a", ["m1", "m2"]),
        ("b", ["m1", "m3"]),
    ]
    assert pivot([cell("m2", "a", True), cell("m1", "a", 0)])["models"] == ["m1", "m2"]
    assert pivot([]) == {}
