"""Structured output: the JSON schema an agent declares, and reading a reply against it.

A schema is a JSON-schema dict or a pydantic model class (anything with
``model_json_schema()`` / ``model_validate()``; pydantic is not imported here). A reply is
read leniently, because many models wrap JSON in prose or code fences even when asked not
to: the whole text, else the first fenced block, else the first balanced JSON object. What is
found must then fit the schema. Every failure is a ``JudgeOutputError`` carrying the raw text;
a reply the provider cut off at its token limit says so (``cut_off``).

A schema dict is checked when it is declared (``check_output``): against the metaschema of its
dialect (``$schema``, default Draft 2020-12), and for keywords JSON Schema does not know, which
a validator would silently ignore (``"propertes"``). The known keywords are read from
jsonschema's own metaschemas, plus those structured-output providers accept.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import json
import re
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urljoin

from pytest_harness.errors import ConfigError, JudgeOutputError, quote

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder(strict=False)  # a raw newline inside a string is still read
# A verdict is a few levels deep. Deeper JSON is refused: Python's parser, then jsonschema,
# pydantic and every json.dumps of the value would run out of stack on it.
MAX_REPLY_DEPTH = 100


def json_schema(output: Any, owner: str = "?") -> dict[str, Any] | None:
    """The JSON schema of an agent's ``output`` declaration (None: free text)."""
    if output is None:
        return None
    if isinstance(output, Mapping):
        return dict(output)
    return _generated(output, owner)


def _generated(model: Any, owner: str) -> dict[str, Any]:
    """The JSON schema a model class generates (``ConfigError`` when it is not one)."""
    if _is_model(model):
        schema = model.model_json_schema()
        if isinstance(schema, dict):
            return schema
    raise _not_an_output(model, owner)


def check_output(output: Any, owner: str) -> None:
    """Raise ``ConfigError`` when an agent's ``output`` declaration is not a usable one.

    A dict is checked by ``check_schema``. A pydantic model class is taken as it is: pydantic
    makes valid schemas, and asking for one while the agent class is being declared would
    fail on a forward reference not defined yet.
    """
    if isinstance(output, Mapping):
        check_schema(dict(output), owner)
    elif output is not None and not _is_model(output):
        raise _not_an_output(output, owner)


def _is_model(output: Any) -> bool:
    return isinstance(output, type) and callable(getattr(output, "model_json_schema", None))


def _not_an_output(output: Any, owner: str) -> ConfigError:
    return ConfigError(
        f"agent {owner}: output must be a JSON-schema dict or a pydantic model class (None "
        f"for free text), got {output!r:.80} (type={type(output).__name__})"
    )


def response_format(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The OpenAI ``response_format`` that asks the provider for ``schema``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": dict(schema)}}


def schema_instructions(schema_text: str) -> str:
    """What the system prompt says when the provider cannot enforce the schema itself.

    Args:
        schema_text: the schema as JSON, its keys sorted (``_key``).
    """
    return (
        "Reply with one JSON object only, no prose and no code fences, matching this JSON "
        f"schema:\n{schema_text}"
    )


def find_json(text: str, raw: str | None = None) -> Any:
    """The JSON value in ``text``: all of it, else a fenced block, else the first object.

    A JSON array is taken only when no object parses (a ``[1]`` citation in prose must not
    hide the object after it). ``raw`` is the reply as the model gave it, for the error.

    Raises:
        JudgeOutputError: no JSON value could be found, or it nests deeper than ``MAX_REPLY_DEPTH``.
    """
    raw = text if raw is None else raw
    stripped = text.strip()
    if not stripped:
        raise JudgeOutputError("the reply is empty: expected a JSON object", raw=raw)
    for candidate in (stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))):
        try:
            return _shallow(_DECODER.decode(candidate), raw)
        except ValueError:
            continue
        except RecursionError:
            raise _too_deep(raw) from None
    for opener in ("{", "["):
        for match in re.finditer(re.escape(opener), text):
            try:
                value, _ = _DECODER.raw_decode(text, match.start())
            except ValueError:
                continue
            except RecursionError:  # stop: retrying at each opener inside it is quadratic
                raise _too_deep(raw) from None
            return _shallow(value, raw)
    raise JudgeOutputError(
        f"the reply has no JSON object in it: {quote(text, 200)}. Ask for JSON in the agent's "
        "instructions, or declare an output schema so the provider enforces it",
        raw=raw,
    )


