"""The messages that tell a model what was wrong with the arguments it sent a tool.

``Tool.arguments`` raises them as a ``ToolArgumentError``, which the loop sends back as the
tool's result so the model can call it again. Each names the tool, every wrong argument
(``point.x``, ``items[2]``), what was expected and what arrived, and asks for the call again::

    tool 'move': wrong arguments: argument 'point.x': expected an integer, got a string "1".
    Call move again with arguments that fit its parameters.

``problems`` words JSON Schema validation errors (from ``jsonschema``) that way: in the order
of the arguments, without repeats, and for a failed ``anyOf`` (``Point | None``) the errors
of the one alternative the value was meant for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jsonschema import ValidationError

from pytest_harness.errors import quote

__all__ = ["not_an_object", "not_json", "problems", "refused", "wrong_arguments"]

_MAX_PROBLEMS = 5  # a message listing more than this many problems helps no model
_A_KIND = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


def wrong_arguments(name: str, found: list[str]) -> str:
    """The message for arguments that do not fit tool ``name``'s schema (``problems``)."""
    if len(found) > _MAX_PROBLEMS:
        more = len(found) - _MAX_PROBLEMS
        found = [*found[:_MAX_PROBLEMS], f"and {more} more"]
    return (
        f"tool {name!r}: wrong arguments: {'; '.join(found)}. "
        f"Call {name} again with arguments that fit its parameters."
    )


def not_json(
    name: str, raw: str, error: json.JSONDecodeError, parameters: Mapping[str, Any]
) -> str:
    """The message for arguments sent as text that does not parse as JSON."""
    return (
        f"tool {name!r}: the arguments are not valid JSON ({error.msg} at "
        f"character {error.pos}): {quote(raw, 200)}. {_ask(name, parameters)}"
    )


def not_an_object(name: str, value: Any, parameters: Mapping[str, Any]) -> str:
    """The message for arguments that are JSON, but not an object."""
    return (
        f"tool {name!r}: the arguments must be a JSON object, got {_got(value)}. "
        f"{_ask(name, parameters)}"
    )


def refused(name: str, key: str, error: Exception) -> str:
    """The message for an argument that fits the schema, but that its type refused.

    A dataclass's ``__post_init__`` or a pydantic validator raised, or a float was too large.
    """
    return (
        f"tool {name!r}: argument {key!r} was refused: {error}. "
        f"Call {name} again with a corrected {key!r}."
    )


def _ask(name: str, parameters: Mapping[str, Any]) -> str:
    names = ", ".join(parameters.get("properties", {}))
    holding = f"its arguments by name ({names})" if names else "no arguments ({})"
    return f"Call {name} again with one JSON object holding {holding}."


def _order(error: ValidationError) -> list[str]:
    return [str(part) for part in error.absolute_path]


def problems(errors: Iterable[ValidationError], root: Mapping[str, Any]) -> list[str]:
    """Each validation error as a sentence, in the order of the arguments, without repeats.

    ``root`` is the schema validated against (its ``$defs`` say what a ``$ref`` expects).
    """
    found: list[str] = []
    for error in sorted(errors, key=_order):
        branch = _fitting_branch(error)
        found.extend(problems(branch, root) if branch else [_problem(error, root)])
    return list(dict.fromkeys(found))


def _fitting_branch(error: ValidationError) -> list[ValidationError]:
    """For a failed ``anyOf``: the errors of its one alternative of the value's kind, if one.

    ``Point | None`` given ``{"x": "1"}`` fails because ``x`` is not an integer: that says
    more than "expected an object or null".
    """
    if error.validator not in ("anyOf", "oneOf"):
        return []
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [
        subs
        for subs in branches.values()
        if not any(not s.relative_path and s.validator in ("type", "enum", "const") for s in subs)
    ]
    return fitting[0] if len(fitting) == 1 else []


def _problem(error: ValidationError, root: Mapping[str, Any]) -> str:
    """One validation error as a sentence a model can act on."""
    path, instance = list(error.absolute_path), error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    noun, inside = ("field", f" in argument {_where(path)!r}") if path else ("argument", "")
    if error.validator == "required" and isinstance(instance, Mapping):
        missing = [key for key in schema.get("required", ()) if key not in instance]
        return f"missing required {noun} {', '.join(map(repr, missing))}{inside}"
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        known = list(schema.get("properties", {}))
        unknown = [key for key in instance if key not in known]
        allowed = ", ".join(known) or "none"
        return f"unknown {noun} {', '.join(map(repr, unknown))}{inside} (known: {allowed})"
    label = f"argument {_where(path)!r}" if path else "the arguments"
    if error.validator in ("type", "enum", "const", "anyOf", "oneOf"):
        return f"{label}: expected {_expected(schema, root)}, got {_got(instance)}"
    return f"{label}: {error.message}"


def _expected(schema: Any, root: Mapping[str, Any]) -> str:
    """What a schema asks for, in words: ``an integer or null``, ``one of "a", "b"``."""
    if not isinstance(schema, Mapping):
        return "anything" if schema else "nothing"
    if "$ref" in schema:
        target = root.get("$defs", {}).get(str(schema["$ref"]).rsplit("/", 1)[-1])
        return "an object" if target is None else _expected(target, root)
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(choice) for choice in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " or ".join(dict.fromkeys(_expected(option, root) for option in options))
    kinds = schema.get("type") or []
    words = [_A_KIND.get(kind, kind) for kind in ([kinds] if isinstance(kinds, str) else kinds)]
    if words == ["an object"] and schema.get("properties"):
        words = ["an object with " + ", ".join(schema["properties"])]
    return " or ".join(words) or f"a value fitting {quote(json.dumps(schema), 120)}"


def _got(value: Any) -> str:
    """What arrived: its JSON kind and (shortened) text."""
    if value is None:
        return "null"
    kind = next((word for types, word in _KINDS_OF_VALUES if isinstance(value, types)), "a value")
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"{kind} {text if len(text) <= 80 else text[:80] + '...'}"


_KINDS_OF_VALUES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    (str, "a string"),
    ((int, float), "a number"),
    (Mapping, "an object"),
    (Sequence, "an array"),
)


def _where(path: list[Any]) -> str:
    """A path in the arguments as Python would write it: ``point.x``, ``items[2]``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text
