/* Every rank paired with others at once: the all-pairs matrix and the effective bisection.
 *
 * matrix:    LLNL's mpiGraph method (Moody): at step k = 1..n-1 rank i sends to (i + k) mod n
 *            and receives from (i - k) mod n, all ranks at once, so every ordered pair is
 *            measured while the whole network carries traffic. Per step, a window of
 *            nonblocking messages gives each pair's bandwidth (timed by the receiver, from a
 *            common barrier to its last receive: matrix_bw, pair "src->dst"), and a
 *            concurrent ping-pong its latency (rank i pings (i + k) mod n and answers
 *            (i - k) mod n: matrix_lat, half the round trip). --matrix-schedule serial
 *            measures one ordered pair at a time instead, the rest idle.
 * bisection: Netgauge's effective bisection bandwidth (Hoefler, Schneider and Lumsdaine 2008,
 *            "Multistage switches are not crossbars: effects of static routing in
 *            high-performance networks"): --bisection-reps random perfect matchings of the
 *            ranks, each drawn from --bisection-seed and its number alone (so a resumed run
 *            draws the same ones); in each, the first of every pair sends a window to the
 *            second, all pairs at once (bisection_bw, pair "m<r>/src->dst").
 *
 * --matrix-plan measures chosen rounds instead of every shift (commscope builds it: its quick,
 * sampled and file modes, and the confirmation rounds): shift:K,... (rank i sends to i+K),
 * sample:K (K shifts drawn from --bisection-seed), xor:M,... (i and i^M, each direction in a
 * round of its own, as at k = n/2 below), pairs:A>B,...;C>D,... (rounds of ordered rank
 * pairs; a rank sends to one and receives from one per round at most) or names:a>b,...;...
 * (the same by node name: the node's first rank). --matrix-prefix puts c<r>/ before the pairs
 * of confirmation round r.
 *
 * A sample is one window (or one round trip); each point gets --matrix-samples of them after
 * one untimed exchange. Every rank measures its own pair, rank 0 gathers and writes.
 */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

enum { TAG_WIN = 51, TAG_PING = 52, TAG_PONG = 53 };
#define CS_MATRIX_LAT_BYTES 8
#define CS_MATRIX_WINDOW_CAP (64u << 20) /* bytes one window keeps in flight at most */

static char *sbuf, *rbuf;
static char ping_out[CS_MATRIX_LAT_BYTES], ping_in[CS_MATRIX_LAT_BYTES],
    pong_in[CS_MATRIX_LAT_BYTES];
static MPI_Request *reqs;
static double *mine, *all; /* this rank's samples; every rank's (rank 0) */
static int *perm;
static int *plan_dst, *plan_src; /* --matrix-plan: per round, each rank's partners (-1: none) */
static int plan_rounds;

void cs_pairs_init(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    if (ctx->nranks < 2) cs_die("rank %d: matrix and bisection need at least 2 ranks", ctx->rank);
    size_t max = 1;
    for (int i = 0; i < o->nmatrix_sizes; i++)
        if (o->matrix_sizes[i] > max) max = o->matrix_sizes[i];
    if (max > (size_t)0x7fffffff) cs_die("rank %d: %zu bytes exceeds an int count", ctx->rank, max);
    sbuf = cs_buffer_alloc(max);
    rbuf = cs_buffer_alloc(max);
    memset(sbuf, 'm', max);
    size_t m = (size_t)o->matrix_samples;
    reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)o->matrix_window);
    mine = malloc(sizeof(double) * m);
    all = malloc(sizeof(double) * m * (size_t)ctx->nranks);
    perm = malloc(sizeof(int) * (size_t)ctx->nranks);
    if (!reqs || !mine || !all || !perm) cs_die("rank %d: out of memory for the matrix", ctx->rank);
}

/* Waits for requests, giving the core away between polls: on a core of its own the yield
 * returns at once, on a shared one (ranks on few cores, the virtual cluster) a rank waiting
 * for a slow link must not hold up the ranks still moving data. Under SMPI a poll and a
 * yield cost simulated time, which the matrix would measure as network: there the calls
 * block. */
