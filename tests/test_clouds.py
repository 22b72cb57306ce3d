"""Azure OpenAI and Vertex AI, as companies reach them, and the credential exchanges their
SDKs make (issue 47).

Real clients (``openai.AzureOpenAI``, google-genai with ``vertexai=True``, google-auth) against
a loopback server speaking Azure's and Vertex's routes and an OAuth token endpoint: recorded
with ``--harness-live``, every written file searched for each credential, then replayed with
the server stopped and no credential in the environment. Then ``credentials`` on its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import credentials
from pytest_harness.testing import LoopbackServer, Reply, ToolCallSpec

# Every credential form the recording uses; none may reach a written file.
AZURE_KEY = "azure-key-0123456789abcdef0123456789ab"
APIM_KEY = "apim-subscription-0123456789abcdef"
# JWT-shaped (header.payload.signature), as Entra ID issues them.
ENTRA_JWT = (
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzLmF6dX"
    "JlLmNvbSIsInRpZCI6InRlbmFudCJ9.c2lnbmF0dXJlLW9mLXRoZS1lbnRyYS1pZC10b2tlbi0wMTIz"
)
AZURE_CLIENT_SECRET = "azure-client-secret~0123456789abcdef"
VERTEX_TOKEN = "ya29.a0AfB_byC-vertex-access-token-0123456789abcdef"
REFRESH_TOKEN = "1//0gRefreshToken-0123456789abcdefABCDEF"
CLIENT_SECRET = "GOCSPX-client-secret-0123456789ab"
LOOPBACK_TOKEN = "ya29.loopback-access-token-not-a-secret-0123456789"
SECRETS = [AZURE_KEY, APIM_KEY, ENTRA_JWT, AZURE_CLIENT_SECRET, VERTEX_TOKEN, REFRESH_TOKEN]
SECRETS += [CLIENT_SECRET, LOOPBACK_TOKEN, ENTRA_JWT.split(".")[2]]
CREDENTIAL_VARIABLES = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)


def weather(body: dict[str, Any]) -> Reply:
    """Ask for ``get_weather`` when tools are offered, answer once its result came back."""
    text = json.dumps(body)
    if "18C and sunny" in text:
        return Reply(content="It is 18C and sunny in Paris.")
    if body.get("tools"):
        return Reply(tool_calls=[ToolCallSpec(name="get_weather", arguments={"city": "Paris"})])
    return Reply(content="Paris")


@pytest.fixture
def model_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(weather) as server:
        yield server


CONFTEST = """
ROOT = {root!r}
API_VERSION = "2024-10-21"
VERTEX_TOKEN = {vertex!r}
REFRESH_TOKEN = {refresh!r}
CLIENT_SECRET = {secret!r}
APIM_KEY = {apim!r}
"""

AZURE = """
import os
import openai, pytest, requests
from conftest import API_VERSION, APIM_KEY, ROOT

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def azure(**options):  # the key, or the Entra ID token, from the environment
    return openai.AzureOpenAI(azure_endpoint=ROOT, api_version=API_VERSION, **options)


def weather_round(client):
    first = client.chat.completions.create(model="gpt-4o-mini", messages=ASK, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = {"role": "tool", "tool_call_id": call.id, "content": "18C and sunny"}
    messages = [*ASK, first.choices[0].message.model_dump(exclude_none=True), result]
    return client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)


def entra_token():  # what azure-identity's client-secret credential asks Entra ID
    form = {"grant_type": "client_credentials", "client_id": "app",
            "client_secret": os.environ.get("AZURE_CLIENT_SECRET", ""),
            "scope": "https://cognitiveservices.azure.com/.default"}
    reply = requests.post(f"{ROOT}/tenant/oauth2/v2.0/token", data=form, timeout=5)
    return reply.json()["access_token"]


@pytest.mark.harness
def test_key_chat_and_tools(harness):
    reply = weather_round(azure(default_headers={"Ocp-Apim-Subscription-Key": APIM_KEY}))
    assert reply.choices[0].message.content == "It is 18C and sunny in Paris."
    called = harness.trajectory.assert_called("get_weather", {"city": "Paris"})
    assert called.result == "18C and sunny"


