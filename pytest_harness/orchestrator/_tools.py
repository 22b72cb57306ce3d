"""Typed Python functions as tools for a tool-calling agent loop.

``@tool`` reads a function's signature, type hints and Google-style docstring once, when it
decorates it, into a ``Tool``: a name, a description and the JSON Schema of the arguments
(``spec()`` is the OpenAI tool definition; ``_schema`` makes it with pydantic).
``arguments()`` checks the model's JSON against that schema with jsonschema and converts it
with pydantic into the values the function takes; ``render()`` turns what it returned into
the text sent back to the model.

Two kinds of error:

- a function no tool can be made of (a parameter without a type hint, ``*args``, a type with
  no JSON form) is a ``TypeError`` at decoration time, naming the parameter;
- arguments the model got wrong are a ``ToolArgumentError`` (a ``ValueError``), its message
  written for the model: it names the tool, each wrong argument and its place, what was
  expected and what arrived, so the loop can send it back as the tool's result.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, overload

import jsonschema
from jsonschema import ValidationError

from pytest_harness._aio import in_daemon_thread
from pytest_harness._recorded_tools import is_recorded, ran_live
from pytest_harness._recorded_tools import recorded as recorded_tool
from pytest_harness.errors import ToolArgumentError, quote
from pytest_harness.orchestrator._schema import (
    converter,
    jsonable,
    parameters_schema,
    parse_docstring,
    unwrap,
)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the OpenAI API accepts as a tool name


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Tool:
    """A function the model may call, and the JSON Schema of its arguments.

    Made by ``@tool``. Built by hand (for a hand-written schema), ``arguments()`` checks the
    JSON but converts only the parameters named in ``hints``.

    Attributes:
        name: what the model calls it (1 to 64 letters, digits, ``_`` or ``-``).
        description: what it does, for the model ("" when nothing says).
        parameters: the JSON Schema of its arguments object.
        function: the function it runs.
        timeout: seconds one call may take; None: the loop's default.
        hints: the Python type of each parameter, to convert the JSON values into.
        recorded: its calls are recorded in the running test's cassette and replayed from
            it, the function not called in replay (``harness.recorded``): ``function`` is
            then wrapped so (its ``__wrapped__`` the function given). True as well when the
            function given is such a wrapper.
        is_async: whether ``function`` is a coroutine function (worked out, not given).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    timeout: float | None = None
    hints: Mapping[str, Any] = field(default_factory=dict, repr=False)
    recorded: bool = False
    is_async: bool = field(init=False)
    _checker: jsonschema.protocols.Validator = field(init=False, repr=False)
    _converter: Any = field(init=False, repr=False)  # pydantic's, made at the first call

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} is not one a model API accepts: use 1 to 64 letters, "
                "digits, '_' or '-' (pass name=... to @tool)"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(
                f"tool {self.name!r}: timeout must be a positive number of seconds or None, "
                f"got {self.timeout!r}"
            )
        if self.recorded or is_recorded(self.function):  # named as the tool, for the trajectory
            object.__setattr__(self, "function", recorded_tool(self.function, name=self.name))
            object.__setattr__(self, "recorded", True)
        object.__setattr__(self, "is_async", _is_async(self.function))
        object.__setattr__(self, "_checker", _validator(self.name, self.parameters))
        object.__setattr__(self, "_converter", None)

    def spec(self) -> dict[str, Any]:
        """The OpenAI tool definition: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def arguments(self, raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """The model's arguments, checked against ``parameters`` and converted for the function.

        Args:
            raw: the arguments as JSON text, or already parsed; None, blank text or JSON
                ``null`` mean no arguments.

        Returns:
            Keyword arguments for ``await tool(**arguments)``: dataclasses, TypedDicts,
            pydantic models, Enums, tuples and sets built from their JSON values. A parameter
            the model left out is left out (the function's default applies).

        Raises:
            ToolArgumentError: the text is not JSON, or the JSON does not fit the schema.
        """
        values = self._parse(raw)
        found = problems(self._checker.iter_errors(values), self.parameters)
        if found:
            raise ToolArgumentError(wrong_arguments(self.name, found))
        return self._convert(values)

    async def __call__(self, **arguments: Any) -> Any:
        """Run the function: awaited if async, else in a daemon thread of its own.

        One thread per call, not a pool: a batch of sync tools runs at once rather than in
        waves, and a call that hangs past its timeout never holds the process or the pytest
        session at exit (see ``_aio.in_daemon_thread``); what it returns late is dropped.

        In replay, a tool that is not ``recorded`` is noted as run live (the reports list
        it), unless it is one of the harness's own (``question``, ``delegate``).
        """
        if not self.recorded and not _own(self.function):
            ran_live(
                f"tool {self.name} (an orchestrator tool, not recorded: "
                "@tool(recorded=True) replays it)"
            )
        if self.is_async:
            return await self.function(**arguments)
        call = functools.partial(self.function, **arguments)
        result = await in_daemon_thread(call, name=f"harness-tool {self.name}")
        return await result if inspect.isawaitable(result) else result

    def _parse(self, raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
        value: Any = raw
        if isinstance(raw, str):
            try:
                value = json.loads(raw) if raw.strip() else None
            except json.JSONDecodeError as error:
                raise ToolArgumentError(not_json(self.name, raw, error, self.parameters)) from None
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ToolArgumentError(not_an_object(self.name, value, self.parameters))
        return dict(value)

    def _convert(self, values: dict[str, Any]) -> dict[str, Any]:
        if not self.hints:
            return values
        if self._converter is None:  # many tools are made, few called: made when first needed
            object.__setattr__(self, "_converter", converter(self.hints))
        typed = {key: value for key, value in values.items() if key in self.hints}
        try:
            converted = self._converter.validate_python(typed)
        # pydantic's ValidationError (a ValueError): the type's own checks (__post_init__,
        # validators) refused a value that fits the schema; or __post_init__ raised another.
        except (TypeError, ValueError, ArithmeticError) as error:
            raise ToolArgumentError(refused(self.name, error)) from None
        return {key: converted.get(key, value) for key, value in values.items()}


@overload
def tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    recorded: bool | None = None,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    recorded: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    recorded: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a typed function a ``Tool``: ``@tool``, ``@tool(name=..., timeout=5)`` or ``tool(f)``.

    The decorated name becomes the ``Tool``; ``Tool.function`` is the original function (with
    ``recorded=True``, the wrapper that records it; a function ``harness.recorded`` wrapped
    is recorded as well).

    Args:
        function: the function (given when used bare or called directly).
        name: the tool's name; default the function's ``__name__``.
        description: what the tool does; default the docstring's summary (the text before
            its first section such as ``Args:``), else "".
        timeout: seconds one call may take; default None, the loop's default.
        recorded: record its calls in the running test's cassette and replay them: in
            replay the function is not called (``harness.recorded`` says how); default
            False (over a ``Tool``: as it was).

    Raises:
        TypeError: a parameter has no type hint or a type with no JSON form, or the function
            takes ``*args`` / ``**kwargs`` or positional-only parameters.
    """

    def make(target: Callable[..., Any]) -> Tool:
        return _make(target, name=name, description=description, timeout=timeout, recorded=recorded)

    return make if function is None else make(function)


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    """A ``Tool`` as it is, or a plain function made one with ``tool()``."""
    if isinstance(value, Tool):
        return value
    if callable(value):
        return tool(value)
    raise TypeError(f"a tool is a function or a Tool, got {value!r} (type={type(value).__name__})")


def render(value: Any) -> str:
    """A tool's return value as the text sent back to the model.

    A ``str`` is sent as it is. ``None`` is ``"null"`` (so the model reads that the tool
    returned nothing, rather than an empty message some providers refuse). Numbers, bools,
    Enums (their value), dicts, lists, tuples, sets, dataclasses and pydantic models are
    compact JSON (``ensure_ascii=False``; dates inside them in ISO form); anything else is
    ``str(value)``, also inside containers.
    """
    if isinstance(value, str) and not isinstance(value, Enum):
        return value
    if not _structured(value):
        return str(value)
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))


