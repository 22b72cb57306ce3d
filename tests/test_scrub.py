"""Secrets never reach disk: redaction of requests and responses, and the pre-write scan."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import jsonserializer

from pytest_harness._cassettes.scrub import (
    REDACTED,
    Finding,
    Redaction,
    check_before_write,
    redact_request,
    redact_response,
    scan,
    secret_values_from_env,
)
from pytest_harness.errors import CassetteError

URL = "https://api.example.com/v1/chat/completions"
BODY = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
DEFAULT = Redaction()

keys = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=20, max_size=80)
sk_keys = keys.map(lambda k: f"sk-{k}")


def _request(uri: str = URL, body: bytes | None = BODY, **headers: str) -> Any:
    return Request("POST", uri, body, {"Content-Type": "application/json", **headers})


def _response(**headers: list[str]) -> dict[str, Any]:
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["application/json"], **headers},
        "body": {"string": b'{"id":"chatcmpl-1"}'},
    }


def _cassette(request: Any, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """The cassette as vcrpy serializes it (JSON serializer), read back as plain data."""
    recorded = {"requests": [request], "responses": [response or _response()]}
    text = serialize(recorded, jsonserializer)
    data: dict[str, Any] = json.loads(text)
    return data


# -- redact_request: headers -----------------------------------------------------------------


# Named here, not read from the implementation: dropping one from the defaults must fail.
DEFAULT_HEADERS = [
    "anthropic-organization-id",
    "api-key",
    "authorization",
    "cookie",
    "ocp-apim-subscription-key",
    "openai-organization",
    "openai-project",
    "proxy-authorization",
    "x-amz-security-token",
    "x-api-key",
    "x-goog-api-key",
]


def test_the_default_request_headers_are_the_documented_ones() -> None:
    assert sorted(DEFAULT.request_headers) == DEFAULT_HEADERS


@pytest.mark.parametrize("name", DEFAULT_HEADERS)
@pytest.mark.parametrize("case", [str.lower, str.upper, str.title])
def test_every_default_request_header_is_replaced_not_removed(name: str, case: Any) -> None:
    request = Request("POST", URL, BODY, {case(name): "sk-secret-value-0123456789abcdef"})
    assert redact_request(request, DEFAULT) is request
    assert request.headers[name] == REDACTED
    assert list(request.headers) == [case(name)]


def test_other_headers_are_left_alone() -> None:
    request = _request(Authorization="Bearer sk-abc", **{"X-Trace": "t-1", "User-Agent": "ua/1"})
    redact_request(request, DEFAULT)
    assert dict(request.headers) == {
        "Content-Type": "application/json",
        "Authorization": REDACTED,
        "X-Trace": "t-1",
        "User-Agent": "ua/1",
    }


def test_with_extra_adds_to_the_defaults_lower_cased() -> None:
    redaction = Redaction.with_extra(
        headers=["X-Custom-Secret"], query=["Sess"], body_fields=["a.b"], response_headers=["X-Id"]
    )
    assert redaction.request_headers == DEFAULT.request_headers | {"x-custom-secret"}
    assert redaction.query_params == DEFAULT.query_params | {"sess"}
    assert redaction.response_headers == DEFAULT.response_headers | {"x-id"}
    assert redaction.body_fields == ("a.b",)
    request = _request(**{"x-CUSTOM-secret": "s3cr3t"})
    assert redact_request(request, redaction).headers["X-Custom-Secret"] == REDACTED


# -- redact_request: URL query ---------------------------------------------------------------


DEFAULT_QUERY = [
    "access_token",
    "api-key",
    "api_key",
    "apikey",
    "key",
    "sig",
    "signature",
    "token",
]


def test_the_default_query_parameters_are_the_documented_ones() -> None:
    assert sorted(DEFAULT.query_params) == DEFAULT_QUERY


@pytest.mark.parametrize("param", DEFAULT_QUERY)
def test_every_default_query_param_value_is_replaced(param: str) -> None:
    request = _request(f"{URL}?a=1&{param}=s3cr3t-v4lue&z=%2F#frag")
    redact_request(request, DEFAULT)
    assert request.uri == f"{URL}?a=1&{param}={REDACTED}&z=%2F#frag"
    assert request.query == sorted([("a", "1"), (param, REDACTED), ("z", "/")])


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (f"{URL}?KEY=abc&x=1", f"{URL}?KEY={REDACTED}&x=1"),
        (f"{URL}?Api_Key=abc", f"{URL}?Api_Key={REDACTED}"),
        (f"{URL}?api%5Fkey=abc", f"{URL}?api%5Fkey={REDACTED}"),
        (f"{URL}?key=", f"{URL}?key={REDACTED}"),
        (f"{URL}?key&keyring=abc&monkey=1", f"{URL}?key&keyring=abc&monkey=1"),
        (f"{URL}?b=2&a=1&b=3", f"{URL}?b=2&a=1&b=3"),
        (URL, URL),
        (
            "https://h/v1/models/g:generateContent?alt=sse&key=AIzaX",
            f"https://h/v1/models/g:generateContent?alt=sse&key={REDACTED}",
        ),
    ],
)
def test_query_redaction_keeps_the_rest_of_the_url_byte_identical(uri: str, expected: str) -> None:
    assert redact_request(_request(uri), DEFAULT).uri == expected


# -- redact_request: JSON body ---------------------------------------------------------------


def test_listed_body_fields_are_replaced_nested_and_compact_formatting_kept() -> None:
    body = b'{"model":"m","metadata":{"user_key":"k1","n":1},"extra_body":{"api_key":"k2"}}'
    redaction = Redaction(body_fields=("metadata.user_key", "extra_body.api_key", "absent.x"))
    request = redact_request(_request(body=body), redaction)
    assert request.body == body.replace(b'"k1"', b'"REDACTED"').replace(b'"k2"', b'"REDACTED"')


def test_body_field_spaced_formatting_and_non_ascii_kept() -> None:
    body = '{"t": "h\u00e9", "auth": {"token": "k"}}'.encode()
    request = redact_request(_request(body=body), Redaction(body_fields=("auth.token",)))
    assert request.body == '{"t": "h\u00e9", "auth": {"token": "REDACTED"}}'.encode()


def test_body_field_path_through_list_indexes() -> None:
    body = b'{"tools":[{"key":"k"},{"key":"j"}],"keys":["a","b"]}'
    redaction = Redaction(body_fields=("tools.1.key", "keys.0", "keys.5"))
    request = redact_request(_request(body=body), redaction)
    assert request.body == b'{"tools":[{"key":"k"},{"key":"REDACTED"}],"keys":["REDACTED","b"]}'


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"key=s3cr3t&x=1",
        b"\xff\xfe not utf-8",
        b'{"model": "m",   "messages":[]}',
        b'{"api_key": {"not": "under metadata"}}',
        b"[1, 2, 3]",
    ],
)
def test_body_without_the_listed_field_is_left_byte_identical(body: bytes | None) -> None:
    redaction = Redaction(body_fields=("metadata.api_key", "api_key.0"))
    assert redact_request(_request(body=body), redaction).body == body


def test_redact_request_is_idempotent() -> None:
    redaction = Redaction.with_extra(body_fields=["metadata.key"])
    uri = f"{URL}?key=abc&x=1"
    once = redact_request(
        _request(uri, b'{"metadata": {"key": "k"}}', Authorization="Bearer sk-x"), redaction
    )
    snapshot = (once.uri, once.body, dict(once.headers))
    twice = redact_request(once, redaction)
    assert (twice.uri, twice.body, dict(twice.headers)) == snapshot


# -- redact_response -------------------------------------------------------------------------


def test_response_headers_every_value_replaced_case_insensitively() -> None:
    response = _response(
        **{
            "Set-Cookie": ["a=1; Path=/", "b=2; HttpOnly"],
            "OpenAI-Organization": ["org-123"],
            "openai-project": ["proj_1"],
            "Anthropic-Organization-Id": ["uuid"],
            "x-request-id": ["req_1"],
        }
    )
    assert redact_response(response, DEFAULT) is response
    assert response["headers"] == {
        "Content-Type": ["application/json"],
        "Set-Cookie": [REDACTED, REDACTED],
        "OpenAI-Organization": [REDACTED],
        "openai-project": [REDACTED],
        "Anthropic-Organization-Id": [REDACTED],
        "x-request-id": ["req_1"],
    }
    assert response["body"] == {"string": b'{"id":"chatcmpl-1"}'}
    assert redact_response(response, DEFAULT)["headers"]["Set-Cookie"] == [REDACTED, REDACTED]


# -- secret_values_from_env ------------------------------------------------------------------


def test_secret_values_from_env_picks_secret_looking_names() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-proj-abcdefghijklmnop",
        "github_token": "ghp_0123456789ab",
        "DB_PASSWORD": "correct horse battery",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "MY_CREDENTIALS": "c" * 12,
        "HF_AUTH": "hf_abcdefghijkl",
        "SHORT_KEY": "elevenchars",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": "/home/someone/long/enough",
        "GOOGLE_APPLICATION_CREDENTIALS_FILE": "creds.json.long.name",
        "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",
        "TOKEN_URL": "https://auth.example.com/token",
        "API_KEY_PATH": "relative/key/path.pem",
        "AUTH_HOST": "auth.example.internal",
        "GIT_AUTHOR_NAME": "Jane Q. Developer",
        "MAX_TOKENS_LIMIT": "1234567890123",
        "KEY_ENABLED_FLAG": "123456789.125",
        "SOME_KEY_DUPLICATE": "sk-proj-abcdefghijklmnop",
    }
    assert secret_values_from_env(environ) == (
        "sk-proj-abcdefghijklmnop",
        "correct horse battery",
        "wJalrXUtnFEMI/K7MDENG",
        "ghp_0123456789ab",
        "hf_abcdefghijkl",
        "c" * 12,
    )


# -- scan ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "excerpt"),
    [
        ("sk-ant-api03-" + "a1" * 20, "sk- key", "sk-a…(53 chars)"),
        ("token: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "Bearer token", "eyJh…(28 chars)"),
        ("AIza" + "Sy0123456789abcdefghijklmnopqrst", "Google API key", "AIza…(36 chars)"),
        # Vertex AI's OAuth access token, where no header would redact it.
        ('"token": "ya29.a0AfB_byC1' + "x" * 30 + '"', "Google OAuth token", "ya29…(45 chars)"),
        # AWS: an access key id, an STS session token, an Azure Entra ID JWT.
        ("id=ASIAQ3EGTXYZ7EXAMPLE;", "AWS access key id", "ASIA…(20 chars)"),
        ("IQoJb3JpZ2luX2VjEJr" + "A" * 40, "AWS session token", "IQoJ…(59 chars)"),
        ("eyJ0eXAiOiJKV1Qi.eyJhdWQiOiJodHRw.c2lnbmF0dXJl", "JSON Web Token", "eyJ0…(46 chars)"),
    ],
)
def test_scan_patterns(text: str, kind: str, excerpt: str) -> None:
    data = {"interactions": [{"response": {"body": {"string": f"x {text} y"}}}]}
    assert scan(data, []) == [
        Finding(where="interactions[0].response.body", kind=kind, excerpt=excerpt)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Bearer REDACTED",
        REDACTED,
        "sk-short",
        "Bearer short-token",
        "https://api.example.com/v1/models/claude-3-5-sonnet-20241022",
    ],
)
def test_scan_ignores_redacted_and_short_values(text: str) -> None:
    data = {"interactions": [{"request": {"uri": text, "headers": {"a": [text]}}}]}
    assert scan(data, [REDACTED, ""]) == []


def test_scan_long_url_tokens_in_path_and_query_values() -> None:
    token = "abc123" * 6
    uri = f"https://gw.example.com/key/{token}/v1/chat?session={token}&plain={'a' * 40}"
    data = {"interactions": [{"request": {"uri": uri, "body": f"/{token}/"}}]}
    findings = scan(data, [])
    assert [(f.where, f.kind) for f in findings] == [
        ("interactions[0].request.uri", "long token in URL"),
        ("interactions[0].request.uri", "long token in URL"),
    ]


def test_scan_known_secret_wherever_it_sits_reported_once_per_place() -> None:
    secret = "sk-" + "Z9" * 15
    data = {
        "interactions": [
            {"request": {"headers": {"x-a": ["v", f"pre{secret}"]}}},
            {"response": {"headers": {"x-b": [secret]}}, "meta": [{"deep": (secret,)}]},
        ],
        "metadata": secret.encode(),
    }
    findings = scan(data, [secret])
    assert [(f.where, f.kind) for f in findings] == [
        ("interactions[0].request.headers.x-a[1]", "secret value"),
        ("interactions[1].response.headers.x-b", "secret value"),
        ("interactions[1].meta[0].deep", "secret value"),
        ("metadata", "secret value"),
    ]
    assert all(f.excerpt == "sk-Z…(33 chars)" for f in findings)


# -- the round trip: redact, serialize with vcrpy, scan --------------------------------------


@given(key=sk_keys)
def test_redacted_key_never_survives_into_the_cassette(key: str) -> None:
    request = _request(f"{URL}?key={key}&x=1", Authorization=f"Bearer {key}")
    response = _response(**{"Set-Cookie": [f"session={key}"]})
    redact_request(request, DEFAULT)
    redact_response(response, DEFAULT)
    data = _cassette(request, response)
    assert key not in json.dumps(data)
    assert scan(data, [key]) == []
    check_before_write(data, [key], "cassettes/t.json")


@given(key=st.one_of(sk_keys, keys.map(lambda k: f"AIza{k}0123456789")))
@pytest.mark.parametrize(
    ("place", "where"),
    [
        ("header", "interactions[0].request.headers.x-custom-secret"),
        ("body", "interactions[0].request.body"),
        ("path", "interactions[0].request.uri"),
    ],
)
def test_key_in_an_unredacted_place_is_found(place: str, where: str, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    uri, body = f"{URL}?key={key}", BODY
    if place == "header":
        headers["x-custom-secret"] = key
    elif place == "body":
        body = json.dumps({"model": "m", "secret_field": key}).encode()
    else:
        uri = f"https://gw.example.com/key/{key}/v1/chat?key={key}"
    request = redact_request(_request(uri, body, **headers), DEFAULT)
    findings = scan(_cassette(request), [key])
    assert [(f.where, f.kind) for f in findings] == [(where, "secret value")]
    assert key not in findings[0].excerpt


def test_long_url_token_in_path_found_without_knowing_the_secret() -> None:
    token = "9f8e7d6c5b4a" * 3
    request = redact_request(_request(f"https://gw.example.com/key/{token}/v1/chat"), DEFAULT)
    findings = scan(_cassette(request), [])
    where, kind = "interactions[0].request.uri", "long token in URL"
    assert findings == [Finding(where=where, kind=kind, excerpt="9f8e…(36 chars)")]


# -- check_before_write ----------------------------------------------------------------------


def test_check_before_write_names_everything_but_the_secret() -> None:
    secret = "my-very-private-value-42"
    request = _request(f"{URL}?session={secret}", **{"x-custom": secret, "Authorization": secret})
    data = _cassette(redact_request(request, DEFAULT))
    with pytest.raises(CassetteError) as excinfo:
        check_before_write(data, [secret], "cassettes/test_it.json")
    message = str(excinfo.value)
    assert secret not in message
    for expected in [
        "cassettes/test_it.json",
        "nothing was written",
        "interactions[0].request.uri: secret value, my-v…(24 chars)",
        "interactions[0].request.headers.x-custom: secret value, my-v…(24 chars)",
        "harness_redact_headers",
        "harness_redact_query",
        "harness_redact_body_fields",
        "remove the secret from the request",
    ]:
        assert expected in message
    assert "Authorization" not in message


def test_check_before_write_passes_a_clean_cassette() -> None:
    check_before_write(_cassette(_request()), ["not-in-there-at-all"], "c.json")


def test_scrub_imports_neither_vcr_nor_litellm() -> None:
    code = (
        "import sys, pytest_harness._cassettes.scrub\n"
        "print(sorted({'vcr', 'litellm'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
