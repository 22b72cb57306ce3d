"""Agents: one structured model call each (``Agent``) and what it returns (``AgentResult``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_harness import _aio
from pytest_harness._local import route
from pytest_harness._model import seam as model
from pytest_harness._model.response import ModelResponse, TokenCallback, Usage
from pytest_harness._model.structured import Output, check_output, cut_off
from pytest_harness.errors import ConfigError, JudgeOutputError


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentResult:
    """What an agent (or a tribunal, through ``Tribunal.result()``) produced.

    Attributes:
        input: the input the agent was given.
        output: the reply text exactly as the model gave it (None for a tribunal).
        processed: the parsed reply (a dict for a schema'd agent; the visible text for a
            free-text agent; ``{"verdict": value}`` for a tribunal).
        model: the model that answered.
        usage: token counts of the call.
        cost: USD cost, when litellm knows the model's price.
        execution_time: seconds the call took.
        agent: the agent's name (its class name unless given).
    """

    input: Any
    output: str | None
    processed: Any
    model: str | None = None
    usage: Usage | None = None
    cost: float | None = None
    execution_time: float | None = None
    agent: str = ""

    @property
    def tokens(self) -> int:
        return self.usage.total_tokens if self.usage is not None else 0


def totals(results: Iterable[Any]) -> tuple[Usage | None, float | None]:
    """The summed usage and USD cost of some results (None where no result has one)."""
    usages = [r.usage for r in results if getattr(r, "usage", None) is not None]
    costs = [r.cost for r in results if getattr(r, "cost", None) is not None]
    return (sum(usages, Usage()) if usages else None), (sum(costs) if costs else None)


class Agent:
    """One model call with instructions and an output schema.

    Declare an agent as a class; an instance may override each attribute (``examples``
    aside) by the keyword of the same name.

    Attributes:
        model: The litellm model name; ``--harness-model`` and ``harness_model`` replace it.
        instructions: The system prompt.
        output: A JSON-schema dict or a pydantic model class the reply must fit (None: free
            text). A dict is checked when the class is declared (``ConfigError``).
        temperature: The sampling temperature (None: the provider's default).
        params: Other litellm parameters (``max_tokens``, ``api_base``, ...).
        structured: Use the provider's ``response_format`` (True) or the prompt (False);
            None (the default) decides from what litellm knows of the model.
        examples: Few-shot ``(input, expected output)`` pairs, shown in the system message
            after the instructions, in order.
    """

    model: ClassVar[str | None] = None
    instructions: ClassVar[str] = ""
    output: ClassVar[Any] = None
    temperature: ClassVar[float | None] = None
    params: ClassVar[Mapping[str, Any]] = {}
    structured: ClassVar[bool | None] = None
    examples: ClassVar[Sequence[tuple[Any, Any]]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check the class's own ``output`` now, not at its first call (``ConfigError``)."""
        super().__init_subclass__(**kwargs)
        if "output" in cls.__dict__:
            check_output(cls.__dict__["output"], cls.__name__)

    def __init__(
        self,
        input: Any = None,
        context: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        memory: str | Sequence[Mapping[str, Any]] | None = None,
        *,
        model: str | None = None,
        instructions: str | None = None,
        output: Any = None,
        temperature: float | None = None,
        structured: bool | None = None,
        name: str | None = None,
    ) -> None:
        """An agent for one call: its input, and any class attribute overridden for it.

        Args:
            input: What the agent judges or answers: the user turn (a non-string as JSON).
            context: Facts shown after the input, as JSON.
            params: litellm parameters added to the class's ``params``.
            memory: Earlier context: a text (added to the system message as notes) or
                chat messages (sent before the input).
            model: Overrides the class's ``model``.
            instructions: Overrides the class's ``instructions``.
            output: Overrides the class's ``output``.
            temperature: Overrides the class's ``temperature``.
            structured: Overrides the class's ``structured``.
            name: The agent's name in results and reports (default: the class name).
        """
        self.input = input
        self.context = dict(context or {})
        self.memory = memory
        self.name = name or type(self).__name__
        merged = {**type(self).params, **(params or {})}
        overrides = {
            "model": model,
            "instructions": instructions,
            "output": output,
            "temperature": temperature,
            "structured": structured,
        }
        for attribute, value in overrides.items():
            if value is not None:
                setattr(self, attribute, value)
        self.params = merged  # type: ignore[misc]
        if output is not None:
            check_output(output, self.name)

    def __repr__(self) -> str:
        return f"<{self.name} model={self.model!r} input={self.input!r:.60}>"

    # What the model is asked ------------------------------------------------------------

    def prompt(self) -> str:
        """The user turn: the input, then the context as JSON. Override to change it."""
        text = self.input if isinstance(self.input, str) else _as_json(self.input)
        if self.context:
            text = f"{text}\n\nContext:\n{_as_json(self.context)}"
        return text

    def messages(self, *, schema_in_prompt: bool = False) -> list[dict[str, Any]]:
        """System instructions (with the output schema when asked), the memory, the prompt."""
        return self._messages(self._output().instructions if schema_in_prompt else None)

    def resolved_model(self) -> str:
        """The model this call will use: the harness override, else the agent's own."""
        resolved = model.resolve(self.model)
        if not resolved:
            raise ConfigError(
                f"agent {self.name} has no model: set `model = ...` on the class, pass "
                "model=... when creating it, or run pytest with --harness-model=MODEL "
                "(or set harness_model in your pytest ini)"
            )
        return resolved

    def uses_response_format(self, model_name: str) -> bool:
        """Whether a schema goes to the provider as ``response_format`` (else in the prompt).

        ``structured`` decides when set; otherwise litellm's knowledge of the model does.
        """
        if self.structured is not None:
            return self.structured
        return model.supports_schema(model_name)

    # Calling -----------------------------------------------------------------------------

    def call(self, *, on_token: TokenCallback | None = None) -> AgentResult:
        """Make the call and return its AgentResult (sync facade of ``acall``)."""
        return _aio.run_sync(self.acall(on_token=on_token))

    async def acall(self, *, on_token: TokenCallback | None = None) -> AgentResult:
        """Make the call and return its AgentResult.

        Args:
            on_token: stream the reply and call this with each text delta.

        Raises:
            JudgeOutputError: the reply does not parse or does not fit ``output``.
            InvalidResponse / DegenerateResponse: the reply is empty or think-only.
            ConfigError: the agent has no model or a broken schema.
        """
        started = time.perf_counter()
        model_name = self.resolved_model()
        output = self._output()
        native = output.schema is not None and self.uses_response_format(model_name)
        params: dict[str, Any] = dict(self.params)
        if self.temperature is not None:
            params.setdefault("temperature", self.temperature)
        params.update(self._grammar_notes())  # read by the embedded model's route only
        call = model.request(
            self._messages(None if native else output.instructions),
            model=model_name,
            response_format=output.response_format if native else None,
            stream=on_token is not None,
            **params,
        )
        response = await model.asend(call, on_token=on_token)
        return self._result(response, self.parse(response), started)

    def parse(self, response: ModelResponse) -> Any:
        """The processed value of a reply: the schema-checked JSON, or the visible text.

        Raises:
            JudgeOutputError: the reply does not parse or fit; when the provider stopped it at
                the token limit (``finish_reason == "length"``), the message says so.
        """
        try:
            return self._output().read(response.text, raw=response.content or "")
        except JudgeOutputError as error:
            if response.finish_reason != "length":
                raise
            raise cut_off(error, self.name, self.params, self._needed_tokens()) from error

    def _needed_tokens(self) -> int | None:
        """On the embedded model, the tokens the longest reply its output schema allows
        takes (the grammar bounds it); None elsewhere, or for a reply no schema bounds."""
        if self.resolved_model() != route.LOCAL_MODEL:
            return None
        schema = self._grammar_notes().get(route.SCHEMA_NOTE) or self._output().schema
        return None if schema is None else route.needed_tokens(schema)

    def _grammar_notes(self) -> dict[str, Any]:
        """What the embedded model's grammar should hold this reply to, beyond its output
        schema (``route.SCHEMA_NOTE``, ``route.GRAMMAR_NOTE``): a judge that knows its
        reply's shape says so here. No other model sees them."""
        return {}

    def _output(self) -> Output:
        """The output declaration, read once (again only if ``output`` is replaced)."""
        read: Output | None = self.__dict__.get("_read_output")
        if read is None or read.declared is not self.output:
            read = self._read_output = Output.of(self.output, self.name)
        return read

    def _messages(self, schema_text: str | None) -> list[dict[str, Any]]:
        system = [self.instructions] if self.instructions else []
        if self.examples:
            system.append(_examples_text(self.examples, self.name))
        if isinstance(self.memory, str) and self.memory:
            system.append(f"Notes from earlier:\n{self.memory}")
        if schema_text is not None:
            system.append(schema_text)
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": "\n\n".join(system)})
        if self.memory and not isinstance(self.memory, str):
            messages += [dict(message) for message in self.memory]
        messages.append({"role": "user", "content": self.prompt()})
        return messages

    def _result(self, response: ModelResponse, processed: Any, started: float) -> AgentResult:
        return AgentResult(
            input=self.input,
            output=response.content,
            processed=processed,
            model=response.model,
            usage=response.usage,
            cost=response.cost,
            execution_time=round(time.perf_counter() - started, 6),
            agent=self.name,
        )


def _as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def _examples_text(examples: Sequence[Any], agent: str) -> str:
    """The few-shot examples as the system message shows them: each input, then its output."""
    shown = []
    for number, pair in enumerate(examples, 1):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ConfigError(
                f"agent {agent}: example {number} is {pair!r:.80}; write each example as a "
                'pair (input, expected output), e.g. examples = [("Thanks!", {"pass": True})]'
            )
        shown.append(f"Input: {_text(pair[0])}\nOutput: {_text(pair[1])}")
    return "Examples:\n\n" + "\n\n".join(shown)


def _text(value: Any) -> str:
    """A string as it is, anything else as JSON (as ``prompt`` shows a non-string input)."""
    return value if isinstance(value, str) else _as_json(value)
