"""Recorded tools (issue 46, part 1): ``harness.recorded(fn)`` and ``@tool(recorded=True)``.

End to end, pytest projects (pytester) record with ``--harness-live`` and replay: a tool
that appends to a file runs once while recording and never in replay, with equal results;
an exception replays as the same exception; argument drift is a miss with a diff; pydantic
models and dataclasses round-trip; values no cassette can hold are refused naming the fixes;
a secret in an argument is refused or redacted as a body's; an orchestrator tool and an
openai-agents ``function_tool`` replay without running. Units run the real cassette slot:
hypothesis records and replays arbitrary values, and reads any stored data without a raw
error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness import _recorded_tools
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._pytest_glue import scope
from pytest_harness._trajectory import from_interactions
from pytest_harness.errors import CassetteError, CassetteMiss, UnrecordableTraffic
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the units open cassettes of their own

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")
# The agent frameworks are installed on Python 3.11 and later only (tests/conftest.py).
FRAMEWORKS = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="openai-agents and pydantic-ai need Python 3.11"
)

NOTES = '''
import dataclasses
import enum
import pytest
import pydantic

LOG = "calls.log"


def append_line(path: str, line: str) -> int:
    """Append a line to a file; how many lines it has now."""
    with open(LOG, "a") as log:
        log.write(f"append_line {line}\\n")
    with open(path, "a") as file:
        file.write(line + "\\n")
    with open(path) as file:
        return len(file.readlines())


async def fetch(order: str, *, copies: int = 1) -> tuple:
    with open(LOG, "a") as log:
        log.write(f"fetch {order}\\n")
    return (order, copies)


class DiskFull(Exception):
    pass


def save(text: str) -> None:
    with open(LOG, "a") as log:
        log.write("save\\n")
    raise DiskFull(f"no room for {text!r}")


class Order(pydantic.BaseModel):
    id: str
    lines: list[str]


@dataclasses.dataclass(frozen=True)
class Parcel:
    weight: float
    tags: tuple[str, ...] = ()


class Colour(enum.Enum):
    RED = "red"


def order(id: str) -> dict:
    with open(LOG, "a") as log:
        log.write("order\\n")
    return {"order": Order(id=id, lines=["a"]), "parcel": Parcel(1.5, ("x",)), 7: Colour.RED}


@pytest.mark.harness
def test_append(harness):
    append = harness.recorded(append_line)
    assert append.__name__ == "append_line" and append.__doc__.startswith("Append")
    assert append("notes.txt", line="hello") == 1
    assert append("notes.txt", "world") == 2
    assert append("notes.txt", "hello") == 3  # the same arguments again: its own recording
    called = harness.trajectory.assert_called("append_line", {"path": "notes.txt", "line": "world"})
    assert (called.result, called.asked, called.id) == ("2", False, None)
    harness.trajectory.assert_called_times("append_line", 3)


@pytest.mark.harness
def test_async(harness):
    assert asyncio_run(harness.recorded(fetch)("A-1", copies=2)) == ("A-1", 2)


def asyncio_run(awaitable):
    import asyncio

    return asyncio.run(awaitable)


@pytest.mark.harness
def test_raises(harness):
    with pytest.raises(DiskFull, match="no room for 'x'"):
        harness.recorded(save)("x")
    assert harness.trajectory.calls_of("save")[0].error == "DiskFull: no room for 'x'"


@pytest.mark.harness
def test_models(harness):
    got = harness.recorded(order)("A-1")
    parcel = Parcel(1.5, ("x",))
    assert got == {"order": Order(id="A-1", lines=["a"]), "parcel": parcel, 7: Colour.RED}
    assert type(got["order"]) is Order and type(got["parcel"]) is Parcel


@pytest.mark.harness
def test_no_cassette_runs_live(harness):
    assert harness.recorded(append_line)("live.txt", "x") >= 1


test_no_cassette_runs_live = pytest.mark.harness(cassette=False)(test_no_cassette_runs_live)
'''


def log(project: pytest.Pytester) -> list[str]:
    path = project.path / "calls.log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def notes(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_notes=NOTES)
    return pytester


def test_a_tool_runs_while_recording_and_never_in_replay(notes: pytest.Pytester) -> None:
    notes.runpytest_subprocess(*ARGS, "--harness-live").assert_outcomes(passed=5)
    recorded = log(notes)
    assert recorded.count("append_line hello") == 2
    assert "fetch A-1" in recorded
    assert {"save", "order"} <= set(recorded)
    assert (notes.path / "notes.txt").read_text() == "hello\nworld\nhello\n"

    notes.runpytest_subprocess(*ARGS).assert_outcomes(passed=5)  # replay: equal results
    assert log(notes)[len(recorded) :] == ["append_line x"]  # only the test without a cassette
    assert (notes.path / "notes.txt").read_text() == "hello\nworld\nhello\n"

    cassette = notes.path / "cassettes" / "test_notes" / "test_append.yaml"
    stored = json.loads(cassette.read_text())["interactions"]
    first = stored[0]
    assert (first["request"]["method"], first["request"]["uri"]) == ("POST", "tool:append_line")
    assert first["request"]["body"]["json"] == {"arguments": {"path": "notes.txt", "line": "hello"}}
    assert first["response"]["body"]["json"] == {"result": 1}
    # The changes comparison and harness.recorded_trajectory read them too.
    assert from_interactions(stored).tools_called == ["append_line"] * 3
    raised = notes.path / "cassettes" / "test_notes" / "test_raises.yaml"
    error = json.loads(raised.read_text())["interactions"][0]["response"]["body"]["json"]
    assert error == {
        "error": {
            "type": "test_notes:DiskFull",
            "message": "no room for 'x'",
            "args": ["no room for 'x'"],
        }
    }


def test_argument_drift_is_a_miss_with_a_diff(notes: pytest.Pytester) -> None:
    notes.runpytest_subprocess(*ARGS, "--harness-live", "-k", "append").assert_outcomes(passed=1)
    drifted = NOTES.replace(
        'append("notes.txt", "world") == 2', 'append("notes.txt", "wörld") == 2'
    )
    notes.makepyfile(test_notes=drifted)
    result = notes.runpytest_subprocess(*ARGS, "-k", "append")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recorded call of tool append_line matches this call (cassette *)*",
            '*append_line(line="wörld", path="notes.txt")',
            "*closest recorded call of append_line:",
            "*--- recorded arguments",
            "*+++ this call's arguments",
            '*-  "line": "world",',
            '*+  "line": "wörld",',
            "*append_line: 3 call(s) recorded, 1 used.",
            "*To record it: pytest 'test_notes.py::test_append' --harness-record=new*",
        ]
    )
    assert log(notes).count("append_line wörld") == 0  # the miss ran nothing


def test_a_call_beyond_the_recorded_ones_says_so(notes: pytest.Pytester) -> None:
    notes.runpytest_subprocess(*ARGS, "--harness-live", "-k", "raises").assert_outcomes(passed=1)
    again = NOTES.replace(
        '        harness.recorded(save)("x")\n',
        '        harness.recorded(save)("x")\n    harness.recorded(save)("x")\n',
    )
    notes.makepyfile(test_notes=again)
    result = notes.runpytest_subprocess(*ARGS, "-k", "raises")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*a recorded call has these arguments, but it is already used: save is called more "
            "times than when recorded.",
            "*save: 1 call(s) recorded, 1 used.",
        ]
    )


UNSTORABLE = """
import dataclasses
import pytest
from pytest_harness.errors import UnrecordableTraffic

