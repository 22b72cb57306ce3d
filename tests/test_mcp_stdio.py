"""MCP over stdio recorded and replayed (issue 46, part 2).

A FastMCP server (``MCPServer``, as mcp 2 names it) run over stdio by the real clients: mcp's
``ClientSession`` over ``stdio_client``, openai-agents' ``MCPServerStdio`` and pydantic-ai's
``MCPToolset`` (fastmcp's client; their tools called directly, and by an agent against the
scripted loopback model). Each records with ``--harness-live``; the server script is then
deleted and the replay passes, its tool calls in ``harness.trajectory``. A changed argument
is a miss naming the call; ``error`` refuses the server, ``live`` runs it and notes it.
Units: the URI, the matched body, and the replay answering any line without raising.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import stdio
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._trajectory import from_interactions
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytest_plugins = ["pytester"]

SERVER = """
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

shop = MCPServer("shop")


@shop.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


@shop.tool()
def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    if order == "X-0":
        raise ToolError(f"no order {order}")
    return f"order {order} shipped"


shop.run()
"""

# The server's path is absolute (pytester's directory differs every run) and the command
# is this interpreter: neither is in the cassette.
SHOP = """
import sys
from pathlib import Path

SCRIPT = str(Path(__file__).parent / "shop_server.py")
"""

DIRECT = """
import asyncio
import os
import sys
import pytest
from shop import SCRIPT


async def call(calls):
    # Imported once the test runs, after its cassette opened: it is recorded all the same.
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {"SHOP_KEY": "sk-never-stored-0123456789"}
    params = StdioServerParameters(command=sys.executable, args=[SCRIPT], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            results = []
            for name, arguments in calls:
                done = await session.call_tool(name, arguments)
                results.append((done.is_error, done.content[0].text))
            return results


@pytest.mark.harness
def test_direct(harness):
    asked = [("add", {"a": 2, "b": 2}), ("lookup", {"order": "X-0"})]
    failure = "Error executing tool lookup: no order X-0"
    assert asyncio.run(call(asked)) == [(False, "4"), (True, failure)]
    trajectory = harness.trajectory
    four = trajectory.assert_called("add", {"a": 2, "b": 2})
    assert (four.result, four.server) == ("4", "stdio:python shop_server.py")
    failed = trajectory.calls_of("lookup")[0]
    assert not failed.ok and "X-0" in failed.error
    assert trajectory.tools_called == ["add", "lookup"]


@pytest.mark.harness
def test_changed(harness):
    add = int(os.environ.get("ADD", "2"))
    assert asyncio.run(call([("add", {"a": add, "b": 2})])) == [(False, str(add + 2))]
"""


AGENTS = """
import asyncio
import sys
import pytest
from agents import Agent, Runner, set_default_openai_client, set_tracing_disabled
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI
from conftest import KEY, MODEL
from shop import SCRIPT


def shop():
    return MCPServerStdio(params={"command": sys.executable, "args": [SCRIPT]}, name="shop")


@pytest.mark.harness
def test_tools(harness):
    async def use():
        async with shop() as server:
            names = [tool.name for tool in await server.list_tools()]
            added = await server.call_tool("add", {"a": 1, "b": 2})
            failed = await server.call_tool("lookup", {"order": "X-0"})
            return names, added.content[0].text, failed.is_error
    assert asyncio.run(use()) == (["add", "lookup"], "3", True)
    trajectory = harness.trajectory
    assert trajectory.tools_called == ["add", "lookup"]
    assert trajectory.assert_called("add", {"a": 1, "b": 2}).result == "3"
    assert not trajectory.calls_of("lookup")[0].ok


@pytest.mark.harness
def test_agent(harness):
    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=MODEL, api_key=KEY))

    async def ask():
        async with shop() as server:
            agent = Agent(name="shop", instructions="You run the shop.", mcp_servers=[server])
            return (await Runner.run(agent, "Add 1 and 2.")).final_output

    assert asyncio.run(ask()) == "It is 3."
    call = harness.trajectory.assert_called("add", {"a": 1, "b": 2})
    assert (call.result, call.asked, call.server) == ("3", True, "stdio:python shop_server.py")
"""


PYDANTIC_AI = """
import asyncio
import sys
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from conftest import KEY, MODEL
from shop import SCRIPT


def shop():
    # fastmcp's client starts the server through mcp's stdio_client.
    return MCPToolset(StdioTransport(command=sys.executable, args=[SCRIPT]))


@pytest.mark.harness
def test_toolset(harness):
    async def use():
        async with shop() as toolset:
            names = [tool.name for tool in await toolset.list_tools()]
            added = await toolset.direct_call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(ModelRetry, match="no order X-0"):
                await toolset.direct_call_tool("lookup", {"order": "X-0"})
            return names, added
    assert asyncio.run(use()) == (["add", "lookup"], 3)
    trajectory = harness.trajectory
    assert trajectory.tools_called == ["add", "lookup"]
    call = trajectory.assert_called("add", {"a": 1, "b": 2})
    assert (call.result, call.server) == ("3", "stdio:python shop_server.py")
    assert "no order X-0" in trajectory.calls_of("lookup")[0].error


