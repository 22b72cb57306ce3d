"""The ``harness`` marker: one test's arguments, checked and applied over the session's.

Precedence as everywhere (``settings``): command line, then marker, then ini, then default.
Markers on the module, class and function merge; the closest one wins per argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_harness.errors import ConfigError
from pytest_harness.settings import (
    DEGENERATE_MODES,
    RECORD_MODES,
    DegenerateMode,
    RecordMode,
    Settings,
    choice,
    seconds,
)

ARGUMENTS = ("cassette", "degenerate", "model", "pass_rate", "record", "samples", "timeout")


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSettings:
    """One test's settings: the session's, with its ``harness`` marker applied."""

    record: RecordMode
    cassette: str | bool | None
    degenerate: DegenerateMode
    model: str | None
    timeout: float | None
    samples: int = 1
    pass_rate: float = 1.0


def arguments(item: pytest.Item) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The keyword and positional arguments of the test's ``harness`` markers, merged."""
    kwargs: dict[str, Any] = {}
    args: tuple[Any, ...] = ()
    for marker in reversed(list(item.iter_markers("harness"))):
        kwargs.update(marker.kwargs)
        args += marker.args
    return kwargs, args


def apply(settings: Settings, kwargs: dict[str, Any], args: tuple[Any, ...]) -> TestSettings:
    """Apply one test's ``@pytest.mark.harness(...)`` arguments to the session settings.

    Raises:
        ConfigError: a positional or unknown argument, or a value of the wrong kind.
    """
    _check_names(kwargs, args)
    cassette = kwargs.get("cassette")
    if cassette not in (None, False) and (not isinstance(cassette, str) or not cassette.strip()):
        raise ConfigError(
            "@pytest.mark.harness(cassette=...) expects a non-empty str (a cassette name) or "
            f"False (no cassette: the test talks to its endpoints directly), got {cassette!r}."
        )
    model = kwargs.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"@pytest.mark.harness(model=...) expects a str, got {model!r}.")
    record = settings.record
    if not settings.record_from_cli and "record" in kwargs:
        record = choice("@pytest.mark.harness(record=...)", kwargs["record"], RECORD_MODES)
    degenerate = kwargs.get("degenerate", settings.degenerate)
    timeout = kwargs.get("timeout")
    samples, pass_rate = _sampling(kwargs)
    return TestSettings(
        record=record,
        cassette=cassette,
        degenerate=choice("@pytest.mark.harness(degenerate=...)", degenerate, DEGENERATE_MODES),
        model=settings.model if settings.model_from_cli else (model or settings.model),
        timeout=settings.timeout
        if timeout is None
        else seconds("@pytest.mark.harness(timeout=...)", timeout),
        samples=samples,
        pass_rate=pass_rate,
    )


def _sampling(kwargs: dict[str, Any]) -> tuple[int, float]:
    """``samples`` (a whole number from 1) and ``pass_rate`` (above 0, at most 1)."""
    samples = kwargs.get("samples", 1)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 10_000:
        raise ConfigError(
            "@pytest.mark.harness(samples=...) expects a whole number from 1 to 10000 (how many "
            f"times the test body runs), got {samples!r}."
        )
    if "pass_rate" not in kwargs:
        return samples, 1.0
    rate = kwargs["pass_rate"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise ConfigError(
            "@pytest.mark.harness(pass_rate=...) expects the share of samples that must pass, "
            f"above 0 and at most 1 (0.9 for 90%), got {rate!r}."
        )
    if "samples" not in kwargs:
        raise ConfigError(
            f"@pytest.mark.harness(pass_rate={rate!r}) needs samples=N: the rate is over N "
            f"runs of the test body, for example @pytest.mark.harness(samples=10, "
            f"pass_rate={rate!r})."
        )
    return samples, float(rate)


def _check_names(kwargs: dict[str, Any], args: tuple[Any, ...]) -> None:
    if args:
        raise ConfigError(
            f"@pytest.mark.harness takes keyword arguments only ({', '.join(ARGUMENTS)}), "
            f"got positional {args!r}; write for example "
            '@pytest.mark.harness(cassette="name").'
        )
    unknown = sorted(set(kwargs) - set(ARGUMENTS))
    if unknown:
        raise ConfigError(
            f"@pytest.mark.harness got unknown argument(s) {', '.join(unknown)}; "
            f"expected some of: {', '.join(ARGUMENTS)}."
        )
