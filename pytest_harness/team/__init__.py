"""Shared-state teams and simulated users: agents that generate what your tests need.

A ``SharedState`` team's members take turns reading and writing one ``KnowledgeStore``;
``@pytest.mark.scenarios(Team, input)`` turns what it finds into a test's parameters.
``simulate`` plays a persona against your application and returns the ``Transcript``.
"""

from __future__ import annotations

from pytest_harness.team._findings import Finding, KnowledgeStore, MemberTurn, TeamResult
from pytest_harness.team._members import Member, TeamConfig
from pytest_harness.team._shared_state import SharedState
from pytest_harness.team._simulate import Transcript, Turn, asimulate, simulate

__all__ = [
    "Finding",
    "KnowledgeStore",
    "Member",
    "MemberTurn",
    "SharedState",
    "TeamConfig",
    "TeamResult",
    "Transcript",
    "Turn",
    "asimulate",
    "simulate",
]
