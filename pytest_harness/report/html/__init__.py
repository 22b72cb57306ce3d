"""The session's report as one self-contained HTML page: ``render`` and ``write_html``.

``page`` builds the document (style, script, summary), ``sections``, ``calibration`` and
``agents`` one section each, and ``markup`` escapes everything taken from the records.
"""

from pytest_harness.report.html.page import render, write_html

__all__ = ["render", "write_html"]
