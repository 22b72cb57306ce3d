"""Hooks other plugins (or a conftest.py) may implement, named ``pytest_harness_<verb>``.

Called with keyword arguments only. Implement one in a ``conftest.py``:

    def pytest_harness_tribunal(item, tribunal, record):
        metrics.append(record)
"""

from __future__ import annotations

from typing import Any

import pluggy
import pytest

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_harness_tribunal(item: pytest.Item, tribunal: Any, record: dict[str, Any]) -> None:
    """Called when a tribunal run inside a test finishes, passing or failing.

    Called in the process that ran the test (an xdist worker, under xdist), right after the
    panel's verdict (or its ``AllAgentsFailed``), before the test goes on.

    Args:
        item: the running test.
        tribunal: the ``Tribunal`` instance; its ``verdict`` is None if no verdict was reached.
        record: the plain-data record that goes into the session report and JUnit XML.

    Returns:
        Nothing; the return value is ignored.
    """
