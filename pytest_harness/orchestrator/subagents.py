"""Subagents: a built-in ``delegate`` tool that runs a child orchestrator on a sub-task.

``Orchestrator(subagents=True)`` offers the model a ``delegate(task)`` tool. Each call
starts a child orchestrator (the parent's model, parameters and tools, without
``delegate`` itself: children do not spawn children) in its own session, runs the task to
its end and returns the child's answer as the tool's result. The parent keeps a registry
of its children, ``Orchestrator.children``: one ``SubagentEntry`` each (id, task, status,
session id, the child and its run).

Two ways to reach a running child, as in the seed:

* ``steer(entry, note)``: a note persisted in the child's session; the child sees it on its
  next request (the session middleware delivers it as a user message).
* ``SubagentProbe().peek(entry, question)``: a read-only side question (``probe.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_harness.errors import ConfigError
from pytest_harness.orchestrator.run import Run
from pytest_harness.orchestrator.tools import Tool, tool

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