def tagged(values: list) -> set:
    with open("calls.log", "a") as log:
        log.write("tagged\\n")
    return set(values)

def connect(client: object, query: str) -> str:
    return f"rows for {query}"

class Rows:
    def __init__(self, rows):
        self.rows = rows
    def __eq__(self, other):
        return self.rows == other.rows

class RowsSerializer:
    def dump(self, value):
        return value.rows
    def load(self, data):
        return Rows(data)

@pytest.mark.harness
def test_set(harness):
    harness.recorded(tagged)(["a"])

@pytest.mark.harness
def test_local_class(harness):
    @dataclasses.dataclass
    class Local:
        x: int
    harness.recorded(lambda: Local(1), name="make")()

@pytest.mark.harness
def test_object_argument(harness):
    harness.recorded(connect)(object(), "q")

@pytest.mark.harness
def test_ignored(harness):
    assert harness.recorded(connect, ignore=["client"])(object(), "q") == "rows for q"

@pytest.mark.harness
def test_serializer(harness):
    def rows(n: int) -> Rows:
        return Rows(list(range(n)))
    assert harness.recorded(rows, serializer=RowsSerializer())(3) == Rows([0, 1, 2])
"""


def test_values_no_cassette_can_hold_are_refused_naming_the_fixes(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_unstorable=UNSTORABLE)
    result = pytester.runpytest_subprocess(*ARGS, "--harness-live", "-rf")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*UnrecordableTraffic: tool tagged: cannot store the result: a value of type "
            "builtins.set (JSON cannot hold it, and it is neither a pydantic model nor a "
            "dataclass). The function already ran (its side effects happened), but nothing of "
            "this call was recorded. To make it storable: return JSON values (dicts, lists, "
            "text, numbers), a pydantic model or a dataclass defined at module level; leave an "
            "argument out of the recording with ignore=('name',); or pass serializer= an "
            "object with dump(value) -> JSON and load(JSON) -> value.",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*tool make: cannot store the result: a value of type *Local (its class is defined "
            "inside a function, so replay cannot find it: define it at module level)*"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*tool connect: cannot store argument 'client': a value of type builtins.object*"
            "The function was not called.*"
        ]
    )
    assert (pytester.path / "calls.log").read_text() == "tagged\n"
    replay = pytester.runpytest_subprocess(*ARGS, "-k", "ignored or serializer")
    replay.assert_outcomes(passed=2)


SECRET = """
import os
import pytest

