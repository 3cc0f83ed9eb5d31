/* Timers chosen at run time by name; each measures its own resolution and call overhead. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "commscope.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define CS_HAVE_TSC 1
#endif

static double gtod_now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

static double wtime_now(void) { return MPI_Wtime(); }

static double raw_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int no_init(cs_timer *self, char *err, size_t errlen) {
    (void)self; (void)err; (void)errlen;
    return 0;
}

#ifdef CS_HAVE_TSC
static double tsc_seconds_per_tick;
/* Ticks are counted from a read taken beside CLOCK_MONOTONIC_RAW at calibration. Counted
 * from power-on instead, each rank's own calibration error would scale the machine's whole
 * uptime: two ranks 3e-5 apart in rate were 0.2 s apart after two hours. */
static uint64_t tsc_base_ticks;
static double tsc_base_s;

static double tsc_now(void) {
    /* lfence keeps earlier instructions from drifting past the read */
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return tsc_base_s + (double)(t - tsc_base_ticks) * tsc_seconds_per_tick;
}

static int tsc_invariant(void) {
    unsigned a, b, c, d;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000007u) return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1u; /* CPUID.80000007H:EDX[8] = invariant TSC */
}

static int tsc_init(cs_timer *self, char *err, size_t errlen) {
    if (!tsc_invariant()) {
        snprintf(err, errlen,
                 "timer tsc refused: this CPU's TSC is not invariant (CPUID 80000007H EDX bit 8 "
                 "clear), so its rate changes with power states; use --timer monotonic_raw");
        return -1;
    }
    /* Calibrate ticks per second against CLOCK_MONOTONIC_RAW over ~50 ms, best of 3. */
    double best = 0.0;
    for (int k = 0; k < 3; k++) {
        double t0 = raw_now();
        uint64_t c0 = __rdtsc();
        while (raw_now() - t0 < 0.05) {}
        uint64_t c1 = __rdtsc();
        double t1 = raw_now();
        double hz = (double)(c1 - c0) / (t1 - t0);
        /* The ticks are read inside the span of the two clock reads, so a delay at either
         * edge (a preemption, an interrupt) adds time but no ticks: it only lowers the
         * estimate. Keep the highest; 1 us lost at an edge is 20 ppm, 20 us of drift a second
         * between ranks whose calibrations differ by that much. */
        if (k == 0 || hz > best) best = hz;
    }
    self->frequency_hz = best;
    tsc_seconds_per_tick = 1.0 / best;
    tsc_base_s = raw_now();
    tsc_base_ticks = __rdtsc();
    return 0;
}
#endif

static cs_timer timers[] = {
    {"gettimeofday", no_init, gtod_now, 0, 0, 0},
    {"mpi_wtime", no_init, wtime_now, 0, 0, 0},
    {"monotonic_raw", no_init, raw_now, 0, 0, 0},
#ifdef CS_HAVE_TSC
    {"tsc", tsc_init, tsc_now, 0, 0, 0},
#endif
};

cs_timer *cs_timer_find(const char *name) {
    for (size_t i = 0; i < sizeof timers / sizeof timers[0]; i++)
        if (strcmp(timers[i].name, name) == 0) return &timers[i];
    return NULL;
}

int cs_timer_setup(cs_timer *t, char *err, size_t errlen) {
    if (t->init(t, err, errlen) != 0) return -1;
#ifdef CS_SIMULATED
    /* SMPI's clock moves by the same fixed step on every read, and each read costs a context
     * switch: 100,000 reads took 0.18 s of wall time per rank (45 s at 256 ranks). */
    enum { CALLS = 100, STEPS = 10 };
#else
    enum { CALLS = 100000, STEPS = 1000 };
#endif
    double t0 = t->now(), x = 0.0;
    for (int i = 0; i < CALLS; i++) x += t->now();
    double t1 = t->now();
    t->overhead_s = (t1 - t0) / CALLS;
    (void)x;
    /* Resolution: the smallest positive step seen between successive reads. */
    double res = 1.0;
    for (int i = 0; i < STEPS; i++) {
        double a = t->now(), b;
        do { b = t->now(); } while (b == a);
        if (b - a < res) res = b - a;
    }
    t->resolution_s = res;
    return 0;
}

/* Testing aid: a clock that is off by a fixed offset and runs fast or slow by `drift`. */
static double (*distort_base)(void);
static double distort_offset, distort_drift, distort_t0;

static double distorted_now(void) {
    double t = distort_base();
    return t + distort_offset + distort_drift * (t - distort_t0);
}

void cs_timer_distort(cs_timer *t, double offset_s, double drift) {
    distort_base = t->now;
    distort_t0 = t->now();
    distort_offset = offset_s;
    distort_drift = drift;
    t->now = distorted_now;
}
