"""A compiled yes-or-no check of a JSON value against the schemas verdicts usually have.

jsonschema checks a value by walking its schema anew on every call, making a validator object
at each level: for a two-field verdict about 20 µs, more than the rest of reading the reply.
Most output schemas use a few keywords: ``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``const``, bounds, lengths, ``pattern`` and the
combinators ``allOf``/``anyOf``/``oneOf``/``not``. ``compile_check`` turns such a schema,
once, into nested Python checks; for a schema with any other keyword (``$ref``,
``prefixItems``, ``unevaluatedProperties``...) or another dialect, it returns None and
jsonschema alone checks.

The check only answers whether a value fits (Draft 2020-12, as jsonschema answers without a
format checker). A ``Checker`` asks jsonschema only when it says no, so a failure's message
(the place, the reason) is still jsonschema's. ``tests/test_compiled_schema.py`` holds the two
to the same answer on generated schemas and values.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, TypeAlias

Fits: TypeAlias = Callable[[Any], bool]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Keywords that never change whether a value fits: annotations (and the user's own, "x-..."),
# format (asserted only with a format checker, which replies are read without), definitions
# (used only through $ref, which is not compiled), and provider keywords jsonschema ignores.
_IGNORED = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "contentEncoding",
        "contentMediaType",
        "$defs",
        "definitions",
        "strict",
        "nullable",
        "propertyOrdering",
        "discriminator",
    }
)
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties")


@dataclass(frozen=True, slots=True)
class Checker:
    """Checks values against one checked schema: the compiled check first, jsonschema's
    validator for what does not fit.

    Attributes:
        validator: jsonschema's validator of the schema, which finds and tells what does not
            fit.
        fits: the schema's compiled check (``compile_check``); None when it has none.
    """

    validator: Any
    fits: Fits | None

    def errors(self, value: Any) -> Iterable[Any]:
        """jsonschema's ``ValidationError``s for ``value``; none when the compiled check
        accepts it."""
        if self._accepts(value):
            return ()
        return self.validator.iter_errors(value)  # type: ignore[no-any-return]

    def problem(self, value: Any) -> Any:
        """jsonschema's best-matching error for ``value``; None when ``value`` fits."""
        if self._accepts(value):  # best_match of no errors would take as long as the check
            return None
        import jsonschema  # loaded already (the validator is jsonschema's): a lookup

        return jsonschema.exceptions.best_match(self.validator.iter_errors(value))

    def _accepts(self, value: Any) -> bool:
        return self.fits is not None and self.fits(value)


def compile_check(schema: Any) -> Fits | None:
    """The compiled check of a Draft 2020-12 schema; None when it uses a keyword not compiled
    or names another dialect in ``$schema``.

    Args:
        schema: a schema already checked against its metaschema (jsonschema's
            ``check_schema``).
    """
    try:
        return _compiled(schema)
    except (_NotCompiled, RecursionError):  # then jsonschema alone checks
        return None


class _NotCompiled(Exception):
    """The schema uses something the compiled check does not know: jsonschema checks it."""


def _compiled(schema: Any) -> Fits:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping) or schema.get("$schema", DIALECT) != DIALECT:
        raise _NotCompiled
    checks: list[Fits] = []
    for keyword, value in schema.items():
        if keyword in _IGNORED or keyword in _OBJECT_KEYWORDS or keyword == "$schema":
            continue
        if keyword.startswith("x-"):  # an annotation of the user's own
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise _NotCompiled
        checks.append(make(value))
    if any(keyword in schema for keyword in _OBJECT_KEYWORDS):
        checks.append(_object(schema))
    return _all(checks)