def cut_off(
    error: JudgeOutputError,
    agent: str,
    params: Mapping[str, Any],
    needed: int | None = None,
) -> JudgeOutputError:
    """``error`` told as what it is: the provider stopped the reply at its token limit.

    Args:
        error: why the reply could not be read.
        agent: the agent's name.
        params: the litellm parameters of the call, where the limit is set.
        needed: the tokens the longest reply the output schema allows takes, where that
            is known (the embedded model's grammar bounds it).
    """
    setting = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
    if setting in params and needed is not None:
        fix = (
            f'raise "{setting}" in the agent\'s params (it is {params[setting]!r} now; the '
            f"longest reply its output schema allows takes {needed} tokens on the embedded "
            "model)"
        )
    elif setting in params:
        fix = f'raise "{setting}" in the agent\'s params (it is {params[setting]!r} now)'
    else:
        fix = (
            'set params = {"max_tokens": ...} on the agent (it sets none, so the '
            "provider's default limit applied)"
        )
    return JudgeOutputError(
        f"the reply of agent {agent} was cut off at the token limit (finish_reason "
        f"'length') before its JSON was complete: {quote(error.raw, 200)}. To let it finish, "
        f"{fix}, or ask for a shorter reply in its instructions",
        raw=error.raw,
    )


def _shallow(value: Any, raw: str) -> Any:
    """``value``, unless it nests deeper than ``MAX_REPLY_DEPTH`` (then ``JudgeOutputError``)."""
    level: list[Any] = [value]
    for _ in range(MAX_REPLY_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return value
    raise _too_deep(raw)


def _too_deep(raw: str) -> JudgeOutputError:
    return JudgeOutputError(
        f"the reply is not readable JSON: it nests deeper than {MAX_REPLY_DEPTH} levels. "
        f"Reply: {quote(raw, 200)}. Ask for a flat JSON object in the agent's instructions, "
        "or declare an output schema so the provider enforces it",
        raw=raw,
    )


@dataclass(frozen=True, slots=True)
class Output:
    """An agent's output declaration, read once per call: its schema and how to read a reply.

    Attributes:
        declared: the declaration (a JSON-schema dict, a pydantic model class, or None).
        schema: its JSON schema (None: free text).
        name: the agent's name, for the provider's ``response_format``.
        instructions: what the system prompt says when the provider cannot enforce the
            schema itself (None: free text).
        checker: jsonschema's validator of a dict schema's replies, once the schema is
            checked (None otherwise).
    """

    declared: Any
    schema: dict[str, Any] | None
    name: str
    instructions: str | None
    checker: Any

    @classmethod
    def of(cls, declared: Any, name: str) -> Output:
        """Read an agent's ``output`` declaration (``ConfigError`` when it is not one).

        A dict's JSON text is made once per read: it finds the schema's checker
        (``check_schema`` checks each schema once) and is what the prompt shows. A model
        class's schema is generated once per class (``_model_schema``).
        """
        if isinstance(declared, Mapping):
            schema = dict(declared)
            text = _key(schema, name)
            checker = _checked(text, schema, name)
            return cls(declared, schema, name, schema_instructions(text), checker)
        if declared is None:
            return cls(None, None, name, None, None)
        text, shown = _model_schema(declared, name)
        return cls(declared, json.loads(text), name, shown, None)

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The OpenAI ``response_format`` asking the provider for the schema, if any."""
        return None if self.schema is None else response_format(self.schema, self.name)

    def read(self, text: str, raw: str | None = None) -> Any:
        """The processed reply: the visible text for free text, else the checked JSON.

        Args:
            text: the reply's visible text (think blocks removed).
            raw: the reply exactly as the model gave it (carried by errors); default ``text``.

        Raises:
            JudgeOutputError: the text has no JSON, or the JSON does not fit the schema.
        """
        if self.schema is None:
            return text
        raw = text if raw is None else raw
        value = find_json(text, raw)
        validate = getattr(self.declared, "model_validate", None)
        if isinstance(self.declared, type) and callable(validate):
            try:
                model = validate(value)
            except ValueError as error:  # pydantic's ValidationError is a ValueError
                raise JudgeOutputError(
                    f"the reply does not fit {self.declared.__name__}: {error}", raw=raw
                ) from None
            dumped: Any = model.model_dump(mode="json")
            return dumped
        checker = self.checker
        if checker is None:  # a class with a schema that does not validate replies itself
            checker = check_schema(self.schema, self.name)
        _check(value, checker, raw)
        return value


# A model class's JSON schema as text, and the prompt's text of it: pydantic takes about
# 0.3 ms to generate a schema, and a complete model class does not change (one rebuilt with
# model_rebuild(force=True) keeps its first schema). Each read parses its own copy of the
# text, since litellm may edit a response_format's schema in place.
_MODEL_SCHEMAS: weakref.WeakKeyDictionary[type, tuple[str, str]] = weakref.WeakKeyDictionary()


def _model_schema(model: Any, owner: str) -> tuple[str, str]:
    """A model class's schema as JSON text (in its order) and as the prompt shows it."""
    known = _MODEL_SCHEMAS.get(model) if _is_model(model) else None
    if known is None:
        schema = _generated(model, owner)
        shown = schema_instructions(_key(schema, owner))
        known = _MODEL_SCHEMAS[model] = (json.dumps(schema, default=str), shown)
    return known


def schema_error(schema: dict[str, Any], value: Any) -> str | None:
    """Where and why ``value`` does not fit ``schema`` (a recorded request's), or None when
    it fits, or when the schema itself cannot be checked (nothing to say of the value)."""
    import re

    import jsonschema
    import referencing.exceptions

    try:
        checker = check_schema(schema, "of the recorded request")
        problem = jsonschema.exceptions.best_match(checker.iter_errors(value))
    except (ConfigError, referencing.exceptions.Unresolvable, re.error, RecursionError):
        return None  # a $ref to nowhere, a pattern that is no regex: nothing to say of it
    if problem is None:
        return None
    where = "/".join(str(part) for part in problem.absolute_path)
    return f"at {where}: {problem.message}" if where else str(problem.message)


def _check(value: Any, checker: Any, raw: str) -> None:
    import jsonschema  # loaded already (the checker is jsonschema's): a lookup

    problem = jsonschema.exceptions.best_match(checker.iter_errors(value))
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path) or "(the top level)"
        raise JudgeOutputError(
            f"the reply does not fit the output schema at {where}: {problem.message}. "
            f"Reply: {quote(raw, 200)}",
            raw=raw,
        )


