/* Collective operations (all of MPI 2.2, the MPI-3 nonblocking ones; Alltoallw, the
 * neighbourhood and the persistent ones are in coll_extra.c) and the WaitPattern timing tests of Kurnosov 2012 (MPIPerf), measured with the window scheduler or the naive
 * barrier loop.
 *
 * `bytes` is one block: what one rank sends to one peer (the whole message for bcast).
 * Reductions use MPI_DOUBLE with MPI_SUM, so their block is bytes / 8 doubles.
 * The root is fixed for every launch of a point (Kurnosov 2012, error 3).
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"

#define W s->comm
static void c_barrier(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)s; (void)sb; (void)rb;
    if (rq) MPI_Ibarrier(W, rq); else MPI_Barrier(W);
}
static void c_bcast(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)rb;
    if (rq) MPI_Ibcast(sb, s->count, s->type, s->root, W, rq);
    else MPI_Bcast(sb, s->count, s->type, s->root, W);
}
static void c_gather(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count; MPI_Datatype t = s->type;
    if (s->op->vector) {
        if (rq) MPI_Igatherv(sb, c, t, rb, s->counts, s->displs, t, s->root, W, rq);
        else MPI_Gatherv(sb, c, t, rb, s->counts, s->displs, t, s->root, W);
    } else if (rq) MPI_Igather(sb, c, t, rb, c, t, s->root, W, rq);
    else MPI_Gather(sb, c, t, rb, c, t, s->root, W);
}
static void c_scatter(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count; MPI_Datatype t = s->type;
    if (s->op->vector) {
        if (rq) MPI_Iscatterv(sb, s->counts, s->displs, t, rb, c, t, s->root, W, rq);
        else MPI_Scatterv(sb, s->counts, s->displs, t, rb, c, t, s->root, W);
    } else if (rq) MPI_Iscatter(sb, c, t, rb, c, t, s->root, W, rq);
    else MPI_Scatter(sb, c, t, rb, c, t, s->root, W);
}
static void c_allgather(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count; MPI_Datatype t = s->type;
    if (s->op->vector) {
        if (rq) MPI_Iallgatherv(sb, c, t, rb, s->counts, s->displs, t, W, rq);
        else MPI_Allgatherv(sb, c, t, rb, s->counts, s->displs, t, W);
    } else if (rq) MPI_Iallgather(sb, c, t, rb, c, t, W, rq);
    else MPI_Allgather(sb, c, t, rb, c, t, W);
}
static void c_alltoall(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count; MPI_Datatype t = s->type; int *k = s->counts, *d = s->displs;
    if (s->op->vector) {
        if (rq) MPI_Ialltoallv(sb, k, d, t, rb, k, d, t, W, rq);
        else MPI_Alltoallv(sb, k, d, t, rb, k, d, t, W);
    } else if (rq) MPI_Ialltoall(sb, c, t, rb, c, t, W, rq);
    else MPI_Alltoall(sb, c, t, rb, c, t, W);
}
static void c_reduce(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Ireduce(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->root, W, rq);
    else MPI_Reduce(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->root, W);
}
static void c_allreduce(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Iallreduce(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W, rq);
    else MPI_Allreduce(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W);
}
static void c_redscat(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Ireduce_scatter(sb, rb, s->counts, MPI_DOUBLE, MPI_SUM, W, rq);
    else MPI_Reduce_scatter(sb, rb, s->counts, MPI_DOUBLE, MPI_SUM, W);
}
static void c_redscat_block(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Ireduce_scatter_block(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W, rq);
    else MPI_Reduce_scatter_block(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W);
}
static void c_scan(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Iscan(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W, rq);
    else MPI_Scan(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W);
}
static void c_exscan(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    if (rq) MPI_Iexscan(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W, rq);
    else MPI_Exscan(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, W);
}
/* The block All-to-all of Peryshkova and Kurnosov 2018 (contention-aware placement):
 * batches of `block` receives and sends, then Waitall. */
