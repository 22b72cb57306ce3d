"""The harness's settings: the command line, the ``harness`` marker and the ini file.

Precedence, everywhere: command line, then marker, then ini, then default. ``resolve``
builds the session's ``Settings`` once (``_config.settings``); ``apply`` applies one test's
``harness`` marker to them (its arguments checked here too) into its ``TestSettings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

import pytest

from pytest_harness.errors import ConfigError

RecordMode: TypeAlias = Literal["none", "new", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "new", "all")
DegenerateMode: TypeAlias = Literal["fail", "warn", "off"]
DEGENERATE_MODES: tuple[DegenerateMode, ...] = ("fail", "warn", "off")
CaptureMode: TypeAlias = Literal["harness", "all"]
CAPTURE_MODES: tuple[CaptureMode, ...] = ("harness", "all")
McpStdioMode: TypeAlias = Literal["record", "error", "live"]
MCP_STDIO_MODES: tuple[McpStdioMode, ...] = ("record", "error", "live")
InconclusiveMode: TypeAlias = Literal["fail", "xfail", "pass"]
INCONCLUSIVE_MODES: tuple[InconclusiveMode, ...] = ("fail", "xfail", "pass")
PruneAction: TypeAlias = Literal["list", "remove"]
PRUNE_ACTIONS: tuple[PruneAction, ...] = ("list", "remove")
_Option = TypeVar("_Option", bound=str)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The session's harness settings.

    Attributes:
        record: ``none`` replays only, ``new`` records what is missing, ``all`` re-records
            (``harness_record`` ini, unless the command line gave one).
        record_from_cli: whether ``record`` came from the command line (then markers can't
            change it).
        model: replaces every call's model (``--harness-model`` / ``harness_model``).
        model_from_cli: whether ``model`` came from the command line (then markers can't
            change it).
        models: the model matrix (``--harness-models`` / ``harness_models``): every test
            that uses the harness runs once per model, each copy with that model as its
            override; empty for no matrix.
        judge_model: the model of every judge a tribunal runs (and of ready-made judges),
            whatever the model override (``--harness-judge-model`` /
            ``harness_judge_model``), or None: judges follow the override.
        judge_model_from_cli: whether ``judge_model`` came from the command line (then
            markers can't change it).
        report: None for no report; ``""`` for the table only; else a JSON path too.
        cassette_dir: where cassettes live.
        degenerate: ``fail``, ``warn`` or ``off``.
        timeout: per-call HTTP timeout in seconds, or None for the provider default.
        record_failed: write a test's cassette even when the test failed while recording.
        allow_hosts: hosts replay may still connect to.
        ignore_hosts: hosts whose traffic passes through untouched: never recorded, never
            replayed, never refused.
        capture: ``harness``: tests that use the harness (its marker or a ``harness*``
            fixture) record and replay all their HTTP traffic; ``all``: every test does.
        max_cost: the most one test may spend on live model calls, or None.
        max_session_cost: the most the session may spend on live model calls, or None.
        change_budget: how much a re-recording's cost or tokens may rise before the test
            counts as regressed (0.25: by a quarter).
        strict_replay: a replayed test that leaves a recording of its cassette unused fails.
        match_ignore: dotted JSON body fields left out of request matching.
        redact_headers: extra request headers to redact.
        redact_query: extra query parameters to redact.
        redact_body_fields: dotted JSON body fields to redact.
        mcp_stdio: an MCP server over stdio while a cassette is open: ``record`` records
            its exchanges and replays them without the server; ``error`` refuses it;
            ``live`` lets it run, live and unrecorded.
        prune: ``--harness-prune``: ``list`` or ``remove`` the cassettes no test of a full
            run opened; None (the default) for neither.
        verbose: pytest's verbosity.
    """

    record: RecordMode = "none"
    record_from_cli: bool = False
    model: str | None = None
    model_from_cli: bool = False
    models: tuple[str, ...] = ()
    judge_model: str | None = None
    judge_model_from_cli: bool = False
    report: str | None = None
    cassette_dir: Path = Path("cassettes")
    degenerate: DegenerateMode = "fail"
    timeout: float | None = None
    record_failed: bool = False
    allow_hosts: tuple[str, ...] = ()
    ignore_hosts: tuple[str, ...] = ()
    capture: CaptureMode = "harness"
    max_cost: float | None = None
    max_session_cost: float | None = None
    change_budget: float = 0.25
    strict_replay: bool = False
    match_ignore: tuple[str, ...] = ()
    redact_headers: tuple[str, ...] = ()
    redact_query: tuple[str, ...] = ()
    redact_body_fields: tuple[str, ...] = ()
    mcp_stdio: McpStdioMode = "record"
    prune: PruneAction | None = None
    verbose: int = 0


