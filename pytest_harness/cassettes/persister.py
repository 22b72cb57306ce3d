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
from pytest_harness.errors import CassetteError


# ``files.read`` checked the shape of every interaction: what is read here is there, and typed.
def _request(raw: Mapping[str, Any]) -> Any:
    body = raw.get("body")
    if isinstance(body, dict):
        body = base64.b64decode(body["base64"])
    elif isinstance(body, str):
        body = body.encode("utf-8")
    return Request(raw["method"], raw["uri"], body, raw.get("headers") or {})


def _response(raw: Mapping[str, Any]) -> dict[str, Any]:
    body = raw.get("body") or {}
    encoded = body.get("base64")
    if encoded is not None:
        content = base64.b64decode(encoded)
    else:
        content = (body.get("string") or "").encode("utf-8")
    # vcrpy's stubs read ``status.message`` and ``headers`` (a list per name) unconditionally;
    # a hand-edited file may leave them out, or give a header a single value.
    headers = {
        name: values if isinstance(values, list) else [values]
        for name, values in (raw.get("headers") or {}).items()
    }
    status = {**raw["status"], "message": raw["status"].get("message") or ""}
    return {**raw, "status": status, "headers": headers, "body": {"string": content}}


class Persister:
    """Loads cassettes for ``HarnessCassette`` (saving goes through ``save_recordings``)."""

    @staticmethod
    def load(path: Path) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
        if not path.is_file():
            raise CassetteNotFoundError()
        data = files.read(path)  # raises CassetteError, naming the part, unless well-formed
        if not data:
            raise CassetteNotFoundError()
        interactions = data.get("interactions") or []
        requests = [_request(interaction["request"]) for interaction in interactions]
        responses = [_response(interaction["response"]) for interaction in interactions]
        return requests, responses, dict(data.get("metadata") or {})

    @staticmethod
    def save_cassette(path: Any, cassette_dict: Any, serializer: Any) -> None:
        raise CassetteError("cassettes are written by save_recordings, not by vcrpy")
