/* Point-to-point benchmarks between the two ranks of a pair.
 *
 * pingpong: blocking MPI_Send/MPI_Recv, a sample is half the round trip (the method of
 *           Annenkov and Katueva 2006, Linux cluster characteristics).
 * bw:       a window of MPI_Isend from a, MPI_Irecv on b, then a small ack from b.
 * bibw:     both ranks post a window of receives and sends at once.
 *
 * --recv-buffers: the window's receives all land in one buffer ("one", as osu_bw and IMB's
 * Uniband do: the receiver's footprint is one message) or each in its own ("each", like
 * osu_bw -b multiple: window x bytes, which outgrows the last-level cache at large sizes).
 * The "each" series is written as bw_each and bibw_each, so the two never mix.
 *
 * Each sample times `iters` back-to-back iterations so it lasts at least --sample-min-time,
 * which beats the timer's resolution; samples are collected until the relative standard error
 * reaches --target-rse (after --min-samples), the point's time budget is spent, or
 * --max-samples is reached. Rank a (always rank 0) times and decides; it tells b to go on or
 * stop between samples, outside the timed region.
 *
 * Lost cores: each rank counts the times the kernel took its core away (involuntary context
 * switches of its thread) per sample, a over its timed region, b from the end of its previous
 * sample to the end of this one; b sends its counts after the point, and the point lists every
 * sample with a nonzero count as [sample, a's count, b's count]. The analysis decides which
 * samples that interrupted (a switch of b while it only waits for the end of its last send
 * holds up the next exchange instead) and leaves them out, as the window method leaves out
 * launches that started late.
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "commscope.h"

enum { TAG_DATA = 11, TAG_ACK = 12, TAG_CTL = 13 };
enum { OP_PINGPONG, OP_BW, OP_BIBW };
enum { RECV_ONE, RECV_EACH };
static const char *recv_names[] = {"one", "each"};

static char *sbuf, *rbuf;
static MPI_Request *reqs;
static double *samples;
static int *switched_a, *switched_b; /* per sample: involuntary context switches (see above) */

/* Times the kernel has taken this thread's core away. Simulated ranks are threads the
 * simulator switches all the time: nothing is counted there. */
static long switches(void) {
#ifdef CS_SIMULATED
    return 0;
#else
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
#endif
}

void cs_p2p_init(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    size_t max = 1;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > max) max = o->sizes[i];
    size_t slots = max;
    if (cs_list_has(o->recv_buffers, "each")) {
        slots = (size_t)o->window * max;
        if (slots > (size_t)o->window_bytes_cap) slots = (size_t)o->window_bytes_cap;
        if (slots < max) slots = max;
    }
    sbuf = cs_buffer_alloc(max);
    rbuf = cs_buffer_alloc(slots);
    memset(sbuf, 'c', max);
    reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)o->window);
    samples = malloc(sizeof(double) * (size_t)o->max_samples);
    switched_a = calloc((size_t)o->max_samples, sizeof(int));
    switched_b = calloc((size_t)o->max_samples, sizeof(int));
    if (!reqs || !samples || !switched_a || !switched_b) cs_die("rank %d: out of memory for %d samples", ctx->rank, o->max_samples);
}

/* Messages in flight per iteration: a window, fewer when its bytes would exceed the cap (the
 * receive slots of "each"; "one" keeps the same window, so the two series differ only in
 * where the messages land). */
static int window_for(const cs_options *o, int kind, size_t bytes) {
    if (kind == OP_PINGPONG) return 1;
    int w = o->window;
    if (bytes > 0 && (size_t)w * bytes > (size_t)o->window_bytes_cap) {
        size_t fit = (size_t)o->window_bytes_cap / bytes;
        w = fit < 1 ? 1 : (int)fit;
    }
    return w;
}

static void iterate(int kind, int is_a, int peer, size_t bytes, size_t stride, int w,
                    long iters) {
    int n = (int)bytes;
    cs_trace_phase(1); /* the iterations are the benchmark; the TAG_CTL messages are not */
    for (long it = 0; it < iters; it++) {
        switch (kind) {
        case OP_PINGPONG:
            if (is_a) {
                MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
                MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
            }
            break;
        case OP_BW:
            for (int i = 0; i < w; i++) {
                if (is_a) MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[i]);
                else MPI_Irecv(rbuf + (size_t)i * stride, n, MPI_BYTE, peer, TAG_DATA,
                               MPI_COMM_WORLD, &reqs[i]);
            }
            MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
            if (is_a) MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
            break;
        case OP_BIBW:
            for (int i = 0; i < w; i++)
                MPI_Irecv(rbuf + (size_t)i * stride, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &reqs[i]);
            for (int i = 0; i < w; i++)
                MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[w + i]);
            MPI_Waitall(2 * w, reqs, MPI_STATUSES_IGNORE);
            break;
        }
    }
    cs_trace_phase(0);
}

static const char *stop_names[] = {"", "rse", "budget", "max_samples"};

