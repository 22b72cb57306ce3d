"""The application's own traffic: whatever client a test's code uses, its cassette holds it.

Real pytest runs (pytester) of small applications that call a loopback model server with
the OpenAI SDK, litellm, httpx and requests. Each records with ``--harness-live``, then the
server is stopped and the same tests replay offline.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_harness._cassettes.bodies import body_bytes
from pytest_harness.testing import LoopbackServer, Reply

KEY = "sk-app-secret-0123456789abcdef"


def echo(body: dict[str, Any]) -> Reply:
    """Answer ``echo: <last user text>``; ``empty`` and ``think`` give bad replies."""
    text = str(body["messages"][-1]["content"])
    if text == "empty":
        return Reply(content="")
    if text == "think":
        return Reply(content="<think>I should answer.</think>")
    if text == "cut":
        return Reply(content="a reply cut off mid way", cut_after=3)
    if text == "unfinished":
        return Reply(content="a reply that never finishes", finish_reason=None)
    if text == "fail":
        return Reply(status=500, error="the provider is down")
    return Reply(content=f"echo: {text}")


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(echo) as server:
        yield server


@pytest.fixture
def app(pytester: pytest.Pytester, model_server: LoopbackServer) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(f"URL = {model_server.url!r}\nKEY = {KEY!r}\n")
    return pytester


# The application's chat call, on each transport an application may use: the OpenAI SDK (3.x
# sends through httpx2/httpcore2) and a plain httpx client speaking the same wire format.
# ``chat`` returns the reply's text, or a stream's text deltas; CONNECTION_ERRORS is what the
# client raises when the connection breaks.
OPENAI_SDK = """
import openai
from conftest import KEY, URL

CONNECTION_ERRORS = (openai.APIConnectionError,)

def chat(text, *, model="gpt-4o-mini", stream=False, retries=2):
    with openai.OpenAI(base_url=URL, api_key=KEY, max_retries=retries) as client:
        reply = client.chat.completions.create(
            model=model, stream=stream, messages=[{"role": "user", "content": text}])
        if not stream:
            return reply.choices[0].message.content
        return [chunk.choices[0].delta.content for chunk in reply if chunk.choices]
"""

PLAIN_HTTPX = """
import json
import httpx
from conftest import KEY, URL

CONNECTION_ERRORS = (httpx.TransportError,)

def chat(text, *, model="gpt-4o-mini", stream=False, retries=0):
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=URL, headers=headers) as client:
        if not stream:
            reply = client.post("/chat/completions", json=body)
            reply.raise_for_status()
            return reply.json()["choices"][0]["message"]["content"]
        with client.stream("POST", "/chat/completions", json=body) as reply:
            reply.raise_for_status()
            lines = [line[6:] for line in reply.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(line) for line in lines if line != "[DONE]"]
    return [chunk["choices"][0]["delta"].get("content") for chunk in chunks if chunk["choices"]]
"""


@pytest.fixture(params=["openai-httpx2", "httpx"])
def chat(request: pytest.FixtureRequest, app: pytest.Pytester) -> str:
    """The application's chat client (module ``chat`` of the test project): each transport."""
    app.makepyfile(chat=OPENAI_SDK if request.param == "openai-httpx2" else PLAIN_HTTPX)
    return str(request.param)


def run(app: pytest.Pytester, *args: str) -> pytest.RunResult:
    if "-n" in args:
        return app.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)
    return app.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)


def cassette_files(app: pytest.Pytester) -> dict[str, dict[str, Any]]:
    root = app.path / "cassettes"
    return {
        str(path.relative_to(root)): json.loads(path.read_text())
        for path in sorted(root.rglob("*.yaml"))
    }