static void c_alltoall_block(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)rq;
    int p = s->n, r = s->rank, block = s->ctx->opt->block > 0 ? s->ctx->opt->block : p;
    for (int ii = 0; ii < p; ii += block) {
        int ss = block < p - ii ? block : p - ii;
        for (int i = 0; i < ss; i++) {
            int src = (r + i + ii) % p;
            MPI_Irecv(rb + (size_t)src * s->block, s->count, MPI_BYTE, src, 41, s->comm,
                      &s->reqs[i]);
        }
        for (int i = 0; i < ss; i++) {
            int dst = (r - i - ii + p) % p;
            MPI_Isend(sb + (size_t)dst * s->block, s->count, MPI_BYTE, dst, 41, s->comm,
                      &s->reqs[ss + i]);
        }
        MPI_Waitall(2 * ss, s->reqs, MPI_STATUSES_IGNORE);
    }
}

static void c_wait_null(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)s; (void)sb; (void)rb; (void)rq; /* returns at once: true time 0 */
}
static void c_wait_up(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)sb; (void)rb; (void)rq; /* rank i busy-waits (i + 1) us: true time n us */
    double (*now)(void) = s->ctx->timer->now, until = now() + (s->rank + 1) * 1e-6;
    while (now() < until) {}
}
#undef W

#define PAIR(name, kind, vec, fn) {name, kind, vec, 0, fn, 0, 0}, {"i" name, kind, vec, 1, fn, 0, 0}
/* Neighbourhood collectives on a periodic 1-D ring and a periodic 2-D grid (MPI_Dims_create). */
#define GRIDS(name, kind, fn) {name "_1d", kind, 0, 0, fn, 1, 0}, {"i" name "_1d", kind, 0, 1, fn, 1, 0}, \
                              {name "_2d", kind, 0, 0, fn, 2, 0}, {"i" name "_2d", kind, 0, 1, fn, 2, 0}
static const cs_coll_op ops[] = {
    PAIR("barrier", BARRIER, 0, c_barrier),
    PAIR("bcast", BCAST, 0, c_bcast),
    PAIR("gather", GATHER, 0, c_gather),
    PAIR("gatherv", GATHER, 1, c_gather),
    PAIR("scatter", SCATTER, 0, c_scatter),
    PAIR("scatterv", SCATTER, 1, c_scatter),
    PAIR("allgather", ALLGATHER, 0, c_allgather),
    PAIR("allgatherv", ALLGATHER, 1, c_allgather),
    PAIR("alltoall", ALLTOALL, 0, c_alltoall),
    PAIR("alltoallv", ALLTOALL, 1, c_alltoall),
    PAIR("reduce", REDUCE, 0, c_reduce),
    PAIR("allreduce", ALLREDUCE, 0, c_allreduce),
    PAIR("reduce_scatter", REDSCAT, 0, c_redscat),
    PAIR("reduce_scatter_block", REDSCAT_BLOCK, 0, c_redscat_block),
    PAIR("scan", SCAN, 0, c_scan),
    PAIR("exscan", EXSCAN, 0, c_exscan),
    {"alltoall_block", ALLTOALL, 0, 0, c_alltoall_block, 0, 0},
    {"waitpattern_null", WAIT_NULL, 0, 0, c_wait_null, 0, 0},
    {"waitpattern_up", WAIT_UP, 0, 0, c_wait_up, 0, 0},
    PAIR("alltoallw", ALLTOALL, 2, c_alltoallw),
    GRIDS("neighbor_allgather", NBR_ALLGATHER, c_nbr_allgather),
    GRIDS("neighbor_alltoall", NBR_ALLTOALL, c_nbr_alltoall),
    {"bcast_init", BCAST, 0, 0, c_bcast_init, 0, 1},
    {"reduce_init", REDUCE, 0, 0, c_reduce_init, 0, 1},
    {"allreduce_init", ALLREDUCE, 0, 0, c_allreduce_init, 0, 1},
    {"allgather_init", ALLGATHER, 0, 0, c_allgather_init, 0, 1},
    {"alltoall_init", ALLTOALL, 0, 0, c_alltoall_init, 0, 1},
    {"barrier_init", BARRIER, 0, 0, c_barrier_init, 0, 1},
    {"reduce_scatter_block_init", REDSCAT_BLOCK, 0, 0, c_redscat_block_init, 0, 1},
    {"scan_init", SCAN, 0, 0, c_scan_init, 0, 1},
    {"exscan_init", EXSCAN, 0, 0, c_exscan_init, 0, 1},
};
#undef PAIR
#undef GRIDS
#define NOPS (sizeof ops / sizeof ops[0])