# Checking a schema ----------------------------------------------------------------------------

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
# The Python names people write for them, which difflib does not always find ("float").
_PYTHON_TYPES = {
    "bool": "boolean",
    "int": "integer",
    "float": "number",
    "str": "string",
    "list": "array",
    "tuple": "array",
    "dict": "object",
    "None": "null",
    "NoneType": "null",
}
# Keywords structured-output providers accept beside their dialect's vocabulary: OpenAI's
# `strict`, OpenAPI's `nullable` and `discriminator`, Gemini's `propertyOrdering`, and
# annotations older dialects lack ($defs, $comment, readOnly...). Names starting with "x-" are
# vendor extensions and always allowed.
_PROVIDER_KEYWORDS = (
    "strict",
    "nullable",
    "discriminator",
    "propertyOrdering",
    "title",
    "description",
    "examples",
    "default",
    "format",
    "pattern",
    "enum",
    "const",
    "$ref",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
)
_SCHEMA_MAPS = ("$defs", "definitions")  # name -> schema in every dialect providers read
# Where a keyword's value holds schemas: the value itself, its items, or its values.
_ITSELF, _ITEMS, _VALUES = "itself", "items", "values"
_REFERENCE = "https://json-schema.org/understanding-json-schema/reference"
_CHECKERS: dict[str, Any] = {}  # a schema's JSON text (_key) -> its validator
# json.dumps(schema, sort_keys=True, default=str), without building an encoder per call
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def check_schema(schema: dict[str, Any], owner: str) -> Any:
    """jsonschema's validator of an output schema's replies, once the schema is checked.

    Checked once per schema: against the metaschema of its ``$schema`` (default Draft
    2020-12), then for keywords JSON Schema does not know, wherever a keyword is expected.

    Raises:
        ConfigError: naming ``owner``, the keyword or value, its place and the fix.
    """
    return _checked(_key(schema, owner), schema, owner)


def _checked(key: str, schema: dict[str, Any], owner: str) -> Any:
    """``check_schema`` of ``schema``, whose JSON text (``_key``) is ``key``.

    The validator keeps a copy of the schema: it serves every schema with the same text, so
    a later edit of the dict it was made from must not reach it.
    """
    checker = _CHECKERS.get(key)
    if checker is None:
        try:
            checker = _CHECKERS[key] = _checker(_own_copy(schema), owner)
        except RecursionError:  # jsonschema's check recurses a few frames per level
            raise ConfigError(
                f"agent {owner}: its output schema nests too deep to be checked. Declare the "
                'nested parts once under "$defs" and refer to them with "$ref"'
            ) from None
    return checker


