"""Validation runs: which timer and synchronisation to trust, and predictions against real runs.

Orchestrates measure, analysis and predict: it sits above them, below the CLI.
"""
