/* Peryshkova and Kurnosov 2018 (contention-aware placement), module 1: t(m, cf), the time
 * to exchange m bytes when cf pairs of processes use the same channel at once. Channel
 * levels, found from where the ranks run:
 *   memory  both ends on one socket of one node (the socket's memory controller)
 *   socket  ends on two sockets of one node (the socket interconnect)
 *   nic     ends on two nodes (the network interface of each)
 *   fabric  cf pairs of nodes, one pair each (2 cf nodes): what the switch carries at once
 *           between distinct NICs, which a blocking or shared fabric cannot at full rate
 *   queue   no t(m, cf): how long a small message waits behind its node's outgoing stream
 *           of m-byte messages (ops/queue.c)
 * Each process of a pair runs the paper's loop after an untimed warm-up:
 *   repeat nruns: t -= now; Irecv; Isend; Waitall; t += now;   t /= 2 * nruns
 * With --in-flight W > 1 each iteration posts W receives and W sends (distinct receive
 * buffers) before Waitall, and t /= 2 * W * nruns: the channel then never waits for one
 * message's handshake, as under a collective that posts all its transfers at once.
 * The pairs start together at a time broadcast on the synchronised clock (or after a barrier
 * in --sync barrier mode); every process's t of every repetition is written.
 * With --idle S > 0, every repetition starts S seconds after the pairs last sent anything
 * (they sleep), and its first exchange is timed on its own, divided by 2 W ("after_idle_s"),
 * before one untimed exchange and the repetition's nruns: over TCP, a connection idle past
 * its RTO sends again from the initial window (net.ipv4.tcp_slow_start_after_idle), while
 * the exchanges that follow find it grown again.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commscope.h"

enum { TAG_CONT = 31 };
enum { LEVELS = 4 };
#define SPIN_S 0.005 /* an idle wait spins only its last 5 ms: sleeping ranks leave the cores */
static const char *level_names[LEVELS] = {"memory", "socket", "nic", "fabric"};

/* Pairs of one level on rank 0's topology; returns how many (0: the level cannot be made). */
static int level_pairs(const cs_topo *t, int level, int pairs[][2], int max) {
    int n = 0;
    const cs_rankinfo *r = t->ranks;
    if (level == 3) { /* fabric: first rank of node 2i with first rank of node 2i + 1 */
        int first[CS_MAX_CPUS], nodes = 0;
        for (int i = 0; i < t->nranks; i++)
            if (r[i].node_index == nodes && nodes < CS_MAX_CPUS) first[nodes++] = i;
        for (; 2 * n + 1 < nodes && n < max; n++) pairs[n][0] = first[2 * n], pairs[n][1] = first[2 * n + 1];
        return n;
    }
    if (level == 2) { /* nic: i-th rank of node 0 with i-th rank of node 1 */
        int a[CS_MAX_CPUS], b[CS_MAX_CPUS], na = 0, nb = 0;
        for (int i = 0; i < t->nranks && na < CS_MAX_CPUS && nb < CS_MAX_CPUS; i++) {
            if (r[i].node_index == 0) a[na++] = i;
            else if (r[i].node_index == 1) b[nb++] = i;
        }
        for (; n < na && n < nb && n < max; n++) pairs[n][0] = a[n], pairs[n][1] = b[n];
        return n;
    }
    /* memory and socket: ranks of node 0 by socket */
    int by[2][CS_MAX_CPUS], cnt[2] = {0, 0}, s0 = -1, s1 = -1;
    for (int i = 0; i < t->nranks; i++) {
        if (r[i].node_index != 0 || r[i].socket < 0) continue;
        if (s0 < 0) s0 = r[i].socket;
        else if (s1 < 0 && r[i].socket != s0) s1 = r[i].socket;
        int k = r[i].socket == s0 ? 0 : r[i].socket == s1 ? 1 : -1;
        if (k >= 0 && cnt[k] < CS_MAX_CPUS) by[k][cnt[k]++] = i;
    }
    if (level == 0)
        for (; 2 * n + 1 < cnt[0] && n < max; n++) pairs[n][0] = by[0][2 * n], pairs[n][1] = by[0][2 * n + 1];
    else
        for (; n < cnt[0] && n < cnt[1] && n < max; n++) pairs[n][0] = by[0][n], pairs[n][1] = by[1][n];
    return n;
}

