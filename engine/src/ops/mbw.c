/* Multi-pair bandwidth and message rate, the method of OSU's osu_mbw_mr: k pairs at once, each
 * sender posts a window of MPI_Isend, waits for them, and receives a one-byte ack that its
 * receiver sends once its window of MPI_Irecv (all into one buffer, as osu_mbw_mr does by
 * default) is complete.
 *
 * Pairs: with the ranks on two nodes, the i-th rank of the first node (rank 0's) sends to the
 * i-th rank of the other ("inter-node"); on one node the first half sends to the second half
 * ("intra-node"). Each k of --pairs-per-step uses pairs 0..k-1; ranks outside wait asleep.
 *
 * A sample: every sender runs `iters` windows, each after a barrier of the 2k ranks (as
 * osu_mbw_mr does, so every window starts with all pairs at once and its receivers' state
 * alike; the barriers are not timed), and the sample is the slowest sender's time in its
 * windows divided by `iters`: the time in which all k x window messages of one window arrived. osu_mbw_mr divides by the senders' mean time instead; the slowest one is
 * the interval over which the aggregate rate really held.
 * Warm-up, iterations per sample and the stopping rules (--target-rse after --min-samples,
 * --point-budget, --max-samples) are those of the p2p operations, decided by rank 0.
 *
 * Each point is written as a p2p point of op "mbw_k<k>" whose bytes_per_sample is
 * k x window x bytes, so bandwidth is the aggregate over the pairs and k x window / sample the
 * message rate.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

enum { TAG_MBW = 61, TAG_MBW_ACK = 62 };
#define CS_MBW_MAX_STEPS 64

static char *sbuf, *rbuf, ack;
static MPI_Request *reqs;
static double *samples;
static const char *stop_names[] = {"", "rse", "budget", "max_samples"};

/* The pair layout, identical on every rank: senders[i] sends to receivers[i]. */
typedef struct mbw_layout {
    int max, *senders, *receivers;
    const char *label;
} mbw_layout;

/* Rank 0 finds the pairs from the topology and broadcasts them. */
static void layout_find(cs_context *ctx, mbw_layout *l) {
    int n = ctx->nranks, *buf = malloc(sizeof(int) * (size_t)(2 + 2 * n));
    if (!buf) cs_die("rank %d: out of memory for the mbw pairs", ctx->rank);
    if (ctx->rank == 0) {
        const cs_rankinfo *r = ctx->topo->ranks;
        int nodes = r[n - 1].node_index + 1, k = 0;
        for (int i = 0; i < n; i++)
            if (r[i].node_index + 1 > nodes) nodes = r[i].node_index + 1;
        if (nodes > 2) cs_die("rank 0: mbw: the ranks span %d nodes; run it on one or two", nodes);
        if (nodes == 2) {
            int other = r[0].node_index == 0 ? 1 : 0, a = 0, b = 0;
            for (;; a++, b++) {
                while (a < n && r[a].node_index != r[0].node_index) a++;
                while (b < n && r[b].node_index != other) b++;
                if (a >= n || b >= n) break;
                buf[2 + k] = a, buf[2 + n + k] = b, k++;
            }
        } else {
            for (k = 0; k < n / 2; k++) buf[2 + k] = k, buf[2 + n + k] = n / 2 + k;
        }
        if (k < 1) cs_die("rank 0: mbw needs two ranks, one on each side of a pair");
        buf[0] = k, buf[1] = nodes;
    }
    MPI_Bcast(buf, 2 + 2 * n, MPI_INT, 0, MPI_COMM_WORLD);
    l->max = buf[0];
    l->label = buf[1] == 2 ? "inter-node" : "intra-node";
    l->senders = malloc(sizeof(int) * (size_t)l->max);
    l->receivers = malloc(sizeof(int) * (size_t)l->max);
    if (!l->senders || !l->receivers) cs_die("rank %d: out of memory for the mbw pairs", ctx->rank);
    memcpy(l->senders, buf + 2, sizeof(int) * (size_t)l->max);
    memcpy(l->receivers, buf + 2 + n, sizeof(int) * (size_t)l->max);
    free(buf);
}

