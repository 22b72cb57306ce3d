"""What one test's HTTP traffic held: cassette misses, bad model responses, and its spend.

The test's cassette shows ``TrafficWatch.seen`` every model response it plays or records,
the application's and the harness's, and asks ``TrafficWatch.gate`` before any request goes
to a real server. The watch

- adds every response the application received to the test's ``Spend`` (tokens, and cost
  from litellm's prices); the harness's own calls are added as the seam reports them
  (``harness_response``), also in a test without a cassette;
- checks every response the application received with the ``ResponseValidator`` under the
  test's ``harness_degenerate`` policy (the seam checks its own calls). Nothing is raised
  inside the client's transport, where an SDK would retry or wrap it: the application gets
  the reply exactly as the provider gave it. ``warn`` warns when the test phase ends
  (``warn_pending``); ``fail`` keeps the error, and the report puts it first
  (``unreported``);
- refuses live model requests once the budget is spent (``harness_max_cost``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_harness import scope
from pytest_harness.errors import CassetteMiss, HarnessWarning, InvalidResponse, describe
from pytest_harness.spend import Budget, Ledger, Spend, junit_properties

if TYPE_CHECKING:
    from pytest_harness.cassettes.slot import Seen
    from pytest_harness.marker import TestSettings
    from pytest_harness.response import ModelResponse
    from pytest_harness.settings import Settings


@dataclass(eq=False)
class TrafficWatch:
    """The watch over one test's traffic.

    Attributes:
        test: the test's node id.
        spend: the test's model calls, tokens and cost.
        budget: the live-call budget, or None (replay, or no limit set).
        price: whether to price the calls when the test ends (something shows the cost).
        scope: the test's scope (its degenerate policy), set once built.
        free: the application talks to the embedded model: its calls cost nothing, whatever
            model name it asks for.
        problems: bad responses the application received, under ``fail``.
        warnings: bad responses the application received, under ``warn``, not warned yet.
    """

    test: str
    spend: Spend = field(default_factory=Spend)
    budget: Budget | None = None
    price: bool = False
    scope: scope.Scope = field(default_factory=scope.Scope)
    free: bool = False
    problems: list[InvalidResponse] = field(default_factory=list)
    warnings: list[InvalidResponse] = field(default_factory=list)
    _reported: set[int] = field(default_factory=set)

    @classmethod
    def start(cls, session: Settings, test: TestSettings, nodeid: str, run_id: str) -> TrafficWatch:
        watch = cls(nodeid, price=session.price_calls)
        limits = (session.max_cost, session.max_session_cost)
        if test.record != "none" and any(limit is not None for limit in limits):
            ledger = None
            if session.max_session_cost is not None:
                ledger = Ledger(run_id, session.max_session_cost)
            watch.budget = Budget(watch.spend, session.max_cost, ledger)
        return watch

    def harness_response(self, response: ModelResponse) -> None:
        """Count a response of the harness's own (the seam reported it)."""
        self.spend.add(response.model, response.usage, cost=response.cost)

    def seen(self, seen: Seen) -> None:
        """Count and check a model response the application received."""
        found = seen.found
        provider = None if self.free else found.provider  # no provider: not priced
        self.spend.add(found.model, found.response.usage, provider=provider)
        from pytest_harness import model

        source = "a replayed" if seen.replayed else "a"
        call = f"{source} request of the application (POST {seen.uri.partition('?')[0]})"
        error = model.problem(seen.found.response, call=call, within=self.scope)
        if error is None:
            return
        if self.scope.degenerate == "fail":
            self.problems.append(error)
        else:
            self.warnings.append(error)

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
        self, raised: BaseException | None, misses: Sequence[CassetteMiss] = ()
    ) -> str | None:
        """What the report must show first and has not shown yet, or None.

        Args:
            raised: the exception the phase ended with; a miss it is needs no repeating.
            misses: the cassette's misses so far.
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
        """The test's spend as JUnit properties (none without model calls)."""
        if self.budget is not None:
            self.budget.settle()
        if not self.spend.calls:
            return []
        return junit_properties(self.spend.record(self.test, priced=self.price))
