"""A JSON schema bounded before llama.cpp makes a grammar of it, and the tokens it needs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

# What a schema leaves unbounded gets bounds a 270M model fills in seconds: each token it
# writes under a grammar takes about 0.1 s of one CPU core (0.05 s without one), and it
# often fills a string to its end, a character a token (digits). A sentence, a few items.
STRING_LENGTH = 48  # characters of a string whose schema sets no maxLength
ARRAY_ITEMS = 3  # items of an array whose schema sets no maxItems
CHARACTER = '[^"\\\\\\x00-\\x1f]'  # a string's character: no quote, backslash or control
_OURS = re.compile(re.escape(f"^{CHARACTER}") + r"\{\d+,(?P<most>\d+)\}\$")
_RANGE = 101  # integers offered one by one up to this many; round ones beyond
_GRID = 20  # steps of a number's finite range
_DEPTH = 32  # nesting (inlined $refs included) beyond which a schema is passed as it is
_SIZE = 20_000  # nodes of an inlined schema beyond which it is passed as it is
_SPACE = 1  # the converter allows one space after each value, and after "{", "[", ":", ","
# The largest replies of the converter's fixed grammars, without the space after them: its
# integer has at most 16 digits and a sign, its number a fraction and an exponent too.
_INTEGER, _NUMBER, _BOOLEAN, _NULL = 17, 52, 5, 4
_FORMATS = {"date": 12, "time": 20, "date-time": 31, "uuid": 38}
_UUIDS = ("uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5")
_FREE_TYPES = ("string", "number", "boolean", "null")
# Keywords read here; whatever else a node says is kept for the converter to ignore.
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$comment"})
_KEYWORDS_OF = {
    "object": ("properties", "required", "additionalProperties", "patternProperties"),
    "array": ("items", "prefixItems", "minItems", "maxItems"),
    "string": ("minLength", "maxLength", "pattern", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}
_SUBSCHEMA = ("items", "additionalProperties", "contains", "propertyNames")
_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


@dataclass(frozen=True, slots=True)
class Bounded:
    """A schema as llama.cpp should get it, and the tokens its longest reply takes.

    Attributes:
        schema: the bounded schema (the input itself when it could not be read).
        tokens: at most how many tokens a reply takes under its grammar, or None when a
            part of it stays unbounded.
    """

    schema: Any
    tokens: int | None


class _PassThrough(Exception):
    """The schema cannot be read here: it goes to llama.cpp as it is."""


def bound(schema: Any) -> Bounded:
    """The schema bounded for llama.cpp's grammar, and the tokens its longest reply takes.

    Never raises: a schema it cannot read comes back as it is, with ``tokens`` None.
    """
    try:
        bounder = _Bounder(schema)
        node, size = bounder.node(schema, 0)
    except (_PassThrough, RecursionError, TypeError, ValueError, OverflowError):
        return Bounded(schema, None)
    if isinstance(schema, Mapping):  # the dialect, and what else the root says of itself
        node.update({k: schema[k] for k in ("$schema", "title") if k in schema})
    return Bounded(node, None if size is None else size + 1)  # and the end of the reply


def tokens(schema: Any) -> int | None:
    """The tokens the longest reply ``schema`` allows takes once bounded (``bound``)."""
    return bound(schema).tokens


class _Bounder:
    """One schema's bounding: its root (for ``$ref``) and how much has been made."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.nodes = 0
        self.inlining: tuple[str, ...] = ()

    def node(self, schema: Any, depth: int) -> tuple[dict[str, Any], int | None]:
        """The bounded form of one (sub)schema, and its longest reply in bytes."""
        self.nodes += 1
        if depth > _DEPTH or self.nodes > _SIZE:
            raise _PassThrough("too deep or too large")
        if schema is True:
            return self.free(depth)
        if not isinstance(schema, Mapping):  # false: nothing matches; anything else: not a schema
            raise _PassThrough("not a schema")
        schema = dict(schema)
        if "$ref" in schema:
            return self.reference(schema, depth)
        if "allOf" in schema:
            parts = _schemas(schema.pop("allOf"))
            for part in parts:
                schema = _merge(schema, self.resolved(part))
            return self.node(schema, depth + 1)
        choices = schema.get("anyOf") or schema.get("oneOf")
        if choices is not None:
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            return self.union([_merge(rest, self.resolved(c)) for c in _schemas(choices)], depth)
        if "const" in schema or "enum" in schema:
            return _literals(schema)
        kinds = _kinds(schema)
        if not kinds:
            return self.free(depth)
        if len(kinds) > 1:
            return self.union([{**schema, "type": kind} for kind in kinds], depth)
        return self.typed(schema, kinds[0], depth)

    def reference(self, schema: dict[str, Any], depth: int) -> tuple[dict[str, Any], int | None]:
        ref = schema.pop("$ref")
        if not isinstance(ref, str) or ref in self.inlining:  # recursive: no bound
            raise _PassThrough("a recursive $ref")
        target = _pointer(self.root, ref)
        self.inlining += (ref,)
        try:
            return self.node(_merge(schema, target), depth + 1)
        finally:
            self.inlining = self.inlining[:-1]

    def resolved(self, schema: Any) -> Any:
        """``schema`` with its own ``$ref`` followed (for merging with what is beside it)."""
        seen: set[str] = set()
        while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if ref in seen or ref in self.inlining:
                raise _PassThrough("a recursive $ref")
            seen.add(ref)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = _merge(rest, _pointer(self.root, ref))
        return schema

    def union(self, choices: list[Any], depth: int) -> tuple[dict[str, Any], int | None]:
        if not choices:
            raise _PassThrough("an empty anyOf")
        made = [self.node(choice, depth + 1) for choice in choices]
        if len(made) == 1:
            return made[0]
        return {"anyOf": [node for node, _ in made]}, _largest(size for _, size in made)

    def free(self, depth: int) -> tuple[dict[str, Any], int | None]:
        """A value the schema leaves free: a short string, a number, a boolean or null."""
        return self.union([{"type": kind} for kind in _FREE_TYPES], depth)

    def typed(
        self, schema: dict[str, Any], kind: str, depth: int
    ) -> tuple[dict[str, Any], int | None]:
        node = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "$defs")}
        node.pop("definitions", None)
        node["type"] = kind
        if kind == "object":
            return self.object(node, depth)
        if kind == "array":
            return self.array(node, depth)
        if kind == "string":
            return _string(node)
        if kind in ("integer", "number"):
            return _number(node, integer=kind == "integer")
        if kind == "boolean":
            return node, _BOOLEAN + _SPACE
        if kind == "null":
            return node, _NULL + _SPACE
        raise _PassThrough(f"the type {kind!r}")

    def object(self, node: dict[str, Any], depth: int) -> tuple[dict[str, Any], int | None]:
        declared = node.get("properties", {})
        required = node.get("required", [])
        if not isinstance(declared, Mapping) or not isinstance(required, list):
            raise _PassThrough("properties or required of the wrong type")
        extra = node.get("additionalProperties", True)
        properties = dict(declared)
        for name in required:
            if not isinstance(name, str) or (name not in properties and extra is False):
                raise _PassThrough(f"the required {name!r} is allowed nothing")
            properties.setdefault(name, extra)
        made: dict[str, Any] = {}
        sizes: list[int | None] = []
        for name, value in properties.items():
            if value is False:
                if name in required:
                    raise _PassThrough(f"{name!r} is required and allowed nothing")
                continue
            made[name], size = self.node(value, depth + 1)
            sizes.append(None if size is None else _literal(name) + 2 * _SPACE + 1 + size)
        node.pop("patternProperties", None)
        node.update(properties=made, required=list(dict.fromkeys(required)))
        node["additionalProperties"] = False
        return node, _sequence(sizes)

    def array(self, node: dict[str, Any], depth: int) -> tuple[dict[str, Any], int | None]:
        least, most = _least(node.get("minItems")), _most(node.get("maxItems"))
        prefix = node.pop("prefixItems", None)
        items = node.get("items", True)
        if prefix is None and isinstance(items, list):  # a tuple, as drafts 4 to 7 write it
            prefix, items = items, node.get("additionalItems", True)
        if prefix is not None:
            if not isinstance(prefix, list):
                raise _PassThrough("prefixItems is not a list")
            kept = prefix if most is None else prefix[:most]
            if len(kept) < least:
                raise _PassThrough("fewer items than minItems allow")
            made = [self.node(item, depth + 1) for item in kept]
            node.pop("items", None)
            node.pop("additionalItems", None)
            node["prefixItems"] = [item for item, _ in made]
            return node, _sequence([size for _, size in made])
        if items is False:
            most = 0
        if most is None:
            most = max(ARRAY_ITEMS, least)
        if most < least:
            raise _PassThrough("maxItems below minItems")
        item, size = self.node(True if items is False else items, depth + 1)
        node.update(items=item, minItems=least, maxItems=most)
        return node, _sequence([size] * most)


