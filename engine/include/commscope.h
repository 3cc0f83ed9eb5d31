/* commscope-engine: the measuring half of commscope.
 *
 * Contract: rank 0 writes JSON lines to stdout (a header record, one record per measured
 * point with its raw samples, an end record); Python does all analysis. Any error on any rank
 * ends the job through cs_die() -> MPI_Abort with a one-line message naming the rank.
 * Functions returning int return 0 on success and -1 on error (with a message in err).
 * Nothing allocates, prints or does I/O inside a timed region.
 */
#ifndef COMMSCOPE_H
#define COMMSCOPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CS_ENGINE_VERSION "0.1.0"
#define CS_SCHEMA_VERSION 1
#define CS_ERRLEN 256
#define CS_MAX_CPUS 256
#define CS_NAMELEN 256
/* Largest message: MPI counts are ints (commscope.limits.MAX_MESSAGE_BYTES). */
#define CS_MAX_MESSAGE_BYTES 2147483647

/* ---- timers: one struct of function pointers per clock, chosen by name at run time ---- */
typedef struct cs_timer {
    const char *name;
    int (*init)(struct cs_timer *self, char *err, size_t errlen);
    double (*now)(void); /* seconds since an arbitrary origin */
    double frequency_hz; /* TSC only, else 0 */
    double resolution_s; /* smallest observed positive step */
    double overhead_s;   /* mean cost of one now() call */
} cs_timer;

cs_timer *cs_timer_find(const char *name);
int cs_timer_setup(cs_timer *t, char *err, size_t errlen); /* init + measure resolution/overhead */
/* Testing only: this rank's clock reads offset_s + (1 + drift) * true time. */
void cs_timer_distort(cs_timer *t, double offset_s, double drift);

/* ---- topology: where each rank runs ---- */
typedef struct cs_rankinfo {
    int rank;
    int node_index;
    int socket; /* -1 when the rank is not bound inside one socket */
    int cpu;    /* cpu the rank ran on when asked */
    int pid;
    int ncpus;  /* number of entries in affinity */
    int affinity[CS_MAX_CPUS];
    char node[CS_NAMELEN];
} cs_rankinfo;

typedef struct cs_topo {
    int nranks;
    cs_rankinfo *ranks; /* filled on rank 0 only */
    const char *socket_source;
} cs_topo;

int cs_topo_gather(cs_topo *topo, char *err, size_t errlen); /* collective */
int cs_pin_to_core(int by_package, int mode, char *err, size_t errlen); /* collective: one core per rank of a node (by_package: rank i of a node on package i; mode 2: core rank mod cores) */

/* ---- pairs for point-to-point: rank 0 with one partner per level ---- */
typedef struct cs_pair {
    const char *label; /* intra-socket, inter-socket, intra-node, inter-node */
    int a, b;
} cs_pair;

#define CS_MAX_PAIRS 4
/* Pick pairs on rank 0 from topo; wanted is "auto" or a comma list of labels. */
int cs_pairs_choose(const cs_topo *topo, const char *wanted, cs_pair *pairs, int *npairs,
                    char *err, size_t errlen);

/* ---- JSON lines on rank 0 ---- */
typedef struct cs_json {
    FILE *out;
    int first; /* no comma before the next member */
} cs_json;

void cs_json_begin(cs_json *j, FILE *out);
void cs_json_end(cs_json *j); /* closes the object, newline, flush */
void cs_json_key(cs_json *j, const char *key);
void cs_json_str(cs_json *j, const char *key, const char *value);
void cs_json_int(cs_json *j, const char *key, long long value);
void cs_json_num(cs_json *j, const char *key, double value);
void cs_json_literal(cs_json *j, const char *key, const char *literal); /* null, true, false */
void cs_json_raw_begin(cs_json *j, const char *key, char open); /* nested [ or { */
void cs_json_raw_end(cs_json *j, char close);
void cs_json_elem_int(cs_json *j, long long value);
void cs_json_elem_num(cs_json *j, double value);
void cs_json_elem_str(cs_json *j, const char *value);
void cs_json_string_value(FILE *out, const char *s);
void cs_json_pair(cs_json *j, const cs_pair *pair); /* "pair" label and "ranks" [a, b] */

/* ---- options, identical on every rank ---- */
/* One member per row of engine/options.json (help texts there), by type: int and switch an
 * int, number a double, sizes a size_t array with its count n<name>, the others a string. */
#include "cs_options_table.h"