static void wait_all(int n, MPI_Request *r) {
#ifdef CS_SIMULATED
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
#else
    int done = 0;
    for (MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE); !done;
         MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE))
        sched_yield();
#endif
}

static int wait_any(int n, MPI_Request *r) {
    int idx = MPI_UNDEFINED;
#ifdef CS_SIMULATED
    MPI_Waitany(n, r, &idx, MPI_STATUS_IGNORE);
#else
    int done = 0;
    for (MPI_Testany(n, r, &idx, &done, MPI_STATUS_IGNORE); !done;
         MPI_Testany(n, r, &idx, &done, MPI_STATUS_IGNORE))
        sched_yield();
#endif
    return idx;
}

static int window_for(size_t bytes, int w) {
    if (bytes > 0 && (size_t)w * bytes > CS_MATRIX_WINDOW_CAP) {
        size_t fit = CS_MATRIX_WINDOW_CAP / bytes;
        w = fit < 1 ? 1 : (int)fit;
    }
    return w;
}

/* After a barrier, send a window to dst and receive one from src (-1: none). Returns the time
 * from the barrier to this rank's last receive (0 without src). */
static double window_step(cs_context *ctx, int dst, int src, int c, int w) {
    double (*now)(void) = ctx->timer->now;
    cs_step_start(ctx); /* sleeps: with more ranks than cores, waiting ranks must not spin */
    double t0 = now();
    int nr = src >= 0 ? w : 0;
    for (int i = 0; i < nr; i++)
        MPI_Irecv(rbuf, c, MPI_BYTE, src, TAG_WIN, MPI_COMM_WORLD, &reqs[i]);
    int ns = dst >= 0 ? w : 0;
    for (int i = 0; i < ns; i++)
        MPI_Isend(sbuf, c, MPI_BYTE, dst, TAG_WIN, MPI_COMM_WORLD, &reqs[nr + i]);
    wait_all(nr, reqs);
    double t1 = now();
    wait_all(ns, reqs + nr);
    return nr ? t1 - t0 : 0.0;
}

/* Ping dst and answer src's ping, both at once; returns half of this rank's round trip to dst
 * (0 without dst). Either first: a late ping from src must not stretch the round trip to dst. */
static double ping_step(cs_context *ctx, int dst, int src) {
    double (*now)(void) = ctx->timer->now;
    MPI_Request r[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    cs_step_start(ctx);
    if (src >= 0)
        MPI_Irecv(ping_in, CS_MATRIX_LAT_BYTES, MPI_BYTE, src, TAG_PING, MPI_COMM_WORLD, &r[0]);
    if (dst >= 0)
        MPI_Irecv(pong_in, CS_MATRIX_LAT_BYTES, MPI_BYTE, dst, TAG_PONG, MPI_COMM_WORLD, &r[1]);
    double t0 = now(), t1 = t0;
    if (dst >= 0)
        MPI_Isend(ping_out, CS_MATRIX_LAT_BYTES, MPI_BYTE, dst, TAG_PING, MPI_COMM_WORLD, &r[2]);
    for (int left = (src >= 0) + (dst >= 0); left > 0; left--) {
        int idx = wait_any(2, r);
        if (idx == 0)
            MPI_Isend(ping_in, CS_MATRIX_LAT_BYTES, MPI_BYTE, src, TAG_PONG, MPI_COMM_WORLD, &r[3]);
        else t1 = now();
    }
    wait_all(2, r + 2);
    return (t1 - t0) / 2.0;
}

typedef struct step {
    int dst, src;   /* this rank's partners, -1 for none */
    int *measurer;  /* per rank: 1 when it measured a pair in this step */
    int *a, *b;     /* per rank: the pair it measured */
} step;

/* Gathers every rank's samples and writes one point per measured pair not yet stored. */
static void collect(cs_context *ctx, const char *op, const char *prefix, const step *st,
                    size_t bytes, long long per_sample, int w, int n) {
    MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0) return;
    for (int r = 0; r < ctx->nranks; r++) {
        if (!st->measurer[r]) continue;
        char label[64];
        snprintf(label, sizeof label, "%s%d->%d", prefix, st->a[r], st->b[r]);
        if (cs_options_skipped(ctx->opt, op, label, bytes)) continue;
        cs_json j;
        cs_json_begin(&j, stdout);
        cs_json_str(&j, "type", "point");
        cs_json_str(&j, "op", op);
        cs_json_str(&j, "pair", label);
        cs_json_raw_begin(&j, "ranks", '[');
        cs_json_elem_int(&j, st->a[r]);
        cs_json_elem_int(&j, st->b[r]);
        cs_json_raw_end(&j, ']');
        cs_json_int(&j, "bytes", (long long)bytes);
        cs_json_int(&j, "bytes_per_sample", per_sample);
        cs_json_int(&j, "window", w);
        cs_json_int(&j, "iters_per_sample", 1);
        cs_json_int(&j, "warmup", 1);
        cs_json_raw_begin(&j, "samples_s", '[');
        for (int i = 0; i < n; i++) cs_json_elem_num(&j, all[(size_t)r * (size_t)n + (size_t)i]);
        cs_json_raw_end(&j, ']');
        cs_json_str(&j, "stop", "max_samples");
        cs_json_end(&j);
        ctx->npoints++;
    }
}

