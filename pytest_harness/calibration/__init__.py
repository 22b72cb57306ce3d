"""Judge calibration: a tribunal scored against people's labels, with bias probes.

- ``labels``: labelled sets (JSONL, CSV, a list) read into ``Labelled`` items.
- ``metrics``: the confusion matrix, accuracy and Cohen's kappa (pure functions).
- ``asking``: one panel run read per judge; many at once, deterministic under replay.
- ``probes``: the bias probes (``examples``, ``position``, ``padding``) and their protocol.
- ``run``: ``calibrate`` / ``acalibrate``: the tribunal over every item, then the probes.
- ``scores``: ``Score``, ``Agreement``, ``ProbeResult``.
- ``result``: ``Calibration``: failures against thresholds, the record, the table.
- ``assertions``: ``assert_calibrated``.
"""
