/* Contention level "queue": how long a small message from a node waits behind that node's own
 * outgoing stream. Above its eager limit an MPI sends a message only after the receiver
 * answers, and that answer leaves the receiver's node through the same queue as whatever the
 * node is sending meanwhile: on a link with a deep queue the handshake waits for the queue.
 *
 * Ranks: a0, a1 on node 0 (a0 is world rank 0), b0, b1 on node 1. Per repetition:
 *   idle    b1 times 20 round trips of an 8-byte message to a1 and back, nothing else running;
 *   loaded  a0 sends nruns messages of m bytes to b0 (blocking sends, back to back) while b1
 *           times round trips to a1 back to back until b0 says the stream has arrived; the
 *           stream's time runs until b0 tells a0 so too.
 * a1's answers leave node 0 behind a0's stream; b1's messages cross node 1's queue, which
 * carries only the stream's acknowledgements. A loaded round trip less the idle ones is the
 * wait. Every round trip is written (the samples a repetition keeps are capped; the stream
 * goes on to its end regardless).
 */
#include <mpi.h>
#include <stdlib.h>

#include "commscope.h"

enum { TAG_STREAM = 41, TAG_PING = 42, TAG_DONE = 43, TAG_STOP = 44 };
enum { PING_BYTES = 8, IDLE_PINGS = 20, MOST_PINGS = 1024, MOST_SAMPLES = 1 << 16 };
enum { A0, A1, B0, B1 };

/* Rank 0 picks the first two ranks of node 0 and of node 1; every rank receives them. */
static void choose(cs_context *ctx, int who[4]) {
    if (ctx->rank == 0) {
        const cs_rankinfo *r = ctx->topo->ranks;
        int na = 0, nb = 0;
        for (int i = 0; i < ctx->topo->nranks; i++) {
            if (r[i].node_index == 0 && na < 2) who[A0 + na++] = i;
            else if (r[i].node_index == 1 && nb < 2) who[B0 + nb++] = i;
        }
        if (na < 2 || nb < 2 || who[A0] != 0)
            cs_die("rank 0: contention level queue cannot be measured: it needs 2 ranks on each "
                   "of two nodes (e.g. --vcluster --ranks-per-node 2); this allocation has %d "
                   "ranks on %d node(s)", ctx->topo->nranks,
                   r[ctx->topo->nranks - 1].node_index + 1);
    }
    MPI_Bcast(who, 4, MPI_INT, 0, MPI_COMM_WORLD);
}

/* b1's side: round trips to a1 until ``n`` are timed or, with stop_from >= 0, that rank says
 * so; returns how many were kept. */
