"""Where a pair exchange's answer waits: packet captures of every node during `validate predict`.

Runs `commscope validate predict` for one operation on the virtual cluster while tcpdump
captures every node's link, then reads each node's capture: every message's bulk (the part an
MPI sends once the receiver has answered) that stalled mid-way for longer than --gap-ms while
its receiver streamed to it and its sender sent nothing else, is an answer that queued behind
the receiver's own stream to the sender, on their shared connection. Prints, per placement
and pair of nodes, how many messages' bulks crossed and how many stalled so, and the stalls'
lengths with what the peer sent meanwhile. Each connection (a pair of ranks) is read apart,
so placements with several ranks on a node count each rank pair's messages. Then the pair
exchanges (a message each way, begun within 100 ms): how long after the first rank began the
second did, in those that stalled and in those that did not. Not a test: it prints figures.

    .venv/bin/commscope vcluster up --nodes 4 --rate 50mbit --tcp-cc cubic   (root)
    flock /tmp/commscope-bench.lock .venv/bin/python bench/exchange_capture.py --store S
        --tables RUN [--op alltoall --algorithm pairwise] [--procs 4] [--size 1MiB]
        [--max-launches 10] [--answers-out FILE]

--answers-out appends, per placement, every answer's delay and the bytes its node sent
meanwhile as one JSON line (`bench/answer_chaining.py --captured` prices from them).
The tables run must be in the store (as `validate predict --tables` takes it). Needs tcpdump.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

NETNS = ("ip", "netns", "exec")
SNAP = "96"  # bytes of each packet kept: the headers are enough
BULK = 1000  # payload bytes: a data segment, not an acknowledgement or a handshake
RUN_GAP_S = 0.3  # a pause this long ends one message's bulk to a peer
BACK_BYTES = 200 * 1024  # what the peer must stream meanwhile for a stall to be its
PAIR_S = 0.1  # the two messages of one exchange begin at most this far apart
PAUSE_S = 0.001  # a request's first fragment ends in a pause this long of its sender's data
RESUME_S = 0.003  # and the data resumes at most this long after the answer left
IDLE_BYTES = 3000  # what an answer may find ahead of it and still count as leaving at once


@dataclass(frozen=True)
class Packet:
    """A data segment: its time and its ends as address.port."""

    t: float
    src: str
    dst: str
    size: int


def host(end: str) -> str:
    """The address of an address.port end."""
    return end.rsplit(".", 1)[0]


def node_ips() -> dict[str, str]:
    """Per vcluster node (its namespace), its address on eth0."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    ips = {}
    for line in names.stdout.splitlines():
        name = line.split()[0]
        if not name.startswith("csnode"):
            continue
        out = subprocess.run(
            ["ip", "-n", name, "-4", "-o", "addr", "show", "dev", "eth0"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        ips[name] = out.stdout.split()[3].split("/")[0]
    return ips


def packets(pcap: Path, start: float, end: float, smallest: int = BULK) -> list[Packet]:
    """The capture's segments of ``smallest`` payload bytes or more between ``start`` and
    ``end`` (unix seconds)."""
    out = subprocess.run(
        ["tcpdump", "-tt", "-n", "-r", str(pcap)], capture_output=True, text=True, check=True
    )
    found = []
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) < 5 or f[1] != "IP" or not f[-1].isdigit():
            continue
        t, size = float(f[0]), int(f[-1])
        if start <= t < end and size >= smallest:
            found.append(Packet(t, f[2], f[4].rstrip(":"), size))
    return found


@dataclass(frozen=True)
class Message:
    """One message's bulk from ``me`` to ``peer``: when its first segment left, and its stall
    behind the peer's own stream (0 when none)."""

    me: str
    peer: str
    ends: tuple[str, str]  # the connection's, as address.port: one per pair of ranks
    start: float
    stall_s: float
    back: int  # bytes the peer streamed back meanwhile


def messages(me: str, pk: list[Packet], message: int, gap_s: float) -> list[Message]:
    """The bulks ``me`` sent, each with its stall behind the stream that came back on the same
    connection meanwhile, if any."""
    runs: list[tuple[str, str, list[float]]] = []  # per connection, one message's bulk
    last: dict[tuple[str, str], list[float]] = {}  # per connection, its latest bulk's times
    for p in pk:
        if host(p.src) != me:
            continue
        times = last.get((p.src, p.dst))
        if times and p.t - times[-1] < RUN_GAP_S:
            times.append(p.t)
        else:
            last[(p.src, p.dst)] = [p.t]
            runs.append((p.src, p.dst, last[(p.src, p.dst)]))
    found = []
    for mine, peer, times in runs:
        if len(times) * 1448 < message // 2:  # a first fragment alone, not a bulk
            continue
        stall, back = 0.0, 0
        for a, b in zip(times, times[1:], strict=False):
            if b - a <= gap_s:
                continue
            back = sum(p.size for p in pk if p.src == peer and p.dst == mine and a < p.t < b)
            other = sum(p.size for p in pk if host(p.src) == me and p.dst != peer and a < p.t < b)
            if back >= BACK_BYTES and other == 0:
                stall = b - a
                break
        found.append(Message(me, host(peer), (mine, peer), times[0], stall, back if stall else 0))
    return found


def exchanges(sent: list[Message]) -> list[tuple[float, bool]]:
    """Per pair exchange (a message each way on one connection, begun within ``PAIR_S``): how
    much later the second rank began its message than the first, and whether one stalled."""
    found = []
    for m in sent:
        back = [o for o in sent if o.ends == m.ends[::-1] and 0 <= o.start - m.start < PAIR_S]
        if back:
            o = min(back, key=lambda o: o.start)
            found.append((o.start - m.start, bool(m.stall_s or o.stall_s)))
    return found


def answers(out: dict[str, list[Packet]]) -> list[tuple[float, int]]:
    """Per answer that released a paused sender: how long after the request's last segment
    left its sender the answer left its node, and the bytes that node sent meanwhile.

    ``out``: per node, the segments it sent, small ones included, in time order. An answer is
    a segment below ``BULK`` bytes on a connection whose other direction paused its data for
    ``PAUSE_S`` or more and resumed within ``RESUME_S`` of it.
    """
    data: dict[tuple[str, str], list[float]] = {}  # per connection, its data segments' times
    for pk in out.values():
        for p in pk:
            if p.size >= BULK:
                data.setdefault((p.src, p.dst), []).append(p.t)
    found = []
    for pk in out.values():
        times = [p.t for p in pk]
        sent = list(itertools.accumulate((p.size for p in pk), initial=0))
        for i, p in enumerate(pk):
            request = data.get((p.dst, p.src), [])
            j = bisect.bisect_left(request, p.t)
            if p.size >= BULK or j == 0 or j == len(request):
                continue
            last, resumed = request[j - 1], request[j]
            if resumed - last < PAUSE_S or resumed - p.t > RESUME_S:
                continue
            found.append((p.t - last, sent[i] - sent[bisect.bisect_right(times, last)]))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--tables", required=True, help="the tables run in --store")
    ap.add_argument("--op", default="alltoall")
    ap.add_argument("--algorithm", default="pairwise")
    ap.add_argument("--procs", default="4")
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--max-launches", default="10")
    ap.add_argument("--gap-ms", type=float, default=30.0, help="a stall at least this long")
    ap.add_argument("--answers-out", type=Path, help="append each placement's answers (JSON)")
    args = ap.parse_args()
    if shutil.which("tcpdump") is None:  # inside a namespace its absence would go unnoticed
        sys.exit("tcpdump is not installed: apt-get install tcpdump")
    ips = node_ips()
    if not ips:
        sys.exit("no virtual cluster: run 'commscope vcluster up --nodes 4 --rate 50mbit' first")
    with tempfile.TemporaryDirectory() as tmp:
        caps = {name: Path(tmp) / f"{name}.pcap" for name in ips}
        dumps = [
            subprocess.Popen(
                [*NETNS, name, "tcpdump", "-i", "eth0", "-s", SNAP, "-n", "-w", str(path), "tcp"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for name, path in caps.items()
        ]
        try:
            run = subprocess.run(
                [sys.executable, "-m", "commscope", "--store", str(args.store), "validate",
                 "predict", "--op", args.op, "--algorithm", args.algorithm, "--np",
                 args.procs, "--sizes", args.size, "--tables", args.tables, "--vcluster",
                 "--max-launches", args.max_launches, "--json"],
                capture_output=True, text=True,
            )  # fmt: skip
        finally:
            for d in dumps:
                d.terminate()
                d.wait()
        if run.returncode != 0:
            sys.exit(run.stderr.strip() or "validate predict failed")
        found = json.loads(run.stdout)
        with sqlite3.connect(args.store) as db:
            sql = "SELECT created_unix FROM runs WHERE id = ?"
            starts = [db.execute(sql, (p["run_id"],)).fetchone()[0] for p in found["placements"]]
        ends = [*starts[1:], float("inf")]
        for p, start, end in zip(found["placements"], starts, ends, strict=True):
            message = int(p["bytes"])
            print(
                f"{args.op} ({args.algorithm}) {p['placement']} {message} B: predicted"
                f" {p['predicted_s'] * 1e3:.1f} ms, measured {p['measured_s'] * 1e3:.1f} ms"
            )
            sent = [
                m
                for name, path in caps.items()
                for m in messages(ips[name], packets(path, start, end), message, args.gap_ms / 1e3)
            ]
            for me, peer in sorted({(m.me, m.peer) for m in sent}):
                mine = [m for m in sent if (m.me, m.peer) == (me, peer)]
                stalled = sum(1 for m in mine if m.stall_s)
                print(
                    f"  {me} -> {peer}: {len(mine)} bulks, {stalled} stalled behind"
                    " the peer's own stream"
                )
            waits = [(m.stall_s, m.back) for m in sent if m.stall_s]
            if waits:
                ms = [s * 1e3 for s, _ in waits]
                kib = [back / 1024 for _, back in waits]
                print(
                    f"  stalls: {len(waits)}, {min(ms):.1f} / {statistics.median(ms):.1f} /"
                    f" {max(ms):.1f} ms (min / median / max), the peer streaming"
                    f" {statistics.median(kib):.0f} KiB meanwhile (median)"
                )
            out = {
                ip: [q for q in packets(path, start, end, 1) if host(q.src) == ip]
                for ip, path in ((ips[name], path) for name, path in caps.items())
            }
            found_answers = answers(out)
            if args.answers_out is not None:
                with args.answers_out.open("a") as f:
                    line = {
                        "op": args.op, "algorithm": args.algorithm, "procs": int(args.procs),
                        "placement": p["placement"], "bytes": message,
                        "delays_s": [d for d, _ in found_answers],
                        "ahead_bytes": [b for _, b in found_answers],
                    }  # fmt: skip
                    f.write(json.dumps(line) + "\n")
            if found_answers:
                delays = sorted(d * 1e3 for d, _ in found_answers)
                ahead = [b / 1024 for _, b in found_answers]
                idle = sum(1 for _, b in found_answers if b < IDLE_BYTES)
                print(
                    f"  answers: {len(found_answers)}; left their node"
                    f" {statistics.median(delays):.1f} ms (median; 90th percentile"
                    f" {delays[int(0.9 * (len(delays) - 1))]:.1f}) after the request's last"
                    f" segment, behind {statistics.median(ahead):.0f} KiB (median) the node"
                    f" sent meanwhile; {idle} with under {IDLE_BYTES} B ahead"
                )
            pairs = exchanges(sent)
            calm = [g * 1e3 for g, hit in pairs if not hit]
            hit = [g * 1e3 for g, hit in pairs if hit]
            if pairs:
                print(
                    f"  exchanges: {len(pairs)}; the second rank began"
                    f" {statistics.median(calm):.1f} ms (median) up to {max(calm):.1f} ms after"
                    f" the first in the {len(calm)} without a stall"
                    if calm
                    else f"  exchanges: {len(pairs)}, every one stalled",
                    f"and {min(hit):.1f} ms or more (median {statistics.median(hit):.1f}) in the"
                    f" {len(hit)} with one"
                    if hit
                    else "and none stalled",
                )


if __name__ == "__main__":
    main()