def search(token: str, query: str) -> str:
    return "found " + query

@pytest.mark.harness
def test_search(harness):
    assert harness.recorded(search)(os.environ["SHOP_API_TOKEN"], "socks") == "found socks"
"""


def test_a_secret_in_an_argument_is_refused_unless_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", "tok-live-0123456789abcdef")
    pytester.makepyfile(test_secret=SECRET)
    refused = pytester.runpytest_subprocess(*ARGS, "--harness-live")
    refused.assert_outcomes(passed=1, errors=1)
    refused.stdout.fnmatch_lines(
        ["*refusing to write cassette*1 likely secret(s)*", "*request.body*secret value, tok-*"]
    )
    assert not (pytester.path / "cassettes").exists()

    pytester.makeini("[pytest]\nharness_redact_body_fields = arguments.token\n")
    pytester.runpytest_subprocess(*ARGS, "--harness-live").assert_outcomes(passed=1)
    text = (pytester.path / "cassettes" / "test_secret" / "test_search.yaml").read_text()
    assert "tok-live" not in text
    assert '"token": "REDACTED"' in text
    monkeypatch.setenv("SHOP_API_TOKEN", "tok-other-0123456789abcdef")
    pytester.runpytest_subprocess(*ARGS).assert_outcomes(passed=1)  # redacted: not matched


ORCHESTRATED = """
import pytest
from pytest_harness.orchestrator import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec


@tool(recorded=True)
def refund(order: str, amount: float) -> dict:
    "Refund an order."
    with open("calls.log", "a") as log:
        log.write(f"refund {order}\\n")
    return {"refunded": amount, "order": order}


@tool
def lookup(order: str) -> str:
    "Look an order up."
    return "shipped"


@pytest.mark.harness
def test_agent(harness):
    with LoopbackServer() as server:
        server.queue(
            Reply(content=None, tool_calls=[
                ToolCallSpec(name="lookup", arguments={"order": "A-1"}),
                ToolCallSpec(name="refund", arguments={"order": "A-1", "amount": 9.5}),
            ]),
            Reply(content="Refunded."),
        )
        agent = harness.orchestrator(server.model, [lookup, refund], params=server.params)
        run = agent.run("Refund A-1")
    assert run.output == "Refunded."
    call = run.assert_called("refund", {"order": "A-1", "amount": 9.5})
    assert call.result == '{"refunded":9.5,"order":"A-1"}'
    harness.trajectory.assert_called("refund", {"order": "A-1", "amount": 9.5})
