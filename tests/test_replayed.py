"""What a replay used of its cassette, left unused and ran live; strict replay.

Recorded against the loopback scripted model, then replayed with the code under test asking
for less (an environment variable drops its second call) or doing more (a subprocess, a
connection to an allowed host).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import bodies, replayed
from pytest_harness.testing import LoopbackServer, Reply

SUITE = """
import os
import socket
import subprocess
import sys

import openai
import pytest

URL = "{url}"


def ask(prompt):
    with openai.OpenAI(base_url=URL, api_key="loopback-not-a-secret") as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}]
        )
    return reply.choices[0].message.content


def both():
    assert ask("first")
    if os.environ.get("SKIP_SECOND") != "1":
        assert ask("second")


def test_plain(harness):
    both()


@pytest.mark.harness(strict_replay=True)
def test_strict(harness):
    both()


@pytest.mark.harness(strict_replay=False)
def test_lenient(harness):
    both()


@pytest.mark.harness(cassette="shared")
def test_shared(harness):
    both()


def test_extra(harness):
    assert ask("first")
    if os.environ.get("EXTRA") == "1":
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        socket.create_connection(("127.0.0.1", {port})).close()
"""


@pytest.fixture
def server() -> Any:
    with LoopbackServer(lambda body: Reply(content="ok")) as running:
        yield running


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


@pytest.fixture
def recorded(pytester: pytest.Pytester, server: LoopbackServer) -> pytest.Pytester:
    pytester.makepyfile(test_app=SUITE.format(url=server.url, port=server.port))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    run(pytester, "--harness-live").assert_outcomes(passed=5)
    return pytester


def rows(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, dict[str, Any]]:
    data = json.loads((pytester.path / name).read_text())
    return {row["test"].rpartition("::")[2]: row for row in data["replay"]}


def test_a_complete_replay_counts_what_it_played_and_says_nothing_more(
    recorded: pytest.Pytester,
) -> None:
    result = run(recorded, "--harness-report=r.json")
    result.assert_outcomes(passed=5)
    found = rows(recorded)
    assert found["test_plain"]["replayed"] == {"http": 2, "tools": 0, "mcp": 0}
    assert found["test_extra"]["replayed"] == {"http": 1, "tools": 0, "mcp": 0}
    assert all(not row["unused"] and not row["live"] for row in found.values())
    assert "pytest-harness replay" not in result.stdout.str()


def test_unused_recordings_are_reported_and_fail_only_a_strict_test(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKIP_SECOND", "1")
    result = run(recorded, "--harness-report=r.json")
    result.assert_outcomes(passed=5, errors=1)  # test_strict, at teardown
    found = rows(recorded)
    (unused,) = found["test_plain"]["unused"]
    assert unused == {
        "interaction": 2,
        "kind": "http",
        "what": "POST http://127.0.0.1:0/v1/chat/completions (model gpt-4o-mini)",
    }
    assert found["test_plain"]["replayed"]["http"] == 1
    assert found["test_strict"]["strict"] is True
    text = result.stdout.str()
    assert "strict replay: test_app.py::test_strict did not use 1 of the recordings" in text
    assert "interaction 2: POST http://127.0.0.1:0/v1/chat/completions" in text
    assert (
        "record the test again from scratch: pytest 'test_app.py::test_strict' --harness-live"
        in text
    )
    assert "@pytest.mark.harness(strict_replay=False)" in text
    section = text[text.index("pytest-harness replay") :]
    assert "5 tests replayed: 5 HTTP calls, 0 tool calls, 0 MCP messages" in section
    assert "3 left recordings unused" in section  # not the shared cassette's test
    assert found["test_shared"]["unused"] == []  # its recordings may be other tests'
    assert found["test_shared"]["replayed"]["http"] == 1


def test_the_ini_makes_every_test_strict_but_the_marker_wins(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKIP_SECOND", "1")
    result = run(recorded, "-o", "harness_strict_replay=true")
    result.assert_outcomes(passed=5, errors=2)  # test_plain and test_strict
    errors = {line for line in result.stdout.lines if line.startswith("ERROR ")}
    assert {line.split(" ")[1] for line in errors} == {
        "test_app.py::test_plain",
        "test_app.py::test_strict",
    }


def test_a_shared_cassette_lists_only_what_its_test_played(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKIP_SECOND", "1")
    result = run(recorded, "-o", "harness_strict_replay=true", "-k", "test_shared")
    result.assert_outcomes(passed=1)  # other tests' recordings may be in it: never strict
    assert "pytest-harness replay" not in result.stdout.str()


def test_what_ran_live_during_a_replay_is_listed(
    recorded: pytest.Pytester, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXTRA", "1")
    result = run(recorded, "--harness-report=r.json", "-k", "extra")
    result.assert_outcomes(passed=1)
    (process, connection) = rows(recorded)["test_extra"]["live"]
    assert process.startswith("subprocess: python")
    assert process.endswith(" -c pass")
    assert connection == f"connection to 127.0.0.1:{server.port} (harness_allow_hosts)"
    assert "ran live" in result.stdout.str()


def test_the_html_report_shows_incomplete_replays_first(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKIP_SECOND", "1")
    run(recorded, "--harness-report=r.html").assert_outcomes(passed=5, errors=1)
    page = (recorded.path / "r.html").read_text()
    table = page[page.index('<section id="replay">') :]
    table = table[: table.index("</section>")]
    rows_html = table.split("<tr ")[2:]  # after the header row
    assert "incomplete" in rows_html[0]
    assert "incomplete" not in rows_html[-1]
    assert "interaction 2: POST http://127.0.0.1:0/v1/chat/completions" in table
    assert "strict replay: fails the test" in table
    assert "replays not complete" in page


def test_a_wrong_strict_replay_argument_names_the_fix(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.harness(strict_replay="yes")
        def test_x(harness):
            pass
        """
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*strict_replay=...) expects True or False, got 'yes'*"])


