"""``python -m pytest_harness``: the command line (``merge``: several runs' JSON reports
into one; ``changes``: what the working tree's cassettes changed against a git ref).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_harness.errors import ConfigError, HarnessError, ReportError

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


CHANGES = """\
What the re-recorded cassettes change: each one in the working tree against the same file
at a git commit (default HEAD), read as behaviour, not JSON. Offline: no network, no key.

Per cassette (and the tests that recorded it): the answers of each model call (a text
diff; structured replies by field), the tool calls (added, removed, reordered, arguments),
the verdicts kept, and usage (calls, tokens, cost, recorded latency). Each is classified:
  same       the same answers;
  changed    answers differ, nothing a check depends on moved (a new recording too);
  regressed  a verdict flipped to fail, a tool is no longer called or a new one is, a
             structured reply stopped fitting its schema, or cost or tokens rose more
             than the budget (harness_change_budget, default 25%).
"""

CHANGES_EXAMPLE = """\
examples:
  python -m pytest_harness changes                       # cassettes/ against HEAD
  python -m pytest_harness changes --base origin/main --report changes.html cassettes/

exit codes: 0 nothing failed the gate; 1 a test regressed (with --fail-on changed: or
changed); 2 nothing compared (not a git repository, an unknown ref, a damaged cassette)."""


def parser() -> argparse.ArgumentParser:
    """The command line's parser: ``merge``, ``changes`` and their options."""
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
    _changes_parser(commands)
    return main


def _changes_parser(commands: Any) -> None:
    changes = commands.add_parser(
        "changes",
        help="what the re-recorded cassettes change against a git ref, test by test",
        description=CHANGES,
        epilog=CHANGES_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    changes.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="cassette files or folders (default: the ini file's harness_cassette_dir, else "
        "cassettes)",
    )
    changes.add_argument(
        "--base", default="HEAD", metavar="GITREF", help="the commit to compare with (HEAD)"
    )
    changes.add_argument(
        "--budget",
        default="25%",
        metavar="SHARE",
        help="how much cost or tokens may rise before a test regressed: 25%% (default), 0.1",
    )
    changes.add_argument(
        "--fail-on",
        choices=("regressed", "changed"),
        default="regressed",
        help="exit 1 when a test regressed (default), or changed or regressed",
    )
    changes.add_argument(
        "--report",
        type=Path,
        metavar="OUT",
        help="also write the changes as a report: .json, or .html (the review page)",
    )


def changes(args: argparse.Namespace) -> int:
    """Compare the working tree's cassettes with ``args.base``'s; print and gate."""
    from pytest_harness import _changes
    from pytest_harness._pytest_glue.settings import budget_share

    try:
        budget = budget_share("--budget", args.budget)
        paths = args.paths or [cassette_dir(Path.cwd())]
        records = _changes.between(args.base, paths, budget=budget)
        if args.report is not None:
            _write_changes(args.report, records)
    except HarnessError as error:
        print(f"pytest-harness changes: error: {error}", file=sys.stderr)
        return 2
    print(f"pytest-harness changes against {args.base}")
    print(_changes.changes_table(records))
    failing = {"regressed"} if args.fail_on == "regressed" else {"regressed", "changed"}
    return 1 if any(record["kind"] in failing for record in records) else 0


# pytest's ini files, in the order pytest looks for its configuration, and their section.
_INI_FILES = (
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", "tool.pytest.ini_options"),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


def cassette_dir(folder: Path) -> Path:
    """The ``harness_cassette_dir`` of the pytest configuration in ``folder`` (the first
    file that holds one, as pytest picks it), else ``cassettes``."""
    for name, section in _INI_FILES:
        path = folder / name
        if not path.is_file():
            continue
        options = _ini_section(path, section)
        if options is not None:
            return folder / str(options.get("harness_cassette_dir") or "cassettes")
    return folder / "cassettes"


def _ini_section(path: Path, section: str) -> dict[str, Any] | None:
    """The options of ``section`` in an ini or TOML file, or None when it has none."""
    if path.suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pytest installs tomli where tomllib is missing
            import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

        try:
            with path.open("rb") as file:
                data: Any = tomllib.load(file)
        except (OSError, ValueError) as error:  # TOMLDecodeError is a ValueError
            raise ConfigError(f"{path} does not read as TOML ({error}): name PATH") from None
        for key in section.split("."):
            data = data.get(key) if isinstance(data, dict) else None
        return data if isinstance(data, dict) else None
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, UnicodeError, configparser.Error) as error:
        raise ConfigError(f"{path} does not read as an ini file ({error}): name PATH") from None
    return dict(parser[section]) if parser.has_section(section) else None


def _write_changes(path: Path, records: Sequence[Any]) -> None:
    from pytest_harness._report.session import contents, write_contents

    if path.suffix.lower() not in (".json", ".html", ".htm"):
        raise ReportError(f"--report {path}: write a .json or an .html file")
    write_contents(path, contents({"changes": records}))


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
    if args.command == "changes":
        return changes(args)
    return merge(args.reports, args.output, strict=args.strict)


if __name__ == "__main__":
    sys.exit(main())
