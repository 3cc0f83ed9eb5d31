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
 *
 * A second record per size ("back"): the same, with b0 pinging a0 while a0 streams to b0. a0's
 * answers then share the stream's own connection, behind every byte a0 has handed its socket
 * and its MPI's send queue, as in a pair exchange where one rank answers its peer's request
 * after its own stream to that peer started.
 *
 * A third record per size ("streamer"): b1 pings a0 while a0 streams to b0. a0's answers take
 * their own connection out of node 0, behind the node's queue as a1's do, but come from the
 * rank that streams, as every hop's answer does in a ring with one rank per node.
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

/* One round trip of a small message to ``to``, which answers it: its time. */
static double round_trip(cs_context *ctx, int to) {
    char msg[PING_BYTES] = {0};
    double t = ctx->timer->now();
    MPI_Send(msg, PING_BYTES, MPI_BYTE, to, TAG_PING, MPI_COMM_WORLD);
    MPI_Recv(msg, PING_BYTES, MPI_BYTE, to, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return ctx->timer->now() - t;
}

/* The pinger's side: round trips to ``to`` until ``n`` are timed or, with stop_from >= 0, that
 * rank says so; returns how many were kept. */
static int ping(cs_context *ctx, int to, int n, int stop_from, double *rtt) {
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
        rtt[kept++] = round_trip(ctx, to);
    }
    MPI_Send(NULL, 0, MPI_BYTE, to, TAG_STOP, MPI_COMM_WORLD);
    return kept;
}

/* The answerer's side: answer every ping from ``from`` until the stop. */
static void answer(int from) {
    char msg[PING_BYTES];
    for (;;) {
        MPI_Status st;
        MPI_Recv(msg, PING_BYTES, MPI_BYTE, from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) return;
        MPI_Send(msg, PING_BYTES, MPI_BYTE, from, TAG_PING, MPI_COMM_WORLD);
    }
}

/* One record's samples: round trips (one repetition's, any rank that pings) and, on rank 0
 * (a0), every repetition's stream time, idle and loaded round trips. */
typedef struct {
    int cap; /* loaded round trips a repetition keeps */
    double *rtt, *stream_s, *idle, *loaded;
    int *nloaded;
} samples;

static samples samples_new(const cs_context *ctx, int role) {
    const cs_options *o = ctx->opt;
    samples x;
    x.cap = MOST_SAMPLES / o->reps;
    x.cap = x.cap > MOST_PINGS ? MOST_PINGS : x.cap < 16 ? 16 : x.cap;
    x.rtt = malloc(sizeof(double) * (size_t)(x.cap > IDLE_PINGS ? x.cap : IDLE_PINGS));
    x.stream_s = malloc(sizeof(double) * (size_t)o->reps);
    x.idle = role == A0 ? malloc(sizeof(double) * (size_t)o->reps * IDLE_PINGS) : NULL;
    x.loaded = role == A0 ? malloc(sizeof(double) * (size_t)o->reps * (size_t)x.cap) : NULL;
    x.nloaded = malloc(sizeof(int) * (size_t)o->reps);
    if (!x.rtt || !x.stream_s || !x.nloaded || (role == A0 && (!x.idle || !x.loaded)))
        cs_die("rank %d: out of memory", ctx->rank);
    return x;
}

static void samples_free(samples *x) {
    free(x->rtt); free(x->stream_s); free(x->idle); free(x->loaded); free(x->nloaded);
}

