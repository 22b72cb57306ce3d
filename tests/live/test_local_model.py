"""The embedded model: route translation (pure) and the real llama.cpp server (live).

The route tests and the not-installed message run in the default suite. Tests marked
``live`` start one server for the module and call it through the real seam; they run in
``tox -e live``, which installs the ``local`` extra.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_harness import acomplete, complete
from pytest_harness._local.grammar import bound
from pytest_harness._local.install import ensure_installed, model_file
from pytest_harness._local.route import (
    LITELLM_NAME,
    LOCAL_MODEL,
    REPLAY_BASE,
    Route,
    make_route,
    received,
)
from pytest_harness._local.server import LocalServer
from pytest_harness._model.response import ModelResponse
from pytest_harness._pytest_glue import scope
from pytest_harness.errors import LocalModelError

# The live tests talk to their own server: no cassette is read or written.
pytestmark = pytest.mark.harness(cassette=False)

BASE = "http://127.0.0.1:1234/v1"
VERDICT = {
    "type": "object",
    "properties": {"verdict": {"type": "boolean"}},
    "required": ["verdict"],
}
SYSTEM = "You are a careful assistant who answers every question in one short sentence. " * 8


def routed(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("model", LOCAL_MODEL)
    kwargs.setdefault("messages", [{"role": "user", "content": "hi"}])
    return make_route(BASE)(kwargs)


# Route translation: pure, no server.


def test_route_leaves_other_models_alone() -> None:
    kwargs = {"model": "openai/gpt-4o-mini", "messages": [{"role": "system", "content": "s"}]}

    assert make_route(BASE)(kwargs) == {
        "model": "openai/gpt-4o-mini",
        "messages": [{"role": "system", "content": "s"}],
    }


def test_route_points_local_calls_at_the_server() -> None:
    kwargs = routed(num_retries=3, max_retries=3)

    assert kwargs["model"] == LITELLM_NAME
    assert kwargs["api_base"] == BASE
    assert kwargs["api_key"] == "no-key-local"
    assert (kwargs["temperature"], kwargs["seed"]) == (0, 42)
    assert (kwargs["num_retries"], kwargs["max_retries"]) == (0, 0)


def test_route_keeps_the_callers_temperature_and_seed() -> None:
    kwargs = routed(temperature=0.7, seed=7)

    assert (kwargs["temperature"], kwargs["seed"]) == (0.7, 7)


def test_route_translates_json_schema_to_json_object() -> None:
    openai_form = {"type": "json_schema", "json_schema": {"name": "v", "schema": VERDICT}}

    kwargs = routed(response_format=openai_form)

    # the schema as the grammar needs it: bounded (``grammar.bound``)
    assert kwargs["response_format"] == {"type": "json_object", "schema": bound(VERDICT).schema}
    assert openai_form["type"] == "json_schema"


@pytest.mark.parametrize("form", [{"type": "json_object"}, {"type": "text"}])
def test_route_passes_forms_the_server_accepts(form: dict[str, Any]) -> None:
    assert routed(response_format=form)["response_format"] == form


def test_route_folds_system_text_into_the_first_user_turn() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Sky colour?"},
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Grass colour?"},
    ]
    original = [dict(m) for m in messages]

    kwargs = routed(messages=messages)

    assert kwargs["messages"] == [
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Be brief.\n\nAnswer in French.\n\nSky colour?"},
        {"role": "user", "content": "Grass colour?"},
    ]
    assert messages == original


def test_route_folds_text_parts() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Sky colour?"}]},
    ]

    assert routed(messages=messages)["messages"] == [
        {"role": "user", "content": "Be brief.\n\nSky colour?"}
    ]


def test_route_turns_lone_system_text_into_a_user_turn() -> None:
    messages = [{"role": "system", "content": "Say hi."}]

    assert routed(messages=messages)["messages"] == [{"role": "user", "content": "Say hi."}]


def test_replay_base_is_loopback() -> None:
    assert REPLAY_BASE.startswith("http://127.0.0.1:")


def test_ensure_installed_names_the_extra_when_llama_cpp_is_missing() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["llama_cpp"] = None  # as if llama-cpp-python were not installed
        from pytest_harness.errors import LocalModelError
        from pytest_harness._local.install import ensure_installed
        try:
            ensure_installed()
        except LocalModelError as error:
            print(error)
        """
    )

    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )

    assert "pip install 'pytest-harness[local]'" in result.stdout
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in result.stdout  # the portable build
    assert "llama-cpp-python (module llama_cpp)" in result.stdout


# The real server.


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    """One embedded-model server for the module (the model is cached once per machine)."""
    with LocalServer() as running:
        yield running


