"""@pytest.mark.scenarios: a team's output parametrizes a test, recorded once, replayed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_harness import Agent
from pytest_harness._scenarios import Request, ids
from pytest_harness.orchestrator._tools import tool
from pytest_harness.team import SharedState
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

MESSAGES = ["My parcel is late!", "Where is order A-1?", "My parcel is late, again."]

TEAM = """
import os
from pytest_harness import Agent
from pytest_harness.team import SharedState

class Writer(Agent):
    model = "openai/loopback"
    params = {"api_base": os.environ["URL"], "api_key": "loopback-not-a-secret"}
    instructions = "You write customer messages."

class Messages(SharedState):
    members = (Writer,)
    max_cycles = 3

    def aggregate(self, store):
        return [finding.content for finding in store.read_all()]

class Nothing(Messages):
    def aggregate(self, store):
        return []
"""

SUITE = """
import pytest
from conftest import Messages, Nothing

@pytest.mark.scenarios(Messages, input="late parcels")
def test_reply(scenario):
    assert isinstance(scenario, str)
    print("SCENARIO", scenario)

@pytest.mark.scenarios(Messages, input="late parcels", limit=1)
def test_first_only(scenario):
    pass

@pytest.mark.scenarios(Nothing, input="late parcels")
def test_nothing(scenario):
    pass

@pytest.mark.scenarios(Messages, input="late parcels", limit=0)
def test_bad_limit(scenario):
    pass

def test_plain():
    pass
"""


def writer(body: dict[str, Any]) -> Reply:
    """A member turn: write one finding (the next message), then say it is done."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(content="done")
    cycle = int(body["messages"][-1]["content"].split("Cycle ")[1][0])
    call = ToolCallSpec(name="write_finding", arguments={"content": MESSAGES[cycle - 1]})
    return Reply(content=None, tool_calls=[call])


@pytest.fixture
def team_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with LoopbackServer(writer) as server:
        monkeypatch.setenv("URL", server.url)
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        pytester.makeconftest(TEAM)
        pytester.makepyfile(test_suite=SUITE)
        pytester.makepyfile(
            collected_imports="import sys\n\n"
            "def pytest_collection_finish(session):\n"
            "    print('IMPORTED litellm=' + str('litellm' in sys.modules))\n"
        )
        yield server


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Test id -> outcome, from -v output."""
    found = {}
    for line in result.stdout.lines:
        if line.startswith("test_suite.py::") and " " in line:
            test, _, rest = line.partition(" ")
            found[test.split("::", 1)[1]] = rest.split()[0]
    return found


def test_scenarios_are_recorded_once_and_replayed_offline(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    live = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", "--harness-live")
    recorded = outcomes(live)
    assert recorded["test_reply[my-parcel-is-late]"] == "PASSED"
    assert recorded["test_reply[where-is-order-a-1]"] == "PASSED"
    assert recorded["test_reply[my-parcel-is-late-again]"] == "PASSED"
    assert recorded["test_first_only[my-parcel-is-late]"] == "PASSED"
    assert "test_first_only[where-is-order-a-1]" not in recorded
    # 3 cycles x (write, done) for Messages, once for its two tests, and once for Nothing
    assert len(team_suite.requests) == 12
    (cassette,) = [
        p
        for p in (pytester.path / "cassettes/scenarios").iterdir()
        if p.name.startswith("Messages")
    ]
    data = json.loads(cassette.read_text())
    assert data["metadata"]["scenarios"] == MESSAGES
    assert len(data["interactions"]) == 6
    team_suite.stop()
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    again = outcomes(replayed)
    assert {k: v for k, v in again.items() if k.startswith("test_reply")} == {
        k: v for k, v in recorded.items() if k.startswith("test_reply")
    }
    collected = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--collect-only", "-q", "-p", "collected_imports"
    )
    assert "IMPORTED litellm=False" in collected.stdout.str()  # scenarios read, not replayed
    distributed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    distributed.assert_outcomes(passed=5, errors=2)  # the same ids on both workers


def test_what_goes_wrong_is_one_error_for_that_test(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    team_suite.stop()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=4)  # test_plain runs; the session goes on
    result.stdout.fnmatch_lines(
        [
            "test_suite.py::test_reply: no recorded scenarios of Messages*"
            "To record them: pytest 'test_suite.py::test_reply' --harness-live",
            "test_suite.py::test_bad_limit: @pytest.mark.scenarios(limit=...) expects a "
            "positive whole number or None, got 0.",
        ]
    )


def test_a_team_that_produces_nothing_is_that_tests_error(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rE", "--harness-live", "-k", "nothing or plain"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*Nothing produced no scenarios*"])


def test_a_test_without_a_scenario_argument_is_told_to_add_one(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(TEAM.replace('os.environ["URL"]', '"http://127.0.0.1:9"'))
    pytester.makepyfile(
        test_bare="""
        import pytest
        from conftest import Messages

        @pytest.mark.scenarios(Messages, input="x")
        def test_bare():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*gives each test a `scenario` argument*"])
    assert result.ret != 0