"""


def test_an_orchestrator_tool_recorded_true_replays_without_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_orchestrated=ORCHESTRATED)
    pytester.runpytest_subprocess(*ARGS, "--harness-live").assert_outcomes(passed=1)
    assert (pytester.path / "calls.log").read_text() == "refund A-1\n"
    pytester.runpytest_subprocess(*ARGS).assert_outcomes(passed=1)
    assert (pytester.path / "calls.log").read_text() == "refund A-1\n"
    stored = json.loads(
        (pytester.path / "cassettes" / "test_orchestrated" / "test_agent.yaml").read_text()
    )["interactions"]
    # The orchestrator's own model calls and the tool's, in the order they happened.
    uris = [i["request"]["uri"].partition("//")[0] for i in stored]
    assert uris == ["http:", "tool:refund", "http:"]
    executed = from_interactions(stored).assert_called("refund", {"order": "A-1", "amount": 9.5})
    assert (executed.asked, executed.run is not None) == (True, True)


AGENTS = '''
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from conftest import URL

set_tracing_disabled(True)


def get_weather(city: str) -> str:
    """The weather in a city."""
    with open("calls.log", "a") as log:
        log.write(f"get_weather {city}\\n")
    return "sunny"


@pytest.mark.harness
def test_weather(harness):
    weather = function_tool(harness.recorded(get_weather))
    plain = function_tool(get_weather)
    assert (weather.name, weather.description) == (plain.name, plain.description)
    assert weather.params_json_schema == plain.params_json_schema
    client = AsyncOpenAI(base_url=URL, api_key="sk-loopback-0123456789")
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    agent = Agent(name="weather", instructions="Weather.", tools=[weather], model=model)
    assert Runner.run_sync(agent, "Weather in Paris?").final_output == "It is sunny."
    called = harness.trajectory.assert_called("get_weather", {"city": "Paris"})
    assert (called.asked, called.result, called.run.result) == (True, "sunny", "sunny")
'''


def weather_model(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply(content=f"It is {body['messages'][-1]['content']}.")
    return Reply(
        content=None, tool_calls=[ToolCallSpec(name="get_weather", arguments={"city": "Paris"})]
    )


@FRAMEWORKS
def test_an_openai_agents_function_tool_over_a_recorded_function(pytester: pytest.Pytester) -> None:
    with LoopbackServer(weather_model) as server:
        pytester.makeconftest(f"URL = {server.url!r}\n")
        pytester.makepyfile(test_agents=AGENTS)
        pytester.runpytest_subprocess(*ARGS, "--harness-live").assert_outcomes(passed=1)
    assert (pytester.path / "calls.log").read_text() == "get_weather Paris\n"
    pytester.runpytest_subprocess(*ARGS).assert_outcomes(passed=1)  # the server is gone
    assert (pytester.path / "calls.log").read_text() == "get_weather Paris\n"


# Units, on the real cassette slot.


@pytest.fixture
def cassette(tmp_path: Path) -> Path:
    return tmp_path / "tools.yaml"


def slot_for(path: Path, mode: str) -> CassetteSlot:
    slot = CassetteSlot(path=path, mode=mode, nodeid="test_units.py::test_it", run_id="units")
    slot.on_response = lambda seen: None
    return slot


def through(path: Path, mode: str, calls: Any) -> Any:
    """``calls()`` with ``path``'s cassette open in ``mode`` (saved when recording)."""
    slot = slot_for(path, mode)
    with scope.activate(scope.Scope(call_hooks=(slot,), replay=mode == "none")):
        try:
            return calls()
        finally:
            slot.close(keep=True)


def echo(value: Any, *rest: Any, **options: Any) -> Any:
    return value


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(["$tuple", "$dict", "$custom", "REDACTED"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(max_size=6) | st.sampled_from(["$tuple", "$float"]), inner, max_size=3
        )
        | st.dictionaries(st.integers() | st.tuples(st.integers()), inner, max_size=2)
    ),
    max_leaves=10,
)


@settings(max_examples=40, deadline=None)
@given(value=JSONISH, extra=JSONISH)
def test_any_json_ish_value_records_then_replays_equal(
    tmp_path_factory: Any, value: Any, extra: Any
) -> None:
    path = tmp_path_factory.mktemp("h") / "c.yaml"
    tool = _recorded_tools.recorded(echo)
    recorded = through(path, "all", lambda: tool(value, extra, key=extra))
    replayed = through(path, "none", lambda: tool(value, extra, key=extra))
    assert recorded == replayed == value
    assert type(replayed) is type(value)


def test_non_finite_floats_round_trip(cassette: Path) -> None:
    tool = _recorded_tools.recorded(echo)
    values = [math.inf, -math.inf, math.nan]
    through(cassette, "all", lambda: tool(values))
    replayed = through(cassette, "none", lambda: tool(values))
    assert replayed[:2] == values[:2]
    assert math.isnan(replayed[2])


@settings(max_examples=200)
@given(
    data=st.recursive(
        # No text that names a module: reading a class imports its module.
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text("$:.- ", max_size=6)
        | st.sampled_from(list(_recorded_tools._TAGS)),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from([*_recorded_tools._TAGS, "data", "value", "x"]), inner, max_size=3
            )
        ),
        max_leaves=10,
    )
)
def test_any_stored_data_is_read_or_refused_as_a_cassette_error(data: Any) -> None:
    with contextlib.suppress(CassetteError):
        _recorded_tools.decode(data)
    assert isinstance(_recorded_tools.plain(data), (type(None), bool, int, float, str, list, dict))