@pytest.mark.harness
def test_key_stream():
    stream = azure().chat.completions.create(
        model="gpt-4o-mini", messages=ASK, stream=True, stream_options={"include_usage": True})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Paris"


@pytest.mark.harness
def test_key_responses():
    assert azure().responses.create(model="gpt-4o-mini", input="Capital?").output_text == "Paris"


@pytest.mark.harness
def test_entra_id_token():  # AZURE_OPENAI_AD_TOKEN while recording
    reply = azure().chat.completions.create(model="gpt-4o-mini", messages=ASK)
    assert reply.choices[0].message.content == "Paris"


@pytest.mark.harness
def test_entra_token_provider():
    client = azure(azure_ad_token_provider=entra_token)
    assert client.chat.completions.create(
        model="gpt-4o-mini", messages=ASK).choices[0].message.content == "Paris"
"""

VERTEX = """
import pytest
import google.oauth2.credentials
from google import genai
from google.genai import types
from conftest import CLIENT_SECRET, REFRESH_TOKEN, ROOT, VERTEX_TOKEN


def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "18C and sunny"


def vertex(**options):
    return genai.Client(vertexai=True, project="acme-prod", location="us-central1",
                        http_options={"base_url": ROOT}, **options)


@pytest.mark.harness
def test_access_token_and_tools(harness):
    client = vertex(credentials=google.oauth2.credentials.Credentials(token=VERTEX_TOKEN))
    config = types.GenerateContentConfig(tools=[get_weather])
    reply = client.models.generate_content(
        model="gemini-2.0-flash", contents="Weather in Paris?", config=config)
    assert reply.text == "It is 18C and sunny in Paris."
    called = harness.trajectory.assert_called("get_weather", {"city": "Paris"})
    assert "18C and sunny" in str(called.result)


@pytest.mark.harness
def test_refreshed_user_credentials():  # a refresh token exchanged at the token route
    credentials = google.oauth2.credentials.Credentials(
        None, refresh_token=REFRESH_TOKEN, client_id="app.apps.googleusercontent.com",
        client_secret=CLIENT_SECRET, token_uri=ROOT + "/token")
    client = vertex(credentials=credentials)  # kept: its HTTP client closes with it
    chunks = client.models.generate_content_stream(model="gemini-2.0-flash", contents="Capital?")
    assert "".join(chunk.text or "" for chunk in chunks) == "Paris"


@pytest.mark.harness
def test_application_default_credentials():  # GOOGLE_APPLICATION_CREDENTIALS while recording
    client = vertex()
    reply = client.models.generate_content(model="gemini-2.0-flash", contents="Capital?")
    assert reply.text == "Paris"
"""


def _service_account(folder: Path, token_uri: str) -> tuple[Path, str]:
    """A service account key file (a new RSA key) whose tokens come from ``token_uri``; its
    path and a line of its private key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": "agent@acme-prod.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    path = folder / "service-account.json"
    path.write_text(json.dumps(info))
    return path, pem.splitlines()[5]


def _written(folder: Path) -> dict[str, str]:
    """Every file the runs wrote: cassettes, the JSON and HTML reports, the JUnit XML."""
    names = ("cassettes/**/*", "*.json", "report.html", "junit*.xml")
    found = {p for name in names for p in folder.glob(name) if p.is_file()}
    return {str(path.relative_to(folder)): path.read_text() for path in sorted(found)}


def _usage(junit: Path) -> dict[str, dict[str, Any]]:
    import xml.etree.ElementTree as ET

    return {
        str(case.get("name")): json.loads(prop.get("value") or "{}")
        for case in ET.parse(junit).iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") == "harness_usage"
    }


