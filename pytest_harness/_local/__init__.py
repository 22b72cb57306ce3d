"""The embedded model: Gemma 3 270M on a llama.cpp server on loopback, for key-free recording."""