/* The paper needs each process on a core of its own: one cpu each, distinct within a node. */
static int pinned_apart(const cs_topo *t, int pairs[][2], int n) {
    for (int i = 0; i < 2 * n; i++) {
        const cs_rankinfo *x = &t->ranks[pairs[i / 2][i % 2]];
        if (x->ncpus != 1) return 0;
        for (int j = 0; j < i; j++) {
            const cs_rankinfo *y = &t->ranks[pairs[j / 2][j % 2]];
            if (y->node_index == x->node_index && y->affinity[0] == x->affinity[0]) return 0;
        }
    }
    return 1;
}

static const char *why_not[LEVELS] = {
    "needs 2 ranks on one socket of a node, each pinned to its own core",
    "needs ranks on two sockets of one node, each pinned to its own core",
    "needs ranks on two nodes (e.g. --vcluster or a multi-node allocation)",
    "needs ranks on two nodes or more (2 cf nodes for cf pairs, one rank on each used)"};

/* Rank 0 picks the pairs of every requested level; all ranks receive them. */
static int choose(cs_context *ctx, int level, int pairs[][2]) {
    int n = 0, buf[1 + CS_MAX_CPUS]; /* count, then at most CS_MAX_CPUS / 2 pairs */
    if (ctx->rank == 0) {
        int maxcf = ctx->opt->cf_max > 0 && ctx->opt->cf_max < CS_MAX_CPUS / 2 ? ctx->opt->cf_max
                                                                            : CS_MAX_CPUS / 2;
        n = level_pairs(ctx->topo, level, pairs, maxcf);
        if (n == 0)
            cs_die("rank 0: contention level %s cannot be measured: it %s; this allocation has "
                   "%d ranks on %d node(s)", level_names[level], why_not[level],
                   ctx->topo->nranks, ctx->topo->ranks[ctx->topo->nranks - 1].node_index + 1);
        if (!pinned_apart(ctx->topo, pairs, n))
            cs_die("rank 0: contention level %s: ranks are not each pinned to a core of their "
                   "own (pinning failed or more ranks than cores on a node)", level_names[level]);
        buf[0] = n;
        for (int i = 0; i < n; i++) buf[1 + 2 * i] = pairs[i][0], buf[2 + 2 * i] = pairs[i][1];
    }
    MPI_Bcast(buf, 1 + CS_MAX_CPUS, MPI_INT, 0, MPI_COMM_WORLD);
    n = buf[0];
    for (int i = 0; i < n; i++) pairs[i][0] = buf[1 + 2 * i], pairs[i][1] = buf[2 + 2 * i];
    return n;
}

/* Each repetition's time of every process of the pairs: [[t of a0, b0, a1, ...], ...]. */
static void write_times(cs_context *ctx, cs_json *j, const char *key, int cf, int pairs[][2],
                        const double *all, int reps) {
    cs_json_raw_begin(j, key, '[');
    for (int r = 0; r < reps; r++) {
        cs_json_raw_begin(j, NULL, '[');
        for (int i = 0; i < 2 * cf; i++) cs_json_elem_num(j, all[(size_t)r * ctx->nranks + pairs[i / 2][i % 2]]);
        cs_json_raw_end(j, ']');
    }
    cs_json_raw_end(j, ']');
}

