"""Tribunal: a panel of judge agents run concurrently over one input, and their verdict.

A subclass declares its judges and settings as class attributes, and its rule, ``process``
function and hooks with the decorators ``rule``, ``process`` and ``hook``. A decorator only
marks the function; ``Tribunal.__init_subclass__`` collects the marks into the class's own
``Declarations``, a copy of its parent's, so a subclass never changes its parent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar

from pytest_harness import _aio
from pytest_harness._agent import Agent, AgentResult, totals
from pytest_harness._local.route import LOCAL_MODEL
from pytest_harness._model import seam as model
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import ConfigError
from pytest_harness.tribunal import _panel as panel
from pytest_harness.tribunal._panel import (
    DEFAULT_TIMEOUT,
    LOCAL_TIMEOUT,
    Evaluator,
    Hook,
    Process,
    Strategy,
    Verdict,
)

VALID_HOOKS = (
    "before_call",
    "before_agent",
    "after_agent",
    "agent_error",
    "after_call",
    "before_verdict",
    "after_verdict",
)
VALID_STREAMS = ("token", "agent", "tribunal")
_MARK = "__harness_tribunal__"  # the attribute a decorator sets on the function it marks
F = TypeVar("F", bound=Callable[..., Any])


class ClassDefault(enum.Enum):
    """The default of a setting for which None means something (no limit): the class's."""

    CLASS_DEFAULT = "the class's value"


CLASS_DEFAULT = ClassDefault.CLASS_DEFAULT


def rule(
    strategy: str | Strategy, *args: Any, may_fail: int | ClassDefault | None = CLASS_DEFAULT
) -> Callable[[F], F]:
    """Mark the function that reads one judge's vote, and the rule that counts the votes.

    Used in a Tribunal class body; the decorated function gets one judge's ``AgentResult``
    and returns its vote:

        class ReplyQuality(Tribunal):
            agents = [Politeness, Accuracy, Helpfulness]

            @rule("majority", may_fail=1)
            def passed(result):
                return result.processed["pass"] is True

    Without a rule the votes are read from the judge's reply (its ``verdict``, ``pass``,
    ``passed``, ``result`` or ``score`` field) and must be unanimous; a class attribute
    ``strategy = "majority"`` changes only the rule.

    Args:
        strategy: the rule, by name, with its argument in ``args``:

            - ``"unanimous"``: every vote passes (and there is at least one);
            - ``"majority"``: more than half of the votes pass;
            - ``"at_least", k``: at least ``k`` votes pass;
            - ``"fraction", min``: a share of at least ``min`` (0 < min <= 1) passes;
            - ``"mean", min``: the votes are scores whose mean is at least ``min``.

            A vote passes when it is truthy (text: ``"true"``, ``"yes"``, ``"pass"``...).
        *args: the rule's argument (``k`` or ``min``).
        may_fail: judge errors tolerated before ``AllAgentsFailed`` (None: any number, as
            long as one judge answers); by default the class's ``may_fail``.

    Raises:
        ConfigError: an unknown rule (the message lists the valid ones), a wrong argument,
            or a ``may_fail`` that is not None or a whole number >= 0.
    """
    built = panel.strategy(strategy, *args)
    if may_fail is not CLASS_DEFAULT:
        check_may_fail(may_fail)

    def mark(evaluate: F) -> F:
        return _mark(evaluate, ("rule", built, may_fail))

    return mark


def hook(event: str) -> Callable[[F], F]:
    """Mark a function to be called at ``event`` of every run of the Tribunal class.

    Used in a Tribunal class body (for one instance only: ``tribunal.on(event, fn)``). A
    coroutine function is awaited. The events, in the order they happen, and what the hook
    gets:

    - ``before_call()``: before the first judge starts;
    - ``before_agent(agent, index)``: before each judge starts (the judge, built with the
      tribunal's input; its place in ``agents``);
    - ``after_agent(result, index)``: for each judge that answered, its ``AgentResult``;
    - ``agent_error(name, error, index)``: for each judge that failed or timed out;
    - ``after_call(results, errors)``: once every judge is done (``errors``: one
      ``{"agent": name, "error": exception}`` per failed judge);
    - ``before_verdict(results)``: may return the results the verdict is computed from
      instead (None keeps them);
    - ``after_verdict(verdict)``: with the ``Verdict``.

    ``after_agent`` and ``agent_error`` follow the panel's order, once every judge is done:

        class Logged(Tribunal):
            @hook("agent_error")
            def log(name, error, index):
                print(f"judge {name} failed: {error}")

    Raises:
        ConfigError: an unknown event; the message lists the seven.
    """
    check_hook(event)

    def mark(fn: F) -> F:
        return _mark(fn, ("hook", event))

    return mark


