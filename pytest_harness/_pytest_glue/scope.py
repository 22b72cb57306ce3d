"""What is in force for model calls right now (the current test's scope), and the one event
path from the core to the pytest layer (``emit``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    from pytest_harness._model.response import ModelResponse
    from pytest_harness._pytest_glue.settings import DegenerateMode

TOPICS = ("response", "tribunal", "run", "transcript", "calibration")
Listener: TypeAlias = Callable[[Any], None]
Listeners: TypeAlias = Mapping[str, tuple[Listener, ...]]


def everything(listener: Callable[[str, Any], None]) -> Listeners:
    """Listeners that call ``listener(topic, payload)`` for every topic."""
    return {topic: (functools.partial(listener, topic),) for topic in TOPICS}


@dataclass(frozen=True, slots=True)
class Judged:
    """What the test's traffic check found in the HTTP reply to one seam call.

    Attributes:
        problem: the reply's defect (a ``ResponseValidator`` reason), or None.
        latency_s: the exchange's latency (as recorded, in replay), or None when unknown.
    """

    problem: str | None
    latency_s: float | None = None


class CallHook(Protocol):
    """Call-time behaviour around the model seam (the embedded-model route, the cassette).

    ``prepare`` may change the litellm keyword arguments of a call before it is made;
    ``receive`` may change the response it got (given the keyword arguments as sent);
    ``judged`` tells what the hook's traffic check found in the call's reply, or None when
    it saw none (the seam then checks the response itself);
    ``translate`` may replace an exception the call raised by a clearer one (or return None);
    ``replay`` (optional: a hook without it never answers) may answer the call without
    sending it (a cassette's recorded reply, when ``read`` can read it as the provider's
    library would), or return None: the call is sent;
    ``recall(fact, model, ask)`` (optional, not declared here: a hook without it keeps
    nothing) answers what litellm knows of a model as the hook's recording kept it, else
    ``ask(model)`` (``_model.seam.recalled``);
    ``failed(kwargs, error, seconds)`` (optional, not declared here) is told a call that
    raised ``error`` (or was cancelled: ``asyncio.CancelledError``) after ``seconds``.
    A hook may leave itself a note in the keyword arguments under a key that starts with
    ``NOTE_PREFIX``: the seam never sends those to the provider.
    """

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def receive(self, kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse: ...

    def judged(self, kwargs: Mapping[str, Any]) -> Judged | None: ...

    def translate(self, error: BaseException) -> BaseException | None: ...

    def replay(self, kwargs: Mapping[str, Any], read: Callable[..., Any]) -> Any: ...


NOTE_PREFIX = "_harness_"  # a call hook's note to itself in a call's kwargs, never sent


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What governs model calls in the current test (or outside any test).

    Attributes:
        degenerate: what to do with an invalid or degenerate response.
        model: when set, replaces the model every call asks for.
        judge_model: when set, the model of every judge a tribunal runs (and of a
            ready-made judge asked directly), whatever ``model`` says.
        retries: when set, the provider SDK's retry count (0 in replay: a miss must not hide
            behind retries).
        timeout: per-call HTTP timeout in seconds, unless the call passes its own.
        replay: whether model calls are answered from cassettes only (no recording): what
            a retry would ask again is what was recorded, so retrying is pointless.
        test_id: the pytest node id of the running test, for messages.
        listeners: topic -> what ``emit(topic, payload)`` calls with the payload.
        call_hooks: call-time behaviour of every call, applied in order (the cassette).
        routes: call-time behaviour of the calls to one model name, applied before the call
            hooks (``"local"``: the embedded model's route). A call to another model never
            reaches it.
    """

    degenerate: DegenerateMode = "fail"
    model: str | None = None
    judge_model: str | None = None
    retries: int | None = None
    timeout: float | None = None
    replay: bool = False
    test_id: str | None = None
    listeners: Listeners = field(default_factory=dict)
    call_hooks: tuple[CallHook, ...] = ()
    routes: Mapping[str, CallHook] = field(default_factory=dict)

    def hooks_for(self, model: str) -> tuple[CallHook, ...]:
        """The hooks of a call to ``model``: its route, if it has one, then the call hooks."""
        route = self.routes.get(model)
        return self.call_hooks if route is None else (route, *self.call_hooks)


_current = Scope()


def current() -> Scope:
    """The scope in force now."""
    return _current


@contextmanager
def activate(scope: Scope) -> Iterator[Scope]:
    """Make ``scope`` the one in force until the block ends."""
    global _current
    previous, _current = _current, scope
    try:
        yield scope
    finally:
        _current = previous


@contextmanager
def override(**changes: Any) -> Iterator[Scope]:
    """Change some fields of the scope in force until the block ends.

    Example: ``with override(degenerate="off"): complete(...)``.
    """
    with activate(replace(_current, **changes)) as scope:
        yield scope


@contextmanager
def judging() -> Iterator[Scope]:
    """Run judges: the judge model in force (``judge_model``), when set, is the model
    override until the block ends; without one, judges follow ``model`` as any call does."""
    if _current.judge_model is None:
        yield _current
        return
    with override(model=_current.judge_model) as scope:
        yield scope


def emit(topic: str, payload: Any) -> None:
    """Tell the listeners of the scope in force for ``topic`` that it happened."""
    for listener in _current.listeners.get(topic, ()):
        listener(payload)