static void write_record(cs_context *ctx, int level, int cf, size_t bytes, int pairs[][2],
                         const double *all, const double *cold, int reps) {
    const cs_options *o = ctx->opt;
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "contention");
    cs_json_str(&j, "level", level_names[level]);
    cs_json_int(&j, "cf", cf);
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_raw_begin(&j, "pairs", '[');
    for (int i = 0; i < cf; i++) {
        cs_json_raw_begin(&j, NULL, '[');
        cs_json_elem_int(&j, pairs[i][0]);
        cs_json_elem_int(&j, pairs[i][1]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "nruns", o->nruns);
    cs_json_int(&j, "in_flight", o->in_flight);
    cs_json_str(&j, "start", strcmp(o->sync, "barrier") == 0 ? "barrier" : "window");
    cs_json_raw_begin(&j, "pinned", '[');
    for (int i = 0; i < 2 * cf; i++) cs_json_elem_int(&j, ctx->topo->ranks[pairs[i / 2][i % 2]].affinity[0]);
    cs_json_raw_end(&j, ']');
    write_times(ctx, &j, "samples_s", cf, pairs, all, reps);
    if (o->idle_s > 0) {
        cs_json_num(&j, "idle_s", o->idle_s);
        write_times(ctx, &j, "after_idle_s", cf, pairs, cold, reps);
    }
    cs_json_end(&j);
    ctx->npoints++;
}

/* One iteration: w receives (each into its own slot of rbuf), w sends, Waitall. */
static void exchange(char *rbuf, char *sbuf, size_t bytes, int w, int peer, MPI_Request *rq) {
    for (int i = 0; i < w; i++)
        MPI_Irecv(rbuf + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, TAG_CONT, MPI_COMM_WORLD,
                  &rq[i]);
    for (int i = 0; i < w; i++)
        MPI_Isend(sbuf, (int)bytes, MPI_BYTE, peer, TAG_CONT, MPI_COMM_WORLD, &rq[w + i]);
    MPI_Waitall(2 * w, rq, MPI_STATUSES_IGNORE);
}

/* Sleep until SPIN_S before global time `start`, then spin to it (under SMPI, which moves
 * its clock exactly on a sleep, cs_wait_until sleeps the rest). */
static void sleep_until(const cs_context *ctx, double start) {
#ifndef CS_SIMULATED
    double s = start - cs_global_now(ctx) - SPIN_S;
    if (s > 0) {
        struct timespec nap = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&nap, NULL);
    }
#endif
    cs_wait_until(ctx, start, cs_global_now(ctx));
}

