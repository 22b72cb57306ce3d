"""One member's turn: an orchestrator run with the store's two tools and the team's prompt."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from pytest_harness._agent import Agent
from pytest_harness._aio import abandoned
from pytest_harness.errors import (
    AgentTimeout,
    CassetteError,
    ConfigError,
    LocalModelError,
    NetworkBlocked,
    RunFailed,
    describe,
)
from pytest_harness.orchestrator import Orchestrator, Run, Tool, tool
from pytest_harness.team._findings import KnowledgeStore, MemberTurn
from pytest_harness.team._members import Member, TeamConfig

COORDINATION = """\
You are one member of a team that shares a knowledge store. There is no coordinator: each \
member reads what the others found, builds on it, and writes new findings back. Two tools \
reach the store:
  read_store: returns every finding so far as JSON (no parameters).
  write_finding: records one finding (content: the finding; kind: an optional short label).
Workflow: first call read_store. Then call write_finding once for each new insight: one \
insight per call, never one that is already in the store. Only what you write with \
write_finding is recorded, not the text of your reply. When you have nothing new, reply \
briefly without writing."""
EXTRA_TOOLS = "You also have these tools: {names}. Use them to gather facts before you write."
FOCUS = "Your specific focus for this session: {instruction}"

# Errors of the test's set-up rather than of a member: raised at once, unchanged.
_NOT_THE_MEMBERS_FAULT = (CassetteError, NetworkBlocked, ConfigError, LocalModelError)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seat:
    """A member as it takes its turns in one ``invoke``: all but the cycle and the store."""

    name: str
    model: str
    system_prompt: str
    params: dict[str, Any]
    tools: tuple[Tool, ...]
    timeout: float | None
    max_requests: int
    max_tool_rounds: int | None
    unique_findings: bool


def seat(member: Member, config: TeamConfig) -> Seat:
    """``member`` prepared to run in the team ``config``.

    Raises:
        ConfigError: the member's agent has no model (naming the team and the member).
    """
    agent: Agent = member.agent() if isinstance(member.agent, type) else member.agent
    try:
        model = agent.resolved_model()
    except ConfigError as error:
        raise ConfigError(f"{config.team}: member {member.label}: {error}") from None
    params = dict(agent.params)
    if agent.temperature is not None:
        params.setdefault("temperature", agent.temperature)
    tools = member.tools()
    focus = FOCUS.format(instruction=member.instruction) if member.instruction else ""
    parts = (coordination_text(config.coordination, tools), focus, agent.instructions)
    return Seat(
        name=member.label,
        model=model,
        system_prompt="\n\n".join(part for part in parts if part),
        params=params,
        tools=tools,
        timeout=member.timeout if member.timeout is not None else config.member_timeout,
        max_requests=config.member_requests,
        max_tool_rounds=config.member_tool_rounds,
        unique_findings=config.unique_findings,
    )


def coordination_text(custom: str | None, tools: tuple[Tool, ...]) -> str:
    """The team's own coordination text, else the built-in guide (naming extra tools)."""
    if custom is not None:
        return custom
    if not tools:
        return COORDINATION
    return f"{COORDINATION}\n{EXTRA_TOOLS.format(names=', '.join(t.name for t in tools))}"


def task_message(task: Any, cycle: int, max_cycles: int | None, name: str) -> str:
    """The user message of a member's turn: the team's input, the cycle, who it is."""
    text = task if isinstance(task, str) else json.dumps(task, indent=2, default=str)
    of = f" of {max_cycles}" if max_cycles is not None else ""
    return (
        f"Task: {text}\n\nCycle {cycle}{of}. You are {name}: what you write is recorded "
        "under that name."
    )


def store_tools(
    store: KnowledgeStore, author: str, cycle: int, *, unique: bool = False
) -> tuple[Tool, Tool]:
    """``read_store`` and ``write_finding``, bound to ``store``, ``author`` and ``cycle``.

    Args:
        unique: ``write_finding`` refuses a finding already in the store (the team's
            ``unique_findings``); otherwise it appends every finding.
    """

    async def read_store() -> str:
        """Read every finding in the team's shared store, as JSON (author, cycle, content)."""
        return store.to_json()

    async def write_finding(content: str, kind: str = "") -> str:
        """Record one finding in the team's shared store, for the other members to read.

        Args:
            content: the finding: one insight, in plain words.
            kind: an optional short label for the kind of finding.
        """
        store.write(author=author, cycle=cycle, content=content, kind=kind, unique=unique)
        return "Finding recorded."

    return tool(read_store), tool(write_finding)


async def take_turn(
    seat: Seat, store: KnowledgeStore, cycle: int, message: str, *, team: str
) -> MemberTurn:
    """Run one turn of ``seat``, at most its ``timeout`` seconds; what came of it.

    Only the member's own time limit (its ``timeout``, else the team's ``member_timeout``)
    cuts a turn off: the team's ``timeout`` is checked between cycles, never inside one.
    """
    orchestrator = Orchestrator(
        seat.model,
        [*seat.tools, *store_tools(store, seat.name, cycle, unique=seat.unique_findings)],
        seat.system_prompt,
        params=seat.params,
        max_requests=seat.max_requests,
        max_tool_rounds=seat.max_tool_rounds,
    )
    who = f"{team}: {seat.name} in cycle {cycle}"
    task = asyncio.ensure_future(orchestrator.arun(message))
    try:
        await asyncio.wait({task}, timeout=seat.timeout)
    finally:
        cut = not task.done() or abandoned(task)  # cut off at its limit when recorded
        if cut:  # past its limit, or the team itself was cancelled
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if cut:
        text = (
            f"{who} did not finish within its timeout of {seat.timeout:g} s; its findings "
            "so far are kept. To give it longer: SharedState.member(..., timeout=...), or "
            "the team's member_timeout"
        )
        return MemberTurn(
            member=seat.name, cycle=cycle, run=None, error=text, exception=AgentTimeout(text)
        )
    return _outcome(task, seat.name, cycle, who)


def _outcome(task: asyncio.Future[Run], name: str, cycle: int, who: str) -> MemberTurn:
    """The turn a finished run task makes (set-up errors and ``HarnessStop`` raised)."""
    try:
        run = task.result()
    except RunFailed as failure:
        if isinstance(failure.__cause__, _NOT_THE_MEMBERS_FAULT):
            raise
        text = f"{who} failed: {describe(failure)}"
        return MemberTurn(member=name, cycle=cycle, run=failure.run, error=text, exception=failure)
    except _NOT_THE_MEMBERS_FAULT:
        raise
    except Exception as error:  # HarnessStop is a BaseException: it is not caught here
        text = f"{who} failed: {describe(error)}"
        return MemberTurn(member=name, cycle=cycle, run=None, error=text, exception=error)
    if run.stop_reason != "done":
        text = f"{who} stopped on {run.stop_reason} after {run.requests} requests"
        return MemberTurn(member=name, cycle=cycle, run=run, error=text)
    return MemberTurn(member=name, cycle=cycle, run=run)