/* 1 when every pair this step measures is stored already (every rank decides alike). */
static int all_skipped(const cs_context *ctx, const char *op, const char *prefix,
                       const step *st, size_t bytes) {
    for (int r = 0; r < ctx->nranks; r++) {
        if (!st->measurer[r]) continue;
        char label[64];
        snprintf(label, sizeof label, "%s%d->%d", prefix, st->a[r], st->b[r]);
        if (!cs_options_skipped(ctx->opt, op, label, bytes)) return 0;
    }
    return 1;
}

/* Bandwidth of one step: receivers measure, pairs are src -> receiver. */
static void bw_step(cs_context *ctx, const char *op, const char *prefix, step *st, size_t bytes) {
    if (all_skipped(ctx, op, prefix, st, bytes)) return;
    int w = window_for(bytes, ctx->opt->matrix_window), n = ctx->opt->matrix_samples;
    window_step(ctx, st->dst, st->src, (int)bytes, w);
    for (int i = 0; i < n; i++) mine[i] = window_step(ctx, st->dst, st->src, (int)bytes, w);
    collect(ctx, op, prefix, st, bytes, (long long)w * (long long)bytes, w, n);
}

/* Latency of one step: pingers measure, pairs are pinger -> dst. */
static void lat_step(cs_context *ctx, const char *prefix, step *st) {
    if (all_skipped(ctx, "matrix_lat", prefix, st, CS_MATRIX_LAT_BYTES)) return;
    int n = ctx->opt->matrix_samples;
    ping_step(ctx, st->dst, st->src);
    for (int i = 0; i < n; i++) mine[i] = ping_step(ctx, st->dst, st->src);
    collect(ctx, "matrix_lat", prefix, st, CS_MATRIX_LAT_BYTES, CS_MATRIX_LAT_BYTES, 1, n);
}

static void step_alloc(step *st, int n) {
    st->measurer = calloc((size_t)n, sizeof(int));
    st->a = calloc((size_t)n, sizeof(int));
    st->b = calloc((size_t)n, sizeof(int));
    if (!st->measurer || !st->a || !st->b) cs_die("out of memory for %d ranks", n);
}

static void step_free(step *st) {
    free(st->measurer);
    free(st->a);
    free(st->b);
}

/* Step k of the shifted schedule; by_receiver: pairs named by who receives (bandwidth) or by
 * who pings (latency). Serial: one ordered pair (k encodes a * n + b). half >= 0: only the
 * ranks below n / 2 send (half 0) or only the others (half 1). */
static void plan(step *st, int me, int n, int k, int serial, int by_receiver, int half) {
    for (int r = 0; r < n; r++) {
        int sends = half < 0 || (r < n / 2) == (half == 0);
        int a = serial ? k / n : by_receiver ? (r - k + n) % n : r;
        int b = serial ? k % n : by_receiver ? r : (r + k) % n;
        st->measurer[r] = serial ? r == (by_receiver ? b : a) : half < 0 || sends != by_receiver;
        st->a[r] = a, st->b[r] = b;
    }
    if (serial) {
        int a = k / n, b = k % n;
        st->dst = me == a ? b : -1;
        st->src = me == b ? a : -1;
        return;
    }
    int sends = half < 0 || (me < n / 2) == (half == 0);
    st->dst = sends ? (me + k) % n : -1;
    st->src = half < 0 || !sends ? (me - k + n) % n : -1;
}

