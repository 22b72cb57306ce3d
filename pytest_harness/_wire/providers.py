"""Which provider served a model request, by its URL: the clouds that host a wire format
(AWS Bedrock, Azure OpenAI, Vertex AI) and Ollama, else the format's own provider.

Named as litellm's price map names them (``bedrock``, ``azure``, ``vertex_ai``, ``ollama``):
a recording prices a reply by its model and this provider.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Bedrock's runtime operations, on its ``bedrock-runtime`` host or an endpoint that stands
# in for it (a proxy, a VPC endpoint, a loopback server): ``/model/{modelId}/{operation}``.
_BEDROCK_PATH = re.compile(
    r"/model/[^/]+/(?:converse|converse-stream|invoke|invoke-with-response-stream)$"
)
# Azure OpenAI's deployment routes (``/openai/deployments/{name}/…``) and its v1 API.
_AZURE_PATH = re.compile(r"^/openai/(?:deployments/[^/]+|v1)/")
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
# Vertex AI's publisher models: ``/v1/projects/{p}/locations/{l}/publishers/google/models/…``.
_VERTEX_PATH = re.compile(r"/projects/[^/]+/locations/[^/]+/publishers/")
# Ollama's own API (its OpenAI-compatible ``/v1/…`` routes are OpenAI's format, served free).
_OLLAMA_PATHS = ("/api/chat", "/api/generate")


def provider(uri: str, api: str) -> str:
    """The provider that served a request to ``uri`` in format ``api`` (``openai.chat``…):
    ``bedrock``, ``azure``, ``vertex_ai`` or ``ollama`` by the URL, else the format's own
    (``openai``, ``anthropic``, ``gemini``)."""
    parts = urlsplit(uri if isinstance(uri, str) else "")
    host, path = (parts.hostname or "").lower(), parts.path
    if "bedrock-runtime" in host or _BEDROCK_PATH.search(path):
        return "bedrock"
    if host.endswith(_AZURE_HOSTS) or _AZURE_PATH.match(path):
        return "azure"
    if host.endswith("aiplatform.googleapis.com") or _VERTEX_PATH.search(path):
        return "vertex_ai"
    if path.endswith(_OLLAMA_PATHS):
        return "ollama"
    return api.partition(".")[0]