const cs_coll_op *cs_coll_find(const char *name) {
    for (size_t i = 0; i < NOPS; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}

const char *cs_coll_names(void) {
    static char names[2048];
    if (!names[0])
        for (size_t i = 0; i < NOPS; i++) {
            if (i) strcat(names, ",");
            strcat(names, ops[i].name);
        }
    return names;
}

int cs_coll_sizeless(const cs_coll_op *op) {
    return op->kind == BARRIER || op->kind == WAIT_NULL || op->kind == WAIT_UP;
}

static int reduction(const cs_coll_op *op) { return op->kind >= REDUCE && op->kind <= EXSCAN; }

static void launch(void *state, long i) {
    coll_state *s = state;
    char *sb = s->sbufs[i % s->nbufs], *rb = s->rbufs[i % s->nbufs];
    if (s->op->persistent) {
        MPI_Start(&s->preqs[i % s->nbufs]);
        MPI_Wait(&s->preqs[i % s->nbufs], MPI_STATUS_IGNORE);
    } else if (s->op->nonblocking) {
        MPI_Request rq;
        s->op->call(s, sb, rb, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        s->op->call(s, sb, rb, NULL);
    }
}

static size_t last_level_cache(void) {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return llc > 0 ? (size_t)llc : (size_t)32 << 20;
}

static void setup(coll_state *s, cs_context *ctx, const cs_coll_op *op, size_t bytes) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->op = op;
    s->comm = cs_comm(ctx);
    s->n = ctx->nranks;
    s->rank = ctx->rank;
    s->root = ctx->opt->root;
    s->type = reduction(op) ? MPI_DOUBLE : MPI_BYTE;
    s->count = (int)(reduction(op) ? bytes / 8 : bytes);
    s->block = (size_t)s->count * (reduction(op) ? 8 : 1);
    s->bytes = s->block;
    s->counts = malloc(sizeof(int) * (size_t)s->n);
    s->displs = malloc(sizeof(int) * (size_t)s->n);
    s->reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)s->n);
    if (!s->counts || !s->displs || !s->reqs) cs_die("rank %d: out of memory", ctx->rank);
    for (int i = 0; i < s->n; i++) s->counts[i] = s->count, s->displs[i] = i * s->count;
    size_t each = (size_t)coll_blocks(op, s->n) * s->block;
    s->nbufs = 1;
    if (strcmp(ctx->opt->buffers, "cold") == 0) { /* a rotation larger than twice the last-level cache */
        size_t want = 2 * last_level_cache() / (2 * (each ? each : 1)) + 1;
        s->nbufs = want < 2 ? 2 : want > 65536 ? 65536 : (int)want;
    }
    s->sbufs = malloc(sizeof(char *) * (size_t)s->nbufs);
    s->rbufs = malloc(sizeof(char *) * (size_t)s->nbufs);
    if (!s->sbufs || !s->rbufs) cs_die("rank %d: out of memory", ctx->rank);
    for (int b = 0; b < s->nbufs; b++) {
        s->sbufs[b] = cs_buffer_alloc(each);
        s->rbufs[b] = cs_buffer_alloc(each);
    }
    coll_extra_setup(s);
}

static void teardown(coll_state *s) {
    coll_extra_teardown(s);
    for (int b = 0; b < s->nbufs; b++) cs_buffer_free(s->sbufs[b]), cs_buffer_free(s->rbufs[b]);
    free(s->sbufs); free(s->rbufs); free(s->counts); free(s->displs); free(s->reqs);
}

/* --check: fill known data, run once, compare with what MPI must deliver. */
static unsigned char pattern(int src, int blk, size_t i) {
    return (unsigned char)((src * 37 + blk * 11 + (int)i) & 0xff);
}

/* The block at buf must be what rank src put in its block blk_of_src. */
void expect_bytes(coll_state *s, const char *buf, int src, int blk_of_src) {
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t i = 0; i < s->block; i++)
        if (p[i] != pattern(src, blk_of_src, i))
            cs_die("rank %d: --check: %s of %zu bytes delivered wrong data from rank %d (byte %zu)",
                   s->rank, s->op->name, s->bytes, src, i);
}

