/* Load awareness: how much CPU other processes took on each host while the ranks measured,
 * and whether a host ran more ranks than it let them use CPUs.
 *
 * Every rank reads the host's CPU counters (/proc/stat, first line), its own CPU time and the
 * time it spent ready to run but waiting for a CPU (/proc/self/schedstat, in ns: exact where
 * the host's counters step by a 10 ms tick) at the start and at the end. Hosts are told apart by the kernel's boot id, not by host name:
 * the nodes of the virtual cluster are namespaces of one machine and share its CPUs. Per
 * host, the others' share is (busy - the ranks' own CPU time) / (elapsed x CPUs): what
 * mpirun, daemons and every other process on the machine used. Rank 0 writes the table as
 * the "load" member of the end record. Under SMPI the host's counters say nothing about the
 * simulated cluster: nothing is measured.
 */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "commscope.h"

enum { BOOT_ID_LEN = 40, MASK_BYTES = sizeof(cpu_set_t), KERNEL_LEN = 65, MODEL_LEN = 96 };

typedef struct sample {
    double busy_s, total_s; /* host: all CPUs, from /proc/stat */
    double own_s;           /* this process */
    double wait_s;          /* this process, ready but not running; -1: unknown */
    double wall_s;
} sample;

typedef struct share {     /* what each rank sends to rank 0 */
    char boot_id[BOOT_ID_LEN];
    char kernel[KERNEL_LEN];   /* uname release: a check names a changed kernel */
    char cpu_model[MODEL_LEN]; /* /proc/cpuinfo "model name", empty when absent */
    double busy_s, total_s, own_s, wait_s, wall_s;
    unsigned char mask[MASK_BYTES];
} share;

static sample start, stop;

static sample read_sample(void) {
    sample s = {-1.0, -1.0, 0.0, -1.0, 0.0};
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                    &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        double tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
        double idle = (double)(v[3] + v[4]) * tick; /* idle and iowait */
        s.busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
        s.total_s = s.busy_s + idle;
    }
    if (f) fclose(f);
    unsigned long long run_ns, wait_ns;
    f = fopen("/proc/self/schedstat", "r");
    if (f && fscanf(f, "%llu %llu", &run_ns, &wait_ns) == 2) s.wait_s = 1e-9 * (double)wait_ns;
    if (f) fclose(f);
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    s.own_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s.wall_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return s;
}

void cs_boot_id(char *out, size_t len) {
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || !fgets(out, (int)len, f)) snprintf(out, len, "unknown");
    if (f) fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* The first "model name" of /proc/cpuinfo (empty where the kernel gives none). */
static void cpu_model(char *out, size_t len) {
    char line[256];
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, len, "%s", colon);
        break;
    }
    if (f) fclose(f);
}

void cs_load_start(void) { start = read_sample(); }
void cs_load_stop(void) { stop = read_sample(); }

/* Collective; rank 0 adds "load": [{hosts, ranks, cpus, others_share, ...}] to j. */
void cs_load_write(cs_context *ctx, cs_json *j) {
#ifdef CS_SIMULATED
    (void)ctx, (void)j;
#else
    sample end = stop;
    share mine;
    memset(&mine, 0, sizeof mine);
    cs_boot_id(mine.boot_id, sizeof mine.boot_id);
    struct utsname names;
    if (uname(&names) == 0) snprintf(mine.kernel, sizeof mine.kernel, "%s", names.release);
    cpu_model(mine.cpu_model, sizeof mine.cpu_model);
    int readable = start.total_s >= 0 && end.total_s >= 0;
    mine.busy_s = readable ? end.busy_s - start.busy_s : -1.0;
    mine.total_s = readable ? end.total_s - start.total_s : -1.0;
    mine.own_s = end.own_s - start.own_s;
    mine.wait_s = start.wait_s >= 0 && end.wait_s >= 0 ? end.wait_s - start.wait_s : -1.0;
    mine.wall_s = end.wall_s - start.wall_s;
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    memcpy(mine.mask, &set, MASK_BYTES);
    share *all = ctx->rank == 0 ? malloc(sizeof(share) * (size_t)ctx->nranks) : NULL;
    if (ctx->rank == 0 && !all) cs_die("rank 0: out of memory for the load table");
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    if (ctx->rank != 0) return;
    cs_json_raw_begin(j, "load", '[');
    for (int r = 0; r < ctx->nranks; r++) {
        int first = 1; /* a host is reported at its lowest rank */
        for (int q = 0; q < r && first; q++) first = strcmp(all[q].boot_id, all[r].boot_id) != 0;
        if (!first) continue;
        int ranks = 0;
        double own = 0.0, waited = -1.0; /* largest share of the run a rank waited */
        cpu_set_t usable;
        CPU_ZERO(&usable);
        cs_json_raw_begin(j, NULL, '{');
        cs_json_raw_begin(j, "nodes", '[');
        for (int q = r; q < ctx->nranks; q++) {
            if (strcmp(all[q].boot_id, all[r].boot_id) != 0) continue;
            int named = 0; /* node names of this host's ranks, once each */
            for (int p = r; p < q && !named; p++)
                named = strcmp(all[p].boot_id, all[q].boot_id) == 0 &&
                        strcmp(ctx->topo->ranks[p].node, ctx->topo->ranks[q].node) == 0;
            if (!named) cs_json_elem_str(j, ctx->topo->ranks[q].node);
            ranks++;
            own += all[q].own_s;
            if (all[q].wait_s >= 0 && all[q].wall_s > 0 && all[q].wait_s / all[q].wall_s > waited)
                waited = all[q].wait_s / all[q].wall_s;
            cpu_set_t m;
            memcpy(&m, all[q].mask, MASK_BYTES);
            CPU_OR(&usable, &usable, &m);
        }
        cs_json_raw_end(j, ']');
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        cs_json_int(j, "ranks", ranks);
        cs_json_int(j, "cpus", CPU_COUNT(&usable));
        cs_json_int(j, "host_cpus", online);
        if (all[r].kernel[0]) cs_json_str(j, "kernel", all[r].kernel);
        if (all[r].cpu_model[0]) cs_json_str(j, "cpu_model", all[r].cpu_model);
        if (waited >= 0) cs_json_num(j, "ranks_wait_share", waited);
        if (all[r].total_s > 0) {
            double others = all[r].busy_s - own;
            cs_json_num(j, "elapsed_cpu_s", all[r].total_s);
            cs_json_num(j, "tick_s", 1.0 / (double)sysconf(_SC_CLK_TCK)); /* counters' step */
            cs_json_num(j, "ranks_cpu_s", own);
            cs_json_num(j, "others_share", others > 0 ? others / all[r].total_s : 0.0);
        }
        cs_json_raw_end(j, '}');
    }
    cs_json_raw_end(j, ']');
    free(all);
#endif
}
