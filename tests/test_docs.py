"""Every Python block of the docs runs: ``docs/**/*.md`` and ``README.md``, one test per page.

The convention, for whoever writes a page:

- **A block with a title is a file of the page's project**: ```` ```python title="test_a.py" ````
  (or ``conftest.py``, ``pytest.ini``: the title is the file's path in the project). All the
  titled blocks of a page are written into one fresh directory and pytest runs there (in a
  subprocess, as a user would run it); the run must pass, with at least one test and no
  failure (exit code 0: "no tests ran", code 5, fails).
- **A** ```` ```python ```` **block without a title is a snippet.** A page's snippets run in
  order in one namespace (a later block may use an earlier block's names), in the test's
  process, in an empty working directory; none may raise.
- **An HTML comment right before a titled block sets how the page's project runs**, as
  ``key="value"`` pairs or bare flags (blank lines may separate it from the block)::

      <!-- docs-test: args="-k capital" outcomes="passed=1 failed=1" -->
      <!-- docs-test: record reply="The capital of France is Paris." -->

  ``args``: extra pytest arguments, split as a shell would. ``outcomes``: what the run must
  end with (``RunResult.assert_outcomes``) instead of "passed, no failure". ``record``:
  record, then replay: pytest ``--harness-live`` runs with ``OPENAI_BASE_URL`` (and
  ``OPENAI_API_BASE``) and ``OPENAI_API_KEY`` pointing at a scripted model on loopback
  (``pytest_harness.testing.LoopbackServer``), and ``ANTHROPIC_BASE_URL``,
  ``GOOGLE_GEMINI_BASE_URL`` (google-genai's), ``ANTHROPIC_API_KEY`` and ``GEMINI_API_KEY``
  at the same server, which answers each SDK in its own wire format; so do boto3's Bedrock
  runtime, AzureOpenAI, google-genai's Vertex AI and the ollama client
  (``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, ``AZURE_OPENAI_ENDPOINT``, ``GOOGLE_VERTEX_BASE_URL``,
  ``OLLAMA_HOST``), recording with an AWS session's keys, ``AZURE_OPENAI_API_KEY`` and a
  Google service account whose tokens come from the same server. The server is stopped, and
  a plain ``pytest`` must pass again from the cassettes alone, with no key or credential at
  all (the base URLs stay). The recording must have reached the model. ``reply``: what the scripted
  model answers to every request (with ``record``; default ``ok``).
- **A page whose model must answer request by request** (JSON votes for judges, tool calls
  for an agent) scripts it in a hidden comment, anywhere on the page, instead of ``reply``::

      <!-- docs-model
      def reply(body):
          if body.get("tools"):
              return Reply(tool_calls=[ToolCallSpec(name="lookup", arguments={"id": "A-1"})])
          return Reply(content=json.dumps({"result": True, "reason": "polite"}))
      -->

  ``body`` is the request's JSON; ``Reply``, ``ToolCallSpec`` (``pytest_harness.testing``)
  and ``json`` are at hand. It answers while the page's project records.

Other blocks (``sh``, untitled ``toml``) are prose. Nothing is skipped: a block that cannot
run fails its page's test, and the failure names the page and the block's line.
"""

from __future__ import annotations

import json
import linecache
import re
import shlex
import sys
import textwrap
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec


class PageError(Exception):
    """A page's block failed, or the page breaks the convention; says which page and line."""


ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/**/*.md")),
]