static void expect_doubles(coll_state *s, const char *buf, int blk_rot, double base, double mul) {
    const double *d = (const double *)buf;
    for (int e = 0; e < s->count; e++) {
        double want = base + mul * ((blk_rot + e) % 3);
        if (d[e] != want)
            cs_die("rank %d: --check: %s of %zu bytes gave %g at element %d, expected %g",
                   s->rank, s->op->name, s->bytes, d[e], e, want);
    }
}

static void check(coll_state *s) {
    char *sb = s->sbufs[0], *rb = s->rbufs[0];
    int n = s->n, r = s->rank, root = s->root;
    if (reduction(s->op)) {
        double *d = (double *)sb;
        for (int b = 0; b < n; b++)
            for (int e = 0; e < s->count; e++) d[(size_t)b * s->count + e] = r + 1 + (b + e) % 3;
    } else {
        for (int b = 0; b < coll_blocks(s->op, n); b++)
            for (size_t i = 0; i < s->block; i++) sb[(size_t)b * s->block + i] = (char)pattern(r, b, i);
    }
    launch(s, 0);
    double all = n * (n + 1) / 2.0;
    switch (s->op->kind) {
    case BCAST: expect_bytes(s, sb, root, 0); break;
    case GATHER:
        if (r == root) for (int b = 0; b < n; b++) expect_bytes(s, rb + (size_t)b * s->block, b, 0);
        break;
    case SCATTER: expect_bytes(s, rb, root, r); break;
    case ALLGATHER: for (int b = 0; b < n; b++) expect_bytes(s, rb + (size_t)b * s->block, b, 0); break;
    case ALLTOALL: for (int b = 0; b < n; b++) expect_bytes(s, rb + (size_t)b * s->block, b, r); break;
    case REDUCE: if (r == root) expect_doubles(s, rb, 0, all, n); break;
    case ALLREDUCE: expect_doubles(s, rb, 0, all, n); break;
    case REDSCAT: case REDSCAT_BLOCK: expect_doubles(s, rb, r, all, n); break;
    case SCAN: expect_doubles(s, rb, 0, (r + 1) * (r + 2) / 2.0, r + 1); break;
    case EXSCAN: if (r > 0) expect_doubles(s, rb, 0, r * (r + 1) / 2.0, r); break;
    case NBR_ALLGATHER: case NBR_ALLTOALL: coll_neighbor_check(s, rb); break;
    default: break;
    }
}

