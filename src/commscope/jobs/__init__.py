"""The jobs the commands run: typed requests in, outcome dataclasses out.

A job turns a request into work done and says what came of it; it never reads argv, prints or
exits (``cli/`` does those). One module per job:

- ``runs``: a request becoming a stored run (new, resumed, or measured again; by a real MPI
  or by SimGrid's SMPI, chosen in one place), the matrix's confirmation round, the report.
- ``where``: where its ranks start (this machine, a hostfile, a Slurm allocation, the
  virtual cluster).
- ``check``: measure again, judge against a baseline, keep the verdict, write the exports.
- ``drain``: drain the nodes a matrix names in Slurm; return those commscope drained.
- ``topology``: the switches a matrix shows, as Slurm's topology.conf and a cluster model.
- ``programs``: the program kinds' runs (the node sweep, TCP) and what a whole MPI program's
  job hands back; ``hpl_runs``: HPL solved on real hosts; ``simulated_programs``: a program
  or HPL on a SimGrid model. A run per grid, repeat or swept value.
- ``figures``: a run's figure values kept when it completes; a history's values read back.
- ``history``: the change points of the stored runs' figures.
"""
