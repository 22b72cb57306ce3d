"""Cassettes: each test's HTTP traffic recorded once, then replayed offline.

- ``slot``: one test's cassette (where it lives; opened on the first call, saved at the end).
- ``store``: the vcrpy glue: an indexed cassette, the file format, atomic merged writes. The
  only module that imports vcrpy.
- ``matching``: how a request finds its recording, and the account of a miss.
- ``scrub``: redaction, and the secret scan before any write.
- ``netguard``: in replay mode, tests run offline.
"""