PYTHON = {"python", "py"}
PYTEST_ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")
KEYS = {"args", "outcomes", "record", "reply"}
OUTCOMES = {"passed", "skipped", "failed", "errors", "xpassed", "xfailed", "warnings", "deselected"}
# The providers' variables: cleared for every page, set to the loopback model to record.
# Base URLs: OpenAI's end in /v1 (``server.url``); Anthropic's and Gemini's are the server's
# root (``server.root``): their SDKs add /v1/messages and /v1beta/models/... themselves.
OPENAI_URLS = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
# The clouds' and Ollama's endpoints (docs/guides/providers.md): boto3's Bedrock runtime,
# AzureOpenAI's, google-genai's with vertexai=True, the ollama client's.
ROOT_URLS = (
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AZURE_OPENAI_ENDPOINT",
    "GOOGLE_VERTEX_BASE_URL",
    "OLLAMA_HOST",
)
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY")
# Credentials a recording has and a replay has not: AWS's (a session's, as SSO gives them),
# and Google's application default credentials (a service account whose token URI is the
# loopback server's token route).
AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
GOOGLE_CREDENTIALS = "GOOGLE_APPLICATION_CREDENTIALS"
PROVIDER = (*OPENAI_URLS, *ROOT_URLS, *KEY_VARIABLES, *AWS_VARIABLES, GOOGLE_CREDENTIALS)
PROVIDER += ("GOOGLE_API_KEY",)
RECORDING_KEY = "sk-docs-recording-0123456789abcdef"
AWS_RECORDING = {
    "AWS_ACCESS_KEY_ID": "ASIADOCSRECORDING000",
    "AWS_SECRET_ACCESS_KEY": "docs-recording-secret-0123456789abcdef",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEDocsRecordingSessionToken0123456789",
}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)(?P<info>.*)$")
TITLE = re.compile(r'\btitle="(?P<title>[^"]*)"')
COMMENT = re.compile(r"^[ \t]*<!--[ \t]*docs-test:(?P<body>.*?)-->[ \t]*$")
# A page's scripted model, hidden from readers: an HTML comment holding Python that defines
# ``reply(body) -> Reply`` (``Reply``, ``ToolCallSpec`` and ``json`` are at hand).
MODEL = re.compile(r"^<!--[ \t]*docs-model[ \t]*\n(?P<code>.*?)^-->[ \t]*$", re.M | re.S)
SETTING = re.compile(r'[ \t]*(?P<key>[\w-]+)(?:="(?P<value>[^"]*)")?[ \t]*')


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A fenced block of a page: where it starts, its language, title, code and settings."""

    line: int  # the line of the opening fence (1-based); its code starts on the next one
    lang: str
    title: str | None
    code: str
    settings: Mapping[str, str]

    @property
    def runs(self) -> bool:
        return self.title is not None or self.lang in PYTHON


def read_blocks(text: str, name: str) -> list[Block]:
    """The fenced blocks of a page (``name`` is how errors name it), settings attached."""
    lines = text.splitlines()
    blocks: list[Block] = []
    pending: tuple[int, dict[str, str]] | None = None
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if line.lstrip().startswith("<!--") and "docs-test" in line:
            pending = (number, _settings(line, name, number))
            continue
        opening = FENCE.match(line)
        if opening is None:
            if line.strip() and pending is not None:
                raise PageError(f"{name}:{pending[0]}: a docs-test comment must precede a block")
            continue
        code, number = _block_body(lines, number, opening, name)
        title = TITLE.search(opening["info"])
        block = Block(
            line=number - len(code) - 1,
            lang=opening["lang"].lower(),
            title=title["title"] if title else None,
            code="\n".join(code),
            settings=pending[1] if pending else {},
        )
        if pending is not None and block.title is None:
            raise PageError(
                f"{name}:{pending[0]}: docs-test settings apply to the page's project: "
                "put them before a titled block"
            )
        pending = None
        blocks.append(block)
    return blocks


def _block_body(
    lines: list[str], start: int, opening: re.Match[str], name: str
) -> tuple[list[str], int]:
    """The block's lines (unindented by its fence's indent) and the line after its end."""
    fence, indent = opening["fence"], len(opening["indent"])
    closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    for end in range(start, len(lines)):
        if closing.match(lines[end]):
            body = [_unindent(line, indent) for line in lines[start:end]]
            return body, end + 1
    raise PageError(f"{name}:{start}: the block opened here is never closed")


def _unindent(line: str, indent: int) -> str:
    return line[min(indent, len(line) - len(line.lstrip())) :]


def _settings(line: str, name: str, number: int) -> dict[str, str]:
    found = COMMENT.match(line)
    if found is None:
        raise PageError(f'{name}:{number}: expected <!-- docs-test: key="value" ... -->')
    body, settings, at = found["body"], {}, 0
    while at < len(body.rstrip()):
        setting = SETTING.match(body, at)
        if setting is None or setting.end() == at:
            raise PageError(f"{name}:{number}: cannot read docs-test settings {body.strip()!r}")
        key, value = setting["key"], setting["value"]
        if key not in KEYS:
            raise PageError(
                f"{name}:{number}: unknown docs-test key {key!r}; expected one of {sorted(KEYS)}"
            )
        settings[key], at = value if value is not None else "", setting.end()
    return settings


@dataclass
class Docs:
    """Runs a page: its snippets in this process, its project in a pytester directory."""

    pytester: pytest.Pytester
    monkeypatch: pytest.MonkeyPatch
    workdir: Path  # the snippets' working directory

    def run_page(self, path: Path, name: str | None = None) -> None:
        """Run every block of the page at ``path``; PageError if one fails."""
        name = name or str(path)
        text = path.read_text(encoding="utf-8")
        blocks = [block for block in read_blocks(text, name) if block.runs]
        self.run_snippets(text, name, [block for block in blocks if block.title is None])
        files = [block for block in blocks if block.title is not None]
        model = read_model(text, name)
        if model is not None and not files:
            raise PageError(f"{name}: a docs-model comment needs a project (titled blocks)")
        if files:
            self.run_project(name, files, model)

    def run_snippets(self, text: str, name: str, snippets: list[Block]) -> None:
        """Run the snippets in order in one module's namespace; tracebacks show the page."""
        if not snippets:
            return
        # Compiled under the page's name, padded so that line numbers are the page's, and
        # the page registered with linecache: a traceback shows the page's own lines.
        linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
        module = types.ModuleType("docs_page_" + re.sub(r"\W", "_", name))
        module.__file__ = name
        self.monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses need it
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.monkeypatch.chdir(self.workdir)
        for block in snippets:
            code = compile("\n" * block.line + block.code, name, "exec")
            try:
                exec(code, module.__dict__)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # pytest.skip() and SystemExit too: nothing is skipped
                where = _line_in(error, name)
                raise PageError(
                    f"{name}:{block.line}: the python block starting on line {block.line} "
                    f"raised {type(error).__name__}: {error}"
                    + (f" (at {name}:{where})" if where is not None else "")
                ) from error

    def run_project(
        self, name: str, files: list[Block], model: Callable[[Any], Reply] | None = None
    ) -> None:
        """Write the titled blocks into the project and run pytest there."""
        settings = _project_settings(name, files)
        expected = _outcomes(name, settings.get("outcomes"))
        titles = [block.title for block in files]
        for block in files:
            if titles.count(block.title) > 1:
                raise PageError(f"{name}:{block.line}: two blocks titled {block.title!r}")
            self._write(name, block)
        where = ", ".join(f"{block.title} (line {block.line})" for block in files)
        label = f"{name}: the page's project [{where}]"
        args = [*PYTEST_ARGS, *shlex.split(settings.get("args", ""))]
        if "record" not in settings:
            if "reply" in settings or model is not None:
                raise PageError(f"{name}: docs-test reply= and docs-model apply to record only")
            _check(label, "running", args, self._pytest(args), expected)
            return
        if model is not None and "reply" in settings:
            raise PageError(f"{name}: a page scripts its model with reply= or docs-model, not both")
        reply = Reply(content=settings.get("reply") or "ok")
        with LoopbackServer(model or (lambda body: reply)) as model_server:
            self._provider(model_server, RECORDING_KEY)
            live = ["--harness-live", *args]
            _check(label, "recording", live, self._pytest(live), expected)
            calls = len(model_server.requests)
        if not calls:
            raise PageError(f"{label}: recorded no model call, so replaying it proves nothing")
        self._provider(model_server, None)  # the server is gone: only cassettes answer
        _check(label, "replaying offline", args, self._pytest(args), expected)

    def _write(self, name: str, block: Block) -> None:
        relative = Path(block.title or "")
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise PageError(f"{name}:{block.line}: a title must be a relative file path")
        path = self.pytester.path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code + "\n", encoding="utf-8")

    def _provider(self, server: LoopbackServer, key: str | None) -> None:
        """Point every provider's SDK at ``server``; with ``key`` (and cloud credentials), or
        with no credential at all."""
        for variable in OPENAI_URLS:
            self.monkeypatch.setenv(variable, server.url)
        for variable in ROOT_URLS:
            self.monkeypatch.setenv(variable, server.root)
        if key is None:  # replay needs none
            for variable in (*KEY_VARIABLES, *AWS_VARIABLES, GOOGLE_CREDENTIALS):
                self.monkeypatch.delenv(variable, raising=False)
            return
        for variable in KEY_VARIABLES:
            self.monkeypatch.setenv(variable, key)
        for variable, value in AWS_RECORDING.items():
            self.monkeypatch.setenv(variable, value)
        account = _service_account(self.workdir.parent / "credentials", f"{server.root}/token")
        self.monkeypatch.setenv(GOOGLE_CREDENTIALS, str(account))

    def _pytest(self, args: list[str]) -> pytest.RunResult:
        # A subprocess, as a user runs it: a project may import anything (litellm cannot be
        # imported twice in one process, and pytester's in-process runs forget modules). In
        # the project's folder, whatever folder the page's snippets ran in.
        self.monkeypatch.chdir(self.pytester.path)
        return self.pytester.runpytest_subprocess(*args, timeout=300)


