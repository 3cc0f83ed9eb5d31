"""Measuring: everything that runs a benchmark and turns its output into records.

MPI discovery and launchers, the engine and its build, the runner, hosts and Slurm, the virtual
cluster, the TCP probe and the node-compute benchmarks.

It produces records and writes them to the store; it never imports analysis, predict or report.
"""
