"""Cassettes: each test's HTTP traffic recorded once, then replayed offline.

- ``slot``: one test's cassette (where it lives; opened on the first call, saved at the end).
- ``store``: the vcrpy glue: an indexed cassette. The only module that imports vcrpy.
- The file: ``read`` (and its ``shape``), ``write`` (merged under a lock, ``atomic``),
  ``interactions`` (one stored exchange), ``bodies`` (a body as stored), ``checksum`` (the
  stored match keys), ``steady`` (re-recording the same changes no byte), ``runlog`` (what
  a session did with the files, kept outside them).
- ``matching``: how a request finds its recording, and the account of a miss.
- ``scrub``: redaction, and the secret scan before any write.
- ``netguard``: in replay mode, tests run offline. ``mcp``: MCP traffic; ``stdio``: MCP
  over stdio, recorded and replayed.
"""
