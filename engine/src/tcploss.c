/* TCP loss: what the hosts' TCP sent and resent while the ranks measured.
 *
 * Between nodes on Ethernet most MPIs run over TCP. A lost segment is sent again; when fast
 * retransmit cannot recover it, a retransmission timeout stalls the connection for at least
 * Linux's minimum RTO of 200 ms, and every timing that waited on it carries that stall.
 * Every rank reads its network namespace's counters (/proc/net/snmp: Tcp OutSegs and
 * RetransSegs; /proc/net/netstat: TcpExt TCPTimeouts) at the start and at the end. They count
 * the whole namespace, so other traffic of the host counts too; OutSegs counts new segments
 * only (RFC 1213: not those holding only retransmitted data). Rank 0 writes per namespace,
 * told apart by boot id and the namespace's inode (the virtual cluster's nodes are namespaces
 * of one machine), the latest end reading of its ranks less the earliest start reading, as
 * the "tcp_loss" member of the end record, with the namespace's congestion control (BBR
 * restarts a connection that idled between exchanges below the link rate; CUBIC does not)
 * its tcp_limit_output_bytes (how much one socket may queue below TCP: a fan-out's
 * sockets overflow a small shaped queue when each may fill it) and its
 * tcp_slow_start_after_idle (1: a connection idle past its RTO sends again from the initial
 * window, under every congestion control but those that set the rate themselves, as BBR
 * does), all per namespace. Under SMPI the
 * host's counters say nothing about the simulated network: nothing is measured.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commscope.h"

#ifdef CS_SIMULATED
void cs_tcp_loss_start(void) {}
void cs_tcp_loss_stop(void) {}
void cs_tcp_loss_write(cs_context *ctx, cs_json *j) { (void)ctx, (void)j; }
#else
enum { BOOT_ID_LEN = 40, LINE_LEN = 4096, CC_LEN = 16 };

typedef struct counters {
    long long out, retrans, timeouts; /* -1: unreadable */
} counters;

typedef struct tcp_share { /* what each rank sends to rank 0 */
    char boot_id[BOOT_ID_LEN];
    unsigned long long netns;
    char congestion[CC_LEN]; /* "": unreadable */
    long long limit_output;  /* -1: unreadable */
    long long idle_restart;  /* tcp_slow_start_after_idle; -1: unreadable */
    counters start, stop;
} tcp_share;

static counters start, stop;
static char congestion[CC_LEN];
static long long limit_output = -1, idle_restart = -1;

/* This namespace's congestion control for new connections, e.g. "cubic" ("" if unreadable). */
static void read_congestion(void) {
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
    congestion[0] = '\0';
    if (!f) return;
    if (!fgets(congestion, sizeof congestion, f)) congestion[0] = '\0';
    congestion[strcspn(congestion, " \n")] = '\0';
    fclose(f);
}

/* A count this namespace's kernel holds in /proc/sys, e.g. net.ipv4.tcp_limit_output_bytes
 * (-1 if unreadable). */
static long long read_sysctl_count(const char *path) {
    FILE *f = fopen(path, "r");
    long long x = -1;
    if (!f) return -1;
    if (fscanf(f, "%lld", &x) != 1 || x < 0) x = -1;
    fclose(f);
    return x;
}

/* Value of field `name` in a /proc/net table: a "Prefix: names..." line followed by a
 * "Prefix: values..." line; -1 when the file, the line or the field is missing. */
static long long proc_field(const char *path, const char *prefix, const char *name) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char names[LINE_LEN], values[LINE_LEN];
    long long found = -1;
    size_t plen = strlen(prefix);
    while (found < 0 && fgets(names, sizeof names, f)) {
        if (strncmp(names, prefix, plen) != 0 || !fgets(values, sizeof values, f)) continue;
        if (strncmp(values, prefix, plen) != 0) break; /* not the table's value line */
        char *ns = NULL, *vs = NULL;
        char *n = strtok_r(names + plen, " \n", &ns);
        char *v = strtok_r(values + plen, " \n", &vs);
        for (; n && v; n = strtok_r(NULL, " \n", &ns), v = strtok_r(NULL, " \n", &vs)) {
            if (strcmp(n, name) != 0) continue;
            char *endp;
            long long x = strtoll(v, &endp, 10);
            if (endp != v && x >= 0) found = x;
            break;
        }
    }
    fclose(f);
    return found;
}

static counters read_counters(void) {
    counters c;
    c.out = proc_field("/proc/net/snmp", "Tcp:", "OutSegs");
    c.retrans = proc_field("/proc/net/snmp", "Tcp:", "RetransSegs");
    c.timeouts = proc_field("/proc/net/netstat", "TcpExt:", "TCPTimeouts");
    return c;
}

