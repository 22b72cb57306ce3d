"""MCP tools recorded and replayed (issue 27, item 3).

The official ``mcp`` SDK's client calls tools on an ``MCPServer`` (FastMCP, as mcp 2 names it)
served over streamable HTTP on loopback: recorded with ``--harness-live``, then replayed with
the server stopped, in both of the SDK's protocol modes (the 2026 stateless one, plain JSON;
the ``initialize`` handshake, with a session header and answers as server-sent events). The
tool calls are in ``harness.trajectory``: as the executions of the calls a model asked for,
or as calls of their own. MCP over stdio is refused with a clear error when a test says so
(its recording: ``test_mcp_stdio.py``).
Unit tests read literal JSON-RPC bodies.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import mcp
from pytest_harness._cassettes.slot import Seen
from pytest_harness._trajectory import from_traffic
from pytest_harness._wire import recognise
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

URL = "http://127.0.0.1:8000/mcp"
CHAT = "https://api.openai.com/v1/chat/completions"


def call(name: str, arguments: dict[str, Any], request_id: Any = 3) -> bytes:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    body["params"] = {"name": name, "arguments": arguments}
    return json.dumps(body).encode()


def answered(body: str, status: int = 200, latency: float | None = 0.25) -> dict[str, Any]:
    return {"status": {"code": status}, "body": {"string": body.encode()}, "latency_s": latency}


def result(request_id: Any = 3, **fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": fields}


# Reading one interaction.


def test_a_json_answer_is_a_tool_run() -> None:
    body = json.dumps(result(content=[{"type": "text", "text": "3"}], isError=False))
    run = mcp.recognise("POST", URL + "?x=1", call("add", {"a": 1, "b": 2}), answered(body))
    assert run == mcp.ToolRun(
        server=URL, id="3", name="add", arguments={"a": 1, "b": 2}, result="3", latency_s=0.25
    )
    assert run.ok


def test_an_sse_answer_is_read_from_the_event_answering_the_call() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    answer = result(content=[{"type": "text", "text": "shipped"}, {"type": "image"}])
    body = "".join(
        f"event: message\r\ndata: {json.dumps(message)}\r\n\r\n" for message in (progress, answer)
    )
    run = mcp.recognise("POST", URL, call("lookup", {"order": "A-1"}), answered(body))
    assert run is not None
    assert (run.name, run.result, run.error) == ("lookup", "shipped", None)


def test_a_failed_tool_and_a_json_rpc_error_are_errors() -> None:
    failed = json.dumps(result(content=[{"type": "text", "text": "no such order"}], isError=True))
    run = mcp.recognise("POST", URL, call("lookup", {}), answered(failed))
    assert run is not None
    assert (run.result, run.error) == ("no such order", "no such order")
    unknown = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Unknown tool"}}
    run = mcp.recognise("POST", URL, call("nope", {}), answered(json.dumps(unknown)))
    assert run is not None
    assert run.error == "Unknown tool (JSON-RPC error -32602)"
    assert not run.ok


def test_structured_content_stands_for_a_result_without_text() -> None:
    body = json.dumps(result(content=[], structuredContent={"result": 3}))
    run = mcp.recognise("POST", URL, call("add", {}), answered(body))
    assert run is not None
    assert run.result == '{"result": 3}'


@pytest.mark.parametrize(
    ("method", "request_body", "response_body"),
    [
        ("POST", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), "{}"),
        ("POST", call("add", {}).decode(), json.dumps(result(request_id=4))),  # another id
        ("POST", call("add", {}).decode(), "event: message\r\ndata: {cut"),
        ("GET", call("add", {}).decode(), json.dumps(result())),
        ("POST", "not json", json.dumps(result())),
    ],
    ids=["tools-list", "other-id", "cut-stream", "get", "no-json"],
)
def test_anything_else_is_no_tool_run(method: str, request_body: str, response_body: str) -> None:
    assert mcp.recognise(method, URL, request_body, answered(response_body)) is None


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=12,
    ),
    st.one_of(st.none(), st.integers(), st.text(max_size=5)),
)
def test_any_answer_is_read_without_raising(answer: Any, status: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "result": answer})
    response = {"status": {"code": status}, "body": {"string": body}, "latency_s": "?"}
    run = mcp.recognise("POST", URL, call("add", {"a": 1}), response)
    assert run is not None
    assert run.latency_s is None


def test_the_standing_get_stream_of_a_session_is_told_apart() -> None:
    sse = {"Accept": "text/event-stream", "mcp-session-id": "abc"}
    assert mcp.standing_stream("GET", sse)
    listed = {"accept": ["text/event-stream"], "MCP-Protocol-Version": "2025-06-18"}
    assert mcp.standing_stream("get", listed)
    assert not mcp.standing_stream("POST", sse)
    assert not mcp.standing_stream("GET", {"Accept": "text/event-stream"})  # not MCP's
    assert not mcp.standing_stream("GET", {"mcp-session-id": "abc", "Accept": "*/*"})


# Runs in the trajectory: executions of the model's calls, or calls of their own.


def chat_exchange(*calls: tuple[str, dict[str, Any]]) -> Seen:
    """A chat completion asking for ``calls`` (ids ``c0``, ``c1``, ...)."""
    asked = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": None if calls else "done", "tool_calls": asked}
    finish = "tool_calls" if calls else "stop"
    answer = {"model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "go"}]}).encode()
    found = recognise(CHAT, request, 200, {}, json.dumps(answer))
    assert found is not None
    return Seen(found=found, uri=CHAT, replayed=False)


def tool_run(name: str, after: int, request_id: int, **arguments: Any) -> mcp.ToolRun:
    error = "boom" if name == "fails" else None
    return mcp.ToolRun(
        server=URL,
        id=str(request_id),
        name=name,
        arguments=arguments,
        result=f"{name}:{request_id}",
        error=error,
        latency_s=0.5,
        after=after,
    )


def test_each_run_executes_the_earliest_matching_call_asked_before_it() -> None:
    exchanges = [
        chat_exchange(("add", {"a": 1}), ("add", {"a": 2}), ("fails", {})),
        chat_exchange(),
    ]
    runs = [
        tool_run("add", 0, 1, a=1),  # before the model asked: a call of its own
        tool_run("add", 1, 2, a=2),  # the second call asked (the first has other arguments)
        tool_run("add", 1, 3, a=1),
        tool_run("fails", 1, 4),
        tool_run("add", 2, 5, a=1),  # every matching call has its run: a call of its own
    ]
    trajectory = from_traffic(exchanges, runs)
    rows = [
        (c.name, c.request, c.asked, c.run and c.run.id, c.result) for c in trajectory.tool_calls
    ]
    assert rows == [
        ("add", 0, False, "1", "add:1"),
        ("add", 1, True, "3", "add:3"),
        ("add", 1, True, "2", "add:2"),
        ("fails", 1, True, "4", "fails:4"),
        ("add", 2, False, "5", "add:5"),
    ]
    failed = trajectory.calls_of("fails")[0]
    assert (failed.ok, failed.error, failed.seconds, failed.server) == (False, "boom", 0.5, URL)
    assert trajectory.status.endswith("2 request(s), 5 MCP tool call(s)")
    assert "ERROR boom" in trajectory.table()
    trajectory.assert_called_times("add", 4)


def test_filters_keep_the_runs_of_the_calls_they_keep() -> None:
    trajectory = from_traffic([chat_exchange(("add", {"a": 1}))], [tool_run("add", 1, 1, a=1)])
    by_model = trajectory.filter(model="m")
    assert [c.run is not None for c in by_model.tool_calls] == [True]
    alone = from_traffic([], [tool_run("add", 0, 1, a=1)])
    assert alone.filter(model="m").tool_calls == ()  # a call no model asked for: no model
    assert alone.filter(endpoint="8000/mcp").tools_called == ["add"]


# End to end: an MCPServer on loopback, the official client, recorded then replayed.


class McpHttpServer:
    """An ``MCPServer`` with two tools, served over streamable HTTP by uvicorn on loopback."""

    def __init__(self) -> None:
        import uvicorn
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        shop = MCPServer("shop")

        @shop.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        @shop.tool()
        def lookup(order: str) -> str:
            """Look an order up."""
            if order == "X-0":
                raise ToolError(f"no order {order}")
            return f"order {order} shipped"

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(
            shop.streamable_http_app(), host="127.0.0.1", port=self.port, log_level="error"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> McpHttpServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def shop_model(body: dict[str, Any]) -> Reply:
    """Asks for both tools, then answers with the results it got back."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        sent = [m["content"] for m in messages if m["role"] == "tool"]
        return Reply(content="Done: " + ", ".join(sent))
    return Reply(
        content=None,
        tool_calls=[
            ToolCallSpec(name="add", arguments={"a": 1, "b": 2}, id="call_add"),
            ToolCallSpec(name="lookup", arguments={"order": "A-1"}, id="call_lookup"),
        ],
    )