def process(fn: F) -> F:
    """Mark the function that computes the verdict from every judge's result.

    Used in a Tribunal class body (for one instance only: ``Tribunal(..., process=fn)``). It
    gets the list of ``AgentResult`` (after ``before_verdict``) and returns the verdict's
    value, which passes when truthy. It takes priority over the ``rule``, whose votes are
    still shown:

        class Count(Tribunal):
            @process
            def two_of_three(results):
                return sum(r.processed["pass"] for r in results) >= 2
    """
    return _mark(fn, ("process",))


def _mark(fn: F, declaration: tuple[Any, ...]) -> F:
    setattr(fn, _MARK, [*getattr(fn, _MARK, ()), declaration])
    return fn


@dataclass
class Declarations:
    """A tribunal class's rule, ``process`` function and hooks (copied by subclasses)."""

    hooks: dict[str, list[Hook]] = field(default_factory=dict)
    process: Process | None = None
    strategy: Strategy | None = None
    evaluate: Evaluator | None = None
    may_fail: int | None = None

    def copy(self) -> Declarations:
        hooks = {event: list(fns) for event, fns in self.hooks.items()}
        return Declarations(hooks, self.process, self.strategy, self.evaluate, self.may_fail)

    def collect(self, fn: Any) -> bool:
        """Add the declarations marked on ``fn``; whether it had any."""
        marks = getattr(fn, _MARK, ()) if callable(fn) else ()
        for kind, *args in marks:
            if kind == "hook":
                self.hooks.setdefault(args[0], []).append(fn)
            elif kind == "process":
                self.process = fn
            else:
                self.strategy, self.evaluate = args[0], fn
                if args[1] is not CLASS_DEFAULT:
                    self.may_fail = args[1]
        return bool(marks)


def check_hook(event: str) -> str:
    """``event`` if it names a hook, else ``ConfigError`` listing the valid ones."""
    if event not in VALID_HOOKS:
        valid = ", ".join(VALID_HOOKS)
        raise ConfigError(f"unknown Tribunal hook {event!r}. Valid hooks: {valid}")
    return event


def check_may_fail(may_fail: Any) -> None:
    """``ConfigError`` unless ``may_fail`` is None or a whole number >= 0."""
    if may_fail is not None and (
        isinstance(may_fail, bool) or not isinstance(may_fail, int) or may_fail < 0
    ):
        raise ConfigError(f"may_fail expects None or a whole number >= 0, got {may_fail!r}")


def check_streams(streams: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The streams as a dict, or ``ConfigError`` naming unknown ones and the valid ones."""
    unknown = sorted(set(streams) - set(VALID_STREAMS))
    if unknown:
        raise ConfigError(
            f"unknown Tribunal stream(s) {', '.join(unknown)}. Valid streams: "
            + ", ".join(VALID_STREAMS)
        )
    return dict(streams)


def _respelled(old: str) -> str:
    """The error message for an old spelling (``Tribunal.before``...): the new one."""
    from pytest_harness import _migration

    return _migration.respelled(old)


def _no_attribute(owner: str, name: str, plain: str) -> AttributeError:
    """A missing attribute's error: the new spelling of a removed one (``before``,
    ``after``, ``callback``, ``process``), else Python's own message (``plain``)."""
    removed = name in ("before", "after", "callback", "process")
    return AttributeError(_respelled(f"{owner}.{name}") if removed else plain, name=name)


