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
section describes its fields; ``Annotated`` text wins over it. Hints and docstrings are
read here once, when ``@tool`` runs; the model's JSON becomes those types again here too
(``convert``), and a tool's return value JSON (``jsonable``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import re
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
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

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


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Attributes|Keyword Args|Keyword Arguments|"
    r"Other Parameters|Returns?|Yields?|Raises|Exceptions|Examples?|Notes?|Warnings?|Warns|"
    r"See Also|Todo|References|Methods):\s*$"
)
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_ENTRY_SECTIONS = ("Args", "Arguments", "Parameters", "Params", "Attributes")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's summary and the text of each ``Args:`` entry by name.

    The summary is the text before the first section header (``Args:``, ``Returns:``, ...).
    An entry is ``name: text`` or ``name (type): text``; lines indented further continue it
    and are joined with spaces. ``Attributes:`` entries count as well (for classes).
    """
    summary: list[str] = []
    notes: dict[str, str] = {}
    section: str | None = None
    indent: int | None = None  # the indentation of the section's entries
    current: str | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        text, depth = line.strip(), len(line) - len(line.lstrip())
        header = _SECTION.match(line)
        if header:
            section, indent, current = header.group(1), None, None
        elif section is None:
            summary.append(line)
        elif section in _ENTRY_SECTIONS and text:
            indent = depth if indent is None else indent
            entry = _ENTRY.match(text) if depth == indent else None
            if entry:
                current = entry.group(1)
                notes[current] = entry.group(2).strip()
            elif current is not None and depth > indent:
                notes[current] = f"{notes[current]} {text}".strip()
    return "\n".join(summary).strip(), notes


def class_docstring(cls: type) -> tuple[str, dict[str, str]]:
    """``parse_docstring`` of the class's own docstring: its summary and ``Attributes:``."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{cls.__name__}("):
        return "", {}  # none, or the signature dataclasses write when there is none
    return parse_docstring(doc)


def unwrap(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function behind a ``functools.partial`` (its docstring and hints are the ones)."""
    while isinstance(function, functools.partial):
        function = function.func
    return function


def function_hints(function: Callable[..., Any], name: str) -> dict[str, Any]:
    """The type hints of tool ``name``'s function (or of a callable object's ``__call__``)."""
    target = unwrap(function)
    if not inspect.isroutine(target):
        target = type(target).__call__  # an object with a __call__ method
    try:
        return get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as error:
        raise TypeError(
            f"tool {name!r}: cannot read its type hints: {error}; a hint may name only what the "
            "function's module defines or imports (not types local to a function, nor imported "
            "under `if TYPE_CHECKING:`)"
        ) from None


def check_parameter(parameter: inspect.Parameter, name: str) -> None:
    """TypeError unless a model can send ``parameter`` of tool ``name`` as a keyword argument."""
    if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
        stars = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
        raise TypeError(
            f"tool {name!r}: tools take named parameters, and {stars}{parameter.name} takes any "
            "number: "
            "declare each argument the model may send as its own typed parameter"
        )
    if parameter.kind is parameter.POSITIONAL_ONLY:
        raise TypeError(
            f"tool {name!r}: parameter {parameter.name!r} is positional-only, but tools are "
            "called with keyword arguments: remove the '/' from the signature"
        )


_CLASS_HINTS: dict[type, dict[str, Any]] = {}


def class_hints(cls: type) -> dict[str, Any]:
    """A dataclass's or TypedDict's field types, read once per class (every call converts)."""
    if cls not in _CLASS_HINTS:
        try:
            hints = get_type_hints(cls, include_extras=True)
        except NameError as error:
            raise TypeError(
                f"cannot read the field types of {cls.__qualname__}: {error}; a field's type "
                "may name only what the class's module defines or imports"
            ) from None
        _CLASS_HINTS[cls] = hints
    return _CLASS_HINTS[cls]


def required_keys(cls: type, hints: Mapping[str, Any]) -> list[str]:
    """The keys a TypedDict requires.

    Its ``__required_keys__`` is wrong under ``from __future__ import annotations`` (the
    class saw ``"NotRequired[int]"`` as a string), so a resolved ``Required`` or
    ``NotRequired`` hint decides first.
    """
    declared: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    required = []
    for key, hint in hints.items():
        while get_origin(hint) is Annotated or _origin_name(hint) == "ReadOnly":
            hint = get_args(hint)[0]
        said = _origin_name(hint)
        if said == "Required" or (said != "NotRequired" and key in declared):
            required.append(key)
    return required


def annotated_note(annotation: Any) -> str | None:
    """The first text in ``Annotated[X, ...]`` metadata: a description of what X means."""
    annotation = unalias(annotation)
    if get_origin(annotation) is not Annotated:
        return None
    return next((note for note in get_args(annotation)[1:] if isinstance(note, str)), None)


def is_model(cls: type) -> bool:
    """Whether ``cls`` is a pydantic model (it has ``model_json_schema`` and ``model_validate``)."""
    return callable(getattr(cls, "model_json_schema", None)) and callable(
        getattr(cls, "model_validate", None)
    )


def is_typeddict(cls: type) -> bool:
    """Whether ``cls`` is a TypedDict (duck-typed, so typing_extensions' TypedDicts count too)."""
    return issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def unalias(annotation: Any) -> Any:
    """The type behind a ``NewType``, a ``type X = ...`` alias (3.12+), or a TypedDict key's
    ``Required[X]`` / ``NotRequired[X]`` / ``ReadOnly[X]``."""
    while True:
        if type(annotation).__name__ == "TypeAliasType":
            annotation = annotation.__value__
        elif callable(annotation) and hasattr(annotation, "__supertype__"):
            annotation = annotation.__supertype__
        elif _origin_name(annotation) in ("Required", "NotRequired", "ReadOnly"):
            annotation = get_args(annotation)[0]
        else:
            return annotation


def _origin_name(annotation: Any) -> str:
    """``"NotRequired"`` for ``NotRequired[int]``, from typing or typing_extensions alike."""
    return repr(get_origin(annotation)).rsplit(".", 1)[-1]


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