/* Adds one round to the plan: a sends to b for every (a, b) in pairs[0..np). */
static void plan_round(cs_context *ctx, const int *pairs, int np) {
    int n = ctx->nranks, r = plan_rounds++;
    plan_dst = realloc(plan_dst, sizeof(int) * (size_t)n * (size_t)plan_rounds);
    plan_src = realloc(plan_src, sizeof(int) * (size_t)n * (size_t)plan_rounds);
    if (!plan_dst || !plan_src) cs_die("rank %d: out of memory for the matrix plan", ctx->rank);
    int *dst = plan_dst + (size_t)r * (size_t)n, *src = plan_src + (size_t)r * (size_t)n;
    for (int i = 0; i < n; i++) dst[i] = src[i] = -1;
    for (int i = 0; i < np; i++) {
        int a = pairs[2 * i], b = pairs[2 * i + 1];
        if (a < 0 || b < 0 || a >= n || b >= n || a == b)
            cs_die("--matrix-plan: pair %d>%d is not two of the %d ranks", a, b, n);
        if (dst[a] >= 0 || src[b] >= 0)
            cs_die("--matrix-plan: rank %d sends or rank %d receives twice in round %d", a, b,
                   r + 1);
        dst[a] = b, src[b] = a;
    }
}

static uint64_t next(uint64_t *x);

/* The first rank on node name[0..len) (rank 0 knows every rank's node), or -1. */
static int rank_of(const cs_context *ctx, const char *name, size_t len) {
    for (int r = 0; r < ctx->nranks; r++)
        if (strlen(ctx->topo->ranks[r].node) == len &&
            strncmp(ctx->topo->ranks[r].node, name, len) == 0)
            return r;
    return -1;
}

/* names:a>b,...;...: rank 0 turns the names into ranks (-1 ends a round) and shares them. */
static void names_plan(cs_context *ctx, const char *p) {
    int len = 0, cap = 0, *flat = NULL;
    while (ctx->rank == 0 && *p) {
        for (int end = 0; end < 2; end++) {
            size_t span = strcspn(p, ">,;");
            int r = rank_of(ctx, p, span);
            if (r < 0) cs_die("--matrix-plan: node %.*s runs no rank of this job", (int)span, p);
            if (len + 3 > cap) {
                cap = 2 * cap + 64;
                flat = realloc(flat, sizeof(int) * (size_t)cap);
                if (!flat) cs_die("rank 0: out of memory for the matrix plan");
            }
            flat[len++] = r;
            p += span;
            if (end == 0 && *p++ != '>') cs_die("--matrix-plan: a>b expected in names:");
        }
        if (*p == ';' || *p == '\0') flat[len++] = -1;
        if (*p && *p != ',' && *p != ';') cs_die("--matrix-plan: unexpected '%s'", p);
        p += *p != '\0';
    }
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0 && len > 0 && !(flat = malloc(sizeof(int) * (size_t)len)))
        cs_die("rank %d: out of memory for the matrix plan", ctx->rank);
    MPI_Bcast(flat, len, MPI_INT, 0, MPI_COMM_WORLD);
    int np = 0, *pairs = malloc(sizeof(int) * 2 * (size_t)ctx->nranks);
    if (!pairs) cs_die("rank %d: out of memory for the matrix plan", ctx->rank);
    for (int i = 0; i < len; i++) {
        if (flat[i] < 0) {
            plan_round(ctx, pairs, np), np = 0;
            continue;
        }
        if (np >= ctx->nranks) cs_die("--matrix-plan: more pairs in a round than ranks");
        pairs[2 * np] = flat[i], pairs[2 * np + 1] = flat[i + 1], np++, i++;
    }
    free(pairs);
    free(flat);
}