def test_azure_and_vertex_record_no_credential_and_replay_with_none(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(
        CONFTEST.format(
            root=model_server.root,
            vertex=VERTEX_TOKEN,
            refresh=REFRESH_TOKEN,
            secret=CLIENT_SECRET,
            apim=APIM_KEY,
        )
    )
    pytester.makepyfile(test_azure=AZURE, test_vertex=VERTEX)
    adc, key_line = _service_account(pytester.path, model_server.root + "/token")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(pytester.path / "gcloud"))  # no gcloud ADC
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    monkeypatch.setenv("AZURE_CLIENT_SECRET", AZURE_CLIENT_SECRET)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    run = pytester.runpytest_subprocess
    flags = ("-p", "no:cacheprovider", "-p", "no:randomly")
    live = (*flags, "--harness-live", "--junitxml=junit-live.xml", "--harness-report=live.json")
    run(*live, "-k", "not entra_id_token").assert_outcomes(passed=7)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")  # Entra ID alone
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", ENTRA_JWT)
    live = (*flags, "--harness-live", "--harness-report=report.html")
    run(*live, "-k", "entra_id_token").assert_outcomes(passed=1)
    # Each token exchange went to the server live: the refresh token, the service account's
    # signed assertion, Entra ID's client secret.
    grants = sorted(set(model_server.grants))
    assert grants == [
        "client_credentials",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
    model_server.stop()

    for name in (*CREDENTIAL_VARIABLES, "AZURE_OPENAI_AD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    adc.unlink()
    replayed = run(*flags, "--junitxml=junit.xml", "--harness-report=report.json")
    replayed.assert_outcomes(passed=8)
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ
    # The stand-in tokens were the harness's answers: nothing ran live, nothing was unused.
    rows = json.loads((pytester.path / "report.json").read_text())["replay"]
    assert len(rows) == 8
    assert [
        (row["test"], row["live"], row["unused"]) for row in rows if row["live"] or row["unused"]
    ] == []

    written = _written(pytester.path)
    assert {"live.json", "report.json", "report.html", "junit.xml", "junit-live.xml"} <= set(
        written
    )
    assert len([name for name in written if name.startswith("cassettes")]) == 8
    for name, text in written.items():
        for secret in [*SECRETS, key_line]:
            assert secret not in text, f"{name} holds a credential"
        assert "grant_type" not in text, f"{name} holds a token exchange"
        assert "/token" not in text, f"{name} holds a token exchange"
    cassettes = "".join(t for n, t in written.items() if n.startswith("cassettes"))
    assert "api-version=2024-10-21" in cassettes  # stored, and matched on
    assert "/openai/deployments/gpt-4o-mini/chat/completions" in cassettes
    assert "/projects/acme-prod/locations/us-central1/publishers/google/models/" in cassettes

    usage = _usage(pytester.path / "junit.xml")
    assert len(usage) == 8
    for test, used in usage.items():
        assert used["tokens"] > 0, test
        assert (used["cost"] or 0) > 0, test
    assert usage["test_key_chat_and_tools"]["calls"] == 2
    assert usage["test_access_token_and_tools"]["calls"] == 2
    # A token exchange is no model call.
    assert usage["test_entra_token_provider"]["calls"] == 1
    assert usage["test_refreshed_user_credentials"]["calls"] == 1
    assert usage["test_application_default_credentials"]["calls"] == 1


AZURE_VERSION = """
import openai, pytest
from conftest import ROOT

@pytest.mark.harness
def test_chat():
    client = openai.AzureOpenAI(azure_endpoint=ROOT, api_version=VERSION)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Capital?"}])
    assert reply.choices[0].message.content == "Paris"
"""


def test_another_api_version_is_a_miss_that_says_so(
    pytester: pytest.Pytester, model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(f"ROOT = {model_server.root!r}\n")
    pytester.makepyfile(test_version='VERSION = "2024-10-21"\n' + AZURE_VERSION)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    flags = ("-p", "no:cacheprovider", "-p", "no:randomly")
    pytester.runpytest(*flags, "--harness-live").assert_outcomes(passed=1)
    model_server.stop()
    pytester.makepyfile(test_version='VERSION = "2025-04-01-preview"\n' + AZURE_VERSION)
    result = pytester.runpytest(*flags)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recording in*matches this request*", "*api-version*"])


REFUSED = """
import pytest, requests

@pytest.mark.harness
def test_assumes_a_role():
    form = {"Action": "AssumeRole", "RoleArn": "arn:aws:iam::1:role/agent"}
    requests.post("https://sts.us-east-1.amazonaws.com/", data=form, timeout=5)
"""


def test_an_exchange_replay_cannot_answer_names_the_fix(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_role=REFUSED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteMiss*asks AWS STS for a credential*unset AWS_PROFILE*"])
    assert not (pytester.path / "cassettes").exists() or not any(
        (pytester.path / "cassettes").rglob("*.yaml")
    )


@pytest.mark.parametrize(
    ("case", "provider", "model"),
    [
        ("azure_content_filter_results", "azure", "gpt-4o-mini-2024-07-18"),
        ("azure_stream_prompt_filter_chunk", "azure", "gpt-4o-mini-2024-07-18"),
        ("gemini_model_armor_block", "vertex_ai", "gemini-2.5-flash"),
    ],
)
def test_real_cloud_replies_are_priced_by_their_provider(
    case: str, provider: str, model: str
) -> None:
    """Real Azure and Vertex bodies (``tests/corpus``): litellm prices the model they name
    with the provider their URL names."""
    from pytest_harness import _wire
    from pytest_harness._pytest_glue.watch import priced

    corpus = Path(__file__).parent / "corpus"
    records = [
        r for f in ("chat.json", "gemini.json") for r in json.loads((corpus / f).read_text())
    ]
    (record,) = [r for r in records if r["case"] == case]
    request = json.dumps(record["request"]).encode()
    headers = {"content-type": [record["content_type"]]}
    body = record["response"].encode()
    found = _wire.recognise(record["uri"], request, record["status"], headers, body)
    assert found is not None
    assert (found.provider, found.model) == (provider, model)
    if found.response.usage.total_tokens:  # the Azure stream asked for no usage
        assert (priced(found).cost or 0) > 0


def test_replay_stands_in_for_google_credentials_only_where_there_are_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_harness._pytest_glue.item import _replay_keys

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    stand_in = Path(_replay_keys()["GOOGLE_APPLICATION_CREDENTIALS"])
    info = json.loads(stand_in.read_text())
    assert info["type"] == "authorized_user"
    assert all("not-a-secret" in info[key] for key in ("client_secret", "refresh_token"))
    (tmp_path / "application_default_credentials.json").write_text("{}")  # gcloud's
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in _replay_keys()
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/the/users/own.json")
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in _replay_keys()


OLD_RECORDING = """
import openai, pytest, requests
from conftest import ROOT

@pytest.mark.harness
def test_refresh_then_chat():
    form = {"grant_type": "refresh_token", "refresh_token": "r"}
    token = requests.post(ROOT + "/token", data=form, timeout=5).json()["access_token"]
    client = openai.OpenAI(base_url=ROOT + "/v1", api_key=token)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Capital?"}])
    assert reply.choices[0].message.content == "Paris"
"""


def test_an_exchange_an_older_version_recorded_is_neither_played_nor_unused(
    pytester: pytest.Pytester, model_server: LoopbackServer
) -> None:
    pytester.makeini("[pytest]\nharness_strict_replay = true\n")
    pytester.makeconftest(f"ROOT = {model_server.root!r}\n")
    pytester.makepyfile(test_old=OLD_RECORDING)
    flags = ("-p", "no:cacheprovider", "-p", "no:randomly")
    pytester.runpytest(*flags, "--harness-live").assert_outcomes(passed=1)
    (path,) = (pytester.path / "cassettes").rglob("*.yaml")
    data = json.loads(path.read_text())
    (chat,) = data["interactions"]
    assert "/token" not in json.dumps(chat)
    exchange = json.loads(json.dumps(chat))  # as an older version kept it, before the chat
    exchange["request"].update(uri=model_server.root + "/token", body="grant_type=x")
    data["interactions"] = [exchange, chat]
    path.write_text(json.dumps(data))
    model_server.stop()
    pytester.runpytest(*flags).assert_outcomes(passed=1)  # strict: none left unused


# --- credentials on its own ---


@pytest.mark.parametrize(
    ("method", "uri", "body", "what", "token"),
    [
        (
            "POST",
            "https://oauth2.googleapis.com/token",
            b"grant_type=refresh_token&client_id=c&client_secret=s&refresh_token=r",
            "Google OAuth",
            True,
        ),
        (
            "POST",
            "https://login.microsoftonline.com/t/oauth2/v2.0/token",
            b"grant_type=client_credentials&client_id=c&client_secret=s&scope=x",
            "Microsoft Entra ID",
            True,
        ),
        # Any OAuth token endpoint, by its body: a gateway's, a loopback server's.
        ("POST", "http://127.0.0.1:8/token", b"grant_type=x", "an OAuth token endpoint", True),
        (
            "POST",
            "https://idp.acme.example/t",
            b'{"grant_type": "x"}',
            "an OAuth token endpoint",
            True,
        ),
        # AWS SSO OIDC's CreateToken spells it in camelCase.
        (
            "POST",
            "https://oidc.eu-west-1.amazonaws.com/token",
            b'{"clientId": "c", "grantType": "refresh_token"}',
            "AWS SSO OIDC",
            True,
        ),
        ("POST", "https://sts.amazonaws.com/", b"Action=AssumeRole", "AWS STS", False),
        (
            "GET",
            "https://portal.sso.us-east-1.amazonaws.com/federation/credentials",
            None,
            "AWS IAM Identity Center",
            False,
        ),
        (
            "PUT",
            "http://169.254.169.254/latest/api/token",
            b"",
            "a cloud instance metadata service",
            False,
        ),
        (
            "GET",
            "http://169.254.169.254/metadata/identity/oauth2/token?resource=x",
            None,
            "a cloud instance metadata service",
            False,
        ),
        (
            "GET",
            "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
            None,
            "the GCE metadata server",
            False,
        ),
        (
            "GET",
            "http://169.254.170.2/v2/credentials/x",
            None,
            "the ECS credentials endpoint",
            False,
        ),
        (
            "GET",
            "http://127.0.0.1:41741/MSI/token/",
            None,
            "an Azure managed identity endpoint",
            False,
        ),
    ],
)
def test_credential_exchanges_are_recognised(
    method: str, uri: str, body: bytes | None, what: str, token: bool
) -> None:
    found = credentials.exchange(method, uri, body)
    assert found is not None
    assert (found.what, found.token) == (what, token)


@pytest.mark.parametrize(
    ("method", "uri", "body"),
    [
        # A model call that mentions a grant deeper in its body, or in its text.
        (
            "POST",
            "https://acme.openai.azure.com/openai/deployments/d/chat/completions?api-version=1",
            b'{"messages": [{"role": "user", "content": "what is grant_type?"}]}',
        ),
        ("POST", "https://api.openai.com/v1/responses", b'{"input": {"grant_type": "x"}}'),
        ("GET", "https://oauth2.example.com/token", None),  # neither a known host nor a grant
        ("POST", "https://api.amazonaws.com/", b"{}"),
        ("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse", b"{}"),
        ("POST", "tool:lookup", b'{"grant_type": "x"}'),  # a recorded tool's call
    ],
)
def test_other_requests_are_not_exchanges(method: str, uri: str, body: bytes | None) -> None:
    assert credentials.exchange(method, uri, body) is None


@given(
    st.sampled_from(["GET", "POST", "PUT", "", None]),
    st.one_of(st.text(), st.sampled_from(["https://oauth2.googleapis.com/token", "http://[::1"])),
    st.one_of(st.none(), st.binary(), st.text(), st.just(b"grant_type=&x"), st.just(b"{grantType")),
)
def test_recognising_never_raises(method: Any, uri: Any, body: Any) -> None:
    found = credentials.exchange(method, uri, body)
    assert found is None or isinstance(found, credentials.Exchange)


@pytest.mark.parametrize(("camel", "key"), [(False, "access_token"), (True, "accessToken")])
def test_the_stand_in_token_is_a_token_reply(camel: bool, key: str) -> None:
    found = credentials.Exchange(what="Google OAuth", token=True, camel=camel)
    response = credentials.stand_in(found)
    body = json.loads(response["body"]["string"])
    assert body[key] == credentials.STAND_IN_TOKEN
    assert response["status"]["code"] == 200
    assert response["headers"]["Content-Length"] == [str(len(response["body"]["string"]))]
