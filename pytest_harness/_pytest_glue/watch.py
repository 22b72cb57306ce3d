"""What one test's HTTP traffic held: misses, bad model responses, its cost, and the budget."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_harness._model import seam as model
from pytest_harness._model.response import ModelResponse, Usage
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import (
    BudgetExceeded,
    CassetteError,
    CassetteMiss,
    HarnessWarning,
    InvalidResponse,
    UnrecordableTraffic,
    describe,
)

if TYPE_CHECKING:
    from pytest_harness._cassettes.interactions import Priced
    from pytest_harness._cassettes.mcp import ToolRun
    from pytest_harness._cassettes.slot import Seen
    from pytest_harness._pytest_glue.settings import Settings, TestSettings
    from pytest_harness._trajectory import TrafficTrajectory
    from pytest_harness._wire import Recognised

USAGE_PROPERTY = "harness_usage"
CALLS_PROPERTY = "harness_app_calls"
MAX_CALLS = 20  # the application's calls a test's report shows (then only how many more)
MAX_MESSAGES = 20  # a request's messages the report shows: its first, then the latest
# Endpoints whose requests spend money: the budget refuses only these.
_PAID = (
    "/chat/completions",
    "/completions",
    "/responses",
    "/messages",
    "/embeddings",
    "/api/chat",  # Ollama (free, but a budget counts the calls all the same)
    "/api/generate",
)
_PAID_METHODS = (":generateContent", ":streamGenerateContent", ":embedContent")
# Bedrock's runtime operations (``/model/{modelId}/…``).
_PAID_BEDROCK = ("/converse", "/converse-stream", "/invoke", "/invoke-with-response-stream")


@dataclass(eq=False)
class Spend:
    """The model calls of one test: how many, their tokens, (once priced) their cost, and
    the sum of their latencies (None until one is known)."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    latency_s: float | None = None
    models: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(
        self,
        model: str,
        usage: Usage,
        *,
        cost: float | None = None,
        latency_s: float | None = None,
    ) -> None:
        """Count one model response (thread-safe: SDKs call from threads).

        Args:
            model: the model that answered.
            usage: its token counts.
            cost: its cost, or None when not known (not priced).
            latency_s: its latency (as recorded, in replay), when known.
        """
        with self._lock:
            self.calls += 1
            self.usage += usage
            if latency_s is not None:
                self.latency_s = (self.latency_s or 0.0) + latency_s
            self.models[model] = self.models.get(model, 0) + 1
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost

    def record(self, test: str) -> dict[str, Any]:
        """The JSON-ready account of the test's calls."""
        return {
            "test": test,
            "calls": self.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "tokens": self.usage.total_tokens,
            "cached_tokens": self.usage.cached_tokens,
            "cache_write_tokens": self.usage.cache_write_tokens,
            "cost": self.cost,
            "latency_s": None if self.latency_s is None else round(self.latency_s, 3),
            "models": dict(self.models),
        }


def priced(found: Recognised) -> Priced:
    """What a recognised model reply costs by litellm's price map (imported here: only a
    recording prices, and its interaction keeps the price for replay)."""
    from pytest_harness._cassettes.interactions import Priced

    return Priced(model.price(found.model, found.response.usage, found.provider), found.provider)