@dataclass(frozen=True)
class RouteHook:
    """The route as the seam's call hook (what ``LocalRoute`` does when live)."""

    route: Route

    def prepare(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return self.route(kwargs)

    def receive(self, kwargs: Mapping[str, Any], response: ModelResponse) -> ModelResponse:
        return received(kwargs, response)

    def judged(self, kwargs: Mapping[str, Any]) -> scope.Judged | None:
        return None

    def translate(self, error: BaseException) -> BaseException | None:
        return None


def local(server: LocalServer) -> AbstractContextManager[scope.Scope]:
    """Route ``model="local"`` to ``server``: its only route and no call hook, so no cassette
    (nor the test's own embedded-model route, which points at the replay address) is involved."""
    return scope.override(
        call_hooks=(), routes={LOCAL_MODEL: RouteHook(make_route(server.base_url))}
    )


@pytest.mark.live
def test_ensure_installed_passes() -> None:
    ensure_installed()


@pytest.mark.live
def test_model_file_is_assembled_once_under_concurrency(tmp_path: Path) -> None:
    script = "import sys, pathlib; from pytest_harness._local.install import model_file; "
    script += "print(model_file(pathlib.Path(sys.argv[1])))"
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    paths = {worker.communicate(timeout=120)[0].decode().strip() for worker in workers}

    try:
        assert [worker.returncode for worker in workers] == [0, 0]
        (path,) = paths
        assert Path(path).stat().st_size == model_file().stat().st_size
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [Path(path).name, Path(path).name + ".lock"]
        )
    finally:
        for leftover in tmp_path.iterdir():  # 253 MB: not kept with pytest's last 3 runs
            leftover.unlink()


@pytest.mark.live
def test_server_listens_on_loopback_and_reports_the_model_id(local_server: LocalServer) -> None:
    with urllib.request.urlopen(f"{local_server.base_url}/models", timeout=10) as reply:
        models = json.load(reply)

    assert local_server.base_url.startswith("http://127.0.0.1:")
    assert [m["id"] for m in models["data"]] == [LITELLM_NAME.split("/", 1)[1]]


@pytest.mark.live
def test_plain_call_returns_text(local_server: LocalServer) -> None:
    with local(local_server):
        response = complete("Name a colour.", model=LOCAL_MODEL, max_tokens=16)

    assert response.text
    assert response.usage.completion_tokens > 0


@pytest.mark.live
def test_async_call_returns_text(local_server: LocalServer) -> None:
    with local(local_server):
        response = asyncio.run(acomplete("Name a fruit.", model=LOCAL_MODEL, max_tokens=16))

    assert response.text


@pytest.mark.live
def test_stream_reports_every_token(local_server: LocalServer) -> None:
    tokens: list[str] = []
    with local(local_server):
        response = complete(
            "Count to five.", model=LOCAL_MODEL, max_tokens=24, stream=True, on_token=tokens.append
        )

    assert len(tokens) > 1
    assert "".join(tokens) == response.content
    assert not response.interrupted


@pytest.mark.live
def test_json_schema_is_enforced(local_server: LocalServer) -> None:
    openai_form = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}}
    with local(local_server):
        response = complete(
            "Is the sky blue? Answer in JSON.", model=LOCAL_MODEL, response_format=openai_form
        )

    answer = json.loads(response.content or "")
    assert isinstance(answer, dict)
    assert isinstance(answer["verdict"], bool)


@pytest.mark.live
def test_system_message_reaches_the_model(local_server: LocalServer) -> None:
    question = {"role": "user", "content": "Is the sky blue?"}
    with local(local_server):
        bare = complete([question], model=LOCAL_MODEL, max_tokens=1)
        briefed = complete(
            [{"role": "system", "content": SYSTEM}, question], model=LOCAL_MODEL, max_tokens=1
        )

    assert briefed.usage.prompt_tokens > bare.usage.prompt_tokens + 50


@pytest.mark.live
def test_server_drops_system_messages_without_the_route(local_server: LocalServer) -> None:
    # Why the route folds system text: if this fails, the server learnt system messages.
    question = {"role": "user", "content": "Is the sky blue?"}
    direct = {"model": LITELLM_NAME, "api_base": local_server.base_url, "api_key": "x"}

    bare = complete([question], max_tokens=1, **direct)
    briefed = complete([{"role": "system", "content": SYSTEM}, question], max_tokens=1, **direct)

    assert briefed.usage.prompt_tokens == bare.usage.prompt_tokens


@pytest.mark.live
def test_same_prompt_same_answer(local_server: LocalServer) -> None:
    with local(local_server):
        first, second = [
            complete("Tell me about cats.", model=LOCAL_MODEL, max_tokens=24) for _ in range(2)
        ]

    assert first.content == second.content


@pytest.mark.live
def test_seed_repeats_a_sampled_answer(local_server: LocalServer) -> None:
    # Only from the same server state: llama.cpp reuses the cached prefix of the previous
    # prompt, and a prompt evaluated in part gives slightly different logits; at temperature
    # 0.9 that changes the tokens. So each sampled call follows the same other call.
    def sampled() -> str | None:
        complete("Say hello.", model=LOCAL_MODEL, max_tokens=1)
        return complete(
            "Tell me about cats.", model=LOCAL_MODEL, max_tokens=24, temperature=0.9, seed=7
        ).content

    with local(local_server):
        first, second = sampled(), sampled()

    assert first == second