CLIENTS = """
import asyncio
import httpx, litellm, openai, pytest, requests
from conftest import KEY, URL

def ask(text):
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}

@pytest.mark.harness
def test_openai_sync():
    with openai.OpenAI(base_url=URL, api_key=KEY) as client:
        reply = client.chat.completions.create(**ask("sync"))
    assert reply.choices[0].message.content == "echo: sync"

@pytest.mark.harness
def test_openai_async_concurrent():
    async def main():
        async with openai.AsyncOpenAI(base_url=URL, api_key=KEY) as client:
            calls = [client.chat.completions.create(**ask(f"a{i}")) for i in range(3)]
            return [r.choices[0].message.content for r in await asyncio.gather(*calls)]
    assert asyncio.run(main()) == ["echo: a0", "echo: a1", "echo: a2"]

@pytest.mark.harness
def test_openai_stream():
    with openai.OpenAI(base_url=URL, api_key=KEY) as client:
        chunks = client.chat.completions.create(**ask("streamed words"), stream=True)
        deltas = [c.choices[0].delta.content for c in chunks if c.choices]
    assert len(deltas) > 2
    assert "".join(filter(None, deltas)) == "echo: streamed words"

@pytest.mark.harness
def test_litellm_sync():
    reply = litellm.completion(**ask("lite"), api_base=URL, api_key=KEY,
                               custom_llm_provider="openai")
    assert reply.choices[0].message.content == "echo: lite"

@pytest.mark.harness
def test_litellm_async():
    reply = asyncio.run(litellm.acompletion(**ask("alite"), api_base=URL, api_key=KEY,
                                            custom_llm_provider="openai"))
    assert reply.choices[0].message.content == "echo: alite"

@pytest.mark.harness
def test_litellm_stream():
    chunks = litellm.completion(**ask("slite"), api_base=URL, api_key=KEY,
                                custom_llm_provider="openai", stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "echo: slite"

@pytest.mark.harness
def test_httpx_sync_and_async():
    headers = {"Authorization": f"Bearer {KEY}"}
    sync = httpx.post(f"{URL}/chat/completions", json=ask("hx"), headers=headers)
    async def main():
        async with httpx.AsyncClient() as client:
            return await client.post(f"{URL}/chat/completions", json=ask("ahx"), headers=headers)
    later = asyncio.run(main())
    assert [sync.json()["choices"][0]["message"]["content"],
            later.json()["choices"][0]["message"]["content"]] == ["echo: hx", "echo: ahx"]

@pytest.mark.harness
def test_aiohttp():
    import aiohttp
    async def main():
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{URL}/chat/completions", json=ask("aio")) as reply:
                return (await reply.json())["choices"][0]["message"]["content"]
    assert asyncio.run(main()) == "echo: aio"

@pytest.mark.harness
def test_requests():
    reply = requests.post(f"{URL}/chat/completions", json=ask("rq"),
                          headers={"Authorization": f"Bearer {KEY}"})
    assert reply.json()["choices"][0]["message"]["content"] == "echo: rq"
"""


