"""Trajectories against a reference: ``assert_matches`` and the recorded trajectory.

Units: every mode with every way of comparing arguments, properties of the modes
(hypothesis), the failure message's side-by-side rows, wrong arguments, a cassette's stored
interactions read back as a trajectory. End to end (pytester, a scripted model on loopback):
a golden recording of an agent loop over the OpenAI SDK is the reference of another test,
in replay and after the model's tool calls change; an orchestrator run against its own
golden recording.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import interactions
from pytest_harness._cassettes.write import merge_and_write
from pytest_harness._pytest_glue.fixture import Harness
from pytest_harness._trajectory import TrafficCall, TrafficTrajectory, from_interactions
from pytest_harness._trajectory_reference import MODES
from pytest_harness.errors import CassetteError, ConfigError
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec, completion_body


def call(name: str, arguments: Any = None, request: int = 1) -> TrafficCall:
    arguments = {} if arguments is None else arguments
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    parsed = None if isinstance(arguments, str) else arguments
    return TrafficCall(
        id=None, name=name, arguments=parsed, raw_arguments=raw, result="ok", request=request
    )


def trajectory(*calls: TrafficCall) -> TrafficTrajectory:
    return TrafficTrajectory(tool_calls=calls)


def passes(actual: TrafficTrajectory, reference: Any, mode: str, **options: Any) -> bool:
    try:
        actual.assert_matches(reference, mode, **options)  # type: ignore[arg-type]
    except AssertionError:
        return False
    return True


SEARCH_A, OPEN_3, SEARCH_B = (
    call("search", {"q": "a"}),
    call("open", {"id": 3}),
    call("search", {"q": "b"}),
)
ACTUAL = trajectory(SEARCH_A, OPEN_3, SEARCH_B)


# Every mode with every argument matcher.

SAME = [("search", {"q": "a"}), ("open", {"id": 3}), ("search", {"q": "b"})]
SHUFFLED = [("open", {"id": 3}), ("search", {"q": "b"}), ("search", {"q": "a"})]
OTHER_ARGUMENTS = [("search", {"q": "a"}), ("open", {"id": 4}), ("search", {"q": "b"})]
FEWER = [("open", {"id": 3}), ("search", {"q": "b"})]
MORE = [*SAME, ("close", {"id": 3})]


def at_least_id_3(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    return "q" in actual or actual["id"] >= expected["id"] - 1


@pytest.mark.parametrize(
    ("reference", "arguments", "expected"),
    [
        # reference, arguments rule -> strict, unordered, subset, superset
        (SAME, "exact", (True, True, True, True)),
        (SHUFFLED, "exact", (False, True, True, True)),
        (OTHER_ARGUMENTS, "exact", (False, False, False, False)),
        (OTHER_ARGUMENTS, "ignore", (True, True, True, True)),
        (OTHER_ARGUMENTS, at_least_id_3, (True, True, True, True)),
        (OTHER_ARGUMENTS, {"open": "ignore"}, (True, True, True, True)),
        (OTHER_ARGUMENTS, {"open": at_least_id_3}, (True, True, True, True)),
        (OTHER_ARGUMENTS, {"search": "ignore"}, (False, False, False, False)),
        (SHUFFLED, {"search": "ignore"}, (False, True, True, True)),
        (FEWER, "exact", (False, False, False, True)),
        (FEWER, "ignore", (False, False, False, True)),
        (FEWER, at_least_id_3, (False, False, False, True)),
        (MORE, "exact", (False, False, True, False)),
        (MORE, {"close": "ignore"}, (False, False, True, False)),
        (MORE, at_least_id_3, (False, False, True, False)),
    ],
)
def test_each_mode_with_each_argument_matcher(
    reference: list[Any], arguments: Any, expected: tuple[bool, ...]
) -> None:
    outcomes = tuple(passes(ACTUAL, reference, mode, arguments=arguments) for mode in MODES)
    assert outcomes == expected


def test_each_form_of_an_expected_call() -> None:
    forms: list[Any] = [
        "search",  # arguments not checked
        {"name": "open", "arguments": {"id": 3}},
        ("search", '{"q": "b"}'),  # arguments as JSON text
    ]
    ACTUAL.assert_matches(forms)
    ACTUAL.assert_matches([{"name": "search"}, {"name": "open"}, {"name": "search"}])
    ACTUAL.assert_matches(ACTUAL.tool_calls)  # a trajectory's calls
    ACTUAL.assert_matches(trajectory(*ACTUAL.tool_calls))  # a whole trajectory
    assert not passes(ACTUAL, ["search", {"name": "open", "arguments": {}}, "search"], "strict")


def test_a_bare_name_never_checks_arguments_whatever_the_rule() -> None:
    never = lambda expected, actual: False  # noqa: E731
    ACTUAL.assert_matches(["search", "open", "search"], arguments=never)
    assert not passes(ACTUAL, SAME, "strict", arguments=never)


def test_arguments_compare_as_json() -> None:
    lists = trajectory(call("pick", {"ids": [1, 2]}))
    lists.assert_matches([("pick", {"ids": (1, 2)})])  # a tuple is a JSON list
    broken = trajectory(call("pick", '{"ids": [1,'))  # arguments that did not parse
    broken.assert_matches([("pick", '{"ids": [1,')])
    assert not passes(broken, [("pick", {"ids": [1]})], "strict")


def test_a_callable_gets_the_expected_then_the_actual_arguments() -> None:
    seen: list[tuple[Any, Any]] = []
    ACTUAL.assert_matches(
        [("open", {"id": 1})], "superset", arguments=lambda e, a: seen.append((e, a)) is None
    )
    assert seen == [({"id": 1}, {"id": 3})]


def test_matching_is_a_proper_matching_not_a_greedy_one() -> None:
    # The first expected call accepts both actual ones, the second only the first: a greedy
    # match gives the first actual call to the first expected and fails the second.
    def at_least(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
        return bool(actual["n"] >= expected["n"])

    actual = trajectory(call("f", {"n": 2}), call("f", {"n": 1}))
    reference = [("f", {"n": 1}), ("f", {"n": 2})]
    for mode in ("unordered", "subset", "superset"):
        actual.assert_matches(reference, mode, arguments=at_least)  # type: ignore[arg-type]
    assert not passes(actual, reference, "strict", arguments=at_least)


def test_each_reference_call_matches_one_call_only() -> None:
    twice = trajectory(call("search"), call("search"))
    assert not passes(twice, ["search"], "subset")
    twice.assert_matches(["search"], "superset")
    assert not passes(trajectory(call("search")), ["search", "search"], "superset")


# Properties.

CALLS = st.builds(
    call,
    st.sampled_from(["search", "open", "close"]),
    st.fixed_dictionaries({}, optional={"id": st.integers(0, 2)}),
)


@given(st.lists(CALLS, max_size=6))
def test_a_trajectory_matches_itself_in_every_mode(calls: list[TrafficCall]) -> None:
    for mode in MODES:
        trajectory(*calls).assert_matches(trajectory(*calls), mode)  # type: ignore[arg-type]


@given(st.lists(CALLS, max_size=6), st.randoms(use_true_random=False))
def test_a_permutation_matches_unordered_and_strict_only_when_equal(
    calls: list[TrafficCall], random: Any
) -> None:
    shuffled = random.sample(calls, len(calls))
    actual = trajectory(*shuffled)
    actual.assert_matches(calls, "unordered")
    same = [(c.name, c.arguments) for c in calls] == [(c.name, c.arguments) for c in shuffled]
    assert passes(actual, calls, "strict") == same


@given(st.lists(CALLS, max_size=5), st.lists(CALLS, max_size=5))
def test_subset_and_superset_are_mirror_images(
    first: list[TrafficCall], second: list[TrafficCall]
) -> None:
    one, other = trajectory(*first), trajectory(*second)
    assert passes(one, other, "subset") == passes(other, one, "superset")
    both = passes(one, other, "subset") and passes(one, other, "superset")
    assert both == passes(one, other, "unordered")


# The failure message.


def failure(actual: TrafficTrajectory, reference: Any, mode: str = "strict") -> list[str]:
    with pytest.raises(AssertionError) as failed:
        actual.assert_matches(reference, mode)  # type: ignore[arg-type]
    return [line.rstrip() for line in str(failed.value).splitlines()]


def test_a_strict_failure_aligns_both_trajectories() -> None:
    lines = failure(ACTUAL, ["search", ("open", {"id": 4}), "close", ("search", {"q": "b"})])
    assert lines[:9] == [
        "expected the tool calls of the reference in strict order; 2 of 4 matched.",
        "",
        "  #  reference          actual",
        "---  -----------------  -----------------  --",
        '  1  search             search({"q":"a"})  =',
        '  2  open({"id":4})     open({"id":3})     ~',
        "  3  close                                 -",
        '  4  search({"q":"b"})  search({"q":"b"})  =',
        "",
    ]
    assert lines[9] == "the application's model traffic: 0 request(s)"
    assert lines[11].split() == ["request", "tool", "arguments", "result", "or", "error", "time"]
    assert len(lines) == 16  # then the trajectory's table: a rule, three calls


def test_a_replaced_call_is_missing_then_extra() -> None:
    lines = failure(trajectory(call("search"), call("open")), ["search", "close"])
    assert lines[0] == "expected the tool calls of the reference in strict order; 1 of 2 matched."
    assert lines[4:7] == [
        "  1  search       search({})  =",
        "  2  close                    -",
        "  3               open({})    +",
    ]


@pytest.mark.parametrize(
    ("mode", "reference", "problem", "rows"),
    [
        (
            "unordered",
            [("search", {"q": "b"}), "open"],
            "expected the tool calls of the reference in any order (unordered); 2 of 3 matched.",
            [
                '1  search({"q":"b"})  search({"q":"b"})  =',
                '2  open  open({"id":3})  =',
                '3  search({"q":"a"})  +',
            ],
        ),
        (
            "subset",
            ["open", ("search", {"q": "z"})],
            "expected no tool call beyond the reference (subset); 1 of 3 matched.",
            [
                '1  open  open({"id":3})  =',
                '2  search({"q":"z"})  search({"q":"a"})  ~',
                '3  search({"q":"b"})  +',
            ],
        ),
        (
            "superset",
            ["open", "close"],
            "expected every tool call of the reference (superset); 1 of 2 matched.",
            [
                '1  open  open({"id":3})  =',
                "2  close  -",
                '3  search({"q":"a"})  +',
                '4  search({"q":"b"})  +',
            ],
        ),
    ],
)
def test_the_other_modes_say_what_failed(
    mode: str, reference: list[Any], problem: str, rows: list[str]
) -> None:
    lines = failure(ACTUAL, reference, mode)
    assert lines[0] == problem
    assert [" ".join(line.split()) for line in lines[4 : 4 + len(rows)]] == [
        " ".join(row.split()) for row in rows
    ]


def test_long_arguments_are_clipped() -> None:
    long = trajectory(call("write", {"text": "x" * 200}))
    lines = failure(long, ["read"])
    assert any(line.endswith("…  +") for line in lines[4:6]), lines


# Wrong arguments.


@pytest.mark.parametrize(
    ("reference", "said"),
    [
        ("search", "got 'search' (str)"),
        ({"name": "search"}, "got {'name': 'search'} (dict)"),
        (42, "got 42 (int)"),
        ([42], "each expected call of assert_matches must be a tool name"),
        ([("search",)], "got ('search',) (tuple)"),
        ([{"tool": "search"}], "got {'tool': 'search'} (dict)"),
        ([{"name": "search", "args": {}}], "(dict)"),
    ],
)
def test_a_reference_of_the_wrong_kind_is_a_config_error(reference: Any, said: str) -> None:
    with pytest.raises(ConfigError, match="a tool name, a mapping") as raised:
        ACTUAL.assert_matches(reference)
    assert said in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_an_unknown_mode_is_a_config_error_listing_the_modes() -> None:
    with pytest.raises(ConfigError, match="one of strict, unordered, subset, superset; got 'any'"):
        ACTUAL.assert_matches(["search"], "any")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ("exactly", "assert_matches arguments must be 'exact', 'ignore', a callable"),
        ({"open": "loose"}, "assert_matches arguments['open'] must be 'exact', 'ignore'"),
        (None, "got None (NoneType)"),
    ],
)
def test_a_wrong_arguments_rule_is_a_config_error(arguments: Any, where: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ACTUAL.assert_matches(["search"], arguments=arguments)
    assert where in str(raised.value)


# A cassette's interactions read back.

CHAT = "https://api.openai.com/v1/chat/completions"
MCP = "https://tools.example.com/mcp"


def chat(reply: Reply, *, latency: float | None = 1.5, **fields: Any) -> dict[str, Any]:
    asked = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Paris?"}]}
    asked["tools"] = [{"type": "function", "function": {"name": "get_weather"}}]
    stored = interactions.interaction(
        {"method": "POST", "uri": CHAT, "body": json.dumps(asked).encode()},
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps(completion_body(asked, reply, 1)).encode()},
        },
        latency,
    )
    return {**stored, **fields}


def mcp_call(name: str, arguments: dict[str, Any], text: str) -> dict[str, Any]:
    asked = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    asked["params"] = {"name": name, "arguments": arguments}
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}}
    return interactions.interaction(
        {"method": "POST", "uri": MCP, "body": json.dumps(asked).encode()},
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": f"event: message\ndata: {json.dumps(answer)}\n\n".encode()},
        },
        0.25,
    )


WEATHER = Reply(tool_calls=[ToolCallSpec(name="get_weather", arguments={"city": "Paris"})])
STORED = [
    chat(WEATHER),
    {"request": {"method": "POST", "uri": CHAT, "body": "{}"}, "failure": {"type": "Boom"}},
    {
        "request": {"method": "GET", "uri": "http://127.0.0.1:9/health", "body": None},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "ok"}},
    },
    mcp_call("get_time", {"city": "Paris"}, "noon"),
    chat(Reply(content="Sunny at noon."), latency=None, seam="seam-key"),  # the harness's own
]


def test_stored_interactions_are_a_trajectory_in_file_order() -> None:
    read = from_interactions(STORED)
    assert [r.number for r in read.requests] == [1, 2]
    first = read.requests[0]
    assert (first.api, first.model, first.tools, first.tool_calls) == (
        "openai.chat",
        "gpt-4o-mini",
        ("get_weather",),
        ["get_weather"],
    )
    assert (first.replayed, first.latency_s, read.requests[1].latency_s) == (True, 1.5, None)
    assert read.tools_called == ["get_weather", "get_time"]
    weather, time = read.tool_calls
    assert (weather.arguments, weather.request, weather.asked) == ({"city": "Paris"}, 1, True)
    assert (time.result, time.request, time.asked, time.seconds) == ("noon", 1, False, 0.25)
    assert time.server == MCP
    read.assert_matches(["get_weather", ("get_time", {"city": "Paris"})])


def test_no_interactions_no_trajectory() -> None:
    assert from_interactions([]).tool_calls == ()
    assert from_interactions(STORED[1:3]).request_count == 0  # a failure and other traffic


# ``harness.recorded_trajectory``.


def test_a_recorded_cassette_by_name_or_path(tmp_path: Path) -> None:
    path = tmp_path / "golden" / "weather.yaml"
    path.parent.mkdir()
    merge_and_write(path, STORED, mode="all", run_id="r", secrets=())
    harness = Harness("test_x.py::test_x", cassette_dir=tmp_path)
    for cassette in ("golden/weather", "golden/weather.yaml", path):
        assert harness.recorded_trajectory(cassette).tools_called == ["get_weather", "get_time"]


def test_a_missing_cassette_names_the_file_and_how_to_record_it(tmp_path: Path) -> None:
    harness = Harness("test_x.py::test_x", cassette_dir=tmp_path)
    with pytest.raises(CassetteError) as raised:
        harness.recorded_trajectory("golden")
    assert str(raised.value) == (
        f"harness.recorded_trajectory('golden') found no cassette at {tmp_path / 'golden.yaml'}."
        " Record it: run pytest --harness-live on the test (marked cassette='golden') that"
        " writes it."
    )
    with pytest.raises(ConfigError, match=r"without '\.\.'"):
        harness.recorded_trajectory("../golden")


def test_a_damaged_cassette_is_a_cassette_error(tmp_path: Path) -> None:
    (tmp_path / "golden.yaml").write_text("interactions: [", encoding="utf-8")
    with pytest.raises(CassetteError, match=r"golden\.yaml"):
        Harness(cassette_dir=tmp_path).recorded_trajectory("golden")


# End to end: a golden recording as the reference of another test.

AGENT = '''
import openai
from conftest import KEY, URL

RESULTS = {"get_weather": "sunny", "get_time": "noon", "get_news": "calm"}


def agent(question):
    """A hand-written tool loop over the OpenAI SDK."""
    messages = [{"role": "user", "content": question}]
    tools = [{"type": "function", "function": {"name": name}} for name in RESULTS]
    with openai.OpenAI(base_url=URL, api_key=KEY) as client:
        for _ in range(3):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message.model_dump()
            calls = message.get("tool_calls") or []
            if not calls:
                return message["content"]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                result = RESULTS[call["function"]["name"]]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the agent never answered")
'''

TESTS = """
import pytest
from agent import agent