def _service_account(folder: Path, token_uri: str) -> Path:
    """A Google service account key file (a new RSA key) whose tokens come from ``token_uri``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "docs-project",
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": "docs@docs-project.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "service-account.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def read_model(text: str, name: str) -> Callable[[Any], Reply] | None:
    """The page's ``reply(body)`` from its docs-model comment, or None when it has none."""
    found = list(MODEL.finditer(text))
    if not found:
        return None
    line = text[: found[0].start("code")].count("\n")
    if len(found) > 1:
        raise PageError(f"{name}:{line}: a page has one docs-model comment")
    namespace: dict[str, Any] = {"Reply": Reply, "ToolCallSpec": ToolCallSpec, "json": json}
    exec(compile("\n" * line + found[0]["code"], name, "exec"), namespace)
    handler = namespace.get("reply")
    if not callable(handler):
        raise PageError(f"{name}:{line}: a docs-model comment defines reply(body) -> Reply")
    return handler  # type: ignore[no-any-return]


def _project_settings(name: str, files: list[Block]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for block in files:
        for key, value in block.settings.items():
            if merged.get(key, value) != value:
                raise PageError(f"{name}:{block.line}: docs-test {key} set twice, differently")
            merged[key] = value
    return merged


def _outcomes(name: str, text: str | None) -> dict[str, int] | None:
    if text is None:
        return None
    pairs = [item.partition("=") for item in text.split()]
    if not pairs or any(key not in OUTCOMES or not n.isdigit() for key, _, n in pairs):
        raise PageError(f'{name}: expected outcomes="passed=N failed=N ..." ({sorted(OUTCOMES)})')
    return {key: int(n) for key, _, n in pairs}


def _check(
    label: str,
    step: str,
    args: list[str],
    result: pytest.RunResult,
    expected: dict[str, int] | None,
) -> None:
    """The run ended as ``expected`` says, or else passed with at least one test."""
    failed = f"{label} failed while {step} (pytest {shlex.join(args)})"
    output = "\n".join(result.outlines[-80:] + result.errlines[-20:])
    if expected is not None:
        try:
            result.assert_outcomes(**expected)
        except AssertionError as error:
            raise PageError(f"{failed}: {error}\n{output}") from None
        return
    if result.ret != 0:
        why = "no test ran (exit code 5)" if result.ret == 5 else f"exit code {int(result.ret)}"
        raise PageError(f"{failed}: {why}\n{output}")


def _line_in(error: BaseException, name: str) -> int | None:
    """The last line of the page the traceback went through (where the block raised)."""
    line = None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == name:
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


@pytest.fixture
def docs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Docs:
    for variable in PROVIDER:
        monkeypatch.delenv(variable, raising=False)
    return Docs(pytester, monkeypatch, tmp_path / "snippets")


# Pages whose projects run the agent frameworks, installed on Python 3.11 and later only
# (the dev extra's markers); tests/conftest.py leaves their test modules out there too.
FRAMEWORK_PAGES = {"docs/guides/agents.md", "docs/guides/mcp.md", "docs/guides/providers.md"}
RUNNABLE = [page for page in PAGES if sys.version_info >= (3, 11) or page not in FRAMEWORK_PAGES]


@pytest.mark.parametrize("page", RUNNABLE)
def test_page(docs: Docs, page: str) -> None:
    docs.run_page(ROOT / page, page)


# The collector itself, on pages made up here.


def write_page(folder: Path, text: str) -> Path:
    page = folder / "fake.md"
    page.write_text(textwrap.dedent(text), encoding="utf-8")
    return page


def test_a_failing_snippet_names_its_page_and_line(docs: Docs, tmp_path: Path) -> None:
    page = write_page(
        tmp_path,
        """\
        # A page

        ```python
        total = 1
        ```

        A later block uses the earlier one's names:

        ```python
        total += 1
        total / (total - 2)
        ```
        """,
    )
    with pytest.raises(PageError) as failed:
        docs.run_page(page)
    assert str(failed.value) == (
        f"{page}:9: the python block starting on line 9 raised ZeroDivisionError: "
        f"division by zero (at {page}:11)"
    )
    assert isinstance(failed.value.__cause__, ZeroDivisionError)


def test_snippets_run_in_order_in_one_namespace_and_nothing_is_skipped(
    docs: Docs, tmp_path: Path
) -> None:
    page = write_page(
        tmp_path,
        """\
        ```python
        from dataclasses import dataclass

        @dataclass(frozen=True, slots=True, kw_only=True)
        class Point:
            x: int
        ```

        - A list item with a block in it:

            ```py
            point = Point(x=3)
            assert point.x == 3
            ```

        ```sh
        this is prose, never run
        ```

        ```python
        import pytest
        pytest.skip("a skipped block fails the page")
        ```
        """,
    )
    with pytest.raises(PageError, match=r"fake.md:20: .* raised Skipped: a skipped block"):
        docs.run_page(page)


def test_a_project_runs_with_pytest_and_must_pass(docs: Docs, tmp_path: Path) -> None:
    page = write_page(
        tmp_path,
        """\
        ```python title="helpers/greet.py"
        def greet(name):
            return f"Hello {name}"
        ```

        ```python title="test_greet.py"
        from helpers.greet import greet

        def test_greet():
            assert greet("Ada") == "Hello Ada!"
        ```
        """,
    )
    with pytest.raises(PageError) as failed:
        docs.run_page(page)
    message = str(failed.value)
    assert message.startswith(
        f"{page}: the page's project [helpers/greet.py (line 1), test_greet.py (line 6)] "
        "failed while running (pytest -p no:cacheprovider -p no:randomly): exit code 1"
    )
    assert "1 failed" in message


def test_a_project_without_tests_fails(docs: Docs, tmp_path: Path) -> None:
    page = write_page(tmp_path, '```python title="conftest.py"\nVALUE = 1\n```\n')
    with pytest.raises(PageError, match=r"no test ran \(exit code 5\)"):
        docs.run_page(page)


def test_settings_give_args_and_expected_outcomes(docs: Docs, tmp_path: Path) -> None:
    page = write_page(
        tmp_path,
        """\
        <!-- docs-test: args="-k 'not slow'" outcomes="passed=1 failed=1 deselected=one" -->

        ```python title="test_outcomes.py"
        def test_passes():
            pass

        def test_fails():
            assert False

        def test_slow():
            pass
        ```
        """,
    )
    with pytest.raises(PageError, match=r"expected outcomes="):
        docs.run_page(page)
    page.write_text(page.read_text().replace("=one", "=1"))
    docs.run_page(page)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '<!-- docs-test: colour="red" -->\n```python title="t.py"\n```\n',
            "unknown docs-test key",
        ),
        ("<!-- docs-test: record -->\n```python\n```\n", "put them before a titled block"),
        ("<!-- docs-test: record -->\nSome prose.\n", "must precede a block"),
        ("<!-- docs-test record -->\n", "expected <!-- docs-test:"),
        ("```python\nx = 1\n", "never closed"),
        ('```python title="../up.py"\n```\n', "relative file path"),
        ('```python title="t.py"\n```\n```python title="t.py"\n```\n', "two blocks titled"),
    ],
)
def test_a_page_that_breaks_the_convention_fails(
    docs: Docs, tmp_path: Path, text: str, error: str
) -> None:
    page = write_page(tmp_path, text)
    with pytest.raises(PageError, match=rf"^{re.escape(str(page))}:\d+: .*{re.escape(error)}"):
        docs.run_page(page)