def test_every_client_records_then_replays_offline(
    pytester: pytest.Pytester, model_server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(f"URL = {model_server.url!r}\nKEY = {KEY!r}\n")
    pytester.makepyfile(test_clients=CLIENTS)
    run(pytester, "--harness-live").assert_outcomes(passed=9)
    recorded = len(model_server.requests)
    assert recorded == 12
    model_server.stop()

    run(pytester).assert_outcomes(passed=9)  # the server is gone: all from the cassettes
    files = cassette_files(pytester)
    assert len(files) == 9
    assert sum(len(data["interactions"]) for data in files.values()) == recorded
    text = "".join(path.read_text() for path in (pytester.path / "cassettes").rglob("*.yaml"))
    assert KEY not in text
    assert KEY[-12:] not in text


MISS = """
import pytest
from chat import chat

def ask(text):
    return chat(text)  # the SDK's default: 2 retries

@pytest.mark.harness
def test_direct():
    assert ask("PROMPT").startswith("echo")

@pytest.mark.harness
def test_wrapped():
    try:
        ask("PROMPT")
    except BaseException as error:
        raise RuntimeError("the feature failed") from error

@pytest.mark.harness
def test_swallowed():
    try:
        ask("PROMPT")
    except BaseException:
        pass
"""


def test_changed_prompt_is_a_cassette_miss_at_once(app: pytest.Pytester, chat: str) -> None:
    app.makepyfile(test_miss=MISS.replace("PROMPT", "recorded prompt"))
    run(app, "--harness-live").assert_outcomes(passed=3)
    app.makepyfile(test_miss=MISS.replace("PROMPT", "changed prompt"))
    report = app.path / "junit.xml"
    result = run(app, f"--junitxml={report}")
    result.assert_outcomes(failed=3)
    output = result.stdout.str()
    assert "APIConnectionError" not in output
    # Raised as is through the SDK, with the diff against the closest recording.
    result.stdout.fnmatch_lines(
        [
            "*CassetteMiss: no recording in *test_direct.yaml matches this request:*",
            "*closest recorded request:*",
            '*-      "content": "recorded prompt",*',
            '*+      "content": "changed prompt",*',
            "*To record it: pytest 'test_miss.py::test_direct' --harness-record=new*",
        ]
    )
    # Wrapped by the application, or swallowed: the miss still comes first in the report.
    assert "CassetteMiss: no recording in" in _longrepr(report, "test_wrapped").splitlines()[0]
    assert "RuntimeError: the feature failed" in _longrepr(report, "test_wrapped")
    assert _longrepr(report, "test_swallowed").startswith("CassetteMiss: no recording in")
    # One attempt each: the SDK (2 retries by default) neither retried nor waited. (The
    # wrapped miss shows once: first in the report, its chained traceback left out.)
    counts = {
        t: _longrepr(report, t).count("no recording in") for t in ("direct", "wrapped", "swallowed")
    }
    assert counts == {"direct": 1, "wrapped": 1, "swallowed": 1}


def _longrepr(report: Path, test: str) -> str:
    test = test if test.startswith("test_") else f"test_{test}"
    for case in ET.parse(report).iter("testcase"):
        if case.get("name") == test:
            failure = case.find("failure")
            assert failure is not None, f"{test} did not fail"
            return failure.text or ""
    raise AssertionError(f"{test} is not in the report")


IGNORED = """
import httpx, pytest
from conftest import URL, SERVICE

@pytest.mark.harness
def test_model_and_service():
    service = httpx.post(f"{SERVICE}/chat/completions",
                         json={"model": "db", "messages": [{"role": "user", "content": "row"}]})
    model = httpx.post(f"{URL}/chat/completions",
                       json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert service.json()["choices"][0]["message"]["content"] == "echo: row"
    assert model.json()["choices"][0]["message"]["content"] == "echo: hi"
"""


def test_ignored_host_passes_through_and_is_never_recorded(app: pytest.Pytester) -> None:
    with LoopbackServer(echo) as service:
        app.makeini(f"[pytest]\nharness_ignore_hosts = 127.0.0.1:{service.port}\n")
        conftest = (app.path / "conftest.py").read_text()
        app.makeconftest(f"{conftest}\nSERVICE = {service.url!r}\n")
        app.makepyfile(test_ignored=IGNORED)
        run(app, "--harness-live").assert_outcomes(passed=1)
        run(app).assert_outcomes(passed=1)
        assert len(service.requests) == 2  # reached both times, live and in replay
    (data,) = cassette_files(app).values()
    uris = [i["request"]["uri"] for i in data["interactions"]]
    assert len(uris) == 1
    assert f":{service.port}/" not in uris[0]


def test_a_host_ignored_after_it_was_recorded_is_not_replayed(tmp_path: Path) -> None:
    """``harness_ignore_hosts`` may list a host a cassette holds recordings of: they load,
    its requests pass through, and a miss is described from the other recordings."""
    from vcr.request import Request

    from pytest_harness._cassettes import store
    from pytest_harness._cassettes.scrub import Redaction

    def get(uri: str, text: str) -> dict[str, Any]:
        response = {"status": {"code": 200}, "headers": {}, "body": {"string": text}}
        return {"request": {"method": "GET", "uri": uri, "headers": {}}, "response": response}

    path = tmp_path / "c.yaml"
    recorded = [get("https://db.example/rows", "row"), get("https://api.example/models", "m")]
    path.write_text(json.dumps({"version": 1, "interactions": recorded}))
    cassette = store.load(
        path,
        mode="none",
        ignore=(),
        redaction=Redaction(),
        rerecord_hint=lambda: "record it",
        ignore_hosts=("db.example",),
    )
    assert not cassette.can_play_response_for(Request("GET", "https://db.example/rows", None, {}))
    models = Request("GET", "https://api.example/models", None, {})
    assert cassette.play_response(models)["body"]["string"] == b"m"
    other = Request("GET", "https://api.example/other", None, {})
    assert "GET https://api.example:443/models" in cassette.miss_message(other)


BAD = """
import pytest
from chat import chat

@pytest.mark.harness
def test_empty():
    assert chat("empty", retries=0) == ""

@pytest.mark.harness
def test_think_only():
    assert chat("think", retries=0).startswith("<think>")

@pytest.mark.harness
def test_unfinished_stream():
    assert chat("unfinished", stream=True, retries=0)[:2] == ["", "a "]
"""


@pytest.mark.parametrize("replay", [False, True], ids=["live", "replay"])
def test_bad_application_responses_fail_or_warn(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str, replay: bool
) -> None:
    app.makepyfile(test_bad=BAD)
    if replay:
        app.makeini("[pytest]\nharness_record_failed = true\n")
        run(app, "--harness-live")
        model_server.stop()
    result = run(app) if replay else run(app, "--harness-live")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "*returned an empty response (no text, no tool calls and no media) to a*request of the "
            "application (POST http://127.0.0.1:*/v1/chat/completions) in test_bad.py::test_empty*",
            "*returned a degenerate response*in test_bad.py::test_think_only*",
            "*returned an interrupted response*in test_bad.py::test_unfinished_stream*",
        ]
    )
    app.makeini("[pytest]\nharness_degenerate = warn\nharness_record_failed = true\n")
    # (-W default: this suite turns warnings into errors; a user's suite may not)
    result = run(app, "-W", "default") if replay else run(app, "--harness-live", "-W", "default")
    result.assert_outcomes(passed=3)
    # One warning per bad response. Counted by class: an event loop another test of this
    # worker left open may be collected during the run, and its ResourceWarning counts too.
    assert result.stdout.str().count("HarnessWarning: model 'gpt-4o-mini' returned") == 3