def _interaction(uri: str, body: Any, **more: Any) -> dict[str, Any]:
    stored = bodies.stored_body(json.dumps(body).encode())
    request = {"method": "POST", "uri": uri, "headers": {}, "body": stored}
    return {"request": request, "response": {"status": {"code": 200}}, **more}


def test_each_kind_of_recording_reads_as_one_line() -> None:
    tool = _interaction("tool:append_line", {"arguments": {"line": "x"}})
    stdio = _interaction(
        "stdio:python server.py",
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1}},
        },
    )
    mcp = _interaction(
        "http://127.0.0.1:0/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    )
    seam = _interaction("https://api.openai.com/v1/chat/completions", {"model": "m"}, seam="k")
    assert [replayed.kind(i) for i in (tool, stdio, mcp, seam)] == ["tools", "mcp", "mcp", "http"]
    assert replayed.described(tool) == 'tool append_line({"line": "x"})'
    assert replayed.described(stdio) == 'MCP stdio:python server.py tools/call add({"a": 1})'
    assert replayed.described(mcp) == "MCP http://127.0.0.1:0/mcp tools/list"
    assert replayed.described(seam) == (
        "POST https://api.openai.com/v1/chat/completions (model m) (the harness's own call)"
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, min_size=1, max_size=3)
    ),
    max_leaves=10,
)


@given(
    uri=st.sampled_from(["tool:t", "stdio:s", "http://h/p", "https://h/v1/messages", "x:"]),
    body=_JSON,
    used=st.booleans(),
)
def test_any_recording_gives_a_report_row(uri: str, body: Any, used: bool) -> None:
    row = replayed.record(
        "t", "c.yaml", [(0, _interaction(uri, body), used)], [], strict=True, shared=False
    )
    json.dumps(row)
    problem = replayed.unused_problem(row, "pytest t --harness-live")
    assert (problem is None) == used
    assert replayed.replay_table([row]) == ("" if used else replayed.replay_table([row]))


def test_processes_are_noted_only_while_listened_for(tmp_path: Path) -> None:
    import subprocess
    import sys

    noted: list[str] = []
    stop = replayed.watch_processes(noted.append)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    stop()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert len(noted) == 1
    assert noted[0].endswith("-c pass")
