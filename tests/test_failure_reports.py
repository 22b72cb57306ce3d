"""The harness's own failures are reported message first, without the frames of the SDKs,
httpx, vcrpy and the harness (issue 43, item 6).

Real pytest runs of a small suite against a loopback model server: each test fails with one
of the harness's errors (a cassette miss, raised as is or wrapped, an unreachable endpoint, a
schema's ConfigError, a judge's unreadable reply, a failed verdict, a trajectory assertion,
every judge failed). Under the default ``--tb`` and ``short`` each report is the message,
the test's own lines, and one line saying the rest is kept for ``--tb=long``; ``--tb=long``
still shows every frame; the user's own ``assert`` keeps pytest's report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_harness.testing import LoopbackServer, Reply

SUITE = """
import openai
import pytest
from pytest_harness import Agent, Tribunal

URL = "{url}"
DEAD = "{dead}"
KEY = "loopback-not-a-secret"
VOTE = {{
    "type": "object",
    "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
    "required": ["pass", "reason"],
}}


def chat(text, url=URL):
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": text}}])
    return reply.choices[0].message.content


class Judge(Agent):
    model = "openai/judge"
    params = {{"api_base": URL, "api_key": KEY}}
    output = VOTE


class Away(Judge):
    params = {{"api_base": DEAD, "api_key": KEY}}


class Panel(Tribunal):
    agents = [Judge]


@pytest.fixture
def judged():
    return Judge(input="garbage in a fixture").call()


@pytest.mark.harness
def test_miss():
    assert chat("a prompt never recorded") == "hello there"


@pytest.mark.harness
def test_miss_wrapped():
    try:
        chat("a prompt never recorded")
    except BaseException as error:
        raise RuntimeError("the feature failed") from error


@pytest.mark.harness
def test_miss_of_a_judge(harness):
    harness.ask(Judge, "a reply never judged")


@pytest.mark.harness
def test_live_judge_unreachable(harness):
    harness.ask(Away, "a reply")


@pytest.mark.harness
def test_live_app_unreachable():
    chat("hello", url=DEAD)


@pytest.mark.harness
def test_live_schema(harness):
    class Typo(Judge):
        output = {{"type": "objcet"}}


@pytest.mark.harness
def test_live_judge_output(harness):
    harness.ask(Judge, "garbage please")


@pytest.mark.harness
def test_live_fixture(judged):
    pass


@pytest.mark.harness
def test_live_verdict(harness):
    harness.assert_verdict(Panel, "a rude reply")


@pytest.mark.harness
def test_live_all_judges_failed(harness):
    harness.get_verdict(Panel, "garbage please")


@pytest.mark.harness
def test_live_trajectory(harness):
    chat("hello")
    harness.trajectory.assert_called("lookup")


@pytest.mark.harness(samples=2)
def test_live_sampled(harness):
    harness.assert_verdict(Panel, "a rude reply")


@pytest.mark.harness
def test_live_user_assert():
    said = chat("hello")
    assert said == "something else"
"""

# Each failing test: the first line of its report, and what it says after the message.
FIRST_LINES = {
    "test_miss": "CassetteMiss: no recording in *test_miss.yaml matches this request:",
    "test_miss_wrapped": "CassetteMiss: no recording in *test_miss_wrapped.yaml matches *",
    "test_miss_of_a_judge": "CassetteMiss: no recording in *test_miss_of_a_judge.yaml *",
    "test_live_judge_unreachable": "EndpointUnreachable: nothing answers at 127.0.0.1:*",
    "test_live_app_unreachable": "EndpointUnreachable: nothing answers at 127.0.0.1:*",
    "test_live_schema": "ConfigError: agent Typo: its output schema is not valid at type: *",
    "test_live_judge_output": "JudgeOutputError: the reply has no JSON object in it: *",
    "test_live_fixture": "JudgeOutputError: the reply has no JSON object in it: *",
    "test_live_verdict": "AssertionError: Panel verdict: FAIL, 0/1 votes passed, value False",
    "test_live_all_judges_failed": "AllAgentsFailed: Panel: all 1 judges failed:",
    "test_live_trajectory": "AssertionError: expected lookup to be called; it was never called.",
}
THEN = {
    "test_miss_wrapped": "The test then failed at test_inner.py:* with RuntimeError: *",
    "test_live_app_unreachable": "The test then failed at test_inner.py:* with *Error*",
}
# What a brief report may hold beyond the message: a blank line, the test's frames (two
# lines each: the test's, and the helper it called), "The test then failed ...", and the
# line saying what was left out.
MOST_BEYOND_THE_MESSAGE = 1 + 2 * 2 + 1 + 1
FRAME = re.compile(r"^\S+:\d+: in \S+$")
LEFT_OUT = re.compile(
    r"^\(its traceback( through [\w, ]+)? is left out: run with --tb=long to see it\)$"
)


COLLECTED = """
from pytest_harness import Agent