def resolve(options: Any, ini: Any, rootdir: Path, verbose: int) -> Settings:
    """Build the session settings from parsed options and an ini getter.

    Args:
        options: ``config.option`` (the parsed command line).
        ini: ``config.getini``.
        rootdir: where a relative ``harness_cassette_dir`` is anchored.
        verbose: ``config.option.verbose``.
    """
    cli_record = _record_mode(options.harness_live, options.harness_record)
    record = cli_record or choice("harness_record", ini("harness_record") or "none", RECORD_MODES)
    cli_model = options.harness_model
    model = cli_model or ini("harness_model") or None
    models = _matrix(cli_model, getattr(options, "harness_models", None), ini("harness_models"))
    cli_judge = getattr(options, "harness_judge_model", None)
    judge_model = _model_name("--harness-judge-model", cli_judge) or _model_name(
        "harness_judge_model", ini("harness_judge_model")
    )
    degenerate = choice("harness_degenerate", ini("harness_degenerate") or "fail", DEGENERATE_MODES)
    report = _report_path(options.harness_report)
    max_cost = amount("harness_max_cost", ini("harness_max_cost"))
    max_session_cost = amount("harness_max_session_cost", ini("harness_max_session_cost"))
    return Settings(
        record=record,
        record_from_cli=cli_record is not None,
        model=model,
        model_from_cli=bool(cli_model),
        models=models,
        judge_model=judge_model,
        judge_model_from_cli=bool(cli_judge),
        report=report,
        cassette_dir=rootdir / (ini("harness_cassette_dir") or "cassettes"),
        degenerate=degenerate,
        timeout=seconds("harness_timeout", ini("harness_timeout")),
        record_failed=_flag("harness_record_failed", ini("harness_record_failed")),
        allow_hosts=tuple(ini("harness_allow_hosts") or ()),
        ignore_hosts=tuple(ini("harness_ignore_hosts") or ()),
        capture=choice("harness_capture", ini("harness_capture") or "harness", CAPTURE_MODES),
        max_cost=max_cost,
        max_session_cost=max_session_cost,
        change_budget=budget_share("harness_change_budget", ini("harness_change_budget")),
        strict_replay=_flag("harness_strict_replay", ini("harness_strict_replay")),
        match_ignore=tuple(ini("harness_match_ignore") or ()),
        redact_headers=tuple(ini("harness_redact_headers") or ()),
        redact_query=tuple(ini("harness_redact_query") or ()),
        redact_body_fields=tuple(ini("harness_redact_body_fields") or ()),
        mcp_stdio=choice(
            "harness_mcp_stdio", ini("harness_mcp_stdio") or "record", MCP_STDIO_MODES
        ),
        prune=_prune(getattr(options, "harness_prune", None)),
        verbose=verbose,
    )


def _matrix(cli_model: str | None, cli: str | None, ini: str | None) -> tuple[str, ...]:
    """The model matrix. Precedence: ``--harness-models``, then ``--harness-model`` (one
    model on the command line turns off the ini's matrix), then ``harness_models``.

    Raises:
        ConfigError: both options on the command line, an empty entry, a duplicate, a name
            no cassette or test id can hold, or two names that share a cassette name.
    """
    if cli is not None and cli_model:
        raise ConfigError(
            f"--harness-models={cli} and --harness-model={cli_model} were both given: the "
            "matrix runs each test once per model, the single override runs all on one. "
            f"Pass one of them (to add {cli_model} to the matrix, list it in --harness-models)."
        )
    if cli is not None:
        return _model_list("--harness-models", cli)
    if cli_model or not ini:
        return ()
    return _model_list("harness_models", ini)


def _model_list(name: str, value: str) -> tuple[str, ...]:
    """Comma-separated model names, each checked, none twice, no two sharing a cassette."""
    entries = [entry.strip() for entry in value.split(",")]
    if not value.strip() or "" in entries:
        raise ConfigError(
            f"{name} got {value!r}, which has an empty entry: list litellm model names "
            f"separated by single commas, for example {name}=openai/gpt-4o-mini,"
            "anthropic/claude-3-5-haiku-latest."
        )
    models = tuple(_model_name(name, entry) or "" for entry in entries)
    slugs: dict[str, str] = {}
    for model in models:
        if model in slugs.values():
            raise ConfigError(f"{name} lists {model!r} twice; list each model once.")
        other = slugs.setdefault(file_name(model), model)
        if other != model:
            raise ConfigError(
                f"{name} lists {other!r} and {model!r}, which would share the cassette name "
                f"[{file_name(model)}] (characters other than letters, digits, '.', '_' "
                "and '-' become '_'); keep one of them."
            )
    return models


_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/@+=~-]|::")


