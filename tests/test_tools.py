"""Tools: typed functions as JSON Schema, the model's arguments read back, results rendered."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import datetime
import inspect
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Annotated, Any, Literal, NewType, Optional, Union, get_args, get_origin

import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import NotRequired, Required, TypedDict

from pytest_harness.errors import ToolArgumentError
from pytest_harness.orchestrator._schema import parse_docstring
from pytest_harness.orchestrator._tools import Tool, as_tool, render, tool

# The types tools take are declared at module level: type hints are resolved in the
# function's module, so a class local to a test could not be named by one.


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Point:
    """A point on the map.

    Attributes:
        x: metres east.
        y: metres north.
    """

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)


@dataclass
class Node:
    value: int
    children: list[Node] = field(default_factory=list)


@dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"n must be positive, got {self.n}")


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


class Filter(TypedDict, total=False):
    genre: Required[str]
    rating: float


class Address(pydantic.BaseModel):
    city: str


class Person(pydantic.BaseModel):
    name: str
    home: Address


class Socket:
    """A class pydantic knows no JSON form of."""


UserId = NewType("UserId", int)

INTEGER = {"type": "integer"}
STRING = {"type": "string"}
NULL = {"type": "null"}
COLOR = {"type": "string", "enum": ["red", "green"]}


def taking(annotation: Any, default: Any = inspect.Parameter.empty, **options: Any) -> Tool:
    """A tool of one parameter ``x`` of type ``annotation``."""

    def function(x):  # type: ignore[no-untyped-def]
        return x

    function.__annotations__ = {"x": annotation}
    if default is not inspect.Parameter.empty:
        function.__defaults__ = (default,)
    return tool(function, **options)


def schema_of(annotation: Any) -> dict[str, Any]:
    """The schema a tool gives its parameter of this type (with the tool's $defs, if any)."""
    parameters = taking(annotation).parameters
    schema = parameters["properties"]["x"]
    return {**schema, "$defs": parameters["$defs"]} if "$defs" in parameters else schema


SCHEMAS = [
    pytest.param(str, STRING, id="str"),
    pytest.param(int, INTEGER, id="int"),
    pytest.param(float, {"type": "number"}, id="float"),
    pytest.param(bool, {"type": "boolean"}, id="bool"),
    pytest.param(None, NULL, id="None"),
    pytest.param(Any, {}, id="Any"),
    pytest.param(Optional[int], {"anyOf": [INTEGER, NULL]}, id="Optional"),  # noqa: UP045
    pytest.param(int | None, {"anyOf": [INTEGER, NULL]}, id="X-or-None"),
    pytest.param(Union[int, str], {"anyOf": [INTEGER, STRING]}, id="plain-union"),  # noqa: UP007
    pytest.param(Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}, id="Literal-str"),
    pytest.param(Literal[1, 2], {"type": "integer", "enum": [1, 2]}, id="Literal-int"),
    pytest.param(Literal["a", 1, None], {"enum": ["a", 1, None]}, id="Literal-mixed"),
    pytest.param(Color, {"$ref": "#/$defs/Color", "$defs": {"Color": COLOR}}, id="Enum"),
    pytest.param(
        Level,
        {"$ref": "#/$defs/Level", "$defs": {"Level": {"type": "integer", "enum": [1, 2]}}},
        id="IntEnum",
    ),
    pytest.param(list[int], {"type": "array", "items": INTEGER}, id="list"),
    pytest.param(list, {"type": "array", "items": {}}, id="bare-list"),
    pytest.param(Sequence[str], {"type": "array", "items": STRING}, id="Sequence"),
    pytest.param(tuple[int, ...], {"type": "array", "items": INTEGER}, id="tuple-of-any-length"),
    pytest.param(
        tuple[int, str],
        {"type": "array", "prefixItems": [INTEGER, STRING], "minItems": 2, "maxItems": 2},
        id="fixed-tuple",
    ),
    pytest.param(set[str], {"type": "array", "items": STRING, "uniqueItems": True}, id="set"),
    pytest.param(
        frozenset[int], {"type": "array", "items": INTEGER, "uniqueItems": True}, id="frozenset"
    ),
    pytest.param(dict[str, int], {"type": "object", "additionalProperties": INTEGER}, id="dict"),
    pytest.param(
        Mapping[str, list[int]],
        {"type": "object", "additionalProperties": {"type": "array", "items": INTEGER}},
        id="Mapping",
    ),
    pytest.param(
        Movie,
        {
            "$ref": "#/$defs/Movie",
            "$defs": {
                "Movie": {
                    "type": "object",
                    "properties": {"title": STRING, "year": INTEGER},
                    "required": ["title"],
                    "additionalProperties": False,
                }
            },
        },
        id="TypedDict-NotRequired",
    ),
    pytest.param(
        Filter,
        {
            "$ref": "#/$defs/Filter",
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {"genre": STRING, "rating": {"type": "number"}},
                    "required": ["genre"],
                    "additionalProperties": False,
                }
            },
        },
        id="TypedDict-total-False-Required",
    ),
    pytest.param(
        Point,
        {
            "$ref": "#/$defs/Point",
            "$defs": {
                "Point": {
                    "description": "A point on the map.",
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer", "description": "metres east."},
                        "y": {"type": "integer", "description": "metres north.", "default": 0},
                        "tags": {"type": "array", "items": STRING},
                    },
                    "required": ["x"],
                    "additionalProperties": False,
                }
            },
        },
        id="dataclass",
    ),
    pytest.param(
        Node,
        {
            "$ref": "#/$defs/Node",
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": INTEGER,
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                }
            },
        },
        id="recursive-dataclass",
    ),
    pytest.param(
        Person,
        {
            "$ref": "#/$defs/Person",
            "$defs": {
                "Person": {
                    "type": "object",
                    "properties": {"name": STRING, "home": {"$ref": "#/$defs/Address"}},
                    "required": ["name", "home"],
                },
                "Address": {
                    "type": "object",
                    "properties": {"city": STRING},
                    "required": ["city"],
                },
            },
        },
        id="pydantic",
    ),
    pytest.param(
        Annotated[int, "how many"], {"type": "integer", "description": "how many"}, id="Annotated"
    ),
    pytest.param(
        list[Annotated[Color, "a colour"]],
        {
            "type": "array",
            "items": {"$ref": "#/$defs/Color", "description": "a colour"},
            "$defs": {"Color": COLOR},
        },
        id="Annotated-inside",
    ),
    pytest.param(UserId, INTEGER, id="NewType"),
]


