"""Datasets and sampled tests: rows of files, cases, the gate, sampling."""