@pytest.mark.harness(cassette="golden/weather")
def test_golden(harness):
    assert agent("Paris?").startswith("Found")


@pytest.mark.harness
def test_agent(harness):
    agent("Paris?")
    golden = harness.recorded_trajectory("golden/weather")
    assert golden.tools_called == ["get_weather", "get_time"]
    harness.trajectory.assert_matches(golden)
    harness.trajectory.assert_matches(["get_time", "get_weather"], "unordered")
"""

CALLS_WANTED = [
    ToolCallSpec(name="get_weather", arguments={"city": "Paris"}),
    ToolCallSpec(name="get_time", arguments={"city": "Paris"}),
]


def scripted(calls: list[ToolCallSpec]) -> Any:
    """The model: the tool calls of ``calls`` the request offers, then, with the results
    back, an answer."""

    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            sent = [m["content"] for m in messages if m["role"] == "tool"]
            return Reply(content="Found: " + ", ".join(sent))
        offered = {tool["function"]["name"] for tool in body.get("tools", [])}
        return Reply(content=None, tool_calls=[c for c in calls if c.name in offered])

    return reply


@pytest.fixture
def script() -> list[ToolCallSpec]:
    return list(CALLS_WANTED)


@pytest.fixture
def model_server(script: list[ToolCallSpec]) -> Iterator[LoopbackServer]:
    with LoopbackServer(scripted(script)) as server:
        yield server


@pytest.fixture
def project(pytester: pytest.Pytester, model_server: LoopbackServer) -> pytest.Pytester:
    pytester.makeconftest(f"URL = {model_server.url!r}\nKEY = 'sk-loopback-0123456789'\n")
    pytester.makepyfile(agent=AGENT, test_reference=TESTS)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_a_golden_recording_is_the_reference_of_another_test(
    project: pytest.Pytester, model_server: LoopbackServer, script: list[ToolCallSpec]
) -> None:
    run(project, "--harness-live").assert_outcomes(passed=2)
    assert len(model_server.requests) == 4
    assert (project.path / "cassettes" / "golden" / "weather.yaml").is_file()
    run(project).assert_outcomes(passed=2)  # replayed
    assert len(model_server.requests) == 4

    script[1:] = [
        ToolCallSpec(name="get_time", arguments={"city": "Rome"}),
        ToolCallSpec(name="get_news", arguments={"city": "Paris"}),
    ]
    result = run(project, "--harness-live", "-k", "test_agent")  # re-recorded: it changed
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "AssertionError: expected the tool calls of the reference in strict order;"
            " 1 of 3 matched.",
            "  #  reference*actual",
            '  1  get_weather({"city":"Paris"})  get_weather({"city":"Paris"})  =',
            '  2  get_time({"city":"Paris"})     get_time({"city":"Rome"})      ~',
            '  3                                 get_news({"city":"Paris"})     +',
            "the application's model traffic: 2 request(s)",
        ]
    )


RUNS = """
import pytest
from pytest_harness.orchestrator import tool
from conftest import URL

