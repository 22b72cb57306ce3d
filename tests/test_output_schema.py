"""Structured output (issue #26): a schema is checked when it is declared, and a reply cut
off at the token limit says so (over real HTTP, litellm to the loopback server)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, PydanticUserError

from pytest_harness._agent import Agent
from pytest_harness._model.response import ModelResponse
from pytest_harness._model.structured import Output
from pytest_harness.errors import AllAgentsFailed, ConfigError, JudgeOutputError
from pytest_harness.testing import LoopbackServer, Reply
from pytest_harness.tribunal._tribunal import Tribunal

pytestmark = pytest.mark.harness(cassette=False)

VERDICT: dict[str, Any] = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass"],
}


BOOL_TYPED = {"type": "object", "properties": {"pass": {"type": "bool"}}}


def declare(output: Any, name: str = "Verdict") -> type[Agent]:
    """Declare an Agent subclass called ``name`` with this ``output``."""
    return type(name, (Agent,), {"output": output})


def declared_error(output: Any, name: str = "Verdict") -> str:
    """The ConfigError message of declaring an agent with this ``output``."""
    with pytest.raises(ConfigError) as caught:
        declare(output, name)
    return str(caught.value)


# Invalid values ----------------------------------------------------------------------------


def test_a_type_that_is_not_a_json_schema_type() -> None:
    """ "type": "bool" fails the class statement itself, naming the class, place and fix."""
    with pytest.raises(ConfigError) as caught:

        class Politeness(Agent):
            output = BOOL_TYPED

    message = str(caught.value)
    assert message.startswith("agent Politeness: its output schema is not valid at ")
    assert "properties/pass/type: 'bool' is not a JSON Schema type" in message
    assert 'did you mean \'boolean\'? To fix it, write "type": "boolean"' in message
    assert "The types are array, boolean, integer, null, number, object, string" in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ({"type": "float"}, "at type: 'float' is not a JSON Schema type; did you mean 'number'?"),
        ({"type": "str"}, 'did you mean \'string\'? To fix it, write "type": "string"'),
        (
            {"type": ["int", "null"]},
            "at type: 'int' is not a JSON Schema type; did you mean 'integer'? To fix it, "
            "write 'integer' in its place",
        ),
        ({"anyOf": [{"type": "nul"}]}, "at anyOf/0/type: 'nul' is not a JSON Schema type"),
        (
            {"required": "pass"},
            "at required: 'pass' is not of type 'array'. Correct the value of 'required'",
        ),
        ({"properties": []}, "at properties: [] is not of type 'object'"),
    ],
    ids=["float", "str", "type-list", "in-anyOf", "required", "properties"],
)
def test_invalid_values_name_the_place_and_the_fix(output: dict[str, Any], fragment: str) -> None:
    """check_schema's findings are told with their place in the schema."""
    message = declared_error(output)
    assert message.startswith("agent Verdict: its output schema is not valid at ")
    assert fragment in message


@pytest.mark.parametrize(
    "ref", ["#/$defs/verdict", "#/properties/nope", "https://example.com/verdict.json"]
)
def test_a_ref_to_nothing_is_refused_when_declared_not_at_the_first_reply(ref: str) -> None:
    """jsonschema would raise its own error at the first reply that reaches the $ref."""
    output = {"type": "object", "properties": {"pass": {"$ref": ref}}}
    message = declared_error(output)
    assert message == (
        f"agent Verdict: its output schema refers to {ref!r} at properties/pass/$ref, which it "
        'does not hold (no schema is fetched). Define it under "$defs" and refer to it as '
        '"#/$defs/NAME"'
    )


@pytest.mark.parametrize(
    "output",
    [
        {"$defs": {"v": {"type": "boolean"}}, "properties": {"pass": {"$ref": "#/$defs/v"}}},
        {"properties": {"child": {"$ref": "#"}}},
        {"properties": {"$ref": {"type": "string"}}},  # a property named $ref
        {
            "$defs": {"v": {"$id": "v.json", "$ref": "#/$defs/b", "$defs": {"b": {}}}},
            "properties": {"pass": {"$ref": "v.json"}},
        },
    ],
    ids=["defs", "root", "a-property-named-ref", "nested-id"],
)
def test_refs_the_schema_holds_are_accepted(output: dict[str, Any]) -> None:
    assert declare(output).output is output


