"""What a re-recording changed: record, change the scripted answers, re-record, and read the
classification while re-recording and offline against a git ref.

The model is the loopback scripted server: each test's prompt picks its answer from a table
the test changes between the recordings, as a new prompt or model would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_harness import _changes as changes
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

SUITE = """
import json
import openai
import pytest
from pytest_harness import Agent, Tribunal
from pytest_harness.tribunal import rule

URL = "{url}"
SCHEMA = {{
    "type": "object",
    "properties": {{"priority": {{"type": "string"}}}},
    "required": ["priority"],
}}
TOOLS = [
    {{"type": "function", "function": {{"name": name, "parameters": {{"type": "object"}}}}}}
    for name in ("search_web", "lookup")
]


def ask(prompt, **more):
    with openai.OpenAI(base_url=URL, api_key="loopback-not-a-secret") as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}], **more
        )
    return reply.choices[0].message


class Judge(Agent):
    model = "openai/loopback"
    params = {{"api_base": URL, "api_key": "loopback-not-a-secret"}}
    output = {{
        "type": "object", "properties": {{"pass": {{"type": "boolean"}}}}, "required": ["pass"]
    }}
    instructions = "You are the judge."


class Panel(Tribunal):
    agents = [Judge]

    @rule("unanimous")
    def passed(result):
        return result.processed["pass"]


def test_same(harness):
    assert ask("same").content


def test_text(harness):
    assert ask("text").content


def test_tools(harness):
    assert ask("tools", tools=TOOLS).tool_calls


def test_structured(harness):
    kind = {{"type": "json_schema", "json_schema": {{"name": "ticket", "schema": SCHEMA}}}}
    assert ask("structured", response_format=kind).content


def test_tokens(harness):
    assert ask("tokens").content


def test_verdict(harness):
    harness.assert_verdict(Panel, ask("verdict").content)
"""

FIRST = {
    "same": Reply(content="Hello there."),
    "text": Reply(content="The refund takes five days."),
    "tools": Reply(tool_calls=[ToolCallSpec(name="search_web", arguments={"q": "refund"})]),
    "structured": Reply(content='{"priority": "high"}'),
    "tokens": Reply(content="Short answer."),
    "verdict": Reply(content="A kind reply."),
    "judge": Reply(content='{"pass": true}'),
}
SECOND = {
    **FIRST,
    "text": Reply(content="The refund takes three days."),
    "tools": Reply(tool_calls=[ToolCallSpec(name="lookup", arguments={"id": 7})]),
    "structured": Reply(content='{"urgency": "high"}'),
    "tokens": Reply(content="A much longer answer that says the same thing in many more words."),
    "judge": Reply(content='{"pass": false}'),
}


class Script:
    """The scripted model: the judge's answer for a judge, else the answer to the prompt."""

    def __init__(self, table: dict[str, Reply]) -> None:
        self.table = table

    def __call__(self, body: dict[str, Any]) -> Reply:
        if "You are the judge." in json.dumps(body["messages"]):
            return self.table["judge"]
        return self.table[body["messages"][-1]["content"]]


def record(pytester: pytest.Pytester, server: LoopbackServer, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_app=SUITE.format(url=server.url))
    pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live", *args
    )


@pytest.fixture
def server() -> Any:
    with LoopbackServer(Script(FIRST)) as running:
        yield running


def rerecorded(pytester: pytest.Pytester, server: LoopbackServer, *args: str) -> Any:
    record(pytester, server).assert_outcomes(passed=6)
    server.handler = Script(SECOND)
    return record(pytester, server, *args)