def _model_name(name: str, value: str | None) -> str | None:
    """A model name (surrounding spaces dropped), or None for none given.

    Raises:
        ConfigError: it holds a character no litellm model name has (a space, a bracket,
            a comma, ``::``): test ids and cassette names are made from it.
    """
    model = (value or "").strip()
    found = _UNSAFE.search(model)
    if found is not None:
        raise ConfigError(
            f"{name} got the model name {model!r}, which holds {found.group()!r}: a litellm "
            "model name has letters, digits and . _ - / : @ + = ~ only (test ids and cassette "
            "names are made from it). Write the name as litellm spells it, e.g. "
            "openai/gpt-4o-mini."
        )
    return model or None


def file_name(text: str) -> str:
    """``text`` as a file name: each run of characters other than letters, digits, ``.``,
    ``_`` and ``-`` becomes ``_`` (``openai/gpt-4o-mini``: ``openai_gpt-4o-mini``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "test"


def _prune(value: str | None) -> PruneAction | None:
    return None if value is None else choice("--harness-prune", value, PRUNE_ACTIONS)


def _report_path(value: str | None) -> str | None:
    if value and (Path(value).is_dir() or value.endswith(".py") or "::" in value):
        raise ConfigError(
            f"--harness-report got {value!r}, which looks like a test path, not a JSON file: "
            "write --harness-report=PATH for a JSON report, or put --harness-report after "
            "the test paths (or as --harness-report=) for the table only"
        )
    return value


def _record_mode(live: bool, record: str | None) -> RecordMode | None:
    """The command line's record mode, or None when it gave none."""
    if live and record not in (None, "all"):
        raise ConfigError(
            f"--harness-live records everything from scratch (record mode 'all') but "
            f"--harness-record={record} was also given; pass one of them."
        )
    if live:
        return "all"
    if record is None:
        return None
    return choice("--harness-record", record, RECORD_MODES)


def choice(name: str, value: Any, allowed: tuple[_Option, ...]) -> _Option:
    """``value`` if it is one of ``allowed``, else ``ConfigError`` naming ``name``."""
    for option in allowed:
        if value == option:
            return option
    raise ConfigError(f"{name} expects one of {', '.join(allowed)}, got {value!r}.")


def seconds(name: str, value: Any) -> float | None:
    """A positive number of seconds (None for none given), else ``ConfigError``."""
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds <= 0:
        raise ConfigError(f"{name} expects a positive number of seconds, got {value!r}.")
    return seconds


def amount(name: str, value: Any) -> float | None:
    """A non-negative amount of money (None for none given), else ``ConfigError``."""
    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if not number >= 0:
        raise ConfigError(
            f"{name} expects an amount in the provider's currency (as litellm prices it), "
            f"such as 0.50, got {value!r}."
        )
    return number


def budget_share(name: str, value: Any, default: float = 0.25) -> float:
    """A non-negative share, as a percentage (``25%``) or a fraction (``0.25``); ``default``
    when none is given; else ``ConfigError``."""
    text = str(value or "").strip()
    if not text:
        return default
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        number = -1.0
    if not number >= 0 or number == float("inf"):
        raise ConfigError(
            f"{name} expects a share, as a percentage (25%) or a fraction (0.25), got {value!r}."
        )
    return number


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value or "false").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name} expects true or false, got {value!r}.")


ARGUMENTS = (
    "cassette",
    "confidence",
    "degenerate",
    "inconclusive",
    "judge_model",
    "margin",
    "mcp_stdio",
    "model",
    "pass_rate",
    "record",
    "samples",
    "strict_replay",
    "timeout",
)
_SEQUENTIAL = ("confidence", "margin", "inconclusive")  # sequential sampling's arguments


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSettings:
    """One test's settings: the session's, with its ``harness`` marker applied."""

    record: RecordMode
    cassette: str | bool | None
    degenerate: DegenerateMode
    model: str | None
    timeout: float | None
    judge_model: str | None = None
    samples: int = 1
    pass_rate: float = 1.0
    confidence: float | None = None
    margin: float = 0.05
    inconclusive: InconclusiveMode = "fail"
    strict_replay: bool = False
    mcp_stdio: McpStdioMode = "record"


def _strict_replay(kwargs: dict[str, Any], default: bool) -> bool:
    value = kwargs.get("strict_replay", default)
    if not isinstance(value, bool):
        raise ConfigError(
            f"@pytest.mark.harness(strict_replay=...) expects True or False, got {value!r}."
        )
    return value


def arguments(item: pytest.Item) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The keyword and positional arguments of the test's ``harness`` markers, merged."""
    kwargs: dict[str, Any] = {}
    args: tuple[Any, ...] = ()
    for marker in reversed(list(item.iter_markers("harness"))):
        kwargs.update(marker.kwargs)
        args += marker.args
    return kwargs, args