static void measure(cs_context *ctx, int level, int cf, size_t bytes, int pairs[][2], char *sbuf,
                    char *rbuf, MPI_Request *rq, double *mine, double *all, double *cold) {
    const cs_options *o = ctx->opt;
    int peer = -1;
    for (int i = 0; i < cf; i++) {
        if (pairs[i][0] == ctx->rank) peer = pairs[i][1];
        if (pairs[i][1] == ctx->rank) peer = pairs[i][0];
    }
    int w = o->in_flight;
    if (peer >= 0) exchange(rbuf, sbuf, bytes, w, peer, rq); /* warm-up, not timed */
    /* Only the pairs take part; the others sleep in the idle barrier below. */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, peer >= 0 ? 0 : MPI_UNDEFINED, ctx->rank, &sub);
    if (peer >= 0) {
        int barrier = strcmp(o->sync, "barrier") == 0;
        int stride = o->reps + 1; /* mine: [world rank, t of each rep, after-idle t of each] */
        for (int r = 0; r < o->reps; r++) {
            double start = 0.0;
            if (barrier) {
                MPI_Barrier(sub);
                if (o->idle_s > 0) sleep_until(ctx, cs_global_now(ctx) + o->idle_s);
            } else { /* world rank 0 is in every level's first pair: rank 0 of sub */
                if (ctx->rank == 0) start = cs_global_now(ctx) + ctx->t_bcast_s + o->idle_s;
                MPI_Bcast(&start, 1, MPI_DOUBLE, 0, sub);
                sleep_until(ctx, start);
            }
            if (o->idle_s > 0) {
                double t = -ctx->timer->now();
                exchange(rbuf, sbuf, bytes, w, peer, rq);
                mine[stride + r] = (t + ctx->timer->now()) / (2.0 * w);
                exchange(rbuf, sbuf, bytes, w, peer, rq); /* untimed: as after the warm-up */
            }
            double t = 0.0;
            for (int k = 0; k < o->nruns; k++) {
                t -= ctx->timer->now();
                exchange(rbuf, sbuf, bytes, w, peer, rq);
                t += ctx->timer->now();
            }
            mine[r + 1] = t / (2.0 * w * o->nruns);
        }
        /* Gathered after the repetitions, outside every timed region. */
        mine[0] = ctx->rank;
        int members, row_len = 2 * o->reps + 1;
        MPI_Comm_size(sub, &members);
        double *col = ctx->rank == 0 ? malloc(sizeof(double) * (size_t)members * row_len) : NULL;
        if (ctx->rank == 0 && !col) cs_die("rank 0: out of memory");
        MPI_Gather(mine, row_len, MPI_DOUBLE, col, row_len, MPI_DOUBLE, 0, sub);
        if (ctx->rank == 0) {
            for (int q = 0; q < members; q++) {
                const double *row = col + (size_t)q * row_len;
                for (int r = 0; r < o->reps; r++) {
                    all[(size_t)r * ctx->nranks + (int)row[0]] = row[r + 1];
                    cold[(size_t)r * ctx->nranks + (int)row[0]] = row[stride + r];
                }
            }
            write_record(ctx, level, cf, bytes, pairs, all, cold, o->reps);
            free(col);
        }
        MPI_Comm_free(&sub);
    }
    cs_idle_barrier();
}

void cs_contention_run(cs_context *ctx) {
    const cs_options *o = ctx->opt;
    size_t max = 1;
    for (int i = 0; i < o->ncoll_sizes; i++)
        if (o->coll_sizes[i] > max) max = o->coll_sizes[i];
    if (max > 0x7fffffffu) cs_die("rank %d: contention sizes must fit an int count", ctx->rank);
    if (max * (size_t)o->in_flight > ((size_t)1 << 31))
        cs_die("rank %d: --in-flight %d x %zu bytes needs more than 2 GiB of receive buffers",
               ctx->rank, o->in_flight, max);
    char *sbuf = cs_buffer_alloc(max), *rbuf = cs_buffer_alloc(max * (size_t)o->in_flight);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * 2 * (size_t)o->in_flight);
    double *mine = calloc((size_t)(2 * o->reps + 1), sizeof(double));
    double *all = malloc(sizeof(double) * (size_t)o->reps * (size_t)ctx->nranks);
    double *cold = malloc(sizeof(double) * (size_t)o->reps * (size_t)ctx->nranks);
    int (*pairs)[2] = malloc(sizeof(int[2]) * CS_MAX_CPUS);
    if (!mine || !all || !cold || !pairs || !rq) cs_die("rank %d: out of memory", ctx->rank);
    for (int level = 0; level < LEVELS; level++) {
        if (!cs_list_has(o->levels, level_names[level])) continue;
        int most = choose(ctx, level, pairs);
        for (int cf = 1; cf <= most; cf++)
            for (int s = 0; s < o->ncoll_sizes; s++) {
                char key[32];
                snprintf(key, sizeof key, "contention_%s", level_names[level]);
                char group[16];
                snprintf(group, sizeof group, "cf%d", cf);
                if (cs_options_skipped(o, key, group, o->coll_sizes[s])) continue;
                measure(ctx, level, cf, o->coll_sizes[s], pairs, sbuf, rbuf, rq, mine, all, cold);
            }
    }
    if (cs_list_has(o->levels, "queue")) cs_queue_run(ctx, sbuf, rbuf);
    cs_buffer_free(sbuf); cs_buffer_free(rbuf); free(mine); free(all); free(cold); free(pairs);
    free(rq);
}
