"""Synthetic but schema-valid TCP runs, as ``commscope run tcp`` stores them (one per buffer).

Rank 0 is the client, rank 1 the server, across a link of ``speed_mbps``. Ping-pong follows
t = 30 us + m / rate where the rate grows with the socket buffer granted; the stream moves
``stream_Bps`` each way with ``retrans`` segments retransmitted client -> server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from commscope.data.record_parse import record_from_dict
from commscope.data.records import Header, Point, Stream
from commscope.data.store import Store

SIZES = [1, 64, 1024, 8192, 65536, 262144, 1048576]
DURATION_S = 2.0


def granted(sockbuf: int, cap: int) -> int:
    """What Linux grants for a request: twice it, at most twice the cap (default: 128 KiB)."""
    return 131072 if sockbuf == 0 else min(2 * sockbuf, 2 * cap)


def header(sockbuf: int, speed_mbps: int | None, cap: int) -> Header:
    ends = [
        {
            "role": role,
            "node": node,
            "address": address,
            "port": port,
            "interface": "eth0",
            "mtu": 1500,
            "speed_mbps": speed_mbps,
            "sndbuf": granted(sockbuf, cap),
            "rcvbuf": granted(sockbuf, cap),
            "wmem_max": cap,
            "rmem_max": cap,
        }
        for role, node, address, port in (
            ("client", "n0", "10.0.0.1", 40000),
            ("server", "n1", "10.0.0.2", 5220),
        )
    ]
    rec = record_from_dict(
        {
            "type": "header",
            "schema_version": 1,
            "engine_version": "0.1.0",
            "transport": "tcp",
            "nranks": 2,
            "ranks": [
                {"rank": 0, "node": "n0", "node_index": 0, "socket": -1, "cpu": 0, "pid": 10},
                {"rank": 1, "node": "n1", "node_index": 1, "socket": -1, "cpu": -1, "pid": 11},
            ],
            "timer": {"name": "monotonic_raw", "resolution_s": 3e-8, "overhead_s": 3.7e-8},
            "pairs": [{"label": "inter-node", "ranks": [0, 1]}],
            "options": {"mode": "both", "sockbuf": sockbuf, "sizes": SIZES},
            "started_unix": 1732230000.0,
            "tcp": {
                "mode": "both",
                "peer": "10.0.0.2",
                "port": 5220,
                "nodelay": True,
                "sockbuf_requested": sockbuf,
                "ends": ends,
            },
        },
        "synthetic tcp header",
    )
    assert isinstance(rec, Header)
    return rec


def pingpong(sockbuf: int, rate_Bps: float, seed: int) -> list[Point]:
    rng = np.random.default_rng(seed)
    out = []
    for size in SIZES:
        t = (30e-6 + size / rate_Bps) * np.exp(rng.normal(0, 0.01, 12))
        rec = record_from_dict(
            {
                "type": "point",
                "op": "pingpong",
                "pair": "inter-node",
                "ranks": [0, 1],
                "bytes": size,
                "bytes_per_sample": size,
                "window": 1,
                "iters_per_sample": 3,
                "warmup": 10,
                "samples_s": [float(x) for x in t],
                "stop": "rse",
                "transport": "tcp",
                "sockbuf": sockbuf,
            },
            f"synthetic tcp pingpong {size}",
        )
        assert isinstance(rec, Point)
        out.append(rec)
    return out


def stream(sockbuf: int, stream_Bps: float, retrans: int) -> Stream:
    def direction(src: int, dst: int, lost: int) -> dict[str, Any]:
        total = int(stream_Bps * DURATION_S)
        bins = [total // 20] * 20
        return {
            "from": src,
            "to": dst,
            "sent_bytes": total,
            "messages": total // 2000,
            "send_s": DURATION_S,
            "received_bytes": sum(bins),
            "first_s": 0.001,
            "last_s": DURATION_S,
            "bins_bytes": bins,
            "retrans": lost,
            "segs_out": total // 1448,
            "snd_mss": 1448,
            "pmtu": 1500,
        }

    rec = record_from_dict(
        {
            "type": "stream",
            "pair": "inter-node",
            "ranks": [0, 1],
            "mean_bytes": 2000,
            "max_bytes": 16000,
            "duration_s": DURATION_S,
            "interval_s": 0.1,
            "sockbuf": sockbuf,
            "nodelay": False,
            "directions": [direction(0, 1, retrans), direction(1, 0, 0)],
        },
        "synthetic tcp stream",
    )
    assert isinstance(rec, Stream)
    return rec


def store_tcp_run(
    path: Path,
    label: str,
    sockbuf: int = 0,
    speed_mbps: int | None = 1000,
    stream_Bps: float = 58.75e6,
    retrans: int = 0,
    cap: int = 212992,
    where: dict[str, Any] | None = None,
) -> int:
    """Store one complete synthetic TCP run and return its id."""
    rate = 60e6 * (1 + granted(sockbuf, cap) / 1e6)  # more buffer, faster ping-pong
    with Store.open(path) as store:
        request = {
            "benchmark": "tcp",
            "where": where or {"kind": "peer", "host": "10.0.0.2", "port": 5220},
            "tcp": {"mode": "both", "sockbuf": sockbuf, "sizes": SIZES},
        }
        run_id = store.create_run("tcp", label, None, None, 2, request)
        seg = store.start_segment(run_id, ["commscope-tcp", "client"])
        store.set_header(run_id, seg, header(sockbuf, speed_mbps, cap))
        for rec in [
            *pingpong(sockbuf, rate, seed=sockbuf % 97),
            stream(sockbuf, stream_Bps, retrans),
        ]:
            store.add_point(run_id, seg, rec)
        store.finish_segment(seg, "complete")
        store.set_run_status(run_id, "complete")
    return run_id
