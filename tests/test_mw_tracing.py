"""Tracing: the spans of real runs against loopback, caught by the OpenTelemetry SDK.

Each test gives ``Tracing`` its own ``TracerProvider`` exporting to an in-memory exporter (the
global provider is left alone). The runs without opentelemetry and with the global provider
happen in subprocesses: an import blocked or a provider set there cannot leak into the suite.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pytest_harness.errors import RunFailed
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import UsageLimits, count_usage
from pytest_harness.orchestrator._tools import tool
from pytest_harness.orchestrator._tracing import Tracing
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec, completion_body

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run


@tool
def lookup(order: str) -> dict[str, str]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


@tool
async def refund(order: str, amount: float) -> str:
    """Refund part of an order."""
    return f"refunded {amount:.2f} on {order}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the warehouse is on fire")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    traced = TracerProvider()
    traced.add_span_processor(SimpleSpanProcessor(exporter))
    yield traced
    traced.shutdown()


def agent(
    server: LoopbackServer,
    provider: TracerProvider,
    *tools: Any,
    middleware: Sequence[Any] = (),
    **params: Any,
) -> Orchestrator:
    stack = [Tracing(tracer_provider=provider), *middleware, count_usage]
    return Orchestrator(
        server.model,
        tools or [lookup, refund],
        params={**server.params, **params},
        middleware=stack,
    )


def calls(*specs: tuple[str, Any]) -> Reply:
    return Reply(content=None, tool_calls=[ToolCallSpec(name=n, arguments=a) for n, a in specs])


def spans(exporter: InMemorySpanExporter, operation: str) -> list[ReadableSpan]:
    """The finished spans of one GenAI operation, in the order they started."""
    found = [
        s
        for s in exporter.get_finished_spans()
        if (s.attributes or {}).get("gen_ai.operation.name") == operation
    ]
    return sorted(found, key=lambda s: s.start_time or 0)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def picked(span: ReadableSpan, expected: dict[str, Any]) -> dict[str, Any]:
    """The span's values of the attributes in ``expected`` (None for one it lacks)."""
    return {name: attributes(span).get(name) for name in expected}


def test_a_run_is_an_agent_span_over_its_requests_and_tools(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    replies = [
        calls(("lookup", {"order": "A-1"}), ("refund", {"order": "A-1", "amount": 5})),
        Reply(content="Your order shipped; 5.00 refunded."),
    ]
    server.queue(*replies)
    run = agent(server, provider, temperature=0.2, seed=7).run("Where is A-1?")
    assert run.stop_reason == "done"

    assert len(exporter.get_finished_spans()) == 5
    (top,) = spans(exporter, "invoke_agent")
    chats = spans(exporter, "chat")
    tools = sorted(
        spans(exporter, "execute_tool"), key=lambda s: attributes(s)["gen_ai.tool.call.id"]
    )
    assert top.name == "invoke_agent"
    assert top.parent is None
    assert [s.name for s in chats] == ["chat openai/loopback"] * 2
    assert [s.name for s in tools] == ["execute_tool lookup", "execute_tool refund"]
    assert top.context is not None
    for child in chats + tools:
        assert child.context is not None
        assert child.parent is not None
        assert child.context.trace_id == top.context.trace_id
        assert child.parent.span_id == top.context.span_id
    assert top.kind == SpanKind.INTERNAL
    assert [s.kind for s in chats] == [SpanKind.CLIENT] * 2
    assert [s.kind for s in tools] == [SpanKind.INTERNAL] * 2

    for number, (span, reply, body) in enumerate(
        zip(chats, replies, server.requests, strict=True), start=1
    ):
        sent = completion_body(body, reply, number)["usage"]
        expected = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "openai/loopback",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.request.seed": 7,
            "gen_ai.response.model": "openai/loopback",
            "gen_ai.response.id": f"chatcmpl-loopback-{number}",
            "gen_ai.usage.input_tokens": sent["prompt_tokens"],
            "gen_ai.usage.output_tokens": sent["completion_tokens"],
            "gen_ai.response.finish_reasons": (reply.finish,),
            "server.address": "127.0.0.1",
            "server.port": server.port,
            "pytest_harness.request": number,
        }
        assert picked(span, expected) == expected
        assert span.status.status_code == StatusCode.UNSET
    assert [attributes(s)["gen_ai.tool.name"] for s in tools] == ["lookup", "refund"]
    assert [attributes(s)["gen_ai.tool.call.id"] for s in tools] == ["call_0", "call_1"]
    assert [attributes(s)["pytest_harness.request"] for s in tools] == [1, 1]
    assert [s.status.status_code for s in tools] == [StatusCode.UNSET] * 2

    assert run.usage.prompt_tokens > 0
    assert sum(attributes(s)["gen_ai.usage.input_tokens"] for s in chats) == run.usage.prompt_tokens
    expected = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.request.model": "openai/loopback",
        "gen_ai.usage.input_tokens": run.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": run.usage.completion_tokens,
        "pytest_harness.stop_reason": "done",
        "pytest_harness.requests": 2,
        "pytest_harness.tool_calls": 2,
    }
    assert picked(top, expected) == expected
    assert top.status.status_code == StatusCode.UNSET