#define CS_MEMBER_INT(name) int name;
#define CS_MEMBER_SWITCH(name) int name;
#define CS_MEMBER_NUMBER(name) double name;
#define CS_MEMBER_SIZES(name) size_t *name; int n##name;
#define CS_MEMBER_NAMES(name) const char *name;
#define CS_MEMBER_CHOICE(name) const char *name;
#define CS_MEMBER_TEXT(name) const char *name;
#define CS_MEMBER_STOP(name) const char *name;
#define CS_MEMBER_DISTORT(name) const char *name;
#define CS_MEMBER(name, flag, type, ...) CS_MEMBER_##type(name)

typedef struct cs_options {
    CS_OPTIONS(CS_MEMBER)
    /* --test-distort read: rank whose clock is distorted (-1 for none), offset and drift */
    int distort_rank;
    double distort_offset_s, distort_drift;
} cs_options;

int cs_options_parse(int argc, char **argv, cs_options *o, char *err, size_t errlen);
int cs_options_skipped(const cs_options *o, const char *op, const char *pair, size_t bytes);
void cs_options_write(cs_json *j, const cs_options *o); /* the header's "options" member */
void cs_options_print_table(FILE *out);                  /* --options-json */
void cs_options_usage(FILE *out);                        /* --help */
int cs_list_has(const char *list, const char *name); /* exact member of a comma list */

/* ---- buffers ---- */
void *cs_buffer_alloc(size_t bytes); /* page-aligned, touched, never NULL (dies instead) */
void cs_buffer_free(void *p);

/* ---- clocks: global time = local + offset + drift * (local - ref) ---- */
typedef struct cs_clock {
    double offset_s, drift, ref_s;
    double rtt_s;   /* round trip of the exchange the offset came from (min RTT) */
    double error_s; /* residual error estimate of the offset */
} cs_clock;

/* ---- benchmarks: an entry per operation ---- */
typedef struct cs_context {
    const cs_options *opt;
    cs_timer *timer;
    const cs_topo *topo;
    int rank, nranks;
    int npoints; /* points written so far (rank 0) */
    cs_clock clock;
    double t_bcast_s; /* upper estimate of broadcasting a double from rank 0 */
    /* The MPI_Comm the point is measured on (rank and nranks are within it); NULL for
     * MPI_COMM_WORLD. A pointer, so that programs without mpi.h can include this header. */
    const void *comm;
} cs_context;

#ifdef MPI_VERSION
static inline MPI_Comm cs_comm(const cs_context *ctx) {
    return ctx->comm ? *(const MPI_Comm *)ctx->comm : MPI_COMM_WORLD;
}
#endif

static inline double cs_global_now(const cs_context *ctx) {
    double t = ctx->timer->now();
    return t + ctx->clock.offset_s + ctx->clock.drift * (t - ctx->clock.ref_s);
}

typedef struct cs_op {
    const char *name;
    /* Measures one point for the pair; every rank calls it, ranks outside the pair return. */
    void (*measure)(cs_context *ctx, const cs_pair *pair, size_t bytes);
} cs_op;

const cs_op *cs_op_find(const char *name);
/* Samples of a point so far; cs_rse_add takes one more and says whether to stop: 0 go on,
 * 1 relative standard error <= --target-rse (after --min-samples), 2 --point-budget spent,
 * 3 --max-samples reached. */
typedef struct cs_rse {
    int n;
    double mean, m2;
} cs_rse;
int cs_rse_add(cs_rse *r, const cs_options *o, double x, double elapsed_s);
void cs_p2p_init(cs_context *ctx); /* allocate buffers for the largest size */

/* Collectives: every rank calls measure for each size. */
typedef struct cs_coll_op cs_coll_op;
const cs_coll_op *cs_coll_find(const char *name);
const char *cs_coll_names(void); /* comma list, for messages */
int cs_coll_sizeless(const cs_coll_op *op); /* barrier and wait patterns: measured once, 0 bytes */
/* One point on ctx's communicator, recorded under group ("world" or "ranks 0-N"). */
void cs_coll_measure(cs_context *ctx, const cs_coll_op *op, size_t bytes, const char *group);
/* One size of op on every --procs group (or the world), minus --skip'd points; an op this MPI
 * library lacks is measured nowhere and its reason kept for the end record. */
void cs_coll_run(cs_context *ctx, const cs_coll_op *op, int size_index);
void cs_coll_write_refused(cs_json *j); /* end member "refused", rank 0 */

