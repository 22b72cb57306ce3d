"""A tool's parameters as JSON Schema, and the model's JSON as the function's types, on pydantic.

The parameters become one TypedDict; pydantic's ``TypeAdapter`` gives its JSON Schema (the
model sees it, without titles) and validates the model's arguments into the declared types in
lax mode (dataclasses, TypedDicts, Enums, pydantic models, tuples and sets from their JSON).
Descriptions come from Google-style docstrings, read here (``Args:`` for parameters,
``Attributes:`` for dataclass and TypedDict fields); ``Annotated[X, "text"]`` wins over them.
pydantic is imported when a tool is made, not with this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

_SUPPORTED = (
    "use str, int, float, bool, None, Literal[...], an Enum, list/set/tuple/dict[str, ...] of "
    "those, X | None, a TypedDict, a dataclass or a pydantic model"
)
_ANNOTATED: Any = Annotated  # subscripted at run time with types made there
_DATA = frozenset({"default", "enum", "const", "examples"})  # keywords whose values are data


def parameters_schema(
    function: Callable[..., Any], name: str, notes: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON Schema of tool ``name``'s arguments object, and each parameter's type.

    ``notes`` describe the parameters by name (the docstring's ``Args:`` entries). A
    parameter no model can send, or without a type hint or one with no JSON form, is a
    ``TypeError`` naming it.
    """
    hints = function_hints(function, name)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name != "self":
            fields[parameter.name] = _field(parameter, hints, name, notes)
    try:
        made = json_schema(arguments_type(name, fields))
    except Exception as error:  # pydantic's PydanticUserError, or a field's hint unresolved
        raise _no_json_form(name, fields, hints) or error from None
    schema = {
        "type": "object",
        "properties": made.get("properties", {}),
        "required": made.get("required", []),  # providers want the list, empty or not
        "additionalProperties": False,
    }
    if "$defs" in made:
        schema["$defs"] = made["$defs"]
    return schema, {key: hints[key] for key in fields}


def _field(
    parameter: inspect.Parameter, hints: Mapping[str, Any], name: str, notes: Mapping[str, str]
) -> Any:
    """The TypedDict field of one parameter: its type, description and JSON default."""
    key = parameter.name
    check_parameter(parameter, name)
    if key not in hints:
        raise TypeError(
            f"tool {name!r}: parameter {key!r} has no type hint; tools need types so the "
            f"model knows what to send: annotate it (for example `{key}: str`)"
        )
    from pydantic import Field
    from typing_extensions import NotRequired

    extra: dict[str, Any] = {}
    if parameter.default is not parameter.empty:
        # Without a JSON form (an object, NaN) the model is just not told the default.
        with contextlib.suppress(TypeError, ValueError):
            extra["default"] = json.loads(json.dumps(jsonable(parameter.default, _refuse)))
    note = annotated_note(hints[key]) or notes.get(key)
    field = _ANNOTATED[described(hints[key]), Field(description=note, json_schema_extra=extra)]
    return field if parameter.default is parameter.empty else NotRequired[field]


def arguments_type(name: str, fields: Mapping[str, Any]) -> Any:
    """A TypedDict of a tool's arguments, refusing keys (and nested fields) it does not name."""
    from pydantic import ConfigDict
    from typing_extensions import TypedDict

    typed_dict: Any = TypedDict  # a class made at run time, which type checkers cannot follow
    made = typed_dict(name, dict(fields))
    made.__pydantic_config__ = ConfigDict(extra="forbid")
    return made


def converter(hints: Mapping[str, Any]) -> Any:
    """pydantic's validator of arguments into ``hints``' types (each of them optional)."""
    from pydantic import TypeAdapter
    from typing_extensions import NotRequired

    return TypeAdapter(arguments_type("arguments", {k: NotRequired[v] for k, v in hints.items()}))


def json_schema(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of an annotation as pydantic makes it, without titles (``tidy``)."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = tidy(
        TypeAdapter(annotation).json_schema(schema_generator=_generator())
    )
    return schema


