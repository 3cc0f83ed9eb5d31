/* LogGP measurements the way Netgauge takes them (Hoefler et al., "LogGP in theory and
 * practice"), between the two ranks of a pair, for each size s of --loggp-sizes:
 *
 *   PRTT(1,0,s)  a sends one message to b, b sends one back: a round trip
 *   PRTT(n,0,s)  a sends n messages back to back, b answers the last one
 *   PRTT(n,d,s)  the same with a busy delay d after each send but the last; d is 1.5 times the
 *                fastest of a few round trips, so the sender is never held up by the gap (the
 *                fastest, not the median: a rank descheduled during calibration must not
 *                stretch every later sample).
 *                Each MPI_Send call of this train is timed too (the sender overhead o_s).
 *   o_r          b waits until a message has surely arrived (2 d after asking for it), then
 *                times its MPI_Recv: the receiver overhead of a message already there
 *
 * Each send and receive time includes one timer call; rank a also times CS_LOGGP_EMPTY empty
 * intervals (timer_s) so that Python can take that cost off.
 *
 * Blocking MPI_Send/MPI_Recv throughout; a sample is one pass through the four, every time is
 * written raw (rank a, always rank 0, writes; b's receive times travel back in the reply to a,
 * outside every timed region). Python fits L, o_s, o_r, g and G (analysis/loggp.py). Samples
 * stop like the other point-to-point ops: relative standard error of PRTT(1,0,s) and
 * PRTT(n,0,s) below --target-rse (after --min-samples), --point-budget, or --max-samples.
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commscope.h"

enum { TAG_LOGGP = 41, TAG_LOGGP_CTL = 42 };
#define CS_LOGGP_N 10     /* messages per train, as in Netgauge */
#define CS_LOGGP_CALIB 9  /* round trips whose fastest sets the delay */
#define CS_LOGGP_DELAY 1.5 /* delay d = this times the calibrated round trip */
#define CS_LOGGP_EMPTY 64 /* empty timed intervals per point: the cost of a timer call */

static char *sbuf, *rbuf;
static double *prtt1, *prttn, *prttd, *sent, *recvd, empty[CS_LOGGP_EMPTY];
static const char *stop_names[] = {"", "rse", "budget", "max_samples"};

void cs_loggp_init(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    size_t max = 1, m = (size_t)o->max_samples;
    for (int i = 0; i < o->nloggp_sizes; i++)
        if (o->loggp_sizes[i] > max) max = o->loggp_sizes[i];
    sbuf = cs_buffer_alloc(max);
    rbuf = cs_buffer_alloc(max);
    memset(sbuf, 'g', max);
    prtt1 = malloc(sizeof(double) * m);
    prttn = malloc(sizeof(double) * m);
    prttd = malloc(sizeof(double) * m);
    recvd = malloc(sizeof(double) * m);
    sent = malloc(sizeof(double) * m * CS_LOGGP_N);
    if (!prtt1 || !prttn || !prttd || !recvd || !sent)
        cs_die("rank %d: out of memory for %d LogGP samples", ctx->rank, o->max_samples);
}

/* Busy for `seconds` from `from`. Under SMPI each clock read moves the simulated clock a few ns
 * and costs a context switch: a spin of 240 us took 24,000 of them (13 s of wall time for three
 * sizes), while a nanosleep moves the clock by exactly the rest. */
static void spin(double (*now)(void), double from, double seconds) {
#ifdef CS_SIMULATED
    double rest = seconds - (now() - from);
    if (rest > 0) {
        struct timespec nap = {(time_t)rest, (long)((rest - (double)(time_t)rest) * 1e9) + 1};
        nanosleep(&nap, NULL);
    }
#endif
    while (now() - from < seconds) {}
}

/* One train: a sends n messages, b answers the last one with one of the same size. With
 * times != NULL, a times each MPI_Send and waits d after each but the last. Returns the round
 * trip on a, 0 on b. */