PARAMS = {"api_base": URL, "api_key": "loopback-not-a-secret"}


@tool
def get_weather(city: str) -> str:
    "The weather in a city."
    return "sunny"


@tool
def get_time(city: str) -> str:
    "The time in a city."
    return "noon"


def weather_run(harness):
    agent = harness.orchestrator("openai/loopback", [get_weather, get_time], params=PARAMS)
    return agent.run("Paris?")


@pytest.mark.harness(cassette="golden/run")
def test_golden(harness):
    weather_run(harness).assert_stopped("done")


@pytest.mark.harness
def test_run(harness):
    run = weather_run(harness)
    golden = harness.recorded_trajectory("golden/run")
    assert golden.request_count == 2  # the orchestrator's own requests count
    run.assert_matches(golden)
    run.assert_matches([("get_weather", {"city": "Paris"})], "superset")
    harness.trajectory.assert_matches([])  # the application itself called no model
"""


def test_an_orchestrator_run_against_its_golden_recording(
    pytester: pytest.Pytester, model_server: LoopbackServer
) -> None:
    # In a subprocess, as in test_orchestrator: litellm's lazy modules stay in theirs.
    pytester.makeconftest(f"URL = {model_server.url!r}\n")
    pytester.makepyfile(test_runs=RUNS)
    args = ("-p", "no:cacheprovider", "-p", "no:randomly")
    pytester.runpytest_subprocess(*args, "--harness-live").assert_outcomes(passed=2)
    model_server.stop()
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=2)