def test_an_unknown_dialect_is_a_config_error() -> None:
    """An unknown $schema is refused (not jsonschema's DeprecationWarning and a guess)."""
    message = declared_error({"$schema": "https://example.com/my-schema", "type": "object"})
    assert (
        "agent Verdict: its output schema's $schema is 'https://example.com/my-schema'" in message
    )
    assert 'Leave "$schema" out (Draft 2020-12 is used)' in message


def test_an_output_that_is_no_schema_is_refused_when_declared() -> None:
    """Neither a dict nor a pydantic model: refused by the class statement too."""
    message = declared_error("a JSON object with pass and reason")
    assert message.startswith("agent Verdict: output must be a JSON-schema dict or a pydantic")
    assert "(type=str)" in message


# Unknown keywords --------------------------------------------------------------------------


def test_a_misspelt_keyword_at_the_top_level() -> None:
    """ "propertes" is legal JSON Schema (ignored): it is reported, with the likely keyword."""
    message = declared_error({"type": "object", "propertes": {"pass": {"type": "boolean"}}})
    assert message.startswith(
        "agent Verdict: its output schema has the unknown keyword 'propertes' at (the top "
        "level); did you mean 'properties'?"
    )
    assert "JSON Schema ignores a keyword it does not know" in message
    assert "name an annotation of your own 'x-propertes'" in message


def test_a_misspelt_keyword_inside_properties() -> None:
    """A typo in a property's schema names the property's place."""
    output = {"type": "object", "properties": {"pass": {"tpye": "boolean"}}}
    message = declared_error(output, "Politeness")
    assert message.startswith(
        "agent Politeness: its output schema has the unknown keyword 'tpye' at properties/pass; "
        "did you mean 'type'?"
    )


def test_a_keyword_close_to_none() -> None:
    """With no keyword close to it, the message says it is not one."""
    message = declared_error({"type": "object", "zzz": 1})
    assert "unknown keyword 'zzz' at (the top level); it is not a JSON Schema keyword." in message


# Each: the schema with the typo in it, and the place the message names.
PLACES: list[tuple[Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    (lambda inner: inner, "(the top level)"),
    (lambda inner: {"properties": {"pass": inner}}, "properties/pass"),
    (lambda inner: {"items": inner}, "items"),
    (lambda inner: {"prefixItems": [{"type": "string"}, inner]}, "prefixItems/1"),
    (lambda inner: {"$defs": {"Vote": inner}}, "$defs/Vote"),
    (lambda inner: {"definitions": {"Vote": inner}}, "definitions/Vote"),
    (lambda inner: {"anyOf": [{"type": "null"}, inner]}, "anyOf/1"),
    (lambda inner: {"oneOf": [inner]}, "oneOf/0"),
    (lambda inner: {"allOf": [inner]}, "allOf/0"),
    (lambda inner: {"not": inner}, "not"),
    (lambda inner: {"if": inner, "then": {}, "else": {}}, "if"),
    (lambda inner: {"additionalProperties": inner}, "additionalProperties"),
    (lambda inner: {"patternProperties": {"^x": inner}}, "patternProperties/^x"),
    (
        lambda inner: {"properties": {"votes": {"type": "array", "items": inner}}},
        "properties/votes/items",
    ),
    (
        lambda inner: {"$defs": {"A": {"properties": {"b": {"anyOf": [inner]}}}}},
        "$defs/A/properties/b/anyOf/0",
    ),
]


@pytest.mark.parametrize(("place", "where"), PLACES, ids=[where for _, where in PLACES])
def test_unknown_keywords_are_found_wherever_a_keyword_is_expected(
    place: Callable[[dict[str, Any]], dict[str, Any]], where: str
) -> None:
    message = declared_error(place({"type": "string", "descripton": "why"}))
    assert f"unknown keyword 'descripton' at {where}; did you mean 'description'?" in message


@pytest.mark.parametrize(
    "output",
    [
        # Property names are names, not keywords, whatever they are called.
        {"type": "object", "properties": {"propertes": {"type": "string"}}},
        {"type": "object", "required": ["tpye"], "properties": {"tpye": {"type": "string"}}},
        # Values that are data, not schemas.
        {"enum": [{"propertes": 1}], "const": {"tpye": 2}},
        {"type": "object", "default": {"anything": 1}, "examples": [{"foo": "bar"}]},
        {"discriminator": {"propertyName": "kind", "mapping": {"a": "#/$defs/A"}}},
        {"type": "object", "dependentRequired": {"a": ["b"]}},
    ],
    ids=[
        "property-names",
        "required-names",
        "enum-const",
        "default-examples",
        "discriminator",
        "dependent-required",
    ],
)
def test_names_and_data_inside_a_schema_are_not_keywords(output: dict[str, Any]) -> None:
    declare(output)


# Valid schemas -----------------------------------------------------------------------------


class Reason(BaseModel):
    """A nested pydantic model: its schema goes to $defs and is referred to with $ref."""

    text: str = Field(description="why", examples=["says please"])
    quotes: list[str] = []


class Vote(BaseModel):
    """Most of what pydantic writes into a schema."""

    passed: bool = Field(title="Pass", description="whether the reply passes")
    score: float = Field(ge=0, le=10, default=5.0)
    label: Literal["good", "bad"]
    kind: Literal["vote"] = "vote"
    reason: Reason | None = None
    reasons: list[Reason] = []
    tags: dict[str, int] = {}
    note: str | None = Field(default=None, pattern="^[a-z]+$", max_length=20, deprecated=True)


STRICT_OPENAI = {
    "type": "object",
    "properties": {
        "pass": {"type": "boolean", "description": "whether it passes"},
        "reason": {"type": ["string", "null"]},
        "step": {"$ref": "#/$defs/Step"},
    },
    "required": ["pass", "reason", "step"],
    "additionalProperties": False,
    "strict": True,
    "$defs": {
        "Step": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1}},
            "required": ["n"],
            "additionalProperties": False,
        }
    },
}
VENDOR = {
    "type": "object",
    "title": "Vote",
    "x-order": ["pass"],
    "x-anything": {"propertes": "not checked: a vendor extension holds what it likes"},
    "propertyOrdering": ["pass", "reason"],
    "properties": {
        "pass": {"type": "boolean", "nullable": True, "readOnly": False},
        "reason": {"type": "string", "contentMediaType": "text/plain", "writeOnly": False},
        "code": {"type": "string", "contentEncoding": "base64", "format": "byte"},
    },
    "$comment": "vendor keywords providers accept",
    "$id": "https://example.com/vote",
    "deprecated": False,
}
DRAFT_07 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"Vote": {"type": "boolean"}},
    "properties": {"pass": {"$ref": "#/definitions/Vote"}},
    "dependencies": {"pass": {"required": ["reason"]}},
}


