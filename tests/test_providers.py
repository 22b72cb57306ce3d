"""What every provider's traffic shares: who served it (by its URL), and how its credentials
and per-call signing headers are kept off the disk (issue 47)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_harness._cassettes import steady
from pytest_harness._wire.providers import provider


@pytest.mark.parametrize(
    ("uri", "api", "expected"),
    [
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
            "anthropic.claude-3-haiku-20240307-v1%3A0/converse",
            "bedrock.converse",
            "bedrock",
        ),
        # InvokeModel carries Anthropic's format; the cloud serves it, and prices it.
        ("http://127.0.0.1:0/model/m/invoke-with-response-stream", "anthropic.messages", "bedrock"),
        (
            "https://acme.openai.azure.com/openai/deployments/gpt4o/chat/completions"
            "?api-version=2024-10-21",
            "openai.chat",
            "azure",
        ),
        ("http://127.0.0.1:0/openai/deployments/gpt4o/chat/completions", "openai.chat", "azure"),
        (
            "https://acme.cognitiveservices.azure.com/openai/v1/responses",
            "openai.responses",
            "azure",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
            "us-central1/publishers/google/models/gemini-2.0-flash:generateContent",
            "gemini.generate",
            "vertex_ai",
        ),
        ("http://localhost:11434/api/chat", "ollama.chat", "ollama"),
        ("http://localhost:11434/v1/chat/completions", "openai.chat", "openai"),
        ("https://api.anthropic.com/v1/messages", "anthropic.messages", "anthropic"),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent",
            "gemini.generate",
            "gemini",
        ),
    ],
)
def test_the_provider_is_named_by_the_url(uri: str, api: str, expected: str) -> None:
    assert provider(uri, api) == expected


@given(st.text(), st.sampled_from(["openai.chat", "anthropic.messages", ""]))
def test_any_url_names_a_provider(uri: str, api: str) -> None:
    assert isinstance(provider(uri, api), str)


def test_botocore_bytes_headers_are_stored_as_text_without_the_signing_time() -> None:
    """botocore sends header values as bytes; a JSON file holds text. The signing time, the
    body's hash and the SDK's per-call id say when and who, not what: left out."""
    request = {
        "method": "POST",
        "uri": "http://127.0.0.1:8123/model/m/converse",
        "body": None,
        "headers": {
            "Content-Type": [b"application/json"],
            "X-Amz-Date": [b"20261129T003000Z"],
            "X-Amz-Content-SHA256": [b"e3b0c44298fc1c149afbf4c8996fb924"],
            "amz-sdk-invocation-id": [b"0b4a3f2c-1d2e-4f5a-8b9c-0d1e2f3a4b5c"],
            "amz-sdk-request": [b"attempt=1; max=3"],
            "User-Agent": b"Boto3/1.44 \xe9",
        },
    }
    kept = steady.kept({"request": request})
    assert kept["request"]["headers"] == {
        "Content-Type": ["application/json"],
        "User-Agent": "Boto3/1.44 é",
    }
    assert kept["request"]["uri"] == "http://127.0.0.1:0/model/m/converse"
