"""LogGP under real Open MPI and MPICH, 2 ranks on this node: what physics requires of it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commscope.analysis import loggp
from commscope.data.store import Store
from commscope.units import netpipe_schedule
from tests.conftest import have_mpi, need

TIMER_NOISE_S = 0.15e-6  # what one timed send call can gain under load on this VM
pytestmark = pytest.mark.mpi
MAX = 1 << 20


@pytest.mark.parametrize("family", ["openmpi", "mpich"])
def test_loggp_parameters_obey_the_model(cli, family):
    need(have_mpi(family), f"{family} is not installed")
    out = cli(
        "run", "loggp", "--mpi", family, "--np", "2", "--max-size", "1MiB", "--json", check=True
    )
    result = json.loads(out.stdout)
    assert result["status"] == "complete"
    with Store.open(cli.store) as store:
        run = store.get_run(result["run"])
        points = store.loggps(run.id)
    assert run.header["options"]["loggp_sizes"] == netpipe_schedule(MAX, 0)
    assert [p.bytes for p in points] == netpipe_schedule(MAX, 0)
    for p in points:
        assert p.ranks == (0, 1) and p.n == 10 and p.n_samples >= 2
        assert p.stop in ("rse", "budget", "max_samples")
        assert len(p.send_s) == p.n * p.n_samples
        # n messages take longer than one; the delayed train really spent its n - 1 delays.
        assert np.median(p.prtt_n_0_s) > np.median(p.prtt_1_0_s)
        assert min(p.prtt_n_d_s) > (p.n - 1) * p.delay_s
        assert p.wait_s == pytest.approx(2 * p.delay_s)
        # The delay is calibrated above the round trip's best.
        assert p.delay_s >= min(p.prtt_1_0_s)

    (f,) = loggp.fits(points)
    c = f.curves
    print(
        f"{family}: L {f.L_s * 1e6:.3f} us, o_s {f.o_s_s * 1e6:.3f} us, o_r"
        f" {f.o_r_s * 1e6:.3f} us, g {f.g_s * 1e6:.3f} us, G {f.G_s_per_byte * 1e9:.4f} ns/B"
        f" ({(f.bandwidth_Bps or 0) / 1e9:.2f} GB/s)"
    )
    # Overheads are real work; a message cannot be issued faster than a send call takes.
    assert f.o_s_s > 0 and f.o_r_s > 0 and f.g_s > 0
    # g >= o_s up to timer noise: in CI MPICH's timed send calls read 0.28-0.29 us against g
    # 0.17-0.20 us (quiet: 0.06 against 0.06), ~0.1 us of noise on this VM under load. With
    # overheads this small the fitted check only catches a gap far below the send call; the
    # per-size check over the first regime below carries the claim.
    assert f.g_s >= f.o_s_s - TIMER_NOISE_S
    small = c.bytes <= f.small_bytes[1]
    # Per size the two come from different timings (a train's round trips, single timed calls)
    # and differ by ~0.1 us of noise on this VM (MPICH once: g 0.17 us, o_s 0.28 us at 1 B,
    # g above o_s from 1 KiB on): over the first regime the gap still keeps up with the send.
    assert np.median(c.g_s[small] / c.o_s_s[small]) >= 0.7
    # The overheads fit inside the one-way time: L is not substantially negative.
    one_way = f.L_s + f.o_s_s + f.o_r_s
    assert f.L_s > -0.1 * one_way
    # Shared memory on one node: sub-microsecond small messages, 0.1 to 100 GB/s.
    assert 0 < c.one_way_s[0] < 5e-6
    assert f.bandwidth_Bps is not None and 1e8 < f.bandwidth_Bps < 1e11
    # G times the size is close to the measured large-message time (one way, least disturbed).
    for size in (256 << 10, MAX):
        i = int(np.searchsorted(c.bytes, size))
        assert 0.5 < f.G_s_per_byte * size / c.one_way_s[i] < 2.0, (size, c.one_way_s[i])
    # Netgauge's o_s from PRTT(n,d,s) agrees with the timed send calls in the first regime:
    # within 0.5 us (it also holds a timer call and the delay loop's overshoot), or 10 % where
    # the send call itself is long (MPICH's first regime can reach 1 MiB, o_s ~ 140 us).
    tolerance = np.maximum(0.5e-6, 0.1 * c.o_s_s[small])
    assert np.all(np.abs(c.o_s_prtt_s[small] - c.o_s_s[small]) < tolerance)
    # Below the first protocol threshold the delay exceeded the gap everywhere.
    assert np.all(c.delay_s[small] > c.g_s[small])

    shown = json.loads(cli("show", str(run.id), "--json", check=True).stdout)
    (entry,) = shown["loggp"]
    assert entry["G_s_per_byte"] == pytest.approx(f.G_s_per_byte)
    text = cli("show", str(run.id), check=True).stdout
    assert "LogGP" in text and "intra-socket" in text
