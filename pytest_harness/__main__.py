"""``python -m pytest_harness``: the command line (``merge``: several runs' JSON reports
into one).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_harness.errors import ReportError

MERGE = """\
Merge the JSON reports of several pytest runs (CI jobs, shards, machines) into one.

Each REPORT is a file written by `pytest --harness-report=PATH.json`. Test by test:
  - a test in one report only is copied as it is;
  - the same test with the same records and outcome in several reports is kept once
    (a record's wall time aside);
  - a sampled test whose reports differ is pooled: samples, runs and passes added, the
    pass rate, its Wilson interval and pass^k computed again from the pooled counts, and
    the outcome decided again (a sequential test by its SPRT on the pooled counts);
  - any other difference is a conflict: every version is kept, each naming its report,
    listed under "conflicts" and printed; with --strict the command then exits 1.
Tribunal, calibration, drift, run, application-call, conversation and usage records are
pooled, and the judges' agreement is computed again from the pooled tribunal runs.
"""

EXAMPLE = """\
example:
  python -m pytest_harness merge shard-*/report.json --output merged.html

exit codes: 0 merged; 1 merged with conflicts under --strict; 2 nothing merged (a report
missing, not JSON or not a harness report; an output extension it cannot write)."""


def parser() -> argparse.ArgumentParser:
    """The command line's parser: ``merge`` and its options."""
    main = argparse.ArgumentParser(
        prog="python -m pytest_harness",
        description="pytest-harness on the command line.",
    )
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    merge = commands.add_parser(
        "merge",
        help="merge the JSON reports of several pytest runs into one",
        description=MERGE,
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json")
    merge.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="OUT",
        help="the merged report: .json (mergeable again), .html (the report page) or .xml "
        "(JUnit XML with the harness_* properties)",
    )
    merge.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a test conflicts (the merged report is written all the same)",
    )
    return main


def merge(reports: Sequence[Path], output: Path, *, strict: bool) -> int:
    """Merge ``reports`` into ``output``; print what was merged and every conflict."""
    from pytest_harness._report import merge as merging

    try:
        merging.check_output(output)
        loaded = [(str(path), merging.load(path)) for path in reports]
        merged = merging.merge(loaded)
        merging.write(output, merged)
    except ReportError as error:
        print(f"pytest-harness merge: error: {error}", file=sys.stderr)
        return 2
    for conflict in merged.conflicts:
        print(f"pytest-harness merge: conflict: {conflict.message()}", file=sys.stderr)
    tests = len({entry["test"] for entry in merged.data["tests"]})
    conflicts = len(merged.conflicts)
    said = f"; {conflicts} conflicting tests (each version kept, marked)" if conflicts else ""
    print(f"merged {merged.reports} reports ({tests} tests{said}) into {output}")
    if conflicts and strict:
        print("pytest-harness merge: --strict: failing on the conflicts above", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns its exit code."""
    args = parser().parse_args(argv)
    return merge(args.reports, args.output, strict=args.strict)


if __name__ == "__main__":
    sys.exit(main())
