"""A replayed session never imports litellm (issue 42, item 3), and re-recording the same
answers leaves every file byte-identical (item 5).

What replay needs of litellm is kept with the recording: each model reply's price and the
provider litellm placed the seam's call with (``interactions.Priced``, the interaction's
``price``), and what litellm knew of a model when the recording asked (a schema sent as
``response_format`` or not, a context window: the cassette's metadata,
``CassetteSlot.recall``). A suite with tribunals, agents, an orchestrator run and the
application's own SDK calls is recorded against a loopback server, then replayed with the
server gone: the replaying process ends without litellm, and its report's costs are the
recording's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._cassettes import interactions, write
from pytest_harness._cassettes.slot import CassetteSlot
from pytest_harness._model import seam as _model
from pytest_harness._model.seam import complete
from pytest_harness._pytest_glue import scope
from pytest_harness._pytest_glue.watch import TrafficWatch
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

SUITE = """
from pathlib import Path

import openai
import pytest

from pytest_harness import Agent, Tribunal
from pytest_harness.orchestrator import Compaction, Orchestrator, defaults, tool

URL = "{url}"
PARAMS = {{"api_base": URL, "api_key": "loopback-not-a-secret"}}
CLIENT = openai.OpenAI(base_url=URL, api_key="loopback-not-a-secret", max_retries=0)


class Judge(Agent):
    model = "gpt-4o-mini"  # a bare name: litellm places it, the recording keeps where
    params = PARAMS
    output = {{
        "type": "object",
        "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
        "required": ["pass", "reason"],
    }}
    instructions = "You judge support replies."


class Strict(Judge):
    model = "openai/judge"
    instructions = "You judge support replies strictly."


class Polite(Tribunal):
    agents = [Judge, Strict]


class Bot(Agent):
    model = "openai/bot"
    params = PARAMS


@tool
def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return f"{{order}} ships today"


def answer(question, model):
    # A client that orders its request's keys differently from run to run.
    runs = Path("runs.txt")
    runs.write_text(str(int(runs.read_text() if runs.exists() else 0) + 1))
    shop = {{"region": "eu", "channel": "web"}}
    if int(runs.read_text()) % 2:
        shop = dict(reversed(shop.items()))
    reply = CLIENT.chat.completions.create(
        model=model, messages=[{{"role": "user", "content": question}}], extra_body=shop
    )
    return reply.choices[0].message.content


@pytest.mark.harness
def test_application_and_tribunal(harness, harness_model):
    said = answer("Where is A-1?", harness_model or "gpt-4o-mini")
    harness.assert_verdict(Polite, said)


@pytest.mark.harness
def test_agent(harness):
    assert harness.ask(Bot, "hello").output == "bot says hi"


@pytest.mark.harness
def test_orchestrator(harness):
    run = Orchestrator("gpt-4o-mini", [lookup], params=PARAMS).run("Where is A?")
    assert run.stop_reason == "done"
    assert [call.name for call in run.tool_calls] == ["lookup"]
    # Over a budget of one token, compaction counts each prompt's tokens (litellm's count).
    stack = [Compaction(budget=1) if isinstance(m, Compaction) else m for m in defaults()]
    run = Orchestrator("gpt-4o-mini", [lookup], params=PARAMS, middleware=stack).run("Where?")
    assert run.stop_reason == "done"
"""

CONFTEST = """
import sys
from pathlib import Path


def pytest_sessionfinish(session):
    Path("litellm_loaded.txt").write_text(str("litellm" in sys.modules))
