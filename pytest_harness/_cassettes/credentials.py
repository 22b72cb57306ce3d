"""Credential exchanges: the requests an SDK sends to get a credential, never recorded.

Enterprise SDKs fetch their credentials over HTTP, through the same patched libraries as
their model calls: google-auth refreshing an OAuth token for Vertex AI, Azure identity
asking Entra ID or the instance metadata service, botocore assuming a role through STS or
SSO. ``exchange`` tells such a request apart: an OAuth 2 token request (RFC 6749, section
3.2: a POST whose form or JSON body names a ``grant_type``), or a request to a known
credential host or path (``_HOSTS``, ``_PATHS``).

While recording, an exchange goes to its server and is stored nowhere. In replay an OAuth
token request is answered with a stand-in token (``stand_in``), so code that builds Google
or Azure credentials and refreshes them runs offline; any other exchange cannot be answered
(``refusal`` says why and what to change). Pure: no vcrpy, no network; it never raises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

# The access token replay hands out: plainly not a credential, and not shaped like one the
# pre-write scan looks for (it is never written anyway).
STAND_IN_TOKEN = "harness-replay-token-not-a-secret"

# Hosts that only serve credentials, each with where it comes from.
_HOSTS: dict[str, str] = {
    # google-auth: ``_DEFAULT_TOKEN_URI`` (user and service-account refresh) and the older
    # ``accounts.google.com/o/oauth2/token``.
    "oauth2.googleapis.com": "Google OAuth",
    "accounts.google.com": "Google OAuth",
    # google-auth: workload identity federation (``identity_pool``, ``aws``: STS token
    # exchange) and service-account impersonation (``impersonated_credentials``).
    "sts.googleapis.com": "Google STS",
    "iamcredentials.googleapis.com": "Google IAM credentials",
    # google-auth ``compute_engine._metadata``: the GCE metadata server by name.
    "metadata.google.internal": "the GCE metadata server",
    # Cloud instance metadata, one address for AWS IMDS (botocore ``InstanceMetadataFetcher``),
    # the GCE metadata server and Azure IMDS (azure-identity ``ManagedIdentityCredential``).
    "169.254.169.254": "a cloud instance metadata service",
    "fd00:ec2::254": "AWS IMDS (IPv6)",
    # botocore ``ContainerMetadataFetcher``: ECS task roles and EKS Pod Identity.
    "169.254.170.2": "the ECS credentials endpoint",
    "169.254.170.23": "the EKS Pod Identity agent",
    # azure-identity / MSAL: Entra ID's authority hosts (``AzureAuthorityHosts``).
    "login.microsoftonline.com": "Microsoft Entra ID",
    "login.microsoftonline.us": "Microsoft Entra ID (US Government)",
    "login.chinacloudapi.cn": "Microsoft Entra ID (China)",
    "login.partner.microsoftonline.cn": "Microsoft Entra ID (China)",
}
# Host suffixes: AWS STS (botocore's endpoints, global and regional: ``sts.amazonaws.com``,
# ``sts.us-east-1.amazonaws.com``), IAM Identity Center (``portal.sso.{region}``:
# GetRoleCredentials; ``oidc.{region}``: CreateToken).
_AWS_PREFIXES = {
    "sts.": "AWS STS",
    "portal.sso.": "AWS IAM Identity Center",
    "oidc.": "AWS SSO OIDC",
}
# Paths that serve credentials on a host that serves other things too: Azure App Service's
# and Azure Arc's managed identity endpoint (``IDENTITY_ENDPOINT``: ``…/msi/token``).
_PATHS = {"/msi/token": "an Azure managed identity endpoint"}

_GRANT = (b"grant_type", b"grantType")


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """A credential exchange.

    Attributes:
        what: who serves it (``Google OAuth``, ``AWS STS``, ``an OAuth token endpoint``).
        token: an OAuth 2 token request, which replay answers with a stand-in token.
        camel: the request spelled its fields in camelCase (``grantType``: AWS SSO OIDC),
            and so does the stand-in answer.
    """

    what: str
    token: bool
    camel: bool = False


def exchange(method: Any, uri: Any, body: Any) -> Exchange | None:
    """The credential exchange a request is, or None (a request of anything else)."""
    try:
        parts = urlsplit(uri if isinstance(uri, str) else "")
        host = (parts.hostname or "").lower()
    except ValueError:  # a malformed URL (a bad port, an unclosed IPv6 bracket)
        return None
    if parts.scheme not in ("http", "https"):
        return None  # a recorded tool's call, an MCP stdio message (``tool:``, ``stdio:``)
    what = _host(host) or _PATHS.get(parts.path.lower().rstrip("/"))
    grant = _grant(body) if str(method).upper() == "POST" else None
    if grant is not None:
        return Exchange(what=what or "an OAuth token endpoint", token=True, camel=grant)
    return None if what is None else Exchange(what=what, token=False)


def _host(host: str) -> str | None:
    if host in _HOSTS:
        return _HOSTS[host]
    if host.endswith(".amazonaws.com"):
        for prefix, what in _AWS_PREFIXES.items():
            if host.startswith(prefix):
                return what
    return None


def _grant(body: Any) -> bool | None:
    """Whether ``body`` names an OAuth grant: True spelled ``grantType``, False spelled
    ``grant_type``, None when it names none (a form or a JSON object's top level)."""
    if isinstance(body, str):
        body = body.encode("utf-8", "replace")
    if not isinstance(body, bytes) or not any(name in body for name in _GRANT):
        return None  # the common case, a model call, decided without parsing
    text = body.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        return True if "grantType" in data else False if "grant_type" in data else None
    return False if "grant_type" in parse_qs(text) else None


def stand_in(found: Exchange) -> dict[str, Any]:
    """The response replay gives an OAuth token request, as vcrpy plays a recorded one."""
    token = {"access_token": STAND_IN_TOKEN, "token_type": "Bearer", "expires_in": 3600}
    if found.camel:
        token = {"accessToken": STAND_IN_TOKEN, "tokenType": "Bearer", "expiresIn": 3600}
    body = json.dumps(token).encode()
    return {
        "status": {"code": 200, "message": "OK"},
        "headers": {
            "Content-Type": ["application/json"],
            "Content-Length": [str(len(body))],
            "Cache-Control": ["no-store"],  # RFC 6749, section 5.1
        },
        "body": {"string": body},
    }


def refusal(found: Exchange, method: str, uri: str) -> str:
    """What replay says of an exchange it cannot answer (not an OAuth token request)."""
    where = uri.partition("?")[0]
    return (
        f"{method} {where} asks {found.what} for a credential while replaying: credential "
        "exchanges are never recorded, and replay answers only OAuth token requests (with a "
        "stand-in token). Replay needs no credential: let the SDK start without one. For "
        "AWS, unset AWS_PROFILE (and AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE) for the "
        "replay, so boto3 signs with the placeholder keys the harness sets; for Google, "
        "use application default credentials (GOOGLE_APPLICATION_CREDENTIALS, or none: the "
        "harness sets a stand-in in replay); for Azure, pass api_key or azure_ad_token_provider "
        "in place of a credential that asks a metadata service."
    )
