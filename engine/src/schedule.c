/* The MPIPerf window scheduler (Kurnosov 2012, MPIPerf, section 3) and the naive barrier loop
 * beside it.
 *
 * Stage j: rank 0 broadcasts tau_j = now + t_bcast and the window b_j; launch l starts on
 * every rank at global time tau_j + l * b_j. A launch is invalid when a rank starts it late or
 * ends it after tau_j + (l + 1) * b_j (overrun). Its time is the maximum over ranks of
 * end - scheduled start. Stage 0 (k0 launches, b = 0) only initialises the operation and sets
 * b_1 = gamma * (stage end - tau_0) / k0. Rank 0 decides when to stop. Defaults are those of
 * the authors' mpiperf: 4 launches to initialise, 8 per stage.
 *
 * Two departures from the paper, both so that a busy machine cannot pass noise off as
 * operation time (measured: Alltoall 1 MiB with other processes on the cores read 3.2 ms
 * against 0.64 ms with --sync barrier and osu_alltoall, 110 % CV from run to run):
 *
 * - Late is judged where the launch really starts: the clock is read after the wait returns,
 *   just before launch(), and the launch is late when that read exceeds the scheduled start
 *   by more than late_tol = 2 * (2 * overhead + resolution) of the timer plus LATE_SHARE of
 *   the launch's time (the maximum over ranks). On time, the wait's last read and this one
 *   lie at most two reads and one clock step past the start; the factor 2 absorbs a slow
 *   read. The share lets a delay through that cannot inflate the time by more than 2 %: a
 *   rank that starts d late delays the launch's end by at most d. Ranks that share cores
 *   (more ranks than cores, as on the virtual cluster) always start some microseconds late,
 *   and with the absolute bound alone not one launch of a 190 ms all-to-all was valid. The
 *   share is of the launch's time, not of the late rank's own: a leaf of a Reduce that
 *   hands its data over in a fraction of the launch would otherwise invalidate launches its
 *   delay cannot have lengthened (a 256 KiB binomial Reduce on 2 nodes x 2 ranks had not one
 *   valid launch). A rank taken off its core while it spins is flagged instead of counting
 *   the delay as operation time. Each launch's delay (its latest rank's) is written with it:
 *   an operation that amplifies a delay (a rendezvous race lost by the later rank) breaks the
 *   bound, which the analysis checks (analysis/start_skew.py).
 *
 * - The window follows the operation, not the stage's disturbances. The paper's
 *   b = gamma * (stage end - tau) / k after a disturbed stage takes in every delay of that
 *   stage (3 to 23 ms windows for a 0.2 ms operation), and a large window hides overruns.
 *   Here rank 0 keeps the times of the last 2k launches that started on time on every rank
 *   (valid ones and overruns: their end - start is a true operation time, whereas valid times
 *   alone are censored at b and could never show that the window is too small) and estimates
 *   E = gamma * (their upper quartile) + t_bcast; the quartile ignores up to a quarter of
 *   disturbed launches, t_bcast covers the clocks' disagreement. After a stage with more than
 *   g invalid launches the window may grow towards E, at most doubling; after any stage it
 *   shrinks towards a lower E, at most halving (E comes from on-time launches only, so late
 *   starts neither hold it up nor push it up). A stage of late starts only (ranks off their
 *   cores) thus cannot widen the window, and a window grown by a burst, or set by a stage 0
 *   that other processes disturbed, comes back down even while the machine stays busy.
 *   With no on-time launch yet, a disturbed stage falls back to the paper's estimate, still
 *   capped at doubling.
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commscope.h"
#ifdef CS_SIMULATED
#include <simgrid/instr.h>
#endif

#define LATE_SHARE 0.02 /* of a launch's own time: a start delay it may carry unflagged */

void cs_idle_barrier(void) {
#ifdef CS_SIMULATED
    /* SMPI: a nap and each MPI_Test move the simulated clock; the barrier alone must. */
    MPI_Barrier(MPI_COMM_WORLD);
#else
    MPI_Request rq;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    struct timespec nap = {0, 20000};
    for (MPI_Test(&rq, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&rq, &done, MPI_STATUS_IGNORE))
        nanosleep(&nap, NULL);
#endif
}

void cs_step_start(const cs_context *ctx) {
    cs_idle_barrier();
#ifndef CS_SIMULATED
    (void)ctx;
#else
    /* SMPI's clock is global, and ranks leave a barrier at different simulated times: a
     * partner still inside answers late by exactly that much, every sample alike. So every
     * rank waits until one instant after the last has left: the latest exit (T), then the
     * latest end of the allreduce that found it (C), and as long again as that allreduce
     * took (a second one, same pattern, ends by then). */
    double exit = cs_global_now(ctx), last = 0.0, done = 0.0;
    MPI_Allreduce(&exit, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double mine = cs_global_now(ctx);
    MPI_Allreduce(&mine, &done, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    cs_wait_until(ctx, done + 2.0 * (done - last), cs_global_now(ctx));
#endif
}

void cs_wait_until(const cs_context *ctx, double start, double t) {
#ifdef CS_SIMULATED
    /* SMPI advances simulated time by a few ns per clock read: spinning would take millions
     * of context switches, while its nanosleep moves the clock exactly. */
    if (t < start) {
        double s = start - t;
        struct timespec nap = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9) + 1};
        nanosleep(&nap, NULL);
    }
#endif
    while (t < start) t = cs_global_now(ctx);
}