USAGE = """
import pytest
from chat import chat

@pytest.mark.harness
def test_two_calls():
    for text in ("one two three", "four five"):
        chat(text)

def test_no_harness():
    pass
"""


def test_tokens_and_cost_per_test_in_junit_and_the_session_table(
    app: pytest.Pytester, chat: str
) -> None:
    app.makepyfile(test_usage=USAGE)
    run(app, "--harness-live").assert_outcomes(passed=2)
    report = app.path / "junit.xml"
    result = run(app, f"--junitxml={report}", "--harness-report")
    result.assert_outcomes(passed=2)
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(report).iter("testcase")
    }
    # Prompts of 3 and 2 words, answers of 4 and 3 ("echo: ..."): the server's count.
    assert props["test_two_calls"]["harness_tokens"] == "12"
    assert float(props["test_two_calls"]["harness_cost"]) > 0  # litellm prices gpt-4o-mini
    assert "harness_tokens" not in props["test_no_harness"]
    result.stdout.fnmatch_lines(
        ["*pytest-harness model calls*", "*test_two_calls*2*12*$0.0000*", "total*2*12*$0.0000*"]
    )


TRIBUNAL = """
import pytest
from pytest_harness import Agent, Tribunal
from chat import chat
from conftest import KEY, URL

VOTE = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}

class Judge(Agent):
    model = "openai/judge"
    instructions = "Is this reply an echo?"
    output = VOTE
    params = {"api_base": URL, "api_key": KEY}

class Panel(Tribunal):
    agents = [Judge, Judge]
    strategy = "unanimous"

@pytest.mark.harness
def test_feature_judged(harness):
    harness.assert_verdict(Panel, chat("feature"))
"""