/* The shifts of sample:K: K distinct ones of 1 .. n-1, drawn alike on every rank. */
static void sample_round(cs_context *ctx, long k) {
    int n = ctx->nranks;
    if (k < 1 || k >= n) cs_die("--matrix-plan: sample %ld is not 1 .. %d", k, n - 1);
    int *shifts = malloc(sizeof(int) * (size_t)n), *pairs = malloc(sizeof(int) * 2 * (size_t)n);
    if (!shifts || !pairs) cs_die("rank %d: out of memory for the matrix plan", ctx->rank);
    for (int i = 0; i < n - 1; i++) shifts[i] = i + 1;
    uint64_t x = (uint64_t)ctx->opt->bisection_seed * 1000003ULL + 7;
    for (int i = 0; i < k; i++) { /* a partial Fisher-Yates shuffle: the first k */
        int j = i + (int)(next(&x) % (uint64_t)(n - 1 - i));
        int t = shifts[i];
        shifts[i] = shifts[j], shifts[j] = t;
    }
    for (int i = 0; i < k; i++) {
        int s = shifts[i];
        for (int h = 0; h < (2 * s == n ? 2 : 1); h++) {
            int np = 0;
            for (int r = 0; r < n; r++)
                if (2 * s != n || (r < n / 2) == (h == 0))
                    pairs[2 * np] = r, pairs[2 * np + 1] = (r + s) % n, np++;
            plan_round(ctx, pairs, np);
        }
    }
    free(shifts);
    free(pairs);
}

/* Reads --matrix-plan into rounds (every rank alike: the text is the same on every rank). */
static void parse_plan(cs_context *ctx) {
    const char *text = ctx->opt->matrix_plan;
    int n = ctx->nranks, *pairs = malloc(sizeof(int) * 2 * (size_t)n), np = 0;
    if (!pairs) cs_die("rank %d: out of memory for the matrix plan", ctx->rank);
    plan_rounds = 0;
    const char *p = strchr(text, ':');
    if (!p) cs_die("--matrix-plan %s: give shift:K,..., xor:M,... or pairs:A>B,...", text);
    size_t kind = (size_t)(p - text);
    if (kind == 5 && strncmp(text, "names", 5) == 0) {
        free(pairs);
        names_plan(ctx, p + 1);
        return;
    }
    for (p++; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) cs_die("--matrix-plan: a number expected at '%s'", p);
        if (strncmp(text, "sample", kind) == 0 && kind == 6) {
            sample_round(ctx, x);
        } else if (strncmp(text, "shift", kind) == 0 && kind == 5) {
            if (x < 1 || x >= n) cs_die("--matrix-plan: shift %ld is not 1 .. %d", x, n - 1);
            for (int h = 0; h < (2 * x == n ? 2 : 1); h++) { /* k = n/2: one direction a round */
                np = 0;
                for (int i = 0; i < n; i++)
                    if (2 * x != n || (i < n / 2) == (h == 0))
                        pairs[2 * np] = i, pairs[2 * np + 1] = (int)((i + x) % n), np++;
                plan_round(ctx, pairs, np);
            }
        } else if (strncmp(text, "xor", kind) == 0 && kind == 3) {
            if (x < 1) cs_die("--matrix-plan: xor mask %ld is not positive", x);
            for (int h = 0; h < 2; h++) { /* the lower rank sends, then the higher one */
                np = 0;
                for (int i = 0; i < n; i++) {
                    int j = (int)(i ^ x);
                    if (j < n && (i < j) == (h == 0)) pairs[2 * np] = i, pairs[2 * np + 1] = j, np++;
                }
                if (np) plan_round(ctx, pairs, np);
            }
        } else if (strncmp(text, "pairs", kind) == 0 && kind == 5) {
            if (*end != '>') cs_die("--matrix-plan: A>B expected at '%s'", p);
            char *bend;
            long y = strtol(end + 1, &bend, 10);
            if (bend == end + 1 || np >= n) cs_die("--matrix-plan: bad pair at '%s'", p);
            pairs[2 * np] = (int)x, pairs[2 * np + 1] = (int)y, np++;
            end = bend;
            if (*end == ';' || *end == '\0') plan_round(ctx, pairs, np), np = 0;
        } else {
            cs_die("--matrix-plan %s: give shift:K,..., sample:K, xor:M,..., pairs:A>B,... or"
                   " names:a>b,...", text);
        }
        if (*end && *end != ',' && *end != ';') cs_die("--matrix-plan: unexpected '%s'", end);
        p = *end ? end + 1 : end;
    }
    free(pairs);
}

