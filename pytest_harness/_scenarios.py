"""Scenarios: a team's findings as the parameters of a test, generated once and replayed."""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_harness.errors import ConfigError, HarnessError, ScenariosUnavailable, describe

if TYPE_CHECKING:
    from pytest_harness.team import Member

FOLDER = "scenarios"
# Parameters that say where a request goes and who pays, not what is asked: left out of the
# fingerprint, so a recording made against one endpoint or key replays with another.
TRANSPORT_PARAMS = frozenset(
    {"api_base", "base_url", "api_key", "api_version", "organization", "extra_headers", "timeout"}
)
_SLUG = re.compile(r"[^a-z0-9]+")
_ID_WIDTH = 40
_cache: dict[Path, list[Any]] = {}


@dataclass(frozen=True, slots=True)
class Request:
    """What a ``scenarios`` marker asks for."""

    team: type[Any]
    input: Any
    limit: int | None

    @classmethod
    def of(cls, marker: Any, test: str) -> Request:
        """The marker's arguments, checked (ConfigError naming the test and the fix)."""
        from pytest_harness.team import SharedState

        args, kwargs = list(marker.args), dict(marker.kwargs)
        team = args.pop(0) if args else kwargs.pop("team", None)
        given = args.pop(0) if args else kwargs.pop("input", None)
        limit = kwargs.pop("limit", None)
        if kwargs.pop("alone", False) and isinstance(team, type):
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios({team.__name__}) names the team alone, which "
                f"pytest takes for the class to mark: give the input too, as in "
                f"{forms(team.__name__)}."
            )
        if args or kwargs:
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios takes (team, input, limit=N), got more: "
                f"write {forms(getattr(team, '__name__', 'Team'))}."
            )
        if not (isinstance(team, type) and issubclass(team, SharedState)):
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios expects a SharedState subclass first, "
                f"got {team!r}."
            )
        if given is None:
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios({team.__name__}) has no input: "
                f"write {forms(team.__name__)}."
            )
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios(limit=...) expects a positive whole number "
                f"or None, got {limit!r}."
            )
        return cls(team, given, limit)

    def path(self, cassette_dir: Path) -> Path:
        """The generation's cassette: named from the team and a hash of what shapes it."""
        return cassette_dir / FOLDER / f"{self.team.__name__}-{fingerprint(self)}.yaml"


def forms(team: str = "Team") -> str:
    """The marker's accepted forms, as error messages show them."""
    return (
        f'@pytest.mark.scenarios({team}, input="...") or '
        f'@pytest.mark.scenarios({team}, "...", limit=N)'
    )