def test_a_tribunal_judges_the_application_reply_from_one_cassette(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if body["model"] == "judge":
            return Reply(content='{"pass": true}')
        return echo(body)

    model_server.handler = answer
    app.makepyfile(test_judged=TRIBUNAL)
    run(app, "--harness-live").assert_outcomes(passed=1)
    model_server.stop()
    run(app).assert_outcomes(passed=1)
    (data,) = cassette_files(app).values()
    models = sorted(i["request"]["body"]["json"]["model"] for i in data["interactions"])
    assert models == ["gpt-4o-mini", "judge", "judge"]


SEAM_AND_APP = """
import pytest
from pytest_harness import complete
from chat import chat
from conftest import KEY, URL

def ask(text):
    return complete([{"role": "user", "content": text}], model="openai/judge",
                    api_base=URL, api_key=KEY, num_retries=0)

@pytest.mark.harness
def test_both_empty():
    ask("empty")  # the harness's own call: raised or warned here, once

@pytest.mark.harness
def test_app_then_harness():
    chat("one")
    ask("two")
"""


@pytest.mark.parametrize("replay", [False, True], ids=["live", "replay"])
def test_the_harness_calls_and_the_application_calls_go_through_one_check(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str, replay: bool
) -> None:
    # The traffic check reads every reply in the cassette; the harness's own calls are told
    # apart by a numbered header that is never saved, so each reply is judged and counted once.
    app.makeini("[pytest]\nharness_record_failed = true\n")
    app.makepyfile(test_both=SEAM_AND_APP)
    report = app.path / "junit.xml"
    if replay:
        run(app, "--harness-live")
        model_server.stop()
    live = () if replay else ("--harness-live",)
    result = run(app, *live, f"--junitxml={report}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*InvalidResponse: model 'openai/judge' returned an empty*"])
    assert "request of the application" not in result.stdout.str()
    (case,) = [
        c for c in ET.parse(report).iter("testcase") if c.get("name") == "test_app_then_harness"
    ]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    usage = json.loads(props["harness_usage"])
    assert (usage["calls"], usage["models"]) == (2, {"gpt-4o-mini": 1, "openai/judge": 1})
    text = "".join(path.read_text() for path in (app.path / "cassettes").rglob("*.yaml"))
    assert "x-pytest-harness-call" not in text.lower()
    assert text.count('"uri"') == 3  # the empty reply, then the app's and the harness's
    app.makeini("[pytest]\nharness_degenerate = warn\nharness_record_failed = true\n")
    result = run(app, *live, "-W", "default")
    result.assert_outcomes(passed=2, warnings=1)


KEYLESS = """
import openai, pytest
from pytest_harness import complete
from conftest import URL

@pytest.mark.harness
def test_keys_from_the_environment():
    with openai.OpenAI(base_url=URL) as client:  # the key: OPENAI_API_KEY
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "one"}])
    assert reply.choices[0].message.content == "echo: one"
    judged = complete("two", model="openai/judge", api_base=URL, num_retries=0)
    assert judged.text == "echo: two"

def test_a_harness_call_alone():  # its cassette opens at the call, the environment untouched
    judged = complete("three", model="openai/judge", api_base=URL, num_retries=0)
    assert judged.text == "echo: three"
"""