@pytest.mark.parametrize(
    "output",
    [
        VERDICT,
        Vote.model_json_schema(),
        Vote.model_json_schema(mode="serialization"),
        STRICT_OPENAI,
        VENDOR,
        DRAFT_07,
        {},
        {"type": "object", "additionalProperties": True, "unevaluatedProperties": False},
    ],
    ids=[
        "verdict",
        "pydantic",
        "pydantic-serialization",
        "openai-strict",
        "vendor",
        "draft-07",
        "empty",
        "booleans",
    ],
)
def test_valid_schemas_are_accepted(output: dict[str, Any]) -> None:
    """Valid schemas declare fine, and an instance configured with one is read as before."""
    Judge = declare(output)
    assert Judge.output is output
    assert Agent(output=output, name="Inline").output is output


def test_pydantic_schemas_fit_the_keyword_check() -> None:
    """pydantic's schema uses $defs, $ref, anyOf, const, enum...: all known keywords."""
    schema = Vote.model_json_schema()
    assert {"$defs", "properties", "required"} <= set(schema)
    declare(schema)


def test_a_pydantic_model_is_not_asked_for_its_schema_when_declared() -> None:
    """A model with a forward reference not defined yet declares fine (pydantic checks it)."""

    class Later(BaseModel):
        step: Step  # defined below, as in a module that declares its judges first

    Judge = declare(Later)

    class Step(BaseModel):
        n: int

    Later.model_rebuild()
    assert Judge.output is Later
    assert "Step" in Judge.output.model_json_schema()["$defs"]