@pytest.mark.harness
def test_agent(harness):
    provider = OpenAIProvider(base_url=MODEL, api_key=KEY)
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), toolsets=[shop()])
    assert agent.run_sync("Add 1 and 2.").output == "It is 3."
    call = harness.trajectory.assert_called("add", {"a": 1, "b": 2})
    assert (call.result, call.asked, call.server) == ("3", True, "stdio:python shop_server.py")
"""


def responses_model(body: dict[str, Any]) -> Reply:
    """On the Responses API: asks for ``add``, then answers once its output is back."""
    items = body.get("input") or []
    if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items):
        return Reply(content="It is 3.")
    return Reply(content=None, tool_calls=[ToolCallSpec(name="add", arguments={"a": 1, "b": 2})])


def chat_model(body: dict[str, Any]) -> Reply:
    """On Chat Completions: asks for ``add``, then answers once its result is back."""
    if any(m.get("role") == "tool" for m in body.get("messages") or [] if isinstance(m, dict)):
        return Reply(content="It is 3.")
    return Reply(content=None, tool_calls=[ToolCallSpec(name="add", arguments={"a": 1, "b": 2})])


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def stored(pytester: pytest.Pytester, test: str, name: str) -> list[dict[str, Any]]:
    path = pytester.path / "cassettes" / test / f"{name}.yaml"
    interactions: list[dict[str, Any]] = json.loads(path.read_text())["interactions"]
    return interactions


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(shop_server=SERVER, shop=SHOP)
    return pytester


def test_the_mcp_client_records_then_replays_without_the_server(
    shop: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop.makepyfile(test_direct=DIRECT)
    run(shop, "--harness-live").assert_outcomes(passed=2)
    (shop.path / "shop_server.py").unlink()

    run(shop).assert_outcomes(passed=2)

    interactions = stored(shop, "test_direct", "test_direct")
    assert {i["request"]["uri"] for i in interactions} == {"stdio:python shop_server.py"}
    sent = [i["request"]["body"]["json"] for i in interactions]
    methods = [s["method"] for s in sent]  # the client lists the tools to check results
    assert methods == ["initialize", "tools/call", "tools/list", "tools/call"]
    assert all("id" not in s for s in sent)
    answer = interactions[1]["response"]["body"]["json"]
    assert answer[-1]["result"]["content"][0]["text"] == "4"
    text = (shop.path / "cassettes" / "test_direct" / "test_direct.yaml").read_text()
    assert "sk-never-stored" not in text
    assert "SHOP_KEY" not in text

    runs = from_interactions(interactions).runs
    assert [(r.name, r.result, r.ok) for r in runs] == [
        ("add", "4", True),
        ("lookup", "Error executing tool lookup: no order X-0", False),
    ]

    monkeypatch.setenv("ADD", "5")
    result = run(shop, "-k", "changed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recording in*test_changed.yaml matches this request:",
            '*+      "a": 5,',
            "The test then failed with:",
            "*stdio:python shop_server.py replayed, tools/call "
            '{"name": "add", "arguments": {"a": 5, "b": 2}*} was not answered: CassetteMiss*',
        ]
    )


def test_error_refuses_the_server_and_live_runs_it_noted_in_replay(
    shop: pytest.Pytester, tmp_path: Path
) -> None:
    shop.makepyfile(test_direct=DIRECT)
    shop.makeini("[pytest]\nharness_mcp_stdio = error\n")
    result = run(shop, "--harness-live", "test_direct.py::test_direct")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UnrecordableTraffic: *shop_server.py` over stdio*"])

    slot = CassetteSlot(path=tmp_path / "c.yaml", mode="none", nodeid="t", run_id="r")
    slot.mcp_stdio = "live"
    slot.open()
    try:
        assert asyncio.run(add_on(shop.path / "shop_server.py")) == "2"
    finally:
        slot.close(keep=False)
    # Noted once, as the server it is (the replay's process watch does not note it again).
    assert slot.live == ["MCP server over stdio: python shop_server.py"]


async def add_on(script: Path) -> str:
    """1 + 1, by the server ``script`` over stdio."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(script)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        done = await session.call_tool("add", {"a": 1, "b": 1})
        text: str = done.content[0].text  # type: ignore[union-attr]
        return text


def test_an_openai_agents_sdk_agent_records_then_replays_without_the_server(
    shop: pytest.Pytester,
) -> None:
    with LoopbackServer(responses_model) as model:
        shop.makeconftest(f"MODEL = {model.url!r}\nKEY = 'sk-loopback-0123456789'\n")
        shop.makepyfile(test_agents=AGENTS)
        run(shop, "--harness-live").assert_outcomes(passed=2)
        assert model.paths == ["/v1/responses", "/v1/responses"]
    (shop.path / "shop_server.py").unlink()
    run(shop).assert_outcomes(passed=2)  # neither the model nor the server


