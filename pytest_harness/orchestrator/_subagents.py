"""Subagents: a built-in ``delegate`` tool that runs a child orchestrator on a sub-task."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pytest_harness._aio import maybe_await, run_sync
from pytest_harness._model import seam
from pytest_harness._model.response import ModelResponse
from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator._run import Run
from pytest_harness.orchestrator._tools import Tool, tool

Status = Literal["pending", "running", "done", "stopped", "failed"]
NOT_INHERITED = frozenset({"delegate", "question"})  # no grandchildren, no questions to a user


@dataclass(eq=False)
class SubagentEntry:
    """One child of an orchestrator.

    Attributes:
        id: ``sub-1``, ``sub-2``... in the order the parent delegated.
        task: what the parent asked of it.
        session_id: the child's session (its messages and steering notes).
        agent: the child ``Orchestrator``.
        status: ``pending`` (made, not yet run), ``running``, ``done`` (it answered),
            ``stopped`` (a limit or an abort ended it without an answer) or ``failed``.
        run: the child's run once it ended.
        error: why it failed.
    """

    id: str
    task: str
    session_id: str
    agent: Any
    status: Status = "pending"
    run: Run | None = None
    error: str | None = None

    @property
    def model(self) -> str:
        return str(self.agent.model)

    @property
    def params(self) -> Mapping[str, Any]:
        return dict(self.agent.params)

    @property
    def tools(self) -> Sequence[Mapping[str, Any]]:
        return list(self.agent.specs)

    def snapshot(self) -> list[dict[str, Any]]:
        """A copy of the child's messages: what its session saved, else what it holds."""
        store = self.agent.store
        if store is not None and store.exists(self.session_id):
            saved: list[dict[str, Any]] = store.load(self.session_id)
            return saved
        return [dict(message) for message in self.agent.messages]


def steer(entry: SubagentEntry, note: str) -> None:
    """Persist ``note`` in the child's session: the child reads it on its next request.

    Raises:
        ConfigError: the child has no session to hold the note, or its run is over.
    """
    if entry.agent.store is None:
        raise ConfigError(f"subagent {entry.id} has no session store to hold a note.")
    if entry.status not in ("pending", "running"):
        raise ConfigError(
            f"subagent {entry.id} is {entry.status}: a note would never be read. "
            "Delegate a new task instead."
        )
    entry.agent.store.add_note(entry.session_id, str(note))


def delegate_tool(parent: Any) -> Tool:
    """The ``delegate`` tool of ``parent`` (an ``Orchestrator``)."""

    @tool(name="delegate")
    async def delegate(task: str) -> str:
        """Hand a self-contained sub-task to a subagent. It works on it with the same tools
        and returns its answer.

        Args:
            task: the sub-task, with everything the subagent needs to know.
        """
        entry = spawn(parent, task)
        return await finish(entry)

    return delegate


def spawn(parent: Any, task: str) -> SubagentEntry:
    """A child of ``parent`` for ``task``, registered in ``parent.children``."""
    number = len(parent.children) + 1
    session_id = f"{parent.session_id}/sub-{number}"
    tools = [t for name, t in parent.tools.items() if name not in NOT_INHERITED]
    child = type(parent)(
        parent.model,
        tools,
        parent.system_prompt,
        params=parent.params,
        session=session_id,
        store=parent.store,
    )
    entry = SubagentEntry(id=f"sub-{number}", task=task, session_id=session_id, agent=child)
    parent.children.append(entry)
    return entry


async def finish(entry: SubagentEntry) -> str:
    """Run the child's task to its end; its answer is the ``delegate`` tool's result."""
    entry.status = "running"
    try:
        run: Run = await entry.agent.arun(entry.task)
    except Exception as error:
        entry.status, entry.error = "failed", str(error)
        raise
    entry.run = run
    if run.stop_reason == "done":
        entry.status = "done"
        return run.output
    entry.status = "stopped"
    return f"The subagent stopped ({run.stop_reason}) before it answered." + (
        f" Its last text: {run.output}" if run.output else ""
    )


PREAMBLE = (
    "You are the subagent above. Answer the following question from "
    "your current context ONLY — do not take any action or continue "
    "your task; this is a read-only check. Be brief."
)

Chat = Callable[[list[dict[str, Any]]], Any]  # messages -> a response (or its text)
ModelFactory = Callable[[str], Chat]


class Entry(Protocol):
    """What a probe reads of a subagent (``SubagentEntry`` has it)."""

    @property
    def session_id(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...

    @property
    def tools(self) -> Sequence[Mapping[str, Any]]: ...

    def snapshot(self) -> list[dict[str, Any]]: ...


class SubagentProbe:
    """Peeks into subagents.

    Args:
        model_factory: a test seam: called with the child's model name, it
            returns a chat callable (``messages -> response``; a ``ModelResponse``, anything
            with ``content``, or text; may be async). Default: one call through the model
            seam on the child's own model and parameters, so cassettes and the response
            check apply.
        message_store: where to read the child's messages (a ``SessionStore``); default
            the entry's own snapshot (its session, else its conversation in memory).
    """

    def __init__(
        self, model_factory: ModelFactory | None = None, message_store: Any = None
    ) -> None:
        self.model_factory = model_factory
        self.message_store = message_store

    def peek(self, entry: Entry, question: str) -> str:
        """The child's answer to ``question`` from its context so far; never raises."""
        return run_sync(self.apeek(entry, question))

    async def apeek(self, entry: Entry, question: str) -> str:
        """Async ``peek``: same answer."""
        try:
            messages = [
                {"role": "user", "content": PREAMBLE},
                *self._snapshot(entry),
                {"role": "user", "content": str(question)},
            ]
            response = await maybe_await(self._chat(entry)(messages))
            text = _text(response).strip()
        except Exception as error:  # a probe must never break the parent
            return f"(probe failed: {error})"
        return text or "(no answer)"

    def _snapshot(self, entry: Entry) -> list[dict[str, Any]]:
        if self.message_store is not None:
            messages: list[dict[str, Any]] = self.message_store.load(entry.session_id)
        else:
            messages = entry.snapshot()
        if not messages:
            raise ValueError("the subagent has no messages yet (it has not started)")
        return [dict(m) for m in messages]

    def _chat(self, entry: Entry) -> Chat:
        if self.model_factory is not None:
            return self.model_factory(entry.model)

        async def chat(messages: list[dict[str, Any]]) -> ModelResponse:
            # The child's tools are described (its history holds their calls) but may not be
            # called: the probe asks for an answer only.
            return await seam.acomplete(
                messages,
                model=entry.model,
                tools=list(entry.tools) or None,
                **({**entry.params, "tool_choice": "none"} if entry.tools else entry.params),
            )

        return chat


def _text(response: Any) -> str:
    """The answer's text: ``text`` of a ``ModelResponse``, ``content`` of others, or str."""
    if isinstance(response, ModelResponse):
        return response.text
    content = getattr(response, "content", response)
    return "" if content is None else str(content)
