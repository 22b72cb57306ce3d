"""The compiled check of a reply against its output schema (issue #29): the same answer as
jsonschema's Draft 2020-12 validator on generated schemas and values, and jsonschema's own
message when a reply does not fit."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_harness._agent import Agent
from pytest_harness._compiled_schema import compile_check, equal
from pytest_harness._response import ModelResponse
from pytest_harness._structured import check_schema
from pytest_harness.errors import JudgeOutputError

pytestmark = pytest.mark.harness(cassette=False)

NAMES = st.sampled_from(["a", "b", "pass"])
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
# Few scalars, so that values meet the schemas' own constants and bounds.
FEW_SCALARS = [None, True, False, 0, 1, 2, -1, 0.0, 1.0, 2.0, 1.5, -0.5, math.inf, "", "a", "ab"]
SCALARS = st.sampled_from(FEW_SCALARS)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=6,
)
NUMBERS = st.sampled_from([0, 1, 2, -1, 1.0, 1.5, 0.5])
# Every schema is also asked about each of these: the scalars, and values at the edges of the
# object and array keywords.
CORPUS = [
    *FEW_SCALARS,
    [],
    [1, 1.0],
    ["a", True],
    [[]],
    {},
    {"a": 1},
    {"a": 1.0, "b": "ab"},
    {"pass": True, "a": None},
    {"a": True, "b": {"a": "b1"}, "pass": [2]},
]
SIZES = st.integers(0, 3)

# Keywords on any one value (no subschemas), each optional.
LEAF = {
    "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
    "enum": st.lists(VALUES, max_size=3),
    "const": VALUES,
    "minimum": NUMBERS,
    "maximum": NUMBERS,
    "exclusiveMinimum": NUMBERS,
    "exclusiveMaximum": NUMBERS,
    "minLength": SIZES,
    "maxLength": SIZES,
    "minItems": SIZES,
    "maxItems": SIZES,
    "minProperties": SIZES,
    "maxProperties": SIZES,
    "pattern": st.sampled_from(["^a", "b$", "[0-9]", "", "^(yes|no)$"]),
    "format": st.sampled_from(["email", "date-time", "uri"]),
    "title": st.just("A verdict"),
    "description": st.just("Whether it passed"),
    "nullable": st.booleans(),
    "strict": st.booleans(),
    "default": VALUES,
    "x-since": st.just("2026-11"),
    "examples": st.lists(VALUES, max_size=2),
}


def _some(keywords: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Schemas of one or two of ``keywords``: more at once would rarely let a value fit."""
    names = st.lists(st.sampled_from(sorted(keywords)), min_size=1, max_size=2, unique=True)
    return names.flatmap(lambda chosen: st.fixed_dictionaries({k: keywords[k] for k in chosen}))


def _schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    nested = {
        "properties": st.dictionaries(NAMES, inner, max_size=3),
        "required": st.lists(NAMES, unique=True, max_size=3),
        "additionalProperties": inner,
        "items": inner,
        "allOf": st.lists(inner, min_size=1, max_size=2),
        "anyOf": st.lists(inner, min_size=1, max_size=2),
        "oneOf": st.lists(inner, min_size=1, max_size=3),
        "not": inner,
    }
    return _some({**LEAF, **nested})


SCHEMAS = st.recursive(st.booleans() | _some(LEAF), _schemas, max_leaves=5)


@settings(
    derandomize=True,
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(schema=SCHEMAS, values=st.lists(VALUES, max_size=4))
def test_the_compiled_check_answers_as_jsonschema_does(schema: Any, values: list[Any]) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        assume(False)
    validator = jsonschema.Draft202012Validator(schema)
    fits = compile_check(schema)
    assert fits is not None, f"{schema!r} uses only compiled keywords"
    for value in [*CORPUS, *values]:
        assert fits(value) == validator.is_valid(value), (schema, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, 1.0),
        ({"type": "integer"}, True),
        ({"type": "number"}, False),
        ({"const": True}, 1),
        ({"const": 1}, 1.0),
        ({"enum": [0, "a"]}, False),
        ({"enum": [[1, 2]]}, [1.0, 2]),
        ({"enum": [{"a": True}]}, {"a": 1}),
        ({"required": ["a", "b"]}, {"a": 1}),
        ({"exclusiveMinimum": 1}, 1),
        ({"maxLength": 1}, "é"),
        ({"properties": {"a": False}}, {"b": 1}),
        ({"additionalProperties": {"type": "string"}, "properties": {"a": {}}}, {"a": 1}),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1),
        ({"items": {"type": "string"}}, "not an array"),
    ],
)
def test_the_edges_of_json_types_and_keywords(schema: dict[str, Any], value: Any) -> None:
    """Where Python and JSON Schema part ways, the compiled check answers as jsonschema."""
    fits = compile_check(schema)
    assert fits is not None
    assert fits(value) == jsonschema.Draft202012Validator(schema).is_valid(value)


@given(one=VALUES, two=VALUES)
@settings(derandomize=True, max_examples=500, deadline=None)
def test_equal_is_json_equality(one: Any, two: Any) -> None:
    """``enum`` and ``const`` compare as jsonschema does: True is not 1, 1 is 1.0."""
    assert equal(one, two) == jsonschema.Draft202012Validator({"const": two}).is_valid(one)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/verdict", "$defs": {"verdict": {"type": "object"}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
        {"type": "object", "unevaluatedProperties": False},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"type": "object", "properties": {"pass": {"$id": "urn:pass", "type": "boolean"}}},
    ],
)
def test_a_schema_with_a_keyword_not_compiled_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_check(schema) is None


VERDICT = {
    "type": "object",
    "properties": {
        "pass": {"type": "boolean"},
        "reason": {"type": "string", "minLength": 1},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "label": {"enum": ["good", "bad"]},
    },
    "required": ["pass", "reason"],
    "additionalProperties": False,
}


def test_a_verdict_schema_is_compiled_and_a_fitting_reply_passes_it() -> None:
    checker = check_schema({**VERDICT, "x-owner": "support team"}, "Verdict")
    assert checker.fits is not None
    reply = {"pass": True, "reason": "polite", "score": 0.5, "label": "good"}
    assert checker.fits(reply)
    assert checker.problem(reply) is None


@pytest.mark.parametrize(
    ("reply", "where", "message"),
    [
        ('{"pass": "yes", "reason": "r"}', "pass", "'yes' is not of type 'boolean'"),
        ('{"pass": true}', r"\(the top level\)", "'reason' is a required property"),
        ('{"pass": true, "reason": "r", "score": 2}', "score", "2 is greater than the maximum"),
        ('{"pass": true, "reason": "r", "label": "ok"}', "label", "'ok' is not one of"),
        ('{"pass": true, "reason": "r", "extra": 1}', r"\(the top level\)", "Additional prop"),
    ],
)
def test_a_reply_that_does_not_fit_is_told_in_jsonschemas_words(
    reply: str, where: str, message: str
) -> None:
    """The compiled check only says no: the place and the reason are jsonschema's."""
    judge = Agent(output=VERDICT, name="Verdict")
    with pytest.raises(JudgeOutputError, match=rf"fit the output schema at {where}: {message}"):
        judge.parse(ModelResponse(content=reply))
