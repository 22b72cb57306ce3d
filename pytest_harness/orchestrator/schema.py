"""JSON Schema from Python type hints: what a tool's parameters look like to the model.

A tool declares its parameters as a typed Python signature (``parameters_schema`` makes the
schema of its arguments object); the model sees them as a JSON Schema and answers in JSON::

    annotation_schema(int | None)  -> {"anyOf": [{"type": "integer"}, {"type": "null"}]}

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``, ``Optional[X]`` (and
unions of plain JSON types), ``Literal``, ``Enum`` subclasses, ``list`` / ``Sequence`` /
``set`` / ``frozenset`` / ``tuple``, ``dict[str, X]`` / ``Mapping[str, X]``, ``TypedDict``,
dataclasses, pydantic models (recognised by ``model_json_schema``: pydantic is never imported
here), ``NewType`` and ``Annotated[X, "description"]``. Pydantic's own definitions, and
dataclasses or TypedDicts that refer to themselves, go into ``$defs`` at the top of the
schema, referenced as ``#/$defs/Name``. Anything else is a ``TypeError`` saying what to use.

Descriptions come from Google-style docstrings: a dataclass's or TypedDict's ``Attributes:``
section describes its fields; ``Annotated`` text wins over it. Hints and docstrings are read
in ``pytest_harness.orchestrator.declarations``; the model's JSON becomes those types again
in ``pytest_harness.orchestrator.values``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any, Literal, get_args, get_origin

from pytest_harness.orchestrator.declarations import (
    annotated_note,
    check_parameter,
    class_docstring,
    class_hints,
    function_hints,
    is_model,
    is_typeddict,
    required_keys,
    unalias,
)
from pytest_harness.orchestrator.values import ARRAYS, OBJECTS, UNIONS, jsonable, literal_value

__all__ = ["SchemaBuilder", "annotation_schema", "parameters_schema"]

_PRIMITIVES: tuple[tuple[Any, str], ...] = (
    (str, "string"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (type(None), "null"),
    (None, "null"),
)
_SUPPORTED = (
    "use str, int, float, bool, None, Literal[...], an Enum, list/set/tuple/dict[str, ...] of "
    "those, X | None, a TypedDict, a dataclass or a pydantic model"
)


class SchemaBuilder:
    """Builds the schemas of one tool's parameters, collecting what goes into ``$defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, object] = {}  # who defined each name, to catch two "Item"s
        self._open: list[type] = []  # the classes being built, to notice self-reference
        self._looped: set[type] = set()

    def property_schema(
        self, annotation: Any, note: str | None = None, default: Any = dataclasses.MISSING
    ) -> dict[str, Any]:
        """The schema of one property: its type's, with a description and a default.

        The description is the ``Annotated`` text, else ``note`` (from a docstring), else the
        type's own. ``default`` is the parameter's or field's default (``dataclasses.MISSING``
        or ``inspect.Parameter.empty``: none); it is kept only when it has a JSON form.
        """
        schema = dict(self.schema(annotation))
        if note and not annotated_note(annotation):
            schema["description"] = note
        if default is not inspect.Parameter.empty and default is not dataclasses.MISSING:
            # Without a JSON form (an object, NaN) the model is just not told the default.
            with contextlib.suppress(TypeError, ValueError):
                schema["default"] = json.loads(json.dumps(jsonable(default, _refuse)))
        return schema

    def schema(self, annotation: Any) -> dict[str, Any]:
        """The JSON Schema of one annotation (TypeError when it has none)."""
        annotation = unalias(annotation)
        origin, args = get_origin(annotation), get_args(annotation)
        if origin is Annotated:
            inner, note = self.schema(args[0]), annotated_note(annotation)
            return {**inner, "description": note} if note else inner
        if annotation is Any:
            return {}
        for kind, name in _PRIMITIVES:
            if annotation is kind:
                return {"type": name}
        if origin is Literal:
            return _enum_schema(args)
        if origin in UNIONS:
            return self._union(args)
        if origin is tuple or annotation is tuple:
            return self._tuple(args if origin is tuple else (Any, ...))
        if (origin or annotation) in ARRAYS:
            return self._array(ARRAYS[origin or annotation], args)
        if (origin or annotation) in OBJECTS:
            return self._mapping(args)
        if isinstance(annotation, type):
            return self._class(annotation)
        raise TypeError(f"{_show(annotation)} has no JSON form: {_SUPPORTED}")

    def _union(self, args: tuple[Any, ...]) -> dict[str, Any]:
        members = [member for member in args if member is not type(None)]
        if len(members) > 1 and not all(_plain(member) for member in members):
            shown = " | ".join(_show(member) for member in members)
            raise TypeError(
                f"{shown} is ambiguous in JSON: a union may only mix str, int, float, bool and "
                "Literal (plus None); use one dataclass or pydantic model with optional fields"
            )
        schemas = [self.schema(member) for member in members]
        if len(members) < len(args):
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}

    def _tuple(self, args: tuple[Any, ...]) -> dict[str, Any]:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.schema(args[0])}
        fixed = [] if args in ((), ((),)) else [self.schema(arg) for arg in args]
        if not fixed:
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": fixed,
            "minItems": len(fixed),
            "maxItems": len(fixed),
        }

    def _array(self, kind: type, args: tuple[Any, ...]) -> dict[str, Any]:
        schema = {"type": "array", "items": self.schema(args[0] if args else Any)}
        return {**schema, "uniqueItems": True} if kind in (set, frozenset) else schema

    def _mapping(self, args: tuple[Any, ...]) -> dict[str, Any]:
        key, value = args or (str, Any)
        if unalias(key) is not str:
            raise TypeError(
                f"JSON object keys are strings: use dict[str, ...], not {_show(key)} keys"
            )
        return {"type": "object", "additionalProperties": self.schema(value)}

    def _class(self, cls: type) -> dict[str, Any]:
        if issubclass(cls, Enum):
            return _enum_schema(tuple(cls))
        if is_model(cls):
            return self._model(cls)
        if not (dataclasses.is_dataclass(cls) or is_typeddict(cls)):
            raise TypeError(f"{_show(cls)} has no JSON form: {_SUPPORTED}")
        if cls in self._open:  # it refers to itself: the schema goes into $defs
            self._looped.add(cls)
            self._own(cls.__name__, cls)
            return {"$ref": f"#/$defs/{cls.__name__}"}
        self._open.append(cls)
        try:
            schema = self._dataclass(cls) if dataclasses.is_dataclass(cls) else self._typeddict(cls)
        finally:
            self._open.pop()
        if cls not in self._looped:
            return schema
        self.defs[cls.__name__] = schema
        return {"$ref": f"#/$defs/{cls.__name__}"}

    def _dataclass(self, cls: type) -> dict[str, Any]:
        hints, (summary, notes) = class_hints(cls), class_docstring(cls)
        properties, required = {}, []
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            default = field.default
            properties[field.name] = self.property_schema(
                hints[field.name], notes.get(field.name), default
            )
            if default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                required.append(field.name)
        return _object(properties, required, summary)

    def _typeddict(self, cls: type) -> dict[str, Any]:
        hints, (summary, notes) = class_hints(cls), class_docstring(cls)
        properties = {
            key: self.property_schema(hint, notes.get(key)) for key, hint in hints.items()
        }
        return _object(properties, required_keys(cls, hints), summary)

    def _model(self, cls: type) -> dict[str, Any]:
        schema = dict(getattr(cls, "model_json_schema")())  # noqa: B009 (a duck-typed call)
        for name, definition in schema.pop("$defs", {}).items():
            self._own(name, json.dumps(definition, sort_keys=True))
            self.defs[name] = definition
        return schema

    def _own(self, name: str, owner: object) -> None:
        if self._owners.setdefault(name, owner) != owner:
            raise TypeError(
                f"two different types are named {name!r} in one tool's parameters, and JSON "
                "Schema $defs need unique names: rename one of them"
            )


