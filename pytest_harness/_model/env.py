"""The environment litellm needs under test: set once, for the harness and the application.

- ``DISABLE_AIOHTTP_TRANSPORT``: litellm reads it when it builds its first async client. Its
  default aiohttp transport consumes response bodies before the cassette can record them;
  httpx's records cleanly.
- ``LITELLM_LOCAL_MODEL_COST_MAP``: read when litellm is imported; without it litellm fetches
  its price map over the network.

The plugin applies them when pytest configures (before any test, so before the application
builds a litellm client), the seam before it imports litellm. A value the user set wins.
"""

from __future__ import annotations

import os

LITELLM_DEFAULTS: dict[str, str] = {
    "DISABLE_AIOHTTP_TRANSPORT": "True",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def apply() -> None:
    """Set each variable the user has not set."""
    for name, value in LITELLM_DEFAULTS.items():
        os.environ.setdefault(name, value)
