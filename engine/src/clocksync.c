/* Clock synchronisation: each rank's offset (and, for "drift", rate) relative to rank 0.
 *
 * The building block is the exchange of Kurnosov 2012 (MPIPerf): client i sends a request
 * at T', server answers with its time T0, the answer arrives at T'';
 * offset = T0 - (T' + T'') / 2. The exchange with the smallest round trip wins; the search
 * stops when that minimum has not improved for d exchanges. Methods, chosen by name:
 *   linear        every rank against rank 0, one after another
 *   ring          rank i against rank i-1; offsets summed along the ring (a prefix sum)
 *   hierarchical  ranks against their node leader, leaders against rank 0
 *   drift         like linear, repeated over a time span, then a least-squares line
 *                 offset(t) = a + b (t - ref) per rank, so long runs stay synchronised
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

enum { TAG_SYNC = 21, TAG_TURN = 22, MAX_EXCHANGES = 100000 };

typedef struct estimate {
    double offset, rtt, mid; /* mid: client's local time of the exchange */
} estimate;

static void serve(MPI_Comm comm, int client, double (*now)(void)) {
    for (;;) {
        int go;
        MPI_Recv(&go, 1, MPI_INT, client, TAG_SYNC, comm, MPI_STATUS_IGNORE);
        if (!go) return;
        double t0 = now();
        MPI_Send(&t0, 1, MPI_DOUBLE, client, TAG_SYNC, comm);
    }
}

static estimate ask(MPI_Comm comm, int server, double (*now)(void), int d) {
    estimate best = {0.0, INFINITY, 0.0};
    int go = 1, unchanged = 0;
    for (int n = 0; unchanged < d && n < MAX_EXCHANGES; n++) {
        double t1 = now(), t0;
        MPI_Send(&go, 1, MPI_INT, server, TAG_SYNC, comm);
        MPI_Recv(&t0, 1, MPI_DOUBLE, server, TAG_SYNC, comm, MPI_STATUS_IGNORE);
        double t2 = now();
        if (t2 - t1 < best.rtt) {
            best.rtt = t2 - t1;
            best.offset = t0 - 0.5 * (t1 + t2);
            best.mid = 0.5 * (t1 + t2);
            unchanged = 0;
        } else {
            unchanged++;
        }
    }
    go = 0;
    MPI_Send(&go, 1, MPI_INT, server, TAG_SYNC, comm);
    return best;
}

/* Every rank of comm against its rank 0, in turn. Rank 0 gets offset 0. A rank asks only
 * when rank 0 calls it: otherwise every waiting rank's first request sits in rank 0's queue of
 * unexpected messages, which each receive searches (O(N) a receive, O(N^2 d) a sync: 52 s of
 * SMPI's wall time at 1,024 ranks), and the requests cross rank 0's link while others sync. */
static estimate linear(MPI_Comm comm, double (*now)(void), int d) {
    int rank, size, turn = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    estimate mine = {0.0, 0.0, now()};
    for (int i = 1; i < size; i++) {
        if (rank == 0) {
            MPI_Send(&turn, 1, MPI_INT, i, TAG_TURN, comm);
            serve(comm, i, now);
        } else if (rank == i) {
            MPI_Recv(&turn, 1, MPI_INT, 0, TAG_TURN, comm, MPI_STATUS_IGNORE);
            mine = ask(comm, 0, now, d);
        }
    }
    return mine;
}

static estimate ring(MPI_Comm comm, double (*now)(void), int d) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    estimate step = {0.0, 0.0, now()};
    for (int i = 1; i < size; i++) {
        if (rank == i - 1) serve(comm, i, now);
        else if (rank == i) step = ask(comm, i - 1, now, d);
    }
    /* o_i = o_{1,0} + o_{2,1} + ... + o_{i,i-1}; errors add up along the ring too. */
    estimate total = step;
    MPI_Scan(&step.offset, &total.offset, 1, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Scan(&step.rtt, &total.rtt, 1, MPI_DOUBLE, MPI_SUM, comm);
    return total;
}

