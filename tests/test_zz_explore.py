"""Exploration: print each failure's report (not a test of the suite)."""
import json
import pytest
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

pytest_plugins = ["pytester"]

SUITE = '''
import openai
import pytest
from pytest_harness import Agent, Tribunal

URL = "{url}"
DEAD = "{dead}"
PARAMS = {{"api_base": URL, "api_key": "loopback-not-a-secret"}}
VOTE = {{"type": "object", "properties": {{"pass": {{"type": "boolean"}}, "reason": {{"type": "string"}}}},
        "required": ["pass", "reason"]}}

def chat(text):
    client = openai.OpenAI(base_url=URL, api_key="loopback-not-a-secret", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": text}}])
    return reply.choices[0].message.content

class Judge(Agent):
    model = "openai/judge"
    params = PARAMS
    output = VOTE

class Panel(Tribunal):
    agents = [Judge]

class Away(Judge):
    params = {{"api_base": DEAD, "api_key": "loopback-not-a-secret"}}

class AwayPanel(Tribunal):
    agents = [Away]

class Typo(Judge):
    output = {{"type": "objcet"}}

@pytest.mark.harness
def test_miss():
    assert chat("a changed prompt") == "hi"

@pytest.mark.harness
def test_miss_wrapped():
    try:
        chat("a changed prompt")
    except BaseException as error:
        raise RuntimeError("the feature failed") from error

@pytest.mark.harness
def test_judge_unreachable(harness):
    harness.assert_verdict(AwayPanel, "a reply")

@pytest.mark.harness
def test_trajectory(harness):
    chat("hello")
    harness.trajectory.assert_called("lookup")

@pytest.mark.harness
def test_schema(harness):
    harness.ask(Typo, "a reply")

@pytest.mark.harness
def test_judge_output(harness):
    harness.ask(Judge, "garbage please")

@pytest.mark.harness
def test_verdict(harness):
    harness.assert_verdict(Panel, "a rude reply")

@pytest.mark.harness
def test_user_assert(harness):
    said = chat("hello")
    assert said == "something else"
'''


def handler(body):
    said = json.dumps(body.get("messages"))
    if "garbage" in said:
        return Reply(content="this is not json")
    if "rude" in said:
        return Reply(content=json.dumps({"pass": False, "reason": "rude"}))
    if "Judge" in said or "pass" in said:
        return Reply(content=json.dumps({"pass": True, "reason": "fine"}))
    return Reply(content="hello there")


@pytest.mark.parametrize("tb", ["auto", "long"])
def test_explore(pytester, tb):
    with LoopbackServer(handler) as server, LoopbackServer() as dead:
        deadurl = dead.url
    with LoopbackServer(handler) as server:
        pytester.makepyfile(test_inner=SUITE.format(url=server.url, dead=deadurl))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        live = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", f"--tb={tb}", "--harness-live", "-k", "not miss")
        replay = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", f"--tb={tb}", "-k", "miss")
    with open(f"/tmp/h43m/out-{tb}.txt", "w") as f:
        f.write(live.stdout.str() + "\n\n=========== REPLAY\n\n" + replay.stdout.str())