def _checker(schema: dict[str, Any], owner: str) -> Any:
    """The validator of a schema not checked before, once it is checked."""
    import jsonschema

    dialect = _dialect(schema, owner)
    try:
        dialect.check_schema(schema)
    except jsonschema.SchemaError as bad:
        raise _invalid(bad, owner) from None
    known = _keywords(dialect)
    unknown = next(_unknown_keywords(schema, known, ()), None)
    if unknown is not None:
        raise _unknown(unknown[1], unknown[0], known, owner)
    dangling = _dangling_ref(schema, dialect)
    if dangling is not None:
        where, ref = dangling
        raise ConfigError(
            f"agent {owner}: its output schema refers to {ref!r} at {'/'.join(where)}, which it "
            'does not hold (no schema is fetched). Define it under "$defs" and refer to it as '
            '"#/$defs/NAME"'
        )
    return dialect(schema)


def _dangling_ref(schema: dict[str, Any], dialect: Any) -> tuple[tuple[str, ...], str] | None:
    """The first ``$ref`` of the schema that resolves to nothing in it (its place and the
    ref), or None: jsonschema would raise at the first reply that reaches it."""
    import referencing
    import referencing.exceptions
    import referencing.jsonschema

    specification = referencing.jsonschema.specification_with(dialect.META_SCHEMA["$schema"])
    root = specification.create_resource(schema)
    base = root.id() or ""
    resolver = referencing.Registry().with_resource(base, root).crawl().resolver(base)
    for place, ref in _refs(schema, ()):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return place, ref
    return None


