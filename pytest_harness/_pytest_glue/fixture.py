"""The ``harness`` fixture's object: run agents and judge with tribunals inside a test."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_harness import _aio
from pytest_harness._agent import Agent, AgentResult
from pytest_harness.errors import CassetteError, ConfigError
from pytest_harness.tribunal import Tribunal, Verdict, assert_verdict, get_verdict

if TYPE_CHECKING:
    from pytest_harness._recorded_tools import Serializer
    from pytest_harness._trajectory import TrafficTrajectory
    from pytest_harness.calibration import Calibration
    from pytest_harness.orchestrator import Orchestrator, Run


class Harness:
    """The ``harness`` fixture: run agents and assert with tribunals inside a test.

    Everything it runs goes through the test's cassette and settings, and every tribunal it
    runs is in the session report.

    Attributes:
        test_id: The test's node id.
        folder: The test module's folder (relative label files are read from there).
        sample: The running sample's number (from 1) in a sampled test, else None.
        tribunals: The tribunals the test ran, as each finished.
        runs: The orchestrator runs of the test, as each ended.
        transcripts: The simulated conversations of the test, as each ended.
        calibrations: The calibrations the test ran, as each finished.
    """

    def __init__(
        self,
        test_id: str | None = None,
        *,
        folder: Path | None = None,
        traffic: Callable[[], TrafficTrajectory] | None = None,
        cassette_dir: Path | None = None,
    ) -> None:
        self.test_id = test_id
        self.folder = folder
        self._traffic = traffic
        self._cassette_dir = cassette_dir or Path("cassettes")  # the session's, in a test
        self.sample: int | None = None
        self.tribunals: list[Tribunal] = []  # filled by the plugin as tribunals finish
        self.runs: list[Run] = []  # filled by the plugin as orchestrator runs end
        self.transcripts: list[Any] = []  # and as simulated conversations end
        self.calibrations: list[Any] = []  # and as calibrations end

    @property
    def trajectory(self) -> TrafficTrajectory:
        """The application's own model traffic in this test so far, as a trajectory.

        Read from the test's cassette, recorded or replayed alike, whatever client or agent
        framework made the calls (the harness's own calls are not in it: their runs are in
        ``runs``): each request (``requests``: model, messages, tools offered, system prompt,
        endpoint, answer), and each tool call the model asked for with the result the
        application sent back. It has the assertions of an orchestrator ``Run``:

            harness.trajectory.assert_called("lookup", {"order": "A-1"})
            harness.trajectory.filter(system="triage").assert_order("lookup", "refund")

        Built anew on each access.
        """
        if self._traffic is not None:
            return self._traffic()
        from pytest_harness._trajectory import TrafficTrajectory

        return TrafficTrajectory()

    def recorded_trajectory(self, cassette: str | Path) -> TrafficTrajectory:
        """The trajectory a recorded cassette holds: a reference to hold a test's against.

        Every model request and MCP tool call of the recording counts, in file order: the
        application's and the harness's own alike (an orchestrator's agent loop), so a
        golden recording of either kind is a reference for ``assert_matches``:

            def test_agent_keeps_its_path(harness):
                weather_agent("Weather and time in Paris?")
                golden = harness.recorded_trajectory("golden/weather")
                harness.trajectory.assert_matches(golden, "unordered")

        Args:
            cassette: a cassette's name as ``@pytest.mark.harness(cassette=...)`` takes it
                (relative to ``harness_cassette_dir``, ``.yaml`` optional), or the
                ``pathlib.Path`` of a cassette file.

        Raises:
            CassetteError: there is no such file (record it with ``pytest --harness-live``
                on the test that writes it), or it cannot be read.
        """
        from pytest_harness._cassettes.read import read
        from pytest_harness._cassettes.slot import cassette_path
        from pytest_harness._trajectory import from_interactions

        if isinstance(cassette, Path):
            path = cassette
        else:
            path = cassette_path(self._cassette_dir, self.test_id or "", cassette)
        if not path.is_file():
            writer = "" if isinstance(cassette, Path) else f"(marked cassette={cassette!r}) "
            raise CassetteError(
                f"harness.recorded_trajectory({cassette!r}) found no cassette at {path}. "
                f"Record it: run pytest --harness-live on the test {writer}that writes it."
            )
        return from_interactions(read(path).get("interactions") or [])

    def recorded(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        ignore: Iterable[str] = (),
        serializer: Serializer | None = None,
    ) -> Callable[..., Any]:
        """``function`` (sync or async), its calls recorded in this test's cassette and
        replayed from it: a tool with side effects (a file, a database, an email) runs
        while recording and never in replay.

            append = harness.recorded(append_line)
            assert append("notes.txt", "hello") == 1  # runs once, then replays
            harness.trajectory.assert_called("append_line", {"line": "hello"})

        Recording runs the function and stores its arguments and its result, or the
        exception it raised (its type and message), beside the test's HTTP traffic, redacted
        and scanned for secrets as bodies are. Replay returns the recorded result (raises the
        recorded exception) without calling it; a call whose arguments match no recording
        of the tool (each used once, in the order recorded) is a ``CassetteMiss`` showing
        the closest recorded call and a diff of the arguments. Without a cassette
        (``cassette=False``) the function just runs. The wrapper keeps the function's name,
        docstring and signature, so agent frameworks can make a tool of it.

        Values JSON cannot hold are stored tagged: tuples, dicts with other keys than text,
        Enums, pydantic models (``model_dump(mode="json")``, rebuilt by ``model_validate``)
        and dataclasses (rebuilt by their class), defined at module level; any other is
        refused while recording with an ``UnrecordableTraffic`` naming the fixes.

        Args:
            function: the function or callable to record (a bound method too).
            name: its name in the cassette and the trajectory; default its
                ``__qualname__`` without the function it was defined in.
            ignore: argument names left out of the recording and of matching (a client,
                a connection).
            serializer: an object with ``dump(value) -> JSON`` and ``load(JSON) -> value``,
                for values the built-in encoding does not store (used before it).
        """
        from pytest_harness._recorded_tools import recorded

        return recorded(function, name=name, ignore=ignore, serializer=serializer)

    def orchestrator(self, model: str, tools: Any = (), **options: Any) -> Orchestrator:
        """An ``Orchestrator`` (same arguments) for this test: its requests go through the
        test's cassette, and each of its runs is in ``runs`` and the session report."""
        from pytest_harness.orchestrator import Orchestrator

        return Orchestrator(model, tools, **options)

    def ask(
        self,
        agent: type[Agent] | Agent,
        input: Any = None,
        *,
        context: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        memory: Any = None,
    ) -> AgentResult:
        """Call an agent (a class is created with the arguments) and return its AgentResult."""
        return _aio.run_sync(self.aask(agent, input, context=context, params=params, memory=memory))

    async def aask(
        self, agent: type[Agent] | Agent, input: Any = None, **kwargs: Any
    ) -> AgentResult:
        """Async ``ask``: same arguments, same AgentResult."""
        if isinstance(agent, type) and issubclass(agent, Agent):
            agent = agent(input=input, **kwargs)
        if not isinstance(agent, Agent):
            raise ConfigError(f"harness.ask expects an Agent class or instance, got {agent!r}")
        return await agent.acall()

    def assert_verdict(
        self, tribunal: type[Tribunal] | Tribunal, input: Any = None, **kwargs: Any
    ) -> Verdict:
        """``assert_verdict`` (see there) for this test."""
        __tracebackhide__ = True
        return assert_verdict(tribunal, input, **kwargs)

    def get_verdict(
        self, tribunal: type[Tribunal] | Tribunal, input: Any = None, **kwargs: Any
    ) -> Verdict:
        """``get_verdict`` (see there) for this test: the Verdict, passing or not."""
        return get_verdict(tribunal, input, **kwargs)

    if not TYPE_CHECKING:  # mypy still reports an unknown attribute

        def __getattr__(self, name: str) -> NoReturn:
            if name == "verdict":  # the name of a Tribunal's result only
                from pytest_harness import _migration

                raise AttributeError(_migration.respelled("harness.verdict"), name=name)
            raise AttributeError(f"'Harness' object has no attribute {name!r}", name=name)

    def calibrate(self, tribunal: type[Tribunal], labelled: Any, **options: Any) -> Calibration:
        """``calibration.calibrate`` (same options) for this test: a relative labels path is
        read from the test module's folder, and the calibration is in the report."""
        from pytest_harness.calibration import calibrate

        options.setdefault("base", self.folder)
        return calibrate(tribunal, labelled, **options)

    def assert_calibrated(
        self, tribunal: type[Tribunal], labelled: Any, **options: Any
    ) -> Calibration:
        """``calibration.assert_calibrated`` (same options) for this test: fails unless the
        panel reaches ``min_accuracy`` / ``min_kappa`` and no probe flags a judge."""
        __tracebackhide__ = True
        from pytest_harness.calibration import assert_calibrated

        options.setdefault("base", self.folder)
        return assert_calibrated(tribunal, labelled, **options)
