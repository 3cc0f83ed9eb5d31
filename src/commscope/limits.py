"""The stated bounds of every number commscope takes in, in one place.

The README's "Limits" section lists them; errors name the bound that was crossed.
"""

from __future__ import annotations

# One message of bytes: the engine passes a size to MPI as an int count of MPI_BYTE (and
# OSU, IMB and NetPIPE do the same), so no measured or imported size exceeds 2 GiB - 1.
MAX_MESSAGE_BYTES = 2**31 - 1

# Ranks of one job (--np, --procs, a hostfile's total, an imported file's process count).
MAX_RANKS = 1 << 20

# A measured or imported time: above a picosecond (a derived bandwidth stays finite) and at
# most an hour for one sample.
MIN_TIME_S = 1e-12
MAX_TIME_S = 3600.0

# A whole command (--timeout, --coll-budget and other budgets): a week at most.
MAX_COMMAND_S = 7 * 24 * 3600.0

# Rates of a cluster model: from 1 byte/s to 1 PB/s; latencies from 0 to 1 s.
MIN_RATE_BPS = 1.0
MAX_RATE_BPS = 1e15
MAX_LATENCY_S = 1.0

# Prediction: ranking every placement of the block All-to-all takes up to ~30 s at 65,536
# processes (bench/predict_scale.py), so neither the processes nor the model's nodes go
# beyond that; sockets and cores per node as the largest machines have them.
MAX_PREDICT_PROCS = 65_536
MAX_MODEL_NODES = 65_536
MAX_SOCKETS = 64
MAX_CORES_PER_SOCKET = 1024

# Simulation: flat models and topologies (fat tree, dragonfly, torus) are written as SimGrid
# zones whose routes SimGrid computes, linear in the nodes (10,000: bench/platform_scale.py),
# up to a model's nodes. Listed switches take a route for every ordered pair of nodes (N^2:
# 1,000 nodes wrote 152 MB in 6.8 s), so at most 256 nodes (~10 MB) behind them.
MAX_SIMULATED_NODES = MAX_MODEL_NODES
MAX_SIMULATED_SWITCHED_NODES = 256

# Labels and names typed by users or read from files.
MAX_LABEL_CHARS = 200

# A host name (RFC 1123): node names of cluster models, written into hostfiles and rankfiles.
MAX_HOST_NAME_CHARS = 253

# Longest number written in text that is read at all (a 5,000-digit number is refused
# before any conversion).
MAX_NUMBER_CHARS = 40

# A value of an MPI setting (--cvar): paths of tuning files fit, pasted scripts do not.
MAX_SETTING_CHARS = 1024

# Runs a baseline takes with --from-last, and nights a changed environment is excused
# (check --excuse-nights): a year of nights at most.
MAX_FROM_LAST = 366
MAX_EXCUSE_NIGHTS = 366
# A check reads its judged figures' newest 30 runs for the history verdict: 10,000 figures
# take seconds (bench/results/changes.md); a matrix's million would take minutes and
# gigabytes every night, so beyond this the check says so and judges the night alone.
MAX_HISTORY_FIGURES = 20_000

# One argument of a command line (the engine's --matrix-plan): Linux's MAX_ARG_STRLEN, 32
# pages of 4 KiB, less the NUL that ends it. execve refuses a longer one (E2BIG).
MAX_ARGUMENT_BYTES = 32 * 4096 - 1