SHOP = '''
import asyncio
import json

import openai
from mcp import Client
from conftest import KEY, MCP, MODEL


async def call_tools(calls, mode="legacy"):
    """Run each (name, arguments) on the shop's MCP server; their results as text."""
    async with Client(MCP, mode=mode) as client:
        results = []
        for name, arguments in calls:
            done = await client.call_tool(name, arguments)
            results.append("\\n".join(part.text for part in done.content))
        return results


def tools():
    """The MCP server's tools, offered to the model as OpenAI functions."""

    async def listed():
        async with Client(MCP, mode="legacy") as client:
            return (await client.list_tools()).tools

    return [
        {"type": "function", "function": {"name": t.name, "parameters": t.input_schema}}
        for t in asyncio.run(listed())
    ]


def agent(question):
    """A tool loop over the OpenAI SDK whose tools run on the MCP server."""
    messages = [{"role": "system", "content": "You run the shop."},
                {"role": "user", "content": question}]
    offered = tools()
    with openai.OpenAI(base_url=MODEL, api_key=KEY) as model:
        while True:
            message = model.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=offered
            ).choices[0].message
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            calls = message.tool_calls
            asked = [(c.function.name, json.loads(c.function.arguments)) for c in calls]
            for c, text in zip(calls, asyncio.run(call_tools(asked))):
                messages.append({"role": "tool", "tool_call_id": c.id, "content": text})
'''

