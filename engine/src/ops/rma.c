/* One-sided communication (MPI-3 RMA) between the two ranks of a pair, the way OSU's
 * osu_put_latency, osu_get_latency, osu_acc_latency, osu_put_bw and osu_get_bw measure it.
 *
 * Operations (--rma-ops): MPI_Put, MPI_Get, MPI_Accumulate (MPI_SUM on doubles, so sizes are
 * multiples of 8). Synchronisations (--rma-sync):
 *   fence  MPI_Win_fence closes each epoch (both ranks call it)
 *   lock   passive target as OSU's default: rank a holds MPI_Win_lock(MPI_LOCK_SHARED) on b for
 *          the whole point and completes each epoch with MPI_Win_flush; b takes no part
 *   pscw   a: MPI_Win_start / operations / MPI_Win_complete, b: MPI_Win_post / MPI_Win_wait
 * Latency (op_lat_sync): one operation and its synchronisation. Under fence and pscw a epoch
 * needs the target too, so a and b take turns as origin (as OSU does) and a sample is half of
 * the two epochs; under lock a sample is one operation + flush.
 * Bandwidth (op_bw_sync): --window operations to consecutive offsets per epoch (fewer when
 * their bytes exceed --window-bytes-cap), a sample is one epoch.
 *
 * The window is made with MPI_Win_allocate over a communicator of the pair alone, since a
 * fence is collective over the window's group. Samples stop by the p2p rule: relative standard
 * error below --target-rse after --min-samples, --point-budget, or --max-samples; rank a (rank
 * 0) times, decides and tells b between samples.
 *
 * --check: after both series of an (op, sync, size), one operation of the size moves known
 * data under the same synchronisation and the receiving side compares every byte (put: the
 * target holds the origin's pattern, get: the origin holds the target's, acc: the target holds
 * the sum); a mismatch ends the run naming the point.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

enum { TAG_RMA_CTL = 51 };
enum { PUT, GET, ACC, NOPS };
enum { FENCE, LOCK, PSCW, NSYNCS };
static const char *op_names[NOPS] = {"put", "get", "acc"};
static const char *sync_names[NSYNCS] = {"fence", "lock", "pscw"};
static const char *sync_calls[NSYNCS] = {"MPI_Win_fence", "MPI_Win_lock(shared)+MPI_Win_flush",
                                         "MPI_Win_post/start/complete/wait"};
static const char *stop_names[] = {"", "rse", "budget", "max_samples"};

typedef struct {
    MPI_Comm comm;   /* the pair: rank 0 is a, 1 is b */
    MPI_Win win;
    MPI_Group peer;  /* the other rank, for post and start */
    char *local;     /* origin buffer */
    char *base;      /* this rank's window memory */
    size_t cap;      /* bytes of each */
    int is_a, op, sync;
} rma_pair;

static double *samples;

void cs_rma_init(cs_context *ctx) {
    samples = malloc(sizeof(double) * (size_t)ctx->opt->max_samples);
    if (!samples) cs_die("rank %d: out of memory for %d samples", ctx->rank, ctx->opt->max_samples);
}

/* Operations per epoch: --window for bandwidth, fewer when their bytes exceed the cap. */
static int window_for(const cs_options *o, size_t bytes) {
    int w = o->window;
    if (bytes > 0 && (size_t)w * bytes > (size_t)o->window_bytes_cap) {
        size_t fit = (size_t)o->window_bytes_cap / bytes;
        w = fit < 1 ? 1 : (int)fit;
    }
    return w;
}