def test_a_schema_too_deep_to_check_is_a_config_error() -> None:
    """jsonschema's check recurses a few frames per level: a schema nested 300 deep cannot be
    checked, and says how to flatten it."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(300):
        schema = {"type": "array", "items": schema}
    message = declared_error(schema, "Deep")
    assert message.startswith("agent Deep: its output schema nests too deep to be checked")
    assert message.endswith('under "$defs" and refer to them with "$ref"')


def test_an_instance_output_is_checked_when_the_agent_is_made() -> None:
    """Agent(output=...) is a declaration too: refused by the constructor, named by its name."""
    with pytest.raises(ConfigError, match=r"^agent Inline: its output schema has the unknown"):
        Agent(output={"propertes": {}}, name="Inline")


def test_a_subclass_is_checked_for_its_own_output() -> None:
    """A subclass that keeps its parent's output is not re-checked; one that replaces it is."""
    Parent = declare(VERDICT, "Parent")
    assert type("Child", (Parent,), {"instructions": "x"}).output is VERDICT
    with pytest.raises(ConfigError, match=r"^agent Broken: .* 'requried' at \(the top level\)"):
        type("Broken", (Parent,), {"output": {"requried": ["pass"]}})


# A schema read again ------------------------------------------------------------------------


def verdict_schema() -> dict[str, Any]:
    """A fresh copy of VERDICT, for a test to edit."""
    return json.loads(json.dumps(VERDICT))


def reads(agent: Agent, reply: str) -> bool:
    """Whether ``agent`` accepts ``reply`` as its output."""
    try:
        agent.parse(ModelResponse(content=reply))
    except JudgeOutputError:
        return False
    return True


def test_a_schema_edited_in_place_is_read_again_by_the_next_instance() -> None:
    """Each instance reads the class's schema as it is now: its check, its prompt."""
    schema = verdict_schema()
    Judge = declare(schema)
    assert reads(Judge(), '{"pass": true}')
    schema["required"] = ["pass", "reason"]
    judge = Judge()
    assert not reads(judge, '{"pass": true}')
    assert reads(judge, '{"pass": true, "reason": "polite"}')
    assert '"required": ["pass", "reason"]' in judge.messages(schema_in_prompt=True)[0]["content"]
    schema["properties"]["pass"]["type"] = "bool"
    with pytest.raises(ConfigError, match=r"^agent Verdict: .*'bool' is not a JSON Schema type"):
        Judge().parse(ModelResponse(content='{"pass": true}'))


def test_an_edit_does_not_reach_an_equal_schema_checked_before() -> None:
    """Equal schemas share their checked validator; editing the dict it was first made from
    leaves the other schema's check as it was."""
    first, second = verdict_schema(), verdict_schema()
    assert reads(declare(first, "First")(), '{"pass": true}')
    first["properties"]["pass"]["type"] = "string"
    assert reads(declare(second, "Second")(), '{"pass": true}')
    assert not reads(declare(first, "First")(), '{"pass": true}')


def test_a_replaced_class_schema_is_read_by_the_next_instance() -> None:
    Judge = declare(verdict_schema())
    assert reads(Judge(), '{"pass": true}')
    Judge.output = {**VERDICT, "required": ["reason"]}
    assert not reads(Judge(), '{"pass": true}')


def test_a_value_json_cannot_write_is_shown_as_text_in_the_prompt() -> None:
    """An annotation JSON cannot write (a date) is shown as text, as in the schema's check."""
    schema = {**VERDICT, "x-since": datetime.date(2026, 1, 31)}
    agent = Agent(output=schema, name="Dated", instructions="Judge it.")
    system = agent.messages(schema_in_prompt=True)[0]["content"]
    assert system.endswith(json.dumps({**VERDICT, "x-since": "2026-01-31"}, sort_keys=True))
    assert reads(agent, '{"pass": false}')


def test_a_model_schema_is_generated_once_per_class_and_each_read_has_its_own() -> None:
    """pydantic generates the schema once; a read's copy can be edited (litellm may edit a
    response_format) without reaching the next read."""

    class Counted(BaseModel):
        """A model that counts the schemas it generates."""

        passed: bool
        generated: ClassVar[int] = 0

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            cls.generated += 1
            return super().model_json_schema(*args, **kwargs)

    Judge = declare(Counted)
    first, second = Judge(), Judge()
    assert first.messages(schema_in_prompt=True) == second.messages(schema_in_prompt=True)
    assert Counted.generated == 1
    expected = Counted.model_json_schema()
    shown = json.dumps(expected, sort_keys=True)
    assert first.messages(schema_in_prompt=True)[0]["content"].endswith(f"schema:\n{shown}")
    edited = Output.of(Counted, "Judge").schema
    assert edited == expected
    edited["properties"]["passed"]["type"] = "string"
    assert Output.of(Counted, "Judge").schema == expected


