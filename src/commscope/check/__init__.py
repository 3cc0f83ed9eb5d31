"""Regression watch: baselines of a run's figures, verdicts against them, exporters.

``baseline`` (a figure's run centers, the runs left out, Currie's limits), ``moderated``
(run-to-run variances borrowed within a family of figures), ``detection`` (what a baseline
can detect, summarised), ``environment`` (what a run was measured under), ``verdict`` (per
figure OK, WARNING, CRITICAL or not judged, and why),
``tolerance`` (``--tolerance`` parsed), ``export`` (Prometheus textfile, JUnit XML),
``history`` (a figure over every stored run). It reads runs through the kinds' figures and
never knows argv: ``cli`` is its face.
"""