def test_record_must_replay_offline(docs: Docs, tmp_path: Path) -> None:
    """A project that records nothing to its cassette (cassette=False) fails its replay."""
    page = write_page(
        tmp_path,
        """\
        <!-- docs-test: record reply="pong" -->
        ```python title="test_ping.py"
        import openai
        import pytest

        @pytest.mark.harness(cassette=False)
        def test_ping():
            with openai.OpenAI(max_retries=0) as client:
                reply = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "ping"}]
                )
            assert reply.choices[0].message.content == "pong"
        ```
        """,
    )
    with pytest.raises(PageError, match=r"failed while replaying offline .*exit code 1"):
        docs.run_page(page)


def test_a_docs_model_answers_request_by_request_while_recording(
    docs: Docs, tmp_path: Path
) -> None:
    page = write_page(
        tmp_path,
        """\
        # A page whose model answers each request by its content

        <!-- docs-model
        def reply(body):
            asked = body["messages"][-1]["content"]
            return Reply(content=json.dumps({"echo": asked}))
        -->

        <!-- docs-test: record -->
        ```python title="test_echo.py"
        import json

        import openai
        import pytest


        @pytest.mark.harness
        @pytest.mark.parametrize("word", ["one", "two"])
        def test_echo(word):
            client = openai.OpenAI()
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": word}]
            )
            assert json.loads(reply.choices[0].message.content) == {"echo": word}
        ```
        """,
    )
    docs.run_page(page)


