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

/* ---- pairs for point-to-point: rank 0 with one partner per level ---- */
typedef struct cs_pair {
    const char *label; /* intra-socket, inter-socket, intra-node, inter-node */
    int a, b;
} cs_pair;

#define CS_MAX_PAIRS 4
/* Pick pairs on rank 0 from topo; wanted is "auto" or a comma list of labels. */
int cs_pairs_choose(const cs_topo *topo, const char *wanted, cs_pair *pairs, int *npairs,
                    char *err, size_t errlen);

/* ---- options, identical on every rank ---- */
typedef struct cs_options {
    const char *ops;     /* comma list */
    const char *pairs;   /* "auto" or comma list */
    const char *timer;
    size_t *sizes;
    int nsizes;
    const char *skip;    /* comma list of op:pair:bytes already measured */
    int window;
    int warmup;
    int min_samples;
    int max_samples;
    double target_rse;
    double point_budget_s;
    double sample_min_s; /* a sample lasts at least this long (beats timer resolution) */
    size_t window_bytes_cap; /* receive slots for a window never exceed this */
} cs_options;

int cs_options_parse(int argc, char **argv, cs_options *o, char *err, size_t errlen);
int cs_options_skipped(const cs_options *o, const char *op, const char *pair, size_t bytes);

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
void cs_json_raw_begin(cs_json *j, const char *key, char open); /* nested [ or { */
void cs_json_raw_end(cs_json *j, char close);
void cs_json_elem_int(cs_json *j, long long value);
void cs_json_elem_num(cs_json *j, double value);
void cs_json_string_value(FILE *out, const char *s);

/* ---- buffers ---- */
void *cs_buffer_alloc(size_t bytes); /* page-aligned, touched, never NULL (dies instead) */

/* ---- benchmarks: an entry per operation ---- */
typedef struct cs_context {
    const cs_options *opt;
    cs_timer *timer;
    const cs_topo *topo;
    int rank;
    int npoints; /* points written so far (rank 0) */
} cs_context;

typedef struct cs_op {
    const char *name;
    /* Measures one point for the pair; every rank calls it, ranks outside the pair return. */
    void (*measure)(cs_context *ctx, const cs_pair *pair, size_t bytes);
} cs_op;

const cs_op *cs_op_find(const char *name);
void cs_p2p_init(cs_context *ctx); /* allocate buffers for the largest size */

/* ---- errors ---- */
void cs_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