def by_test(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {record["test"].rpartition("::")[2]: record for record in records}


def test_a_re_recording_classifies_each_test_with_its_reasons(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    result = rerecorded(pytester, server, "--harness-report=r.json")
    result.assert_outcomes(passed=5, failed=1)  # the verdict now fails
    found = by_test(json.loads((pytester.path / "r.json").read_text())["changes"])

    assert {name: r["kind"] for name, r in found.items()} == {
        "test_same": "same",
        "test_text": "changed",
        "test_tools": "regressed",
        "test_structured": "regressed",
        "test_tokens": "regressed",
        "test_verdict": "regressed",
    }
    assert found["test_same"]["reasons"] == []
    assert found["test_text"]["reasons"] == ["application call 1: the answer changed"]
    (answer,) = found["test_text"]["answers"]
    assert (answer["old"], answer["new"]) == (
        "The refund takes five days.",
        "The refund takes three days.",
    )
    tools = found["test_tools"]
    assert tools["reasons"] == [
        "the tool search_web is no longer called",
        "a new tool is called: lookup",
        "application call 1: the answer changed",
    ]
    assert [(a["old"], a["new"]) for a in tools["answers"]] == [
        ('ok\ntool call: search_web({"q": "refund"})', 'ok\ntool call: lookup({"id": 7})')
    ]
    assert tools["trajectory"]["old"] == [{"name": "search_web", "arguments": {"q": "refund"}}]
    assert tools["trajectory"]["new"] == [{"name": "lookup", "arguments": {"id": 7}}]
    structured = found["test_structured"]
    assert structured["reasons"] == [
        "application call 1: the structured reply no longer fits its schema: 'priority' is a "
        "required property",
        "application call 1: the answer changed",
    ]
    assert structured["answers"][0]["label"] == "application call 1 · openai.chat · gpt-4o-mini"
    assert structured["answers"][0]["fields"] == [
        {"field": "priority", "old": "high", "new": None},
        {"field": "urgency", "old": None, "new": "high"},
    ]
    tokens, cost = [r for r in found["test_tokens"]["reasons"] if "rose" in r]
    assert tokens == "tokens rose 367% (3 -> 14), over the 25% budget (harness_change_budget)"
    assert cost.startswith("cost rose ")  # litellm prices gpt-4o-mini's tokens
    verdict = found["test_verdict"]
    assert verdict["outcome"] == {"old": "passed", "new": "failed"}
    assert verdict["reasons"][:2] == [
        "the test failed; it passed with its previous recording",
        "Panel#1's verdict went pass -> fail (Judge: pass -> fail)",
    ]


def test_the_terminal_lists_regressed_then_changed_and_counts_the_rest(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    text = rerecorded(pytester, server).stdout.str()  # neither -v nor --harness-report
    section = text[text.index("pytest-harness changes") :]
    lines = section.splitlines()
    kinds = [line.split()[1] for line in lines if line.startswith("test_app.py::")]
    assert kinds == ["regressed"] * 4 + ["changed"]
    assert "1 regressed" not in section
    assert "4 regressed · 1 changed · 1 same" in section
    assert "test_same" not in section


def test_budget_setting_decides_when_more_tokens_regress(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    result = rerecorded(
        pytester, server, "--harness-report=r.json", "-o", "harness_change_budget=900%"
    )
    found = by_test(json.loads((pytester.path / "r.json").read_text())["changes"])
    assert found["test_tokens"]["kind"] == "changed"
    assert result.ret == 1  # the verdict's test failed


def test_recording_for_the_first_time_counts_new_recordings_only(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    result = record(pytester, server, "--harness-report=r.json")
    result.assert_outcomes(passed=6)
    records = json.loads((pytester.path / "r.json").read_text())["changes"]
    assert {(r["kind"], r["new"]) for r in records} == {("changed", True)}
    assert "0 regressed · 0 changed · 0 same · 6 new" in result.stdout.str()


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=path,
        check=True,
        capture_output=True,
    )


def cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_harness", "changes", *args],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_changes_command_compares_the_working_tree_with_a_git_ref(
    pytester: pytest.Pytester, server: LoopbackServer
) -> None:
    record(pytester, server).assert_outcomes(passed=6)
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "cassettes")
    git(pytester.path, "commit", "-q", "-m", "first recording")
    server.handler = Script(SECOND)
    record(pytester, server).assert_outcomes(passed=5, failed=1)

    done = cli(pytester.path, "--report", "changes.json")
    assert done.returncode == 1, done.stderr
    assert "4 regressed · 1 changed · 1 same" not in done.stdout  # the failed test kept its old one
    assert "3 regressed · 1 changed · 2 same" in done.stdout
    records = json.loads((pytester.path / "changes.json").read_text())["changes"]
    kinds = {Path(r["cassette"]).stem: r["kind"] for r in records}
    assert kinds == {
        "test_same": "same",
        "test_text": "changed",
        "test_tools": "regressed",
        "test_structured": "regressed",
        "test_tokens": "regressed",
        "test_verdict": "same",  # it failed while re-recording: its recording was not saved
    }
    assert cli(pytester.path, "--base", "HEAD", "cassettes/test_app/test_text.yaml").returncode == 0
    strict = cli(pytester.path, "--fail-on", "changed", "cassettes/test_app/test_text.yaml")
    assert strict.returncode == 1
    git(pytester.path, "add", "cassettes")
    git(pytester.path, "commit", "-q", "-m", "re-recorded")
    assert "0 regressed · 0 changed · 6 same" in cli(pytester.path).stdout
    assert cli(pytester.path, "--base", "HEAD~1").returncode == 1


def test_the_changes_command_names_what_it_cannot_compare(tmp_path: Path) -> None:
    done = cli(tmp_path)
    assert done.returncode == 2
    assert "pytest-harness changes: error: git rev-parse --show-toplevel failed" in done.stderr
    git(tmp_path, "init", "-q")
    unknown = cli(tmp_path, "--base", "no-such-ref")
    assert unknown.returncode == 2
    assert "--base no-such-ref names no commit of this repository" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_a_new_and_a_removed_recording_are_changes() -> None:
    recording = changes.Recording()
    new = changes.compare(None, recording, test="t", cassette="c.yaml")
    gone = changes.compare(recording, None, test="t", cassette="c.yaml")
    assert (new["kind"], new["reasons"], new["new"]) == (
        "changed",
        ["a new recording: nothing to compare with"],
        True,
    )
    assert (gone["kind"], gone["reasons"], gone["removed"]) == ("changed", ["removed"], True)


GUIDE = Path(__file__).resolve().parent.parent / "docs/guides/rerecording.md"


def guide_blocks() -> tuple[str, str]:
    """The guide's project file, and the output it shows of the re-recording."""
    text = GUIDE.read_text(encoding="utf-8")
    project = text.split('```python title="test_support.py"\n', 1)[1].split("```", 1)[0]
    shown = text.split("<!-- rerecorded:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return project, shown


def guide_model(version: int) -> Any:
    """The guide's scripted model (its docs-model comment) before and after the change."""

    def reply(body: dict[str, Any]) -> Reply:
        if body.get("tools"):
            if version == 1:
                search = ToolCallSpec(name="search_orders", arguments={"order": "A-1042"})
                return Reply(content=None, tool_calls=[search])
            return Reply(content="Your order is on its way.")
        if body.get("response_format"):
            urgent = "true" if version == 1 else '"yes"'
            return Reply(content=f'{{"team": "billing", "urgent": {urgent}}}')
        return Reply(
            content="Hello Ada, how can I help?" if version == 1 else "Hi Ada, what can I do?"
        )

    return reply


def test_the_rerecording_guide_shows_what_re_recording_its_project_prints(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, shown = guide_blocks()
    pytester.makepyfile(test_support=project)
    pytester.makeini("[pytest]\n")
    monkeypatch.setenv("OPENAI_API_KEY", "loopback-not-a-secret")
    runs = []
    for version in (1, 2):
        with LoopbackServer(guide_model(version)) as model:
            monkeypatch.setenv("OPENAI_BASE_URL", model.url)
            args = ("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-live")
            runs.append(pytester.runpytest_subprocess(*args))
    runs[1].assert_outcomes(passed=3)
    printed = runs[1].stdout.str()
    section = printed[printed.index("=== pytest-harness changes") :]
    for line in shown.strip().splitlines()[1:]:  # the title's ruler depends on the width
        assert line in section


# Whatever a cassette holds (a hand edit, another tool's file, a provider's odd reply), reading
# and comparing it never raises, and the record is JSON.

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.just([])
    | st.just({}),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)
TOOL_CALL = st.fixed_dictionaries(
    {
        "id": st.text(max_size=4),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "b"]), "arguments": st.text(max_size=12) | st.just("{}")}
        ),
    }
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.text(max_size=20) | st.none()},
    optional={"tool_calls": st.lists(TOOL_CALL, max_size=2)},
)
CHOICE = st.fixed_dictionaries(
    {"index": st.just(0), "message": MESSAGE},
    optional={"finish_reason": st.sampled_from(["stop", "tool_calls", "length"])},
)
USAGE = st.fixed_dictionaries(
    {"prompt_tokens": st.integers(0, 9), "completion_tokens": st.integers(0, 9)},
    optional={"total_tokens": st.integers(0, 20)},
)
REPLY = st.fixed_dictionaries(
    {"object": st.just("chat.completion"), "choices": st.lists(CHOICE, min_size=1, max_size=2)},
    optional={"usage": USAGE | JSON, "model": st.text(max_size=4)},
)
SCHEMA = JSON | st.just({"$ref": "#/nowhere"}) | st.just({"type": "string", "pattern": "("})
FORMAT = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["json_schema", "json_object"]),
        "json_schema": st.fixed_dictionaries({"schema": SCHEMA}),
    }
)
REQUEST = st.fixed_dictionaries(
    {"model": JSON, "messages": JSON},
    optional={"response_format": FORMAT | JSON, "tools": JSON, "text": JSON},
)
INTERACTION = (
    st.fixed_dictionaries(
        {
            "request": st.fixed_dictionaries(
                {
                    "method": st.just("POST"),
                    "uri": st.sampled_from(
                        ["https://api.openai.com/v1/chat/completions", "http://x/mcp"]
                    ),
                    "body": st.fixed_dictionaries(
                        {"json": REQUEST | JSON, "form": st.just("compact")}
                    ),
                }
            ),
            "response": st.fixed_dictionaries(
                {
                    "status": st.fixed_dictionaries({"code": st.sampled_from([200, 500])}),
                    "headers": st.just({"content-type": ["application/json"]}),
                    "body": st.fixed_dictionaries(
                        {"json": REPLY | JSON, "form": st.just("compact")}
                    ),
                }
            ),
        },
        optional={"seam": st.text(max_size=4), "price": JSON, "latency_s": JSON},
    )
    | JSON
)
CASSETTE = st.fixed_dictionaries(
    {"interactions": st.lists(INTERACTION, max_size=4)}, optional={"metadata": JSON}
)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(old=CASSETTE, new=CASSETTE)
def test_any_cassette_reads_and_compares_without_an_error(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    record = changes.compare(changes.read(old), changes.read(new), test="t", cassette="c.yaml")
    assert record["kind"] in changes.KINDS
    json.dumps(record)
    assert changes.changes_table([record])


SHARED = """
import openai
import pytest

def ask(prompt):
    with openai.OpenAI(base_url="{url}", api_key="loopback-not-a-secret") as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}]
        )
    return reply.choices[0].message.content

@pytest.mark.harness(cassette="shared")
def test_a():
    assert ask("a")

@pytest.mark.harness(cassette="shared")
def test_b():
    assert ask("b")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["in-process", "xdist"])
def test_tests_sharing_a_cassette_are_one_record_naming_them_all(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    answers = {"a": Reply(content="Answer a."), "b": Reply(content="Answer b.")}
    with LoopbackServer(lambda body: answers[body["messages"][-1]["content"]]) as server:
        pytester.makepyfile(test_shared=SHARED.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        args = ("-p", "no:cacheprovider", "--harness-live", "--harness-report=r.json")
        pytester.runpytest_subprocess(*args).assert_outcomes(passed=2)
        answers["b"] = Reply(content="Another answer b.")
        pytester.runpytest_subprocess(*args, *workers).assert_outcomes(passed=2)
    (record,) = json.loads((pytester.path / "r.json").read_text())["changes"]
    assert record["cassette"].endswith("cassettes/shared.yaml")
    assert sorted(record["tests"]) == ["test_shared.py::test_a", "test_shared.py::test_b"]
    assert record["kind"] == "changed"
    assert [(a["old"], a["new"]) for a in record["answers"]] == [("Answer b.", "Another answer b.")]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\nharness_cassette_dir = recorded\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\nharness_cassette_dir = "recorded"\n'),
        ("tox.ini", "[tox]\n[pytest]\nharness_cassette_dir = recorded\n"),
        ("setup.cfg", "[tool:pytest]\nharness_cassette_dir = recorded\n"),
    ],
)
def test_the_command_reads_the_cassette_folder_from_the_ini_file(
    tmp_path: Path, name: str, text: str
) -> None:
    from pytest_harness.__main__ import cassette_dir

    assert cassette_dir(tmp_path) == tmp_path / "cassettes"
    (tmp_path / name).write_text(text)
    assert cassette_dir(tmp_path) == tmp_path / "recorded"


def test_the_command_names_a_file_it_cannot_read_and_a_wrong_option(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    broken = cli(tmp_path)
    assert broken.returncode == 2
    assert "pyproject.toml does not read as TOML" in broken.stderr
    (tmp_path / "pyproject.toml").unlink()
    assert "--base HEAD names no commit of this repository" in cli(tmp_path).stderr
    git(tmp_path, "commit", "-q", "--allow-empty", "-m", "start")
    budget = cli(tmp_path, "--budget", "a lot", ".")
    assert budget.returncode == 2
    assert "--budget expects a share, as a percentage (25%) or a fraction (0.25)" in budget.stderr
    (tmp_path / "c.yaml").write_text("{not json: [\n")
    damaged = cli(tmp_path, "c.yaml")
    assert damaged.returncode == 2
    assert "c.yaml" in damaged.stderr
    assert "Traceback" not in damaged.stderr


def judged(*answers: str, system: str = "You are the judge.") -> changes.Recording:
    calls = [
        changes.Call(caller="harness", api="openai.chat", model="m", system=system, content=a)
        for a in answers
    ]
    return changes.Recording(calls=tuple(calls))


def test_many_changed_answers_are_one_reason_per_caller_and_kind() -> None:
    old = judged("yes", "yes", "yes", "no")
    new = judged("no", "yes", "no", "no", "maybe", "maybe")
    record = changes.compare(old, new, test="t", cassette="c.yaml")
    assert record["kind"] == "changed"
    assert record["reasons"] == [
        "2 harness answers changed (calls 1, 3)",
        "2 harness calls are new (calls 5, 6)",
        "6 model calls, 4 before",
    ]
    assert [(a["old"], a["new"]) for a in record["answers"]] == [
        ("yes", "no"),
        ("yes", "no"),
        (None, "maybe"),
        (None, "maybe"),
    ]


def test_calls_pair_by_their_request_first_then_by_system_prompt_then_in_order() -> None:
    def call(content: str, system: str, request: str | None) -> changes.Call:
        return changes.Call(
            caller="harness",
            api="openai.chat",
            model="m",
            system=system,
            content=content,
            request=request,
        )

    old = [call("a", "A", "k1"), call("b", "B", "k2"), call("c", "C", None)]
    new = [call("c2", "C", None), call("b", "B", "k2"), call("a", "A", "k1")]
    pairs = [(o and o.content, n and n.content) for o, n in changes.pair(old, new)]
    assert pairs == [("c", "c2"), ("b", "b"), ("a", "a")]


def test_the_embedded_models_recorded_tool_calls_read_as_the_seam_read_them() -> None:
    """The examples' cassettes, recorded on the embedded model: its tool calls are a JSON
    reply to a grammar, read back as calls (and the answer as text), as the seam read them."""
    from pytest_harness._cassettes.read import read

    root = Path(__file__).resolve().parent.parent / "cassettes/examples/test_orders"
    recording = changes.read(read(root / "test_an_order_question_looks_the_order_up.yaml"))
    assert recording.trajectory == (("lookup_order", {"order_id": "A-1042"}),)
    asked, answered = recording.calls
    assert asked.tool_calls == ('tool call: lookup_order({"order_id": "A-1042"})',)
    assert (asked.content, asked.structured) == ("", False)
    assert answered.structured
    assert answered.schema_problem() is None
    assert changes.compare(recording, recording, test="t", cassette="c")["kind"] == "same"


def test_recording_only_what_is_new_reports_the_calls_it_added(pytester: pytest.Pytester) -> None:
    """--harness-record=new keeps every recording and adds the requests that have none: the
    comparison says which calls the file gained."""
    with LoopbackServer(lambda body: Reply(content="An answer.")) as server:
        pytester.makepyfile(test_shared=SHARED.format(url=server.url))
        pytester.makeini("[pytest]\nharness_allow_hosts = 127.0.0.1\n")
        args = ("-p", "no:cacheprovider", "-p", "no:randomly", "--harness-report=r.json")
        pytester.runpytest_subprocess(*args, "--harness-live").assert_outcomes(passed=2)
        test = pytester.path / "test_shared.py"
        test.write_text(test.read_text().replace('ask("b")', 'ask("b, asked again")'))
        pytester.runpytest_subprocess(*args, "--harness-record=new").assert_outcomes(passed=2)
    (record,) = json.loads((pytester.path / "r.json").read_text())["changes"]
    assert record["kind"] == "changed"
    assert record["reasons"] == ["application call 3: a new call", "3 model calls, 2 before"]
    assert [(a["old"], a["new"]) for a in record["answers"]] == [(None, "An answer.")]
