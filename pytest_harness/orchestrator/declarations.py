"""What a tool's function, and the types in its hints, declare: read once, when ``@tool`` runs.

- Google-style docstrings (``parse_docstring``): the function's summary is the tool's
  description and its ``Args:`` entries describe the parameters; a dataclass's or
  TypedDict's ``Attributes:`` entries describe its fields (``class_docstring``).
- Type hints: a function's (``function_hints``, through ``functools.partial``: ``unwrap``)
  and a dataclass's or TypedDict's fields' (``class_hints``), the type behind a ``NewType``
  or alias (``unalias``), a TypedDict's required keys, the text of ``Annotated[X, "..."]``.
- What kind of class a hint names: a pydantic model or a TypedDict, both duck-typed
  (pydantic is never imported here).
- Whether a parameter can be sent by a model at all (``check_parameter``).

A hint or parameter no tool can take is a ``TypeError`` naming it. Building a JSON Schema
from all this is ``pytest_harness.orchestrator.schema``'s business, and converting the
model's JSON back into the types ``pytest_harness.orchestrator.values``'s.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args, get_origin, get_type_hints

__all__ = [
    "annotated_note",
    "check_parameter",
    "class_docstring",
    "class_hints",
    "function_hints",
    "is_model",
    "is_typeddict",
    "parse_docstring",
    "required_keys",
    "unalias",
    "unwrap",
]

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