@functools.cache
def _generator() -> Any:
    """pydantic's JSON Schema generator, describing dataclasses and TypedDicts by docstring."""
    from pydantic.json_schema import GenerateJsonSchema

    class Generator(GenerateJsonSchema):
        def sort(self, value: Any, parent_key: str | None = None) -> Any:
            return value  # in the order it is made, as recorded requests have it (see tidy)

        def dataclass_schema(self, schema: Any) -> Any:
            return documented(super().dataclass_schema(schema), schema["cls"])

        def typed_dict_schema(self, schema: Any) -> Any:
            return documented(super().typed_dict_schema(schema), schema.get("cls"))

    return Generator


def documented(schema: dict[str, Any], cls: type | None) -> dict[str, Any]:
    """A class's schema described by its docstring's summary and ``Attributes:`` entries."""
    summary, notes = class_docstring(cls) if cls is not None else ("", {})
    schema.pop("description", None)  # pydantic's is the whole docstring
    if summary:
        schema["description"] = summary
    hints: dict[str, Any] = {}
    with contextlib.suppress(NameError, TypeError):  # pydantic read them: it says what failed
        hints = get_type_hints(cls, include_extras=True) if cls is not None else {}
    for key, prop in schema.get("properties", {}).items():
        note = annotated_note(hints.get(key)) or notes.get(key)
        if note and "description" not in prop:
            prop["description"] = note
    return schema


def tidy(schema: Any) -> Any:
    """A JSON Schema without the ``title`` pydantic gives each class and field, ``type`` first.

    The order is the one requests recorded before pydantic made the schemas had, so their
    cassettes (and prompts listing the tools) still match.
    """
    if isinstance(schema, list):
        return [tidy(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")  # a keyword, or a property called "type" (a dict)
    first = {"type": kind} if isinstance(kind, (str, list)) else {}
    return first | {
        key: value if key in _DATA else tidy(value)
        for key, value in schema.items()
        if not (key == "title" and isinstance(value, str)) and key not in first
    }


def described(annotation: Any) -> Any:
    """``annotation`` with each ``Annotated[X, "text"]`` in it a pydantic description."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        from pydantic import Field

        note = annotated_note(annotation)
        kept = tuple(arg for arg in args[1:] if not isinstance(arg, str))  # constraints stay
        noted = (Field(description=note),) if note else ()
        parts = (described(args[0]), *kept, *noted)
        return _ANNOTATED[parts]
    if not args or origin is Literal:
        return annotation
    inner = tuple(described(arg) if arg is not Ellipsis else arg for arg in args)
    if inner == args:
        return annotation
    if origin in _UNIONS:
        return Union[inner]  # noqa: UP007 (X | Y needs two types; here are any number)
    return origin[inner] if origin is not None else annotation


def _no_json_form(name: str, fields: Mapping[str, Any], hints: Mapping[str, Any]) -> Any:
    """The TypeError naming the first parameter pydantic makes no JSON Schema of (if one)."""
    for key, field in fields.items():
        try:
            json_schema(field)
        except Exception as error:  # pydantic's errors, told to the user
            first = str(error).split("\n", 1)[0].split(". ", 1)[0].rstrip(".")
            code = getattr(error, "code", None)
            fix = _NOT_DEFINED if code == "class-not-fully-defined" else _SUPPORTED
            return TypeError(
                f"tool {name!r}: parameter {key!r} ({_show(hints[key])}) has no JSON form "
                f"(pydantic: {first}): {fix}"
            )
    return None


_NOT_DEFINED = (
    "a field's type may name only what the class's module defines or imports (not types "
    "local to a function, nor imported under `if TYPE_CHECKING:`)"
)


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


def annotated_note(annotation: Any) -> str | None:
    """The first text in ``Annotated[X, ...]`` metadata: a description of what X means."""
    if get_origin(annotation) is not Annotated:
        return None
    return next((note for note in get_args(annotation)[1:] if isinstance(note, str)), None)


_UNIONS = (Union, type(int | None))  # the origins of Optional[X], Union[X, Y] and X | Y


def jsonable(value: Any, fallback: Callable[[Any], Any] = str) -> Any:
    """``value`` as plain JSON data: dicts, lists, str, int, float, bool and None.

    Enums give their value, dataclasses a dict of their fields (as ``dataclasses.asdict``,
    with each value converted in turn), pydantic models ``model_dump(mode="json")``, tuples
    and sets a list (sets sorted where they can be, so a reply is the same on every run),
    dates their ISO form; anything else is ``fallback(value)``.
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