/* Contention t(m, cf) at every requested level (collective). */
void cs_contention_run(cs_context *ctx);
/* Level "queue": round trips from a node while it streams m bytes out (ops/queue.c). */
void cs_queue_run(cs_context *ctx, char *sbuf, char *rbuf);

/* LogGP round trips and overheads (Netgauge's PRTT(n, d, s)) for every pair and LogGP size. */
void cs_loggp_init(cs_context *ctx); /* allocate buffers for the largest LogGP size */
void cs_loggp_run(cs_context *ctx, const cs_pair *pairs, int npairs);

/* All-pairs matrix (mpiGraph's shifted schedule) and effective bisection (Netgauge): ops/pairs.c. */
void cs_pairs_init(cs_context *ctx); /* buffers for the largest --matrix-sizes; needs 2 ranks */
void cs_matrix_run(cs_context *ctx);
void cs_bisection_run(cs_context *ctx);
/* One-sided MPI-3 RMA: put, get, accumulate latency and bandwidth under fence, lock, pscw. */
void cs_rma_init(cs_context *ctx); /* allocate the sample array */
void cs_rma_run(cs_context *ctx, const cs_pair *pairs, int npairs);
/* osu_mbw_mr's multi-pair bandwidth and message rate, for each --pairs-per-step k (collective). */
void cs_mbw_run(cs_context *ctx);

/* Clock synchronisation (collective); fills ctx->clock on every rank. */
int cs_clock_sync(cs_context *ctx, char *err, size_t errlen);
void cs_clock_write(cs_context *ctx, cs_json *j); /* header member, rank 0 (collective) */
void cs_clock_check(cs_context *ctx, cs_json *j); /* end member: drift since sync (collective) */
/* ---- load: other processes' CPU share per host during the run ---- */
void cs_load_start(void);                        /* every rank, before measuring */
void cs_load_stop(void);                         /* every rank, after its last point */
void cs_load_write(cs_context *ctx, cs_json *j); /* end member, rank 0 (collective) */
void cs_boot_id(char *out, size_t len);          /* this host's boot id, or "unknown" */
/* ---- TCP loss: segments sent, resent and timed out per network namespace ---- */
void cs_tcp_loss_start(void);                        /* every rank, before measuring */
void cs_tcp_loss_stop(void);                         /* every rank, after its last point */
void cs_tcp_loss_write(cs_context *ctx, cs_json *j); /* end member, rank 0 (collective) */

void cs_clock_resync(cs_context *ctx);                 /* before a point (collective) */
void cs_clock_recheck(cs_context *ctx, double out[2]); /* after a point (collective) */

/* The MPIPerf window scheduler: runs launch(state, i) at synchronised start times. */
typedef struct cs_sched_result {
    int n;            /* launches kept (stage 0 excluded) */
    double *times_s;  /* max over ranks of end - scheduled start (rank 0) */
    int *flags;       /* 0 valid, 1 late start, 2 overrun, 3 both (rank 0) */
    double *delays_s; /* latest rank's start past the scheduled one (rank 0; naive: 0) */
    int *stage;
    int nstages;
    double *windows_s; /* window of each counted stage */
    const char *stop;
    double late_tol_s; /* a launch is late when it begins more than this after its start */
} cs_sched_result;
void cs_schedule_run(cs_context *ctx, void (*launch)(void *state, long i), void *state,
                     cs_sched_result *res);
/* A barrier that sleeps while it waits: ranks outside a measurement must not spin on cores
 * the measured ranks need (with more ranks than cores, a polling MPI would steal them). */
void cs_idle_barrier(void);
/* Wait until global time ``start`` (``t`` = global time now): spin, or sleep when simulated. */
/* Start a measured step together: a barrier that lets the core go (cs_idle_barrier); under
 * SMPI also one common instant after every rank has left it. */
void cs_step_start(const cs_context *ctx);
void cs_wait_until(const cs_context *ctx, double start, double t);
/* Under SMPI, names the traffic that follows: the measured operation's (measured = 1,
 * category "benchmark") or commscope's own (0, "sync"), for `simulate run --netload`. */
#ifdef CS_SIMULATED
void cs_trace_phase(int measured);
#else
#define cs_trace_phase(measured) ((void)(measured)) /* real MPI: no call in a timed region */
#endif
void cs_naive_run(cs_context *ctx, void (*launch)(void *state, long i), void *state,
                  cs_sched_result *res);

/* ---- errors ---- */
void cs_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