def _literals(schema: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """A ``const`` or ``enum``: the values that also fit what else the schema says of a
    scalar (its type, bounds, lengths), as the converter's literals."""
    values = [schema["const"]] if "const" in schema else schema["enum"]
    if not isinstance(values, list):
        raise _PassThrough("enum is not a list")
    kept = [value for value in values if _allowed(value, schema)]
    if not kept:
        raise _PassThrough("no value of the enum fits the schema")
    node = {"const": kept[0]} if "const" in schema else {"enum": kept}
    return node, max(_literal(value) for value in kept)


def _allowed(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a literal fits the rest of its schema, as far as a scalar's keywords go."""
    kinds = _kinds(schema) if "type" in schema else None
    if kinds is not None and not _fits_type(value, kinds):
        return False
    if "enum" in schema and "const" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, str):
        most = _most(schema.get("maxLength"))
        return _least(schema.get("minLength")) <= len(value) and (
            most is None or len(value) <= most
        )
    if _is_number(value):
        step = schema.get("multipleOf")
        multiple = not _is_number(step) or step <= 0 or _multiple(value, float(step))
        return _within(value, schema) and multiple
    return True


def _string(node: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    if "pattern" in node:
        ours = _OURS.fullmatch(str(node["pattern"]))  # bounded here before: its length
        # Another pattern: the converter follows it, and its length is not known here.
        return node, None if ours is None else 2 + 4 * int(ours["most"]) + _SPACE
    form = node.get("format")
    fixed = _FORMATS.get("uuid" if form in _UUIDS else str(form))
    if fixed is not None:
        return node, fixed + _SPACE
    least, most = _least(node.get("minLength")), _most(node.get("maxLength"))
    most = max(STRING_LENGTH, least) if most is None else most
    if most < least:
        raise _PassThrough("maxLength below minLength")
    node["pattern"] = f"^{CHARACTER}{{{least},{most}}}$"
    return node, 2 + 4 * most + _SPACE


def _number(node: dict[str, Any], *, integer: bool) -> tuple[dict[str, Any], int | None]:
    low, _ = _limit(node, "minimum", "exclusiveMinimum", max)
    high, _ = _limit(node, "maximum", "exclusiveMaximum", min)
    step = node.get("multipleOf")
    if step is not None and (not _is_number(step) or step <= 0):
        raise _PassThrough("multipleOf is not a positive number")
    if low is None and high is None and step is None:
        return node, (_INTEGER if integer else _NUMBER) + _SPACE
    candidates = _values(low, high, integer=integer, step=step)
    values = [v for v in candidates if _within(v, node) and (step is None or _multiple(v, step))]
    if not values:
        raise _PassThrough("no value within the bounds")
    node["enum"] = values
    return node, max(_literal(value) for value in values)


def _within(value: float, schema: Mapping[str, Any]) -> bool:
    """Whether a number is within the schema's minimum and maximum (exclusive or not)."""
    low, low_open = _limit(schema, "minimum", "exclusiveMinimum", max)
    high, high_open = _limit(schema, "maximum", "exclusiveMaximum", min)
    above = low is None or value > low or (value == low and not low_open)
    below = high is None or value < high or (value == high and not high_open)
    return above and below


def _values(
    low: float | None, high: float | None, *, integer: bool, step: float | None = None
) -> list[int | float]:
    """Candidate values for a bounded number (``_number`` keeps those within the bounds,
    and multiples of ``step``, its ``multipleOf``)."""
    found: list[float]
    if low is not None and high is not None and integer and high - low < _RANGE:
        return list(range(math.ceil(low), math.floor(high) + 1))
    if low is not None and high is not None and not integer and high > low:
        unit = _nice_step((high - low) / _GRID)
        places = max(0, -math.floor(math.log10(unit)) + 1)
        start = math.ceil(low / unit)
        found = [low, high, *(round(n * unit, places) for n in range(start, start + _GRID + 2))]
    else:
        round_ones = [d * 10.0**k for k in range(0 if integer else -2, 16) for d in (1, 2, 5)]
        round_ones += [step * v for v in round_ones if step is not None and v >= 1]
        found = [0, *round_ones, *(-v for v in round_ones)]
        found += [limit for limit in (low, high) if limit is not None]
    if integer:
        return sorted({int(v) for v in found if float(v).is_integer()})
    return sorted({float(f"{v:.12g}") for v in found})  # 0.1 * 3 is 0.3, not 0.30000000000000004


def _nice_step(raw: float) -> float:
    """The round step (1, 2 or 5 times a power of ten) at or above ``raw``."""
    power = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def _multiple(value: float, step: float) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    quotient = value / step
    return math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9)


def _limit(
    node: Mapping[str, Any], inclusive: str, exclusive: str, tighter: Callable[..., float]
) -> tuple[float | None, bool]:
    """A bound of a number and whether it is exclusive (draft 4's booleans read too)."""
    found: list[tuple[float, bool]] = []
    plain, other = node.get(inclusive), node.get(exclusive)
    if plain is not None:
        if not _is_number(plain):
            raise _PassThrough(f"{inclusive} is not a number")
        found.append((plain, other is True))
    if other is not None and other is not True and other is not False:
        if not _is_number(other):
            raise _PassThrough(f"{exclusive} is not a number")
        found.append((other, True))
    if not found:
        return None, False
    value = tighter(v for v, _ in found)
    return value, any(is_open for v, is_open in found if v == value)


def _kinds(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema allows: its ``type``, or those its keywords imply."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        return list(dict.fromkeys(kind))
    if kind is not None:
        raise _PassThrough("type is neither a name nor a list of names")
    return [name for name, words in _KEYWORDS_OF.items() if any(k in schema for k in words)]


def _fits_type(value: Any, kinds: list[str]) -> bool:
    kind = _type_of(value)
    return kind in kinds or (kind == "integer" and "number" in kinds)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _merge(into: Mapping[str, Any], other: Any) -> dict[str, Any]:
    """Two schemas that must both hold, as one: the tighter of two bounds, the union of
    required names, the common enum values and types; a property both declare must fit
    both (``allOf``)."""
    if other is True:
        return dict(into)
    if not isinstance(other, Mapping):
        raise _PassThrough("not a schema")
    tuples = ("prefixItems" in into, "prefixItems" in other)
    if any(tuples) and ("items" in into or "items" in other or all(tuples)):
        raise _PassThrough("a tuple merged with other items")  # positions would shift
    merged = dict(into)
    for key, value in other.items():
        if key not in merged or key in _ANNOTATIONS:
            merged[key] = value
        elif key in _LOWER and _is_number(value) and _is_number(merged[key]):
            merged[key] = max(merged[key], value)
        elif key in _UPPER and _is_number(value) and _is_number(merged[key]):
            merged[key] = min(merged[key], value)
        elif key == "required" and isinstance(value, list) and isinstance(merged[key], list):
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        elif key == "enum" and isinstance(value, list) and isinstance(merged[key], list):
            merged[key] = [v for v in merged[key] if v in value]
        elif key == "type":
            merged[key] = _common_types(merged[key], value)
        elif key in _SUBSCHEMA and _is_schema(value) and _is_schema(merged[key]):
            merged[key] = {"allOf": [merged[key], value]}
        elif key == "not":
            merged[key] = {"anyOf": [merged[key], value]}
        elif key == "properties" and isinstance(value, Mapping):
            ours = merged[key] if isinstance(merged[key], Mapping) else {}
            both = {n: {"allOf": [ours[n], s]} if n in ours else s for n, s in value.items()}
            merged[key] = {**ours, **both}
        elif key == "uniqueItems":
            merged[key] = bool(merged[key] or value)
        elif merged[key] != value:  # two patterns, consts, formats...: not one of them
            raise _PassThrough(f"two {key} that cannot be merged")
    return merged


def _common_types(first: Any, second: Any) -> Any:
    ones = [first] if isinstance(first, str) else first
    others = [second] if isinstance(second, str) else second
    if not isinstance(ones, list) or not isinstance(others, list):
        raise _PassThrough("type is neither a name nor a list of names")
    common = [
        kind for kind in ones if kind in others or (kind == "integer" and "number" in others)
    ] + [kind for kind in others if kind == "integer" and "number" in ones]
    if not common:
        raise _PassThrough("no type both allow")
    return list(dict.fromkeys(common))


def _pointer(root: Any, ref: str) -> Any:
    """The schema a ``$ref`` within the document points at (``#/$defs/Name``)."""
    if not ref.startswith("#"):
        raise _PassThrough(f"a $ref to another document: {ref}")
    found = root
    for raw in filter(None, ref[1:].split("/")):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(found, Mapping) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            raise _PassThrough(f"a $ref to nothing: {ref}")
    return found


def _schemas(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _PassThrough("anyOf, oneOf or allOf is not a list")
    return value


def _least(value: Any) -> int:
    """A lower length or item bound (``minLength``, ``minItems``): 0 when not given."""
    found = _most(value)
    return 0 if found is None else found


def _most(value: Any) -> int | None:
    """An upper length or item bound: a non-negative whole number, or None."""
    if value is None:
        return None
    if not _is_number(value) or value < 0 or not float(value).is_integer():
        raise _PassThrough("a length or count that is not a whole number")
    return int(value)


def _is_schema(value: Any) -> bool:
    return isinstance(value, (Mapping, bool))


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _literal(value: Any) -> int:
    """The bytes of a value written as the converter's literal (``json.dumps``, ASCII)."""
    return len(json.dumps(value, allow_nan=False))


def _sequence(sizes: list[int | None]) -> int | None:
    """An object's or array's longest reply: its brackets, its parts and their commas."""
    if any(size is None for size in sizes):
        return None
    inner = sum(size for size in sizes if size is not None)
    commas = max(0, len(sizes) - 1) * (1 + _SPACE)
    return 2 * (1 + _SPACE) + inner + commas


def _largest(sizes: Any) -> int | None:
    found = list(sizes)
    return None if any(size is None for size in found) else max(found)