def test_replay_needs_no_api_key(
    app: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    app.makepyfile(test_keyless=KEYLESS)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run(app, "--harness-live").assert_outcomes(passed=2)
    model_server.stop()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    run(app).assert_outcomes(passed=2)
    assert "OPENAI_API_KEY" not in os.environ  # given to the test, not left behind


ONE_CALL = """
import pytest
from chat import chat

@pytest.mark.harness
def test_one():
    assert chat("one") == "echo: one"
"""


def _as_text(text: str, cut: int = 0, length: bool = True) -> str:
    """The cassette as an older version wrote it (bodies as text), the reply's body cut short
    by ``cut`` characters, its Content-Length kept or not."""
    data = json.loads(text)
    for interaction in data["interactions"]:
        response = interaction["response"]
        body = (body_bytes(response["body"]) or b"").decode()
        response["body"] = {"string": body[: len(body) - cut]}
        if not length:
            for name in [name for name in response["headers"] if name.lower() == "content-length"]:
                del response["headers"][name]
    return json.dumps(data)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: "", "cannot be read: it is empty"),
        (lambda text: '{"version": 1}', "cannot be read: it holds no recorded interactions"),
        (
            lambda text: _as_text(text, cut=7),
            "the response body of interaction 1 (POST http://127.0.0.1:*/v1/chat/completions) "
            "is * bytes, where its recorded Content-Length says *: the file was cut or edited.",
        ),
        (
            lambda text: _as_text(text, cut=7, length=False),
            "the response body of interaction 1 (POST http://127.0.0.1:*/v1/chat/completions) "
            "is not the JSON its Content-Type says (*): the file was cut or edited.",
        ),
    ],
    ids=["blank", "foreign", "cut-body", "cut-body-without-length"],
)
def test_a_damaged_cassette_is_named_instead_of_an_sdk_error(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str, damage: Any, message: str
) -> None:
    app.makepyfile(test_one=ONE_CALL)
    run(app, "--harness-live").assert_outcomes(passed=1)
    model_server.stop()
    path = app.path / "cassettes/test_one/test_one.yaml"
    damaged = damage(path.read_text())
    assert damaged != path.read_text()
    path.write_text(damaged)
    result = run(app)
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*CassetteError: cassette *test_one.yaml*{message}*"])
    result.stdout.no_fnmatch_line("*Missing credentials*")
    result.stdout.no_fnmatch_line("*JSONDecodeError*")


