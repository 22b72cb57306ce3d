"""Compaction against a scripted model on loopback: real litellm calls over real HTTP.

The scripted model looks an order up, then two more in one batch, then a fourth, then
answers; each result is about 300 tokens. Token counts (litellm's ``token_counter``) of
the four requests are about 54, 380, 1030 and 1360: under a budget of 1,200 only the
fourth is over, and with ``keep_recent=4`` its naive cut would fall between the batch's
call and its results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._model import seam as _model
from pytest_harness.errors import ConfigError, RunFailed
from pytest_harness.orchestrator._compaction import (
    SUMMARY_PROMPT,
    Compaction,
    count_tokens,
    token_bound,
)
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._pipeline import ModelCall, count_usage
from pytest_harness.orchestrator._tools import tool
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytestmark = pytest.mark.harness(cassette=False)  # the loopback server answers every run

SYSTEM = "You are a support agent."
QUESTION = "Where are my orders?"
SUMMARY = "The user asked where their orders are; A-1 has shipped."
HEADING = "Summary of the earlier conversation: "


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"{order}: " + "shipped " * 300


def calls(*orders: str) -> Reply:
    specs = [ToolCallSpec(name="lookup", arguments={"order": o}) for o in orders]
    return Reply(content=None, tool_calls=specs)


def is_summary(body: dict[str, Any]) -> bool:
    return bool(body["messages"][0]["content"] == SUMMARY_PROMPT)


def scripted(body: dict[str, Any], summary: Reply | None = None) -> Reply:
    """The model: A-1, then A-2 and A-3 in one batch, then A-4, then the answer."""
    if is_summary(body):
        return summary or Reply(content=SUMMARY)
    last = body["messages"][-1]
    if last["role"] != "tool":
        return calls("A-1")
    after = {"A-1": calls("A-2", "A-3"), "A-3": calls("A-4"), "A-4": Reply(content="All shipped.")}
    return after[last["content"].split(":")[0]]


def plain(messages: Any) -> list[dict[str, Any]]:
    """Messages as litellm sends them (it leaves out the keys that are None)."""
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def agent(server: LoopbackServer, *middleware: Any, model: str | None = None) -> Orchestrator:
    return Orchestrator(
        model or server.model,
        [lookup],
        SYSTEM,
        params=server.params,
        middleware=[*middleware, count_usage],
    )


def test_over_budget_older_turns_become_one_summary_and_pairs_stay_whole(
    server: LoopbackServer,
) -> None:
    server.handler = scripted
    run = agent(server, Compaction(budget=1200, keep_recent=4)).run(QUESTION)
    assert run.stop_reason == "done"
    assert run.output == "All shipped."

    # Four model requests, and one more: the summary, just before the fourth.
    assert [is_summary(body) for body in server.requests] == [False, False, False, True, False]
    assert run.requests == 4
    summary_call = server.requests[3]
    assert "tools" not in summary_call
    assert summary_call["messages"][0] == {"role": "system", "content": SUMMARY_PROMPT}
    summarized = summary_call["messages"][1]["content"]
    assert summarized.startswith(f"user: {QUESTION}")
    assert 'assistant called lookup with {"order": "A-1"}' in summarized
    assert "lookup returned: A-1: shipped shipped" in summarized
    assert "A-2" not in summarized  # kept, not summarized
    assert SYSTEM not in summarized

    # keep_recent=4 would start the tail on the batch's second result: it starts on its call.
    sent = server.requests[4]["messages"]
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert sent[0] == {"role": "system", "content": SYSTEM}
    assert sent[1] == {"role": "user", "content": HEADING + SUMMARY}
    batch = [c["id"] for c in sent[2]["tool_calls"]]
    assert [json.loads(c["function"]["arguments"]) for c in sent[2]["tool_calls"]] == [
        {"order": "A-2"},
        {"order": "A-3"},
    ]
    assert [sent[3]["tool_call_id"], sent[4]["tool_call_id"]] == batch
    assert sent[6]["content"].startswith("A-4:")

    # The conversation itself was compacted (a next run goes on from it).
    assert plain(run.messages[:-1]) == sent
    (event,) = run.events
    assert (event.kind, event.request) == ("compaction", 4)
    assert event.detail.startswith("3 messages summarized into one: the prompt went from ~1,")
    assert event.detail.endswith("tokens (budget 1,200)")
    # The summary's tokens are on the run's tally (the loopback counts words).
    assert run.usage.completion_tokens == len(SUMMARY.split()) + 2  # "All shipped."


def test_under_budget_nothing_is_summarized(server: LoopbackServer) -> None:
    server.handler = scripted
    run = agent(server, Compaction(budget=100_000, keep_recent=2)).run(QUESTION)
    assert run.stop_reason == "done"
    assert len(server.requests) == 4
    assert not any(is_summary(body) for body in server.requests)
    assert server.requests[3]["messages"] == plain(run.messages[:-1])
    assert len(run.messages) == 10
    assert run.events == ()


@pytest.mark.parametrize(
    ("summary", "reason"),
    [
        (Reply(status=400, error="summary model unavailable"), "summary model unavailable"),
        (Reply(content=""), "InvalidResponse"),
    ],
    ids=["provider-error", "empty"],
)
def test_a_failing_summary_call_fails_the_run_and_loses_nothing(
    server: LoopbackServer, summary: Reply, reason: str
) -> None:
    server.handler = lambda body: scripted(body, summary)
    with pytest.raises(RunFailed) as caught:
        agent(server, Compaction(budget=1200, keep_recent=4)).run(QUESTION)
    message = str(caught.value)
    assert message.startswith("request 4 of the run failed: CompactionFailed: the summary call")
    assert reason in message
    assert "raise the budget (Compaction(budget=...))" in message
    run = caught.value.run
    assert [m["role"] for m in run.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]
    assert not any(str(m.get("content")).startswith(HEADING) for m in run.messages)
    assert [is_summary(body) for body in server.requests] == [False, False, False, True]


@pytest.mark.harness(degenerate="off")
def test_a_summary_without_text_is_a_failure_even_when_the_seam_accepts_it(
    server: LoopbackServer,
) -> None:
    server.handler = lambda body: scripted(body, Reply(content="<think>hmm</think>"))
    with pytest.raises(RunFailed, match=r"CompactionFailed: .* returned no text"):
        agent(server, Compaction(budget=1200, keep_recent=4)).run(QUESTION)


def test_a_model_with_no_known_window_and_no_budget_never_compacts(
    server: LoopbackServer,
) -> None:
    server.handler = scripted
    run = agent(server, Compaction(fraction=0.0001)).run(QUESTION)  # "loopback": no window
    assert run.stop_reason == "done"
    assert not any(is_summary(body) for body in server.requests)
    assert run.events == ()


def test_the_default_budget_is_a_fraction_of_the_models_window(server: LoopbackServer) -> None:
    # A model litellm knows, reached on loopback through api_base.
    window = _model.lib().get_model_info("openai/gpt-4o-mini")["max_input_tokens"]
    server.handler = scripted
    compaction = Compaction(fraction=1200 / window, keep_recent=4)
    run = agent(server, compaction, model="openai/gpt-4o-mini").run(QUESTION)
    assert [is_summary(body) for body in server.requests] == [False, False, False, True, False]
    (event,) = run.events
    assert event.detail.endswith(f"(budget {int(window * compaction.fraction):,})")


def test_the_quick_bound_is_never_below_litellms_count() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    texts = ["plain English text. " * 20, "中文字符和标点。" * 30, "😀🧑‍💻 é ß ∑ ｱ" * 20, ""]
    messages = [{"role": "system", "content": SYSTEM}]
    for text in texts:
        messages += [
            {"role": "user", "content": text, "name": "someone"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": text}]},
        ]
    tools = [lookup.spec()]
    for model in ("openai/loopback", "openai/gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620"):
        exact = count_tokens(model, messages, tools)
        assert exact <= (token_bound(messages, tools) or 0)
    image = {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}
    assert token_bound([{"role": "user", "content": [image]}], []) is None  # litellm counts it


def test_a_growing_conversations_bound_builds_on_its_last_count() -> None:
    """What lets a long run skip the tokenizer: the bound of the messages added since."""
    compaction, model, tools = Compaction(budget=10), "openai/loopback", [lookup.spec()]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi " * 500}]
    call = ModelCall(
        model=model, messages=messages, tools=tools, params={}, agent=Orchestrator(model)
    )
    compaction.count(model, call)
    messages.append({"role": "assistant", "content": "Let me look."})
    grown = compaction.bound(model, call)
    assert grown is not None
    assert count_tokens(model, messages, tools) <= grown < (token_bound(messages, tools) or 0)
    messages[1] = {"role": "user", "content": "hello"}  # replaced, not added: start afresh
    assert compaction.bound(model, call) == token_bound(messages, tools)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"budget": 0}, "budget"),
        ({"budget": True}, "budget"),
        ({"keep_recent": 0}, "keep_recent"),
        ({"fraction": 0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"summary_prompt": " "}, "summary_prompt"),
    ],
)
def test_options_are_checked(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=rf"Compaction\({named}=\.\.\.\) expects"):
        Compaction(**options)


# A compacting run recorded into a cassette, then replayed.

APP = """
import pytest
from pytest_harness.orchestrator._loop import Orchestrator
from pytest_harness.orchestrator._compaction import Compaction
from pytest_harness.orchestrator._pipeline import count_usage
from pytest_harness.orchestrator._pipeline import ModelCall
from pytest_harness.orchestrator._tools import tool

@tool
def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return f"{{order}}: " + "shipped " * 300

def test_orders():
    bot = Orchestrator(
        "openai/loopback", [lookup], "You are a support agent.",
        params={{"api_base": "{url}", "api_key": "loopback-not-a-secret"}},
        middleware=[Compaction(budget=1200, keep_recent=4), count_usage],
    )
    run = bot.run("Where are my orders?")
    assert run.output == "All shipped."
    assert [e.kind for e in run.events] == ["compaction"]
    assert run.messages[1]["content"] == "Summary of the earlier conversation: {summary}"
"""


def test_a_compacting_run_records_its_summary_call_and_replays(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = scripted
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=APP.format(url=server.url, summary=SUMMARY))
    pytester.runpytest("-p", "no:cacheprovider", "--harness-live").assert_outcomes(passed=1)
    assert len(server.requests) == 5

    recorded = Path(pytester.path, "cassettes", "test_app", "test_orders.yaml").read_text()
    bodies = [i["request"]["body"]["json"] for i in json.loads(recorded)["interactions"]]
    assert [is_summary(body) for body in bodies] == [False, False, False, True, False]

    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert len(server.requests) == 5  # replayed, the summary call too: the server saw nothing