def test_a_model_not_complete_yet_is_read_once_it_is() -> None:
    """A model whose schema cannot be generated yet (a forward reference) is asked again."""

    class Pending(BaseModel):
        step: Later

    Judge = declare(Pending)
    with pytest.raises(PydanticUserError, match="not fully defined"):
        Judge().messages(schema_in_prompt=True)

    class Later(BaseModel):
        n: int

    Pending.model_rebuild()
    assert '"Later"' in Judge().messages(schema_in_prompt=True)[0]["content"]


# Anything at all: a ConfigError or acceptance ----------------------------------------------

KEYWORDS = st.one_of(
    st.sampled_from(
        [
            "type",
            "properties",
            "items",
            "anyOf",
            "$defs",
            "required",
            "enum",
            "$ref",
            "format",
            "pattern",
            "minimum",
            "additionalProperties",
            "$schema",
            "strict",
            "x-note",
        ]
    ),
    st.text(max_size=12),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
SCHEMAS = st.recursive(
    st.dictionaries(KEYWORDS, JSON, max_size=4),
    lambda inner: st.dictionaries(
        KEYWORDS,
        inner
        | JSON
        | st.lists(inner, max_size=2)
        | st.dictionaries(st.text(max_size=6), inner, max_size=2),
        max_size=4,
    ),
    max_leaves=12,
)


@settings(
    derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(schema=SCHEMAS)
def test_any_schema_is_accepted_or_a_config_error(schema: dict[str, Any]) -> None:
    """No other exception escapes the check, and every refusal names the agent."""
    refusal = None
    try:
        declare(schema, "Fuzzed")
    except ConfigError as error:
        refusal = str(error)
    assert refusal is None or refusal.startswith("agent Fuzzed: ")


@settings(derandomize=True, max_examples=200, deadline=None)
@given(name=st.text(min_size=1, max_size=16), place=st.sampled_from(PLACES))
def test_any_unknown_name_is_reported_by_name(
    name: str, place: tuple[Callable[[dict[str, Any]], dict[str, Any]], str]
) -> None:
    """A name that is no keyword is reported with its place; an x- name never is."""
    wrap, where = place
    declare(wrap({"type": "string", f"x-{name}": 1}))
    assume(name not in KEYWORDS_AND_VALUES and not name.startswith("x-"))
    message = declared_error(wrap({"type": "string", name: 1}))
    assert f"the unknown keyword {name!r} at {where};" in message


# Every keyword of Draft 2020-12 (its vocabularies and the older ones its metaschema still
# lists) and those providers accept, each with a valid value.
KEYWORDS_AND_VALUES: dict[str, Any] = {
    "$anchor": "a", "$comment": "c", "$defs": {}, "$dynamicAnchor": "meta",
    "$dynamicRef": "#meta", "$id": "https://example.com/s", "$recursiveAnchor": "a",
    "$recursiveRef": "#", "$ref": "#", "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$vocabulary": {}, "additionalProperties": {}, "allOf": [{}], "anyOf": [{}], "const": 1,
    "contains": {}, "contentEncoding": "base64", "contentMediaType": "text/plain",
    "contentSchema": {}, "default": 1, "definitions": {}, "dependencies": {},
    "dependentRequired": {}, "dependentSchemas": {}, "deprecated": True, "description": "d",
    "discriminator": {"propertyName": "kind"}, "else": {}, "enum": [1], "examples": [1],
    "exclusiveMaximum": 1, "exclusiveMinimum": 1, "format": "date", "if": {}, "items": {},
    "maxContains": 1, "maxItems": 1, "maxLength": 1, "maxProperties": 1, "maximum": 1,
    "minContains": 1, "minItems": 1, "minLength": 1, "minProperties": 1, "minimum": 1,
    "multipleOf": 1, "not": {}, "nullable": True, "oneOf": [{}], "pattern": "^a",
    "patternProperties": {}, "prefixItems": [{}], "properties": {}, "propertyNames": {},
    "propertyOrdering": ["a"], "readOnly": True, "required": [], "strict": True, "then": {},
    "title": "t", "type": "object", "unevaluatedItems": {}, "unevaluatedProperties": {},
    "uniqueItems": True, "writeOnly": True,
}  # fmt: skip


@pytest.mark.parametrize(("keyword", "value"), KEYWORDS_AND_VALUES.items())
def test_every_keyword_is_known(keyword: str, value: Any) -> None:
    """Each keyword is accepted at the top level and inside a property."""
    declare({keyword: value})
    declare({"type": "object", "properties": {"p": {keyword: value}}})


# A reply cut off at the token limit --------------------------------------------------------

CUT = '{"pass": tr'


def judge(server: LoopbackServer, name: str, **params: Any) -> type[Agent]:
    """A judge Agent class called ``name`` whose instructions are its name."""
    body = {
        "model": server.model,
        "params": {**server.params, **params},
        "instructions": name,
        "output": VERDICT,
        "structured": True,
    }
    return type(name, (Agent,), body)


def test_a_cut_off_reply_names_the_limit_to_raise(server: LoopbackServer) -> None:
    """finish_reason "length": the error says so, and which setting to raise."""
    server.queue(Reply(content=CUT, finish_reason="length"))
    with pytest.raises(JudgeOutputError) as caught:
        judge(server, "Politeness", max_tokens=5)(input="Please hold.").call()
    message = str(caught.value)
    assert message.startswith(
        "the reply of agent Politeness was cut off at the token limit (finish_reason 'length') "
        "before its JSON was complete: '{\"pass\": tr'."
    )
    assert 'raise "max_tokens" in the agent\'s params (it is 5 now)' in message
    assert caught.value.raw == CUT
    assert isinstance(caught.value.__cause__, JudgeOutputError)  # the reading error, kept
    assert server.requests[-1]["max_tokens"] == 5


def test_a_cut_off_reply_without_a_limit_set(server: LoopbackServer) -> None:
    """With no max_tokens in the params, the message says to set one."""
    server.queue(Reply(content=CUT, finish_reason="length"))
    with pytest.raises(JudgeOutputError) as caught:
        judge(server, "Politeness")(input="x").call()
    assert 'set params = {"max_tokens": ...} on the agent (it sets none' in str(caught.value)


def test_max_completion_tokens_is_named_when_that_is_the_setting(server: LoopbackServer) -> None:
    server.queue(Reply(content=CUT, finish_reason="length"))
    with pytest.raises(JudgeOutputError, match=r'raise "max_completion_tokens" .*\(it is 7 now\)'):
        judge(server, "Politeness", max_completion_tokens=7)(input="x").call()


def test_a_streamed_cut_off_reply(server: LoopbackServer) -> None:
    """The finish reason of a stream's last chunk counts the same."""
    server.queue(Reply(content=CUT, finish_reason="length"))
    deltas: list[str] = []
    with pytest.raises(JudgeOutputError, match="was cut off at the token limit"):
        judge(server, "Politeness", max_tokens=5)(input="x").call(on_token=deltas.append)
    assert "".join(deltas) == CUT


def test_a_reply_complete_at_the_limit_is_read(server: LoopbackServer) -> None:
    """JSON that fits, though the limit was reached, is a result as before."""
    server.queue(Reply(content='{"pass": true}', finish_reason="length"))
    result = judge(server, "Politeness", max_tokens=5)(input="x").call()
    assert result.processed == {"pass": True}


def test_a_reply_that_stopped_is_not_called_cut_off(server: LoopbackServer) -> None:
    """The same broken text with finish_reason "stop" keeps today's message."""
    server.queue(Reply(content=CUT, finish_reason="stop"))
    with pytest.raises(JudgeOutputError) as caught:
        judge(server, "Politeness", max_tokens=5)(input="x").call()
    assert str(caught.value).startswith("the reply has no JSON object in it")
    assert "cut off" not in str(caught.value)


def test_a_tribunal_shows_the_cut_off_judge(server: LoopbackServer) -> None:
    """In a panel, the cut-off judge's error (a judge error) says it was cut off."""

    def handler(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] == "Brief":
            return Reply(content=CUT, finish_reason="length")
        return Reply(content='{"pass": true}')

    server.handler = handler
    tribunal = Tribunal(
        input="x", agents=[judge(server, "Brief", max_tokens=5), judge(server, "Roomy")]
    )
    verdict = tribunal.call().verdict
    assert verdict.passed
    (failure,) = verdict.errors
    assert failure.agent == "Brief"
    assert isinstance(failure.error, JudgeOutputError)
    assert "was cut off at the token limit" in failure.describe()
    assert failure.error.raw == CUT

    server.handler = lambda body: Reply(content=CUT, finish_reason="length")
    with pytest.raises(AllAgentsFailed, match=r"Brief: JudgeOutputError: the reply of agent "):
        Tribunal(input="x", agents=[judge(server, "Brief", max_tokens=5)]).call()