def test_a_recorded_page_reaches_the_model_from_every_sdk(docs: Docs, tmp_path: Path) -> None:
    """The Anthropic and Gemini SDKs find the loopback model by their own variables, and
    replay from the cassettes with none of the keys."""
    pytest.importorskip("anthropic")  # the SDKs: Python 3.11 and later (the dev extra)
    page = write_page(
        tmp_path,
        """\
        <!-- docs-test: record reply="pong" -->
        ```python title="test_sdks.py"
        import os

        import anthropic
        import pytest
        from google import genai


        @pytest.mark.harness
        def test_ping():
            assert os.environ.get("ANTHROPIC_API_KEY")  # recording: set; replay: a placeholder
            with anthropic.Anthropic() as claude:
                asked = [{"role": "user", "content": "ping"}]
                reply = claude.messages.create(model="c", max_tokens=9, messages=asked)
            assert reply.content[0].text == "pong"
            with genai.Client() as gemini:
                assert gemini.models.generate_content(model="g", contents="ping").text == "pong"
        ```
        """,
    )
    docs.run_page(page)


def test_a_docs_model_without_reply_is_named(docs: Docs, tmp_path: Path) -> None:
    page = write_page(
        tmp_path,
        """\
        # A page

        <!-- docs-model
        answer = 42
        -->

        ```python title="test_x.py"
        def test_x():
            pass
        ```
        """,
    )
    with pytest.raises(PageError, match=r"fake.md:\d+: a docs-model comment defines reply"):
        docs.run_page(page)


def test_a_page_with_snippets_and_a_project_runs_both(docs: Docs, tmp_path: Path) -> None:
    page = write_page(
        tmp_path,
        """\
        # A page

        ```python
        greeting = "hello"
        ```

        ```python title="test_project.py"
        def test_runs_in_the_project():
            pass
        ```
        """,
    )
    docs.run_page(page)


@pytest.mark.parametrize("page", PAGES)
def test_a_page_imports_only_public_names(page: str) -> None:
    """The docs teach the public API: no block imports a private module of the package."""
    private = re.compile(r"\b(?:from|import)\s+pytest_harness(?:\.\w+)*\._\w+")
    text = (ROOT / page).read_text(encoding="utf-8")
    found = [
        f"{page}:{block.line}: {match.group(0)}"
        for block in read_blocks(text, page)
        for match in private.finditer(block.code)
    ]
    assert found == []