TESTS = """
import asyncio
import pytest
from shop import agent, call_tools


@pytest.mark.harness
def test_agent(harness):
    assert agent("Add 1 and 2, and find order A-1.") == "Done: 3, order A-1 shipped"
    trajectory = harness.trajectory
    add = trajectory.assert_called("add", {"a": 1, "b": 2})
    assert (add.result, add.request, add.asked, add.ok) == ("3", 1, True, True)
    assert add.server.endswith("/mcp") and add.run.result == "3" and add.seconds is not None
    trajectory.assert_order("add", "lookup")
    trajectory.assert_called_times("lookup", 1)
    trajectory.assert_requests_at_most(2)
    assert [c.run.name for c in trajectory.tool_calls] == ["add", "lookup"]
    assert len(trajectory.runs) == 2


@pytest.mark.harness
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_direct(harness, mode):
    asked = [("add", {"a": 2, "b": 2}), ("lookup", {"order": "X-0"})]
    assert asyncio.run(call_tools(asked, mode))[0] == "4"
    trajectory = harness.trajectory
    assert trajectory.request_count == 0
    four = trajectory.assert_called("add", {"a": 2, "b": 2})
    assert (four.result, four.request, four.asked) == ("4", 0, False)
    failed = trajectory.calls_of("lookup")[0]
    assert not failed.ok and "X-0" in failed.error
    assert trajectory.filter(endpoint="/mcp").tools_called == ["add", "lookup"]
    assert trajectory.filter(endpoint="/elsewhere").tools_called == []


@pytest.mark.harness
def test_wrong(harness):
    asyncio.run(call_tools([("add", {"a": 2, "b": 2})]))
    harness.trajectory.assert_called("add", {"a": 5})
"""


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackServer, McpHttpServer]]:
    with LoopbackServer(shop_model) as model:
        tools = McpHttpServer().start()
        try:
            yield model, tools
        finally:
            tools.stop()