/* w operations of `bytes` from this rank to the other one, at consecutive offsets. */
static void issue(const rma_pair *p, size_t bytes, int w) {
    int target = p->is_a, n = (int)bytes; /* a is 0 and b is 1 in the pair's communicator */
    for (int i = 0; i < w; i++) {
        size_t at = (size_t)i * bytes;
        if (p->op == PUT)
            MPI_Put(p->local + at, n, MPI_BYTE, target, (MPI_Aint)at, n, MPI_BYTE, p->win);
        else if (p->op == GET)
            MPI_Get(p->local + at, n, MPI_BYTE, target, (MPI_Aint)at, n, MPI_BYTE, p->win);
        else
            MPI_Accumulate(p->local + at, n / 8, MPI_DOUBLE, target, (MPI_Aint)at, n / 8,
                           MPI_DOUBLE, MPI_SUM, p->win);
    }
}

/* One epoch in which only `origin` (1: a, 0: b) issues w operations. */
static void epoch(const rma_pair *p, size_t bytes, int w, int origin) {
    int mine = p->is_a == origin;
    switch (p->sync) {
    case FENCE:
        if (mine) issue(p, bytes, w);
        MPI_Win_fence(0, p->win);
        break;
    case LOCK:
        if (mine) {
            issue(p, bytes, w);
            MPI_Win_flush(1, p->win);
        }
        break;
    case PSCW:
        if (mine) {
            MPI_Win_start(p->peer, 0, p->win);
            issue(p, bytes, w);
            MPI_Win_complete(p->win);
        } else {
            MPI_Win_post(p->peer, 0, p->win);
            MPI_Win_wait(p->win);
        }
        break;
    }
}

/* Latency takes turns under fence and pscw (two operations per iteration), bandwidth and lock
 * latency have a as the only origin. */
static int turns(const rma_pair *p, int w) { return w == 0 && p->sync != LOCK; }

static void iterate(const rma_pair *p, size_t bytes, int w, long iters) {
    for (long i = 0; i < iters; i++) {
        epoch(p, bytes, w ? w : 1, 1);
        if (turns(p, w)) epoch(p, bytes, 1, 0);
    }
}

/* Epochs of fence and lock span the whole point: opened here, closed in close_point. */
static void open_point(const rma_pair *p) {
    if (p->sync == FENCE) MPI_Win_fence(MPI_MODE_NOPRECEDE, p->win);
    if (p->sync == LOCK && p->is_a) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, p->win);
}

static void close_point(const rma_pair *p) {
    if (p->sync == FENCE) MPI_Win_fence(MPI_MODE_NOSUCCEED, p->win);
    if (p->sync == LOCK && p->is_a) MPI_Win_unlock(1, p->win);
}

static void write_point(cs_context *ctx, const cs_pair *pair, const char *name, size_t bytes,
                        int w, long iters, int n, int stop, int sync) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "point");
    cs_json_str(&j, "op", name);
    cs_json_pair(&j, pair);
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_int(&j, "bytes_per_sample", (long long)(w ? w : 1) * (long long)bytes);
    cs_json_int(&j, "window", w ? w : 1);
    cs_json_int(&j, "iters_per_sample", iters);
    cs_json_int(&j, "warmup", ctx->opt->warmup);
    cs_json_raw_begin(&j, "samples_s", '[');
    for (int i = 0; i < n; i++) cs_json_elem_num(&j, samples[i]);
    cs_json_raw_end(&j, ']');
    cs_json_str(&j, "stop", stop_names[stop]);
    cs_json_str(&j, "rma_sync", sync_calls[sync]);
    cs_json_str(&j, "rma_window", "MPI_Win_allocate");
    cs_json_end(&j);
    ctx->npoints++;
}

