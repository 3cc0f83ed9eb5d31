/* Collectives over process counts (--procs): each point is measured on the first p ranks of
 * MPI_COMM_WORLD (an MPI_Comm_split, made once per p), by the same MPIPerf method as on the
 * world, while the other ranks wait in a sleeping barrier so that they leave the cores to the
 * measured ones. Rank 0 of MPI_COMM_WORLD is rank 0 of every group, so the clock offsets the
 * run synchronised against it hold in each group. Without --procs the world alone is measured.
 *
 * An operation this MPI library lacks (persistent collectives before MPI-4) is measured
 * nowhere; its reason goes into the end record's "refused" list, once.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

enum { MAX_GROUPS = 64, MAX_REFUSED = 64 };

static struct {
    int p;
    MPI_Comm comm;
} groups[MAX_GROUPS];
static int ngroups;

static struct {
    const char *op;
    char reason[CS_ERRLEN];
} refused[MAX_REFUSED];
static int nrefused;

/* The group of the first p ranks; every rank calls this in the same order (collective). */
static MPI_Comm *group_of(int p, int rank) {
    for (int i = 0; i < ngroups; i++)
        if (groups[i].p == p) return &groups[i].comm;
    if (ngroups == MAX_GROUPS) cs_die("rank %d: --procs: at most %d process counts", rank, MAX_GROUPS);
    groups[ngroups].p = p;
    MPI_Comm_split(MPI_COMM_WORLD, rank < p ? 0 : MPI_UNDEFINED, rank, &groups[ngroups].comm);
    return &groups[ngroups++].comm;
}

/* Process counts of --procs ("" or absent: the world); dies on a count the job cannot give. */
static int procs_list(const cs_context *ctx, int *out, int max) {
    const char *text = ctx->opt->procs;
    if (!text || !*text) {
        out[0] = ctx->nranks;
        return 1;
    }
    int n = 0;
    for (const char *p = text; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 2 || v > ctx->nranks || n == max)
            cs_die("rank %d: --procs %s: give at most %d process counts from 2 to the job's %d "
                   "ranks, e.g. 2,4", ctx->rank, text, max, ctx->nranks);
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

void cs_coll_run(cs_context *ctx, const cs_coll_op *op, int size_index) {
    const cs_options *o = ctx->opt;
    if (cs_coll_sizeless(op) && size_index > 0) return; /* measured once, at 0 bytes */
    const char *why = coll_unsupported(op);
    if (why) {
        if (size_index == 0 && ctx->rank == 0 && nrefused < MAX_REFUSED) {
            refused[nrefused].op = op->name;
            snprintf(refused[nrefused++].reason, CS_ERRLEN, "%s", why);
        }
        return;
    }
    size_t bytes = cs_coll_sizeless(op) ? 0 : o->coll_sizes[size_index];
    int procs[MAX_GROUPS];
    int np = procs_list(ctx, procs, MAX_GROUPS);
    for (int i = 0; i < np; i++) {
        int p = procs[i];
        char group[32] = "world";
        if (p < ctx->nranks) snprintf(group, sizeof group, "ranks 0-%d", p - 1);
        if (cs_options_skipped(o, op->name, group, bytes)) continue;
        if (p == ctx->nranks) {
            cs_coll_measure(ctx, op, bytes, group);
            continue;
        }
        MPI_Comm *comm = group_of(p, ctx->rank);
        if (ctx->rank < p) {
            cs_context sub = *ctx; /* its own clock re-estimates stay within the group */
            sub.nranks = p;
            sub.comm = comm;
            cs_coll_measure(&sub, op, bytes, group);
            ctx->npoints = sub.npoints;
        }
        cs_idle_barrier();
    }
}

void cs_coll_write_refused(cs_json *j) {
    if (nrefused == 0) return;
    cs_json_raw_begin(j, "refused", '[');
    for (int i = 0; i < nrefused; i++) {
        cs_json_raw_begin(j, NULL, '{');
        cs_json_str(j, "op", refused[i].op);
        cs_json_str(j, "reason", refused[i].reason);
        cs_json_raw_end(j, '}');
    }
    cs_json_raw_end(j, ']');
}