def test_no_prompt_completion_tool_content_or_key_is_recorded(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    server.queue(
        calls(("refund", {"order": "SECRET-ORDER", "amount": 5})),
        Reply(content="Refund granted to SECRET-ANSWER."),
    )
    agent(server, provider).run("Please refund SECRET-PROMPT.")
    recorded = json.dumps(
        [
            [attributes(s), [dict(e.attributes or {}) for e in s.events]]
            for s in exporter.get_finished_spans()
        ]
    )
    assert len(exporter.get_finished_spans()) == 4
    assert server.params["api_key"] == "loopback-not-a-secret"
    for secret in ("SECRET-PROMPT", "SECRET-ORDER", "SECRET-ANSWER", "refunded", "not-a-secret"):
        assert secret not in recorded


def test_a_failing_tool_is_an_error_span_with_its_error(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    server.queue(calls(("explode", {}), ("lookup", {"order": "A-1"})), Reply(content="sorry"))
    run = agent(server, provider, explode, lookup).run("go")
    failed, looked_up = sorted(spans(exporter, "execute_tool"), key=lambda s: s.name)
    assert failed.name == "execute_tool explode"
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description == run.tool_calls[0].error
    assert "the warehouse is on fire" in (failed.status.description or "")
    assert attributes(failed)["error.type"] == "_OTHER"
    assert looked_up.status.status_code == StatusCode.UNSET
    (top,) = spans(exporter, "invoke_agent")
    assert top.status.status_code == StatusCode.UNSET  # the model got the error; the run went on


def test_a_provider_error_is_an_error_request_span_and_an_error_run_span(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    server.queue(calls(("lookup", {"order": "A-1"})), Reply(status=400, error="bad request"))
    with pytest.raises(RunFailed) as failure:
        agent(server, provider).run("hi")
    first, second = spans(exporter, "chat")
    assert first.status.status_code == StatusCode.UNSET
    assert second.status.status_code == StatusCode.ERROR
    assert "bad request" in (second.status.description or "")
    assert [e.name for e in second.events] == ["exception"]
    assert attributes(second)["error.type"] == type(failure.value.__cause__).__qualname__
    (top,) = spans(exporter, "invoke_agent")
    assert top.status.status_code == StatusCode.ERROR
    assert top.status.description == second.status.description
    assert attributes(top)["pytest_harness.stop_reason"] == "error"
    assert attributes(top)["pytest_harness.requests"] == 2


def test_events_noted_during_a_request_are_its_span_events(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    server.queue(calls(("lookup", {"order": "A-1"})))
    traced = agent(server, provider, middleware=[UsageLimits(requests=1)])
    run = traced.run("hi")
    assert run.stop_reason == "usage_limit"
    first, second = spans(exporter, "chat")
    assert first.events == ()
    (event,) = second.events
    assert event.name == "usage_limit"
    assert dict(event.attributes or {}) == {
        "pytest_harness.detail": run.events[0].detail,
        "pytest_harness.request": 2,
    }
    assert attributes(second)["pytest_harness.stop_reason"] == "usage_limit"
    assert second.status.status_code == StatusCode.UNSET  # a stop, not a failure
    (top,) = spans(exporter, "invoke_agent")
    assert attributes(top)["pytest_harness.stop_reason"] == "usage_limit"
    assert top.status.status_code == StatusCode.UNSET


def test_what_a_tool_traces_is_under_its_tool_span(
    server: LoopbackServer, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("the application")

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page (async)."""
        with tracer.start_as_current_span("inside fetch"):
            return "page"

    @tool
    def parse(text: str) -> str:
        """Parse a page (sync, in a worker thread)."""
        with tracer.start_as_current_span("inside parse"):
            return "parsed"

    server.queue(calls(("fetch", {"url": "u"}), ("parse", {"text": "t"})), Reply(content="ok"))
    agent(server, provider, fetch, parse).run("go")
    finished = {s.name: s for s in exporter.get_finished_spans()}
    for name in ("fetch", "parse"):
        inner, outer = finished[f"inside {name}"], finished[f"execute_tool {name}"]
        assert inner.parent is not None
        assert outer.context is not None
        assert inner.parent.span_id == outer.context.span_id


def test_runs_at_once_sharing_one_tracing_keep_their_spans_apart(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    started: list[str] = []
    both = asyncio.Event()

    @tool
    async def meet(who: str) -> str:
        """Wait until the other run's tool runs too."""
        started.append(who)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 30)  # a guard against hanging, not a measure
        return who

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user":
            return calls(("meet", {"who": last["content"]}))
        return Reply(content="met")

    tracing = Tracing(tracer_provider=provider)

    async def both_runs(server: LoopbackServer) -> None:
        runs = [
            Orchestrator(
                server.model, [meet], params=server.params, middleware=[tracing, count_usage]
            )
            for _ in range(2)
        ]
        await asyncio.gather(runs[0].arun("ann"), runs[1].arun("bob"))

    with LoopbackServer(answer) as server:
        asyncio.run(both_runs(server))

    tops = spans(exporter, "invoke_agent")
    assert len(tops) == 2
    assert len({t.context.trace_id for t in tops if t.context is not None}) == 2
    assert sorted(started) == ["ann", "bob"]
    children: dict[int, list[str]] = {}
    for span in spans(exporter, "chat") + spans(exporter, "execute_tool"):
        assert span.parent is not None
        assert span.context is not None
        children.setdefault(span.parent.span_id, []).append(span.name)
        owner = next(t for t in tops if t.context and t.context.span_id == span.parent.span_id)
        assert owner.context is not None
        assert owner.context.trace_id == span.context.trace_id
    assert len(children) == 2
    for names in children.values():
        assert sorted(names) == ["chat openai/loopback"] * 2 + ["execute_tool meet"]


# The child's script: a loopback run of an Orchestrator with Tracing() and count_usage.
RUN = """
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import count_usage
from pytest_harness.orchestrator._tracing import Tracing
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

def lookup(order: str) -> str:
    "Look an order up."
    return order + " shipped"

def run():
    call = ToolCallSpec(name="lookup", arguments={"order": "A-1"})
    with LoopbackServer() as server:
        server.queue(Reply(content=None, tool_calls=[call]), Reply(content="shipped"))
        tracing = Tracing()
        stack = [tracing, count_usage]
        agent = Orchestrator(server.model, [lookup], params=server.params, middleware=stack)
        return tracing, agent.run("hi")
"""


def child(script: str) -> list[str]:
    """Run ``RUN`` then ``script`` in a fresh interpreter; its printed lines."""
    code = textwrap.dedent(RUN) + textwrap.dedent(script)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_without_opentelemetry_tracing_does_nothing_and_tries_the_import_once() -> None:
    printed = child(
        """
        import sys

        class Blocked:
            tried = 0

            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    Blocked.tried += 1
                    raise ImportError(f"{name} is not installed (blocked by the test)")
                return None

        sys.meta_path.insert(0, Blocked())
        Tracing()
        tracing, done = run()
        print(done.stop_reason, done.tools_called, done.output)
        print(tracing.enabled, Blocked.tried)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    assert printed == ["done ['lookup'] shipped", "False 1", "[]"]


def test_by_default_the_spans_go_to_the_global_provider() -> None:
    printed = child(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        tracing, done = run()
        print(tracing.enabled, sorted(s.name for s in exporter.get_finished_spans()))
        """
    )
    expected = ["chat openai/loopback"] * 2 + ["execute_tool lookup", "invoke_agent"]
    assert printed == [f"True {expected}"]


def test_importing_the_plugin_and_tracing_imports_no_opentelemetry() -> None:
    code = (
        "import sys, pytest_harness.plugin\n"
        "from pytest_harness.orchestrator import _tracing as tracing\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


MISS = """
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pytest_harness.errors import CassetteMiss
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._middleware import count_usage
from pytest_harness.orchestrator._tracing import Tracing
from pytest_harness.testing import LoopbackServer

def test_agent():
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with LoopbackServer() as server:
        stack = [Tracing(tracer_provider=provider), count_usage]
        agent = Orchestrator(server.model, [], params=server.params, middleware=stack)
        with pytest.raises(CassetteMiss):
            agent.run("hi")
    spans = {span.name: span for span in exporter.get_finished_spans()}
    print("SPANS:", ", ".join(sorted(spans)))
    for span in spans.values():
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description.startswith("CassetteMiss: no recording")
"""


def test_a_run_left_by_a_cassette_miss_still_ends_its_span(pytester: pytest.Pytester) -> None:
    # In a subprocess: a real replay (no cassette file); the loop calls no run_ended then.
    pytester.makepyfile(test_miss=MISS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(failed=1)  # the harness fails a test that missed, caught or not
    result.stdout.fnmatch_lines(["*SPANS: chat openai/loopback, invoke_agent"])
    result.stdout.no_fnmatch_line("*AssertionError*")