/* The measured rounds of --matrix-plan, latency first, then bandwidth per size. */
static void run_plan(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    int n = ctx->nranks;
    step st;
    step_alloc(&st, n);
    for (int s = -1; s < o->nmatrix_sizes; s++)
        for (int r = 0; r < plan_rounds; r++) {
            const int *dst = plan_dst + (size_t)r * (size_t)n, *src = plan_src + (size_t)r * (size_t)n;
            for (int i = 0; i < n; i++) {
                int lat = s < 0; /* latency: pingers measure (i -> dst); bandwidth: receivers */
                st.measurer[i] = lat ? dst[i] >= 0 : src[i] >= 0;
                st.a[i] = lat ? i : src[i];
                st.b[i] = lat ? dst[i] : i;
            }
            st.dst = dst[ctx->rank], st.src = src[ctx->rank];
            if (s < 0) lat_step(ctx, o->matrix_prefix, &st);
            else bw_step(ctx, "matrix_bw", o->matrix_prefix, &st, o->matrix_sizes[s]);
        }
    step_free(&st);
}

void cs_matrix_run(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    if (o->matrix_plan[0]) {
        parse_plan(ctx);
        run_plan(ctx);
        return;
    }
    int n = ctx->nranks, serial = strcmp(o->matrix_schedule, "serial") == 0;
    int steps = serial ? n * n : n; /* serial: every a * n + b with a != b */
    step st;
    step_alloc(&st, n);
    /* At k = n / 2 rank i sends to and receives from the same rank: both directions would
     * share one connection, which no other step does (on the virtual cluster one of them ran
     * at half the rate, and round trips took 10-50 times longer, under Open MPI and MPICH
     * alike), so each direction runs alone. */
    for (int s = -1; s < o->nmatrix_sizes; s++) /* s = -1: latency */
        for (int k = serial ? 0 : 1; k < steps; k++) {
            if (serial && k / n == k % n) continue;
            int halves = !serial && 2 * k == n;
            for (int h = halves ? 0 : -1; h < (halves ? 2 : 0); h++) {
                plan(&st, ctx->rank, n, k, serial, s >= 0, h);
                if (s < 0) lat_step(ctx, "", &st);
                else bw_step(ctx, "matrix_bw", "", &st, o->matrix_sizes[s]);
            }
        }
    step_free(&st);
}

/* splitmix64: a small generator every rank runs alike, seeded per matching. */
static uint64_t next(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Matching r: a Fisher-Yates shuffle; positions 2j and 2j + 1 form pair j (odd n: the last
 * rank rests). */
static void matching(int r, long long seed, int n, step *st, int me) {
    uint64_t x = (uint64_t)seed * 1000003ULL + (uint64_t)r;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next(&x) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    st->dst = st->src = -1;
    for (int r2 = 0; r2 < n; r2++) st->measurer[r2] = 0;
    for (int p = 0; p + 1 < n; p += 2) {
        int a = perm[p], b = perm[p + 1];
        st->measurer[b] = 1, st->a[b] = a, st->b[b] = b;
        if (me == a) st->dst = b;
        if (me == b) st->src = a;
    }
}

void cs_bisection_run(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    step st;
    step_alloc(&st, ctx->nranks);
    for (int s = 0; s < o->nmatrix_sizes; s++)
        for (int r = 0; r < o->bisection_reps; r++) {
            char prefix[24];
            snprintf(prefix, sizeof prefix, "m%d/", r);
            matching(r, o->bisection_seed, ctx->nranks, &st, ctx->rank);
            bw_step(ctx, "bisection_bw", prefix, &st, o->matrix_sizes[s]);
        }
    step_free(&st);
}