def junit_properties(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The test's properties: the whole record, then ``harness_tokens`` and ``harness_cost``."""
    cost = record["cost"]
    return [
        (USAGE_PROPERTY, json.dumps(record, sort_keys=True)),
        ("harness_tokens", str(record["tokens"])),
        ("harness_cost", "" if cost is None else f"{cost:.6f}"),
    ]


@dataclass(eq=False)
class Budget:
    """Refuses live requests once the recorded spend reached a limit (the cassette's gate).

    Attributes:
        spend: the running test's spend.
        max_cost: the limit per test, or None.
        ledger: the session's spend across workers, or None when it has no limit.
    """

    spend: Spend
    max_cost: float | None
    ledger: Ledger | None = None
    _counted: float = 0.0  # what this test has already added to the ledger

    def gate(self, uri: str) -> None:
        """Refuse a live model request (``BudgetExceeded``) once a limit is reached."""
        path = uri.partition("?")[0]
        if not path.endswith(_PAID + _PAID_METHODS + _PAID_BEDROCK):
            return
        spent = self.spend.cost or 0.0
        if self.max_cost is not None and spent >= self.max_cost:
            raise BudgetExceeded(
                f"pytest-harness refused a live model call: this test has spent "
                f"{spent:.6f} on model calls so far and harness_max_cost is {self.max_cost:g}. "
                "Raise harness_max_cost in your pytest ini, or find the loop that keeps calling."
            )
        if self.ledger is None:
            return
        self.settle()
        total = self.ledger.total()
        if total >= self.ledger.limit:
            raise BudgetExceeded(
                f"pytest-harness refused a live model call: this session has spent "
                f"{total:.6f} on model calls so far and harness_max_session_cost is "
                f"{self.ledger.limit:g}. Raise harness_max_session_cost in your pytest ini, "
                "or record fewer tests at once."
            )

    def settle(self) -> None:
        """Add what the test spent since the last call to the session's ledger."""
        if self.ledger is None:
            return
        spent = self.spend.cost or 0.0
        if spent > self._counted:
            self.ledger.add(spent - self._counted)
            self._counted = spent


class Ledger:
    """The session's spend on live calls, shared by its xdist workers through one file.

    Args:
        run_id: the session's id (shared with its workers).
        limit: ``harness_max_session_cost``.
    """

    def __init__(self, run_id: str, limit: float) -> None:
        self.limit = limit
        self.path = _ledger_path(run_id)
        self.path.parent.mkdir(exist_ok=True)

    def total(self) -> float:
        try:
            return float(json.loads(self.path.read_text(encoding="utf-8"))["spent"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0.0

    def add(self, amount: float) -> None:
        from filelock import FileLock

        from pytest_harness._cassettes.atomic import write_atomic

        with FileLock(f"{self.path}.lock"):
            write_atomic(self.path, json.dumps({"spent": self.total() + amount}))


def _ledger_path(run_id: str) -> Path:
    return Path(tempfile.gettempdir()) / "pytest-harness-spend" / f"{run_id}.json"


def forget(run_id: str) -> None:
    """Remove the session's ledger (the session is over)."""
    for path in (_ledger_path(run_id), Path(f"{_ledger_path(run_id)}.lock")):
        path.unlink(missing_ok=True)


def exchange(seen: Seen, number: int, problem: str | None) -> dict[str, Any]:
    """The JSON-ready account of one model call of the application's: where it went, the
    messages it sent, what came back (the tools the provider ran itself apart from the tool
    calls the application is to run), its tokens and latency (``latency_recorded`` when the
    latency is the recording's, in replay), and its defect, if any (texts clipped). A
    message that sent no text shows as ``_wire.NO_TEXT``."""
    from pytest_harness._report.text import cut
    from pytest_harness._wire import read_request

    found, response = seen.found, seen.found.response
    sent = read_request(found.api, seen.request).conversation
    messages = [{"role": turn.role, "content": cut(turn.shown)} for turn in sent]
    latency = None if seen.latency_s is None else round(seen.latency_s, 3)
    return {
        "call": number,
        "endpoint": seen.uri.partition("?")[0],  # a query may hold a key (Gemini's ?key=)
        "api": found.api,
        "model": found.model,
        "replayed": seen.replayed,
        "streamed": found.streamed,
        "request": _fewer(messages),
        "response": cut(response.text) or None,
        "reasoning": cut(response.reasoning),
        "tool_calls": [
            {"name": call.name, "arguments": cut(call.raw_arguments)}
            for call in response.tool_calls
        ],
        "provider_tool_calls": [
            {"name": call.name, "arguments": cut(call.raw_arguments)}
            for call in response.provider_tool_calls
        ],
        "finish_reason": response.finish_reason,
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
        "tokens": response.usage.total_tokens,
        "latency_s": latency,
        "latency_recorded": seen.replayed and latency is not None,
        "problem": problem,
    }


def answer(response: ModelResponse) -> str:
    """What a model response says (its text, reasoning and tool calls), as one text."""
    calls = [(call.name, call.raw_arguments) for call in response.tool_calls]
    return json.dumps([response.content, response.reasoning, calls], default=str)


def _fewer(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most ``MAX_MESSAGES``: the first (a system prompt, a question), a line saying how
    many were left out, then the latest."""
    if len(messages) <= MAX_MESSAGES:
        return messages
    left = len(messages) - MAX_MESSAGES + 1
    gap = {"role": "…", "content": f"{left} earlier messages left out"}
    return [messages[0], gap, *messages[-(MAX_MESSAGES - 2) :]]


def calls_property(test: str, calls: Sequence[dict[str, Any]], total: int) -> tuple[str, str]:
    """The application's model calls in one test as a JUnit property, known secrets masked."""
    from pytest_harness._cassettes.scrub import REDACTED, secret_values_from_env

    text = json.dumps({"test": test, "calls": list(calls), "total": total}, sort_keys=True)
    for secret in secret_values_from_env(os.environ):
        text = text.replace(json.dumps(secret)[1:-1], REDACTED)
    return CALLS_PROPERTY, text


@dataclass(eq=False)
class TrafficWatch:
    """The watch over one test's traffic.

    Attributes:
        test: the test's node id.
        spend: the test's model calls, tokens and cost.
        budget: the live-call budget, or None (replay, or no limit set).
        scope: the test's scope (its degenerate policy), set once built.
        free: the application talks to the embedded model: its calls cost nothing, whatever
            model name it asks for.
        problems: bad responses the application received, under ``fail``.
        warnings: bad responses the application received, under ``warn``, not warned yet.
        calls: the application's first ``MAX_CALLS`` model calls (``exchange``), for the
            report (``exchanges`` holds them all).
        exchanges: every model response the application received, in order (its trajectory
            is read from them: ``harness.trajectory``).
        tool_runs: every MCP tool call the application made, in order, each knowing how
            many of ``exchanges`` came before it.
        answers: what each model response of the traffic said (``answer``), the harness's
            and the application's, in order: a sampled test tells copies by them.
    """

    test: str
    spend: Spend = field(default_factory=Spend)
    budget: Budget | None = None
    scope: scope.Scope = field(default_factory=scope.Scope)
    free: bool = False
    problems: list[InvalidResponse] = field(default_factory=list)
    warnings: list[InvalidResponse] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    exchanges: list[Seen] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    _reported: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, session: Settings, test: TestSettings, nodeid: str, run_id: str) -> TrafficWatch:
        watch = cls(nodeid)
        limits = (session.max_cost, session.max_session_cost)
        if test.record != "none" and any(limit is not None for limit in limits):
            ledger = None
            if session.max_session_cost is not None:
                ledger = Ledger(run_id, session.max_session_cost)
            watch.budget = Budget(watch.spend, session.max_cost, ledger)
        return watch

    def pricing(self, found: Recognised) -> Priced:
        """The price of an application's reply recorded now (``CassetteSlot.pricing``):
        litellm's, or none for the embedded model's (free, whatever model it names)."""
        if self.free:
            from pytest_harness._cassettes.interactions import Priced

            return Priced(None, found.provider)
        return priced(found)

    def harness_response(self, response: ModelResponse) -> None:
        """Count a response of the harness's own (the seam reported it)."""
        self.spend.add(
            response.model, response.usage, cost=response.cost, latency_s=response.latency_s
        )

    def seen(self, seen: Seen) -> str | None:
        """Judge a model response of the test's traffic: its defect (a validator reason), or None.

        The application's responses are counted here and judged under the test's policy,
        the errors kept for the report. The seam's own (``seen.seam``) are only judged: the
        seam applies the policy in force to the defect returned, and counts the response
        itself (under the model it asked for, with its price).
        """
        found = seen.found
        self.answers.append(answer(found.response))
        if seen.seam:
            return model.defect(found.response)
        cost = None if self.free or seen.price is None else seen.price.cost
        self.spend.add(found.model, found.response.usage, cost=cost, latency_s=seen.latency_s)
        source = "a replayed" if seen.replayed else "a"
        call = f"{source} request of the application ({seen.method} {seen.uri.partition('?')[0]})"
        error = model.problem(seen.found.response, call=call, within=self.scope)
        self._keep(seen, None if error is None else error.reason)
        if error is None:
            return None
        if self.scope.degenerate == "fail":
            self.problems.append(error)
        else:
            self.warnings.append(error)
        return error.reason

    def _keep(self, seen: Seen, problem: str | None) -> None:
        """Count an application call; keep its account while fewer than ``MAX_CALLS`` are."""
        with self._lock:  # SDKs call from threads: each call its own number
            self.exchanges.append(seen)
            number = len(self.exchanges)
        if number <= MAX_CALLS:
            self.calls.append(exchange(seen, number, problem))

    def tool_run(self, run: ToolRun) -> None:
        """Keep an MCP tool call of the application's, placed among its model requests."""
        with self._lock:
            self.tool_runs.append(dataclasses.replace(run, after=len(self.exchanges)))

    def trajectory(self) -> TrafficTrajectory:
        """The application's traffic so far as a trajectory (``harness.trajectory``)."""
        from pytest_harness._trajectory import from_traffic

        with self._lock:
            exchanges, runs = list(self.exchanges), list(self.tool_runs)
        return from_traffic(exchanges, runs)

    def warn_pending(self, *, quiet: bool = False) -> None:
        """Warn about each bad response kept under ``warn`` (at the end of a test phase).

        Args:
            quiet: the phase is already failing; a warning turned error must not hide that.
        """
        pending, self.warnings = self.warnings, []
        for error in pending:
            with contextlib.suppress(Warning) if quiet else contextlib.nullcontext():
                warnings.warn(HarnessWarning(str(error)), stacklevel=2)

    def gate(self, uri: str) -> None:
        """Before a live request: refuse it when the budget is spent."""
        if self.budget is not None:
            self.budget.gate(uri)

    def unreported(
        self,
        raised: BaseException | None,
        misses: Sequence[CassetteMiss | CassetteError | UnrecordableTraffic] = (),
    ) -> str | None:
        """What the report must show first and has not shown yet, or None.

        Args:
            raised: the exception the phase ended with; a miss it is needs no repeating.
            misses: the cassette's misses (and damaged recordings it played) so far.
        """
        new = [e for e in [*misses, *self.problems] if id(e) not in self._reported]
        self._reported.update(id(e) for e in new)
        shown = [e for e in new if e is not raised]
        if not shown:
            return None
        lines = [describe(shown[0])]
        if len(shown) > 1:
            lines += ["", f"and {len(shown) - 1} more:"]
            lines += [f"  {describe(e).splitlines()[0]}" for e in shown[1:]]
        return "\n".join(lines)

    def claim(self, start: int) -> str | None:
        """The first bad response kept since ``problems[start]``, as a message, or None.

        A sampled test counts it against the sample that received it: the report then does
        not repeat it (nor fail the whole test for it).
        """
        fresh = self.problems[start:]
        self._reported.update(id(e) for e in fresh)
        return describe(fresh[0]) if fresh else None

    def finish(self) -> list[tuple[str, str]]:
        """The test's spend and the application's calls as JUnit properties (none without
        model calls)."""
        if self.budget is not None:
            self.budget.settle()
        if not self.spend.calls:
            return []
        found = junit_properties(self.spend.record(self.test))
        if self.exchanges:
            calls = sorted(self.calls, key=lambda call: call["call"])
            found.append(calls_property(self.test, calls, len(self.exchanges)))
        return found