static double train(int is_a, int peer, int c, int n, double d, double (*now)(void),
                    double *times) {
    if (!is_a) {
        for (int i = 0; i < n; i++)
            MPI_Recv(rbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD);
        return 0.0;
    }
    double t0 = now();
    for (int i = 0; i < n; i++) {
        if (!times) {
            MPI_Send(sbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD);
            continue;
        }
        double s0 = now();
        MPI_Send(sbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD);
        double s1 = now();
        times[i] = s1 - s0;
        if (i + 1 < n) spin(now, s1, d);
    }
    MPI_Recv(rbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return now() - t0;
}

/* b asks for a message, waits `wait` so it has arrived, then times its MPI_Recv; a learns the
 * time from b's reply. Returns the receive time on both ranks. */
static double late_recv(int is_a, int peer, int c, double wait, double (*now)(void)) {
    double took = 0.0;
    if (is_a) {
        MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD);
        MPI_Recv(&took, 1, MPI_DOUBLE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return took;
    }
    MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD);
    spin(now, now(), wait);
    double t0 = now();
    MPI_Recv(rbuf, c, MPI_BYTE, peer, TAG_LOGGP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    took = now() - t0;
    MPI_Send(&took, 1, MPI_DOUBLE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD);
    return took;
}

static double rse(const double *x, int n) {
    if (n < 2) return INFINITY;
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    return mean > 0 ? sqrt(ss / (n - 1) / n) / mean : INFINITY;
}

static void array(cs_json *j, const char *key, const double *x, int n) {
    cs_json_raw_begin(j, key, '[');
    for (int i = 0; i < n; i++) cs_json_elem_num(j, x[i]);
    cs_json_raw_end(j, ']');
}

static void write_record(cs_context *ctx, const cs_pair *pair, size_t bytes, double d,
                         double wait, int n, int stop) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "loggp");
    cs_json_str(&j, "pair", pair->label);
    cs_json_raw_begin(&j, "ranks", '[');
    cs_json_elem_int(&j, pair->a);
    cs_json_elem_int(&j, pair->b);
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_int(&j, "n", CS_LOGGP_N);
    cs_json_num(&j, "delay_s", d);
    cs_json_num(&j, "wait_s", wait);
    cs_json_int(&j, "warmup", ctx->opt->warmup);
    array(&j, "prtt_1_0_s", prtt1, n);
    array(&j, "prtt_n_0_s", prttn, n);
    array(&j, "prtt_n_d_s", prttd, n);
    array(&j, "send_s", sent, n * CS_LOGGP_N);
    array(&j, "recv_s", recvd, n);
    array(&j, "timer_s", empty, CS_LOGGP_EMPTY);
    cs_json_str(&j, "stop", stop_names[stop]);
    cs_json_end(&j);
    ctx->npoints++;
}

static void measure(cs_context *ctx, const cs_pair *pair, size_t bytes) {
    if (ctx->rank != pair->a && ctx->rank != pair->b) return;
    if (pair->a != 0) cs_die("rank %d: pair %s does not start at rank 0", ctx->rank, pair->label);
    if (bytes > (size_t)0x7fffffff) cs_die("rank %d: %zu bytes exceeds an int count", ctx->rank, bytes);
    const cs_options *o = ctx->opt;
    int is_a = ctx->rank == pair->a, peer = is_a ? pair->b : pair->a, c = (int)bytes;
    double (*now)(void) = ctx->timer->now;
    double start = now();
    for (int i = 0; i < o->warmup; i++) train(is_a, peer, c, 1, 0.0, now, NULL);

    /* The delay: CS_LOGGP_DELAY times the fastest of a few round trips; b learns it. */
    double delay[2] = {0.0, 0.0}; /* d, and b's wait before timing a receive */
    if (is_a) {
        double fastest = INFINITY;
        for (int i = 0; i < CS_LOGGP_CALIB; i++)
            fastest = fmin(fastest, train(is_a, peer, c, 1, 0.0, now, NULL));
        delay[0] = CS_LOGGP_DELAY * fastest;
        delay[1] = 2.0 * delay[0];
        MPI_Send(delay, 2, MPI_DOUBLE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD);
    } else {
        for (int i = 0; i < CS_LOGGP_CALIB; i++) train(is_a, peer, c, 1, 0.0, now, NULL);
        MPI_Recv(delay, 2, MPI_DOUBLE, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    if (is_a)
        for (int i = 0; i < CS_LOGGP_EMPTY; i++) {
            double t0 = now();
            empty[i] = now() - t0;
        }
    int n = 0, stop = 0;
    while (!stop) {
        double t1 = train(is_a, peer, c, 1, 0.0, now, NULL);
        double tn = train(is_a, peer, c, CS_LOGGP_N, 0.0, now, NULL);
        double td = train(is_a, peer, c, CS_LOGGP_N, delay[0], now, sent + (size_t)n * CS_LOGGP_N);
        double tr = late_recv(is_a, peer, c, delay[1], now);
        if (is_a) {
            prtt1[n] = t1, prttn[n] = tn, prttd[n] = td, recvd[n] = tr;
            n++;
            if (n >= o->min_samples && rse(prtt1, n) <= o->target_rse &&
                rse(prttn, n) <= o->target_rse) stop = 1;
            else if (now() - start >= o->point_budget_s && n >= 2) stop = 2;
            else if (n >= o->max_samples) stop = 3;
            MPI_Send(&stop, 1, MPI_INT, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&stop, 1, MPI_INT, peer, TAG_LOGGP_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (is_a) write_record(ctx, pair, bytes, delay[0], delay[1], n, stop);
}

void cs_loggp_run(cs_context *ctx, const cs_pair *pairs, int npairs) {
    const cs_options *o = ctx->opt;
    for (int s = 0; s < o->nloggp_sizes; s++)
        for (int p = 0; p < npairs; p++) {
            if (cs_options_skipped(o, "loggp", pairs[p].label, o->loggp_sizes[s])) continue;
            measure(ctx, &pairs[p], o->loggp_sizes[s]);
            if (ctx->nranks > 2) cs_idle_barrier();
        }
}
