"""Settings: the command line, the ``harness`` marker and the ini file, resolved once.

Precedence, everywhere: command line, then marker, then ini, then default. The session-wide
part is resolved in ``pytest_configure`` into ``Settings``; the per-test part (marker
arguments) is merged in by ``for_test`` when the test starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pytest_harness.errors import ConfigError

RecordMode: TypeAlias = Literal["none", "new", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "new", "all")
DEGENERATE_MODES = ("fail", "warn", "off")
MARKER_ARGS = ("cassette", "degenerate", "model", "timeout")
LOCAL_MODEL = "local"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The session's harness settings.

    Attributes:
        record: ``none`` replays only, ``new`` records what is missing, ``all`` re-records.
        model: replaces every call's model (``--harness-model`` / ``harness_model``).
        model_from_cli: whether ``model`` came from the command line (then markers can't
            change it).
        report: None for no report; ``""`` for the table only; else a JSON path too.
        cassette_dir: where cassettes live.
        degenerate: ``fail``, ``warn`` or ``off``.
        timeout: per-call HTTP timeout in seconds, or None for the provider default.
        record_failed: write a test's cassette even when the test failed while recording.
        allow_hosts: hosts replay may still connect to.
        verbose: pytest's verbosity.
    """

    record: RecordMode = "none"
    model: str | None = None
    model_from_cli: bool = False
    report: str | None = None
    cassette_dir: Path = Path("cassettes")
    degenerate: str = "fail"
    timeout: float | None = None
    record_failed: bool = False
    allow_hosts: tuple[str, ...] = ()
    verbose: int = 0

    @property
    def live(self) -> bool:
        return self.record != "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSettings:
    """One test's settings: the session's, with its ``harness`` marker applied."""

    cassette: str | None
    degenerate: str
    model: str | None
    timeout: float | None


def resolve(options: Any, ini: Any, rootdir: Path, verbose: int) -> Settings:
    """Build the session settings from parsed options and an ini getter.

    Args:
        options: ``config.option`` (the parsed command line).
        ini: ``config.getini``.
        rootdir: where a relative ``harness_cassette_dir`` is anchored.
        verbose: ``config.option.verbose``.
    """
    record = _record_mode(options.harness_live, options.harness_record)
    cli_model = options.harness_model
    model = cli_model or ini("harness_model") or None
    degenerate = _choice(
        "harness_degenerate", ini("harness_degenerate") or "fail", DEGENERATE_MODES
    )
    return Settings(
        record=record,
        model=model,
        model_from_cli=bool(cli_model),
        report=options.harness_report,
        cassette_dir=rootdir / (ini("harness_cassette_dir") or "cassettes"),
        degenerate=degenerate,
        timeout=_seconds("harness_timeout", ini("harness_timeout")),
        record_failed=_flag("harness_record_failed", ini("harness_record_failed")),
        allow_hosts=tuple(ini("harness_allow_hosts") or ()),
        verbose=verbose,
    )


def for_test(
    settings: Settings, marker_kwargs: dict[str, Any], marker_args: tuple[Any, ...]
) -> TestSettings:
    """Apply one test's ``@pytest.mark.harness(...)`` arguments to the session settings."""
    if marker_args:
        raise ConfigError(
            f"@pytest.mark.harness takes keyword arguments only ({', '.join(MARKER_ARGS)}), "
            f"got positional {marker_args!r}; write for example "
            '@pytest.mark.harness(cassette="name").'
        )
    unknown = sorted(set(marker_kwargs) - set(MARKER_ARGS))
    if unknown:
        raise ConfigError(
            f"@pytest.mark.harness got unknown argument(s) {', '.join(unknown)}; "
            f"expected some of: {', '.join(MARKER_ARGS)}."
        )
    cassette = marker_kwargs.get("cassette")
    if cassette is not None and (not isinstance(cassette, str) or not cassette.strip()):
        raise ConfigError(
            f"@pytest.mark.harness(cassette=...) expects a non-empty str, got {cassette!r}."
        )
    model = marker_kwargs.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"@pytest.mark.harness(model=...) expects a str, got {model!r}.")
    degenerate = marker_kwargs.get("degenerate", settings.degenerate)
    timeout = marker_kwargs.get("timeout")
    return TestSettings(
        cassette=cassette,
        degenerate=_choice("@pytest.mark.harness(degenerate=...)", degenerate, DEGENERATE_MODES),
        model=settings.model if settings.model_from_cli else (model or settings.model),
        timeout=settings.timeout
        if timeout is None
        else _seconds("@pytest.mark.harness(timeout=...)", timeout),
    )


def _record_mode(live: bool, record: str | None) -> RecordMode:
    if live and record not in (None, "all"):
        raise ConfigError(
            f"--harness-live records everything from scratch (record mode 'all') but "
            f"--harness-record={record} was also given; pass one of them."
        )
    mode = "all" if live else (record or "none")
    return _choice("--harness-record", mode, RECORD_MODES)  # type: ignore[return-value]


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{name} expects one of {', '.join(allowed)}, got {value!r}.")
    return str(value)


def _seconds(name: str, value: Any) -> float | None:
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds <= 0:
        raise ConfigError(f"{name} expects a positive number of seconds, got {value!r}.")
    return seconds


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value or "false").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name} expects true or false, got {value!r}.")