class Typo(Agent):
    output = {"type": "objcet"}


def test_never_collected():
    pass
"""


def judge_or_echo(body: dict[str, Any]) -> Reply:
    said = json.dumps(body.get("messages"))
    if "garbage" in said:
        return Reply(content="this is not json")
    if "rude" in said:
        return Reply(content=json.dumps({"pass": False, "reason": "rude"}))
    return Reply(content="hello there")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    with LoopbackServer() as gone:
        dead = gone.url  # nothing listens there once it stopped
    with LoopbackServer(judge_or_echo) as server:
        pytester.makepyfile(test_inner=SUITE.format(url=server.url, dead=dead))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        yield pytester


def run(suite: pytest.Pytester, *args: str) -> dict[str, list[str]]:
    """Run the suite (the live tests recording, the others replaying); each failing test's
    report, by test name."""
    replayed = suite.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-k", "not live", *args
    )
    recorded = suite.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", "-k", "live", "--harness-live", *args
    )
    replayed.assert_outcomes(failed=3)
    recorded.assert_outcomes(failed=9, errors=1)
    return {**reports(replayed.outlines), **reports(recorded.outlines)}


def reports(lines: list[str]) -> dict[str, list[str]]:
    """The report of each failure in pytest's terminal output, by test name."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        title = re.fullmatch(r"_+ (?:ERROR at setup of |ERROR collecting )?(test_\w+)\S* _+", line)
        if title is not None:
            current = found[title.group(1)] = []
        elif line.startswith("=") and current is not None:
            current = None
        elif current is not None:
            current.append(line)
    return found


@pytest.mark.parametrize("style", [(), ("--tb=short",)], ids=["default", "short"])
def test_each_harness_failure_is_its_message_then_the_tests_lines(
    suite: pytest.Pytester, style: tuple[str, ...]
) -> None:
    shown = run(suite, *style)

    for test, first in FIRST_LINES.items():
        report = shown[test]
        assert re.fullmatch(_pattern(first), report[0]), (test, report[:3])
        frames = [n for n, line in enumerate(report) if FRAME.match(line)]
        assert frames, (test, report)
        assert report[frames[0] - 1] == ""  # the message, a blank line, the test's frames
        beyond = report[frames[0] - 1 :]
        assert len(beyond) <= MOST_BEYOND_THE_MESSAGE, (test, beyond)
        assert LEFT_OUT.match(report[-1]), (test, report[-1])
        for line in beyond[1:-1]:
            assert FRAME.match(line) or line.startswith(("    ", "The test then failed")), line
        assert all(line.startswith("test_inner.py:") for line in report if FRAME.match(line))
        shown_text = "\n".join(report)
        assert "site-packages" not in shown_text, test
        assert "pytest_harness/" not in shown_text, test
        then = THEN.get(test)
        assert (then is not None) == any("The test then failed" in line for line in beyond)
        if then is not None:
            assert any(re.fullmatch(_pattern(then), line) for line in beyond), (test, beyond)


