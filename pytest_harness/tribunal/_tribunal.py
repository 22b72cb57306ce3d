"""Tribunal: a panel of judge agents run concurrently over one input, and their verdict.

A tribunal class's declarations (hooks, verdict rule, ``process``) are checked here.
``Declarations`` is plain data: each ``Tribunal`` subclass holds its own copy, filled from
its parent's and from the decorators in its class body. A decorator used in a class body
cannot reach the class (it does not exist yet), so it ``mark``s the function and the class
``apply``s the marks when it is created.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MethodType
from typing import Any, ClassVar

from pytest_harness import _aio
from pytest_harness import _model as model
from pytest_harness import _scope as scope
from pytest_harness._agent import Agent, AgentResult, totals
from pytest_harness._local.route import LOCAL_MODEL
from pytest_harness.errors import ConfigError
from pytest_harness.tribunal import _panel as panel
from pytest_harness.tribunal._panel import (
    DEFAULT_TIMEOUT,
    LOCAL_TIMEOUT,
    Evaluator,
    Hook,
    Strategy,
    Verdict,
    strategy,
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
UNSET: Any = object()  # "not given": None is a meaningful timeout / may_fail
_MARK = "__harness_tribunal__"


@dataclass
class Declarations:
    """A tribunal class's own declarations (copied, never shared, by subclasses)."""

    hooks: dict[str, list[Hook]] = field(default_factory=dict)
    process: Callable[[list[Any]], Any] | None = None
    strategy: Strategy | None = None
    evaluate: Evaluator | None = None
    may_fail: int | None = None

    def copy(self) -> Declarations:
        hooks = {event: list(fns) for event, fns in self.hooks.items()}
        return Declarations(hooks, self.process, self.strategy, self.evaluate, self.may_fail)

    def apply(self, fn: Any) -> bool:
        """Apply the declarations marked on ``fn`` in a class body; whether it had any."""
        declarations = getattr(fn, _MARK, ())
        for kind, *args in declarations:
            if kind == "hook":
                self.hooks.setdefault(args[0], []).append(fn)
            elif kind == "process":
                self.process = fn
            else:
                self.strategy, self.evaluate = args[0], fn
                if args[1] is not UNSET:
                    self.may_fail = args[1]
        return bool(declarations)


def in_class_body(depth: int) -> bool:
    """Whether the frame ``depth`` calls above the caller is a class body being executed."""
    names = sys._getframe(depth + 1).f_locals
    return "__module__" in names and "__qualname__" in names


def mark(fn: Hook, *declaration: Any) -> Hook:
    """Remember a declaration on ``fn``, for the class being defined to apply."""
    setattr(fn, _MARK, [*getattr(fn, _MARK, ()), declaration])
    return fn


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


class _ClassOrInstance:
    """A method that works on the class (declaration) and on an instance (this run only)."""

    def __init__(self, on_class: Callable[..., Any], on_instance: Callable[..., Any]) -> None:
        self._on_class, self._on_instance = on_class, on_instance

    def __get__(self, obj: Any, owner: type) -> Any:
        return (
            MethodType(self._on_class, owner) if obj is None else MethodType(self._on_instance, obj)
        )


class _VerdictAttribute:
    """``Tribunal.verdict(...)`` declares the rule; ``tribunal.verdict`` is the outcome."""

    def __get__(self, obj: Any, owner: type) -> Any:
        return MethodType(_declare_verdict, owner) if obj is None else obj._verdict

    def __set__(self, obj: Any, value: Any) -> None:
        obj._verdict = value


def _class_on(cls: type[Tribunal], event: str, fn: Hook | None = None, _depth: int = 1) -> Any:
    check_hook(event)
    if fn is not None:
        cls._declarations.hooks.setdefault(event, []).append(fn)
        return fn
    if in_class_body(_depth):  # the user's frame, _depth calls up: a class body?
        return lambda hook: mark(hook, "hook", event)
    return lambda hook: _class_on(cls, event, hook)


def _instance_on(self: Tribunal, event: str, fn: Hook | None = None) -> Any:
    check_hook(event)
    if fn is None:

        def register(hook: Hook) -> Hook:
            self._hooks.setdefault(event, []).append(hook)
            return hook

        return register
    self._hooks.setdefault(event, []).append(fn)
    return self


def _class_process(cls: type[Tribunal], fn: Callable[[list[Any]], Any]) -> Any:
    if in_class_body(1):
        return mark(fn, "process")
    cls._declarations.process = fn
    return fn


def _instance_process(self: Tribunal, fn: Callable[[list[Any]], Any]) -> Tribunal:
    self._process = fn
    return self


def _declare_verdict(
    cls: type[Tribunal], rule: str | Strategy, *args: Any, may_fail: Any = UNSET
) -> Callable[[Evaluator], Evaluator]:
    """Declare the verdict rule and its per-judge evaluator (a decorator)."""
    built = strategy(rule, *args)
    if may_fail is not UNSET:  # not given: keep the class's may_fail
        check_may_fail(may_fail)
    body = in_class_body(1)

    def declare(evaluate: Evaluator) -> Evaluator:
        if body:
            return mark(evaluate, "verdict", built, may_fail)
        cls._declarations.strategy, cls._declarations.evaluate = built, evaluate
        if may_fail is not UNSET:
            cls._declarations.may_fail = may_fail
        return evaluate

    return declare