/* SimGrid 3.32 keeps a rank's tracing category on its flows, but its trace shows neither the
 * switch nor the category of a traced message (and writes categorized link use into the
 * uncategorized variable). So the switch is also marked in the rank's traced MPI states by a
 * call that moves nothing and that the engine makes nowhere else: MPI_Testsome on no request
 * opens the benchmark phase, MPI_Testall on none the sync phase (simulate/netload.py). */
#ifdef CS_SIMULATED
void cs_trace_phase(int measured) {
    int n = 0;
    TRACE_smpi_set_category(measured ? "benchmark" : "sync");
    if (measured) MPI_Testsome(0, NULL, &n, NULL, MPI_STATUSES_IGNORE);
    else MPI_Testall(0, NULL, &n, MPI_STATUSES_IGNORE);
}
#endif

typedef struct rule_state {
    int nt, nc;
    double sum, sumsq; /* of valid times, for the relative standard error */
} rule_state;

static double rse(const rule_state *s) {
    if (s->nc < 2) return INFINITY;
    double mean = s->sum / s->nc;
    double var = (s->sumsq - s->nc * mean * mean) / (s->nc - 1);
    return mean > 0 ? sqrt(var > 0 ? var : 0) / sqrt((double)s->nc) / mean : INFINITY;
}

