"""Typed Python functions as tools for a tool-calling agent loop.

``@tool`` reads a function's signature, type hints and Google-style docstring once, when it
decorates it, into a ``Tool``: a name, a description and the JSON Schema of the arguments
(``spec()`` is the OpenAI tool definition). When the model calls the tool, ``arguments()``
reads the JSON it sent, checks it against the schema and converts it into the Python values
the function takes; ``await tool(**arguments)`` runs the function (a sync one in a daemon
thread of its own); ``render()`` turns what it returned into the text sent back to the model.

Two kinds of error:

- a function no tool can be made of (a parameter without a type hint, ``*args``, a type with
  no JSON form) is a ``TypeError`` at decoration time, naming the parameter;
- arguments the model got wrong are a ``ToolArgumentError`` (a ``ValueError``), its message
  written for the model: it names the tool, each wrong argument, what was expected and what
  arrived, so the loop can send it back as the tool's result and let the model try again.

The pieces live beside this module, in ``pytest_harness.orchestrator``: ``declarations``
reads the hints and docstrings, ``schema`` maps the types onto JSON Schema, ``values``
turns JSON values into those types (and return values into JSON), and ``argument_errors``
words what was wrong with the arguments.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, overload

import jsonschema

from pytest_harness._aio import in_daemon_thread
from pytest_harness.orchestrator.argument_errors import (
    not_an_object,
    not_json,
    problems,
    refused,
    wrong_arguments,
)
from pytest_harness.orchestrator.declarations import parse_docstring, unwrap
from pytest_harness.orchestrator.schema import parameters_schema
from pytest_harness.orchestrator.values import convert, jsonable

__all__ = ["Tool", "ToolArgumentError", "as_tool", "render", "tool"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the OpenAI API accepts as a tool name


class ToolArgumentError(ValueError):
    """The arguments a model sent for a tool are not JSON, or do not fit the tool.

    The message is written for the model, to be sent back as the tool's result: it names the
    tool and every problem, and asks for the call again.
    """


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
        is_async: whether ``function`` is a coroutine function (worked out, not given).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    timeout: float | None = None
    hints: Mapping[str, Any] = field(default_factory=dict, repr=False)
    is_async: bool = field(init=False)
    _validator: jsonschema.protocols.Validator = field(init=False, repr=False)

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
        object.__setattr__(self, "is_async", _is_async(self.function))
        object.__setattr__(self, "_validator", _validator(self.name, self.parameters))

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
        found = problems(self._validator.iter_errors(values), self.parameters)
        if found:
            raise ToolArgumentError(wrong_arguments(self.name, found))
        return {key: self._convert(key, value) for key, value in values.items()}

    async def __call__(self, **arguments: Any) -> Any:
        """Run the function: awaited if async, else in a daemon thread of its own.

        One thread per call, not a pool: a batch of sync tools runs at once rather than in
        waves, and a call that hangs past its timeout never holds the process or the pytest
        session at exit (see ``_aio.in_daemon_thread``); what it returns late is dropped.
        """
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

    def _convert(self, key: str, value: Any) -> Any:
        if key not in self.hints:
            return value
        try:
            return convert(self.hints[key], value)
        # The type's own checks (__post_init__, pydantic validators), or a float too large.
        except (TypeError, ValueError, ArithmeticError) as error:
            raise ToolArgumentError(refused(self.name, key, error)) from None


@overload
def tool(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a typed function a ``Tool``: ``@tool``, ``@tool(name=..., timeout=5)`` or ``tool(f)``.

    The decorated name becomes the ``Tool``; ``Tool.function`` is the original function.

    Args:
        function: the function (given when used bare or called directly).
        name: the tool's name; default the function's ``__name__``.
        description: what the tool does; default the docstring's summary (the text before
            its first section such as ``Args:``), else "".
        timeout: seconds one call may take; default None, the loop's default.

    Raises:
        TypeError: a parameter has no type hint or a type with no JSON form, or the function
            takes ``*args`` / ``**kwargs`` or positional-only parameters.
    """

    def make(target: Callable[..., Any]) -> Tool:
        return _make(target, name=name, description=description, timeout=timeout)

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
) -> Tool:
    if isinstance(function, Tool):  # @tool(...) over a Tool: only the overrides change
        return dataclasses.replace(
            function,
            name=name or function.name,
            description=function.description if description is None else description,
            timeout=function.timeout if timeout is None else timeout,
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
    )


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
