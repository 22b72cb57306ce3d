"""What the harness reports, and how it is drawn.

- ``tribunals``: the record of one tribunal run, its failure message, the tribunals' table
  and the judges' agreement;
- ``runs``: orchestrator runs and simulated conversations as report rows;
- ``session``: ``SessionReport``, the session's tables at the end, and the JSON or HTML file;
- ``html``: the self-contained HTML page;
- ``tables``: drawing a plain-text table, and the number formats every table shares.

Each feature keeps its own record's shape where it makes it (``samples``, ``drift``,
``calibration.result``); this package only gathers and draws them.
"""