/* Rank 0: which rule, if any, ends the point now. */
static const char *should_stop(const cs_options *o, const rule_state *s, double elapsed) {
    if (strcmp(o->stop, "a") == 0) {
        if (s->nt > 100 || s->nc > 30) return "rule_a";
    } else if (strcmp(o->stop, "b") == 0) {
        if (s->nc >= 10 && rse(s) <= 0.05) return "rule_b";
    } else {
        double target = atof(o->stop + 4); /* "rse:X", checked when options were parsed */
        if (s->nc >= o->min_valid && rse(s) <= target) return "rse";
    }
    if (s->nt >= o->max_launches) return "max_launches";
    if (elapsed >= o->coll_budget_s) return "budget";
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Upper quartile of xs[0..n) (n > 0), linear between order statistics; sorts scratch. */
static double upper_quartile(const double *xs, int n, double *scratch) {
    memcpy(scratch, xs, sizeof(double) * (size_t)n);
    qsort(scratch, (size_t)n, sizeof(double), by_value);
    double pos = 0.75 * (n - 1);
    int lo = (int)pos;
    return lo + 1 < n ? scratch[lo] + (pos - lo) * (scratch[lo + 1] - scratch[lo]) : scratch[lo];
}

/* Rank 0: the window of the next stage (see the header comment). */
static double next_window(const cs_context *ctx, double b, int disturbed, double paper,
                          const double *ontime, int n, double *scratch) {
    double e = n > 0 ? ctx->opt->gamma * upper_quartile(ontime, n, scratch) + ctx->t_bcast_s
                     : disturbed ? paper : b;
    if (e > b) return !disturbed ? b : e > 2 * b ? 2 * b : e;
    return e < b / 2 ? b / 2 : e;
}

void cs_schedule_run(cs_context *ctx, void (*launch)(void *state, long i), void *state,
                     cs_sched_result *res) {
    const cs_options *o = ctx->opt;
    int kmax = o->k0 > o->k ? o->k0 : o->k, keep = 2 * o->k;
    size_t nd = sizeof(double) * (size_t)kmax, ni = sizeof(int) * (size_t)kmax;
    double *mine = malloc(nd), *worst = malloc(nd), *delay = malloc(nd), *most = malloc(nd);
    int *flag = malloc(ni), *anyflag = malloc(ni);
    double *ontime = malloc(sizeof(double) * (size_t)keep);
    double *scratch = malloc(sizeof(double) * (size_t)keep);
    if (!mine || !worst || !delay || !most || !flag || !anyflag || !ontime || !scratch)
        cs_die("rank %d: out of memory for a stage", ctx->rank);
    rule_state rs = {0, 0, 0.0, 0.0};
    double msg[3] = {0.0, 0.0, 0.0}; /* tau_j, b_j, stop */
    double b = 0.0, started = cs_global_now(ctx);
    double tol = 2.0 * (2.0 * ctx->timer->overhead_s + ctx->timer->resolution_s);
    long launch_index = 0;
    int nontime = 0, next_slot = 0; /* ring of on-time launch times (rank 0) */
    res->n = 0;
    res->nstages = 0;
    res->stop = NULL;
    res->late_tol_s = tol;
    for (int j = 0;; j++) {
        int nl = j == 0 ? o->k0 : o->k;
        if (ctx->rank == 0) {
            msg[0] = cs_global_now(ctx) + ctx->t_bcast_s;
            msg[1] = j == 0 ? 0.0 : b;
        }
        MPI_Bcast(msg, 3, MPI_DOUBLE, 0, cs_comm(ctx));
        if (msg[2] != 0.0) break;
        double tau = msg[0], bj = msg[1], end = tau;
        cs_trace_phase(1);
        for (int l = 0; l < nl; l++) {
            double start = tau + l * bj;
            cs_wait_until(ctx, start, cs_global_now(ctx));
            double began = cs_global_now(ctx); /* after the wait: a rank may lose its core */
            launch(state, launch_index + l);
            end = cs_global_now(ctx);
            mine[l] = end - start;
            delay[l] = began - start;
            flag[l] = end > start + bj ? 2 : 0; /* overrun; late is judged below, on rank 0 */
        }
        cs_trace_phase(0);
        launch_index += nl;
        double stage_end;
        MPI_Reduce(mine, worst, nl, MPI_DOUBLE, MPI_MAX, 0, cs_comm(ctx));
        MPI_Reduce(delay, most, nl, MPI_DOUBLE, MPI_MAX, 0, cs_comm(ctx));
        MPI_Reduce(flag, anyflag, nl, MPI_INT, MPI_BOR, 0, cs_comm(ctx));
        MPI_Reduce(&end, &stage_end, 1, MPI_DOUBLE, MPI_MAX, 0, cs_comm(ctx));
        if (ctx->rank != 0) continue;
        if (j == 0) {
            b = o->gamma * (stage_end - tau) / o->k0;
            continue;
        }
        int invalid = 0;
        for (int l = 0; l < nl; l++) {
            if (most[l] > tol + LATE_SHARE * worst[l]) anyflag[l] |= 1;
            res->times_s[res->n] = worst[l];
            res->flags[res->n] = anyflag[l];
            res->delays_s[res->n] = most[l];
            res->stage[res->n] = j;
            res->n++;
            rs.nt++;
            if (!(anyflag[l] & 1)) {
                ontime[next_slot] = worst[l];
                next_slot = (next_slot + 1) % keep;
                if (nontime < keep) nontime++;
            }
            if (anyflag[l]) {
                invalid++;
            } else {
                rs.nc++;
                rs.sum += worst[l];
                rs.sumsq += worst[l] * worst[l];
            }
        }
        res->windows_s[res->nstages++] = bj;
        b = next_window(ctx, b, invalid > o->g * nl, o->gamma * (stage_end - tau) / nl, ontime,
                        nontime, scratch);
        res->stop = should_stop(o, &rs, cs_global_now(ctx) - started);
        if (res->stop) msg[2] = 1.0; /* max_launches stops it: arrays hold max_launches + k */
    }
    free(mine); free(worst); free(delay); free(most); free(flag); free(anyflag); free(ontime); free(scratch);
}

/* Naive mode, as IMB and OSU time collectives: a barrier, then back-to-back calls; a sample
 * is the mean time per call, the maximum over ranks. Kept to show its systematic error. */
void cs_naive_run(cs_context *ctx, void (*launch)(void *state, long i), void *state,
                  cs_sched_result *res) {
    const cs_options *o = ctx->opt;
    rule_state rs = {0, 0, 0.0, 0.0};
    double started = ctx->timer->now();
    long idx = 0;
    cs_trace_phase(1);
    for (int w = 0; w < o->k0; w++) launch(state, idx++); /* warm-up, as stage 0 */
    cs_trace_phase(0);
    res->n = 0;
    res->nstages = 0;
    res->stop = NULL;
    for (int stop = 0; !stop;) {
        MPI_Barrier(cs_comm(ctx));
        cs_trace_phase(1);
        double t0 = ctx->timer->now();
        for (int i = 0; i < o->naive_iters; i++) launch(state, idx++);
        double per = (ctx->timer->now() - t0) / o->naive_iters, worst;
        cs_trace_phase(0);
        MPI_Reduce(&per, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, cs_comm(ctx));
        if (ctx->rank == 0) {
            res->times_s[res->n] = worst;
            res->flags[res->n] = 0;
            res->delays_s[res->n] = 0.0;
            res->stage[res->n] = 1;
            res->n++;
            rs.nt++;
            rs.nc++;
            rs.sum += worst;
            rs.sumsq += worst * worst;
            res->stop = should_stop(o, &rs, ctx->timer->now() - started);
            stop = res->stop != NULL;
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, cs_comm(ctx));
    }
}
