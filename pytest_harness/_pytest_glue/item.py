"""The harness's part in one test: its scope, cassette, network guard and report rows."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_harness._cassettes.matching import split_host
from pytest_harness._cassettes.netguard import NetworkGuard
from pytest_harness._cassettes.scrub import Redaction
from pytest_harness._cassettes.slot import REPLAY_KEY, CassetteSlot, cassette_path
from pytest_harness._local import route
from pytest_harness._model import seam as model
from pytest_harness._pytest_glue import failures, scope
from pytest_harness._pytest_glue import settings as settings_
from pytest_harness._pytest_glue.config import settings as session_settings
from pytest_harness._pytest_glue.watch import TrafficWatch
from pytest_harness.errors import (
    EndpointUnreachable,
    HarnessError,
    describe,
    find_cause,
)

if TYPE_CHECKING:
    import pytest

    from pytest_harness._cassettes.slot import CassetteSlot
    from pytest_harness._datasets.sampling import Sampling
    from pytest_harness._pytest_glue.fixture import Harness
    from pytest_harness._pytest_glue.settings import Settings


REPORTED = ("tribunal", "run", "transcript", "calibration")  # the topics the reports keep


def setup(item: pytest.Item, run_id: str) -> Generator[None, None, None]:
    """The setup phase (a hook wrapper's body): start the test's run, then set up in it."""
    unavailable = item.get_closest_marker("harness_unavailable")
    if unavailable is not None:  # one error for this test, not a crash of its module
        yield  # after the rest of setup ran: pytest's own teardown expects its state
        pytest.fail(unavailable.args[0], pytrace=False)
    try:
        run = item.stash[_RUN] = ItemRun.start(item, session_settings(item.config), run_id)
        run.open()
    except HarnessError as error:  # a wrong marker, a broken cassette, no embedded model
        problem = describe(error)
    else:
        with run.active():
            return (yield)
    # Fail only after the rest of setup ran (pytest's own teardown expects its state), and
    # outside the handler: the message is shown once, not again as the context of another.
    yield
    pytest.fail(problem, pytrace=False)


def call(item: pytest.Item) -> Generator[None, None, None]:
    """The call phase, in the test's scope; a sampled test's body runs once per sample."""
    run = item.stash.get(_RUN, None)
    if run is None:
        return (yield)
    with run.active():
        if run.sampling is None:
            return (yield)
        body = item.runtest
        item.runtest = lambda: run.run_samples(body)  # type: ignore[method-assign]
        try:
            return (yield)
        finally:
            del item.runtest  # the class's method again


def teardown(item: pytest.Item) -> Generator[None, None, None]:
    """The teardown phase, in the test's scope; then the cassette is closed (and saved)."""
    run = item.stash.get(_RUN, None)
    if run is None:
        return (yield)
    try:
        with run.active():
            return (yield)
    finally:
        problem = run.finish(failed=item.stash.get(_FAILED, False))
        if problem is not None:
            # No traceback: its frames would show the secret values the scan looked for.
            pytest.fail(problem, pytrace=False)


def makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Put what went wrong in the test's traffic first in its report; remember a failure.

    A cassette miss an SDK wrapped, a bad model response the application received, a
    refused connection a library swallowed: each fails the phase (also one that passed), its
    message ahead of whatever error the test then raised. A failure the harness raised is
    shown briefly under ``--tb=auto`` and ``short``: its message, the test's lines, no
    frames of the SDKs or the harness (``_pytest_glue.failures``).
    """
    report = yield
    run = item.stash.get(_RUN, None)
    if run is not None and run.slot is not None and report.skipped:
        from pytest_harness._cassettes import runlog

        runlog.note_used(run.slot.path)  # --harness-prune: a skipped test keeps its cassette
    shown = None  # the harness's error the report now shows first, if any
    if report.failed and call.excinfo is not None:
        shown = _shorten(item, report, call.excinfo, run)
    if run is not None and not report.skipped:
        raised = call.excinfo.value if call.excinfo is not None else None
        raised = shown or raised
        first = run.watch.unreported(raised, run.slot.misses if run.slot is not None else ())
        if call.when == "call" and first is None:
            first = run.blocked()
        if first is None:  # the application lost the embedded model's server
            first = route.death_news()
        if first is not None and report.passed:
            report.outcome, report.longrepr = "failed", first
        elif first is not None:
            report.longrepr = f"{first}\n\nThe test then failed with:\n{report.longrepr}"
    if item.get_closest_marker("harness_case") is not None:  # a dataset's case
        from pytest_harness._datasets.gate import note

        note(item, call, report)
    if report.failed:
        item.stash[_FAILED] = True
    return report


def _shorten(
    item: pytest.Item,
    report: pytest.TestReport,
    excinfo: pytest.ExceptionInfo[BaseException],
    run: ItemRun | None,
) -> BaseException | None:
    """Report a failure the harness raised briefly (``failures``); returns the harness's
    error the report starts with, or None when pytest's report stands.

    A recording request that found nothing at its address is the harness's failure too,
    whatever the SDK made of it: under ``--tb=long`` its address heads pytest's report.
    """
    unreachable = None if run is None or run.slot is None else _unreachable(excinfo, run.slot)
    if not failures.shows_briefly(item.config):
        long = item.config.getoption("tbstyle") == "long" or item.config.getoption("fulltrace")
        if unreachable is not None and long:
            report.longrepr = f"{describe(unreachable)}\n\n{report.longrepr}"
        return None
    found = unreachable or failures.harness_error(excinfo.value)
    if found is not None:
        report.longrepr = failures.render(item, excinfo, found)
    return found


def _unreachable(
    excinfo: pytest.ExceptionInfo[BaseException], slot: CassetteSlot
) -> EndpointUnreachable | None:
    """What a test whose recording request found nothing at its address ran into.

    The SDK's error names no address and its traceback runs through pages of the SDK's
    retries; the harness's error names the address and the fix.
    """
    if isinstance(excinfo.value, EndpointUnreachable):
        return None  # a harness call raised it: an error of the harness like any other
    raised = excinfo.value
    found = find_cause(raised, (EndpointUnreachable,)) or slot.unreachable(raised)
    return found if isinstance(found, EndpointUnreachable) else None


def fixture(item: pytest.Item) -> Harness:
    """The ``harness`` fixture's object of the test (one per test)."""
    run = item.stash.get(_RUN, None)
    if run is None:  # its harness marker is wrong: the test fails once set-up is over
        from pytest_harness._pytest_glue.fixture import Harness

        return Harness(item.nodeid)
    return run.fixture()


class ItemRun:
    """What the harness keeps for one running test.

    Attributes:
        scope: what governs the test's model calls (set by ``start``).
        slot: the test's cassette, or None (``cassette=False``).
        guard: the network guard in replay mode, else None.
        watch: what the test's traffic held (misses, bad responses, spend).
        captures: whether the cassette is open for the whole test.
        record_failed: save the cassette even when the test failed.
        reports: what the test's features reported (tribunals, runs, calibrations).
        sampling: the samples of a sampled test (``samples=N``), else None.
        matrix: the model of a model matrix's copy of the test, else None.
    """

    scope: scope.Scope
    watch: TrafficWatch

    def __init__(self, item: pytest.Item, *, record_failed: bool, captures: bool) -> None:
        self.item = item
        self.record_failed = record_failed
        self.captures = captures
        self.slot: CassetteSlot | None = None
        self.guard: NetworkGuard | None = None
        self.reports = ItemReports(item)
        self.sampling: Sampling | None = None
        self.matrix: str | None = None
        self.column = 0  # the matrix model's place in --harness-models
        self.change_budget = 0.25  # harness_change_budget
        self.strict_replay = False  # harness_strict_replay, or the marker's
        self._environ = pytest.MonkeyPatch()  # set and restored by pytest's own helper

    @classmethod
    def start(cls, item: pytest.Item, session: Settings, run_id: str) -> ItemRun:
        """The run of ``item``: its markers applied, its guard up in replay mode.

        Raises:
            ConfigError: a wrong ``harness`` marker argument.
        """
        matrix = _matrix_model(item, session)
        if matrix is not None:  # a model matrix's copy: as --harness-model=MODEL would run
            session = replace(session, model=matrix, model_from_cli=True)
        test = settings_.apply(session, *settings_.arguments(item))
        captures = session.capture == "all" or settings_.uses_harness(item)
        run = cls(item, record_failed=session.record_failed, captures=captures)
        run.change_budget = session.change_budget
        run.strict_replay = test.strict_replay
        run.matrix = matrix
        run.column = session.models.index(matrix) if matrix is not None else 0
        run.watch = TrafficWatch.start(session, test, item.nodeid, run_id)
        if test.record == "none":
            ignored = [split_host(host)[0] for host in session.ignore_hosts]  # hosts, not ports
            run.guard = NetworkGuard([*session.allow_hosts, *ignored])
        if test.cassette is not False:
            run.slot = _slot(item, session, test, run_id, run.guard, matrix)
            run.slot.on_response = run.watch.seen
            run.slot.on_tool_run = run.watch.tool_run
            run.slot.gate = run.watch.gate
            run.slot.pricing = run.watch.pricing
        live = test.record != "none"
        run.scope = scope.Scope(
            degenerate=test.degenerate,
            model=test.model,
            judge_model=test.judge_model,
            timeout=test.timeout,
            replay=test.record == "none" and run.slot is not None,
            test_id=item.nodeid,
            call_hooks=tuple(filter(None, [run.slot])),
            routes={route.LOCAL_MODEL: route.LocalRoute(live=live)},
            listeners={
                "response": (run.watch.harness_response,),
                **{topic: (partial(run.reports.add, topic),) for topic in REPORTED},
            },
        )
        run.watch.scope = run.scope
        if test.samples > 1:
            run.sampling = _sampling(test)
        if run.slot is not None:
            run._follow_recording(run.slot)
        return run

    def _follow_recording(self, slot: CassetteSlot) -> None:
        """Replay (or add to) a cassette with the model override it was recorded with.

        A cassette recorded with ``--harness-model=local`` replays with a plain ``pytest``:
        its metadata names the override, which becomes the test's unless the test sets
        another (the cassette's misses then say the two differ). A recording keeps this
        run's override in the metadata it writes.
        """
        # A test replaying at set-up follows once its cassette is open (``open``): the file
        # is read once. Any other reads the file's header now, before its first call.
        replays_at_setup = self.captures and slot.mode == "none"
        if slot.mode != "all" and not replays_at_setup and slot.path.is_file():
            from pytest_harness._cassettes import read

            self._follow(slot, read.header(slot.path, lock=slot.mode != "none"))
        if slot.mode == "none":
            return
        if self.scope.model is not None:
            slot.model = slot.metadata["model"] = self.scope.model
        if self.scope.judge_model is not None:  # replay pins the judges as recorded
            slot.metadata["judge_model"] = self.scope.judge_model
        if self.captures and self.scope.model == route.LOCAL_MODEL:
            slot.metadata["endpoint"] = route.LOCAL_MODEL  # replay points the app back

    def _follow(self, slot: CassetteSlot, header: Mapping[str, Any]) -> None:
        """Take the model override (and the judges' model) the cassette's ``header`` names,
        unless the test sets one."""
        from pytest_harness._cassettes import read

        metadata = header.get("metadata")
        judges = metadata.get("judge_model") if isinstance(metadata, Mapping) else None
        if isinstance(judges, str) and judges and self.scope.judge_model is None:
            self.scope = self.watch.scope = replace(self.scope, judge_model=judges)
        recorded = read.recorded_model(header)
        if recorded is not None and self.scope.model is None:
            self.scope = self.watch.scope = replace(self.scope, model=recorded)
        elif recorded is not None and self.scope.model != recorded:
            slot.replayed_with = self.scope.model
        slot.model = recorded

    def open(self) -> None:
        """Open the whole test's cassette (a test that uses the harness) and go offline.

        With the embedded model (recording with ``--harness-model=local``, or replaying a
        cassette recorded so) the OpenAI variables point the application at it.
        """
        if not self.captures:
            return
        if self.guard is not None:
            self.guard.install()  # the whole test is offline, not only from its first call
        if self.slot is None:
            return
        local = self.slot.metadata.get("endpoint") == route.LOCAL_MODEL  # recording with it
        if local:  # the server starts (once) before the cassette sees any traffic
            self._set_environ(route.environment(live=True))
        self.slot.open()
        if self.slot.mode == "none":
            self._follow(self.slot, {"metadata": self.slot.recorded_metadata})
        if not local and self.slot.recorded_metadata.get("endpoint") == route.LOCAL_MODEL:
            self._set_environ(route.environment(live=False))
            local = True
        self.watch.free = local
        if self.slot.mode == "none":
            self._set_environ(_replay_keys())

    def _set_environ(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._environ.setenv(name, value)

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run one phase of the test with its scope in force."""
        model.quiet_warnings()
        with scope.activate(self.scope):
            try:
                yield
            except BaseException:
                self.watch.warn_pending(quiet=True)
                raise
            self.watch.warn_pending()

    def fixture(self) -> Harness:
        """The ``harness`` fixture's object (one per test)."""
        if self.reports.harness is None:
            from pytest_harness._pytest_glue.fixture import Harness

            self.reports.harness = Harness(
                self.item.nodeid,
                folder=self.item.path.parent,
                traffic=self.watch.trajectory,
                cassette_dir=session_settings(self.item.config).cassette_dir,
            )
        return self.reports.harness

    def run_samples(self, body: Callable[[], object]) -> None:
        """Run the test's body once per sample; fail unless enough samples passed."""
        sampling = self.sampling
        assert sampling is not None
        problems, answers = len(self.watch.problems), len(self.watch.answers)

        def starting(number: int) -> None:
            nonlocal problems, answers
            problems, answers = len(self.watch.problems), len(self.watch.answers)
            self.reports.sample = number
            if self.reports.harness is not None:
                self.reports.harness.sample = number
            self._sample_local(number)

        def explain(error: BaseException) -> str:  # the test's report of it, as makereport's
            info = pytest.ExceptionInfo.from_exception(error)
            return failures.brief(self.item, info) or str(self.item.repr_failure(info))

        try:
            sampling.run(
                body,
                starting=starting,
                problem=lambda: self.watch.claim(problems),
                explain=explain,
                answered=lambda: self.watch.answers[answers:],
            )
        finally:
            self._sample_local(None)
            self.item.user_properties.extend(sampling.junit_properties(self.item.nodeid))

    def _sample_local(self, number: int | None) -> None:
        """Tell the embedded model which sample runs (None: none): its own seed and a
        temperature above 0 for each, the harness's calls and the application's alike."""
        local = self.scope.routes.get(route.LOCAL_MODEL)
        if isinstance(local, route.LocalRoute):
            local.sample = number
            if local.live:
                route.sampling(number)

    def blocked(self) -> str | None:
        """Why a test that passed must fail: connections refused in replay mode, or None."""
        if self.guard is None or not self.guard.blocked:
            return None
        return (
            "pytest-harness blocked network connections in replay mode: "
            + ", ".join(self.guard.blocked)
            + ". Record the test with --harness-live, or allow the hosts with harness_allow_hosts."
        )

    def finish(self, *, failed: bool) -> str | None:
        """Stop the guard; close the cassette (saved unless the test failed); report the
        test's spend, verdict drift and what its re-recording changed. Returns an error or
        None."""
        self._environ.undo()
        if self.guard is not None:
            self.guard.uninstall()
        try:
            if self.slot is not None:
                self.reports.keep_verdicts(self.slot)
                self.slot.close(keep=not failed or self.record_failed)
                flipped = self.reports.report_drift(self.slot)
                self.reports.report_changes(
                    self.slot, failed=failed, verdicts=flipped, budget=self.change_budget
                )
                unused = self.reports.report_replay(self.slot, strict=self.strict_replay)
                if unused is not None and not failed:
                    return unused
        except HarnessError as error:
            return describe(error)
        finally:
            self.item.user_properties.extend(self.watch.finish())
            self.item.user_properties.extend(self.reports.traffic(self.watch))
            if self.matrix is not None:
                self.item.user_properties.append(self._cell(self.matrix))
        return None

    def _cell(self, model: str) -> tuple[str, str]:
        """The test's cell of the model matrix (a JUnit property)."""
        from pytest_harness._pytest_glue.matrix import cell_property

        samples = None if self.sampling is None else self.sampling.record(self.item.nodeid)
        return cell_property(self.item.nodeid, model, self.watch, samples, column=self.column)


def _sampling(test: settings_.TestSettings) -> Sampling:
    """The sampling of a test run ``samples`` times: sequential with ``confidence``."""
    from pytest_harness._datasets.sampling import Sampling
    from pytest_harness._statistics import Sprt

    if test.confidence is None:
        return Sampling(test.samples, test.pass_rate)
    sprt = Sprt(pass_rate=test.pass_rate, confidence=test.confidence, margin=test.margin)
    return Sampling(test.samples, test.pass_rate, sprt=sprt, inconclusive=test.inconclusive)


def _slot(
    item: pytest.Item,
    session: Settings,
    test: settings_.TestSettings,
    run_id: str,
    guard: NetworkGuard | None,
    matrix: str | None = None,
) -> CassetteSlot:
    name = test.cassette if isinstance(test.cassette, str) else None
    nodeid = item.nodeid
    if matrix is not None:  # the matrix's copies: one cassette per model, the test's name
        from pytest_harness._pytest_glue.matrix import row_of

        nodeid = row_of(nodeid, matrix)
    return CassetteSlot(
        path=cassette_path(session.cassette_dir, nodeid, name, model=matrix),
        mode=test.record,
        nodeid=item.nodeid,
        matrix=matrix,
        run_id=run_id,
        ignore=session.match_ignore,
        ignore_hosts=session.ignore_hosts,
        redaction=Redaction.with_extra(
            headers=session.redact_headers,
            query=session.redact_query,
            body_fields=session.redact_body_fields,
        ),
        guard=guard,
        shared=name is not None,
        mcp_stdio=test.mcp_stdio,
    )


def _matrix_model(item: pytest.Item, session: Settings) -> str | None:
    """The model of a model matrix's copy of the test (``--harness-models``), or None."""
    if not session.models:
        return None
    from pytest_harness._pytest_glue.matrix import model_of

    return model_of(item, session.models)


def _replay_keys() -> dict[str, str]:
    """Placeholder API keys for the SDKs that refuse to start without one (replay only), and
    a stand-in Google credentials file where none is found (``GOOGLE_APPLICATION_CREDENTIALS``).

    Recording needed a key; replay sends nothing (the cassette answers, the network is
    guarded), so a plain ``pytest`` needs none: a key that is set is left as it is.
    """
    keys = {}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY"):
        if not os.environ.get(name):
            keys[name] = REPLAY_KEY
    if not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
        keys["GEMINI_API_KEY"] = REPLAY_KEY  # not both: google-genai warns when both are set
    # boto3 signs every request before sending it, and refuses to without credentials: a
    # pair that signs what is never sent. Not under an explicit profile (``AWS_PROFILE``),
    # whose credentials boto3 reads in their place.
    if not (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")):
        keys["AWS_ACCESS_KEY_ID"] = _AWS_REPLAY_KEY_ID
        keys["AWS_SECRET_ACCESS_KEY"] = REPLAY_KEY
    # google-genai on Vertex AI (``vertexai=True``) looks for application default
    # credentials, and refuses to start without any: a stand-in whose token refresh the
    # cassette answers (``credentials.stand_in``).
    if not (os.environ.get("GOOGLE_APPLICATION_CREDENTIALS") or _gcloud_adc().is_file()):
        keys["GOOGLE_APPLICATION_CREDENTIALS"] = str(_stand_in_adc())
    return keys


def _gcloud_adc() -> Path:
    """Where gcloud keeps the user's application default credentials (google-auth's
    ``_cloud_sdk.get_application_default_credentials_path``, without importing it)."""
    folder = os.environ.get("CLOUDSDK_CONFIG")
    if not folder:
        if os.name == "nt":
            folder = os.path.join(os.environ.get("APPDATA", ""), "gcloud")
        else:
            folder = os.path.join(os.path.expanduser("~"), ".config", "gcloud")
    return Path(folder, "application_default_credentials.json")


@cache
def _stand_in_adc() -> Path:
    """A stand-in ``authorized_user`` credentials file, written once per process in a
    temporary folder removed at exit. It holds no secret: its refresh asks for a token, which
    replay answers with a stand-in."""
    folder = tempfile.mkdtemp(prefix="pytest-harness-adc-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder, "application_default_credentials.json")
    placeholder = "pytest-harness-replay-not-a-secret"
    stand_in = {
        "type": "authorized_user",
        "client_id": "pytest-harness-replay",
        "client_secret": placeholder,
        "refresh_token": placeholder,
    }
    path.write_text(json.dumps(stand_in), encoding="utf-8")
    return path


# The access key id replay signs with: in AWS's shape (20 upper-case letters and digits),
# plainly not a real one.
_AWS_REPLAY_KEY_ID = "HARNESSREPLAYNOKEY00"


_RUN: pytest.StashKey[ItemRun] = pytest.StashKey()
_FAILED: pytest.StashKey[bool] = pytest.StashKey()


class ItemReports:
    """The report rows of one running test.

    Attributes:
        item: the test.
        harness: the test's ``harness`` fixture object, once it asked for it.
        sample: the running sample's number in a sampled test, else None.
        tribunals: the records of the tribunal runs so far (``report.tribunals.record``).
    """

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        self.harness: Harness | None = None
        self.sample: int | None = None
        self.tribunals: list[dict[str, Any]] = []

    def add(self, topic: str, payload: Any) -> None:
        """Report what finished (a topic of the test's scope other than ``response``)."""
        if topic == "tribunal":
            self._tribunal(payload)
        elif topic in ("run", "transcript"):
            self._agent(topic, payload)
        elif topic == "calibration":
            self._calibration(payload)

    def _tribunal(self, done: Any) -> None:
        from pytest_harness._report import tribunals as report

        data = report.record(done.tribunal, done.error, self.item.nodeid, sample=self.sample)
        self.tribunals.append(data)
        self.item.user_properties.extend(report.junit_properties(data))
        tribunal = done.tribunal
        self.item.ihook.pytest_harness_tribunal(item=self.item, tribunal=tribunal, record=data)
        if self.harness is not None:
            self.harness.tribunals.append(tribunal)

    def _agent(self, topic: str, payload: Any) -> None:
        """An orchestrator run or a simulated conversation."""
        from pytest_harness._report import session

        nodeid = self.item.nodeid
        if topic == "run":
            self.item.user_properties.append(session.run_property(payload, nodeid))
        else:
            self.item.user_properties.append(session.transcript_property(payload, nodeid))
        if self.harness is not None:
            (self.harness.runs if topic == "run" else self.harness.transcripts).append(payload)

    def traffic(self, watch: TrafficWatch) -> list[tuple[str, str]]:
        """The application's traffic as a run row, when it called tools (its model asked
        for them, or it called them on an MCP server) or its provider ran some (its events)."""
        if not watch.exchanges and not watch.tool_runs:
            return []
        from pytest_harness._report import session

        trajectory = watch.trajectory()
        if not trajectory.tool_calls and not trajectory.events:
            return []
        return [session.trajectory_property(trajectory, self.item.nodeid)]

    def _calibration(self, calibration: Any) -> None:
        self.item.user_properties.append(calibration.junit_property(self.item.nodeid))
        if self.harness is not None:
            self.harness.calibrations.append(calibration)

    def keep_verdicts(self, slot: CassetteSlot) -> None:
        """Recording: the cassette keeps the test's verdicts, for the next re-recording."""
        if slot.mode != "none" and self.tribunals:
            from pytest_harness import _drift as drift

            kept = drift.entries(self.tribunals)
            slot.metadata[drift.METADATA_KEY] = {self.item.nodeid: kept}

    def report_drift(self, slot: CassetteSlot) -> list[dict[str, Any]]:
        """After a recording that replaced another: the verdicts that flipped (report rows,
        also returned).

        Raises:
            CassetteError: the replaced file cannot be compared (another format or test).
        """
        previous = slot.previous() if self.tribunals else None
        if previous is None:
            return []
        from pytest_harness import _drift as drift

        nodeid = self.item.nodeid
        new = slot.metadata[drift.METADATA_KEY][nodeid]
        rows = drift.compare(previous, new, test=nodeid, path=slot.path, shared=slot.shared)
        self.item.user_properties.extend(drift.junit_properties(rows))
        return rows

    def report_changes(
        self,
        slot: CassetteSlot,
        *,
        failed: bool,
        verdicts: list[dict[str, Any]],
        budget: float,
    ) -> None:
        """After a recording: what it changed against the previous one (a report row).

        Raises:
            CassetteError: a cassette that cannot be read.
        """
        recordings = slot.recordings()
        if recordings is None:
            return
        from pytest_harness import _changes as changes

        before, now = recordings
        old = None if before is None else changes.read(before)
        record = changes.compare(
            old,
            changes.read(now),
            test=self.item.nodeid,
            cassette=_shown(slot.path),
            outcome={"old": "passed", "new": "failed" if failed else "passed"},
            verdicts=verdicts,
            budget=None if slot.mode == "new" else budget,  # the file only gains recordings
        )
        self.item.user_properties.append(changes.junit_property(record))

    def report_replay(self, slot: CassetteSlot, *, strict: bool) -> str | None:
        """After a replay: what it played, left unused and ran live (a report row); returns
        why the test fails under strict replay (a recording left unused), or None."""
        played = slot.played()
        if played is None:
            return None
        from pytest_harness._cassettes import replayed

        row = replayed.record(
            self.item.nodeid,
            _shown(slot.path),
            played,
            slot.live,
            strict=strict,
            shared=slot.shared,
        )
        self.item.user_properties.append(replayed.junit_property(row))
        return replayed.unused_problem(row, slot.rerecord_command())


def _shown(path: Path) -> str:
    """A cassette's path as a report shows it: relative to the working folder when inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
