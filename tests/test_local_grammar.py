"""A JSON schema bounded for the embedded model's grammar (``_local.grammar.bound``).

The properties: any value in, no exception out (a schema it cannot read passes as it is);
a schema out whose every reply is one the input allows (no looser than the input) and fits
the token budget, written as widely as llama.cpp's grammar lets the model write it (a
space after every value, four bytes a character). The replies are drawn from the bounded
schema by ``replies`` below, which reads the small vocabulary ``bound`` writes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_harness._local.grammar import ARRAY_ITEMS, CHARACTER, STRING_LENGTH, bound
from pytest_harness.judges._rubric import SCORE
from pytest_harness.judges._statements import STATEMENTS, verdicts_schema
from pytest_harness.judges._tool_call import EQUIVALENCE

VOTE = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass", "reason"],
}
JUDGES = [VOTE, SCORE, STATEMENTS, verdicts_schema([0, 1]), EQUIVALENCE]

# Schemas: the keywords bound reads, nested; unsatisfiable ones included (they pass as
# they are). No float multipleOf: jsonschema's own check of it is inexact.
NAMES = st.sampled_from(["a", "b", "reason", "score", "é"])
NUMBER = st.integers(-1000, 1000) | st.floats(-1e6, 1e6, allow_nan=False)
SCALARS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"minLength": st.integers(0, 5), "maxLength": st.integers(0, 80)},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": NUMBER,
            "maximum": NUMBER,
            "exclusiveMinimum": NUMBER,
            "exclusiveMaximum": NUMBER,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("integer"), "multipleOf": st.integers(1, 7)},
        optional={"minimum": st.integers(-50, 50), "maximum": st.integers(-50, 500)},
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["boolean", "null"])}),
    st.fixed_dictionaries({"enum": st.lists(st.integers(0, 9) | NAMES, min_size=1, max_size=4)}),
    st.fixed_dictionaries({"const": NUMBER | NAMES | st.booleans()}),
    st.just({}),
    st.just(True),
    st.fixed_dictionaries({"type": st.just(["string", "null"])}),
)


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(NAMES, inner, max_size=3)},
            optional={
                "required": st.lists(NAMES, max_size=2, unique=True),
                "additionalProperties": st.booleans() | inner,
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("array"), "items": inner},
            optional={"minItems": st.integers(0, 2), "maxItems": st.integers(0, 6)},
        ),
        st.fixed_dictionaries(
            {"type": st.just("array"), "prefixItems": st.lists(inner, min_size=1, max_size=3)},
            optional={"items": st.just(False)},
        ),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=2)}),
        st.just({"type": "object"}),
        st.just({"type": "array"}),
    )


SCHEMAS = st.recursive(SCALARS, _compound, max_leaves=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
TEXT = st.characters(min_codepoint=0x20, exclude_characters='"\\', exclude_categories=["Cs"])
LENGTH = re.compile(r"\{(\d+),(\d+)\}\$$")


@st.composite
def replies(draw: st.DrawFn, schema: Any) -> tuple[Any, int]:
    """A reply the bounded ``schema``'s grammar allows, and its bytes written as widely
    as the grammar allows (a space after each value and each '{', '[', ':' and ',')."""
    if "anyOf" in schema:
        return draw(replies(draw(st.sampled_from(schema["anyOf"]))))
    if "const" in schema:
        return schema["const"], len(json.dumps(schema["const"]))
    if "enum" in schema:
        value = draw(st.sampled_from(schema["enum"]))
        return value, len(json.dumps(value))
    kind = schema["type"]
    if kind == "object":
        properties = schema["properties"]
        required = set(schema["required"])
        names = [n for n in properties if n in required or draw(st.booleans())]
        drawn = {name: draw(replies(properties[name])) for name in names}
        parts = [len(json.dumps(name)) + 3 + size for name, (_, size) in drawn.items()]
        return {name: value for name, (value, _) in drawn.items()}, _widest(parts)
    if kind == "array":
        if "prefixItems" in schema:
            drawn = [draw(replies(item)) for item in schema["prefixItems"]]
        else:
            count = draw(st.integers(schema["minItems"], schema["maxItems"]))
            drawn = [draw(replies(schema["items"])) for _ in range(count)]
        return [value for value, _ in drawn], _widest([size for _, size in drawn])
    if kind == "string":
        least, most = map(int, LENGTH.search(schema["pattern"]).groups())  # type: ignore[union-attr]
        text = draw(st.text(TEXT, min_size=least, max_size=most))
        return text, len(text.encode()) + 3
    if kind == "integer":
        value = draw(st.integers(-(10**16) + 1, 10**16 - 1))
        return value, len(str(value)) + 1
    if kind == "number":
        value = draw(st.floats(allow_nan=False, allow_infinity=False))
        return value, len(json.dumps(value)) + 1
    value = draw(st.booleans()) if kind == "boolean" else None
    return value, len(json.dumps(value)) + 1


def _widest(parts: list[int]) -> int:
    return 4 + sum(parts) + 2 * max(0, len(parts) - 1)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_any_value_is_bounded_or_passed_as_it_is(value: Any) -> None:
    made = bound(value)
    assert made.tokens is None or made.tokens > 0
    if made.tokens is None:
        assert made.schema is value
    json.dumps(made.schema)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), SCHEMAS)
def test_every_reply_of_the_bounded_schema_fits_the_input_and_the_budget(
    data: st.DataObject, schema: Any
) -> None:
    made = bound(schema)
    if made.tokens is None:  # unsatisfiable, or unbounded: passed as it is
        assert made.schema is schema
        return
    assert bound(made.schema).tokens == made.tokens  # bounded again: the same budget
    for _ in range(3):
        reply, size = data.draw(replies(made.schema))
        jsonschema.validate(reply, schema, cls=jsonschema.Draft202012Validator)
        assert size + 1 <= made.tokens


@pytest.mark.parametrize("schema", JUDGES)
def test_the_judges_schemas_are_bounded(schema: Mapping[str, Any]) -> None:
    made = bound(schema)
    assert made.tokens is not None
    assert made.tokens < 4096  # the server's context
    text = json.dumps(made.schema)
    assert f"{{0,{STRING_LENGTH}}}" in text
    assert '"additionalProperties": false' in text


def test_a_range_becomes_the_values_within_it() -> None:
    score = bound(SCORE).schema["properties"]["score"]
    assert score["enum"] == [1, 2, 3, 4, 5]
    share = bound({"type": "number", "minimum": 0, "maximum": 1}).schema
    assert share["enum"][:3] == [0.0, 0.05, 0.1]
    assert share["enum"][-1] == 1.0
    count = bound({"type": "integer", "minimum": 0}).schema["enum"]
    assert count[:6] == [0, 1, 2, 5, 10, 20]
    assert all(value >= 0 for value in count)
    odd = bound({"type": "integer", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 3})
    assert odd.schema["enum"] == [0, 3, 6, 9]


def test_strings_and_arrays_get_bounds_and_keep_their_own() -> None:
    made = bound({"type": "array", "items": {"type": "string"}}).schema
    assert made["maxItems"] == ARRAY_ITEMS
    assert made["items"]["pattern"] == f"^{CHARACTER}{{0,{STRING_LENGTH}}}$"
    own = bound({"type": "array", "maxItems": 9, "items": {"type": "string", "maxLength": 200}})
    assert own.schema["maxItems"] == 9
    assert own.schema["items"]["pattern"].endswith("{0,200}$")
    assert re.fullmatch(made["items"]["pattern"][1:-1], 'a "quoted" word') is None
    assert re.fullmatch(made["items"]["pattern"][1:-1], "a raw\nnewline") is None


def test_refs_are_inlined_and_a_recursive_one_passes_as_it_is() -> None:
    inner = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3, "minimum": 1}}}
    schema = {"$defs": {"Inner": inner}, "type": "array", "items": {"$ref": "#/$defs/Inner"}}
    made = bound(schema).schema
    assert "$defs" not in made
    assert made["items"]["properties"]["n"]["enum"] == [1, 2, 3]
    tree = {"$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "$ref": "#/$defs/T"}
    assert bound(tree).schema == tree
    assert bound(tree).tokens is None


def test_a_free_object_is_the_empty_one_and_a_free_value_a_scalar() -> None:
    assert bound({"type": "object"}).schema["properties"] == {}
    free = bound({"type": "object", "required": ["x"]}).schema["properties"]["x"]
    assert [choice["type"] for choice in free["anyOf"]] == ["string", "number", "boolean", "null"]


def test_a_pattern_of_the_schema_s_own_is_kept_and_leaves_the_budget_open() -> None:
    made = bound({"type": "string", "pattern": "^[A-Z]+$"})
    assert made.schema == {"type": "string", "pattern": "^[A-Z]+$"}
    assert made.tokens is None


@functools.cache
def _converter() -> Any:
    """llama-cpp-python's schema converter, read from its file (importing the package would
    load llama.cpp); the test is skipped where the ``local`` extra is not installed."""
    package = importlib.util.find_spec("llama_cpp")
    if package is None or package.origin is None:
        pytest.skip("llama-cpp-python (the local extra) is not installed")
    path = Path(package.origin).with_name("llama_grammar.py")
    spec = importlib.util.spec_from_file_location("_llama_grammar_alone", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS)
def test_llama_cpp_makes_a_grammar_of_every_bounded_schema(schema: Any) -> None:
    made = bound(schema)
    if made.tokens is not None:
        assert "root ::=" in _converter().json_schema_to_gbnf(json.dumps(made.schema))