@pytest.fixture
def project(
    pytester: pytest.Pytester, servers: tuple[LoopbackServer, McpHttpServer]
) -> pytest.Pytester:
    model, tools = servers
    pytester.makeini("[pytest]\nharness_record_failed = true\n")
    conftest = f"MODEL = {model.url!r}\nMCP = {tools.url!r}\nKEY = 'sk-loopback-0123456789'\n"
    pytester.makeconftest(conftest)
    pytester.makepyfile(shop=SHOP, test_shop=TESTS)
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def test_mcp_tool_calls_record_then_replay_in_the_trajectory(
    project: pytest.Pytester, servers: tuple[LoopbackServer, McpHttpServer]
) -> None:
    run(project, "--harness-live").assert_outcomes(passed=3, failed=1)
    model, tools = servers
    assert len(model.requests) == 2
    model.stop()
    tools.stop()

    result = run(project, "--harness-report=report.json")  # both servers are gone
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            '*AssertionError: expected add to be called with {"a": 5}; it was called 1 time(s).',
            "*the application's model traffic: 0 request(s), 1 MCP tool call(s)",
            "*request  tool    arguments           result or error  time",
            '*0  add     {"a": 2, "b": 2}  *4  *s',
        ]
    )
    rows = {r["test"]: r for r in json.loads((project.path / "report.json").read_text())["runs"]}
    steps = rows["test_shop.py::test_agent"]["steps"]
    assert [(s["tool"], s["result"], s["server"] is not None) for s in steps] == [
        ("add", "3", True),
        ("lookup", "order A-1 shipped", True),
    ]
    assert rows["test_shop.py::test_direct[legacy]"]["tools"] == ["add", "lookup"]

    run(project, "-k", "agent", "--harness-report=report.html").assert_outcomes(passed=1)
    html = (project.path / "report.html").read_text()
    assert f'<span title="{tools.url}">add <small>MCP</small></span>' in html


def test_the_cassette_keeps_the_session_and_the_event_streams(project: pytest.Pytester) -> None:
    run(project, "--harness-live", "-k", "direct and legacy").assert_outcomes(passed=1)
    text = (project.path / "cassettes" / "test_shop" / "test_direct_legacy.yaml").read_text()
    interactions = json.loads(text)["interactions"]
    methods = [
        (i["request"]["method"], (i["request"]["body"] or {}).get("json", {}).get("method"))
        for i in interactions
    ]
    assert methods[:2] == [("POST", "initialize"), ("POST", "notifications/initialized")]
    assert methods[-1] == ("DELETE", None)
    assert methods.count(("POST", "tools/call")) == 2
    assert "GET" not in {method for method, _ in methods}  # answered 405 by the cassette
    assert all("mcp-session-id" in i["response"]["headers"] for i in interactions)
    called = interactions[methods.index(("POST", "tools/call"))]["response"]
    assert called["headers"]["content-type"] == ["text/event-stream"]
    assert "event: message" in called["body"]["string"]


STDIO_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    return text


server.run()
"""

STDIO_TESTS = """
import asyncio
import sys
import pytest
from mcp import Client, StdioServerParameters

SERVER = StdioServerParameters(command=sys.executable, args=["echo_server.py"])


async def echo():
    async with Client(SERVER) as client:
        return (await client.call_tool("echo", {"text": "hi"})).content[0].text


@pytest.mark.harness(mcp_stdio="error")
def test_refused(harness):
    asyncio.run(echo())


@pytest.mark.harness(mcp_stdio="live")
def test_allowed(harness):
    assert asyncio.run(echo()) == "hi"
    assert harness.trajectory.tool_calls == ()  # nothing of it went through the cassette
