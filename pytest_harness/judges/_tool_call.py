"""ToolCallMatch: a tool call checked against the expected one, BFCL's AST check first."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_harness._agent import AgentResult
from pytest_harness._local.route import SCHEMA_NOTE
from pytest_harness._model.response import TokenCallback
from pytest_harness.errors import ConfigError
from pytest_harness.judges._judge import Judge, bad_reply

EQUIVALENCE = {
    "type": "object",
    "properties": {
        "arguments": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "argument": {"type": "string"},
                    "reason": {"type": "string"},
                    "equivalent": {"type": "boolean"},
                },
                "required": ["argument", "reason", "equivalent"],
            },
        }
    },
    "required": ["arguments"],
}
_DROPPED = set(" ,./-_*^")


@dataclass(frozen=True, slots=True)
class Check:
    """One argument's check: right, wrong (with why), or for the model to decide."""

    argument: str
    right: bool | None  # None: the model decides
    why: str
    given: Any = None
    accepted: tuple[Any, ...] = ()


class ToolCallMatch(Judge):
    """A tool call against the expected call: BFCL's AST check, the model for synonyms.

    The input is the call: a ``ToolCall`` (``harness.trajectory``'s), or a mapping
    ``{"name": ..., "arguments": {...}}`` (arguments may be a JSON string). ``context``
    gives the ``expected`` call, ``{"name": ..., "arguments": {argument: accepted}}``,
    where ``accepted`` is a list of accepted values (``""`` among them: it may be left
    out) or a single value; and, optionally, the ``question`` the call answers, shown to
    the model. ``processed`` adds ``arguments``: per argument, ``right`` and ``why``.

    Attributes:
        threshold: The lowest passing share of right arguments (default 1, BFCL's
            all-or-nothing).
    """

    threshold = 1.0
    labels = "tool_call.jsonl"
    output = EQUIVALENCE
    instructions = (
        "You check a function call against the expected call, as the Berkeley Function "
        "Calling Leaderboard's AST evaluation does. The function name, the arguments given "
        "and their types are already checked. For each argument listed, decide whether the "
        "value the call gave means the same as one of the accepted values for the purpose "
        "of the call (the same place, person, thing, date or quantity, written "
        'differently), or not. Reply with a JSON object whose "arguments" lists, for each '
        "argument in order, the argument's name, the reason and whether it is equivalent."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checks: list[Check] = []

    async def acall(self, *, on_token: TokenCallback | None = None) -> AgentResult:
        """The AST check; a model call only for strings it cannot decide."""
        started = time.perf_counter()
        name, arguments = self.call_made()
        expected_name, expected = self.expected()
        if name != expected_name:
            why = f"called {name!r}, expected {expected_name!r}"
            return self._decided(self.judgement(0.0, why, arguments=[]), started)
        self.checks = check_arguments(arguments, expected)
        if all(check.right is not None for check in self.checks):
            return self._decided(self._judged(), started)
        return await super().acall(on_token=on_token)

    def call_made(self) -> tuple[str, Mapping[str, Any]]:
        """The judged call's name and arguments."""
        call = self.input
        name = call.get("name") if isinstance(call, Mapping) else getattr(call, "name", None)
        args = (
            call.get("arguments") if isinstance(call, Mapping) else getattr(call, "arguments", None)
        )
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = None
        if not isinstance(name, str) or not isinstance(args, Mapping | None):
            raise ConfigError(
                f"judge {self.name} judges a tool call: give a ToolCall or "
                f'{{"name": ..., "arguments": {{...}}}}, got {call!r:.80}'
            )
        return name, args or {}

    def expected(self) -> tuple[str, Mapping[str, Any]]:
        """The expected call's name and accepted values per argument."""
        expected = self.fact("expected", 'the expected call, {"name": ..., "arguments": {...}}')
        name = expected.get("name") if isinstance(expected, Mapping) else None
        arguments = expected.get("arguments", {}) if isinstance(expected, Mapping) else None
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            raise ConfigError(
                f"judge {self.name}: the expected call is {expected!r:.80}; write it as "
                '{"name": "get_weather", "arguments": {"city": ["Paris", "Paris, France"]}}'
            )
        return name, arguments

    def prompt(self) -> str:
        """The call, then each undecided argument with its accepted values."""
        name, _ = self.call_made()
        asked = [c for c in self.checks if c.right is None]
        lines = [f"Function: {name}"]
        question = self.context.get("question")
        if question:
            lines.append(f"The call answers: {question}")
        lines.append("Arguments to decide:")
        lines += [
            f"- {c.argument}: the call gave {json.dumps(c.given)}; accepted: "
            + ", ".join(json.dumps(value) for value in c.accepted if value != "")
            for c in asked
        ]
        return "\n".join(lines)

    def _grammar_notes(self) -> dict[str, Any]:
        """On the embedded model, one decision per argument asked about, in order, each
        naming its argument: its grammar holds it to that."""
        if self.output is not EQUIVALENCE:
            return {}  # an output of a subclass's own: its schema as it is
        asked = [c.argument for c in self.checks if c.right is None]
        entry: dict[str, Any] = EQUIVALENCE["properties"]["arguments"]["items"]  # type: ignore[index]
        decisions = [
            {**entry, "properties": {**entry["properties"], "argument": {"const": name}}}
            for name in asked
        ]
        exact = {"type": "array", "prefixItems": decisions, "items": False}
        return {SCHEMA_NOTE: {**EQUIVALENCE, "properties": {"arguments": exact}}}

    def read_score(self, reply: Any, raw: str) -> tuple[float, str, dict[str, Any]]:
        """The model's decisions joined to the AST check's."""
        asked = [c.argument for c in self.checks if c.right is None]
        decided = {entry["argument"]: entry for entry in reply["arguments"]}
        missing = [argument for argument in asked if argument not in decided]
        if missing:
            raise bad_reply(self.name, f"the reply decides nothing for {', '.join(missing)}", raw)
        self.checks = [
            c
            if c.right is not None
            else Check(
                c.argument,
                bool(decided[c.argument]["equivalent"]),
                str(decided[c.argument]["reason"]),
                c.given,
                c.accepted,
            )
            for c in self.checks
        ]
        judged = self._judged()
        return judged["score"], judged["reason"], {"arguments": judged["arguments"]}

    def _judged(self) -> dict[str, Any]:
        wrong = [c for c in self.checks if not c.right]
        score = 1.0 if not self.checks else (len(self.checks) - len(wrong)) / len(self.checks)
        reason = (
            "; ".join(f"{c.argument}: {c.why}" for c in wrong)
            if wrong
            else "the call matches the expected call"
        )
        shown = [{"argument": c.argument, "right": c.right, "why": c.why} for c in self.checks]
        return self.judgement(score, reason, arguments=shown)

    def _decided(self, processed: dict[str, Any], started: float) -> AgentResult:
        """The result of a check the code decided alone: no model call, no usage."""
        return AgentResult(
            input=self.input,
            output=None,
            processed=processed,
            execution_time=round(time.perf_counter() - started, 6),
            agent=self.name,
        )


def check_arguments(given: Mapping[str, Any], expected: Mapping[str, Any]) -> list[Check]:
    """BFCL's per-argument checks, in the expected call's order, then unexpected ones."""
    checks = [_check(name, given, _accepted(values)) for name, values in expected.items()]
    checks += [
        Check(name, False, "the expected call takes no such argument", given[name])
        for name in given
        if name not in expected
    ]
    return checks


def _accepted(values: Any) -> tuple[Any, ...]:
    return tuple(values) if isinstance(values, list) else (values,)


def _check(name: str, given: Mapping[str, Any], accepted: tuple[Any, ...]) -> Check:
    if name not in given:
        if "" in accepted:
            return Check(name, True, "optional, left out", None, accepted)
        return Check(name, False, "a required argument is missing", None, accepted)
    value = given[name]
    typed = [a for a in accepted if a != "" and _same_type(value, a)]
    if not typed:
        kinds = sorted({type(a).__name__ for a in accepted if a != ""})
        why = f"{type(value).__name__} {value!r:.40} given, {' or '.join(kinds)} expected"
        return Check(name, False, why, value, accepted)
    if any(_equal(value, a) for a in typed):
        return Check(name, True, "an accepted value", value, accepted)
    if isinstance(value, str):
        return Check(name, None, "", value, accepted)
    return Check(name, False, f"{value!r:.40} is not an accepted value", value, accepted)


def _same_type(value: Any, accepted: Any) -> bool:
    """BFCL's type check: the same JSON type; an int where a float is expected is fine."""
    if isinstance(value, bool) or isinstance(accepted, bool):
        return isinstance(value, bool) and isinstance(accepted, bool)
    if isinstance(accepted, float):
        return isinstance(value, (int, float))
    if isinstance(accepted, Sequence) and not isinstance(accepted, str):
        return isinstance(value, Sequence) and not isinstance(value, str)
    return type(value) is type(accepted)


def _equal(value: Any, accepted: Any) -> bool:
    """BFCL's comparison: strings standardised, lists item by item, the rest by ``==``."""
    if isinstance(value, str) and isinstance(accepted, str):
        return _standard(value) == _standard(accepted)
    if isinstance(value, Sequence) and isinstance(accepted, Sequence):
        return len(value) == len(accepted) and all(
            _equal(v, a) for v, a in zip(value, accepted, strict=True)
        )
    if isinstance(value, Mapping) and isinstance(accepted, Mapping):
        return value.keys() == accepted.keys() and all(_equal(value[k], accepted[k]) for k in value)
    return bool(value == accepted)


def _standard(text: str) -> str:
    """BFCL's ``standardize_string``: lowercased, without spaces and ``,./-_*^``."""
    return "".join(c for c in text.lower() if c not in _DROPPED)
