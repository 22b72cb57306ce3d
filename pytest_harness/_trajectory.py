"""Trajectories: the tool calls an agent made (live, or read from a cassette), asserted on
alone or against a reference, and shown as one table."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from pytest_harness._report.text import clip
from pytest_harness._trajectory_reference import ArgumentsRule, Called, mismatch
from pytest_harness._wire import SentResult, read_request

if TYPE_CHECKING:
    from pytest_harness._cassettes.mcp import ToolRun
    from pytest_harness._cassettes.slot import Seen
    from pytest_harness._model.response import ModelResponse
    from pytest_harness._model.response import ToolCall as ModelToolCall
    from pytest_harness._wire import Recognised

ArgumentCheck: TypeAlias = "Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None"
Mode: TypeAlias = Literal["strict", "unordered", "subset", "superset"]
_WIDTH = 60


class CallRecord(Called, Protocol):
    """One tool call of a trajectory, as the assertions and the table read it: its
    ``name``, ``arguments`` and ``raw_arguments`` (``Called``), and what follows."""

    @property
    def result(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def request(self) -> int: ...
    @property
    def ok(self) -> bool: ...
    @property
    def seconds(self) -> float | None: ...


class Event(Protocol):
    """Something that happened during a trajectory besides tool calls (a middleware's)."""

    @property
    def request(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def detail(self) -> str: ...


class Trajectory(Protocol):
    """What the assertions and the table read: an orchestrator ``Run`` or a traffic one."""

    @property
    def tool_calls(self) -> Sequence[CallRecord]: ...
    @property
    def events(self) -> Sequence[Event]: ...
    @property
    def request_count(self) -> int:
        """How many model requests it made."""

    @property
    def status(self) -> str:
        """The line a failed assertion prints under its problem."""

    @property
    def actor(self) -> str:
        """Who made the requests, in a sentence (``the run``, ``the application``)."""


C = TypeVar("C", bound=CallRecord)


class Assertions(Generic[C]):
    """The trajectory assertions, shared by ``Run`` and ``TrafficTrajectory``.

    Each raises ``AssertionError`` with the trajectory as a table.
    """

    __slots__ = ()
    tool_calls: Sequence[C]

    def calls_of(self, name: str) -> list[C]:
        """The calls of the tool ``name``, in order."""
        return [call for call in self.tool_calls if call.name == name]

    @property
    def tools_called(self) -> list[str]:
        """The names of the tools called, in order (repeats included)."""
        return [call.name for call in self.tool_calls]

    def assert_called(self, name: str, arguments: ArgumentCheck = None) -> C:
        """``name`` was called (with arguments containing ``arguments``, or accepted by a
        predicate); returns the first matching call."""
        return called(self._trajectory(), name, arguments)  # type: ignore[return-value]

    def assert_not_called(self, name: str) -> None:
        not_called(self._trajectory(), name)

    def assert_called_times(self, name: str, times: int) -> None:
        called_times(self._trajectory(), name, times)

    def assert_order(self, *names: str) -> None:
        """The tools ``names`` were called in this order (other calls may come between)."""
        in_order(self._trajectory(), names)

    def assert_requests_at_most(self, limit: int) -> None:
        requests_at_most(self._trajectory(), limit)

    def assert_matches(
        self,
        reference: Any,
        mode: Mode = "strict",
        *,
        arguments: ArgumentsRule = "exact",
    ) -> None:
        """The tool calls match a reference's: a golden recording's, or the calls expected.

        Args:
            reference: a trajectory (a ``Run``, ``harness.recorded_trajectory(...)``), or a
                list of expected calls, each a tool name (its arguments not checked), a
                mapping ``{"name": ..., "arguments": {...}}`` (``arguments`` optional), a
                ``(name, arguments)`` tuple, or a tool call of a trajectory.
            mode: ``strict``: the same calls in the same order; ``unordered``: the same
                calls in any order; ``subset``: no call beyond the reference's (each
                matches a call of it); ``superset``: at least the reference's calls.
            arguments: how arguments compare: ``"exact"`` (equal as JSON), ``"ignore"``, a
                callable ``(expected_args, actual_args) -> bool``, or a mapping of tool name
                to one of those (other tools: exact).

        Raises:
            AssertionError: the problem, both trajectories side by side (``=`` matched,
                ``~`` same tool with other arguments, ``-`` missing, ``+`` extra), then the
                trajectory's table.
            ConfigError: a reference, mode or ``arguments`` of the wrong kind.

        Example::

            harness.trajectory.assert_matches(harness.recorded_trajectory("golden"))
            run.assert_matches(["search", ("open", {"id": 3})], "superset")
        """
        matches(self._trajectory(), reference, mode, arguments=arguments)

    def table(self) -> str:
        """The trajectory as a table (request, tool, arguments, result or error, time)."""
        return table(self._trajectory())

    def _trajectory(self) -> Trajectory:
        return self  # type: ignore[return-value]  # each subclass satisfies Trajectory


def called(trajectory: Trajectory, name: str, arguments: ArgumentCheck = None) -> CallRecord:
    """The first call of ``name`` whose arguments match; else an AssertionError."""
    calls = [call for call in trajectory.tool_calls if call.name == name]
    for call in calls:
        if _matches(call.arguments or {}, arguments):
            return call
    wanted = f"{name} to be called" + (f" with {_show(arguments)}" if arguments else "")
    seen = f"it was called {len(calls)} time(s)" if calls else "it was never called"
    raise AssertionError(message(trajectory, f"expected {wanted}; {seen}"))


def not_called(trajectory: Trajectory, name: str) -> None:
    count = _count(trajectory, name)
    if count:
        raise AssertionError(
            message(trajectory, f"expected {name} not to be called; it was, {count} time(s)")
        )


def called_times(trajectory: Trajectory, name: str, times: int) -> None:
    count = _count(trajectory, name)
    if count != times:
        raise AssertionError(
            message(trajectory, f"expected {name} to be called {times} time(s); it was {count}")
        )


def in_order(trajectory: Trajectory, names: Sequence[str]) -> None:
    """The tools ``names`` were called in this order (others may come between)."""
    order = [call.name for call in trajectory.tool_calls]
    remaining = iter(order)
    if not all(any(name == seen for seen in remaining) for name in names):
        raise AssertionError(
            message(
                trajectory,
                f"expected the tools in the order {list(names)}; the order was {order}",
            )
        )


def requests_at_most(trajectory: Trajectory, limit: int) -> None:
    count = trajectory.request_count
    if count > limit:
        problem = f"expected at most {limit} model requests; {trajectory.actor} made {count}"
        raise AssertionError(message(trajectory, problem))


def message(trajectory: Trajectory, problem: str) -> str:
    """A failed assertion's message: the problem, the trajectory's status, its table."""
    return f"{problem}.\n{trajectory.status}\n\n{table(trajectory)}"


def _count(trajectory: Trajectory, name: str) -> int:
    return sum(call.name == name for call in trajectory.tool_calls)


def _matches(actual: Mapping[str, Any], expected: ArgumentCheck) -> bool:
    if expected is None:
        return True
    if callable(expected):
        return bool(expected(actual))
    return all(key in actual and actual[key] == value for key, value in expected.items())


def _show(arguments: ArgumentCheck) -> str:
    if callable(arguments):
        return f"arguments accepted by {getattr(arguments, '__name__', 'the predicate')}"
    return json.dumps(arguments, default=str)


def matches(
    trajectory: Trajectory, reference: Any, mode: str = "strict", *, arguments: Any = "exact"
) -> None:
    """The trajectory's tool calls match the reference's (``Assertions.assert_matches``)."""
    found = mismatch(trajectory.tool_calls, reference, mode, arguments=arguments)
    if found is not None:
        raise AssertionError(f"{found}\n\n{trajectory.status}\n\n{table(trajectory)}")


def table(trajectory: Trajectory) -> str:
    """The trajectory: one row per tool call (request, tool, arguments, result or error, time)
    and per event (a retry, a compaction, a warning: its kind in brackets)."""
    from pytest_harness._report.text import tabulate

    if not trajectory.tool_calls and not trajectory.events:
        return "(no tool calls)"
    rows = [
        (event.request, 0, [event.request, f"[{event.kind}]", "", _clip(event.detail), ""])
        for event in trajectory.events
    ] + [
        (
            call.request,
            1,
            [
                call.request,
                call.name,
                _clip(call.raw_arguments),
                _clip(_outcome(call)),
                "" if call.seconds is None else f"{call.seconds:.2f}s",
            ],
        )
        for call in trajectory.tool_calls
    ]
    rows.sort(key=lambda row: row[:2])  # stable: events of a request before its tool calls
    headers = ["request", "tool", "arguments", "result or error", "time"]
    return tabulate([row for _, _, row in rows], headers=headers)


def _clip(text: str | None) -> str:
    return clip(text or "", _WIDTH)


def _outcome(call: CallRecord) -> str | None:
    if not call.ok:
        return f"ERROR {call.error}"
    return "(no result sent)" if call.result is None else call.result


# The application's own traffic as a trajectory.


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficCall:
    """A tool call of the application's: one the model asked for, or one it made on an MCP
    server on its own.

    Attributes:
        id: the provider's call id, or None when it gave none (Gemini's calls often have
            none: their results answer them by name); ``mcp:<JSON-RPC id>`` for an MCP call no
            model asked for (None for a recorded tool's: ``harness.recorded``).
        name: the tool's name as the model gave it.
        arguments: the arguments parsed from JSON, or None when they did not parse.
        raw_arguments: the arguments exactly as the model sent them.
        result: the text the application sent back to the model in a later request; else
            what the MCP server answered; else None (no result sent yet).
        error: why the call failed: the result the application marked as an error
            (Anthropic's ``is_error``), or the MCP server's error; else None.
        request: which request of the test's traffic (1 for the first) got it as an answer;
            for a call no model asked for, how many requests came before it.
        run: its execution on an MCP server (``server``, ``result``, ``error``,
            ``latency_s``), or None when the traffic holds none.
        asked: whether a model asked for it (False: the application called the MCP tool
            on its own).
    """

    id: str | None
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = field(repr=False)
    result: str | None
    error: str | None = None
    request: int
    run: ToolRun | None = field(default=None, repr=False)
    asked: bool = True

    @property
    def ok(self) -> bool:
        """Whether the call did not fail (as the application or the MCP server said)."""
        return self.error is None

    @property
    def seconds(self) -> float | None:
        """How long its MCP execution took (as recorded, in replay); None when the traffic
        does not say (a tool the application ran itself)."""
        return None if self.run is None else self.run.latency_s

    @property
    def server(self) -> str | None:
        """The URL of the MCP server that ran it, or None."""
        return None if self.run is None else self.run.server


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One model request of the application's, and its answer.

    Attributes:
        number: its place in the test's traffic (1 for the first).
        endpoint: the URL it went to, without its query.
        api: ``openai.chat``, ``openai.responses``, ``anthropic.messages`` or
            ``gemini.generate``.
        model: the model that answered (or was asked for), or "".
        messages: how many messages (input items, contents) it sent.
        tools: the names of the tools it offered.
        system: its system prompt (instructions) as text, "" when none.
        results: the tool results it sent back.
        answer: what the model answered.
        streamed: the answer came as a stream.
        replayed: the answer came from the cassette.
        latency_s: the exchange's latency (as recorded, in replay), or None when unknown.
    """

    number: int
    endpoint: str
    api: str
    model: str
    messages: int
    tools: tuple[str, ...]
    system: str
    results: tuple[SentResult, ...] = field(repr=False)
    answer: ModelResponse = field(repr=False)
    streamed: bool = False
    replayed: bool = False
    latency_s: float | None = None

    @property
    def tool_calls(self) -> list[str]:
        """The names of the tools the answer called."""
        return [call.name for call in self.answer.tool_calls]

    @property
    def provider_tool_calls(self) -> list[str]:
        """The names of the tools the provider ran itself while answering."""
        return [call.name for call in self.answer.provider_tool_calls]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderToolCall:
    """A tool the provider ran itself while answering a request (a hosted tool: OpenAI
    Responses' ``web_search_call``, ``mcp_call``...): nothing the application ran, so not one
    of its tool calls, but an event of its trajectory (``TrafficTrajectory.events``).

    Attributes:
        request: which request of the test's traffic (1 for the first) got it in its answer.
        name: the tool's name, or the item's kind when it has none (``web_search_call``).
        raw_arguments: what the model asked of it, as the reply sent it.
    """

    request: int
    name: str
    raw_arguments: str = field(repr=False)

    @property
    def kind(self) -> str:
        return "provider tool"

    @property
    def detail(self) -> str:
        """The call as ``name(arguments)``."""
        return f"{self.name}({self.raw_arguments})"


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficTrajectory(Assertions[TrafficCall]):
    """The application's model traffic in a test, as a trajectory (``harness.trajectory``).

    Attributes:
        requests: each model request, in the order their answers arrived.
        tool_calls: every tool call the answers asked for, in order, each with the result
            the application sent back.
        narrowed: how ``filter`` narrowed it ("" when it holds all of the test's traffic).
    """

    requests: tuple[ModelRequest, ...] = ()
    tool_calls: tuple[TrafficCall, ...] = ()
    narrowed: str = ""
    runs: tuple[ToolRun, ...] = field(default=(), repr=False)

    @property
    def events(self) -> tuple[ProviderToolCall, ...]:
        """The tools the provider ran itself while answering, in order."""
        return tuple(
            ProviderToolCall(request=r.number, name=call.name, raw_arguments=call.raw_arguments)
            for r in self.requests
            for call in r.answer.provider_tool_calls
        )

    @property
    def request_count(self) -> int:
        return len(self.requests)

    @property
    def status(self) -> str:
        shown = f" ({self.narrowed})" if self.narrowed else ""
        runs = [call.run.server for call in self.tool_calls if call.run is not None]
        tools = sum(server.startswith("tool:") for server in runs)  # recorded tools'
        on_mcp = f", {len(runs) - tools} MCP tool call(s)" if len(runs) > tools else ""
        on_mcp += f", {tools} recorded tool call(s)" if tools else ""
        return f"the application's model traffic{shown}: {len(self.requests)} request(s){on_mcp}"

    @property
    def actor(self) -> str:
        return "the application"

    def filter(
        self,
        *,
        model: str | None = None,
        endpoint: str | None = None,
        system: str | None = None,
    ) -> TrafficTrajectory:
        """The trajectory of some of the requests only (one agent's, in a test with several).

        Args:
            model: keep the requests answered by (or asking for) this model.
            endpoint: keep the requests whose URL contains this text (``/responses``, a host),
                and the MCP tool calls no model asked for whose server's URL contains it.
            system: keep the requests whose system prompt contains this text.

        Results are matched to calls again within what is kept (providers reuse call ids
        across conversations). The MCP runs of the calls kept stay theirs; an MCP call no
        model asked for is kept by ``endpoint`` alone.
        """
        wanted = {"model": model, "endpoint": endpoint, "system": system}
        chosen = {key: value for key, value in wanted.items() if value is not None}
        kept = [r for r in self.requests if _keeps(r, chosen)]
        numbers = {r.number for r in kept}
        calls = [c for c in self.tool_calls if _keeps_call(c, numbers, chosen)]
        said = ", ".join(f"{key} {value!r}" for key, value in chosen.items())
        narrowed = "; ".join(text for text in (self.narrowed, said) if text)
        runs = [c.run for c in calls if c.run is not None]
        return build(kept, runs=runs, narrowed=narrowed)


def _keeps(request: ModelRequest, chosen: Mapping[str, str]) -> bool:
    return (
        chosen.get("model", request.model) == request.model
        and chosen.get("endpoint", "") in request.endpoint
        and chosen.get("system", "") in request.system
    )


def _keeps_call(call: TrafficCall, numbers: set[int], chosen: Mapping[str, str]) -> bool:
    if call.asked:
        return call.request in numbers
    server = call.server or ""
    return set(chosen) == {"endpoint"} and chosen["endpoint"] in server


def from_traffic(exchanges: Sequence[Seen], runs: Sequence[ToolRun] = ()) -> TrafficTrajectory:
    """The trajectory of the application's exchanges (``TrafficWatch.exchanges``) and its
    MCP tool calls (``TrafficWatch.tool_runs``), in order."""
    requests = [_request(number, seen) for number, seen in enumerate(exchanges, 1)]
    return build(requests, runs=runs)


def _request(number: int, seen: Seen) -> ModelRequest:
    return _model_request(
        number, seen.found, seen.uri, seen.request, replayed=seen.replayed, latency_s=seen.latency_s
    )


def _model_request(
    number: int,
    found: Recognised,
    uri: str,
    body: bytes | None,
    *,
    replayed: bool,
    latency_s: float | None,
) -> ModelRequest:
    asked = read_request(found.api, body)
    return ModelRequest(
        number=number,
        endpoint=uri.partition("?")[0],  # a query may hold a key (Gemini's ?key=)
        api=found.api,
        model=found.model,
        messages=asked.messages,
        tools=asked.tools,
        system=asked.system,
        results=asked.results,
        answer=found.response,
        streamed=found.streamed,
        replayed=replayed,
        latency_s=latency_s,
    )


def from_interactions(interactions: Sequence[Mapping[str, Any]]) -> TrafficTrajectory:
    """The trajectory a cassette file's interactions hold, in file order.

    ``interactions`` are the stored dicts of a cassette's ``"interactions"`` list
    (``_cassettes.read.read(path)["interactions"]``). Each model reply is a request of the
    trajectory, the application's and the harness's own (its agent loop's) alike; each MCP
    ``tools/call`` is a tool run after the requests before it. A call that got no reply
    (a ``failure``) and any other traffic are left out.
    """
    from pytest_harness._cassettes.interactions import recognised

    requests: list[ModelRequest] = []
    runs: list[ToolRun] = []
    for interaction in interactions:
        if not isinstance(interaction.get("request"), Mapping) or not isinstance(
            interaction.get("response"), Mapping
        ):
            continue  # a failure: how the call failed stands in place of its response
        found = recognised(interaction)
        if found is not None:
            requests.append(_stored_request(len(requests) + 1, interaction, found))
            continue
        run = _stored_run(interaction)
        if run is not None:
            runs.append(dataclasses.replace(run, after=len(requests)))
    return build(requests, runs=runs)


def _stored_request(number: int, interaction: Mapping[str, Any], found: Recognised) -> ModelRequest:
    from pytest_harness._cassettes.bodies import body_bytes
    from pytest_harness._cassettes.interactions import latency, seam

    request = interaction["request"]
    uri = str(request.get("uri", ""))
    body = body_bytes(request.get("body"))
    if seam(interaction) is not None:  # the harness's: the embedded model's tool calls too
        found = _read_back(found, body)
    return _model_request(number, found, uri, body, replayed=True, latency_s=latency(interaction))


def _read_back(found: Recognised, body: bytes | None) -> Recognised:
    """A reply of the embedded model to tools offered as a grammar, as the seam read it."""
    from pytest_harness._local import route

    schema = read_request(found.api, body).schema
    read_back = route.read_back_recorded(schema, found.response) if schema else None
    return found if read_back is None else dataclasses.replace(found, response=read_back)


def _stored_run(interaction: Mapping[str, Any]) -> ToolRun | None:
    """The MCP tool call (or recorded tool's call) of a stored interaction, or None (its
    bodies read as sent)."""
    from pytest_harness._cassettes import mcp
    from pytest_harness._cassettes.bodies import body_bytes
    from pytest_harness._cassettes.interactions import latency

    request, response = interaction["request"], interaction["response"]
    answer = {**response, "body": {"string": body_bytes(response.get("body"))}}
    method, uri = str(request.get("method", "")), str(request.get("uri", ""))
    run = mcp.recognise(method, uri, body_bytes(request.get("body")), answer, replayed=True)
    if run is None:  # a recorded tool's call
        from pytest_harness import _recorded_tools

        body = body_bytes(request.get("body"))
        run = _recorded_tools.recognise(method, uri, body, answer, replayed=True)
    return None if run is None else dataclasses.replace(run, latency_s=latency(interaction))


def build(
    requests: Sequence[ModelRequest], *, runs: Sequence[ToolRun] = (), narrowed: str = ""
) -> TrafficTrajectory:
    """The trajectory of ``requests``: their answers' tool calls with the results sent back,
    and the MCP ``runs`` (each its call's execution, or a call of its own)."""
    asked = [(r.number, call) for r in requests for call in r.answer.tool_calls]
    sent: dict[int, SentResult] = {}  # index in ``asked`` -> its result
    for request in requests:
        earlier = [(i, call) for i, (number, call) in enumerate(asked) if number < request.number]
        for i, result in _answered(earlier, request.results):
            sent.setdefault(i, result)
    calls = [
        TrafficCall(
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            raw_arguments=call.raw_arguments,
            result=sent[i].text if i in sent else None,
            error=sent[i].text if i in sent and sent[i].error else None,
            request=number,
        )
        for i, (number, call) in enumerate(asked)
    ]
    return TrafficTrajectory(
        requests=tuple(requests),
        tool_calls=_with_runs(calls, runs),
        narrowed=narrowed,
        runs=tuple(runs),
    )


def _with_runs(calls: list[TrafficCall], runs: Sequence[ToolRun]) -> tuple[TrafficCall, ...]:
    """The calls, each MCP run given to the call it executes or added as a call of its own."""
    alone: list[TrafficCall] = []
    for run in runs:
        index = next((i for i, call in enumerate(calls) if _executes(run, call)), None)
        if index is None:
            alone.append(_unasked(run))
            continue
        call = calls[index]
        error = call.error if call.error is not None else run.error
        result = call.result if call.result is not None else run.result
        calls[index] = dataclasses.replace(call, run=run, result=result, error=error)
    merged = [(call.request, 0, call) for call in calls] + [(c.request, 1, c) for c in alone]
    merged.sort(key=lambda item: item[:2])  # stable: in order within each place
    return tuple(call for _, _, call in merged)


def _executes(run: ToolRun, call: TrafficCall) -> bool:
    """Whether the MCP run is the execution of the model's call (not given one yet)."""
    return (
        call.run is None
        and call.request <= run.after
        and call.name == run.name
        and (call.arguments is None or dict(call.arguments) == dict(run.arguments))
    )


def _unasked(run: ToolRun) -> TrafficCall:
    return TrafficCall(
        id=f"mcp:{run.id}" if run.id else None,  # a recorded tool's call has none
        name=run.name,
        arguments=run.arguments,
        raw_arguments=json.dumps(run.arguments, default=str),
        result=run.result,
        error=run.error,
        request=run.after,
        run=run,
        asked=False,
    )


def _answered(
    calls: Sequence[tuple[int, ModelToolCall]], results: Sequence[SentResult]
) -> Iterator[tuple[int, SentResult]]:
    """(index of the call, its result) for each result of one request that answers one of
    the ``calls`` asked before it (docs/reference/architecture.md says how)."""
    ids = {call.id for _, call in calls if call.id}
    named: set[str | None] = {r.call_id for r in results if r.call_id in ids}
    seen: Counter[tuple[str, str | None]] = Counter()
    for result in results:
        key = _key(result, named)
        seen[key] += 1
        same = [i for i, call in calls if _answers(key, call, named)]
        if len(same) >= seen[key]:
            yield same[seen[key] - 1], result


def _key(result: SentResult, named: set[str | None]) -> tuple[str, str | None]:
    """What a result answers by: ``id`` (a call's), ``own`` (its tool's name: it has an id
    no call has, the client's own) or ``name`` (its tool's name: it has no id)."""
    if result.call_id in named:
        return ("id", result.call_id)
    return ("own" if result.call_id else "name", result.name)


def _answers(key: tuple[str, str | None], call: ModelToolCall, named: set[str | None]) -> bool:
    """Whether a result of that key may answer the call: by its id; by name, a call without
    an id, or (a result without an id) a call whose id no result of the request names."""
    by, value = key
    if by == "id":
        return call.id == value
    return call.name == value and (call.id is None or (by == "name" and call.id not in named))
