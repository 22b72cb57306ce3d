"""Reading a cassette file into vcrpy's objects: ``Persister.load`` (vcrpy's persister API).

vcrpy asks its persister for a cassette's requests and responses; this one reads the file
with ``files.read`` (JSON, or hand-edited YAML) and turns each interaction back into a vcrpy
``Request`` and a response dict, bodies as bytes (base64 for binary ones). Saving never goes
through vcrpy: ``store.save_recordings`` writes, once the test's outcome is known.

Imported by ``store`` only, when a cassette is first opened.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.request import Request

from pytest_harness.cassettes import files
from pytest_harness.errors import CassetteError, describe


def _request(raw: Mapping[str, Any]) -> Any:
    body = raw.get("body")
    if isinstance(body, dict):
        body = base64.b64decode(body.get("base64", ""))
    elif isinstance(body, str):
        body = body.encode("utf-8")
    return Request(raw["method"], raw["uri"], body, raw.get("headers") or {})


def _response(raw: Mapping[str, Any]) -> dict[str, Any]:
    body = raw.get("body") or {}
    if "base64" in body:
        content = base64.b64decode(body["base64"])
    else:
        content = str(body.get("string", "")).encode("utf-8")
    return {**raw, "body": {"string": content}}


class Persister:
    """Loads cassettes for ``HarnessCassette`` (saving goes through ``save_recordings``)."""

    @staticmethod
    def load(path: Path) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
        if not path.is_file():
            raise CassetteNotFoundError()
        data = files.read(path)
        if not data:
            raise CassetteNotFoundError()
        try:
            interactions = data.get("interactions", [])
            requests = [_request(i["request"]) for i in interactions]
            responses = [_response(i["response"]) for i in interactions]
        except (KeyError, TypeError, ValueError) as error:
            raise CassetteError(
                f"cassette {path} has a malformed interaction ({describe(error)}). "
                "Delete it and re-record the test with --harness-live."
            ) from None
        return requests, responses, dict(data.get("metadata") or {})

    @staticmethod
    def save_cassette(path: Any, cassette_dict: Any, serializer: Any) -> None:
        raise CassetteError("cassettes are written by save_recordings, not by vcrpy")