@pytest.mark.parametrize(("annotation", "expected"), SCHEMAS)
def test_each_supported_type_has_its_json_schema(annotation: Any, expected: dict[str, Any]) -> None:
    assert schema_of(annotation) == expected
    jsonschema.Draft202012Validator.check_schema(expected)


def test_parameters_lists_the_required_ones_and_the_json_defaults() -> None:
    marker = object()

    @tool
    def search(
        query: str,
        limit: int = 10,
        color: Color = Color.RED,
        near: Point | None = None,
        pair: tuple[int, int] = (0, 1),
        opaque: Any = marker,
    ) -> list[str]:
        return []

    properties = search.parameters["properties"]
    assert search.parameters["required"] == ["query"]
    assert search.parameters["additionalProperties"] is False
    assert properties["limit"] == {"type": "integer", "default": 10}
    assert properties["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert properties["near"]["default"] is None
    assert properties["pair"]["default"] == [0, 1]
    assert properties["opaque"] == {}  # no JSON form: no default shown
    assert list(search.parameters["$defs"]) == ["Color", "Point"]


def test_a_method_is_a_tool_without_self() -> None:
    class Service:
        def lookup(self, key: str) -> str:
            return key.upper()

    for function in (Service.lookup, Service().lookup):
        assert list(tool(function).parameters["properties"]) == ["key"]
    assert asyncio.run(tool(Service().lookup)(key="ab")) == "AB"


# ---- docstrings, names, decorator forms ------------------------------------------------------


def test_the_docstring_gives_the_description_and_each_arguments_text() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Forecast the weather for a city.

        Uses the national service.

        Args:
            city: the city's name, as on a map;
                for example "Oslo".
            days (int): how many days ahead.

        Returns:
            The forecast as text.
        """
        return city

    assert forecast.name == "forecast"
    assert forecast.description == "Forecast the weather for a city.\n\nUses the national service."
    assert forecast.parameters["properties"] == {
        "city": {
            "type": "string",
            "description": 'the city\'s name, as on a map; for example "Oslo".',
        },
        "days": {"type": "integer", "description": "how many days ahead.", "default": 3},
    }


def test_annotated_text_wins_over_the_docstring() -> None:
    def count(n: Annotated[int, "from Annotated"]) -> int:
        """Count.

        Args:
            n: from the docstring.
        """
        return n

    assert tool(count).parameters["properties"]["n"]["description"] == "from Annotated"


@pytest.mark.parametrize(
    ("doc", "summary", "notes"),
    [
        (None, "", {}),
        ("One line.", "One line.", {}),
        ("Sum.\n\nArgs:\n    a: first\n    b: second\n", "Sum.", {"a": "first", "b": "second"}),
        ("Sum.\n\nArguments:\n    *items: all\n      of them\n", "Sum.", {"items": "all of them"}),
        ("Sum.\n\nRaises:\n    ValueError: never\nArgs:\n    a: x\n", "Sum.", {"a": "x"}),
        ("Look up:\n    the thing\n", "Look up:\nthe thing", {}),
    ],
    ids=["none", "summary-only", "args", "continuation", "after-raises", "colon-in-summary"],
)
def test_parse_docstring(doc: str | None, summary: str, notes: dict[str, str]) -> None:
    assert parse_docstring(doc) == (summary, notes)


def test_name_and_description_override_the_functions() -> None:
    @tool(name="lookup", description="Find a thing.", timeout=5)
    def find(key: str) -> str:
        """Not this."""
        return key

    assert (find.name, find.description, find.timeout) == ("lookup", "Find a thing.", 5)
    assert find.spec() == {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Find a thing.",
            "parameters": {
                "type": "object",
                "properties": {"key": STRING},
                "required": ["key"],
                "additionalProperties": False,
            },
        },
    }


def test_bare_called_and_direct_forms_make_the_same_tool() -> None:
    def ping(host: str) -> str:
        return host

    made = [tool(ping), tool()(ping), tool(name="ping")(ping)]
    assert {(t.name, t.description, t.timeout) for t in made} == {("ping", "", None)}
    assert all(isinstance(t, Tool) and t.function is ping for t in made)
    assert tool(name="other")(made[0]).name == "other"  # a Tool re-decorated keeps its function
    assert tool(name="other")(made[0]).function is ping


def test_as_tool_takes_a_tool_or_a_function() -> None:
    def double(n: int) -> int:
        return 2 * n

    made = tool(double)
    assert as_tool(made) is made
    assert as_tool(double).parameters == made.parameters
    with pytest.raises(TypeError, match=r"a tool is a function or a Tool, got 42 \(type=int\)"):
        as_tool(42)  # type: ignore[arg-type]


# ---- running ---------------------------------------------------------------------------------


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST_ID", default="")


def test_a_sync_tool_runs_in_a_daemon_thread_in_the_callers_context() -> None:
    @tool
    def where(label: str) -> tuple[str, int | None, bool, str]:
        thread = threading.current_thread()
        return label, thread.ident, thread.daemon, REQUEST_ID.get()

    async def call() -> Any:
        REQUEST_ID.set("req-7")
        return await where(label="x")

    assert where.is_async is False
    label, ident, daemon, request_id = asyncio.run(call())
    assert label == "x"
    assert ident != threading.get_ident()
    assert daemon is True  # a call that hangs past its timeout never holds the process
    assert request_id == "req-7"


def test_what_a_sync_tool_raises_reaches_the_caller() -> None:
    @tool
    def broken() -> str:
        raise LookupError("no such order")

    with pytest.raises(LookupError, match="no such order"):
        asyncio.run(broken())


def test_an_async_tool_is_awaited_on_the_loop() -> None:
    @tool
    async def where(label: str) -> tuple[str, int]:
        await asyncio.sleep(0)
        return label, threading.get_ident()

    assert where.is_async is True
    assert asyncio.run(where(label="y")) == ("y", threading.get_ident())


def test_an_object_with_an_async_call_method_is_async() -> None:
    class Adder:
        async def __call__(self, a: int, b: int) -> int:
            return a + b

    added = tool(Adder(), name="add")
    assert added.is_async is True
    assert list(added.parameters["properties"]) == ["a", "b"]
    assert asyncio.run(added(**added.arguments('{"a": 2, "b": 3}'))) == 5


# ---- arguments ---------------------------------------------------------------------------------


@tool
def plan(
    point: Point,
    color: Color,
    person: Person,
    movie: Movie,
    pair: tuple[int, str],
    tags: set[str],
    ratio: float,
    level: Level = Level.LOW,
    note: str | None = None,
) -> str:
    return "planned"


PLAN_JSON = {
    "point": {"x": 1, "tags": ["a"]},
    "color": "green",
    "person": {"name": "Ada", "home": {"city": "London"}},
    "movie": {"title": "Alien"},
    "pair": [2, "b"],
    "tags": ["x", "y"],
    "ratio": 3,
}


def test_arguments_are_converted_to_the_functions_types() -> None:
    assert plan.arguments(json.dumps(PLAN_JSON)) == {
        "point": Point(x=1, y=0, tags=["a"]),
        "color": Color.GREEN,
        "person": Person(name="Ada", home=Address(city="London")),
        "movie": {"title": "Alien"},
        "pair": (2, "b"),
        "tags": {"x", "y"},
        "ratio": 3.0,
    }
    converted = plan.arguments({**PLAN_JSON, "level": 2, "note": None})
    assert (converted["level"], converted["note"]) == (Level.HIGH, None)
    assert type(converted["ratio"]) is float


@pytest.mark.parametrize("raw", [None, "", "  ", "null", {}])
def test_no_arguments(raw: Any) -> None:
    @tool
    def now() -> str:
        return "noon"

    assert now.arguments(raw) == {}


def test_an_integer_parameter_takes_a_whole_float() -> None:
    assert taking(int).arguments('{"x": 2.0}') == {"x": 2}
    assert type(taking(int).arguments('{"x": 2.0}')["x"]) is int


def test_recursive_and_nested_values_are_converted() -> None:
    node = taking(Node).arguments('{"x": {"value": 1, "children": [{"value": 2}]}}')["x"]
    assert node == Node(1, [Node(2)])
    points = taking(list[Point | None]).arguments('{"x": [{"x": 1}, null]}')["x"]
    assert points == [Point(1), None]


BAD_ARGUMENTS = [
    pytest.param(
        '{"point": {"x": 1}',
        "tool 'plan': the arguments are not valid JSON (Expecting ',' delimiter at character 18):"
        ' \'{"point": {"x": 1}\'. Call plan again with one JSON object holding its arguments by'
        " name (point, color, person, movie, pair, tags, ratio, level, note).",
        id="not-json",
    ),
    pytest.param(
        "[1, 2]",
        "tool 'plan': the arguments must be a JSON object, got an array [1, 2].",
        id="not-an-object",
    ),
    pytest.param(
        {**PLAN_JSON, "ratio": "high"},
        "tool 'plan': wrong arguments: argument 'ratio': expected a number, got a string \"high\"."
        " Call plan again with arguments that fit its parameters.",
        id="wrong-type",
    ),
    pytest.param(
        {key: value for key, value in PLAN_JSON.items() if key not in ("color", "tags")},
        "tool 'plan': wrong arguments: missing required argument 'color', 'tags'.",
        id="missing-required",
    ),
    pytest.param(
        {**PLAN_JSON, "colour": "red"},
        "tool 'plan': wrong arguments: unknown argument 'colour' (known: point, color, person,"
        " movie, pair, tags, ratio, level, note).",
        id="unknown-argument",
    ),
    pytest.param(
        {**PLAN_JSON, "color": "blue"},
        'argument \'color\': expected one of "red", "green", got a string "blue".',
        id="not-in-enum",
    ),
    pytest.param(
        {**PLAN_JSON, "point": {"x": "1", "z": 0}},
        "wrong arguments: unknown field 'z' in argument 'point' (known: x, y, tags); "
        "argument 'point.x': expected an integer, got a string \"1\".",
        id="nested-fields",
    ),
    pytest.param(
        {**PLAN_JSON, "person": {"name": "Ada", "home": {"city": 7}}},
        "argument 'person.home.city': expected a string, got a number 7.",
        id="through-defs",
    ),
    pytest.param(
        {**PLAN_JSON, "note": 5},
        "argument 'note': expected a string or null, got a number 5.",
        id="optional",
    ),
    pytest.param(
        {**PLAN_JSON, "pair": [1, 2, 3]},
        "argument 'pair': [1, 2, 3] is too long;",
        id="tuple-length",
    ),
    pytest.param(
        {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "point": 1},
        "wrong arguments: missing required argument 'color', 'person', 'movie', 'pair', 'tags',"
        " 'ratio'; unknown argument 'a', 'b', 'c', 'd', 'e', 'f' (known: point, color, person,"
        " movie, pair, tags, ratio, level, note); argument 'point': expected an object with x,"
        " y, tags, got a number 1.",
        id="several",
    ),
]


@pytest.mark.parametrize(("raw", "message"), BAD_ARGUMENTS)
def test_wrong_arguments_say_what_to_fix(raw: Any, message: str) -> None:
    with pytest.raises(ToolArgumentError) as raised:
        plan.arguments(raw)
    assert message in str(raised.value)
    assert str(raised.value).startswith("tool 'plan': ")
    assert isinstance(raised.value, ValueError)


def test_only_the_first_five_problems_are_listed() -> None:
    many = taking(list[int]).arguments
    with pytest.raises(ToolArgumentError) as raised:
        many({"x": ["a", "b", "c", "d", "e", "f", "g"]})
    assert str(raised.value) == (
        "tool 'function': wrong arguments: argument 'x[0]': expected an integer, got a string"
        " \"a\"; argument 'x[1]': expected an integer, got a string \"b\"; argument 'x[2]':"
        " expected an integer, got a string \"c\"; argument 'x[3]': expected an integer, got a"
        ' string "d"; argument \'x[4]\': expected an integer, got a string "e"; and 2 more.'
        " Call function again with arguments that fit its parameters."
    )


def test_a_value_the_type_itself_refuses_is_an_argument_error() -> None:
    with pytest.raises(ToolArgumentError) as raised:
        taking(Positive).arguments({"x": {"n": -1}})
    assert str(raised.value) == (
        "tool 'function': argument 'x' was refused: n must be positive, got -1. "
        "Call function again with a corrected 'x'."
    )


def test_each_refusal_names_its_place_in_the_arguments() -> None:
    with pytest.raises(ToolArgumentError) as raised:
        taking(list[Positive]).arguments({"x": [{"n": 1}, {"n": -2}, {"n": -3}]})
    assert str(raised.value) == (
        "tool 'function': argument 'x[1]' was refused: n must be positive, got -2; "
        "argument 'x[2]' was refused: n must be positive, got -3. "
        "Call function again with a corrected 'x'."
    )


def test_a_hand_made_tool_checks_its_schema_and_converts_nothing() -> None:
    schema = {"type": "object", "properties": {"n": INTEGER}, "required": ["n"]}
    made = Tool(name="raw", description="", parameters=schema, function=lambda n: n)
    assert made.arguments('{"n": 1, "extra": [1]}') == {"n": 1, "extra": [1]}
    with pytest.raises(ToolArgumentError, match="missing required argument 'n'"):
        made.arguments("{}")
    with pytest.raises(ValueError, match="its parameters are not a valid JSON Schema"):
        Tool(name="raw", description="", parameters={"type": 5}, function=lambda: 0)


# ---- decoration-time errors ------------------------------------------------------------------


def no_hint(city, days: int) -> str:  # type: ignore[no-untyped-def]
    return str(city)


def var_positional(*cities: str) -> str:
    return ""


def var_keyword(**options: str) -> str:
    return ""


def positional_only(city: str, /) -> str:
    return city


def unresolved(x):  # type: ignore[no-untyped-def]
    return x


unresolved.__annotations__ = {"x": "Missing"}


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (
            no_hint,
            "tool 'no_hint': parameter 'city' has no type hint; tools need types so the model",
        ),
        (var_positional, "tool 'var_positional': tools take named parameters, and *cities takes"),
        (var_keyword, "tool 'var_keyword': tools take named parameters, and **options takes"),
        (positional_only, "parameter 'city' is positional-only, but tools are called with keyword"),
        (
            unresolved,
            "tool 'unresolved': cannot read its type hints: name 'Missing' is not defined",
        ),
    ],
    ids=["no-hint", "args", "kwargs", "positional-only", "unresolved"],
)
def test_a_function_no_tool_can_be_made_of_fails_at_decoration(function: Any, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        tool(function)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (Socket, "parameter 'x' (Socket) has no JSON form (pydantic: Unable to generate"),
        (list[Socket], "test_tools.Socket]) has no JSON form (pydantic: Unable to"),
        (Callable[[int], int], "(pydantic: Cannot generate a JsonSchema for core_schema.Call"),
    ],
    ids=["class", "list-of-class", "callable"],
)
def test_a_type_with_no_json_form_fails_at_decoration(annotation: Any, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        taking(annotation)
    assert str(raised.value).startswith("tool 'function': ")
    assert message in str(raised.value)
    assert str(raised.value).endswith("a TypedDict, a dataclass or a pydantic model")


@pytest.mark.parametrize(
    ("annotation", "sent", "value"),
    [
        (dict[int, str], {"1": "a"}, {1: "a"}),
        (Point | Movie, {"title": "Alien"}, {"title": "Alien"}),
        (Point | Movie, {"x": 1}, Point(1)),
    ],
    ids=["int-keys", "union-of-classes-dict", "union-of-classes-dataclass"],
)
def test_pydantic_reads_more_types_than_json_schema_names(
    annotation: Any, sent: Any, value: Any
) -> None:
    assert taking(annotation).arguments({"x": sent}) == {"x": value}


def test_a_bad_name_or_timeout_fails_at_decoration() -> None:
    with pytest.raises(ValueError, match=r"tool name '<lambda>' is not one a model API accepts"):
        tool(lambda: None)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds or None"):
        taking(int, timeout=0)


# ---- render ----------------------------------------------------------------------------------


class Opaque:
    def __str__(self) -> str:
        return "<opaque>"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ("", ""),
        (None, "null"),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        (Color.RED, '"red"'),
        (Level.HIGH, "2"),
        (Point(1, 2), '{"x":1,"y":2,"tags":[]}'),
        (
            Person(name="Zoë", home=Address(city="Kraków")),
            '{"name":"Zoë","home":{"city":"Kraków"}}',
        ),
        ({"città": [1, 2], "color": Color.GREEN}, '{"città":[1,2],"color":"green"}'),
        ([Point(0), None], '[{"x":0,"y":0,"tags":[]},null]'),
        ((1, "a"), '[1,"a"]'),
        ({3, 1, 2}, "[1,2,3]"),
        (
            {"when": datetime.date(2024, 5, 1), "what": Opaque()},
            '{"when":"2024-05-01","what":"<opaque>"}',
        ),
        (Opaque(), "<opaque>"),
    ],
    ids=[
        "str",
        "empty-str",
        "None",
        "int",
        "float",
        "bool",
        "Enum",
        "IntEnum",
        "dataclass",
        "pydantic",
        "dict",
        "list",
        "tuple",
        "set",
        "inside-containers",
        "unknown-object",
    ],
)
def test_render(value: Any, text: str) -> None:
    assert render(value) == text


# ---- properties ------------------------------------------------------------------------------

PRIMITIVES = st.sampled_from([str, int, float, bool, type(None)])
LITERALS = st.lists(
    st.one_of(st.text(max_size=5), st.integers(-5, 5)),
    min_size=1,
    max_size=4,
    unique_by=lambda value: (type(value), value),
).map(lambda values: Literal[tuple(values)])
ANNOTATIONS = st.recursive(
    PRIMITIVES | LITERALS,
    lambda inner: st.one_of(
        inner.map(lambda a: Optional[a]),  # noqa: UP045
        inner.map(lambda a: list[a]),  # type: ignore[valid-type]
        inner.map(lambda a: dict[str, a]),  # type: ignore[valid-type]
        inner.map(lambda a: tuple[a, ...]),  # type: ignore[valid-type]
    ),
    max_leaves=6,
)


def values(annotation: Any) -> st.SearchStrategy[Any]:
    """The Python values of an annotation ANNOTATIONS can produce."""
    origin, args = get_origin(annotation), get_args(annotation)
    plain = {
        str: st.text(max_size=8),
        int: st.integers(),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
        type(None): st.none(),
    }
    if annotation in plain:
        return plain[annotation]
    if origin is Literal:
        return st.sampled_from(args)
    if origin is Union:
        return st.one_of(*map(values, args))
    if origin is list:
        return st.lists(values(args[0]), max_size=3)
    if origin is tuple:
        return st.lists(values(args[0]), max_size=3).map(tuple)
    assert origin is dict, annotation
    return st.dictionaries(st.text(max_size=5), values(args[1]), max_size=3)


@settings(deadline=None)
@given(annotation=ANNOTATIONS, data=st.data())
def test_every_schema_is_valid_and_accepts_the_types_values(annotation: Any, data: Any) -> None:
    made = taking(annotation)
    jsonschema.Draft202012Validator.check_schema(made.parameters)
    value = data.draw(values(annotation))
    sent = json.loads(json.dumps({"x": value}))
    assert list(jsonschema.Draft202012Validator(made.parameters).iter_errors(sent)) == []
    assert made.arguments(json.dumps({"x": value})) == {"x": value}


@settings(deadline=None)
@given(annotation=ANNOTATIONS)
def test_every_spec_is_plain_json(annotation: Any) -> None:
    spec = taking(annotation).spec()
    assert json.loads(json.dumps(spec)) == spec
    assert spec["function"]["parameters"]["required"] == ["x"]


def test_pydantic_is_imported_when_a_tool_is_made_not_with_the_orchestrator() -> None:
    code = (
        "import sys\n"
        "from pytest_harness.orchestrator import Orchestrator, Tool, tool\n"
        "print('pydantic' in sys.modules)\n"
        "def ping(host: str) -> str:\n"
        "    return host\n"
        "tool(ping)\n"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_tool_is_a_frozen_value() -> None:
    made = taking(int)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "other"  # type: ignore[misc]
