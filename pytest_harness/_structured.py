"""Structured output: the JSON schema an agent declares, and reading a reply against it.

A schema is a JSON-schema dict or a pydantic model class (anything with
``model_json_schema()`` / ``model_validate()``; pydantic is not imported here). A reply is
read leniently, because many models wrap JSON in prose or code fences even when asked not
to: the whole text, else the first fenced block, else the first balanced JSON object. What is
found must then fit the schema. Every failure is a ``JudgeOutputError`` carrying the raw text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_harness.errors import ConfigError, JudgeOutputError, quote

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder(strict=False)  # a raw newline inside a string is still read
# A verdict is a few levels deep. Deeper JSON is refused: Python's parser, then jsonschema,
# pydantic and every json.dumps of the value would run out of stack on it.
MAX_REPLY_DEPTH = 100


def json_schema(output: Any) -> dict[str, Any] | None:
    """The JSON schema of an agent's ``output`` declaration (None: free text)."""
    if output is None:
        return None
    if isinstance(output, Mapping):
        return dict(output)
    to_schema = getattr(output, "model_json_schema", None)
    if isinstance(output, type) and callable(to_schema):
        schema = to_schema()
        if isinstance(schema, dict):
            return schema
    raise ConfigError(
        f"an agent's output must be a JSON-schema dict or a pydantic model class, "
        f"got {output!r} (type={type(output).__name__})"
    )


def response_format(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The OpenAI ``response_format`` that asks the provider for ``schema``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": dict(schema)}}


def schema_instructions(schema: Mapping[str, Any]) -> str:
    """What the system prompt says when the provider cannot enforce the schema itself."""
    return (
        "Reply with one JSON object only, no prose and no code fences, matching this JSON "
        f"schema:\n{json.dumps(schema, sort_keys=True)}"
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
    """

    declared: Any
    schema: dict[str, Any] | None
    name: str

    @classmethod
    def of(cls, declared: Any, name: str) -> Output:
        """Read an agent's ``output`` declaration (``ConfigError`` when it is not one)."""
        return cls(declared, json_schema(declared), name)

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The OpenAI ``response_format`` asking the provider for the schema, if any."""
        return None if self.schema is None else response_format(self.schema, self.name)

    @property
    def instructions(self) -> str | None:
        """What the system prompt says when the provider cannot enforce the schema itself."""
        return None if self.schema is None else schema_instructions(self.schema)

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
        _check(value, self.schema, raw)
        return value


def _check(value: Any, schema: dict[str, Any], raw: str) -> None:
    import jsonschema  # only agents with a schema pay for the import

    problem = jsonschema.exceptions.best_match(_validator(schema).iter_errors(value))
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path) or "(the top level)"
        raise JudgeOutputError(
            f"the reply does not fit the output schema at {where}: {problem.message}. "
            f"Reply: {quote(raw, 200)}",
            raw=raw,
        )


_VALIDATORS: dict[str, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """The schema's validator, built (and the schema itself checked) once per schema."""
    key = json.dumps(schema, sort_keys=True, default=str)
    validator = _VALIDATORS.get(key)
    if validator is None:
        import jsonschema

        validator_class = jsonschema.validators.validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as bad:
            raise ConfigError(
                f"the agent's output schema is not a valid JSON schema: {bad.message}"
            ) from None
        validator = _VALIDATORS[key] = validator_class(schema)
    return validator
