/* Where each rank runs: node (shared-memory domain + processor name), socket, cpu, affinity. */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commscope.h"

#ifdef CS_HAVE_HWLOC
#include <hwloc.h>
#endif

static int affinity_list(int *cpus, int max) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set)) cpus[n++] = c;
    return n;
}

static int package_of_cpu(int cpu) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    int id = -1;
    if (f) {
        if (fscanf(f, "%d", &id) != 1) id = -1;
        fclose(f);
    }
    return id;
}

/* The cpus of this machine's k-th package (physical ids in increasing order); *npkg gets the
 * number of packages. */
static int package_cpus(int k, int *cpus, int max, int *npkg) {
    int ids[CS_MAX_CPUS], of[CS_MAX_CPUS], ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE && ncpu < CS_MAX_CPUS; c++) {
        int id = package_of_cpu(c);
        if (id >= 0) of[ncpu] = c, ids[ncpu++] = id;
    }
    int want = -1, last = -1; /* walk the distinct ids upwards: the k-th is wanted */
    *npkg = 0;
    for (;;) {
        int next = -1;
        for (int i = 0; i < ncpu; i++)
            if (ids[i] > last && (next < 0 || ids[i] < next)) next = ids[i];
        if (next < 0) break;
        if ((*npkg)++ == k) want = next;
        last = next;
    }
    int n = 0;
    for (int i = 0; i < ncpu && n < max; i++)
        if (ids[i] == want) cpus[n++] = of[i];
    return n;
}

#ifdef CS_HAVE_HWLOC
/* Socket (hwloc package) holding all of this process's allowed cpus, or -1. */
static int socket_of_binding(const cs_rankinfo *me, const char **source) {
    hwloc_topology_t topo;
    int socket = -1;
    *source = "hwloc";
    if (hwloc_topology_init(&topo) != 0) return -1;
    if (hwloc_topology_load(topo) == 0) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        for (int i = 0; i < me->ncpus; i++) hwloc_bitmap_set(set, (unsigned)me->affinity[i]);
        int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
        for (int p = 0; p < npkg; p++) {
            hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned)p);
            if (hwloc_bitmap_isincluded(set, pkg->cpuset)) socket = (int)pkg->logical_index;
        }
        hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
    return socket;
}
#else

static int socket_of_binding(const cs_rankinfo *me, const char **source) {
    *source = "sysfs";
    int socket = -2;
    for (int i = 0; i < me->ncpus; i++) {
        int p = package_of_cpu(me->affinity[i]);
        if (p < 0 || (socket != -2 && p != socket)) return -1;
        socket = p;
    }
    return socket < 0 ? -1 : socket;
}
#endif

static int set_cpu(int cpu, char *err, size_t errlen) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        snprintf(err, errlen, "--pin: sched_setaffinity to cpu %d failed", cpu);
        return -1;
    }
    return 0;
}

/* Core (index mod n) of this rank's affinity. */
static int pin_to(int index, char *err, size_t errlen) {
    int cpus[CS_MAX_CPUS], n = affinity_list(cpus, CS_MAX_CPUS);
    if (n == 0) {
        snprintf(err, errlen, "--pin: cannot read this rank's cpu affinity");
        return -1;
    }
    return set_cpu(cpus[index % n], err, errlen);
}

int cs_pin_to_core(int by_package, int mode, char *err, size_t errlen) {
    int rank, local, leader;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* Mode 2 reads the rank alone, so which ranks share a core is the same on every
     * placement of them onto nodes that share one machine's cores. */
    if (!by_package && mode == 2) return pin_to(rank, err, errlen);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    /* Node index = number of nodes led by lower ranks. Rotating by it keeps the ranks of a
     * node on distinct cores and, where "nodes" share one machine's cores (the virtual
     * cluster), puts the two ends of an inter-node pair on different cores. */
    int size, *leaders, node_index = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    leaders = malloc(sizeof(int) * (size_t)size);
    if (!leaders) {
        snprintf(err, errlen, "--pin: out of memory");
        return -1;
    }
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < leader; r++) node_index += leaders[r] == r;
    free(leaders);
    if (!by_package) return pin_to(local + node_index, err, errlen);
    int cpus[CS_MAX_CPUS], npkg = 0; /* node-local rank i on a core of package i */
    int n = package_cpus(local, cpus, CS_MAX_CPUS, &npkg);
    if (npkg == 0) {
        snprintf(err, errlen, "--matrix-per socket: cannot read this node's sockets from "
                              "/sys/devices/system/cpu; use --matrix-per node");
        return -1;
    }
    if (n == 0) {
        snprintf(err, errlen,
                 "--matrix-per socket: this node has %d socket(s) and more ranks than that; "
                 "give --ranks-per-node %d or fewer",
                 npkg, npkg);
        return -1;
    }
    return set_cpu(cpus[node_index % n], err, errlen);
}