static int ping(cs_context *ctx, int a1, int n, int stop_from, double *rtt) {
    char msg[PING_BYTES] = {0};
    int kept = 0;
    for (;;) {
        if (stop_from >= 0) {
            int done = 0;
            MPI_Iprobe(stop_from, TAG_DONE, MPI_COMM_WORLD, &done, MPI_STATUS_IGNORE);
            if (done) {
                MPI_Recv(NULL, 0, MPI_BYTE, stop_from, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                break;
            }
            if (kept == n) { /* enough samples: wait for the stream's end without pinging */
                MPI_Recv(NULL, 0, MPI_BYTE, stop_from, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                break;
            }
        } else if (kept == n) {
            break;
        }
        double t = ctx->timer->now();
        MPI_Send(msg, PING_BYTES, MPI_BYTE, a1, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(msg, PING_BYTES, MPI_BYTE, a1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        rtt[kept++] = ctx->timer->now() - t;
    }
    MPI_Send(NULL, 0, MPI_BYTE, a1, TAG_STOP, MPI_COMM_WORLD);
    return kept;
}

/* a1's side: answer every ping until the stop. */
static void answer(int b1) {
    char msg[PING_BYTES];
    for (;;) {
        MPI_Status st;
        MPI_Recv(msg, PING_BYTES, MPI_BYTE, b1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) return;
        MPI_Send(msg, PING_BYTES, MPI_BYTE, b1, TAG_PING, MPI_COMM_WORLD);
    }
}

static void write_record(cs_context *ctx, size_t bytes, const int who[4], const double *stream_s,
                         const double *idle, const double *loaded, const int *nloaded, int cap) {
    const cs_options *o = ctx->opt;
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "queue");
    cs_json_int(&j, "bytes", (long long)bytes);
    cs_json_raw_begin(&j, "stream", '[');
    cs_json_elem_int(&j, who[A0]);
    cs_json_elem_int(&j, who[B0]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "ping", '[');
    cs_json_elem_int(&j, who[B1]);
    cs_json_elem_int(&j, who[A1]);
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "ping_bytes", PING_BYTES);
    cs_json_int(&j, "messages", o->nruns);
    cs_json_raw_begin(&j, "stream_s", '[');
    for (int r = 0; r < o->reps; r++) cs_json_elem_num(&j, stream_s[r]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "idle_s", '[');
    for (int r = 0; r < o->reps; r++) {
        cs_json_raw_begin(&j, NULL, '[');
        for (int i = 0; i < IDLE_PINGS; i++) cs_json_elem_num(&j, idle[r * IDLE_PINGS + i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "loaded_s", '[');
    for (int r = 0; r < o->reps; r++) {
        cs_json_raw_begin(&j, NULL, '[');
        for (int i = 0; i < nloaded[r]; i++) cs_json_elem_num(&j, loaded[(size_t)r * cap + i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
    ctx->npoints++;
}

static void measure(cs_context *ctx, size_t bytes, const int who[4], char *sbuf, char *rbuf) {
    const cs_options *o = ctx->opt;
    int role = -1;
    for (int k = 0; k < 4; k++)
        if (who[k] == ctx->rank) role = k;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, role >= 0 ? 0 : MPI_UNDEFINED, role, &sub);
    if (role >= 0) {
        int cap = MOST_SAMPLES / o->reps;
        cap = cap > MOST_PINGS ? MOST_PINGS : cap < 16 ? 16 : cap;
        double *rtt = malloc(sizeof(double) * (size_t)(cap > IDLE_PINGS ? cap : IDLE_PINGS));
        /* rank 0 (a0) keeps every repetition's samples for the record */
        double *stream_s = malloc(sizeof(double) * (size_t)o->reps);
        double *idle = role == A0 ? malloc(sizeof(double) * (size_t)o->reps * IDLE_PINGS) : NULL;
        double *loaded = role == A0 ? malloc(sizeof(double) * (size_t)o->reps * (size_t)cap) : NULL;
        int *nloaded = malloc(sizeof(int) * (size_t)o->reps);
        if (!rtt || !stream_s || !nloaded || (role == A0 && (!idle || !loaded)))
            cs_die("rank %d: out of memory", ctx->rank);
        /* warm-up, not timed: both connections open, one message each way of the stream */
        if (role == A0) MPI_Send(sbuf, (int)bytes, MPI_BYTE, who[B0], TAG_STREAM, MPI_COMM_WORLD);
        if (role == B0) MPI_Recv(rbuf, (int)bytes, MPI_BYTE, who[A0], TAG_STREAM, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (role == B1) ping(ctx, who[A1], 1, -1, rtt);
        if (role == A1) answer(who[B1]);
        for (int r = 0; r < o->reps; r++) {
            MPI_Barrier(sub);
            if (role == B1) ping(ctx, who[A1], IDLE_PINGS, -1, rtt);
            if (role == A1) answer(who[B1]);
            if (role == B1) MPI_Send(rtt, IDLE_PINGS, MPI_DOUBLE, 0, TAG_PING, MPI_COMM_WORLD);
            if (role == A0)
                MPI_Recv(idle + r * IDLE_PINGS, IDLE_PINGS, MPI_DOUBLE, who[B1], TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Barrier(sub);
            if (role == A0) {
                /* until b0 has it all: an eager send returns once the kernel holds its bytes */
                double t = ctx->timer->now();
                for (int k = 0; k < o->nruns; k++)
                    MPI_Send(sbuf, (int)bytes, MPI_BYTE, who[B0], TAG_STREAM, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, who[B0], TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                stream_s[r] = ctx->timer->now() - t;
            }
            if (role == B0) {
                for (int k = 0; k < o->nruns; k++)
                    MPI_Recv(rbuf, (int)bytes, MPI_BYTE, who[A0], TAG_STREAM, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, who[B1], TAG_DONE, MPI_COMM_WORLD);
                MPI_Send(NULL, 0, MPI_BYTE, who[A0], TAG_DONE, MPI_COMM_WORLD);
            }
            if (role == A1) answer(who[B1]);
            if (role == B1) {
                int n = ping(ctx, who[A1], cap, who[B0], rtt);
                MPI_Send(&n, 1, MPI_INT, 0, TAG_PING, MPI_COMM_WORLD);
                MPI_Send(rtt, n, MPI_DOUBLE, 0, TAG_PING, MPI_COMM_WORLD);
            }
            if (role == A0) {
                MPI_Recv(&nloaded[r], 1, MPI_INT, who[B1], TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(loaded + (size_t)r * cap, nloaded[r], MPI_DOUBLE, who[B1], TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        if (role == A0) write_record(ctx, bytes, who, stream_s, idle, loaded, nloaded, cap);
        free(rtt); free(stream_s); free(idle); free(loaded); free(nloaded);
        MPI_Comm_free(&sub);
    }
    cs_idle_barrier();
}

void cs_queue_run(cs_context *ctx, char *sbuf, char *rbuf) {
    const cs_options *o = ctx->opt;
    int who[4];
    choose(ctx, who);
    for (int s = 0; s < o->ncoll_sizes; s++) {
        if (cs_options_skipped(o, "contention_queue", "ping", o->coll_sizes[s])) continue;
        measure(ctx, o->coll_sizes[s], who, sbuf, rbuf);
    }
}