def _refuse(old: str) -> Callable[..., NoReturn]:
    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(_respelled(old))

    return refused


class _TribunalType(type):
    """Tribunal's metaclass, there only to name the new spelling of an old class-level one.

    ``Tribunal.before/after/callback/process`` are gone (``__getattr__`` answers); ``on`` and
    ``verdict`` are an instance's method and result now, so calling them on the class (as in
    ``@Tribunal.verdict("majority")``) is refused here: a metaclass's property comes before
    the class's own attribute when the class is asked, never when an instance is.
    """

    @property
    def on(cls) -> Callable[..., NoReturn]:
        return _refuse("Tribunal.on")

    @property
    def verdict(cls) -> Callable[..., NoReturn]:
        return _refuse("Tribunal.verdict")

    if not TYPE_CHECKING:  # mypy still reports an unknown attribute

        def __getattr__(cls, name: str) -> NoReturn:
            plain = f"type object {cls.__name__!r} has no attribute {name!r}"
            raise _no_attribute("Tribunal", name, plain)


class Tribunal(metaclass=_TribunalType):
    """A panel of judges that run concurrently over one input and reach a ``Verdict``.

    Declare a panel as a subclass: its judges and settings as class attributes, and its
    rule, hooks and ``process`` function with the decorators ``rule``, ``hook`` and
    ``process``. Then run it with ``assert_verdict``, ``get_verdict``, or ``call()``:

        class ReplyQuality(Tribunal):
            agents = [Politeness, Accuracy, Helpfulness]
            timeout = 30

            @rule("majority", may_fail=1)
            def passed(result):
                return result.processed["pass"] is True

            @hook("agent_error")
            def log(name, error, index):
                print(name, error)

        verdict = ReplyQuality(input=reply).call().verdict

    A subclass starts from its parent's declarations and adds its own; the parent is never
    changed. ``Tribunal(...)`` itself, with ``agents=[...]``, is a panel too.

    Attributes:
        agents: class attribute: the judges (Agent or Tribunal classes, built with the
            tribunal's input, or instances, run as they are).
        timeout: class attribute: seconds the whole panel may take (None: no limit);
            ``DEFAULT_TIMEOUT``, 7 s, unless a class sets one (``LOCAL_TIMEOUT``, 180 s,
            when that default meets a judge on the embedded model).
        may_fail: judge errors tolerated before ``AllAgentsFailed`` (None: any number, as long
            as one judge answers); a class attribute, or ``rule(..., may_fail=...)``.
        strategy: class attribute: the rule by name (``"majority"``), votes read from the
            judges' replies; ``rule`` sets it with its own vote reader.
        input: what the judges judge.
        context: extra facts given to every judge.
        params: litellm parameters given to every judge.
        memory: earlier messages given to every judge.
        streams: the callbacks given as ``streams``.
        results: each judge's ``AgentResult`` of the last run, in panel order (judges that
            failed are not in it).
        errors: ``{"agent": name, "error": exception}`` for each judge of the last run that
            failed or timed out.
        agent_execution_times: ``{"agent": name, "time": seconds}`` for each judge.
        execution_time: wall seconds of the last run (None before ``call()``).
        verdict: the last run's ``Verdict``; None before ``call()``, or when the run failed.
    """

    agents: Sequence[Any] = ()
    timeout: float | None = DEFAULT_TIMEOUT
    may_fail: int | None = None
    strategy: str | Strategy | None = None
    _declarations: ClassVar[Declarations] = Declarations()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls._declarations.copy()  # the parent's, copied
        own = vars(cls)
        if own.get("strategy") is not None:
            declared.strategy = panel.strategy(own["strategy"])
        if "may_fail" in own:
            check_may_fail(own["may_fail"])
            declared.may_fail = own["may_fail"]
        for name, value in list(own.items()):
            if declared.collect(value):
                _keep_as_function(cls, name, value)
        cls.may_fail = declared.may_fail  # what @rule(..., may_fail=...) chose, if it did
        cls._declarations = declared

    def __init__(
        self,
        input: Any = None,
        context: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        memory: Any = None,
        *,
        agents: Sequence[Any] | None = None,
        timeout: float | ClassDefault | None = CLASS_DEFAULT,
        may_fail: int | ClassDefault | None = CLASS_DEFAULT,
        strategy: str | Strategy | None = None,
        evaluate: Evaluator | None = None,
        process: Process | None = None,
        streams: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        """A panel over ``input``; a keyword given here holds for this instance only.

        Args:
            input: what the judges judge.
            context: extra facts given to every judge.
            params: litellm parameters given to every judge (``temperature``, ...).
            memory: earlier messages (or notes) given to every judge.
            agents: the judges; by default the class's.
            timeout: seconds the whole panel may take (None: no limit); by default the
                class's.
            may_fail: judge errors tolerated before ``AllAgentsFailed`` (None: any number, as
                long as one judge answers); by default the class's.
            strategy: the rule by name or as a ``Strategy`` (see ``rule``); by default the
                class's.
            evaluate: the function reading one judge's vote; by default the class's.
            process: the function computing the verdict from all results (see
                ``process``); by default the class's.
            streams: ``{"token": fn(agent, delta), "agent": fn(event), "tribunal":
                fn(event)}``, the events being ``TribunalEvent``s.

        Raises:
            ConfigError: an unknown strategy or stream, or a bad ``may_fail``.
        """
        declared = type(self)._declarations
        self.input = input
        self.context = dict(context or {})
        self.params = params
        self.memory = memory
        self.agents = list(agents if agents is not None else type(self).agents)
        self.timeout = type(self).timeout if timeout is CLASS_DEFAULT else timeout
        self._timeout_chosen = timeout is not CLASS_DEFAULT or any(
            "timeout" in vars(cls) for cls in type(self).__mro__ if cls is not Tribunal
        )
        self.may_fail = declared.may_fail if may_fail is CLASS_DEFAULT else may_fail
        check_may_fail(self.may_fail)
        self._hooks = {event: list(fns) for event, fns in declared.hooks.items()}
        self._strategy = panel.strategy(strategy) if strategy is not None else declared.strategy
        self._evaluate = evaluate or declared.evaluate
        self._process = process or declared.process
        self.streams = check_streams(streams or {})
        self._outcome = panel.Outcome()

    def on(self, event: str, fn: Hook | None = None) -> Any:
        """Add a hook for ``event`` to this instance only, after the class's hooks.

        ``tribunal.on("after_agent", fn)`` returns the tribunal (so calls chain);
        ``@tribunal.on("after_agent")`` decorates ``fn`` and returns it. The events and their
        arguments are listed under ``hook``.

        Raises:
            ConfigError: an unknown event; the message lists the seven.
        """
        check_hook(event)
        if fn is not None:
            self._hooks.setdefault(event, []).append(fn)
            return self

        def add(fn: F) -> F:
            self._hooks.setdefault(event, []).append(fn)
            return fn

        return add

    if not TYPE_CHECKING:  # mypy still reports an unknown attribute

        def __getattr__(self, name: str) -> NoReturn:
            plain = f"{type(self).__name__!r} object has no attribute {name!r}"
            raise _no_attribute("tribunal", name, plain)

    # The last run's outcome (``panel.Outcome``), read only.

    @property
    def results(self) -> list[AgentResult]:
        return list(self._outcome.results)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._outcome.errors]

    @property
    def agent_execution_times(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._outcome.agent_execution_times]

    @property
    def execution_time(self) -> float | None:
        return self._outcome.execution_time

    @property
    def verdict(self) -> Verdict | None:
        return self._outcome.verdict

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def token_stream(self) -> Callable[..., Any] | None:
        return self.streams.get("token")

    @property
    def agent_event_stream(self) -> Callable[..., Any] | None:
        return self.streams.get("agent")

    @property
    def tribunal_event_stream(self) -> Callable[..., Any] | None:
        return self.streams.get("tribunal")

    def call(self) -> Tribunal:
        """Run every judge concurrently, then compute the verdict; return self.

        Raises:
            AllAgentsFailed: every judge failed, or more than ``may_fail`` did (``errors``
                and ``results`` say which).
        """
        return _aio.run_sync(self.acall())

    async def acall(self) -> Tribunal:
        """Async ``call``: the judges run as tasks on the running loop, on the judge model
        when one is set (``--harness-judge-model``), whatever the model override."""
        self._outcome = panel.Outcome()  # a run that fails leaves nothing of the last one
        with scope.judging():
            plan = self._plan()
            try:
                self._outcome = await panel.run_judges(plan)
                self._outcome = await panel.reach_verdict(plan, self._outcome)
            except BaseException as error:
                panel.announce_failure(plan, error)
                scope.emit("tribunal", TribunalDone(self, error))
                raise
            scope.emit("tribunal", TribunalDone(self, None))
        return self

    def _plan(self) -> panel.Plan:
        if not self.agents:
            raise ConfigError(
                f"{self.name} has no judges: declare `agents = [...]` on the class or pass "
                "agents=[...]"
            )
        judges = tuple(self._judge(spec) for spec in self.agents)
        return panel.Plan(
            name=self.name,
            judges=judges,
            hooks={event: tuple(hooks) for event, hooks in self._hooks.items()},
            strategy=self._strategy,
            evaluate=self._evaluate,
            process=self._process,
            timeout=self._timeout(judges),
            may_fail=self.may_fail,
            streams=dict(self.streams),
        )

    def _timeout(self, judges: Sequence[Any]) -> float | None:
        """The panel's timeout: the default grows to ``LOCAL_TIMEOUT`` for the embedded model."""
        if self._timeout_chosen or self.timeout is None:
            return self.timeout
        local = any(model.resolve(getattr(j, "model", None)) == LOCAL_MODEL for j in judges)
        return max(self.timeout, LOCAL_TIMEOUT) if local else self.timeout

    def _judge(self, spec: Any) -> Any:
        """A judge to run: a class built with this panel's input, or an instance as given."""
        if isinstance(spec, type) and issubclass(spec, (Agent, Tribunal)):
            return spec(
                input=self.input, context=self.context, params=self.params, memory=self.memory
            )
        if isinstance(spec, (Agent, Tribunal)) or hasattr(spec, "acall") or hasattr(spec, "call"):
            return spec
        raise ConfigError(
            f"{self.name}: a judge must be an Agent or Tribunal class or instance (or have "
            f"call()/acall()), got {spec!r} (type={type(spec).__name__})"
        )

    def result(self) -> AgentResult:
        """The verdict as an AgentResult (``processed == {"verdict": value}``), so tribunals
        nest: a tribunal is a judge of another."""
        verdict = self.verdict
        usage, cost = totals(self.results)
        return AgentResult(
            input=self.input,
            output=None,
            processed={"verdict": verdict.value if verdict is not None else None},
            execution_time=self.execution_time,
            agent=self.name,
            usage=usage,
            cost=cost,
        )

    def __repr__(self) -> str:
        verdict = self.verdict
        state = "not run" if verdict is None else ("passed" if verdict else "failed")
        return f"<{self.name} {len(self.agents)} judges, {state}>"


def _keep_as_function(cls: type[Tribunal], name: str, fn: Any) -> None:
    """A marked function stays callable as ``Cls.fn(...)`` (a staticmethod); one named like
    Tribunal's own attributes (``verdict``, ``call``) would hide them, so it is refused."""
    if hasattr(Tribunal, name):
        raise ConfigError(
            f"{cls.__name__}.{name}: a function marked with rule, hook or process cannot be "
            f"named {name!r}, the name of Tribunal.{name}; rename it (for example "
            f"{name}_of or passed)"
        )
    setattr(cls, name, staticmethod(fn))


@dataclass(frozen=True, slots=True)
class TribunalDone:
    """What a run reports to the scope's listeners (topic ``"tribunal"``) when it ends.

    Attributes:
        tribunal: the Tribunal that ran; its ``verdict`` is None without a verdict.
        error: what the run raised (``AllAgentsFailed``, a cassette miss, ...), or None.
    """

    tribunal: Tribunal
    error: BaseException | None