def test_a_reply_stored_as_json_replays_as_edited_by_hand(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    app.makepyfile(test_one=ONE_CALL.replace('== "echo: one"', '== "edited by hand"'))
    app.makeini("[pytest]\nharness_record_failed = true\n")
    run(app, "--harness-live").assert_outcomes(failed=1)  # the server says "echo: one"
    model_server.stop()
    path = app.path / "cassettes/test_one/test_one.yaml"
    data = json.loads(path.read_text())
    reply = data["interactions"][0]["response"]["body"]["json"]
    reply["choices"][0]["message"]["content"] = "edited by hand"  # longer than it was
    path.write_text(json.dumps(data, indent=2))
    run(app).assert_outcomes(passed=1)


UNREACHABLE = """
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.orchestrator import Orchestrator
from chat import chat
from conftest import KEY, URL

VOTE = {"type": "object", "properties": {"pass": {"type": "boolean"}}, "required": ["pass"]}

class Judge(Agent):
    model = "openai/judge"
    output = VOTE
    params = {"api_base": URL, "api_key": KEY}

class Panel(Tribunal):
    agents = [Judge]

@pytest.mark.harness
def test_application():
    chat("one")

@pytest.mark.harness
def test_judge(harness):
    harness.assert_verdict(Panel, "a reply")

@pytest.mark.harness
def test_agent():
    Orchestrator("openai/agent", params={"api_base": URL, "api_key": KEY}).run("hello")
"""


def test_an_unreachable_endpoint_while_recording_is_named_in_a_few_lines(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    model_server.stop()  # nothing listens at its address any more
    app.makepyfile(test_down=UNREACHABLE)
    result = run(app, "--harness-live")
    result.assert_outcomes(failed=3)
    address = f"127.0.0.1:{model_server.port}"
    text = result.stdout.str()
    refused = f"EndpointUnreachable: nothing answers at {address} (connection refused)"
    assert text.count(refused) >= 3
    result.stdout.fnmatch_lines_random(
        [
            "*while recording test_down.py::test_application (the request: http://127.0.0.1:*"
            "/v1/chat/completions). Start the server that should listen there, or fix the "
            "address the code uses (api_base, base_url, OPENAI_BASE_URL).",
            "The test then failed at test_down.py:* with *Error: *",
            "*while recording test_down.py::test_judge*",
            "*while recording test_down.py::test_agent*",
        ]
    )
    assert "RetriesExhausted" not in text  # refused is not worth a retry
    assert "InternalServerError" not in text  # nor a server's error
    assert len(result.outlines) < 250  # three tests' failures, not pages of SDK frames


BUDGET = """
import pytest
from chat import chat

@pytest.mark.harness
def test_runaway_loop():
    for i in range(5):
        chat(f"turn {i}")
"""


def test_cost_budget_refuses_further_live_calls(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    app.makeini("[pytest]\nharness_max_cost = 0.0000001\n")
    app.makepyfile(test_budget=BUDGET)
    result = run(app, "--harness-live")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*BudgetExceeded: pytest-harness refused a live model call: this test has spent "
            "0.0000* on model calls so far and harness_max_cost is 1e-07*"
        ]
    )
    assert len(model_server.requests) == 1  # the first call spent it all


XDIST = """
import pytest
from chat import chat

@pytest.mark.harness(cassette="shared")
@pytest.mark.parametrize("text", ["one", "two", "three", "four"])
def test_shared(text):
    assert chat(text) == f"echo: {text}"
"""


def test_xdist_workers_share_one_cassette_of_application_traffic(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    app.makepyfile(test_shared=XDIST)
    run(app, "--harness-live", "-n", "2").assert_outcomes(passed=4)
    model_server.stop()
    run(app, "-n", "2").assert_outcomes(passed=4)
    assert len(cassette_files(app)["shared.yaml"]["interactions"]) == 4


RAW = """
import httpx, openai, pytest
from conftest import KEY, URL

@pytest.mark.harness
def test_not_json():
    reply = httpx.post(f"{URL}/chat/completions", json={"messages": [{"content": "raw"}]})
    assert reply.content == b"\\x00 not json \\xff"

@pytest.mark.harness
def test_provider_error():
    with openai.OpenAI(base_url=URL, api_key=KEY, max_retries=1) as client:
        with pytest.raises(openai.InternalServerError, match="the provider is down"):
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "fail"}])
"""


def test_odd_bodies_and_errors_replay_exactly_as_recorded(
    app: pytest.Pytester, model_server: LoopbackServer
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "raw":
            return Reply(raw=b"\x00 not json \xff")
        return echo(body)

    model_server.handler = answer
    app.makepyfile(test_raw=RAW)
    run(app, "--harness-live").assert_outcomes(passed=2)
    assert len(model_server.requests) == 3  # the error, and the SDK's one retry of it
    model_server.stop()
    run(app).assert_outcomes(passed=2)
    errors = cassette_files(app)["test_raw/test_provider_error.yaml"]["interactions"]
    assert [i["response"]["status"]["code"] for i in errors] == [500, 500]


def test_cassettes_closed_out_of_order_leave_no_stub_behind(tmp_path: Path) -> None:
    import httpx
    import requests

    from pytest_harness._cassettes import store
    from pytest_harness._cassettes.scrub import Redaction

    originals = (httpx.AsyncHTTPTransport.handle_async_request, requests.adapters.HTTPAdapter.send)
    opened = [
        store.patched(
            store.load(
                tmp_path / name, mode="none", ignore=(), redaction=Redaction(), rerecord_hint=str
            )
        )
        for name in ("a.yaml", "b.yaml")
    ]
    for cassette in opened:
        cassette.__enter__()
    assert httpx.AsyncHTTPTransport.handle_async_request is not originals[0]
    for cassette in opened:  # first opened, first closed
        cassette.__exit__(None, None, None)
    assert (httpx.AsyncHTTPTransport.handle_async_request, requests.adapters.HTTPAdapter.send) == (
        originals
    )


CAPTURE_ALL = """
import requests
from conftest import URL

def test_unmarked():
    reply = requests.post(f"{URL}/chat/completions",
                          json={"model": "m", "messages": [{"role": "user", "content": "all"}]})
    assert reply.json()["choices"][0]["message"]["content"] == "echo: all"
"""


def test_capture_all_records_tests_that_do_not_use_the_harness(
    app: pytest.Pytester, model_server: LoopbackServer
) -> None:
    app.makepyfile(test_all=CAPTURE_ALL)
    run(app, "--harness-live").assert_outcomes(passed=1)
    assert cassette_files(app) == {}  # unmarked: its traffic is its own business
    app.makeini("[pytest]\nharness_capture = all\n")
    run(app, "--harness-live").assert_outcomes(passed=1)
    model_server.stop()
    run(app).assert_outcomes(passed=1)
    assert list(cassette_files(app)) == ["test_all/test_unmarked.yaml"]


SESSION_BUDGET = """
import openai, pytest
from conftest import KEY, URL

@pytest.mark.harness
@pytest.mark.parametrize("turn", range(6))
def test_turn(turn):
    with openai.OpenAI(base_url=URL, api_key=KEY) as client:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"turn {turn}"}])
"""


def test_session_budget_counts_every_test_and_worker(
    app: pytest.Pytester, model_server: LoopbackServer
) -> None:
    # One call costs about 2e-6 (gpt-4o-mini prices): two calls reach the limit.
    app.makeini("[pytest]\nharness_max_session_cost = 0.000003\n")
    app.makepyfile(test_budget=SESSION_BUDGET)
    result = run(app, "--harness-live", "-n", "2")
    # Two calls reach the limit; the other worker may have one call in flight by then.
    made = len(model_server.requests)
    assert made in (2, 3)
    result.assert_outcomes(passed=made, failed=6 - made)
    result.stdout.fnmatch_lines(["*this session has spent 0.00000* and harness_max_session_cost*"])


CUT = """
import pytest
from chat import CONNECTION_ERRORS, chat

@pytest.mark.harness
def test_cut():
    with pytest.raises(CONNECTION_ERRORS):
        chat("cut", stream=True, retries=0)
"""


def test_a_stream_cut_while_recording_is_not_recorded_and_misses_in_replay(
    app: pytest.Pytester, model_server: LoopbackServer, chat: str
) -> None:
    app.makeini("[pytest]\nharness_record_failed = true\n")
    app.makepyfile(test_cut=CUT)
    run(app, "--harness-live").assert_outcomes(passed=1)  # the provider's error, as live
    model_server.stop()
    result = run(app)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteMiss: no recording in *test_cut.yaml*"])


ANTHROPIC_EMPTY = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "thinking", "thinking": "Let me think.", "signature": "x"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 12, "output_tokens": 6},
}

ANTHROPIC = """
import httpx, pytest
from conftest import URL

@pytest.mark.harness
def test_messages():
    reply = httpx.post(URL + "/messages?key=AIzaSyA-secret-in-the-query-0123456789",
                       json={"model": "claude-sonnet-4-5", "max_tokens": 20,
                             "messages": [{"role": "user", "content": "think"}]})
    assert reply.json()["content"][0]["type"] == "thinking"
"""


def test_any_recognised_api_is_checked_and_counted(
    app: pytest.Pytester, model_server: LoopbackServer
) -> None:
    model_server.handler = lambda body: Reply(raw=json.dumps(ANTHROPIC_EMPTY))
    app.makepyfile(test_anthropic=ANTHROPIC)
    report = app.path / "junit.xml"
    result = run(app, "--harness-live", f"--junitxml={report}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*DegenerateResponse: model 'claude-sonnet-4-5' returned a degenerate response*"]
    )
    (case,) = ET.parse(report).iter("testcase")
    assert {p.get("name"): p.get("value") for p in case.iter("property")}["harness_tokens"] == "18"
    app.makeini("[pytest]\nharness_degenerate = off\n")
    run(app, "--harness-live").assert_outcomes(passed=1)
    text = (app.path / "cassettes/test_anthropic/test_messages.yaml").read_text()
    assert "AIzaSyA-secret" not in text


IN_PROCESS = """
import httpx, pytest

def app(request):
    return httpx.Response(200, json={"served": request.url.path})

@pytest.mark.harness
def test_own_app_runs():
    with httpx.Client(transport=httpx.MockTransport(app), base_url="http://testserver") as c:
        assert c.get("/health").json() == {"served": "/health"}
"""


def test_in_process_transports_run_the_app_instead_of_replaying_it(app: pytest.Pytester) -> None:
    app.makepyfile(test_own=IN_PROCESS)
    run(app, "--harness-live").assert_outcomes(passed=1)
    run(app).assert_outcomes(passed=1)  # replay: no recording needed, the app answered
    assert cassette_files(app) == {}