static void write_point(cs_context *ctx, const char *op, int recv, const cs_pair *pair,
                        size_t bytes, long long moved, int w, long iters, int n, int stop) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "point");
    cs_json_str(&j, "op", op);
    cs_json_str(&j, "pair", pair->label);
    cs_json_raw_begin(&j, "ranks", '[');
    cs_json_elem_int(&j, pair->a);
    cs_json_elem_int(&j, pair->b);
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_int(&j, "bytes_per_sample", moved);
    cs_json_int(&j, "window", w);
    if (recv >= 0) cs_json_str(&j, "recv_buffers", recv_names[recv]);
    cs_json_int(&j, "iters_per_sample", iters);
    cs_json_int(&j, "warmup", ctx->opt->warmup);
    cs_json_raw_begin(&j, "samples_s", '[');
    for (int i = 0; i < n; i++) cs_json_elem_num(&j, samples[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "switches", '[');
    for (int i = 0; i < n; i++) {
        if (!switched_a[i] && !switched_b[i]) continue;
        cs_json_raw_begin(&j, NULL, '[');
        cs_json_elem_int(&j, i);
        cs_json_elem_int(&j, switched_a[i]);
        cs_json_elem_int(&j, switched_b[i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_str(&j, "stop", stop_names[stop]);
    cs_json_end(&j);
    ctx->npoints++;
}

/* recv: RECV_ONE or RECV_EACH for bw and bibw, -1 for ping-pong (one buffer each way). */
static void measure(cs_context *ctx, const cs_pair *pair, size_t bytes, int kind, int recv,
                    const char *op) {
    if (ctx->rank != pair->a && ctx->rank != pair->b) return;
    if (cs_options_skipped(ctx->opt, op, pair->label, bytes)) return;
    if (pair->a != 0) cs_die("rank %d: pair %s does not start at rank 0", ctx->rank, pair->label);
    if (bytes > (size_t)0x7fffffff) cs_die("rank %d: %zu bytes exceeds an int count", ctx->rank, bytes);
    const cs_options *o = ctx->opt;
    int is_a = ctx->rank == pair->a, peer = is_a ? pair->b : pair->a;
    int w = window_for(o, kind, bytes);
    size_t stride = recv == RECV_EACH ? bytes : 0;
    double (*now)(void) = ctx->timer->now;

    double start = now();
    iterate(kind, is_a, peer, bytes, stride, w, o->warmup);

    /* Iterations per sample, from a short probe, so a sample outlasts the timer resolution. */
    long iters = 1;
    if (is_a) {
        double t0 = now();
        iterate(kind, is_a, peer, bytes, stride, w, 2);
        double per = (now() - t0) / 2.0;
        double want = o->sample_min_s > 100.0 * ctx->timer->resolution_s
                          ? o->sample_min_s : 100.0 * ctx->timer->resolution_s;
        if (per > 0 && want > per) iters = (long)ceil(want / per);
        if (iters > (1L << 20)) iters = 1L << 20;
        MPI_Send(&iters, 1, MPI_LONG, peer, TAG_CTL, MPI_COMM_WORLD);
    } else {
        iterate(kind, is_a, peer, bytes, stride, w, 2);
        MPI_Recv(&iters, 1, MPI_LONG, peer, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    int n = 0, stop = 0;
    cs_rse rse = {0, 0.0, 0.0};
    double per_sample = kind == OP_PINGPONG ? 2.0 * (double)iters : (double)iters;
    long last = switches();
    while (!stop) {
        if (is_a) {
            long s0 = switches();
            double t0 = now();
            iterate(kind, is_a, peer, bytes, stride, w, iters);
            double t1 = now();
            switched_a[n] = (int)(switches() - s0);
            samples[n++] = (t1 - t0) / per_sample;
            stop = cs_rse_add(&rse, o, samples[n - 1], t1 - start);
            MPI_Send(&stop, 1, MPI_INT, peer, TAG_CTL, MPI_COMM_WORLD);
        } else {
            iterate(kind, is_a, peer, bytes, stride, w, iters);
            long s1 = switches();
            switched_b[n++] = (int)(s1 - last);
            last = s1;
            MPI_Recv(&stop, 1, MPI_INT, peer, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (is_a) MPI_Recv(switched_b, n, MPI_INT, peer, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(switched_b, n, MPI_INT, peer, TAG_CTL, MPI_COMM_WORLD);
    if (is_a) {
        long long moved = kind == OP_PINGPONG ? (long long)bytes
                          : kind == OP_BW     ? (long long)w * (long long)bytes
                                              : 2LL * w * (long long)bytes;
        write_point(ctx, op, recv, pair, bytes, moved, w, iters, n, stop);
    }
}

/* bw and bibw once per receive-buffer policy, in the order asked: with both, the two series
 * alternate size by size and see the same conditions. */
static void windowed(cs_context *c, const cs_pair *p, size_t b, int kind, const char *one,
                     const char *each) {
    for (const char *r = c->opt->recv_buffers; r != NULL;) {
        int recv = strncmp(r, "each", 4) == 0 ? RECV_EACH : RECV_ONE;
        measure(c, p, b, kind, recv, recv == RECV_EACH ? each : one);
        r = strchr(r, ',');
        if (r) r++;
    }
}

static void pingpong(cs_context *c, const cs_pair *p, size_t b) { measure(c, p, b, OP_PINGPONG, -1, "pingpong"); }
static void bw(cs_context *c, const cs_pair *p, size_t b) { windowed(c, p, b, OP_BW, "bw", "bw_each"); }
static void bibw(cs_context *c, const cs_pair *p, size_t b) { windowed(c, p, b, OP_BIBW, "bibw", "bibw_each"); }

static const cs_op ops[] = {{"pingpong", pingpong}, {"bw", bw}, {"bibw", bibw}};

const cs_op *cs_op_find(const char *name) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}
