"""``scenarios(Team, input)``: a strategy drawing from a team's recorded scenarios.

The scenarios are the ones ``@pytest.mark.scenarios(Team, input=...)`` recorded (the
cassette ``<cassette_dir>/scenarios/<Team>-<hash>.yaml``): the strategy reads them when
first drawn, never runs the team, and shrinks toward the first of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from pytest_harness.errors import ConfigError


def scenarios(team: type[Any], input: Any, *, cassette_dir: str | Path = "cassettes") -> Any:
    """A strategy of the scenarios ``team`` recorded for ``input``.

    Args:
        team: the ``SharedState`` subclass.
        input: the input it was given (the marker's ``input``).
        cassette_dir: ``harness_cassette_dir`` (relative paths from the working directory).

    Raises (when drawn):
        ConfigError: nothing recorded yet; it names how to record.
    """
    from pytest_harness.team.scenarios import Request, recorded

    request = Request(team, input, None)

    def read() -> st.SearchStrategy[Any]:
        path = request.path(Path(cassette_dir))
        items = recorded(path)
        if not items:
            raise ConfigError(
                f"no recorded scenarios of {team.__name__} for {input!r} at {path}: record them "
                f"with a test marked @pytest.mark.scenarios({team.__name__}, input=...) and "
                "--harness-live."
            )
        return st.sampled_from(items)

    return st.deferred(read)
