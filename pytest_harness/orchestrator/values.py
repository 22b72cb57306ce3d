"""JSON values into the Python types a tool's hints name, and Python values back into JSON.

The model sends JSON; a tool's function takes typed Python values. ``convert`` reads a JSON
value, already checked against the type's schema, as the annotated type::

    convert(Point, {"x": 1, "y": 2})    -> Point(x=1, y=2)
    convert(set[Color], ["red"])        -> {Color.RED}

``jsonable`` goes the other way, for what a tool returns (``tools.render``) and for the
defaults a schema shows. ``ARRAYS``, ``OBJECTS`` and ``UNIONS`` say which annotations are
JSON arrays, objects and unions, here and in ``pytest_harness.orchestrator.schema``.
"""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import (
    Callable,
    Mapping,
    MutableMapping,
    MutableSequence,
    MutableSet,
    Sequence,
    Set,
)
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pytest_harness.orchestrator.declarations import class_hints, is_model, is_typeddict, unalias

__all__ = [
    "ARRAYS",
    "OBJECTS",
    "UNIONS",
    "convert",
    "jsonable",
    "literal_value",
]

# Each annotation (or its origin) read as a JSON array, and the Python type it is built as.
ARRAYS: dict[Any, type] = {
    **dict.fromkeys((list, Sequence, MutableSequence), list),
    **dict.fromkeys((set, MutableSet), set),
    **dict.fromkeys((frozenset, Set), frozenset),
}
OBJECTS = (dict, Mapping, MutableMapping)  # annotations (or origins) read as a JSON object
UNIONS = (Union, types.UnionType)  # the origins of Optional[X], Union[X, Y] and X | Y


def convert(annotation: Any, value: Any) -> Any:
    """A JSON value (already checked against the annotation's schema) as the annotated type."""
    annotation = unalias(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return convert(args[0], value)
    if value is None or annotation is Any or annotation is bool or annotation is str:
        return value
    if annotation in (int, float):
        return annotation(value)
    if origin is Literal:
        return next((arg for arg in args if _same_json(literal_value(arg), value)), value)
    if origin in UNIONS:
        members = [member for member in args if member is not type(None)]
        return convert(members[0], value) if len(members) == 1 else _plain_union(members, value)
    if origin is tuple or annotation is tuple:
        args = args if origin is tuple else (Any, ...)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(args[0], item) for item in value)
        return tuple(convert(arg, item) for arg, item in zip(args, value, strict=True))
    if (origin or annotation) in ARRAYS:
        item = args[0] if args else Any
        return ARRAYS[origin or annotation](convert(item, each) for each in value)
    if (origin or annotation) in OBJECTS:
        item = args[1] if args else Any
        return {key: convert(item, each) for key, each in value.items()}
    if isinstance(annotation, type):
        return _convert_class(annotation, value)
    return value


def _convert_class(cls: type, value: Any) -> Any:
    if issubclass(cls, Enum):
        return cls(value)
    if is_model(cls):
        return getattr(cls, "model_validate")(value)  # noqa: B009 (a duck-typed call)
    if dataclasses.is_dataclass(cls) or is_typeddict(cls):
        hints = class_hints(cls)
        fields = {key: convert(hints.get(key, Any), each) for key, each in value.items()}
        return cls(**fields)
    return value


def _plain_union(members: list[Any], value: Any) -> Any:
    """A value of a union of plain types: as is, but a JSON integer is a float for ``float``."""
    plain = [unalias(member) for member in members]
    if type(value) is int and int not in plain and float in plain:
        return float(value)
    return value


def _same_json(expected: Any, value: Any) -> bool:
    """Equal as JSON values (``True`` is not ``1``)."""
    return bool(expected == value and isinstance(expected, bool) == isinstance(value, bool))


def jsonable(value: Any, fallback: Callable[[Any], Any] = str) -> Any:
    """``value`` as plain JSON data: dicts, lists, str, int, float, bool and None.

    Enums give their value, dataclasses a dict of their fields (as ``dataclasses.asdict``,
    with each value converted in turn), pydantic models ``model_dump(mode="json")``, tuples
    and sets a list (sets sorted where they can be), dates their ISO form; anything else
    is ``fallback(value)``.
    """
    if isinstance(value, Enum):
        return jsonable(value.value, fallback)
    if value is None or isinstance(value, (str, int, float)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: jsonable(getattr(value, f.name), fallback) for f in dataclasses.fields(value)
        }
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if isinstance(value, Mapping):
        return {_key(key): jsonable(item, fallback) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item, fallback) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(item, fallback) for item in value]
        try:
            return sorted(items)
        except TypeError:  # mixed kinds: any fixed order will do
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    isoformat = getattr(value, "isoformat", None)  # datetime, date, time
    return isoformat() if callable(isoformat) else fallback(value)


def _key(key: Any) -> Any:
    if isinstance(key, Enum):
        key = key.value
    return key if key is None or isinstance(key, (str, int, float)) else str(key)


def literal_value(value: Any) -> Any:
    """A ``Literal`` argument or Enum member as its JSON scalar (TypeError when it has none)."""
    plain = value.value if isinstance(value, Enum) else value
    if plain is not None and not isinstance(plain, (str, int, float)):
        raise TypeError(f"{value!r} has no JSON form: Literal and Enum values must be JSON scalars")
    return plain
