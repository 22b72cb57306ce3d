"""Shared-state teams: peer agents that take turns reading and writing one findings store.

- ``shared_state``: the ``SharedState`` class, declared by subclass, and its cycles.
- ``config``: what a team declared (``Member``, ``member()``, ``researchers()``) and checks.
- ``turns``: one member's turn, an orchestrator run with ``read_store`` / ``write_finding``.
- ``store``: ``KnowledgeStore`` and ``Finding``.
- ``result``: ``TeamResult``, ``MemberTurn`` and ``TeamError``.
- ``simulate``: simulated users, a persona agent playing the user against the application.

``SharedState`` and ``KnowledgeStore`` are exported from ``pytest_harness``.
"""