/* OSU-style overlap of a nonblocking collective with a busy loop as long as the operation. */
static void overlap(coll_state *s, double out[4]) {
    enum { ITERS = 20 };
    double (*now)(void) = s->ctx->timer->now;
    MPI_Request rq;
    MPI_Barrier(s->comm);
    cs_trace_phase(1); /* both loops are the benchmark's traffic, the reductions are not */
    double t0 = now();
    for (int i = 0; i < ITERS; i++) launch(s, i);
    double pure = (now() - t0) / ITERS, cpu = 0.0;
    cs_trace_phase(0);
    MPI_Allreduce(MPI_IN_PLACE, &pure, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    MPI_Barrier(s->comm);
    cs_trace_phase(1);
    t0 = now();
    for (int i = 0; i < ITERS; i++) {
        s->op->call(s, s->sbufs[i % s->nbufs], s->rbufs[i % s->nbufs], &rq);
        double c0 = now(), until = c0 + pure;
        while (now() < until) {} /* computation that never enters MPI */
        cpu += now() - c0;
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
    double total = (now() - t0) / ITERS;
    cs_trace_phase(0);
    cpu /= ITERS;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    double pct = pure > 0 ? 100.0 * (1.0 - (total - cpu) / pure) : 0.0;
    out[0] = pure, out[1] = cpu, out[2] = total;
    out[3] = pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

static void write_record(cs_context *ctx, coll_state *s, const char *group,
                         const cs_sched_result *res, const double *ov, const double *clock) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "coll");
    cs_json_str(&j, "op", s->op->name);
    cs_json_str(&j, "group", group);
    cs_json_int(&j, "nranks", s->n);
    cs_json_int(&j, "bytes", (long long)s->bytes);
    int rooted = s->op->kind == BCAST || s->op->kind == GATHER || s->op->kind == SCATTER ||
                 s->op->kind == REDUCE;
    cs_json_key(&j, "root");
    if (rooted) fprintf(stdout, "%d", s->root);
    else fputs("null", stdout);
    cs_json_str(&j, "method", strcmp(ctx->opt->sync, "barrier") == 0 ? "barrier" : "window");
    cs_json_str(&j, "buffers", ctx->opt->buffers);
    cs_json_raw_begin(&j, "times_s", '[');
    for (int i = 0; i < res->n; i++) cs_json_elem_num(&j, res->times_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "flags", '[');
    for (int i = 0; i < res->n; i++) cs_json_elem_int(&j, res->flags[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "start_delays_s", '[');
    for (int i = 0; i < res->n; i++) cs_json_elem_num(&j, res->delays_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "stage", '[');
    for (int i = 0; i < res->n; i++) cs_json_elem_int(&j, res->stage[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "windows_s", '[');
    for (int i = 0; i < res->nstages; i++) cs_json_elem_num(&j, res->windows_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_str(&j, "stop", res->stop ? res->stop : "max_launches");
    if (res->late_tol_s > 0) cs_json_num(&j, "late_tol_s", res->late_tol_s);
    if (clock) {
        cs_json_raw_begin(&j, "clock_check", '{');
        cs_json_num(&j, "error_s", clock[0]);
        cs_json_num(&j, "unexplained_s", clock[1]);
        cs_json_raw_end(&j, '}');
    }
    if (ov) {
        cs_json_raw_begin(&j, "overlap", '{');
        cs_json_num(&j, "pure_s", ov[0]);
        cs_json_num(&j, "cpu_s", ov[1]);
        cs_json_num(&j, "total_s", ov[2]);
        cs_json_num(&j, "overlap_pct", ov[3]);
        cs_json_raw_end(&j, '}');
    }
    cs_json_end(&j);
    ctx->npoints++;
}

void cs_coll_measure(cs_context *ctx, const cs_coll_op *op, size_t bytes, const char *group) {
    const cs_options *o = ctx->opt;
    if (cs_coll_sizeless(op)) bytes = 0;
    if (bytes / (reduction(op) ? 8 : 1) * (size_t)ctx->nranks > 0x7fffffffu)
        cs_die("rank %d: %s of %zu bytes on %d ranks exceeds an int count", ctx->rank, op->name,
               bytes, ctx->nranks);
    coll_state s;
    setup(&s, ctx, op, bytes);
    if (o->check && !cs_coll_sizeless(op)) check(&s);
    int kmax = o->k > o->k0 ? o->k : o->k0;
    size_t cap = (size_t)o->max_launches + (size_t)kmax;
    cs_sched_result res = {.times_s = malloc(sizeof(double) * cap),
                           .flags = malloc(sizeof(int) * cap),
                           .delays_s = malloc(sizeof(double) * cap),
                           .stage = malloc(sizeof(int) * cap),
                           .windows_s = malloc(sizeof(double) * cap)};
    if (!res.times_s || !res.flags || !res.delays_s || !res.stage || !res.windows_s)
        cs_die("rank %d: out of memory for %zu launches", ctx->rank, cap);
    int windowed = strcmp(o->sync, "barrier") != 0;
    if (windowed && strcmp(o->resync, "point") == 0) cs_clock_resync(ctx);
    if (windowed) cs_schedule_run(ctx, launch, &s, &res);
    else cs_naive_run(ctx, launch, &s, &res);
    double ov[4], clock[2];
    if (op->nonblocking && op->kind != BARRIER) overlap(&s, ov);
    if (windowed) cs_clock_recheck(ctx, clock); /* did the clocks hold during the point? */
    if (ctx->rank == 0)
        write_record(ctx, &s, group, &res, op->nonblocking && op->kind != BARRIER ? ov : NULL,
                     windowed ? clock : NULL);
    free(res.times_s); free(res.flags); free(res.delays_s); free(res.stage); free(res.windows_s);
    teardown(&s);
}
