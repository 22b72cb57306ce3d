"""The names that moved when the package was reorganised into namespaces, and where to.

docs/migration.md's tables, as data: an import of an old name fails with ``MovedName``,
which names the new home and points at the notes, instead of a bare ``cannot import name``;
a Tribunal declaration in an old spelling fails with its new one (``RESPELLED``).
tests/test_migration.py checks the tables and this module agree.

The package's ``__init__`` consults it only when a lookup has already failed: an attribute
it does not have (``__getattr__``), or a module nothing else could find (its finder, last
on ``sys.meta_path``; ``from pytest_harness import X`` ends there once ``X`` is not an
attribute). So nothing here loads while imports succeed.
"""

from __future__ import annotations

from pytest_harness.errors import MovedName

NOTES = "docs/migration.md lists every name that moved"


def _same(old: str, new: str, names: str) -> dict[str, str]:
    """``{old.name: new.name}`` for each of the space-separated ``names``."""
    return {f"{old}.{name}": f"{new}.{name}" for name in names.split()}


_TOP = "pytest_harness"
_ERRORS = "pytest_harness.errors"
_ORCHESTRATOR = "pytest_harness.orchestrator"
_TEAM = "pytest_harness.team"
_TRIBUNAL = "pytest_harness.tribunal"
_CALIBRATION = "pytest_harness.calibration"
_STRATEGIES = "pytest_harness.strategies"
_MIDDLEWARE = "pytest_harness.orchestrator.middleware"