def test_ids_are_short_readable_and_unique() -> None:
    long = "An extremely long customer message that goes on and on about a parcel"
    assert ids(["Hi!", "hi", {"name": "Angry Bob"}, {"text": "x"}, long, "???"]) == [
        "hi",
        "hi-2",
        "angry-bob",
        "text-x",
        "an-extremely-long-customer-message-that",
        "scenario",
    ]


def test_the_cassette_is_named_from_the_team_and_a_hash(tmp_path: Path) -> None:
    from pytest_harness import Agent
    from pytest_harness._scenarios import Request
    from pytest_harness.team import SharedState

    class Writer(Agent):
        model = "openai/x"

    class Team(SharedState):
        members = (Writer,)
        max_cycles = 1

    class Longer(Team):
        max_cycles = 2

    first = Request(Team, "input", None).path(tmp_path)
    assert first.parent == tmp_path / "scenarios"
    assert first.name.startswith("Team-")
    assert Request(Team, "input", 5).path(tmp_path) == first  # the limit is not generation
    assert Request(Team, "other", None).path(tmp_path) != first
    assert Request(Longer, "input", None).path(tmp_path).name.startswith("Longer-")


def test_the_strategy_draws_from_the_recorded_scenarios(tmp_path: Path) -> None:
    from hypothesis import find

    from pytest_harness import Agent
    from pytest_harness._scenarios import Request
    from pytest_harness.errors import ConfigError
    from pytest_harness.strategies import scenarios
    from pytest_harness.team import SharedState

    class Writer(Agent):
        model = "openai/x"

    class Team(SharedState):
        members = (Writer,)
        max_cycles = 1

    path = Request(Team, "late parcels", None).path(tmp_path)
    path.parent.mkdir(parents=True)
    metadata = {"run": "r", "scenarios": MESSAGES}
    path.write_text(json.dumps({"version": 1, "metadata": metadata, "interactions": []}))
    strategy = scenarios(Team, "late parcels", cassette_dir=tmp_path)
    assert find(strategy, lambda s: True) == MESSAGES[0]  # shrinks to the first
    assert find(strategy, lambda s: "A-1" in s) == MESSAGES[1]
    with pytest.raises(ConfigError, match="no recorded scenarios of Team for 'other'"):
        find(scenarios(Team, "other", cassette_dir=tmp_path), lambda s: True)


def test_under_xdist_the_first_worker_generates_and_the_others_read(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--harness-live", "-k", "not nothing"
    )
    result.assert_outcomes(passed=5, errors=1)  # test_bad_limit's error is its own
    # Messages generated once (6 requests), not once per worker. Nothing (collected, then
    # deselected) produced nothing, so recorded nothing: each worker tried it (2 x 6).
    assert len(team_suite.requests) == 18


def test_changing_a_members_instructions_asks_for_a_new_recording(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    """Recorded, then the Writer's instructions change: the old recording holds scenarios
    the changed team never wrote, so it is not replayed; the test errors saying why and how
    to record."""
    live = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--harness-live", "-k", "test_reply"
    )
    assert outcomes(live)["test_reply[my-parcel-is-late]"] == "PASSED"
    (old,) = (pytester.path / "cassettes/scenarios").iterdir()
    team_suite.stop()
    changed = TEAM.replace("You write customer messages.", "You write angry customer messages.")
    assert changed != TEAM
    pytester.makeconftest(changed)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", "-k", "test_reply")
    assert outcomes(result)["test_reply[scenarios-unavailable]"] == "ERROR"
    assert "PASSED" not in result.stdout.str()  # no stale scenario was replayed
    result.stdout.fnmatch_lines(
        [
            f"test_suite.py::test_reply: no recorded scenarios of Messages for this input at "
            f"*. {old.name} was recorded for another declaration or input: the team's members, "
            "their models or instructions, its settings, or the input changed since, *"
            "To record them: pytest 'test_suite.py::test_reply' --harness-live",
        ]
    )
    assert old.exists()  # left for the user to delete once the new one is recorded


class Writer(Agent):
    model = "openai/x"
    instructions = "You write customer messages."
    params: ClassVar[dict[str, Any]] = {
        "max_tokens": 50,
        "api_base": "http://127.0.0.1:1",
        "api_key": "key-1",
    }


class Reader(Agent):  # declared exactly as Writer: only its name tells them apart
    model = "openai/x"
    instructions = "You write customer messages."
    params: ClassVar[dict[str, Any]] = {
        "max_tokens": 50,
        "api_base": "http://127.0.0.1:1",
        "api_key": "key-1",
    }


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return order


def generation_path(tmp_path: Path, **change: Any) -> Path:
    """Where a scenarios recording of a two-member team goes, with one thing changed."""
    writer = type("Writer", (Writer,), change.pop("writer", {}))
    seat = SharedState.member(writer, **change.pop("member", {}))
    members = {"writer": [seat, Reader], "swapped": [Reader, seat]}[change.pop("order", "writer")]
    settings = {"max_cycles": 2, **change.pop("team", {})}
    team = type("Team", (SharedState,), {"members": members, **settings})
    request = Request(team, change.pop("input", "late parcels"), change.pop("limit", None))
    assert not change, change
    return request.path(tmp_path)