/* --pairs-per-step: "auto" is 1, 2, 4, ... below the most pairs, then the most. */
static int steps_parse(const char *text, int max, int *steps) {
    int n = 0;
    if (strcmp(text, "auto") == 0) {
        for (int k = 1; k < max && n < CS_MBW_MAX_STEPS - 1; k *= 2) steps[n++] = k;
        steps[n++] = max;
        return n;
    }
    for (const char *p = text; *p && n < CS_MBW_MAX_STEPS;) {
        char *end = NULL;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || (*end != ',' && *end != '\0'))
            cs_die("rank 0: --pairs-per-step %s: give pair counts such as 1,2,4", text);
        if (k > max)
            cs_die("rank 0: --pairs-per-step %s: only %d pairs fit these ranks; give at most %d",
                   text, max, max);
        steps[n++] = (int)k;
        p = *end ? end + 1 : end;
    }
    return n;
}

/* One window and its ack, `iters` times, each after a barrier of the 2k ranks as in
 * osu_mbw_mr (receives are posted before the sends arrive, every window alike); returns the
 * time spent in the windows, barriers left out. */
static double windows(int sender, int peer, int c, int w, long iters, MPI_Comm comm,
                      double (*now)(void)) {
    double busy = 0.0;
    for (long it = 0; it < iters; it++) {
        MPI_Barrier(comm);
        double t0 = now();
        for (int i = 0; i < w; i++) {
            if (sender) MPI_Isend(sbuf, c, MPI_BYTE, peer, TAG_MBW, MPI_COMM_WORLD, &reqs[i]);
            else MPI_Irecv(rbuf, c, MPI_BYTE, peer, TAG_MBW, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
        if (sender) MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG_MBW_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(&ack, 1, MPI_BYTE, peer, TAG_MBW_ACK, MPI_COMM_WORLD);
        busy += now() - t0;
    }
    return busy;
}

static void write_point(cs_context *ctx, const mbw_layout *l, int k, size_t bytes, long iters,
                        int n, int stop) {
    const cs_options *o = ctx->opt;
    char op[32];
    snprintf(op, sizeof op, "mbw_k%d", k);
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "point");
    cs_json_str(&j, "op", op);
    cs_json_str(&j, "pair", l->label);
    cs_json_raw_begin(&j, "ranks", '[');
    cs_json_elem_int(&j, l->senders[0]);
    cs_json_elem_int(&j, l->receivers[0]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "pairs", '[');
    for (int i = 0; i < k; i++) {
        cs_json_raw_begin(&j, NULL, '[');
        cs_json_elem_int(&j, l->senders[i]);
        cs_json_elem_int(&j, l->receivers[i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_int(&j, "bytes_per_sample", (long long)k * o->window * (long long)bytes);
    cs_json_int(&j, "window", o->window);
    cs_json_int(&j, "iters_per_sample", iters);
    cs_json_int(&j, "warmup", o->warmup);
    cs_json_raw_begin(&j, "samples_s", '[');
    for (int i = 0; i < n; i++) cs_json_elem_num(&j, samples[i]);
    cs_json_raw_end(&j, ']');
    cs_json_str(&j, "stop", stop_names[stop]);
    cs_json_end(&j);
    ctx->npoints++;
}

/* One (k, size) point; `comm` holds the 2k ranks (senders first), MPI_COMM_NULL elsewhere. */
static void measure(cs_context *ctx, const mbw_layout *l, int k, MPI_Comm comm, size_t bytes) {
    if (comm == MPI_COMM_NULL) return;
    const cs_options *o = ctx->opt;
    int me, c = (int)bytes, w = o->window;
    MPI_Comm_rank(comm, &me);
    int sender = me < k, peer = sender ? l->receivers[me] : l->senders[me - k];
    double (*now)(void) = ctx->timer->now;
    double start = now();
    windows(sender, peer, c, w, o->warmup, comm, now);

    /* Windows per sample, from a short probe, so a sample outlasts the timer resolution. */
    long iters = 1;
    double probe = windows(sender, peer, c, w, 2, comm, now);
    if (me == 0) {
        double per = probe / 2.0;
        double want = fmax(o->sample_min_s, 100.0 * ctx->timer->resolution_s);
        if (per > 0 && want > per) iters = (long)ceil(want / per);
        if (iters > (1L << 20)) iters = 1L << 20;
    }
    MPI_Bcast(&iters, 1, MPI_LONG, 0, comm);

    int n = 0, stop = 0;
    double mean = 0.0, m2 = 0.0; /* Welford's running mean and squared deviations */
    while (!stop) {
        double busy = windows(sender, peer, c, w, iters, comm, now);
        double mine = sender ? busy / (double)iters : 0.0, x = 0.0;
        MPI_Reduce(&mine, &x, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        if (me == 0) {
            samples[n++] = x;
            double d = x - mean;
            mean += d / n;
            m2 += d * (x - mean);
            double rse = n > 1 && mean > 0 ? sqrt(m2 / (n - 1) / n) / mean : INFINITY;
            if (n >= o->min_samples && rse <= o->target_rse) stop = 1;
            else if (now() - start >= o->point_budget_s && n >= 2) stop = 2;
            else if (n >= o->max_samples) stop = 3;
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, comm);
    }
    if (ctx->rank == 0) write_point(ctx, l, k, bytes, iters, n, stop);
}

void cs_mbw_run(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    mbw_layout l;
    layout_find(ctx, &l);
    if (l.senders[0] != 0) cs_die("rank %d: mbw: rank 0 must send in the first pair", ctx->rank);
    int steps[CS_MBW_MAX_STEPS];
    int nsteps = steps_parse(o->mbw_pairs, l.max, steps);

    size_t max = 1;
    for (int i = 0; i < o->nsizes; i++) {
        if (o->sizes[i] > (size_t)0x7fffffff)
            cs_die("rank %d: %zu bytes exceeds an int count", ctx->rank, o->sizes[i]);
        if (o->sizes[i] > max) max = o->sizes[i];
    }
    sbuf = cs_buffer_alloc(max);
    rbuf = cs_buffer_alloc(max);
    memset(sbuf, 'm', max);
    reqs = malloc(sizeof(MPI_Request) * (size_t)o->window);
    samples = malloc(sizeof(double) * (size_t)o->max_samples);
    if (!reqs || !samples) cs_die("rank %d: out of memory for %d samples", ctx->rank, o->max_samples);

    /* A communicator per k: its ranks are the k senders, then their k receivers. */
    MPI_Comm comms[CS_MBW_MAX_STEPS];
    for (int s = 0; s < nsteps; s++) {
        int color = MPI_UNDEFINED, key = 0;
        for (int i = 0; i < steps[s]; i++) {
            if (ctx->rank == l.senders[i]) color = 0, key = i;
            if (ctx->rank == l.receivers[i]) color = 0, key = steps[s] + i;
        }
        MPI_Comm_split(MPI_COMM_WORLD, color, key, &comms[s]);
    }
    for (int i = 0; i < o->nsizes; i++)
        for (int s = 0; s < nsteps; s++) {
            char op[32];
            snprintf(op, sizeof op, "mbw_k%d", steps[s]);
            if (cs_options_skipped(o, op, l.label, o->sizes[i])) continue;
            measure(ctx, &l, steps[s], comms[s], o->sizes[i]);
            cs_idle_barrier();
        }
    for (int s = 0; s < nsteps; s++)
        if (comms[s] != MPI_COMM_NULL) MPI_Comm_free(&comms[s]);
    cs_buffer_free(sbuf);
    cs_buffer_free(rbuf);
    free(reqs);
    free(samples);
    free(l.senders);
    free(l.receivers);
}
