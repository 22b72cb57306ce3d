"""The model seam against a real HTTP server, through litellm: sync, async and streaming."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from pytest_harness import DegenerateResponse, InvalidResponse, ModelResponse, acomplete, complete
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import HarnessWarning, ProviderResponseError
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

# These tests talk to the loopback server itself, not to cassettes.
pytestmark = pytest.mark.harness(cassette=False)

HOLD = 30.0  # seconds a handler waits for what it waits on; only a broken seam reaches it


def call(server: LoopbackServer, mode: str, **kwargs: object) -> ModelResponse:
    """Make one call in the given mode: sync, async, stream or astream."""
    stream = mode in ("stream", "astream")
    if mode.startswith("a"):
        return asyncio.run(
            acomplete("hi", model=server.model, stream=stream, **server.params, **kwargs)
        )
    return complete("hi", model=server.model, stream=stream, **server.params, **kwargs)


MODES = ["sync", "async", "stream", "astream"]


@pytest.mark.parametrize("mode", MODES)
def test_plain_text(server: LoopbackServer, mode: str) -> None:
    server.queue(Reply(content="Paris is the capital"))
    response = call(server, mode)
    assert response.content == "Paris is the capital"
    assert response.text == "Paris is the capital"
    assert response.finish_reason == "stop"
    assert response.interrupted is False
    assert response.tool_calls == ()
    assert response.model == "openai/loopback"
    assert response.usage.prompt_tokens == 1
    assert response.usage.completion_tokens == 4
    assert response.usage.total_tokens == 5
    assert response.cost is None  # litellm has no price for a loopback model
    assert response.latency_s > 0


@pytest.mark.parametrize("mode", MODES)
def test_same_response_shape_whatever_the_mode(server: LoopbackServer, mode: str) -> None:
    reply = Reply(content="same words", reasoning="thought first")
    server.queue(reply, reply)
    reference = call(server, "sync")
    assert call(server, mode) == reference
    assert reference.reasoning == "thought first"


@pytest.mark.parametrize("mode", MODES)
def test_tool_calls_parsed_and_raw_kept(server: LoopbackServer, mode: str) -> None:
    server.queue(
        Reply(
            content=None,
            tool_calls=[
                ToolCallSpec(name="lookup", arguments={"order": 42, "note": "late"}, id="a1"),
                ToolCallSpec(name="broken", arguments='{"order": 4', id="a2"),
                ToolCallSpec(name="noargs", arguments="", id="a3"),
            ],
        )
    )
    response = call(server, mode)
    assert response.has_tool_calls
    assert response.finish_reason == "tool_calls"
    first, broken, noargs = response.tool_calls
    assert (first.id, first.name, first.arguments) == (
        "a1",
        "lookup",
        {"order": 42, "note": "late"},
    )
    assert first.parsed
    assert (broken.name, broken.arguments, broken.raw_arguments) == ("broken", None, '{"order": 4')
    assert not broken.parsed
    assert noargs.arguments == {}


def test_tools_and_params_reach_the_provider(server: LoopbackServer) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    schema = {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}
    complete(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        model=server.model,
        tools=[tool],
        response_format=schema,
        temperature=0,
        **server.params,
    )
    body = server.requests[-1]
    assert body["tools"] == [tool]
    assert body["response_format"] == schema
    assert body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "be brief"}


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_streaming_calls_on_token_per_delta(server: LoopbackServer, mode: str) -> None:
    server.queue(Reply(content="one two three", reasoning="hidden"))
    tokens: list[str] = []
    response = call(server, mode, on_token=tokens.append)
    assert tokens == ["one ", "two ", "three"]
    assert "".join(tokens) == response.content
    assert server.requests[-1]["stream"] is True


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_stream_without_finish_reason_is_interrupted(server: LoopbackServer, mode: str) -> None:
    server.queue(Reply(content="half an answer", finish_reason=None))
    with pytest.raises(InvalidResponse) as caught:
        call(server, mode)
    assert caught.value.reason == "interrupted"
    assert caught.value.response is not None
    assert caught.value.response.content == "half an answer"
    assert caught.value.response.finish_reason is None


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_stream_cut_mid_way_keeps_the_partial(server: LoopbackServer, mode: str) -> None:
    server.queue(Reply(content="one two three four five", cut_after=3))
    with scope.override(degenerate="off"):
        response = call(server, mode)
    assert response.interrupted
    assert response.content == "one two "
    assert response.finish_reason is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(content=""), "empty_response"),
        (Reply(content="   \n"), "empty_response"),
        (Reply(content=None), "empty_response"),
        (Reply(content="<thinking>only thoughts</thinking>\n"), "degenerate"),
        (Reply(content="", reasoning="only thoughts"), "degenerate"),
        (Reply(content="\n<think>a</think> <think>b</think>"), "degenerate"),
    ],
    ids=["empty", "blank", "none", "think-only", "reasoning-only", "two-blocks"],
)
def test_unusable_responses_fail_loudly(
    server: LoopbackServer, mode: str, reply: Reply, reason: str
) -> None:
    server.queue(reply)
    with pytest.raises(InvalidResponse) as caught:
        call(server, mode)
    assert caught.value.reason == reason
    assert "openai/loopback" in str(caught.value)
    assert "harness_degenerate" in str(caught.value)
    assert isinstance(caught.value, DegenerateResponse) == (reason == "degenerate")


def test_think_only_with_litellm_extracting_the_block(server: LoopbackServer) -> None:
    # litellm moves a leading <think> block of an OpenAI-compatible reply into
    # reasoning_content: the visible content is then blank, which is still degenerate.
    server.queue(Reply(content="<think>I should answer</think>  "))
    with pytest.raises(DegenerateResponse) as caught:
        call(server, "sync")
    response = caught.value.response
    assert response is not None
    assert response.reasoning == "I should answer"
    assert "I should answer" in str(caught.value)


def test_warn_mode_returns_the_response_with_a_warning(server: LoopbackServer) -> None:
    server.queue(Reply(content=""))
    with scope.override(degenerate="warn"), pytest.warns(HarnessWarning, match="empty response"):
        response = call(server, "sync")
    assert response.content == ""


def test_off_mode_returns_the_response_silently(server: LoopbackServer) -> None:
    server.queue(Reply(content="<think>x</think>"))
    with scope.override(degenerate="off"):
        response = call(server, "sync")
    # litellm moves the leading think block into reasoning_content: the content left is blank.
    assert (response.content, response.reasoning, response.text) == ("", "x", "")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "BadRequestError"),
        (429, "RateLimitError"),
        (500, "InternalServerError"),
        (503, "ServiceUnavailableError"),
    ],
)
def test_provider_error_status_is_a_typed_litellm_error(
    server: LoopbackServer, mode: str, status: int, kind: str
) -> None:
    import litellm

    server.queue(Reply(status=status, error=f"scripted failure {status}"))
    with pytest.raises(getattr(litellm.exceptions, kind)) as caught:
        call(server, mode, max_retries=0)
    assert caught.value.status_code == status
    assert f"scripted failure {status}" in str(caught.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_malformed_json_body_is_a_typed_error(server: LoopbackServer, mode: str) -> None:
    import litellm

    server.queue(Reply(raw="{this is not json"))
    with pytest.raises(litellm.exceptions.InternalServerError, match="Expecting property name"):
        call(server, mode, max_retries=0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_completion_without_choices_is_a_harness_error(server: LoopbackServer, mode: str) -> None:
    server.queue(Reply(raw='{"id": "x", "object": "chat.completion", "choices": []}'))
    with pytest.raises(ProviderResponseError, match="without any choice"):
        call(server, mode)


def test_scope_retries_off_fails_fast(server: LoopbackServer) -> None:
    import litellm

    server.queue(*[Reply(status=500, error="first")] * 3, Reply(content="third time lucky"))
    with scope.override(retries=0), pytest.raises(litellm.exceptions.InternalServerError) as error:
        call(server, "sync")
    assert "first" in str(error.value)
    assert len(server.requests) == 1  # no retry: the server saw one attempt
    assert len(server.reset()) == 3  # what retries would have taken is still queued


def test_scope_model_override_replaces_the_model(server: LoopbackServer) -> None:
    with scope.override(model="openai/other"):
        response = call(server, "sync")
    assert response.model == "openai/other"
    assert server.requests[-1]["model"] == "other"


def test_scope_timeout_bounds_a_slow_call(server: LoopbackServer) -> None:
    import litellm

    events: list[str] = []
    release = threading.Event()

    def held(body: dict[str, Any]) -> Reply:
        events.append("arrived")
        release.wait(HOLD)  # the reply waits until the caller has given up
        events.append("replied")
        return Reply(content="too late")

    server.handler = held
    try:
        with (
            scope.override(timeout=0.3, retries=0),
            pytest.raises(litellm.exceptions.Timeout) as caught,
        ):
            call(server, "sync")
        events.append("timed out")
    finally:
        release.set()
    assert events[:2] == ["arrived", "timed out"]  # before the server's reply was sent
    assert len(server.requests) == 1  # and not retried
    # The error says where its 0.3 s came from, and how to raise it.
    (note,) = caught.value.__notes__
    assert note.startswith("pytest-harness: the call timed out after 0.3 s.")
    assert "harness_timeout ini key" in note
    assert "@pytest.mark.harness(timeout=...)" in note


def test_listeners_see_every_accepted_response(server: LoopbackServer) -> None:
    seen: list[tuple[str, ModelResponse]] = []
    with scope.override(listeners=scope.everything(lambda *event: seen.append(event))):
        first = call(server, "sync")
        second = call(server, "async")
    assert seen == [("response", first), ("response", second)]


def test_listeners_do_not_hear_of_a_failed_response(server: LoopbackServer) -> None:
    server.queue(Reply(content=""))
    seen: list[tuple[str, object]] = []
    with (
        scope.override(listeners=scope.everything(lambda *event: seen.append(event))),
        pytest.raises(InvalidResponse),
    ):
        complete("hi", model=server.model, **server.params)
    assert seen == []


def test_a_string_is_one_user_message(server: LoopbackServer) -> None:
    complete("What is 2+2?", model=server.model, **server.params)
    assert server.requests[-1]["messages"] == [{"role": "user", "content": "What is 2+2?"}]


def test_concurrent_async_calls_run_together(server: LoopbackServer) -> None:
    together = threading.Barrier(6, timeout=HOLD)  # no reply until all six calls arrived

    def handler(body: dict[str, Any]) -> Reply:
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return Reply(status=400, error="the calls did not all arrive before any reply")
        return Reply(content="done")

    async def panel() -> list[ModelResponse]:
        calls = [acomplete("hi", model=server.model, **server.params) for _ in range(6)]
        return await asyncio.gather(*calls)

    server.handler = handler
    responses = asyncio.run(panel())
    assert [r.content for r in responses] == ["done"] * 6
    assert len(server.requests) == 6


@pytest.mark.parametrize("stream", [False, True])
def test_cost_of_a_model_litellm_has_a_price_for(server: LoopbackServer, stream: bool) -> None:
    server.queue(Reply(content="one two three four"))
    response = complete("hi", model="openai/gpt-4o-mini", stream=stream, **server.params)
    usage = response.usage
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    # gpt-4o-mini in litellm's price map: $0.15 per million input, $0.60 per million output.
    assert response.cost == pytest.approx(
        usage.prompt_tokens * 0.15e-6 + usage.completion_tokens * 0.6e-6
    )


def test_the_providers_response_id_is_kept(server: LoopbackServer) -> None:
    server.queue(Reply(content="plain"), Reply(content="streamed"))
    plain = complete("hi", model=server.model, **server.params)
    streamed = complete("hi", model=server.model, stream=True, **server.params)
    assert (plain.id, streamed.id) == ("chatcmpl-loopback-1", "chatcmpl-loopback-2")


def test_usages_add_and_sum_to_one_total() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from pytest_harness import Usage

    counts = st.integers(min_value=0, max_value=10**9)
    usages = st.builds(Usage, prompt_tokens=counts, completion_tokens=counts, total_tokens=counts)

    @given(st.lists(usages, max_size=8))
    def adds(items: list[Usage]) -> None:
        total = sum(items, Usage())
        assert total.prompt_tokens == sum(u.prompt_tokens for u in items)
        assert total.completion_tokens == sum(u.completion_tokens for u in items)
        assert total.total_tokens == sum(u.total_tokens for u in items)
        assert Usage() + total == total

    adds()
    with pytest.raises(TypeError):
        _ = Usage() + 1  # type: ignore[operator]