def uses_harness(item: pytest.Item) -> bool:
    """Whether a test uses the harness: its ``harness`` marker or a ``harness*`` fixture."""
    names = getattr(item, "fixturenames", ())
    return item.get_closest_marker("harness") is not None or any(
        name.startswith("harness") for name in names
    )


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
    judge_model = kwargs.get("judge_model")
    if judge_model is not None and not isinstance(judge_model, str):
        raise ConfigError(
            f"@pytest.mark.harness(judge_model=...) expects a str, got {judge_model!r}."
        )
    record = settings.record
    if not settings.record_from_cli and "record" in kwargs:
        record = choice("@pytest.mark.harness(record=...)", kwargs["record"], RECORD_MODES)
    degenerate = kwargs.get("degenerate", settings.degenerate)
    timeout = kwargs.get("timeout")
    return TestSettings(
        record=record,
        cassette=cassette,
        degenerate=choice("@pytest.mark.harness(degenerate=...)", degenerate, DEGENERATE_MODES),
        model=settings.model if settings.model_from_cli else (model or settings.model),
        judge_model=settings.judge_model  # command line > marker > ini, as for model
        if settings.judge_model_from_cli
        else (judge_model or settings.judge_model),
        timeout=settings.timeout
        if timeout is None
        else seconds("@pytest.mark.harness(timeout=...)", timeout),
        **_sampling(kwargs),
        strict_replay=_strict_replay(kwargs, settings.strict_replay),
        mcp_stdio=choice(
            "@pytest.mark.harness(mcp_stdio=...)",
            kwargs.get("mcp_stdio", settings.mcp_stdio),
            MCP_STDIO_MODES,
        ),
    )


def _sampling(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``samples`` (a whole number from 1), ``pass_rate`` (above 0, at most 1) and, for
    sequential sampling, ``confidence``, ``margin`` and ``inconclusive``."""
    samples = kwargs.get("samples", 1)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 10_000:
        raise ConfigError(
            "@pytest.mark.harness(samples=...) expects a whole number from 1 to 10000 (how many "
            f"times the test body runs), got {samples!r}."
        )
    if "pass_rate" not in kwargs:
        given = [name for name in _SEQUENTIAL if name in kwargs]
        if given:
            raise ConfigError(
                f"@pytest.mark.harness({given[0]}=...) needs samples=N and pass_rate=p: it "
                "decides whether the share of samples passing reaches p, for example "
                "@pytest.mark.harness(samples=100, pass_rate=0.8, confidence=0.95)."
            )
        return {"samples": samples}
    rate = kwargs["pass_rate"]
    if not share(rate) or rate == 0:
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
    return {
        "samples": samples,
        "pass_rate": float(rate),
        **sequential_arguments(kwargs, float(rate)),
    }


def sequential_arguments(
    kwargs: dict[str, Any], rate: float, *, marker: str = "harness"
) -> dict[str, Any]:
    """``confidence`` (above 0.5, below 1), ``margin`` (above 0, below ``pass_rate``, at
    most 0.5) and ``inconclusive`` (fail/xfail/pass), which need ``confidence``; the
    messages name ``@pytest.mark.<marker>``."""
    if "confidence" not in kwargs:
        given = [name for name in _SEQUENTIAL if name in kwargs]
        if given:
            first = "samples=100" if marker == "harness" else '"cases.jsonl"'
            raise ConfigError(
                f"@pytest.mark.{marker}({given[0]}=...) belongs to sequential sampling, which "
                f"confidence=... turns on: add it, for example @pytest.mark.{marker}({first}, "
                f"pass_rate={rate:g}, confidence=0.95, {given[0]}=...)."
            )
        return {}
    confidence = kwargs["confidence"]
    if not share(confidence) or not 0.5 < confidence < 1:
        raise ConfigError(
            f"@pytest.mark.{marker}(confidence=...) expects a level above 0.5 and below 1 "
            f"(0.95: a wrong verdict at most 5% of the time), got {confidence!r}."
        )
    margin = kwargs.get("margin", 0.05)
    if not share(margin) or not 0 < margin <= 0.5 or rate - margin <= 0:
        raise ConfigError(
            f"@pytest.mark.{marker}(margin=...) expects the difference from pass_rate you do not "
            f"care about, above 0, at most 0.5 and below pass_rate ({rate:g}), got {margin!r}"
            f"{'' if 'margin' in kwargs else ' (the default)'}; for example margin=0.05."
        )
    return {
        "confidence": float(confidence),
        "margin": float(margin),
        "inconclusive": choice(
            f"@pytest.mark.{marker}(inconclusive=...)",
            kwargs.get("inconclusive", "fail"),
            INCONCLUSIVE_MODES,
        ),
    }


def share(value: Any) -> bool:
    """A real number from 0 to 1 (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1


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
