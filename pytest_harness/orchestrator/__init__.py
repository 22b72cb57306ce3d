"""The agent loop: typed tools (``tools``), the loop (``loop``), the middleware pipeline
(``pipeline``) and what a run leaves behind (``run``). ``Orchestrator``, ``Run`` and ``tool``
are exported from ``pytest_harness``.
"""