def _make(
    function: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    timeout: float | None,
    recorded: bool | None = None,
) -> Tool:
    if isinstance(function, Tool):  # @tool(...) over a Tool: only the overrides change
        return dataclasses.replace(
            function,
            name=name or function.name,
            description=function.description if description is None else description,
            timeout=function.timeout if timeout is None else timeout,
            recorded=function.recorded if recorded is None else recorded,
        )
    if not callable(function):
        raise TypeError(f"@tool decorates a function, got {function!r}")
    tool_name = str(name or getattr(function, "__name__", None) or type(function).__name__)
    summary, notes = parse_docstring(inspect.getdoc(unwrap(function)))
    parameters, hints = parameters_schema(function, tool_name, notes)
    return Tool(
        name=tool_name,
        description=summary if description is None else description,
        parameters=parameters,
        function=function,
        timeout=timeout,
        hints=hints,
        recorded=bool(recorded),
    )


def _own(function: Callable[..., Any]) -> bool:
    """Whether the tool is one of the harness's own (``question``, ``delegate``): it runs the
    test's callback or a child run, whose model calls replay on their own."""
    return str(getattr(function, "__module__", "")).startswith(__package__ or "-")


def _is_async(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 (an object with async __call__)
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _validator(name: str, parameters: dict[str, Any]) -> jsonschema.protocols.Validator:
    checker = jsonschema.validators.validator_for(
        parameters, default=jsonschema.Draft202012Validator
    )
    try:
        checker.check_schema(parameters)
    except jsonschema.SchemaError as bad:
        raise ValueError(
            f"tool {name!r}: its parameters are not a valid JSON Schema: {bad.message}"
        ) from None
    return checker(parameters)


def _structured(value: Any) -> bool:
    """Whether ``render`` writes ``value`` as JSON (rather than ``str(value)``)."""
    if value is None or isinstance(value, (bool, int, float, Enum, Mapping, list, tuple)):
        return True
    if isinstance(value, (set, frozenset)):
        return True
    if isinstance(value, type):
        return False
    return dataclasses.is_dataclass(value) or callable(getattr(value, "model_dump", None))


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


def refused(name: str, error: Exception) -> str:
    """The message for arguments that fit the schema, but that their types refused.

    A dataclass's ``__post_init__`` or a pydantic validator raised: pydantic's
    ``ValidationError`` says where each refusal is; another error is about the arguments.
    """
    from pydantic import ValidationError as Refusals  # loaded: the converter is pydantic's

    errors = error.errors(include_url=False) if isinstance(error, Refusals) else []
    found = [(_where(list(each["loc"])), _reason(each)) for each in errors]
    keys = list(dict.fromkeys(str(each["loc"][0]) for each in errors if each["loc"]))
    if not found or not keys:
        return (
            f"tool {name!r}: the arguments were refused: {error}. "
            f"Call {name} again with corrected arguments."
        )
    said = [f"argument {where!r} was refused: {reason}" for where, reason in found]
    return (
        f"tool {name!r}: {'; '.join(said[:_MAX_PROBLEMS])}. "
        f"Call {name} again with a corrected {', '.join(map(repr, keys))}."
    )


def _reason(error: Mapping[str, Any]) -> str:
    """What one of pydantic's errors says: the raised error's own text, when there is one."""
    raised = error.get("ctx", {}).get("error")
    return str(raised) if raised is not None else str(error["msg"])


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