static int same_ns(const tcp_share *a, const tcp_share *b) {
    return strcmp(a->boot_id, b->boot_id) == 0 && a->netns == b->netns;
}

/* Earliest of two readings of a counter and latest of two (-1, unreadable, wins). */
static long long earliest(long long a, long long b) { return a < 0 || b < 0 ? -1 : a < b ? a : b; }
static long long latest(long long a, long long b) { return a < 0 || b < 0 ? -1 : a > b ? a : b; }
static long long delta(long long a, long long b) { return a >= 0 && b >= a ? b - a : -1; }

/* What rank r's namespace counted while any of its ranks measured: the latest stop reading
 * less the earliest start reading over its ranks; -1 where a reading is missing. */
static counters ns_counts(const tcp_share *all, int nranks, int r) {
    counters first = all[r].start, last = all[r].stop;
    for (int q = r + 1; q < nranks; q++) {
        if (!same_ns(&all[q], &all[r])) continue;
        first.out = earliest(first.out, all[q].start.out);
        first.retrans = earliest(first.retrans, all[q].start.retrans);
        first.timeouts = earliest(first.timeouts, all[q].start.timeouts);
        last.out = latest(last.out, all[q].stop.out);
        last.retrans = latest(last.retrans, all[q].stop.retrans);
        last.timeouts = latest(last.timeouts, all[q].stop.timeouts);
    }
    counters d = {delta(first.out, last.out), delta(first.retrans, last.retrans),
                  delta(first.timeouts, last.timeouts)};
    return d;
}

void cs_tcp_loss_start(void) {
    read_congestion();
    limit_output = read_sysctl_count("/proc/sys/net/ipv4/tcp_limit_output_bytes");
    idle_restart = read_sysctl_count("/proc/sys/net/ipv4/tcp_slow_start_after_idle");
    start = read_counters();
}
void cs_tcp_loss_stop(void) { stop = read_counters(); }

/* Collective; rank 0 adds "tcp_loss": [{nodes, out_segs, retrans_segs, timeouts,
 * congestion_control, tcp_limit_output_bytes, tcp_slow_start_after_idle}] to j. */
void cs_tcp_loss_write(cs_context *ctx, cs_json *j) {
    tcp_share mine;
    memset(&mine, 0, sizeof mine);
    cs_boot_id(mine.boot_id, sizeof mine.boot_id);
    struct stat st;
    if (stat("/proc/self/ns/net", &st) == 0) mine.netns = (unsigned long long)st.st_ino;
    memcpy(mine.congestion, congestion, sizeof mine.congestion);
    mine.limit_output = limit_output;
    mine.idle_restart = idle_restart;
    mine.start = start;
    mine.stop = stop;
    tcp_share *all = ctx->rank == 0 ? malloc(sizeof(tcp_share) * (size_t)ctx->nranks) : NULL;
    if (ctx->rank == 0 && !all) cs_die("rank 0: out of memory for the TCP loss table");
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    if (ctx->rank != 0) return;
    cs_json_raw_begin(j, "tcp_loss", '[');
    for (int r = 0; r < ctx->nranks; r++) {
        int first = 1; /* a namespace is reported at its lowest rank */
        for (int q = 0; q < r && first; q++) first = !same_ns(&all[q], &all[r]);
        if (!first) continue;
        cs_json_raw_begin(j, NULL, '{');
        cs_json_raw_begin(j, "nodes", '[');
        for (int q = r; q < ctx->nranks; q++) {
            if (!same_ns(&all[q], &all[r])) continue;
            int named = 0; /* node names of this namespace's ranks, once each */
            for (int p = r; p < q && !named; p++)
                named = same_ns(&all[p], &all[q]) &&
                        strcmp(ctx->topo->ranks[p].node, ctx->topo->ranks[q].node) == 0;
            if (!named) cs_json_elem_str(j, ctx->topo->ranks[q].node);
        }
        cs_json_raw_end(j, ']');
        counters d = ns_counts(all, ctx->nranks, r);
        if (d.out >= 0) cs_json_int(j, "out_segs", d.out);
        if (d.retrans >= 0) cs_json_int(j, "retrans_segs", d.retrans);
        if (d.timeouts >= 0) cs_json_int(j, "timeouts", d.timeouts);
        if (all[r].congestion[0]) cs_json_str(j, "congestion_control", all[r].congestion);
        if (all[r].limit_output >= 0)
            cs_json_int(j, "tcp_limit_output_bytes", all[r].limit_output);
        if (all[r].idle_restart >= 0)
            cs_json_int(j, "tcp_slow_start_after_idle", all[r].idle_restart);
        cs_json_raw_end(j, '}');
    }
    cs_json_raw_end(j, ']');
    free(all);
}
#endif