# Each old name (a top-level name, or a name of an old module) and its new home.
MOVED: dict[str, str] = {
    # Renamed.
    "pytest_harness.Result": "pytest_harness.AgentResult",
    "pytest_harness.Event": "pytest_harness.tribunal.TribunalEvent",
    # Moved out of the top level.
    **_same(_TOP, _ORCHESTRATOR, "Orchestrator tool Run SubagentProbe SessionStore UsageLimits"),
    **_same(_TOP, _TEAM, "SharedState KnowledgeStore TeamResult"),
    **_same(_TOP, _CALIBRATION, "calibrate assert_calibrated Calibration Padding"),
    **_same(
        _TOP,
        _ERRORS,
        "AgentTimeout CassetteError HarnessStop HarnessWarning JudgeOutputError LabelError "
        "LocalModelError NetworkBlocked ProviderResponseError RunFailed SessionStoreError "
        "UnknownSession TeamError",
    ),
    # The old package's modules, private now: their public names are in the namespaces.
    **_same("pytest_harness.agent", _TOP, "Agent"),
    "pytest_harness.agent.Result": "pytest_harness.AgentResult",
    **_same("pytest_harness.model", _TOP, "complete acomplete"),
    **_same("pytest_harness.response", _TOP, "ModelResponse ToolCall Usage"),
    **_same("pytest_harness.fixture", _TOP, "Harness"),
    **_same("pytest_harness.tribunal.declare", _TRIBUNAL, "Tribunal"),
    **_same("pytest_harness.tribunal.verdicts", _TRIBUNAL, "Verdict Vote JudgeFailure"),
    **_same("pytest_harness.tribunal.assertions", _TRIBUNAL, "assert_verdict"),
    "pytest_harness.tribunal.run.Event": "pytest_harness.tribunal.TribunalEvent",
    **_same(
        "pytest_harness.orchestrator.loop", _ORCHESTRATOR, "Orchestrator MAX_REQUESTS_PER_TURN"
    ),
    **_same("pytest_harness.orchestrator.tools", _ORCHESTRATOR, "tool Tool"),
    **_same("pytest_harness.orchestrator.tools", _ERRORS, "ToolArgumentError"),
    **_same("pytest_harness.orchestrator.run", _ORCHESTRATOR, "Run ToolCallRecord StopReason"),
    **_same("pytest_harness.orchestrator.run", _ERRORS, "RunFailed"),
    **_same("pytest_harness.orchestrator.trajectory", _ORCHESTRATOR, "Run"),
    **_same(
        "pytest_harness.orchestrator.pipeline", _ORCHESTRATOR, "ModelCall Next Middleware RunEvent"
    ),
    **_same("pytest_harness.orchestrator.pipeline", _ERRORS, "StopRun"),
    **_same("pytest_harness.orchestrator.subagents", _ORCHESTRATOR, "steer SubagentEntry"),
    **_same("pytest_harness.orchestrator.sessions", _ORCHESTRATOR, "SessionStore"),
    **_same("pytest_harness.orchestrator.sessions", _ERRORS, "SessionStoreError UnknownSession"),
    **_same("pytest_harness.orchestrator.probe", _ORCHESTRATOR, "SubagentProbe"),
    **_same(_MIDDLEWARE, _ORCHESTRATOR, "defaults"),
    **_same(f"{_MIDDLEWARE}.usage", _ORCHESTRATOR, "UsageLimits count_usage"),
    **_same(f"{_MIDDLEWARE}.tracing", _ORCHESTRATOR, "Tracing"),
    **_same(f"{_MIDDLEWARE}.doom_loop", _ORCHESTRATOR, "DoomLoop"),
    **_same(f"{_MIDDLEWARE}.compaction", _ORCHESTRATOR, "Compaction"),
    **_same(f"{_MIDDLEWARE}.reasoning", _ORCHESTRATOR, "Reasoning Effort"),
    **_same(f"{_MIDDLEWARE}.validation", _ORCHESTRATOR, "Validation"),
    **_same(f"{_MIDDLEWARE}.retry", _ORCHESTRATOR, "Retry"),
    **_same(f"{_MIDDLEWARE}.retry", _ERRORS, "RetriesExhausted"),
    **_same(f"{_MIDDLEWARE}.tokens", _ERRORS, "CompactionFailed"),
    **_same("pytest_harness.team.simulate", _TEAM, "simulate asimulate Transcript Turn"),
    **_same("pytest_harness.team.simulate", _ERRORS, "SimulationError"),
    **_same("pytest_harness.team.shared_state", _TEAM, "SharedState"),
    **_same("pytest_harness.team.store", _TEAM, "KnowledgeStore Finding"),
    **_same("pytest_harness.team.result", _TEAM, "TeamResult MemberTurn"),
    **_same("pytest_harness.team.result", _ERRORS, "TeamError"),
    **_same("pytest_harness.team.config", _TEAM, "Member TeamConfig"),
    **_same("pytest_harness.team.scenarios", _ERRORS, "ScenariosUnavailable"),
    **_same("pytest_harness.calibration.run", _CALIBRATION, "calibrate acalibrate"),
    **_same(
        "pytest_harness.calibration.assertions",
        _CALIBRATION,
        "assert_calibrated aassert_calibrated",
    ),
    **_same("pytest_harness.calibration.result", _CALIBRATION, "Calibration"),
    **_same("pytest_harness.calibration.scores", _CALIBRATION, "Score Agreement ProbeResult"),
    **_same("pytest_harness.calibration.probes", _CALIBRATION, "Probe Examples Position Padding"),
    **_same("pytest_harness.calibration.labels", _CALIBRATION, "Labelled"),
    **_same("pytest_harness.calibration.labels", _ERRORS, "LabelError"),
    **_same(
        "pytest_harness.strategies.perturb",
        _STRATEGIES,
        "typos casing whitespace lookalikes truncated injected",
    ),
    **_same("pytest_harness.strategies.combine", _STRATEGIES, "perturbed Perturbation Kind"),
    **_same("pytest_harness.strategies.profile", _STRATEGIES, "recorded RECORDED"),
    **_same("pytest_harness.strategies.scenarios", _STRATEGIES, "scenarios"),
    **_same("pytest_harness.strategies.tables", _STRATEGIES, "HOMOGLYPHS INJECTIONS"),
    **_same("pytest_harness.strategies.drawing", _STRATEGIES, "Text"),
}

