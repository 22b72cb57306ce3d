"""OpenTelemetry spans of orchestrator runs, named and described by the GenAI conventions."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_harness._model import seam as model
from pytest_harness._model.response import ModelResponse, ToolCall
from pytest_harness.errors import StopRun, describe
from pytest_harness.orchestrator._pipeline import ModelCall, Next, RunEvent

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue

    from pytest_harness.orchestrator._run import Run, ToolCallRecord

    Attributes = dict[str, AttributeValue]

# litellm's model prefixes named otherwise by gen_ai.provider.name (``openai``, ``anthropic``,
# ``groq``... are the same in both; a model without a prefix is ``_OTHER``).
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "cohere_chat": "cohere",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "moonshot": "moonshot_ai",
    "vertex_ai": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}
# litellm arguments recorded as gen_ai.request.* (numbers only).
_REQUEST_PARAMS = ("temperature", "top_p", "max_tokens", "seed")


@dataclass
class _RunSpan:
    """One run being traced: its span, the context its children start in, how to leave it."""

    span: Span
    context: Context
    attached: Token[Context]  # from opentelemetry's context.attach
    failure: str = ""  # why the last request failed, for the run's error status
    state: Token[_RunSpan | None] = field(init=False)  # from Tracing's own context variable


class Tracing:
    """OpenTelemetry spans per run, model request and tool call (a no-op without it).

    Put it first in the pipeline (the outermost), so a request's span covers the whole
    pipeline: its retries, its waits and the events the inner middleware note.

    Args:
        tracer_provider: where the spans go; by default opentelemetry's global provider
            (``opentelemetry.trace.set_tracer_provider``).
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer = _tracer(tracer_provider)
        self._run: ContextVar[_RunSpan | None] = ContextVar("pytest_harness_run", default=None)

    @property
    def enabled(self) -> bool:
        """Whether opentelemetry is installed (else every method does nothing)."""
        return self._tracer is not None

    def run_started(self, agent: Any) -> None:
        """Start the run's span and make it the current span of the run's task."""
        if self._tracer is None:
            return
        from opentelemetry import context, trace

        name = getattr(agent, "name", None)
        session = getattr(agent, "session_id", None)
        attributes = _model_attributes(agent.model, agent.params)
        if isinstance(name, str) and name:
            attributes["gen_ai.agent.name"] = name
        if isinstance(session, str) and session:
            attributes["gen_ai.conversation.id"] = session
        span = self._tracer.start_span(
            f"invoke_agent {name}" if name else "invoke_agent",
            kind=trace.SpanKind.INTERNAL,
            attributes={"gen_ai.operation.name": "invoke_agent", **attributes},
        )
        parent = trace.set_span_in_context(span)
        traced = _RunSpan(span, parent, context.attach(parent))
        traced.state = self._run.set(traced)

    def run_ended(self, agent: Any, run: Run) -> None:
        """End the run's span with its usage and stop reason."""
        traced = self._run.get()
        if traced is None:
            return
        traced.span.set_attributes(
            {
                "gen_ai.usage.input_tokens": run.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": run.usage.completion_tokens,
                "pytest_harness.stop_reason": run.stop_reason,
                "pytest_harness.requests": run.requests,
                "pytest_harness.tool_calls": len(run.tool_calls),
            }
        )
        if run.cost is not None:
            traced.span.set_attribute("pytest_harness.cost", run.cost)
        failed = run.stop_reason == "error"
        self._leave(traced, (traced.failure or "a model request failed") if failed else None)

    async def __call__(self, call: ModelCall, next: Next) -> ModelResponse:
        if self._tracer is None:
            return await next(call)
        traced = self._run.get()
        try:
            return await self._request(self._tracer, traced, call, next)
        except BaseException as error:
            # A cassette miss, a spent budget or a cancellation leaves the loop without
            # run_ended: the run's span ends here, or it would never be exported.
            if traced is not None and not isinstance(error, Exception):
                self._leave(traced, describe(error))
            raise

    def tool_started(self, call: ToolCall, request: int) -> tuple[Span, Token[Context]] | None:
        """Start the tool call's span, current while the tool runs (the token: it, attached)."""
        if self._tracer is None:
            return None
        from opentelemetry import context, trace

        traced = self._run.get()
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=traced.context if traced is not None else None,
            kind=trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
                "pytest_harness.request": request,
            },
        )
        return span, context.attach(trace.set_span_in_context(span))

    def tool_ended(self, token: tuple[Span, Token[Context]] | None, record: ToolCallRecord) -> None:
        """End the tool call's span, an error when the call failed."""
        if token is None:
            return
        from opentelemetry import context

        span, attached = token
        if record.error is not None:
            _fail(span, record.error)
        context.detach(attached)
        span.end()

    async def _request(
        self, tracer: Tracer, traced: _RunSpan | None, call: ModelCall, next: Next
    ) -> ModelResponse:
        from opentelemetry import trace

        requested = model.resolve(call.model)
        attributes = _model_attributes(call.model, call.params)
        attributes.update({"gen_ai.operation.name": "chat", "pytest_harness.request": call.number})
        noted = len(call.events)
        with tracer.start_as_current_span(
            f"chat {requested}",
            context=traced.context if traced is not None else None,
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                response = await next(call)
            except StopRun as stop:  # a middleware ended the run: no failure of the request
                span.set_attribute("pytest_harness.stop_reason", stop.reason)
                raise
            except BaseException as error:
                span.record_exception(error)
                _fail(span, describe(error), type(error).__qualname__)
                if traced is not None:
                    traced.failure = describe(error)
                raise
            finally:
                _add_events(span, call.events[noted:])
            span.set_attributes(_response_attributes(response))
            return response

    def _leave(self, traced: _RunSpan, failure: str | None) -> None:
        """End the run's span (an error when ``failure``) and restore the task's context."""
        from opentelemetry import context

        if failure is not None:
            _fail(traced.span, failure)
        context.detach(traced.attached)
        self._run.reset(traced.state)
        traced.span.end()


@functools.cache
def _installed() -> bool:
    """Whether opentelemetry-api can be imported (tried once per process)."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def _tracer(provider: TracerProvider | None) -> Tracer | None:
    if not _installed():
        return None
    from opentelemetry import trace

    return trace.get_tracer("pytest_harness", _version(), provider)


@functools.cache
def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-harness")
    except PackageNotFoundError:
        return None


def _model_attributes(asked: str, params: Mapping[str, Any]) -> Attributes:
    """The attributes of a request to ``asked`` (before ``--harness-model``) with ``params``."""
    requested = model.resolve(asked)
    prefix, slash, _ = requested.partition("/")
    attributes: Attributes = {
        "gen_ai.provider.name": _PROVIDERS.get(prefix, prefix) if slash else "_OTHER",
        "gen_ai.request.model": requested,
    }
    for name in _REQUEST_PARAMS:
        value = params.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[f"gen_ai.request.{name}"] = value
    base = params.get("api_base")
    if isinstance(base, str) and base:
        url = urlsplit(base)
        if url.hostname:
            attributes["server.address"] = url.hostname
            attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    return attributes


def _response_attributes(response: ModelResponse) -> Attributes:
    attributes: Attributes = {
        "gen_ai.response.model": response.model,
        "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": response.usage.completion_tokens,
    }
    if response.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [response.finish_reason]
    if response.id is not None:
        attributes["gen_ai.response.id"] = response.id
    if response.cost is not None:
        attributes["pytest_harness.cost"] = response.cost
    return attributes


def _fail(span: Span, description: str, kind: str = "_OTHER") -> None:
    """Mark ``span`` as failed: ``description`` on its status, ``kind`` as ``error.type``."""
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, description))
    span.set_attribute("error.type", kind)


def _add_events(span: Span, events: Iterable[RunEvent]) -> None:
    for event in events:
        span.add_event(
            event.kind,
            {"pytest_harness.detail": event.detail, "pytest_harness.request": event.request},
            timestamp=int(event.at * 1e9),
        )