def fingerprint(request: Request) -> str:
    """12 hex digits of a hash of what shapes the team's requests, and the input.

    In it: the team's class, its members in turn order (each one's name, declared model,
    instruction, agent instructions, temperature, parameters but ``TRANSPORT_PARAMS``, tool
    names and timeout), its coordination text, its settings (``max_cycles``, ``timeout``,
    ``member_requests``, ``member_tool_rounds``, ``member_timeout``, ``unique_findings``) and
    the input. Not in it: the marker's ``limit`` (it picks from what was generated), the
    ``--harness-model`` override (the cassette remembers it) and the code of
    ``terminate_when`` / ``aggregate``.
    """
    from pytest_harness.team import TeamConfig

    team = request.team
    config = TeamConfig.read(team, team.__name__)
    shape = {
        "team": f"{team.__module__}.{team.__qualname__}",
        "members": [_member_shape(m) for m in config.members],
        "coordination": config.coordination,
        "max_cycles": config.max_cycles,
        "timeout": config.timeout,
        "member_requests": config.member_requests,
        "member_tool_rounds": config.member_tool_rounds,
        "member_timeout": config.member_timeout,
        "unique_findings": config.unique_findings,
        "input": request.input,
    }
    text = json.dumps(shape, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _member_shape(seat: Member) -> dict[str, Any]:
    """What of one member shapes its requests."""
    agent = seat.agent
    params = getattr(agent, "params", None) or {}
    return {
        "name": seat.label,
        "model": getattr(agent, "model", None),
        "instruction": seat.instruction,
        "instructions": getattr(agent, "instructions", ""),
        "temperature": getattr(agent, "temperature", None),
        "params": {k: v for k, v in params.items() if k not in TRANSPORT_PARAMS},
        "tools": [t.name for t in seat.tools()],
        "timeout": seat.timeout,
    }


def ids(items: Sequence[Any]) -> list[str]:
    """Short, readable, stable test ids: a slug of each scenario, de-duplicated."""
    seen: dict[str, int] = {}
    found = []
    for item in items:
        slug = _slug(item) or "scenario"
        seen[slug] = seen.get(slug, 0) + 1
        found.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return found


def _slug(item: Any) -> str:
    if isinstance(item, dict):
        named = next(
            (item[k] for k in ("id", "name", "title") if isinstance(item.get(k), str)), None
        )
        text = named if named is not None else json.dumps(item, sort_keys=True)
    else:
        text = str(item)
    return _SLUG.sub("-", text.lower()).strip("-")[:_ID_WIDTH].rstrip("-")


def recorded(path: Path) -> list[Any] | None:
    """The scenarios a cassette holds, or None."""
    from pytest_harness._cassettes import read

    if not path.exists():
        return None
    metadata = read.read(path).get("metadata") or {}
    items = metadata.get("scenarios")
    return items if isinstance(items, list) else None


def scenarios(request: Request, settings: Any, run_id: str) -> list[Any]:
    """The scenarios of ``request``: replayed, or generated when the session records.

    Raises:
        ScenariosUnavailable: none recorded, none produced, or generation failed.
    """
    from pytest_harness._cassettes import runlog

    path = request.path(settings.cassette_dir)
    runlog.note_used(path)  # --harness-prune: this team's recording is in use
    items = _cache.get(path)
    if items is None:
        items = _replayed(path, request) if settings.record == "none" else None
        if items is None:
            items = _generated(path, request, settings, run_id)
        _cache[path] = items
    return items[: request.limit] if request.limit is not None else list(items)


def _replayed(path: Path, request: Request) -> list[Any]:
    items = recorded(path)
    if items is None:
        name = request.team.__name__
        raise ScenariosUnavailable(
            f"no recorded scenarios of {name} for this input at {path}.{_stale(path, name)} "
            f"To record them: pytest <this test> --harness-live{_model_flag(path, name)}"
        )
    return items


def _others(path: Path, team: str) -> list[Path]:
    """The other recordings of ``team`` (for another declaration or input), newest last."""
    others = [p for p in path.parent.glob(f"{team}-*.yaml") if p != path]
    return sorted(others, key=lambda p: (p.stat().st_mtime_ns, p.name))


def _model_flag(path: Path, team: str) -> str:
    """`` --harness-model=X`` when the team's newest other recording was made with X."""
    from pytest_harness._cassettes import read

    for other in reversed(_others(path, team)):
        try:
            model = read.recorded_model(read.header(other, lock=False))
        except HarnessError:
            continue  # a damaged file says nothing of how it was recorded
        return f" --harness-model={model}" if model else ""
    return ""


def _stale(path: Path, team: str) -> str:
    """Why other recordings of ``team`` do not count, when there are any ("" otherwise)."""
    others = sorted(p.name for p in _others(path, team))
    if not others:
        return ""
    return (
        f" {', '.join(others)} {'was' if len(others) == 1 else 'were'} recorded for another "
        "declaration or input: the team's members, their models or instructions, its "
        "settings, or the input changed since, so its scenarios are not replayed (delete "
        "the old file once you have recorded the new one)."
    )


def _generated(path: Path, request: Request, settings: Any, run_id: str) -> list[Any]:
    """Generate under a lock: the first worker of the run records, the others read."""
    from filelock import FileLock

    from pytest_harness._cassettes.atomic import lock_path
    from pytest_harness._cassettes.runlog import RunLog

    # Not the file's own lock (writing the cassette takes that one): a lock on generating it.
    with FileLock(lock_path(path.with_suffix(".generating"))):
        items = recorded(path)
        # This run's (another worker generated them), or any with --harness-record=new.
        ours = RunLog(run_id).written(path) is not None
        if items is not None and (ours or settings.record == "new"):
            return items
        return _generate(path, request, settings, run_id)


def _generate(path: Path, request: Request, settings: Any, run_id: str) -> list[Any]:
    from pytest_harness._cassettes.slot import CassetteSlot
    from pytest_harness._local.route import LOCAL_MODEL, LocalRoute
    from pytest_harness._model.seam import quiet_warnings
    from pytest_harness._pytest_glue import scope

    name = request.team.__name__
    slot = CassetteSlot(path=path, mode=settings.record, nodeid=f"scenarios::{name}", run_id=run_id)
    routes = {LOCAL_MODEL: LocalRoute(live=True)}
    within = scope.Scope(
        degenerate=settings.degenerate,
        model=settings.model,
        timeout=settings.timeout,
        call_hooks=(slot,),
        routes=routes,
    )
    kept = False
    try:
        # At collection, outside any test's warning capture: litellm's own warnings must not
        # fail the generation under a user's filterwarnings = error (the filters are undone).
        with scope.activate(within), warnings.catch_warnings():
            quiet_warnings()
            output = request.team().invoke(request.input)["output"]
        items = _items(output, name)
        slot.metadata.update(scenarios=items, team=name, input=request.input)
        if settings.model:
            slot.metadata["model"] = settings.model  # the hints repeat it
        kept = True
        return items
    except ScenariosUnavailable:
        raise
    except (HarnessError, ValueError, TypeError) as error:
        raise ScenariosUnavailable(
            f"{name} could not generate scenarios: {describe(error)}"
        ) from error
    finally:
        slot.close(keep=kept)


def _items(output: Any, team: str) -> list[Any]:
    """The team's output as scenarios: a non-empty list of strings or JSON-able dicts."""
    if not isinstance(output, list) or not output:
        raise ScenariosUnavailable(
            f"{team} produced no scenarios (its aggregate returned {output!r:.80}): give it "
            "more cycles, or an aggregate that returns a list of strings or dicts."
        )
    items = [getattr(item, "content", item) for item in output]  # Findings: their content
    for item in items:
        if not isinstance(item, str | dict):
            raise ScenariosUnavailable(
                f"{team}'s aggregate returned {type(item).__name__} items; scenarios are "
                "strings or dicts."
            )
    json.dumps(items)  # a dict that JSON cannot hold fails here, before it is recorded
    return items


def parametrize(marker: Any, metafunc: Any, settings: Any, run_id: str) -> None:
    """Parametrize the test's ``scenario`` argument from its ``scenarios`` marker: one test
    per scenario, or one that errors at set-up saying what went wrong and the fix (a wrong
    marker argument, no ``scenario`` argument, no recording): the session goes on."""
    import pytest

    test = metafunc.definition.nodeid
    takes = "scenario" in metafunc.fixturenames
    try:
        if not takes:
            raise ConfigError(
                f"{test}: @pytest.mark.scenarios gives each test a `scenario` argument: "
                "add `scenario` to the test's parameters."
            )
        items = scenarios(Request.of(marker, test), settings, run_id)
    except (ConfigError, ScenariosUnavailable) as error:
        text = str(error) if str(error).startswith(f"{test}: ") else f"{test}: {error}"
        unavailable = pytest.mark.harness_unavailable(text.replace("<this test>", f"'{test}'"))
        # Without a `scenario` argument the error is a parameter set of no argument at all.
        values = (None,) if takes else ()
        error_only = pytest.param(*values, id="scenarios-unavailable", marks=unavailable)
        metafunc.parametrize(["scenario"] if takes else [], [error_only])
        return
    found = [pytest.param(item, id=name) for item, name in zip(items, ids(items), strict=True)]
    metafunc.parametrize("scenario", found)
