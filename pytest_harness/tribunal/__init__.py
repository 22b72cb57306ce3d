"""Tribunals: panels of judge agents whose votes make a verdict, as pytest assertions.

- ``declare``: the ``Tribunal`` class: its declarations (judges, hooks, verdict rule) and run.
- ``run``: running a panel from a frozen ``Plan``: concurrency, deadline, hooks, ``Event``.
- ``verdicts``: the strategies, ``Verdict`` and ``decide``.
- ``agreement``: percent agreement and Fleiss' kappa among judges.
- ``assertions``: ``assert_verdict``.
"""
