/* commscope-clock: the clock a core really runs at while it is busy, no MPI.
 *
 * One thread per cpu asked for, each pinned to its cpu, all running at once. Each thread times
 * a long chain of dependent 64-bit integer additions with CLOCK_MONOTONIC_RAW: every addition
 * needs the previous one's result and takes one cycle, so additions per second are cycles per
 * second. The chain is unrolled, and an empty asm statement after every addition makes the
 * compiler keep each one (it cannot fold the chain into one multiply-add). Preemption, other
 * processes and a hypervisor can only make a repeat slower, so the fastest repeat is the clock.
 *
 * Output: one JSON line on stdout with every repeat of every cpu in GHz. Exit status 0 on
 * success, 2 on bad options, 1 when a thread cannot be pinned or started.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commscope.h"

#define CLOCK_PROGRAM "commscope-clock"
#define MAX_REPEATS 1000
#define UNROLL 32

static const char *usage =
    "usage: commscope-clock --cpus LIST [--adds N] [--repeats R] [--warmup S]\n"
    "       commscope-clock --version\n"
    "Times N dependent integer additions (1 cycle each) R times on every cpu of LIST at once\n"
    "(e.g. 0,1) after S seconds of warm-up, and writes one JSON line: GHz per repeat and cpu.\n";

typedef struct worker {
    int cpu;
    int seen_cpu; /* sched_getcpu() after pinning, -1 on failure */
    double *ghz;  /* repeats */
} worker;

static struct {
    uint64_t adds; /* per repeat, a multiple of UNROLL */
    int repeats;
    double warmup_s;
    pthread_barrier_t barrier;
} g = {.adds = 20000000ULL, .repeats = 21, .warmup_s = 0.2};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_RAW, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* x += step, kept as one instruction on a register: the asm hides x's value from the
 * optimiser, so the next addition must wait for this one. */
#define ADD1(x, step) do { (x) += (step); __asm__ volatile("" : "+r"(x)); } while (0)
#define ADD4(x, s) do { ADD1(x, s); ADD1(x, s); ADD1(x, s); ADD1(x, s); } while (0)
#define ADD16(x, s) do { ADD4(x, s); ADD4(x, s); ADD4(x, s); ADD4(x, s); } while (0)

static uint64_t chain(uint64_t x, uint64_t step, uint64_t blocks) {
    __asm__ volatile("" : "+r"(step)); /* not a constant the compiler could fold */
    for (uint64_t i = 0; i < blocks; i++) {
        ADD16(x, step);
        ADD16(x, step);
    }
    return x;
}

static volatile uint64_t sink; /* results go somewhere, so the chains are not dead code */

static void *run_worker(void *arg) {
    worker *w = arg;
    w->seen_cpu = sched_getcpu();
    pthread_barrier_wait(&g.barrier);
    uint64_t x = (uint64_t)w->cpu;
    double until = now() + g.warmup_s; /* let the clock ramp up before timing */
    while (now() < until) x = chain(x, 1, 1u << 16);
    for (int r = 0; r < g.repeats; r++) {
        pthread_barrier_wait(&g.barrier); /* every cpu busy at the same time */
        double t0 = now();
        x = chain(x, 3, g.adds / UNROLL);
        double t1 = now();
        w->ghz[r] = t1 > t0 ? (double)g.adds / (t1 - t0) / 1e9 : 0.0;
    }
    sink = x;
    return NULL;
}