"""

RUN = ("-p", "no:cacheprovider", "-p", "no:randomly")


def scripted(body: dict[str, Any]) -> Reply:
    """Judges pass, the bot says hi, the orchestrator looks order A up once, then answers."""
    said = json.dumps(body.get("messages"))
    if "judge support replies" in said:
        return Reply(content=json.dumps({"pass": True, "reason": "polite"}))
    if body.get("tools") and '"tool"' not in said:
        return Reply(
            content=None, tool_calls=[ToolCallSpec(name="lookup", arguments={"order": "A"})]
        )
    if body.get("tools"):
        return Reply(content="A ships today.")
    if "hello" in said:
        return Reply(content="bot says hi")
    return Reply(content="A-1 ships today.")


@pytest.fixture
def suite(pytester: pytest.Pytester, server: LoopbackServer) -> pytest.Pytester:
    server.handler = scripted
    pytester.makepyfile(test_suite=SUITE.format(url=server.url))
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    return pytester


def report(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    result = pytester.runpytest_subprocess(*RUN, *args, "--harness-report=report.json")
    result.assert_outcomes(passed=3)
    return json.loads((pytester.path / "report.json").read_text())


def costs(data: dict[str, Any]) -> dict[str, Any]:
    return {row["test"]: (row["calls"], row["tokens"], row["cost"]) for row in data["usage"]}


def cassette_bytes(pytester: pytest.Pytester) -> dict[str, bytes]:
    folder = pytester.path / "cassettes"
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*.yaml")}


def test_a_replayed_suite_never_imports_litellm_and_costs_what_it_cost_recorded(
    suite: pytest.Pytester, server: LoopbackServer
) -> None:
    recorded = report(suite, "--harness-live")
    assert (suite.path / "litellm_loaded.txt").read_text() == "True"  # recording needs it
    server.stop()

    replayed = report(suite)

    assert (suite.path / "litellm_loaded.txt").read_text() == "False"
    assert costs(replayed) == costs(recorded)
    priced = {test.rpartition("::")[2]: cost for test, (_, _, cost) in costs(replayed).items()}
    assert priced["test_agent"] is None  # openai/bot: litellm has no price for it
    assert priced["test_orchestrator"] > 0  # gpt-4o-mini has one
    assert priced["test_application_and_tribunal"] > 0
    stored = [json.loads(text) for text in cassette_bytes(suite).values()]
    facts = [data["metadata"] for data in stored]
    schemas = {"gpt-4o-mini": True, "openai/judge": False}  # litellm's answers, kept
    assert any(m.get("supports_response_schema") == schemas for m in facts)
    assert any(m.get("max_input_tokens", {}).get("gpt-4o-mini") for m in facts)
    assert any(m.get("prompt_tokens") for m in facts)  # compaction's counts


@pytest.mark.parametrize("override", [(), ("--harness-model=openai/fake",)], ids=["", "model"])
def test_rerecording_the_same_answers_leaves_every_file_byte_identical(
    suite: pytest.Pytester, override: tuple[str, ...]
) -> None:
    report(suite, "--harness-live", *override)
    first = cassette_bytes(suite)
    assert len(first) == 3
    report(suite, "--harness-live", *override)  # the client orders its keys the other way
    assert cassette_bytes(suite) == first


def test_metadata_is_written_in_one_order_whatever_order_it_came_in(tmp_path: Path) -> None:
    written = []
    for entries in (
        {"model": "m", "verdicts": {"b": 1, "a": 2}},
        {"verdicts": {"a": 2, "b": 1}, "model": "m"},
    ):
        path = tmp_path / "c.yaml"
        path.unlink(missing_ok=True)
        new = [
            interactions.interaction(
                {"method": "GET", "uri": "http://h/x", "body": None},
                {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "ok"}},
            )
        ]
        write.merge_and_write(
            path, new, mode="all", run_id=str(len(written)), secrets=[], metadata=entries
        )
        written.append(path.read_bytes())
    assert written[0] == written[1]


def record_one(path: Path, server: LoopbackServer, model: str) -> None:
    server.handler = lambda body: Reply(content="hello there")
    slot = CassetteSlot(path=path, mode="all", nodeid="t.py::test", run_id="r")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
        complete("Hi", model=model, **server.params)
    slot.close(keep=True)


def replay_one(path: Path, server: LoopbackServer, model: str) -> Any:
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    slot.on_response = TrafficWatch("t.py::test").seen
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)):
        response = complete("Hi", model=model, **server.params)
    slot.close(keep=False)
    return response


def record_as_before_prices(path: Path, server: LoopbackServer, model: str) -> None:
    """Record as a version that kept no prices did: the same file, without ``price``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(interactions, "price", lambda _: None)
        record_one(path, server, model)
    assert interactions.PRICE not in json.loads(path.read_text())["interactions"][0]


def test_a_recording_keeps_the_price_and_provider_litellm_gave(
    tmp_path: Path, server: LoopbackServer
) -> None:
    path = tmp_path / "c.yaml"
    record_one(path, server, "gpt-4o-mini")
    (interaction,) = json.loads(path.read_text())["interactions"]
    price = interactions.price(interaction)
    assert price is not None
    assert price.provider == "openai"
    assert price.cost is not None
    assert price.cost > 0
    assert replay_one(path, server, "gpt-4o-mini").cost == price.cost


class Sent:
    """Counts the seam calls sent through litellm (the HTTP path); calls through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        through = _model.completion

        def completion(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return through(*args, **kwargs)

        monkeypatch.setattr(_model, "completion", completion)


def test_a_recording_made_before_prices_were_kept_replays_with_its_cost_unknown(
    tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    record_as_before_prices(path, server, "openai/gpt-4o-mini")
    sent = Sent(monkeypatch)
    response = replay_one(path, server, "openai/gpt-4o-mini")
    assert (response.content, response.cost, sent.calls) == ("hello there", None, 0)


def test_a_bare_model_name_in_a_recording_without_its_provider_takes_the_http_path(
    tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    record_as_before_prices(path, server, "gpt-4o-mini")
    sent = Sent(monkeypatch)
    response = replay_one(path, server, "gpt-4o-mini")
    assert (response.content, sent.calls) == ("hello there", 1)
    assert response.cost == _model.price("gpt-4o-mini", response.usage)  # litellm, as before


PANEL = """
import pytest

