"""The harness's part in one test: its scope, cassette, network guard and reports.

``ItemRun.start`` builds what governs the test's model calls from the session settings and
its ``harness`` markers (the plugin stores it on the item at setup); the plugin runs each
phase of the test inside ``ItemRun.active()`` and calls ``ItemRun.finish`` after teardown.
Tribunals run inside the test are reported here: JUnit properties, the
``pytest_harness_tribunal`` hook, the fixture's list.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from pytest_harness import _litellm, scope, settings
from pytest_harness.cassettes.netguard import NetworkGuard
from pytest_harness.cassettes.scrub import Redaction
from pytest_harness.cassettes.slot import CassetteSlot, cassette_path
from pytest_harness.errors import HarnessError, describe
from pytest_harness.local.route import LocalRoute

if TYPE_CHECKING:
    from pytest_harness.fixture import Harness


class ItemRun:
    """What the harness keeps for one running test.

    Attributes:
        scope: what governs the test's model calls.
        slot: the test's cassette, or None (``cassette=False``).
        guard: the network guard in replay mode, else None.
        harness: the ``harness`` fixture's object, once the test asked for it.
    """

    def __init__(self, item: pytest.Item, scope_: scope.Scope) -> None:
        self.item = item
        self.scope = scope_
        self.slot: CassetteSlot | None = None
        self.guard: NetworkGuard | None = None
        self.harness: Harness | None = None

    @classmethod
    def start(cls, item: pytest.Item, session: settings.Settings, run_id: str) -> ItemRun:
        """The run of ``item``: its markers applied, its guard up in replay mode.

        Raises:
            ConfigError: a wrong ``harness`` marker argument.
        """
        test = settings.for_test(session, *_marker_arguments(item))
        run = cls(item, scope.Scope())
        if test.record == "none":
            run.guard = NetworkGuard(session.allow_hosts)
        if test.cassette is not False:
            run.slot = _slot(item, session, test, run_id, run.guard)
        if run.guard is not None and _uses_harness(item):
            run.guard.install()  # the whole test is offline, not only from its first call
        run.scope = scope.Scope(
            degenerate=test.degenerate,
            model=test.model,
            timeout=test.timeout,
            test_id=item.nodeid,
            call_hooks=(LocalRoute(live=test.record != "none"), *filter(None, [run.slot])),
            listeners=(run.listen,),
        )
        return run

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run one phase of the test with its scope in force."""
        _litellm.quiet_warnings()
        with scope.activate(self.scope):
            yield

    def fixture(self) -> Harness:
        """The ``harness`` fixture's object (one per test)."""
        if self.harness is None:
            from pytest_harness.fixture import Harness

            self.harness = Harness(self.item.nodeid)
        return self.harness

    def listen(self, topic: str, payload: Any) -> None:
        """Report what the test's features did (a listener of its scope)."""
        if topic != "tribunal":
            return
        from pytest_harness import report

        data = report.record(payload.tribunal, payload.error, self.item.nodeid)
        self.item.user_properties.extend(report.junit_properties(data))
        tribunal = payload.tribunal
        self.item.ihook.pytest_harness_tribunal(item=self.item, tribunal=tribunal, record=data)
        if self.harness is not None:
            self.harness.tribunals.append(tribunal)

    def blocked(self) -> str | None:
        """Why a test that passed must fail: connections refused in replay mode, or None."""
        if self.guard is None or not self.guard.blocked:
            return None
        return (
            "pytest-harness blocked network connections in replay mode: "
            + ", ".join(self.guard.blocked)
            + ". Record the test with --harness-live, or allow the hosts with harness_allow_hosts."
        )

    def finish(self, *, keep: bool) -> str | None:
        """Stop the guard; close the cassette, saving it when ``keep``; return an error or None."""
        if self.guard is not None:
            self.guard.uninstall()
        if self.slot is None:
            return None
        try:
            self.slot.close(keep=keep)
        except HarnessError as error:
            return describe(error)
        return None


def _marker_arguments(item: pytest.Item) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The test's ``harness`` markers merged: module, class, function; the closest wins."""
    kwargs: dict[str, Any] = {}
    args: tuple[Any, ...] = ()
    for marker in reversed(list(item.iter_markers("harness"))):
        kwargs.update(marker.kwargs)
        args += marker.args
    return kwargs, args


def _slot(
    item: pytest.Item,
    session: settings.Settings,
    test: settings.TestSettings,
    run_id: str,
    guard: NetworkGuard | None,
) -> CassetteSlot:
    name = test.cassette if isinstance(test.cassette, str) else None
    return CassetteSlot(
        path=cassette_path(session.cassette_dir, item.nodeid, name),
        mode=test.record,
        nodeid=item.nodeid,
        run_id=run_id,
        ignore=session.match_ignore,
        redaction=Redaction.with_extra(
            headers=session.redact_headers,
            query=session.redact_query,
            body_fields=session.redact_body_fields,
        ),
        guard=guard,
    )


def _uses_harness(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return item.get_closest_marker("harness") is not None or any(
        name.startswith("harness") for name in names
    )