@pytest.mark.parametrize(
    "change",
    [
        {"writer": {"instructions": "You write angry customer messages."}},
        {"member": {"instruction": "Be upset but polite."}},
        {"writer": {"model": "openai/y"}},
        {"order": "swapped"},
        {"member": {"name": "Author"}},
        {"writer": {"temperature": 0.9}},
        {"writer": {"params": {**Writer.params, "max_tokens": 500}}},
        {"writer": {"tools": [lookup]}},
        {"member": {"timeout": 5}},
        {"team": {"coordination": "Read, then write."}},
        {"team": {"max_cycles": 3}},
        {"team": {"timeout": 60}},
        {"team": {"member_requests": 3}},
        {"team": {"member_tool_rounds": 1}},
        {"team": {"member_timeout": 30}},
        {"team": {"unique_findings": True}},
        {"input": "lost parcels"},
        {"input": {"topic": "late parcels"}},
    ],
    ids=[
        "agent-instructions",
        "member-instruction",
        "model",
        "member-order",
        "member-name",
        "temperature",
        "params",
        "tools",
        "member-own-timeout",
        "coordination",
        "max_cycles",
        "timeout",
        "member_requests",
        "member_tool_rounds",
        "member_timeout",
        "unique_findings",
        "input",
        "input-as-data",
    ],
)
def test_what_shapes_the_teams_requests_names_another_recording(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Each of these changes what the team asks its models (or how many turns it takes), so
    a recording made before it must not be replayed after it."""
    before = generation_path(tmp_path)
    assert generation_path(tmp_path) == before  # the same declaration: the same recording
    after = generation_path(tmp_path, **change)
    assert after.parent == before.parent
    assert after.name.startswith("Team-")
    assert after != before


@pytest.mark.parametrize(
    "change",
    [
        {"writer": {"params": {**Writer.params, "api_base": "https://other.example/v1"}}},
        {"writer": {"params": {**Writer.params, "api_key": "key-2"}}},
        {"limit": 2},
    ],
    ids=["endpoint", "key", "limit"],
)
def test_where_requests_go_and_how_many_scenarios_a_test_takes_keep_the_recording(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """The endpoint and key (the cassette replays without either) and the marker's limit
    (it picks from what was generated) do not change what is generated."""
    assert generation_path(tmp_path, **change) == generation_path(tmp_path)


def test_scenarios_record_under_filterwarnings_error(
    pytester: pytest.Pytester, team_suite: LoopbackServer
) -> None:
    """Generation runs at collection, outside any test's warning capture: litellm's own
    warnings (pydantic's about its types, on a first call in a fresh process) stay quiet."""
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\nfilterwarnings =\n    error\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live", "-k", "test_reply"
    )
    result.assert_outcomes(passed=3)


def test_the_team_alone_is_one_line_naming_the_forms(pytester: pytest.Pytester) -> None:
    """pytest takes a class given alone for the thing to mark: the team is marked, then
    called with the test function. That test errors alone, saying so; the others run."""
    pytester.makeconftest(TEAM.replace('os.environ["URL"]', '"http://127.0.0.1:9"'))
    pytester.makepyfile(
        test_alone="""
        import pytest
        from conftest import Messages

        @pytest.mark.scenarios(Messages)
        def test_reply(scenario):
            pass

        @pytest.mark.scenarios(Messages)
        class TestReplies:
            def test_one(self, scenario):
                pass

        def test_other():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=2)
    assert "Interrupted" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_reply*",
            "test_alone.py::test_reply: "
            "@pytest.mark.scenarios(Messages) names the team alone, which pytest takes for "
            "the class to mark: give the input too, as in @pytest.mark.scenarios(Messages, "
            'input="...") or @pytest.mark.scenarios(Messages, "...", limit=N).',
        ]
    )
    assert "TypeError" not in result.stdout.str()


WRONG_MARKERS = """
import pytest
from conftest import Messages

@pytest.mark.scenarios(Messages, input="late parcels")
def test_no_scenario_argument():
    pass

@pytest.mark.scenarios(team=Messages)
def test_no_input(scenario):
    pass

def test_plain():
    pass

def test_other():
    pass
"""


def test_a_wrong_scenarios_test_errors_alone_and_the_session_runs_on(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(TEAM.replace('os.environ["URL"]', '"http://127.0.0.1:9"'))
    pytester.makepyfile(test_wrong=WRONG_MARKERS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # not INTERRUPTED
    assert "Interrupted" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_no_scenario_argument[[]scenarios-unavailable[]]*",
            "test_wrong.py::test_no_scenario_argument: @pytest.mark.scenarios gives each test "
            "a `scenario` argument: add `scenario` to the test's parameters.",
            "*ERROR at setup of test_no_input[[]scenarios-unavailable[]]*",
            "test_wrong.py::test_no_input: @pytest.mark.scenarios(Messages) has no input: "
            'write @pytest.mark.scenarios(Messages, input="...") or '
            '@pytest.mark.scenarios(Messages, "...", limit=N).',
        ]
    )