static int parse_u64(const char *flag, const char *text, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || errno || *text == '-' || v < lo || v > hi) {
        fprintf(stderr, CLOCK_PROGRAM ": %s %s: expected an integer from %llu to %llu\n", flag,
                text, (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* "0,2,3" into cpus[]; returns the count, -1 on error. */
static int parse_cpus(const char *text, int *cpus) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v >= CPU_SETSIZE || n == CS_MAX_CPUS ||
            (*end && *end != ',')) {
            fprintf(stderr, CLOCK_PROGRAM ": --cpus %s: expected cpu numbers like 0,1\n", text);
            return -1;
        }
        for (int k = 0; k < n; k++) {
            if (cpus[k] == (int)v) {
                fprintf(stderr, CLOCK_PROGRAM ": --cpus %s: cpu %ld given twice\n", text, v);
                return -1;
            }
        }
        cpus[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) fprintf(stderr, CLOCK_PROGRAM ": --cpus: give at least one cpu\n");
    return n ? n : -1;
}

static void write_result(const worker *w, int n) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "program", CLOCK_PROGRAM);
    cs_json_str(&j, "engine_version", CS_ENGINE_VERSION);
    cs_json_int(&j, "schema_version", CS_SCHEMA_VERSION);
    cs_json_str(&j, "method", "dependent 64-bit integer additions, 1 cycle each");
    cs_json_str(&j, "timer", "CLOCK_MONOTONIC_RAW");
    cs_json_int(&j, "adds", (long long)g.adds);
    cs_json_int(&j, "repeats", g.repeats);
    cs_json_num(&j, "warmup_s", g.warmup_s);
    cs_json_raw_begin(&j, "cpus", '[');
    for (int k = 0; k < n; k++) {
        cs_json_raw_begin(&j, NULL, '{');
        cs_json_int(&j, "cpu", w[k].cpu);
        cs_json_raw_begin(&j, "ghz", '[');
        for (int r = 0; r < g.repeats; r++) cs_json_elem_num(&j, w[k].ghz[r]);
        cs_json_raw_end(&j, ']');
        cs_json_raw_end(&j, '}');
    }
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
}

int main(int argc, char **argv) {
    static int cpus[CS_MAX_CPUS];
    int n = 0;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("{\"engine_version\":\"%s\",\"schema_version\":%d,\"program\":\"%s\"}\n",
               CS_ENGINE_VERSION, CS_SCHEMA_VERSION, CLOCK_PROGRAM);
        return 0;
    }
    for (int i = 1; i < argc; i += 2) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, CLOCK_PROGRAM ": %s needs a value\n%s", f, usage);
            return 2;
        }
        const char *v = argv[i + 1];
        uint64_t u;
        if (strcmp(f, "--cpus") == 0) {
            if ((n = parse_cpus(v, cpus)) < 0) return 2;
        } else if (strcmp(f, "--adds") == 0) {
            if (parse_u64(f, v, UNROLL, UINT64_C(1) << 40, &u) < 0) return 2;
            g.adds = u / UNROLL * UNROLL;
        } else if (strcmp(f, "--repeats") == 0) {
            if (parse_u64(f, v, 1, MAX_REPEATS, &u) < 0) return 2;
            g.repeats = (int)u;
        } else if (strcmp(f, "--warmup") == 0) {
            char *end;
            errno = 0;
            double s = strtod(v, &end);
            if (end == v || *end || errno || !(s >= 0 && s <= 60)) {
                fprintf(stderr, CLOCK_PROGRAM ": --warmup %s: expected seconds from 0 to 60\n", v);
                return 2;
            }
            g.warmup_s = s;
        } else {
            fprintf(stderr, CLOCK_PROGRAM ": unknown option %s\n%s", f, usage);
            return 2;
        }
    }
    if (n <= 0) {
        fprintf(stderr, CLOCK_PROGRAM ": --cpus is required\n%s", usage);
        return 2;
    }
    worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    double *ghz = calloc((size_t)n * (size_t)g.repeats, sizeof *ghz);
    if (!w || !t || !ghz) {
        fprintf(stderr, CLOCK_PROGRAM ": out of memory\n");
        return 1;
    }
    pthread_barrier_init(&g.barrier, NULL, (unsigned)n);
    int started = 0, failed = 0;
    for (int k = 0; k < n; k++) {
        w[k].cpu = cpus[k];
        w[k].ghz = ghz + (size_t)k * (size_t)g.repeats;
        pthread_attr_t attr;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[k], &set);
        pthread_attr_init(&attr);
        int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
        if (rc == 0) rc = pthread_create(&t[k], &attr, run_worker, &w[k]);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            fprintf(stderr, CLOCK_PROGRAM ": cannot run a thread on cpu %d: %s\n", cpus[k],
                    strerror(rc));
            failed = 1;
            break;
        }
        started++;
    }
    if (failed) return 1; /* the started threads wait at the barrier for ever: exit ends them */
    for (int k = 0; k < started; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < n; k++) {
        if (w[k].seen_cpu != w[k].cpu) {
            fprintf(stderr, CLOCK_PROGRAM ": the thread for cpu %d ran on cpu %d; is the process"
                    " confined to other cpus?\n", w[k].cpu, w[k].seen_cpu);
            return 1;
        }
    }
    write_result(w, n);
    free(ghz);
    free(t);
    free(w);
    return 0;
}