def test_a_pydantic_ai_toolset_and_agent_record_then_replay_without_the_server(
    shop: pytest.Pytester,
) -> None:
    with LoopbackServer(chat_model) as model:
        shop.makeconftest(f"MODEL = {model.url!r}\nKEY = 'sk-loopback-0123456789'\n")
        shop.makepyfile(test_pydantic_ai=PYDANTIC_AI)
        run(shop, "--harness-live").assert_outcomes(passed=2)
        assert model.paths == ["/v1/chat/completions", "/v1/chat/completions"]
    (shop.path / "shop_server.py").unlink()
    run(shop).assert_outcomes(passed=2)  # neither the model nor the server

    interactions = stored(shop, "test_pydantic_ai", "test_toolset")
    assert {i["request"]["uri"] for i in interactions} == {"stdio:python shop_server.py"}
    runs = from_interactions(interactions).runs
    assert [(r.name, r.result, r.ok) for r in runs] == [
        ("add", "3", True),
        ("lookup", "Error executing tool lookup: no order X-0", False),
    ]


# Units.


def test_the_uri_names_the_server_the_same_on_every_machine() -> None:
    assert stdio.server_uri("/usr/bin/python3.11", ["/tmp/x/server.py"]) == (
        "stdio:python server.py"
    )
    assert stdio.server_uri("C:\\Python\\python.exe", ["C:\\work\\server.py", "-v"]) == (
        "stdio:python server.py -v"
    )
    assert stdio.server_uri("npx", ["-y", "@scope/server-files", "--root=/home/me/data"]) == (
        "stdio:npx -y @scope/server-files --root=data"
    )
    assert stdio.server_uri("uv", ["run", "my server.py"]) == "stdio:uv run 'my server.py'"


def test_the_matched_body_leaves_out_the_id_and_the_progress_token() -> None:
    sent = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    sent["params"] = {"name": "add", "_meta": {"progressToken": 7}}
    assert json.loads(stdio.matched_body(sent)) == {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "add"},
    }


@contextlib.contextmanager
def replaying(tmp_path: Path) -> Iterator[stdio._Answerer]:
    """A replay's answers from a cassette holding one ``tools/call`` of ``add``."""
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add"}}
    recorded = CassetteSlot(path=tmp_path / "c.yaml", mode="all", nodeid="t", run_id="r")
    request, _ = recorded.lookup("stdio:python s.py", json.dumps(call).encode())
    progress = {"method": "notifications/progress", "params": {"progressToken": 1}}
    answer = [{"jsonrpc": "2.0", **progress}, {"jsonrpc": "2.0", "id": 1, "result": {}}]
    recorded.keep(request, json.dumps(answer).encode())
    recorded.close(keep=True)
    slot = CassetteSlot(path=tmp_path / "c.yaml", mode="none", nodeid="t", run_id="r")
    try:
        yield stdio._Answerer(slot, "stdio:python s.py")
    finally:
        slot.close(keep=False)


def test_replay_answers_with_the_request_id_and_progress_token(tmp_path: Path) -> None:
    with replaying(tmp_path) as answerer:
        call = {"jsonrpc": "2.0", "id": "x-9", "method": "tools/call"}
        call["params"] = {"name": "add", "_meta": {"progressToken": "p"}}
        progress, response = answerer.answer(json.dumps(call).encode())
        assert progress["params"]["progressToken"] == "p"
        assert response == {"jsonrpc": "2.0", "id": "x-9", "result": {}}
        assert answerer.answer(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}') == []


def test_a_request_not_recorded_is_answered_with_the_miss(tmp_path: Path) -> None:
    with replaying(tmp_path) as answerer:
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "sub"}}
        (error,) = answerer.answer(json.dumps(call).encode())
        text = error["error"]["message"]
        assert error["id"] == 3
        assert text.startswith('stdio:python s.py replayed, tools/call {"name": "sub"}')
        assert "was not answered: CassetteMiss: no recording in" in text
        assert len(answerer.slot.misses) == 1  # type: ignore[attr-defined]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | st.text(),
        "id": st.integers(min_value=-(10**40), max_value=10**40) | st.text() | json_values,
        "method": st.sampled_from(["tools/call", "ping", "initialize"]) | st.text(),
        "params": json_values,
    },
)
lines = (
    st.binary()
    | json_values.map(lambda v: json.dumps(v).encode())
    | messages.map(lambda m: json.dumps(m).encode())
)


@given(line=lines)
def test_any_line_is_answered_or_dropped_never_raised(tmp_path_factory: Any, line: bytes) -> None:
    with replaying(tmp_path_factory.mktemp("c")) as answerer:
        for message in answerer.answer(line):
            assert message["jsonrpc"] == "2.0"
            assert "result" in message or "error" in message
            json.dumps(message)


def test_a_guard_waits_for_mcp_stdio_to_be_imported_and_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_harness._cassettes import mcp

    monkeypatch.delitem(sys.modules, "mcp.client.stdio", raising=False)
    guard = mcp.StdioGuard(RuntimeError)
    guard.install()
    assert mcp._PATCHER in sys.meta_path
    guard.remove()
    assert mcp._PATCHER not in sys.meta_path
