"""What the harness reports, and how it is drawn.

- ``tribunals``: the record of one tribunal run, the tribunals' table and the judges'
  agreement (the failing assertion's message is the tribunal's own, in ``tribunal``);
- ``session``: ``SessionReport``, the session's tables at the end, and the JSON or HTML
  file; orchestrator runs and simulated conversations as report rows;
- ``html``: the self-contained HTML page, built from ``markup``'s escaped blocks;
- ``merge``: the JSON reports of several runs (CI shards) merged into one, written as JSON,
  HTML or JUnit XML (``python -m pytest_harness merge``);
- ``text``: drawing a plain-text table, and the number formats every table shares.

Each feature keeps its own record's shape where it makes it (``samples``, ``drift``,
``calibration``); this package only gathers and draws them.
"""
