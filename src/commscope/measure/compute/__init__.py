"""Node compute: how fast a node computes, for the model and the report.

Linpack (NumPy and HPL from the HPC Challenge), the CPU's peak, pinning, and the busy-clock
probe that says how much of a core a benchmark really had.
"""
