"""Bias probes: re-ask a judge with a change that must not move a fair verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from pytest_harness._agent import Agent
from pytest_harness.calibration._labels import Labelled
from pytest_harness.errors import ConfigError

PADDING = (
    "\n\nThat is all there is to it; this closing sentence repeats nothing new and adds no "
    "facts, it only makes the text a little longer."
)


class Probe(Protocol):
    """What a calibration needs of a probe (``Perturbation`` is a ready base class)."""

    name: str

    def applies(self, judge: Any, item: Labelled) -> bool:
        """Whether the probe can perturb this judge (a panel entry) on this item."""

    def judge(self, judge: Any) -> Any:
        """The judge to ask instead (the same one when only the input changes)."""

    def input(self, item: Labelled) -> Any:
        """The input to ask about instead."""

    def expected(self, original: bool) -> bool:
        """The vote a fair judge gives on the perturbed question, given its original vote."""


class Perturbation:
    """A probe that changes nothing; subclasses override what they perturb.

    Override ``applies(judge, item)``, ``judge(judge)``, ``input(item)`` and
    ``expected(original_vote)``, each the identity here.

    Attributes:
        name: The probe's name in the calibration's record and report.
    """

    name = "identity"

    def applies(self, judge: Any, item: Labelled) -> bool:
        return True

    def judge(self, judge: Any) -> Any:
        return judge

    def input(self, item: Labelled) -> Any:
        return item.input

    def expected(self, original: bool) -> bool:
        return original

    def __repr__(self) -> str:
        return f"<probe {self.name}>"


class Examples(Perturbation):
    """The judge's few-shot examples in reverse order; the verdict must not change."""

    name = "examples"

    def __init__(self) -> None:
        self._reversed: dict[type[Agent], type[Agent]] = {}

    def applies(self, judge: Any, item: Labelled) -> bool:
        return isinstance(judge, type) and issubclass(judge, Agent) and len(judge.examples) >= 2

    def judge(self, judge: Any) -> Any:
        """A subclass with the examples reversed, under the same name (the judge's name)."""
        made = self._reversed.get(judge)
        if made is None:
            attributes = {
                "examples": tuple(reversed(judge.examples)),
                "__module__": judge.__module__,
                "__qualname__": judge.__qualname__,
                "__doc__": judge.__doc__,
            }
            made = self._reversed[judge] = type(judge.__name__, (judge,), attributes)
        return made


class Position(Perturbation):
    """A pairwise item's two candidates swapped; a fair vote inverts."""

    name = "position"

    def applies(self, judge: Any, item: Labelled) -> bool:
        return _pair(item.input) is not None

    def input(self, item: Labelled) -> Any:
        first, second = _pair(item.input) or (None, None)
        return {**item.input, "candidates": [second, first]}

    def expected(self, original: bool) -> bool:
        return not original


class Padding(Perturbation):
    """The judged text made longer by neutral filler; the verdict must not change.

    Args:
        text: The filler appended to each piece of judged text.

    Attributes:
        text: The filler appended to each piece of judged text.
    """

    name = "padding"

    def __init__(self, text: str = PADDING) -> None:
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"Padding(text=...) needs some filler text, got {text!r:.60}")
        self.text = text

    def applies(self, judge: Any, item: Labelled) -> bool:
        return bool(self.input(item) != item.input)

    def input(self, item: Labelled) -> Any:
        value = item.input
        if isinstance(value, str):
            return value + self.text
        if isinstance(value, Mapping):
            return {key: self._pad(inner) for key, inner in value.items()}
        return value

    def _pad(self, value: Any) -> Any:
        if isinstance(value, str):
            return value + self.text
        if isinstance(value, (list, tuple)):
            return [item + self.text if isinstance(item, str) else item for item in value]
        return value


BUILT_IN: Mapping[str, type[Perturbation]] = {
    "examples": Examples,
    "position": Position,
    "padding": Padding,
}
_NEEDED = ("applies", "judge", "input", "expected")


def resolve(probes: Any) -> tuple[Probe, ...]:
    """The probes to run, from names and instances (one, or an iterable of them).

    Raises:
        ConfigError: an unknown name, an object that is not a probe, or a name twice.
    """
    one = isinstance(probes, str) or _is_probe(probes) or not isinstance(probes, Iterable)
    given: list[Any] = [probes] if one else list(probes)
    chosen: list[Probe] = []
    for entry in given:
        if isinstance(entry, str):
            if entry not in BUILT_IN:
                raise ConfigError(
                    f"unknown probe {entry!r}; the probes are {', '.join(BUILT_IN)} "
                    "(or pass a Perturbation instance)"
                )
            chosen.append(BUILT_IN[entry]())
        elif _is_probe(entry):
            chosen.append(entry)
        elif isinstance(entry, type):
            raise ConfigError(f"pass a probe instance, not the class: {entry.__name__}()")
        else:
            raise ConfigError(
                f"{entry!r:.80} is not a probe: pass a name ({', '.join(BUILT_IN)}) or an "
                f"object with a name and {', '.join(_NEEDED)} (subclass Perturbation)"
            )
    names = [probe.name for probe in chosen]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"probe {', '.join(twice)} given twice; give each probe once")
    return tuple(chosen)


def _is_probe(value: Any) -> bool:
    if isinstance(value, type):
        return False
    has_name = isinstance(getattr(value, "name", None), str) and bool(value.name)
    return has_name and all(callable(getattr(value, method, None)) for method in _NEEDED)


def _pair(value: Any) -> tuple[Any, Any] | None:
    """The two candidates of a pairwise input, or None when it is not one."""
    if not isinstance(value, Mapping):
        return None
    candidates = value.get("candidates")
    if isinstance(candidates, (list, tuple)) and len(candidates) == 2:
        return candidates[0], candidates[1]
    return None
