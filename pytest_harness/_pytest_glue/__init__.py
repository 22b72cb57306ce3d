"""The harness's part in pytest: settings, the session, each test, the fixture."""