def test_stopped_server_has_no_base_url() -> None:
    server = LocalServer()

    with pytest.raises(LocalModelError, match="not running"):
        server.base_url  # noqa: B018


@pytest.mark.live
def test_server_that_cannot_start_shows_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")

    with pytest.raises(LocalModelError, match=r"exited with code .*Last lines of its log") as info:
        LocalServer(broken).start(timeout=60)

    assert "broken.gguf" in str(info.value)


# The server dying mid-run: a real llama.cpp server, really killed by the signal a build this
# CPU cannot run dies of (SIGSEGV on its first token), in a pytest run of its own.

KILLED = """
import os, signal
from pathlib import Path

import openai, pytest
from pytest_harness import complete
from pytest_harness.errors import LocalModelError

pytestmark = pytest.mark.harness


def kill_the_server(how=signal.SIGSEGV):
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\\t", 1) for line in status.read_text().splitlines())
            command = (status.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()) and b"llama_cpp.server" in command:
            os.kill(int(status.parent.name), how)
            os.waitid(os.P_PID, int(status.parent.name), os.WEXITED | os.WNOWAIT)
            return
    raise AssertionError("no embedded-model server among this process's children")
"""

HARNESS_CALL_AFTER_DEATH = """
import threading

def test_the_server_dies_during_a_call():
    assert complete("Say hi.", model="local", max_tokens=4).finish_reason
    threading.Timer(1.0, kill_the_server).start()  # mid-answer: end-of-turn tokens are banned
    with pytest.raises(LocalModelError) as info:
        complete("Write a long story about a cat.", model="local", max_tokens=3000,
                 logit_bias={1: -100, 106: -100})
    print("MESSAGE:", str(info.value).replace("\\n", " | "))


def test_a_later_test_that_needs_the_server():
    with openai.OpenAI() as client:
        client.chat.completions.create(model="gpt-4o-mini", max_tokens=4,
                                       messages=[{"role": "user", "content": "hi"}])
"""

APPLICATION_LOSES_THE_SERVER = """
def test_the_application_swallows_the_connection_error():
    complete("Say hi.", model="local", max_tokens=4)
    kill_the_server()
    with openai.OpenAI(max_retries=0) as client:
        try:
            client.chat.completions.create(model="gpt-4o-mini", max_tokens=4,
                                           messages=[{"role": "user", "content": "hi"}])
        except openai.APIConnectionError:
            pass  # an application that shrugs off a provider outage
"""


@pytest.mark.live
def test_a_server_that_dies_mid_run_is_named_by_its_signal_its_log_and_the_fix(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_killed=KILLED + HARNESS_CALL_AFTER_DEATH)
    result = pytester.runpytest_subprocess(
        "--harness-live", "--harness-model=local", "-p", "no:randomly", "-s", "-rA"
    )
    result.assert_outcomes(passed=1, errors=1)
    (message,) = [line.split("MESSAGE:")[1] for line in result.outlines if "MESSAGE:" in line]
    assert "the embedded model's server (llama.cpp, pid " in message
    assert "was killed by signal SIGSEGV" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in message
    assert "pip install --force-reinstall --no-cache-dir --no-deps 'llama-cpp-python==" in message
    assert "Last lines of its log:" in message
    # The next test is not sent to a dead server: its setup says why, no connection error.
    result.stdout.fnmatch_lines(["*ERROR at setup of test_a_later_test_that_needs_the_server*"])
    result.stdout.fnmatch_lines(["*LocalModelError: the embedded model's server*SIGSEGV*"])
    assert "APIConnectionError" not in result.stdout.str()


@pytest.mark.live
def test_an_application_that_lost_the_server_is_told_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_killed=KILLED + APPLICATION_LOSES_THE_SERVER)
    result = pytester.runpytest_subprocess(
        "--harness-live", "--harness-model=local", "-p", "no:randomly"
    )
    result.assert_outcomes(failed=1)  # it passed by itself: the death fails it
    result.stdout.fnmatch_lines(
        [
            "*LocalModelError: the embedded model's server (llama.cpp, pid *) was killed by signal "
            "SIGSEGV*"
        ]
    )


@pytest.mark.live
def test_a_server_killed_from_outside_is_not_blamed_on_the_build(tmp_path: Path) -> None:
    server = LocalServer().start()
    try:
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        failure = server.failure(wait=10)
    finally:
        server.stop()
    assert failure is not None
    assert "was killed by signal SIGKILL" in str(failure)
    assert "out-of-memory killer" in str(failure)
    assert "GGML_NATIVE" not in str(failure)