/* One series point: w == 0 for latency, else the operations per epoch. */
static void measure(cs_context *ctx, const cs_pair *pair, const rma_pair *p, size_t bytes, int w,
                    const char *name) {
    const cs_options *o = ctx->opt;
    double (*now)(void) = ctx->timer->now;
    open_point(p);
    double start = now();
    iterate(p, bytes, w, o->warmup);
    long iters = 1;
    if (p->is_a) { /* iterations per sample, so a sample outlasts the timer resolution */
        double t0 = now();
        iterate(p, bytes, w, 2);
        double per = (now() - t0) / 2.0, res = 100.0 * ctx->timer->resolution_s;
        double want = o->sample_min_s > res ? o->sample_min_s : res;
        if (per > 0 && want > per) iters = (long)ceil(want / per);
        if (iters > (1L << 20)) iters = 1L << 20;
    } else {
        iterate(p, bytes, w, 2);
    }
    MPI_Bcast(&iters, 1, MPI_LONG, 0, p->comm);
    int stop = 0;
    cs_rse rse = {0, 0.0, 0.0};
    double per_sample = (double)iters * (turns(p, w) ? 2.0 : 1.0);
    while (!stop) {
        double t0 = now();
        iterate(p, bytes, w, iters);
        double t1 = now();
        if (p->is_a) {
            double x = (t1 - t0) / per_sample;
            samples[rse.n] = x;
            stop = cs_rse_add(&rse, o, x, t1 - start);
            MPI_Send(&stop, 1, MPI_INT, 1, TAG_RMA_CTL, p->comm);
        } else {
            MPI_Recv(&stop, 1, MPI_INT, 0, TAG_RMA_CTL, p->comm, MPI_STATUS_IGNORE);
        }
    }
    close_point(p);
    if (p->is_a) write_point(ctx, pair, name, bytes, w, iters, rse.n, stop, p->sync);
}

/* The byte at offset i of the pattern a rank writes before a check. */
static unsigned char pattern(size_t i, int who) { return (unsigned char)(i * 7 + 13 + 101 * who); }

static void fill(char *buf, size_t bytes, int op, int who) {
    if (op == ACC)
        for (size_t i = 0; i < bytes / 8; i++) ((double *)buf)[i] = (double)(i % 1000 + 1000 * who);
    else
        for (size_t i = 0; i < bytes; i++) buf[i] = (char)pattern(i, who);
}

/* First byte (or double) where `buf` differs from what the operation must leave, or -1. */
static long long first_wrong(const char *buf, size_t bytes, int op) {
    if (op == ACC) {
        for (size_t i = 0; i < bytes / 8; i++)
            if (((const double *)buf)[i] != (double)(2 * (i % 1000) + 1000)) return (long long)i * 8;
        return -1;
    }
    int who = op == PUT ? 1 : 0; /* put: a's pattern arrives at b, get: b's arrives at a */
    for (size_t i = 0; i < bytes; i++)
        if ((unsigned char)buf[i] != pattern(i, who)) return (long long)i;
    return -1;
}

static void check(const cs_pair *pair, const rma_pair *p, size_t bytes) {
    int sender = p->op == GET ? 0 : 1; /* who holds the data before: a for put/acc */
    memset(p->base, 0, p->cap);
    memset(p->local, 0, p->cap);
    if (p->op == ACC) fill(p->is_a ? p->local : p->base, bytes, ACC, !p->is_a);
    else if (p->is_a == sender) fill(p->is_a ? p->local : p->base, bytes, p->op, p->is_a);
    /* Fills before the operation, reads after it: a fence asserting no epoch may skip its
     * barrier (Open MPI's does), so a plain barrier orders the local stores. */
    MPI_Barrier(p->comm);
    open_point(p);
    epoch(p, bytes, 1, 1);
    close_point(p);
    MPI_Barrier(p->comm);
    long long bad = -1;
    if (p->op == GET ? p->is_a : !p->is_a) bad = first_wrong(p->op == GET ? p->local : p->base, bytes, p->op);
    MPI_Bcast(&bad, 1, MPI_LONG_LONG, p->op == GET ? 0 : 1, p->comm);
    if (bad >= 0)
        cs_die("rank %d: --check: %s under %s, pair %s, %zu bytes: byte %lld is wrong after the operation",
               p->is_a ? pair->a : pair->b, op_names[p->op], sync_names[p->sync], pair->label, bytes, bad);
}