def annotation_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation, with its ``$defs`` (if any) at its top."""
    builder = SchemaBuilder()
    schema = builder.schema(annotation)
    return {**schema, "$defs": builder.defs} if builder.defs else schema


def parameters_schema(
    function: Callable[..., Any], name: str, notes: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of tool ``name``'s arguments object, and each parameter's type.

    ``notes`` describe the parameters by name (the docstring's ``Args:`` entries). A
    parameter no model can send, or without a type hint or one with no JSON form, is a
    ``TypeError`` naming it.
    """
    hints, builder = function_hints(function, name), SchemaBuilder()
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        key = parameter.name
        if key == "self":
            continue
        check_parameter(parameter, name)
        if key not in hints:
            raise TypeError(
                f"tool {name!r}: parameter {key!r} has no type hint; tools need types so the "
                f"model knows what to send: annotate it (for example `{key}: str`)"
            )
        try:
            properties[key] = builder.property_schema(hints[key], notes.get(key), parameter.default)
        except TypeError as error:
            raise TypeError(
                f"tool {name!r}: parameter {key!r} ({_show(hints[key])}): {error}"
            ) from None
        if parameter.default is parameter.empty:
            required.append(key)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if builder.defs:
        schema["$defs"] = builder.defs
    return schema, {key: hints[key] for key in properties}


def _object(properties: dict[str, Any], required: list[str], description: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": description} if description else {}
    return {
        **schema,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _enum_schema(values: tuple[Any, ...]) -> dict[str, Any]:
    if not values:
        raise TypeError("an Enum without members accepts no value: give it members")
    choices = [literal_value(value) for value in values]
    kinds = list(dict.fromkeys(_json_type(choice) for choice in choices))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": choices}


def _json_type(value: Any) -> str:
    return next(name for kind, name in _PRIMITIVES if kind is not None and type(value) is kind)


def _plain(annotation: Any) -> bool:
    annotation = unalias(annotation)
    if get_origin(annotation) is Annotated:
        return _plain(get_args(annotation)[0])
    if get_origin(annotation) is Literal:
        return all(isinstance(arg, (str, int, float)) for arg in get_args(annotation))
    return annotation in (str, int, float, bool, Any)


def _refuse(value: Any) -> Any:
    raise TypeError(f"{value!r} has no JSON form")


def _show(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")