"""


def test_mcp_over_stdio_is_refused_naming_the_fix_unless_allowed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(echo_server=STDIO_SERVER, test_stdio=STDIO_TESTS)
    result = run(pytester, "--harness-live")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UnrecordableTraffic: test_stdio.py::test_refused started the MCP server *"
            "echo_server.py` over stdio, which this test refuses (mcp_stdio='error'). To "
            "record its exchanges and replay them without the server: "
            "@pytest.mark.harness(mcp_stdio='record') (the default)*"
            "@pytest.mark.harness(mcp_stdio='live'), or harness_mcp_stdio = live.",
        ]
    )
    assert "PATH" not in result.stdout.str()  # the server's environment is not shown

    pytester.makeini("[pytest]\nharness_mcp_stdio = sometimes\n")
    result = run(pytester)
    expected = "harness_mcp_stdio expects one of record, error, live, got 'sometimes'"
    assert expected in result.stderr.str()


def test_a_wrong_mcp_stdio_marker_argument_names_the_choices(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.harness(mcp_stdio=True)\ndef test_it(harness):\n    pass\n"
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.harness(mcp_stdio=...) expects one of record, error, live*"]
    )


def test_stdio_guards_closed_in_any_order_put_mcp_back_once_the_last_is_removed() -> None:
    import asyncio

    import mcp.client.stdio as stdio

    original = stdio._create_platform_compatible_process
    first = mcp.StdioGuard(lambda command: RuntimeError(f"first: {command}"))
    second = mcp.StdioGuard(lambda command: RuntimeError(f"second: {command}"))
    first.install()
    second.install()
    first.remove()  # closed out of order: the second test's guard still holds
    with pytest.raises(RuntimeError, match="second: server --flag"):
        asyncio.run(stdio._create_platform_compatible_process(command="server", args=["--flag"]))
    second.remove()
    second.remove()  # twice: nothing more
    assert stdio._create_platform_compatible_process is original


AGENTS_SDK = """
import asyncio
import pytest
from agents import Agent, Runner, set_default_openai_client, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI
from conftest import KEY, MCP, MODEL


@pytest.mark.harness
def test_agents_sdk(harness):
    set_tracing_disabled(True)
    set_default_openai_client(AsyncOpenAI(base_url=MODEL, api_key=KEY))

    async def ask():
        async with MCPServerStreamableHttp(params={"url": MCP}) as shop:
            agent = Agent(name="shop", instructions="You run the shop.", mcp_servers=[shop])
            return (await Runner.run(agent, "Add 1 and 2.")).final_output

    assert asyncio.run(ask()) == "It is 3."
    call = harness.trajectory.assert_called("add", {"a": 1, "b": 2})
    assert (call.result, call.run.result, call.server) == ("3", "3", MCP)
    assert harness.trajectory.requests[0].api == "openai.responses"
"""


def responses_model(body: dict[str, Any]) -> Reply:
    """On the Responses API: asks for ``add``, then answers once its output is back."""
    items = body.get("input") or []
    if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items):
        return Reply(content="It is 3.")
    return Reply(content=None, tool_calls=[ToolCallSpec(name="add", arguments={"a": 1, "b": 2})])


def test_an_openai_agents_sdk_agent_with_mcp_tools_records_then_replays(
    pytester: pytest.Pytester,
) -> None:
    with LoopbackServer(responses_model) as model:
        tools = McpHttpServer().start()
        conftest = f"MODEL = {model.url!r}\nMCP = {tools.url!r}\nKEY = 'sk-loopback-0123456789'\n"
        pytester.makeconftest(conftest)
        pytester.makepyfile(test_agents_sdk=AGENTS_SDK)
        try:  # in a subprocess, as the framework suites run (openai-agents' event loops)
            pytester.runpytest_subprocess("-p", "no:randomly", "--harness-live").assert_outcomes(
                passed=1
            )
        finally:
            tools.stop()
        assert model.paths == ["/v1/responses", "/v1/responses"]
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)  # offline
