"""TCP-level benchmarks: the network below MPI, measured with plain sockets.

As in León Carri et al. 2005 (Beowulf network performance) and Rechistov et al. 2012
(cluster simulation).

``commscope-tcp`` (C, beside the engine, no MPI) runs as a server on one host and as a client
on another; the client writes the same JSON lines as the engine. Ping-pong points are
ordinary "pingpong" points of a run of kind "tcp", so the p2p analysis, the report and
``commscope compare`` treat TCP and MPI runs alike; the stream test writes a "stream" record.

- ``program``: find or build the binary, parse peers and socket-buffer lists, argument lists.
- ``server``: start a server (here, in a vcluster node, or on loopback) and always stop it.
- ``session``: run the client for a stored request and stream its records into the store.
"""

from commscope.measure.tcp.program import DEFAULT_PORT, find, parse_peer, parse_sockbufs

__all__ = ["DEFAULT_PORT", "find", "parse_peer", "parse_sockbufs"]