def test_unrecorded_orchestrator_tools_are_noted_as_run_live_in_replay(cassette: Path) -> None:
    from pytest_harness.orchestrator import tool

    @tool
    def send_email(to: str) -> str:
        return "sent"

    def refund_order(order: str) -> str:
        return "refunded"

    refund = tool(recorded=True)(refund_order)
    slot = slot_for(cassette, "none")
    with scope.activate(scope.Scope(call_hooks=(slot,), replay=True)):
        assert asyncio.run(send_email(to="a@b.c")) == "sent"
        with pytest.raises(CassetteMiss, match="the cassette holds no call of refund_order"):
            asyncio.run(refund(order="A-1"))
    slot.close(keep=False)
    assert slot.live == [
        "tool send_email (an orchestrator tool, not recorded: @tool(recorded=True) replays it)"
    ]
    assert refund.recorded
    assert refund.function.__wrapped__ is refund_order


def test_an_exception_that_cannot_be_rebuilt_is_a_recorded_tool_error(cassette: Path) -> None:
    from pytest_harness.errors import RecordedToolError, describe

    class Local(Exception):
        def __init__(self, code: int, detail: str) -> None:
            super().__init__(f"{code}: {detail}")

    def fails() -> None:
        raise Local(7, "gone")

    tool = _recorded_tools.recorded(fails)
    with pytest.raises(Local):
        through(cassette, "all", tool)
    with pytest.raises(RecordedToolError) as replayed:
        through(cassette, "none", tool)
    assert replayed.value.recorded_message == "7: gone"
    assert ".<locals>.Local: tool fails raised" in describe(replayed.value)


def test_the_wrapper_keeps_the_signature_and_names_by_qualname() -> None:
    import inspect

    class Store:
        def append(self, line: str, *, flush: bool = False) -> int:
            return 1

    store = Store()
    wrapped = _recorded_tools.recorded(store.append)
    assert inspect.signature(wrapped) == inspect.signature(store.append)
    again = _recorded_tools.recorded(wrapped, name="store_append")
    assert _recorded_tools.unwrapped(again).__self__ is not None  # the bound method
    assert [s.name for s in (wrapped.__harness_recorded__, again.__harness_recorded__)] == [
        "Store.append",
        "store_append",
    ]


def test_without_a_cassette_the_function_just_runs() -> None:
    calls: list[int] = []
    assert _recorded_tools.recorded(lambda x: calls.append(x) or x)(3) == 3
    assert calls == [3]


def test_refusal_is_unrecordable_traffic_a_harness_stop() -> None:
    with pytest.raises(_recorded_tools._Refused):
        _recorded_tools.encode({1, 2}, "the result")
    assert not issubclass(UnrecordableTraffic, Exception)


@pytest.mark.parametrize("answer", [None, "nope", {"neither": 1}, {"result": {"$tuple": 3}}])
def test_an_edited_answer_is_a_cassette_error_naming_the_tool(cassette: Path, answer: Any) -> None:
    tool = _recorded_tools.recorded(echo)
    through(cassette, "all", lambda: tool(1))
    data = json.loads(cassette.read_text())
    data["interactions"][0]["response"]["body"] = {"json": answer, "form": "spaced"}
    cassette.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match=r"tool echo|tagged \$tuple"):
        through(cassette, "none", lambda: tool(1))


async def get_weather(city: str, units: str = "C") -> str:
    """The weather in a city.

    Args:
        city: the city.
    """
    return "sunny"


@FRAMEWORKS
def test_agent_frameworks_make_the_same_tool_of_the_wrapper() -> None:
    from agents import function_tool
    from pydantic_ai import Tool

    wrapped = _recorded_tools.recorded(get_weather)
    theirs, ours = Tool(get_weather), Tool(wrapped)
    assert (ours.name, ours.description) == (theirs.name, theirs.description)
    assert ours.function_schema.json_schema == theirs.function_schema.json_schema
    theirs_too, ours_too = function_tool(get_weather), function_tool(wrapped)
    assert (ours_too.name, ours_too.description) == (theirs_too.name, theirs_too.description)
    assert ours_too.params_json_schema == theirs_too.params_json_schema