int cs_topo_gather(cs_topo *topo, char *err, size_t errlen) {
    int rank, size, len = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    cs_rankinfo me;
    memset(&me, 0, sizeof me);
    me.rank = rank;
    me.pid = (int)getpid();
    me.cpu = sched_getcpu();
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    snprintf(me.node, sizeof me.node, "%s", name);
#ifdef CS_SIMULATED
    /* Under SMPI every rank is a thread of one real process: its real cpu says nothing. A
     * simulated node is one socket of cores, rank k of a node on its core k (set below). */
    me.ncpus = 1;
    me.socket = 0;
    topo->socket_source = "simulated";
#else
    me.ncpus = affinity_list(me.affinity, CS_MAX_CPUS);
    me.socket = socket_of_binding(&me, &topo->socket_source);
#endif

    /* Node index: ranks sharing memory form a node; nodes are numbered by their lowest rank. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_rank, leader = rank;
    MPI_Comm_rank(node, &node_rank);
#ifdef CS_SIMULATED
    me.cpu = me.affinity[0] = node_rank;
#endif
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    int *leaders = malloc(sizeof(int) * (size_t)size);
    if (!leaders) {
        snprintf(err, errlen, "out of memory gathering the node map");
        return -1;
    }
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    me.node_index = 0;
    for (int r = 0; r < leader; r++)
        if (leaders[r] == r) me.node_index++;
    free(leaders);

    topo->nranks = size;
    topo->ranks = NULL;
    if (rank == 0) {
        topo->ranks = malloc(sizeof(cs_rankinfo) * (size_t)size);
        if (!topo->ranks) {
            snprintf(err, errlen, "out of memory gathering the node map");
            return -1;
        }
    }
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, topo->ranks, (int)sizeof me, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    return 0;
}

static int wanted_label(const char *wanted, const char *label) {
    return strcmp(wanted, "auto") == 0 || cs_list_has(wanted, label);
}

static int partner(const cs_topo *t, int same_node, int socket_rule) {
    const cs_rankinfo *z = &t->ranks[0];
    for (int r = 1; r < t->nranks; r++) {
        const cs_rankinfo *x = &t->ranks[r];
        if ((x->node_index == z->node_index) != same_node) continue;
        if (!same_node) return r;
        int known = z->socket >= 0 && x->socket >= 0;
        if (socket_rule == 0 && !known) return r;                          /* intra-node */
        if (socket_rule == 1 && known && x->socket == z->socket) return r; /* intra-socket */
        if (socket_rule == 2 && known && x->socket != z->socket) return r; /* inter-socket */
    }
    return -1;
}

int cs_pairs_choose(const cs_topo *t, const char *wanted, cs_pair *pairs, int *npairs, char *err,
                    size_t errlen) {
    static const struct { const char *label; int same_node, socket_rule; } levels[] = {
        {"intra-socket", 1, 1}, {"inter-socket", 1, 2}, {"intra-node", 1, 0}, {"inter-node", 0, 0}};
    *npairs = 0;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (!wanted_label(wanted, levels[i].label)) continue;
        int b = partner(t, levels[i].same_node, levels[i].socket_rule);
        if (b < 0) {
            if (strcmp(wanted, "auto") == 0) continue;
            snprintf(err, errlen,
                     "no %s pair in this allocation of %d ranks on %d node(s); give ranks that "
                     "span it (e.g. more nodes, or --bind-to core for socket levels)",
                     levels[i].label, t->nranks, t->ranks[t->nranks - 1].node_index + 1);
            return -1;
        }
        pairs[*npairs].label = levels[i].label;
        pairs[*npairs].a = 0;
        pairs[*npairs].b = b;
        (*npairs)++;
    }
    if (*npairs == 0) {
        snprintf(err, errlen, "no pair to measure (--pairs %s, %d ranks): run with 2 or more ranks",
                 wanted, t->nranks);
        return -1;
    }
    return 0;
}
