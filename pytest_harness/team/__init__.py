"""Shared-state teams and simulated users: agents that generate what your tests need.

A ``SharedState`` subclass names peer agents (``members``) that take turns reading and
writing one ``KnowledgeStore`` of ``Finding`` values for a few cycles: edge cases, personas,
adversarial inputs. ``@pytest.mark.scenarios(Team, input)`` turns what a team finds into
the parameters of a test, generated once and replayed from its cassette. ``simulate`` plays
a persona against your application for several turns and returns the ``Transcript``.
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