# Old names with no new home, and why.
REMOVED: dict[str, str] = {
    "pytest_harness.ResponseValidator": (
        "it is no longer public: every response is still checked; choose what a bad one does "
        "with the harness_degenerate ini key"
    ),
}


# The Tribunal's declarations as earlier releases spelled them (an attribute of the class, of
# an instance, or of the harness fixture), and their spelling now.
RESPELLED: dict[str, str] = {
    "Tribunal.verdict": (
        '@rule("majority", may_fail=1) in the class body (from pytest_harness.tribunal import '
        "rule); Tribunal(..., strategy=..., evaluate=fn) for one instance; tribunal.verdict is "
        "the result of call()"
    ),
    "Tribunal.process": (
        "@process in the class body (from pytest_harness.tribunal import process); "
        "Tribunal(..., process=fn) for one instance"
    ),
    "Tribunal.on": (
        '@hook("after_agent") in the class body (from pytest_harness.tribunal import hook); '
        'tribunal.on("after_agent", fn) for one instance'
    ),
    "Tribunal.before": '@hook("before_<event>") in the class body, as @hook("before_call")',
    "Tribunal.after": '@hook("after_<event>") in the class body, as @hook("after_agent")',
    "Tribunal.callback": '@hook(event) in the class body, as @hook("agent_error")',
    "tribunal.process": "Tribunal(..., process=fn)",
    "tribunal.before": 'tribunal.on("before_<event>", fn)',
    "tribunal.after": 'tribunal.on("after_<event>", fn)',
    "tribunal.callback": "tribunal.on(event, fn)",
    "harness.verdict": (
        "harness.get_verdict(tribunal, input) (outside a test: pytest_harness.tribunal.get_verdict)"
    ),
}


def respelled(old: str) -> str:
    """The message for a Tribunal declaration in an old spelling: its new spelling."""
    return f"{old} is spelled differently now: {RESPELLED[old]}. {NOTES}."


def missing_attribute(module: str, name: str) -> AttributeError:
    """The error for ``module.name`` that does not exist: where it went, if it moved."""
    said = f"module {module!r} has no attribute {name!r}"
    old = f"{module}.{name}"
    if old in MOVED:
        said += f": it is {MOVED[old]} now ({_import(MOVED[old])}); {NOTES}"
    elif old in REMOVED:
        said += f": {REMOVED[old]}; {NOTES}"
    return AttributeError(said, name=name)


def refuse(fullname: str) -> None:
    """Raise ``MovedName`` when ``fullname`` (a module, or the ``pytest_harness.X`` of a
    ``from pytest_harness import X``) is an old name; return when it is not one."""
    package, _, name = fullname.rpartition(".")
    if fullname in MOVED:
        where = f"it is {MOVED[fullname]} now: {_import(MOVED[fullname])}"
        raise MovedName(f"cannot import name {name!r} from {package!r}: {where}. {NOTES}.")
    if fullname in REMOVED:
        raise MovedName(
            f"cannot import name {name!r} from {package!r}: {REMOVED[fullname]}. {NOTES}."
        )
    inside = {old: new for old, new in MOVED.items() if old.startswith(f"{fullname}.")}
    if inside:
        raise MovedName(
            f"No module named {fullname!r}: the package's modules are private since it was "
            f"reorganised into namespaces. Import what it held from them: {_imports(inside)}. "
            f"{NOTES}."
        )


def _import(new: str) -> str:
    """``from pytest_harness.team import SharedState``, for ``pytest_harness.team.SharedState``."""
    module, _, name = new.rpartition(".")
    return f"from {module} import {name}"


def _imports(moved: dict[str, str]) -> str:
    """One ``from ... import ...`` per namespace, renamed names marked (``(was Result)``)."""
    names: dict[str, list[str]] = {}
    for old, new in moved.items():
        module, _, name = new.rpartition(".")
        was = old.rpartition(".")[2]
        names.setdefault(module, []).append(name if was == name else f"{name} (was {was})")
    return "; ".join(
        f"from {module} import {', '.join(sorted(listed))}" for module, listed in names.items()
    )