def _alias(prefix: str) -> _ClassOrInstance:
    def on_class(cls: type[Tribunal], event: str, fn: Hook | None = None) -> Any:
        return _class_on(cls, prefix + event, fn, _depth=2)

    def on_instance(self: Tribunal, event: str, fn: Hook | None = None) -> Any:
        return _instance_on(self, prefix + event, fn)

    return _ClassOrInstance(on_class, on_instance)


class Tribunal:
    """A panel of judges over one input. See the module docstring for the whole API.

    Args:
        input: what the judges judge.
        context: extra facts given to every judge.
        params: litellm parameters given to every judge (``temperature``, ...).
        memory: earlier messages (or notes) given to every judge.
        agents: the judges (Agent or Tribunal classes or instances); default: the class's.
        timeout: seconds the whole panel may take (None: no limit); default: the class's
            (``DEFAULT_TIMEOUT``, 7 s, unless a class sets one; ``LOCAL_TIMEOUT``, 180 s,
            when that default meets a judge on the embedded model).
        streams: ``{"token": fn(agent, delta), "agent": fn(event), "tribunal": fn(event)}``.
        may_fail: judge errors tolerated before ``AllAgentsFailed``; default: the class's.
        strategy / evaluate: the verdict rule for this instance (default: the class's).
    """

    agents: Sequence[Any] = ()
    timeout: float | None = DEFAULT_TIMEOUT
    may_fail: int | None = None
    strategy: str | Strategy | None = None
    _declarations: ClassVar[Declarations] = Declarations()

    on = _ClassOrInstance(_class_on, _instance_on)
    before = _alias("before_")
    after = _alias("after_")
    callback = _alias("")
    process = _ClassOrInstance(_class_process, _instance_process)
    verdict = _VerdictAttribute()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parent = next(base for base in cls.__mro__[1:] if issubclass(base, Tribunal))
        config = parent._declarations.copy()
        own = cls.__dict__
        if "strategy" in own and own["strategy"] is not None:
            config.strategy = strategy(own["strategy"])
        if "may_fail" in own:
            check_may_fail(own["may_fail"])
            config.may_fail = own["may_fail"]
        for name, value in list(own.items()):
            if config.apply(value):
                if hasattr(Tribunal, name):  # `def verdict(result)` must not hide the API
                    delattr(cls, name)
                else:
                    setattr(cls, name, staticmethod(value))
        cls._declarations = config

    def __init__(
        self,
        input: Any = None,
        context: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        memory: Any = None,
        *,
        agents: Sequence[Any] | None = None,
        timeout: float | object | None = UNSET,
        streams: Mapping[str, Callable[..., Any]] | None = None,
        may_fail: int | object | None = UNSET,
        strategy: str | Strategy | None = None,
        evaluate: Evaluator | None = None,
    ) -> None:
        config = type(self)._declarations
        self.input = input
        self.context = dict(context or {})
        self.params = params
        self.memory = memory
        self.agents = list(agents if agents is not None else type(self).agents)
        self.timeout: float | None = type(self).timeout if timeout is UNSET else timeout  # type: ignore[assignment]
        self._timeout_chosen = timeout is not UNSET or any(
            "timeout" in vars(cls) for cls in type(self).__mro__ if cls is not Tribunal
        )
        chosen: Any = config.may_fail if may_fail is UNSET else may_fail
        check_may_fail(chosen)
        self.may_fail: int | None = chosen
        self._hooks = {event: list(fns) for event, fns in config.hooks.items()}
        self._process = config.process
        self._strategy = panel.strategy(strategy) if strategy is not None else config.strategy
        self._evaluate = evaluate or config.evaluate
        self.streams = check_streams(streams or {})
        self.results: list[AgentResult] = []
        self.errors: list[dict[str, Any]] = []
        self.agent_execution_times: list[dict[str, Any]] = []
        self.execution_time: float | None = None
        self._verdict: Verdict | None = None

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
            AllAgentsFailed: every judge failed, or more than ``may_fail`` did.
        """
        return _aio.run_sync(self.acall())

    async def acall(self) -> Tribunal:
        """Async ``call``: the judges run as tasks on the running loop, on the judge model
        when one is set (``--harness-judge-model``), whatever the model override."""
        with scope.judging():
            await panel.run(self._plan(), self)
        return self

    def _plan(self) -> panel.Plan:
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
        """The verdict as a AgentResult (``processed == {"verdict": value}``), so tribunals nest."""
        verdict = self._verdict
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
        state = "not run" if self._verdict is None else ("passed" if self._verdict else "failed")
        return f"<{self.name} {len(self.agents)} judges, {state}>"
