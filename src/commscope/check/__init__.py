"""Regression watch: baselines of a run's figures, verdicts against them, exporters.

``baseline`` (a figure's center, run-to-run band and pooled samples), ``environment`` (what
a run was measured under), ``verdict`` (per figure OK, WARNING or CRITICAL, and why),
``tolerance`` (``--tolerance`` parsed), ``export`` (Prometheus textfile, JUnit XML),
``history`` (a figure over every stored run). It reads runs through the kinds' figures and
never knows argv: ``cli`` is its face.
"""
