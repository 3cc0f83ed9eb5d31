/* Drives the window scheduler with a fake clock and scripted operation times, one rank,
 * and prints what it decided as JSON lines (checked by tests/engine/test_schedule.py).
 * The clock advances 1 ns per read, so busy-waits end; an operation advances it by its
 * scripted duration, and a stall makes one read during a wait jump ahead, as when a rank loses
 * its core while it spins. Everything is deterministic. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

static double fake_t = 1000.0, stall_s;
static int stall_in; /* reads until the stall, 0: none pending */
static double fake_now(void) {
    if (stall_in > 0 && --stall_in == 0) fake_t += stall_s;
    return fake_t += 1e-9;
}

typedef struct script {
    double base_s;      /* every launch takes this long */
    long slow_launch;   /* except slow_n launches from this index (counting stage 0), -1: none */
    int slow_n;
    double slow_s;
    long stall_after;   /* the wait after this launch jumps stall_s (-1: none) */
    double stall_s;
} script;

static void scripted(void *state, long i) {
    script *s = state;
    int slow = s->slow_launch >= 0 && i >= s->slow_launch && i < s->slow_launch + s->slow_n;
    fake_t += slow ? s->slow_s : s->base_s;
    if (i == s->stall_after) { /* reads: end of this launch, before the wait, first spin */
        stall_in = 3;
        stall_s = s->stall_s;
    }
}

static void scenario(const char *name, const char *stop, int max_launches, script sc) {
    cs_options o;
    char err[CS_ERRLEN];
    char *argv[] = {"x", NULL};
    cs_options_parse(1, argv, &o, err, sizeof err);
    o.stop = stop;
    o.max_launches = max_launches;
    o.coll_budget_s = 1e9;
    cs_timer timer = {"fake", NULL, fake_now, 0, 1e-9, 1e-9};
    cs_context ctx = {&o, &timer, NULL, 0, 1, 0, {0, 0, 0, 0, 0}, 1e-6}; /* t_bcast 1 us */
    size_t cap = (size_t)max_launches + 8;
    cs_sched_result r = {.times_s = malloc(sizeof(double) * cap),
                         .flags = malloc(sizeof(int) * cap),
                         .delays_s = malloc(sizeof(double) * cap),
                         .stage = malloc(sizeof(int) * cap),
                         .windows_s = malloc(sizeof(double) * cap)};
    cs_schedule_run(&ctx, scripted, &sc, &r);
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "scenario", name);
    cs_json_str(&j, "stop", r.stop ? r.stop : "");
    cs_json_raw_begin(&j, "times_s", '[');
    for (int i = 0; i < r.n; i++) cs_json_elem_num(&j, r.times_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "flags", '[');
    for (int i = 0; i < r.n; i++) cs_json_elem_int(&j, r.flags[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "start_delays_s", '[');
    for (int i = 0; i < r.n; i++) cs_json_elem_num(&j, r.delays_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "stage", '[');
    for (int i = 0; i < r.n; i++) cs_json_elem_int(&j, r.stage[i]);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "windows_s", '[');
    for (int i = 0; i < r.nstages; i++) cs_json_elem_num(&j, r.windows_s[i]);
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
    free(r.times_s); free(r.flags); free(r.delays_s); free(r.stage); free(r.windows_s);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    scenario("steady", "b", 1000, (script){10e-6, -1, 0, 0, -1, 0});
    /* launch 9 = stage 1, launch 5: takes 30 us in an ~11 us window */
    scenario("one_slow", "b", 1000, (script){10e-6, 9, 1, 30e-6, -1, 0});
    /* all of stage 1 takes 30 us: the window grows, at most doubling, then comes back down */
    scenario("slow_stage", "b", 1000, (script){10e-6, 4, 8, 30e-6, -1, 0});
    /* the rank loses its core for 20 us while it waits for stage 1, launch 2 */
    scenario("stall", "b", 1000, (script){10e-6, -1, 0, 0, 5, 20e-6});
    /* stage 0's first launch takes 100 us (b1 = 35.75 us), then a 200 us stall in stage 1 */
    scenario("late_shrinks", "b", 1000, (script){10e-6, 0, 1, 100e-6, 5, 200e-6});
    scenario("rule_a", "a", 1000, (script){10e-6, -1, 0, 0, -1, 0});
    scenario("max_launches", "rse:0.0000001", 20, (script){10e-6, 9, 1, 30e-6, -1, 0});
    MPI_Finalize();
    return 0;
}