from pytest_harness import Agent, Tribunal

PARAMS = {{"api_base": "{url}", "api_key": "loopback-not-a-secret"}}


class Judge(Agent):
    model = "openai/judge"
    params = PARAMS
    output = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}}}}}
    instructions = "You judge support replies."


class Quick(Tribunal):
    agents = [Judge]
    timeout = 2  # less than importing litellm takes on the loaded machine of the conftest


@pytest.mark.harness
def test_panel(harness):
    harness.assert_verdict(Quick, "Thanks for waiting.")
"""


SLOW_IMPORT = """
import time

from pytest_harness._model import seam as _model

_lib = _model.lib


def slow_lib():
    if _model._library is None:
        time.sleep(4)  # as on a loaded CI machine: importing litellm takes seconds
    return _lib()


_model.lib = slow_lib
"""


def test_a_replayed_panel_whose_judge_imports_litellm_is_not_timed_out_by_the_import(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    server.handler = lambda body: Reply(content=json.dumps({"pass": True}))
    pytester.makepyfile(test_panel=PANEL.format(url=server.url))
    pytester.makeconftest(SLOW_IMPORT)
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    pytester.runpytest_subprocess(*RUN, "--harness-live").assert_outcomes(passed=1)
    server.stop()
    (path,) = (pytester.path / "cassettes").rglob("*.yaml")
    # Edited by hand (its checksum no longer holds): replay takes the HTTP path, through
    # litellm, which the replaying process has not imported before the panel's deadline.
    path.write_text(json.dumps(json.loads(path.read_text()), indent=1))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)


LLAMA_STREAM = "".join(
    f"data: {json.dumps(chunk)}\n\n"
    for chunk in [
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "Parcel"}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": " found."}, "finish_reason": None}]},
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
) + "data: [DONE]\n\n"  # fmt: skip


def test_a_stream_without_usage_replays_with_the_tokens_litellm_counted(
    tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # llama.cpp's server (the embedded model) sends no usage chunk, stream_options or not:
    # litellm counts the tokens itself, and replay needs its count without it.
    stream = Reply(raw=LLAMA_STREAM, headers={"Content-Type": "text/event-stream"})
    server.handler = lambda body: stream
    path = tmp_path / "c.yaml"
    slot = CassetteSlot(path=path, mode="all", nodeid="t.py::test", run_id="r")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off")):
        recorded = complete("Hi", model="openai/m", stream=True, **server.params)
    slot.close(keep=True)
    assert recorded.usage.total_tokens > 0  # litellm's count
    (interaction,) = json.loads(path.read_text())["interactions"]
    assert interactions.price(interaction) == interactions.Priced(None, "openai", recorded.usage)

    sent = Sent(monkeypatch)
    tokens: list[str] = []
    slot = CassetteSlot(path=path, mode="none", nodeid="t.py::test", run_id="r")
    with scope.activate(scope.Scope(call_hooks=(slot,), degenerate="off", replay=True)):
        replayed = complete(
            "Hi", model="openai/m", stream=True, on_token=tokens.append, **server.params
        )
    slot.close(keep=False)
    assert sent.calls == 0  # answered from the file, without litellm
    assert (replayed.content, replayed.usage, "".join(tokens)) == (
        "Parcel found.",
        recorded.usage,
        "Parcel found.",
    )


LITELLM_CHECK = """
import sys


def pytest_sessionfinish(session):
    with open("{out}", "w") as file:
        file.write(str("litellm" in sys.modules))
"""


def test_the_committed_example_suite_replays_without_litellm(tmp_path: Path) -> None:
    """The README's first command (``pytest examples``) on the committed cassettes: every
    example but the support bot (its scripted server is live by design) replays without
    importing litellm. Fails when the example cassettes were recorded before replies kept
    their price (re-record them as CONTRIBUTING says)."""
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "litellm_loaded.txt"
    (tmp_path / "litellm_check.py").write_text(LITELLM_CHECK.format(out=out.as_posix()))
    command = [sys.executable, "-m", "pytest", "examples", "-p", "litellm_check", "-q"]
    command += ["-p", "no:cacheprovider", "--ignore=examples/test_support_bot.py"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}
    ran = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)

    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert out.read_text() == "False"
