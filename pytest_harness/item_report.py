"""What a test's features report as they finish, turned into the test's report rows.

A tribunal run, an orchestrator run, a simulated conversation and a calibration each become
a JUnit property of the test (JSON, read back by the session report, shipped by xdist) and
join the ``harness`` fixture's lists; a tribunal run also goes to the
``pytest_harness_tribunal`` hook. In a sampled test each tribunal record says its sample.

A recording keeps the test's verdicts in its cassette; when it replaced an earlier
recording, the verdicts that flipped since are report rows too (``drift``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_harness.cassettes.slot import CassetteSlot
    from pytest_harness.fixture import Harness


class ItemReports:
    """The report rows of one running test.

    Attributes:
        item: the test.
        harness: the test's ``harness`` fixture object, once it asked for it.
        sample: the running sample's number in a sampled test, else None.
        tribunals: the records of the tribunal runs so far (``report.tribunals.record``).
    """

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        self.harness: Harness | None = None
        self.sample: int | None = None
        self.tribunals: list[dict[str, Any]] = []

    def add(self, topic: str, payload: Any) -> None:
        """Report what finished (a topic of the test's scope other than ``response``)."""
        if topic == "tribunal":
            self._tribunal(payload)
        elif topic in ("run", "transcript"):
            self._agent(topic, payload)
        elif topic == "calibration":
            self._calibration(payload)

    def _tribunal(self, done: Any) -> None:
        from pytest_harness.report import tribunals as report

        data = report.record(done.tribunal, done.error, self.item.nodeid, sample=self.sample)
        self.tribunals.append(data)
        self.item.user_properties.extend(report.junit_properties(data))
        tribunal = done.tribunal
        self.item.ihook.pytest_harness_tribunal(item=self.item, tribunal=tribunal, record=data)
        if self.harness is not None:
            self.harness.tribunals.append(tribunal)

    def _agent(self, topic: str, payload: Any) -> None:
        """An orchestrator run or a simulated conversation."""
        from pytest_harness.report import runs as report_runs

        nodeid = self.item.nodeid
        if topic == "run":
            self.item.user_properties.append(report_runs.run_property(payload, nodeid))
        else:
            self.item.user_properties.append(report_runs.transcript_property(payload, nodeid))
        if self.harness is not None:
            (self.harness.runs if topic == "run" else self.harness.transcripts).append(payload)

    def _calibration(self, calibration: Any) -> None:
        self.item.user_properties.append(calibration.junit_property(self.item.nodeid))
        if self.harness is not None:
            self.harness.calibrations.append(calibration)

    def keep_verdicts(self, slot: CassetteSlot) -> None:
        """Recording: the cassette keeps the test's verdicts, for the next re-recording."""
        if slot.mode != "none" and self.tribunals:
            from pytest_harness import drift

            kept = drift.entries(self.tribunals, slot.run_id)
            slot.metadata[drift.METADATA_KEY] = {self.item.nodeid: kept}

    def report_drift(self, slot: CassetteSlot) -> None:
        """After a recording that replaced another: the verdicts that flipped (report rows).

        Raises:
            CassetteError: the replaced file cannot be compared (another format or test).
        """
        previous = slot.previous() if self.tribunals else None
        if previous is None:
            return
        from pytest_harness import drift

        nodeid = self.item.nodeid
        new = slot.metadata[drift.METADATA_KEY][nodeid]
        rows = drift.compare(previous, new, test=nodeid, path=slot.path, shared=slot.shared)
        self.item.user_properties.extend(drift.junit_properties(rows))