static void run_pair(cs_context *ctx, const cs_pair *pair, rma_pair *p) {
    const cs_options *o = ctx->opt;
    for (int s = 0; s < o->nsizes; s++) {
        size_t bytes = o->sizes[s];
        if (bytes > (size_t)0x7fffffff) cs_die("rank %d: %zu bytes exceeds an int count", ctx->rank, bytes);
        for (p->op = 0; p->op < NOPS; p->op++) {
            if (!cs_list_has(o->rma_ops, op_names[p->op])) continue;
            if (p->op == ACC && bytes % 8)
                cs_die("rank %d: --sizes %zu: acc sums doubles; give multiples of 8", ctx->rank, bytes);
            for (p->sync = 0; p->sync < NSYNCS; p->sync++) {
                if (!cs_list_has(o->rma_sync, sync_names[p->sync])) continue;
                char lat[32], bw[32];
                snprintf(lat, sizeof lat, "%s_lat_%s", op_names[p->op], sync_names[p->sync]);
                snprintf(bw, sizeof bw, "%s_bw_%s", op_names[p->op], sync_names[p->sync]);
                int skip_lat = cs_options_skipped(o, lat, pair->label, bytes);
                int skip_bw = cs_options_skipped(o, bw, pair->label, bytes);
                if (!skip_lat) measure(ctx, pair, p, bytes, 0, lat);
                if (!skip_bw) measure(ctx, pair, p, bytes, window_for(o, bytes), bw);
                if (o->check && !(skip_lat && skip_bw)) check(pair, p, bytes);
            }
        }
    }
}

void cs_rma_run(cs_context *ctx, const cs_pair *pairs, int npairs) {
    const cs_options *o = ctx->opt;
    size_t max = 8;
    for (int i = 0; i < o->nsizes; i++) {
        size_t w = (size_t)window_for(o, o->sizes[i]) * o->sizes[i];
        if (w > max) max = w;
    }
    for (int i = 0; i < npairs; i++) {
        const cs_pair *pair = &pairs[i];
        int in = ctx->rank == pair->a || ctx->rank == pair->b;
        rma_pair p = {MPI_COMM_NULL, MPI_WIN_NULL, MPI_GROUP_NULL, NULL, NULL, max, ctx->rank == pair->a, 0, 0};
        if (in && pair->a != 0) cs_die("rank %d: pair %s does not start at rank 0", ctx->rank, pair->label);
        MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, ctx->rank == pair->a ? 0 : 1, &p.comm);
        if (in) {
            MPI_Group all;
            int other = p.is_a; /* a is 0, b is 1 */
            MPI_Comm_group(p.comm, &all);
            MPI_Group_incl(all, 1, &other, &p.peer);
            MPI_Group_free(&all);
            /* An MPI without a one-sided path between the two ranks fails here: say so. */
            MPI_Comm_set_errhandler(p.comm, MPI_ERRORS_RETURN);
            int rc = MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, p.comm, &p.base, &p.win);
            if (rc != MPI_SUCCESS) {
                char text[MPI_MAX_ERROR_STRING];
                int len = 0;
                MPI_Error_string(rc, text, &len);
                cs_die("rank %d: MPI_Win_allocate for pair %s failed (%s): this MPI has no one-sided "
                       "path between the ranks; Open MPI 4.1 across nodes over TCP needs --mca osc=ucx",
                       ctx->rank, pair->label, text);
            }
            p.local = cs_buffer_alloc(max);
            memset(p.base, 0, max);
            MPI_Barrier(p.comm); /* b's window is zeroed before a writes to it */
            run_pair(ctx, pair, &p);
            MPI_Win_free(&p.win);
            MPI_Group_free(&p.peer);
            MPI_Comm_free(&p.comm);
            cs_buffer_free(p.local);
        }
        if (ctx->nranks > 2) cs_idle_barrier();
    }
}
