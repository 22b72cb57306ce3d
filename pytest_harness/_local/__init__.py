"""The embedded model: Gemma 3 270M on a llama.cpp server on loopback, for key-free recording.

- ``install``: is the ``local`` extra installed; the model file, assembled on first use.
- ``server``: the llama.cpp server process.
- ``route``: the call hook sending ``model="local"`` calls to the server (or, in replay, to
  the cassette).
"""