def _refs(value: Any, place: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Each ``$ref`` in the schema with its place; not below a subschema with an ``$id`` of
    its own (its refs resolve against it)."""
    if isinstance(value, Mapping):
        if place and "$id" in value:
            return
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield (*place, "$ref") if place else ("$ref",), item
            else:
                yield from _refs(item, (*place, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _refs(item, (*place, str(index)))


def _own_copy(value: Any) -> Any:
    """``value`` with each dict and list in it copied (a JSON-data deep copy)."""
    if isinstance(value, Mapping):
        return {key: _own_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_own_copy(item) for item in value]
    return value


def _key(schema: dict[str, Any], owner: str) -> str:
    """The schema's JSON text: its validator's key, and the schema a prompt shows."""
    try:
        return _KEY_ENCODER.encode(schema)
    except (TypeError, ValueError, RecursionError) as error:
        raise ConfigError(
            f"agent {owner}: its output schema is not JSON data ({error}); write it with "
            "string keys and JSON values only (dicts, lists, strings, numbers, booleans, None)"
        ) from None


def _dialect(schema: dict[str, Any], owner: str) -> Any:
    """The validator class of the schema's ``$schema``; Draft 2020-12 when it has none."""
    import jsonschema

    if "$schema" not in schema:
        return jsonschema.Draft202012Validator
    uri = schema["$schema"]
    found: Any = None
    if isinstance(uri, str):
        try:  # a default given: an unknown $schema returns it, with no DeprecationWarning
            found = jsonschema.validators.validator_for(schema, default=cast(Any, None))
        except ValueError:  # urllib refuses it ("http://[")
            found = None
    if found is None:
        raise ConfigError(
            f"agent {owner}: its output schema's $schema is {uri!r:.80}, a dialect jsonschema "
            'does not know. Leave "$schema" out (Draft 2020-12 is used), or write "$schema": '
            '"https://json-schema.org/draft/2020-12/schema"'
        )
    return found


def _invalid(bad: Any, owner: str) -> ConfigError:
    """The ConfigError for jsonschema's ``SchemaError``: the place, the value, the fix."""
    where = "/".join(str(part) for part in bad.path) or "(the top level)"
    keyword = next((part for part in reversed(bad.path) if isinstance(part, str)), None)
    if keyword == "type" and bad.validator in ("anyOf", "enum"):
        return ConfigError(
            f"agent {owner}: its output schema is not valid at {where}: {_type_fix(bad.instance)}"
        )
    fix = f"Correct the value of {keyword!r}" if keyword else "Correct the schema"
    return ConfigError(
        f"agent {owner}: its output schema is not valid at {where}: {bad.message}. "
        f"{fix}; JSON Schema's keywords are described at {_REFERENCE}"
    )


def _type_fix(value: Any) -> str:
    """What to write instead of a ``type`` value that names no JSON Schema type."""
    in_list = isinstance(value, list)
    wrong = next((name for name in value if name not in JSON_TYPES), value) if in_list else value
    said = f"{wrong!r} is not a JSON Schema type"
    close = _closest_type(wrong) if isinstance(wrong, str) else None
    if close is not None:
        write = f"write {close!r} in its place" if in_list else f'write "type": "{close}"'
        said += f"; did you mean {close!r}? To fix it, {write}"
    return f"{said}. The types are {', '.join(JSON_TYPES)}"


def _closest_type(name: str) -> str | None:
    close = difflib.get_close_matches(name.lower(), JSON_TYPES, n=1)
    return _PYTHON_TYPES.get(name) or (close[0] if close else None)


def _unknown(
    keyword: Any, place: tuple[str, ...], known: Mapping[str, Any], owner: str
) -> ConfigError:
    where = "/".join(place) or "(the top level)"
    names = [name for name in known if isinstance(name, str)]
    close = difflib.get_close_matches(str(keyword), names, n=1)
    guess = f"did you mean {close[0]!r}?" if close else "it is not a JSON Schema keyword."
    return ConfigError(
        f"agent {owner}: its output schema has the unknown keyword {keyword!r} at {where}; "
        f"{guess} JSON Schema ignores a keyword it does not know, so this one would not "
        f"apply. Correct it, or name an annotation of your own 'x-{keyword}'"
    )


def _unknown_keywords(
    schema: Any, known: Mapping[str, frozenset[str]], place: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each keyword ``known`` lacks, with the place of the schema that has it."""
    if not isinstance(schema, Mapping):
        return  # true / false, or a value check_schema already vouched for
    for keyword, value in schema.items():
        holds = known.get(keyword)
        if holds is None:
            if not (isinstance(keyword, str) and keyword.startswith("x-")):
                yield place, keyword
            continue
        for inner, subschema in _subschemas(value, holds):
            yield from _unknown_keywords(subschema, known, (*place, str(keyword), *inner))


def _subschemas(value: Any, holds: frozenset[str]) -> list[tuple[tuple[str, ...], Any]]:
    """The schemas in a keyword's value, each with its place inside the value."""
    if isinstance(value, list) and _ITEMS in holds:
        return [((str(index),), item) for index, item in enumerate(value)]
    if isinstance(value, Mapping) and _ITSELF in holds:
        return [((), value)]
    if isinstance(value, Mapping) and _VALUES in holds:
        return [((str(name),), item) for name, item in value.items()]
    return []


@functools.cache
def _keywords(dialect: Any) -> Mapping[str, frozenset[str]]:
    """Every keyword of a dialect, each with where its value holds schemas.

    Read from the dialect's metaschema and its vocabularies, with the keywords jsonschema
    implements for it and those providers accept.
    """
    known = dict.fromkeys((*_PROVIDER_KEYWORDS, *dialect.VALIDATORS), frozenset[str]())
    known.update(dict.fromkeys(_SCHEMA_MAPS, frozenset({_VALUES})))
    known.update(_vocabulary(dialect.META_SCHEMA))
    return known


def _vocabulary(metaschema: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The keywords a metaschema declares (its ``properties``, and those of the vocabulary
    metaschemas its ``allOf`` refers to, as Draft 2019-09 and 2020-12 do)."""
    found: dict[str, frozenset[str]] = {}
    for part in metaschema.get("allOf", ()):
        ref = part.get("$ref") if isinstance(part, Mapping) else None
        if isinstance(ref, str):
            found.update(_vocabulary(_metaschema(urljoin(str(metaschema.get("$id", "")), ref))))
    for keyword, entry in metaschema.get("properties", {}).items():
        found[keyword] = _holds(entry)
    return found


def _metaschema(uri: str) -> Mapping[str, Any]:
    """An official metaschema by its URI, from the registry jsonschema (4.18+) reads them from."""
    try:
        registry = importlib.import_module("jsonschema_specifications").REGISTRY
        contents = registry.contents(uri)
    except (ImportError, LookupError):  # an older jsonschema: the top metaschema only
        return {}
    return contents if isinstance(contents, Mapping) else {}


def _holds(entry: Any) -> frozenset[str]:
    """Where a value holds schemas, going by the keyword's entry in the metaschema."""
    if not isinstance(entry, Mapping):
        return frozenset()
    if (
        entry.get("$dynamicRef") == "#meta"  # 2020-12
        or entry.get("$recursiveRef") == "#"  # 2019-09
        or entry.get("$ref") == "#"  # draft 4 to 7
    ):
        return frozenset({_ITSELF})
    holds: set[str] = set()
    if str(entry.get("$ref", "")).endswith("/schemaArray"):
        holds.add(_ITEMS)
    if _ITSELF in _holds(entry.get("additionalProperties")):
        holds.add(_VALUES)
    for branch in entry.get("anyOf", ()):
        holds |= _holds(branch)
    return frozenset(holds)
