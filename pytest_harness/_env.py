"""The environment litellm needs under test: set once, for the harness and the application.

- ``DISABLE_AIOHTTP_TRANSPORT``: litellm reads it when it builds its first async client. Its
  default aiohttp transport consumes response bodies before the cassette can record them;
  httpx's records cleanly.
- ``LITELLM_LOCAL_MODEL_COST_MAP``: read when litellm is imported; without it litellm fetches
  its price map over the network.

The plugin applies them when pytest configures (before any test, so before the application
builds a litellm client), the seam before it imports litellm. A value the user set wins.

The table is the ``environment`` entry of ``plugin.json``, which the plugin reads at every
start: it applies the table from there, without importing this module (a module imported at
start-up is parsed at every start; see ``pytest_harness.plugin``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

LITELLM_DEFAULTS: dict[str, str] = json.loads(
    Path(__file__).with_name("plugin.json").read_text(encoding="utf-8")
)["environment"]


def apply() -> None:
    """Set each variable the user has not set."""
    for name, value in LITELLM_DEFAULTS.items():
        os.environ.setdefault(name, value)