def _all(checks: Sequence[Fits]) -> Fits:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def fits(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 (all() makes a generator on each call: 2x slower)
            if not check(value):
                return False
        return True

    return fits


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


# Types, as jsonschema's Draft 2020-12 type checker has them ---------------------------------


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


def _is_integer(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES: dict[str, Fits] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": _is_integer,
    "number": _is_number,
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def _type(types: Any) -> Fits:
    named = [types] if isinstance(types, str) else list(types)
    if not all(isinstance(name, str) and name in _TYPES for name in named):
        raise _NotCompiled
    checks = [_TYPES[name] for name in named]
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


# Values -------------------------------------------------------------------------------------


def equal(one: Any, two: Any) -> bool:
    """JSON equality, as jsonschema's: ``True`` is not ``1``, ``1`` is ``1.0``, in depth too."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and equal(value, two[key]) for key, value in one.items()
        )
    if isinstance(one, bool) or isinstance(two, bool):
        return False  # not the same object (above), so one is not the same boolean
    return bool(one == two)


def _enum(choices: Any) -> Fits:
    if not isinstance(choices, list):
        raise _NotCompiled
    if choices and all(isinstance(choice, str) for choice in choices):
        words = frozenset(choices)
        return lambda value: isinstance(value, str) and value in words
    return lambda value: any(equal(choice, value) for choice in choices)


def _const(expected: Any) -> Fits:
    return lambda value: equal(value, expected)


# Bounds and lengths: each applies only to values of its type --------------------------------


def _bound(holds: Callable[[Any, Any], bool]) -> Callable[[Any], Fits]:
    def make(limit: Any) -> Fits:
        if not _is_number(limit):
            raise _NotCompiled
        return lambda value: not _is_number(value) or holds(value, limit)

    return make


def _size(kind: type[Sized], holds: Callable[[int, Any], bool]) -> Callable[[Any], Fits]:
    def make(limit: Any) -> Fits:
        if not _is_number(limit):
            raise _NotCompiled
        return lambda value: not isinstance(value, kind) or holds(len(value), limit)

    return make


def _pattern(expression: Any) -> Fits:
    if not isinstance(expression, str):
        raise _NotCompiled
    try:
        found = re.compile(expression).search
    except re.error:
        raise _NotCompiled from None
    return lambda value: not isinstance(value, str) or found(value) is not None


# Arrays, objects, combinators ---------------------------------------------------------------


def _items(schema: Any) -> Fits:
    check = _compiled(schema)
    return lambda value: not isinstance(value, list) or all(check(item) for item in value)


def _object(schema: Mapping[str, Any]) -> Fits:
    """``properties``, ``required`` and ``additionalProperties`` (which depends on the first)."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise _NotCompiled
    known = {name: _compiled(sub) for name, sub in properties.items()}
    extra = _compiled(schema.get("additionalProperties", True))
    needed = tuple(required)

    def fits(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            check = known.get(name, extra)
            if not check(item):
                return False
        return True

    return fits


def _subschemas(schemas: Any) -> list[Fits]:
    if not isinstance(schemas, list) or not schemas:
        raise _NotCompiled
    return [_compiled(schema) for schema in schemas]


def _all_of(schemas: Any) -> Fits:
    return _all(_subschemas(schemas))


def _any_of(schemas: Any) -> Fits:
    checks = _subschemas(schemas)
    return lambda value: any(check(value) for check in checks)


def _one_of(schemas: Any) -> Fits:
    checks = _subschemas(schemas)
    return lambda value: sum(1 for check in checks if check(value)) == 1


def _not(schema: Any) -> Fits:
    check = _compiled(schema)
    return lambda value: not check(value)


_KEYWORDS: dict[str, Callable[[Any], Fits]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _bound(lambda value, limit: not value < limit),
    "maximum": _bound(lambda value, limit: not value > limit),
    "exclusiveMinimum": _bound(lambda value, limit: not value <= limit),
    "exclusiveMaximum": _bound(lambda value, limit: not value >= limit),
    "minLength": _size(str, lambda size, limit: not size < limit),
    "maxLength": _size(str, lambda size, limit: not size > limit),
    "minItems": _size(list, lambda size, limit: not size < limit),
    "maxItems": _size(list, lambda size, limit: not size > limit),
    "minProperties": _size(dict, lambda size, limit: not size < limit),
    "maxProperties": _size(dict, lambda size, limit: not size > limit),
    "pattern": _pattern,
    "items": _items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
}