def test_a_miss_names_the_users_lines_and_what_was_left_out(suite: pytest.Pytester) -> None:
    shown = run(suite)

    beyond = shown["test_miss"][-5:]
    assert beyond[0] == f"test_inner.py:{line_of(suite, 'assert chat(')}: in test_miss"
    assert beyond[1] == '    assert chat("a prompt never recorded") == "hello there"'
    assert beyond[2] == f"test_inner.py:{line_of(suite, 'reply = client')}: in chat"
    assert beyond[3] == "    reply = client.chat.completions.create("
    assert beyond[4].startswith("(its traceback through openai, ")
    assert beyond[4].endswith(" and pytest_harness is left out: run with --tb=long to see it)")
    assert "vcr" in beyond[4]
    wrapped = shown["test_miss_wrapped"]
    where = line_of(suite, 'chat("a prompt never recorded")\n')
    assert f"test_inner.py:{where}: in test_miss_wrapped" in wrapped  # where it missed
    then = line_of(suite, "raise RuntimeError")
    failed = f"The test then failed at test_inner.py:{then} with RuntimeError: the feature failed"
    assert failed in wrapped
    assert sum("no recording in" in line for line in wrapped) == 1  # shown once


def test_long_tracebacks_keep_every_frame(suite: pytest.Pytester) -> None:
    shown = run(suite, "--tb=long")

    for test in FIRST_LINES:
        text = "\n".join(shown[test])
        assert "left out" not in text, test
        assert re.fullmatch(r"\S+:\d+: \w+", shown[test][-1]), test  # pytest's last line
        if test != "test_live_verdict":  # assert_verdict hides its frames (pytest's way)
            assert "pytest_harness/" in text or "site-packages/" in text, test
    miss = "\n".join(shown["test_miss"])
    assert "site-packages/openai/" in miss
    assert "site-packages/vcr/" in miss
    assert "E           pytest_harness.errors.CassetteMiss: no recording in" in miss


def test_a_sampled_tests_first_failure_is_shown_briefly(suite: pytest.Pytester) -> None:
    report = run(suite)["test_live_sampled"]

    first = report.index("sample 1 failed:")
    assert report[first + 1].startswith("AssertionError: Panel verdict: FAIL")
    line = line_of(suite, "def test_live_sampled") + 1
    assert f"test_inner.py:{line}: in test_live_sampled" in report
    assert not any("pytest_harness/" in line or "site-packages" in line for line in report)


def test_the_users_own_assert_keeps_pytests_report(suite: pytest.Pytester) -> None:
    report = run(suite)["test_live_user_assert"]

    assert '>       assert said == "something else"' in report
    assert "E       AssertionError: assert 'hello there' == 'something else'" in report
    assert not any("left out" in line for line in report)


@pytest.mark.parametrize("style", ["auto", "long"])
def test_a_harness_error_while_collecting_reads_as_a_tests_does(
    pytester: pytest.Pytester, style: str
) -> None:
    pytester.makepyfile(test_collected=COLLECTED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", f"--tb={style}")
    result.assert_outcomes(errors=1)

    report = reports(result.outlines)["test_collected"]
    if style == "long":  # pytest's report: every frame, the message last
        assert "pytest_harness/_model/structured.py" in "\n".join(report)
        assert re.fullmatch(r"\S+_model/structured.py:\d+: ConfigError", report[-1])
        return
    assert report[0].startswith("ConfigError: agent Typo: its output schema is not valid at type")
    assert report[1:] == [
        "",
        "test_collected.py:4: in <module>",
        "    class Typo(Agent):",
        "(its traceback through pytest_harness is left out: run with --tb=long to see it)",
    ]


def line_of(suite: pytest.Pytester, text: str) -> int:
    """The number of the first line of the suite's module that holds ``text``."""
    source = (suite.path / "test_inner.py").read_text()
    return source[: source.index(text)].count("\n") + 1


def _pattern(glob: str) -> str:
    return ".*".join(re.escape(part) for part in glob.split("*"))
