"""Tribunals: panels of judge agents whose votes make a verdict, as pytest assertions.

- ``declare``: the ``Tribunal`` class, declared by subclass or configured per instance.
- ``declarations``: what a tribunal class declared (hooks, rule, ``process``), and checks.
- ``run``: running a panel from a frozen ``Plan``: concurrency, deadline, hooks, ``Event``.
- ``strategies``: the verdict rules (unanimous, majority, at_least, fraction, mean).
- ``verdicts``: ``Verdict`` and ``decide``.
- ``agreement``: percent agreement and Fleiss' kappa among judges.
- ``assertions``: ``assert_verdict``.
"""