static estimate hierarchical(MPI_Comm world, double (*now)(void), int d) {
    int rank;
    MPI_Comm_rank(world, &rank);
    MPI_Comm node, leaders;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_rank;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_split(world, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
    estimate local = linear(node, now, d); /* all nodes at once */
    estimate up = {0.0, 0.0, 0.0};
    if (leaders != MPI_COMM_NULL) {
        up = linear(leaders, now, d);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&up, 3, MPI_DOUBLE, 0, node);
    MPI_Comm_free(&node);
    estimate total = {local.offset + up.offset, local.rtt + up.rtt, local.mid};
    return total;
}

/* Repeated linear estimates spread over span_s, fitted with a line per rank. */
static void drift(cs_context *ctx, double (*now)(void)) {
    const cs_options *o = ctx->opt;
    int rounds = o->sync_rounds < 2 ? 2 : o->sync_rounds;
    estimate *e = malloc(sizeof(estimate) * (size_t)rounds);
    if (!e) cs_die("rank %d: out of memory for clock sync", ctx->rank);
    double start = 0.0;
    if (ctx->rank == 0) start = now();
    for (int r = 0; r < rounds; r++) {
        if (ctx->rank == 0) {
            double due = start + o->sync_span_s * r / (rounds - 1);
            while (now() < due) {}
        }
        MPI_Barrier(MPI_COMM_WORLD);
        e[r] = linear(MPI_COMM_WORLD, now, o->sync_d);
    }
    /* A round whose best exchange still had a long round trip was disturbed (its offset can
     * be off by up to half of it): fit only rounds within 1.5x the best round trip. */
    double best_rtt = INFINITY;
    for (int r = 0; r < rounds; r++)
        if (e[r].rtt < best_rtt) best_rtt = e[r].rtt;
    int good = 0;
    for (int r = 0; r < rounds; r++) good += e[r].rtt <= 1.5 * best_rtt;
    int used = 0;
    for (int r = 0; r < rounds; r++) /* fewer than 3 good rounds: fit them all */
        if (good < 3 || e[r].rtt <= 1.5 * best_rtt) e[used++] = e[r];
    double mt = 0, mo = 0;
    for (int r = 0; r < used; r++) {
        mt += e[r].mid / used;
        mo += e[r].offset / used;
    }
    double sxx = 0, sxy = 0;
    for (int r = 0; r < used; r++) {
        sxx += (e[r].mid - mt) * (e[r].mid - mt);
        sxy += (e[r].mid - mt) * (e[r].offset - mo);
    }
    double b = sxx > 0 ? sxy / sxx : 0.0, rss = 0.0;
    for (int r = 0; r < used; r++) {
        double res = e[r].offset - (mo + b * (e[r].mid - mt));
        rss += res * res;
    }
    rounds = used;
    free(e);
    if (ctx->rank == 0) b = 0.0, mo = 0.0;
    ctx->clock = (cs_clock){mo, b, mt, best_rtt, sqrt(rss / (rounds > 2 ? rounds - 2 : 1))};
    if (ctx->rank == 0) ctx->clock.error_s = 0.0, ctx->clock.rtt_s = 0.0;
}

/* Upper estimate of the time to broadcast a double from rank 0 (Kurnosov 2012, step 2). */
static double bcast_estimate(cs_context *ctx) {
    double worst = 0.0;
    for (int r = 0; r < 20; r++) {
        double t = cs_global_now(ctx);
        MPI_Bcast(&t, 1, MPI_DOUBLE, 0, cs_comm(ctx));
        double late = cs_global_now(ctx) - t, most;
        MPI_Allreduce(&late, &most, 1, MPI_DOUBLE, MPI_MAX, cs_comm(ctx));
        if (most > worst) worst = most;
    }
    return worst;
}

/* One fresh estimate by the named method; drift and unknown names fall back to linear
 * (drift's line is fitted once; later estimates only re-anchor it). */
static estimate estimate_by(MPI_Comm comm, const char *m, double (*now)(void), int d) {
    if (strcmp(m, "ring") == 0) return ring(comm, now, d);
    if (strcmp(m, "hierarchical") == 0) return hierarchical(comm, now, d);
    return linear(comm, now, d);
}

static int known(const char *m) {
    static const char *names[] = {"barrier", "linear", "ring", "hierarchical", "drift"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(m, names[i]) == 0) return 1;
    return 0;
}

int cs_clock_sync(cs_context *ctx, char *err, size_t errlen) {
    const char *m = ctx->opt->sync;
    double (*now)(void) = ctx->timer->now;
    memset(&ctx->clock, 0, sizeof ctx->clock);
    if (!known(m)) {
        snprintf(err, errlen, "--sync %s: unknown (linear, ring, hierarchical, drift, barrier)", m);
        return -1;
    }
    if (strcmp(m, "barrier") == 0) return 0; /* naive mode: no global clock */
    if (strcmp(m, "drift") == 0) {
        drift(ctx, now);
    } else {
        estimate e = estimate_by(MPI_COMM_WORLD, m, now, ctx->opt->sync_d);
        /* The min-RTT method cannot tell path asymmetry: half the round trip bounds its error. */
        ctx->clock = (cs_clock){e.offset, 0.0, 0.0, e.rtt, 0.5 * e.rtt};
    }
    ctx->t_bcast_s = bcast_estimate(ctx);
    return 0;
}

/* Before a point with --resync point: a fresh estimate becomes the clock (drift keeps its
 * fitted rate and only re-anchors), as mpiperf synchronises per test. Collective. */
void cs_clock_resync(cs_context *ctx) {
    const char *m = ctx->opt->sync;
    cs_clock *c = &ctx->clock;
    estimate e = estimate_by(cs_comm(ctx), m, ctx->timer->now, ctx->opt->sync_d);
    if (ctx->rank != 0) {
        int fitted = strcmp(m, "drift") == 0;
        c->offset_s = e.offset;
        c->ref_s = e.mid;
        c->rtt_s = e.rtt;
        c->error_s = fitted ? c->error_s + 0.5 * e.rtt : 0.5 * e.rtt;
        if (!fitted) c->drift = 0.0;
    }
    ctx->t_bcast_s = bcast_estimate(ctx);
}

/* After a point: a fresh estimate compared with the clock model the point was timed with.
 * Rank 0 gets out[0] = the largest disagreement over ranks and out[1] = the largest part of a
 * disagreement that the two estimates' own error bounds (half a round trip each, or the drift
 * fit's residual) cannot explain. Collective. */
void cs_clock_recheck(cs_context *ctx, double out[2]) {
    const cs_clock *c = &ctx->clock;
    estimate e = estimate_by(cs_comm(ctx), ctx->opt->sync, ctx->timer->now, ctx->opt->sync_d);
    double gap = e.offset - (c->offset_s + c->drift * (e.mid - c->ref_s));
    double mine[2] = {fabs(gap), fabs(gap) - (0.5 * e.rtt + c->error_s)};
    if (ctx->rank == 0) mine[0] = mine[1] = 0.0;
    MPI_Reduce(mine, out, 2, MPI_DOUBLE, MPI_MAX, 0, cs_comm(ctx));
}

void cs_clock_write(cs_context *ctx, cs_json *j) {
    double mine[5] = {ctx->clock.offset_s, ctx->clock.drift, ctx->clock.ref_s, ctx->clock.rtt_s,
                      ctx->clock.error_s};
    double *all = NULL;
    if (ctx->rank == 0) {
        all = malloc(sizeof(double) * 5 * (size_t)ctx->nranks);
        if (!all) cs_die("rank 0: out of memory for the clock table");
    }
    MPI_Gather(mine, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0) return;
    cs_json_raw_begin(j, "clock_sync", '{');
    cs_json_str(j, "method", ctx->opt->sync);
    cs_json_int(j, "d", ctx->opt->sync_d);
    cs_json_num(j, "t_bcast_s", ctx->t_bcast_s);
    cs_json_raw_begin(j, "ranks", '[');
    for (int r = 0; r < ctx->nranks; r++) {
        cs_json_raw_begin(j, NULL, '{');
        cs_json_int(j, "rank", r);
        cs_json_num(j, "offset_s", all[5 * r]);
        cs_json_num(j, "drift", all[5 * r + 1]);
        cs_json_num(j, "rtt_s", all[5 * r + 3]);
        cs_json_num(j, "error_s", all[5 * r + 4]);
        cs_json_raw_end(j, '}');
    }
    cs_json_raw_end(j, ']');
    cs_json_raw_end(j, '}');
    free(all);
}

/* After measuring: a fresh min-RTT estimate against rank 0 compared with what the clock model
 * predicts now. Tells how far synchronisation drifted during the run (end record). */
void cs_clock_check(cs_context *ctx, cs_json *j) {
    double (*now)(void) = ctx->timer->now;
    estimate e = linear(MPI_COMM_WORLD, now, ctx->opt->sync_d);
    const cs_clock *c = &ctx->clock;
    double mine[2] = {e.offset - (c->offset_s + c->drift * (e.mid - c->ref_s)), e.rtt};
    if (ctx->rank == 0) mine[0] = 0.0;
    double *all = ctx->rank == 0 ? malloc(sizeof(double) * 2 * (size_t)ctx->nranks) : NULL;
    if (ctx->rank == 0 && !all) cs_die("rank 0: out of memory for the clock check");
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0) return;
    cs_json_raw_begin(j, "clock_check", '[');
    for (int r = 1; r < ctx->nranks; r++) {
        cs_json_raw_begin(j, NULL, '{');
        cs_json_int(j, "rank", r);
        cs_json_num(j, "error_s", all[2 * r]);
        cs_json_num(j, "rtt_s", all[2 * r + 1]);
        cs_json_raw_end(j, '}');
    }
    cs_json_raw_end(j, ']');
    free(all);
}