static void write_record(cs_context *ctx, size_t bytes, const int who[4], int pinger, int answerer,
                         const samples *x) {
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
    cs_json_elem_int(&j, who[pinger]);
    cs_json_elem_int(&j, who[answerer]);
    cs_json_raw_end(&j, ']');
    cs_json_int(&j, "ping_bytes", PING_BYTES);
    cs_json_int(&j, "messages", o->nruns);
    cs_json_raw_begin(&j, "stream_s", '[');
    for (int r = 0; r < o->reps; r++) cs_json_elem_num(&j, x->stream_s[r]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "idle_s", '[');
    for (int r = 0; r < o->reps; r++) {
        cs_json_raw_begin(&j, NULL, '[');
        for (int i = 0; i < IDLE_PINGS; i++) cs_json_elem_num(&j, x->idle[r * IDLE_PINGS + i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "loaded_s", '[');
    for (int r = 0; r < o->reps; r++) {
        cs_json_raw_begin(&j, NULL, '[');
        for (int i = 0; i < x->nloaded[r]; i++)
            cs_json_elem_num(&j, x->loaded[(size_t)r * x->cap + i]);
        cs_json_raw_end(&j, ']');
    }
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
    ctx->npoints++;
}

/* The pinger sends a repetition's loaded round trips to a0, which keeps them as repetition r. */
static void send_loaded(const double *rtt, int n, int a0) {
    MPI_Send(&n, 1, MPI_INT, a0, TAG_PING, MPI_COMM_WORLD);
    MPI_Send(rtt, n, MPI_DOUBLE, a0, TAG_PING, MPI_COMM_WORLD);
}

static void recv_loaded(samples *x, int r, int pinger) {
    MPI_Recv(&x->nloaded[r], 1, MPI_INT, pinger, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(x->loaded + (size_t)r * x->cap, x->nloaded[r], MPI_DOUBLE, pinger, TAG_PING,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* b0's side of a stream: receive it all, then tell b1 (which stops pinging) and a0. */
static void receive_stream(cs_context *ctx, size_t bytes, const int who[4], char *rbuf) {
    for (int k = 0; k < ctx->opt->nruns; k++)
        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, who[A0], TAG_STREAM, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Send(NULL, 0, MPI_BYTE, who[B1], TAG_DONE, MPI_COMM_WORLD);
    MPI_Send(NULL, 0, MPI_BYTE, who[A0], TAG_DONE, MPI_COMM_WORLD);
}

static void measure(cs_context *ctx, size_t bytes, const int who[4], char *sbuf, char *rbuf) {
    const cs_options *o = ctx->opt;
    int role = -1;
    for (int k = 0; k < 4; k++)
        if (who[k] == ctx->rank) role = k;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, role >= 0 ? 0 : MPI_UNDEFINED, role, &sub);
    if (role >= 0) {
        samples x = samples_new(ctx, role);
        double *rtt = x.rtt;
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
                MPI_Recv(x.idle + r * IDLE_PINGS, IDLE_PINGS, MPI_DOUBLE, who[B1], TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Barrier(sub);
            if (role == A0) {
                /* until b0 has it all: an eager send returns once the kernel holds its bytes */
                double t = ctx->timer->now();
                for (int k = 0; k < o->nruns; k++)
                    MPI_Send(sbuf, (int)bytes, MPI_BYTE, who[B0], TAG_STREAM, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, who[B0], TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                x.stream_s[r] = ctx->timer->now() - t;
            }
            if (role == B0) receive_stream(ctx, bytes, who, rbuf);
            if (role == A1) answer(who[B1]);
            if (role == B1) send_loaded(rtt, ping(ctx, who[A1], x.cap, who[B0], rtt), who[A0]);
            if (role == A0) recv_loaded(&x, r, who[B1]);
        }
        if (role == A0) write_record(ctx, bytes, who, B1, A1, &x);
        samples_free(&x);
        MPI_Comm_free(&sub);
    }
    cs_idle_barrier();
}

/* a0's side of "back" and "streamer": stream the messages to ``to``, answering ``pinger``'s
 * round trips between tests, until ``to`` has them all and ``pinger`` says stop; returns the
 * stream's time, until ``to`` had it all (its done, or for "back" the stop it sends then). */
static double stream_answering(cs_context *ctx, size_t bytes, int to, int pinger, char *sbuf) {
    const cs_options *o = ctx->opt;
    char msg[PING_BYTES];
    MPI_Request req;
    int sent = 0, stopped = 0;
    double t = ctx->timer->now(), took = 0.0;
    int timed = pinger == to; /* "back": the stop marks the stream's end */
    MPI_Isend(sbuf, (int)bytes, MPI_BYTE, to, TAG_STREAM, MPI_COMM_WORLD, &req);
    while (!stopped || !timed) {
        int flag = 0;
        MPI_Status st;
        if (req != MPI_REQUEST_NULL) {
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            if (flag && ++sent < o->nruns)
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, to, TAG_STREAM, MPI_COMM_WORLD, &req);
        }
        if (!timed) {
            MPI_Iprobe(to, TAG_DONE, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            if (flag) {
                MPI_Recv(NULL, 0, MPI_BYTE, to, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                took = ctx->timer->now() - t;
                timed = 1;
            }
        }
        if (stopped) continue;
        MPI_Iprobe(pinger, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) continue;
        if (st.MPI_TAG == TAG_STOP) {
            MPI_Recv(NULL, 0, MPI_BYTE, pinger, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (pinger == to) took = ctx->timer->now() - t;
            stopped = 1;
            continue;
        }
        MPI_Recv(msg, PING_BYTES, MPI_BYTE, pinger, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(msg, PING_BYTES, MPI_BYTE, pinger, TAG_PING, MPI_COMM_WORLD);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE); /* ``to`` has every byte: the last send completes at once */
    return took;
}

/* b0's side of "back": receive the stream, timing round trips to a0 until ``cap`` are kept;
 * returns how many were. */
static int receive_pinging(cs_context *ctx, size_t bytes, int a0, int cap, char *rbuf,
                           double *rtt) {
    int kept = 0;
    for (int k = 0; k < ctx->opt->nruns; k++) {
        MPI_Request req;
        MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, a0, TAG_STREAM, MPI_COMM_WORLD, &req);
        for (;;) {
            int done = 0;
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (done) break;
            if (kept == cap) {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                break;
            }
            rtt[kept++] = round_trip(ctx, a0);
        }
    }
    MPI_Send(NULL, 0, MPI_BYTE, a0, TAG_STOP, MPI_COMM_WORLD);
    return kept;
}

/* The "back" record: b0's round trips to a0, idle and while a0 streams to b0. */
static void measure_back(cs_context *ctx, size_t bytes, const int who[4], char *sbuf,
                         char *rbuf) {
    const cs_options *o = ctx->opt;
    int role = ctx->rank == who[A0] ? A0 : ctx->rank == who[B0] ? B0 : -1;
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, role >= 0 ? 0 : MPI_UNDEFINED, role, &pair);
    if (role >= 0) {
        samples x = samples_new(ctx, role);
        double *rtt = x.rtt;
        for (int r = 0; r < o->reps; r++) {
            MPI_Barrier(pair);
            if (role == B0) {
                ping(ctx, who[A0], IDLE_PINGS, -1, rtt);
                MPI_Send(rtt, IDLE_PINGS, MPI_DOUBLE, who[A0], TAG_PING, MPI_COMM_WORLD);
            } else {
                answer(who[B0]);
                MPI_Recv(x.idle + r * IDLE_PINGS, IDLE_PINGS, MPI_DOUBLE, who[B0], TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            MPI_Barrier(pair);
            if (role == B0) {
                send_loaded(rtt, receive_pinging(ctx, bytes, who[A0], x.cap, rbuf, rtt), who[A0]);
            } else {
                x.stream_s[r] = stream_answering(ctx, bytes, who[B0], who[B0], sbuf);
                recv_loaded(&x, r, who[B0]);
            }
        }
        if (role == A0) write_record(ctx, bytes, who, B0, A0, &x);
        samples_free(&x);
        MPI_Comm_free(&pair);
    }
    cs_idle_barrier();
}

/* The "streamer" record: b1's round trips to a0, idle and while a0 streams to b0. */
static void measure_streamer(cs_context *ctx, size_t bytes, const int who[4], char *sbuf,
                             char *rbuf) {
    const cs_options *o = ctx->opt;
    int role = -1;
    for (int k = 0; k < 4; k++)
        if (who[k] == ctx->rank && k != A1) role = k;
    MPI_Comm trio;
    MPI_Comm_split(MPI_COMM_WORLD, role >= 0 ? 0 : MPI_UNDEFINED, role, &trio);
    if (role >= 0) {
        samples x = samples_new(ctx, role);
        double *rtt = x.rtt;
        /* warm-up, not timed: b1's connection to a0 opens */
        if (role == B1) ping(ctx, who[A0], 1, -1, rtt);
        if (role == A0) answer(who[B1]);
        for (int r = 0; r < o->reps; r++) {
            MPI_Barrier(trio);
            if (role == B1) {
                ping(ctx, who[A0], IDLE_PINGS, -1, rtt);
                MPI_Send(rtt, IDLE_PINGS, MPI_DOUBLE, who[A0], TAG_PING, MPI_COMM_WORLD);
            }
            if (role == A0) {
                answer(who[B1]);
                MPI_Recv(x.idle + r * IDLE_PINGS, IDLE_PINGS, MPI_DOUBLE, who[B1], TAG_PING,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            MPI_Barrier(trio);
            if (role == A0) {
                x.stream_s[r] = stream_answering(ctx, bytes, who[B0], who[B1], sbuf);
                recv_loaded(&x, r, who[B1]);
            }
            if (role == B0) receive_stream(ctx, bytes, who, rbuf);
            if (role == B1) send_loaded(rtt, ping(ctx, who[A0], x.cap, who[B0], rtt), who[A0]);
        }
        if (role == A0) write_record(ctx, bytes, who, B1, A0, &x);
        samples_free(&x);
        MPI_Comm_free(&trio);
    }
    cs_idle_barrier();
}

void cs_queue_run(cs_context *ctx, char *sbuf, char *rbuf) {
    const cs_options *o = ctx->opt;
    int who[4];
    choose(ctx, who);
    for (int s = 0; s < o->ncoll_sizes; s++) {
        if (!cs_options_skipped(o, "contention_queue", "ping", o->coll_sizes[s]))
            measure(ctx, o->coll_sizes[s], who, sbuf, rbuf);
        if (!cs_options_skipped(o, "contention_queue", "back", o->coll_sizes[s]))
            measure_back(ctx, o->coll_sizes[s], who, sbuf, rbuf);
        if (!cs_options_skipped(o, "contention_queue", "streamer", o->coll_sizes[s]))
            measure_streamer(ctx, o->coll_sizes[s], who, sbuf, rbuf);
    }
}
