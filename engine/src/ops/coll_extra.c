/* The collectives MPI 2.2 and 3 add beyond the classic list: MPI_Alltoallw (one datatype per
 * peer; here MPI_BYTE for all, with byte displacements as alltoallv has element ones), the
 * neighbourhood collectives MPI_Neighbor_allgather/alltoall and their nonblocking forms on a
 * periodic Cartesian grid, and the persistent collectives of MPI-4 (MPI_Bcast_init and
 * friends: initialised once per buffer, then MPI_Start and MPI_Wait per launch).
 *
 * A neighbourhood block is what a rank sends to one neighbour; a grid of d dimensions gives
 * each rank 2d neighbours (the -1 and +1 shifts of each dimension, in that order).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#if defined(MPI_VERSION) && MPI_VERSION >= 4
#define CS_HAVE_PERSISTENT 1
#else
#define CS_HAVE_PERSISTENT 0
#endif

int coll_blocks(const cs_coll_op *op, int n) {
    int nbrs = 2 * op->dims;
    return nbrs > n ? nbrs : n;
}

const char *coll_unsupported(const cs_coll_op *op) {
    static char why[CS_ERRLEN];
    if (!op->persistent || CS_HAVE_PERSISTENT) return NULL;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    lib[strcspn(lib, ",\n")] = '\0'; /* the library's name and version, not its build notes */
    snprintf(why, sizeof why,
             "persistent collectives (MPI_*_init) need an MPI-4 library; %.120s implements MPI %d.%d",
             lib, major, minor);
    return why;
}

void coll_extra_setup(coll_state *s) {
    const cs_coll_op *op = s->op;
    if (op->dims) {
        int dims[2] = {0, 0}, periods[2] = {1, 1};
        MPI_Dims_create(s->n, op->dims, dims);
        MPI_Cart_create(s->comm, op->dims, dims, periods, 0, &s->cart);
    }
    if (op->vector == 2) {
        s->types = malloc(sizeof(MPI_Datatype) * (size_t)s->n);
        if (!s->types) cs_die("rank %d: out of memory", s->rank);
        for (int i = 0; i < s->n; i++) s->types[i] = MPI_BYTE; /* displs are in bytes then */
    }
    if (op->persistent) {
        s->preqs = malloc(sizeof(MPI_Request) * (size_t)s->nbufs);
        if (!s->preqs) cs_die("rank %d: out of memory", s->rank);
        for (int b = 0; b < s->nbufs; b++) op->call(s, s->sbufs[b], s->rbufs[b], &s->preqs[b]);
    }
}

void coll_extra_teardown(coll_state *s) {
    if (s->preqs)
        for (int b = 0; b < s->nbufs; b++) MPI_Request_free(&s->preqs[b]);
    if (s->op->dims) MPI_Comm_free(&s->cart);
    free(s->preqs);
    free(s->types);
}

void coll_neighbor_check(coll_state *s, char *rb) {
    int nb[4], k = 2 * s->op->dims, distinct = 1;
    for (int d = 0; d < s->op->dims; d++) MPI_Cart_shift(s->cart, d, 1, &nb[2 * d], &nb[2 * d + 1]);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++) distinct &= nb[i] != nb[j];
    for (int i = 0; i < k; i++) {
        if (s->op->kind == NBR_ALLGATHER) {
            expect_bytes(s, rb + (size_t)i * s->block, nb[i], 0);
        } else if (distinct) {
            /* my -1 neighbour sent me its block for its +1 neighbour, and the other way round.
             * With a dimension of 1 or 2 ranks both shifts name one rank, and which of its two
             * messages lands in which block is the library's choice: not checked then. */
            expect_bytes(s, rb + (size_t)i * s->block, nb[i], i ^ 1);
        }
    }
}

void c_alltoallw(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int *k = s->counts, *d = s->displs;
    MPI_Datatype *t = s->types;
    if (rq) MPI_Ialltoallw(sb, k, d, t, rb, k, d, t, s->comm, rq);
    else MPI_Alltoallw(sb, k, d, t, rb, k, d, t, s->comm);
}

void c_nbr_allgather(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count;
    if (rq) MPI_Ineighbor_allgather(sb, c, MPI_BYTE, rb, c, MPI_BYTE, s->cart, rq);
    else MPI_Neighbor_allgather(sb, c, MPI_BYTE, rb, c, MPI_BYTE, s->cart);
}

void c_nbr_alltoall(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count;
    if (rq) MPI_Ineighbor_alltoall(sb, c, MPI_BYTE, rb, c, MPI_BYTE, s->cart, rq);
    else MPI_Neighbor_alltoall(sb, c, MPI_BYTE, rb, c, MPI_BYTE, s->cart);
}

/* Persistent initialisers: rq is the request MPI_Start runs on every launch. Without an MPI-4
 * library they are never called: coll_unsupported refuses the op first. */
#if CS_HAVE_PERSISTENT
void c_bcast_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)rb;
    MPI_Bcast_init(sb, s->count, s->type, s->root, s->comm, MPI_INFO_NULL, rq);
}
void c_reduce_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    MPI_Reduce_init(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->root, s->comm, MPI_INFO_NULL, rq);
}
void c_allreduce_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    MPI_Allreduce_init(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->comm, MPI_INFO_NULL, rq);
}
void c_allgather_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count;
    MPI_Allgather_init(sb, c, s->type, rb, c, s->type, s->comm, MPI_INFO_NULL, rq);
}
void c_alltoall_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    int c = s->count;
    MPI_Alltoall_init(sb, c, s->type, rb, c, s->type, s->comm, MPI_INFO_NULL, rq);
}
void c_barrier_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    (void)sb; (void)rb;
    MPI_Barrier_init(s->comm, MPI_INFO_NULL, rq);
}
void c_redscat_block_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    MPI_Reduce_scatter_block_init(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->comm, MPI_INFO_NULL,
                                  rq);
}
void c_scan_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    MPI_Scan_init(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->comm, MPI_INFO_NULL, rq);
}
void c_exscan_init(coll_state *s, char *sb, char *rb, MPI_Request *rq) {
    MPI_Exscan_init(sb, rb, s->count, MPI_DOUBLE, MPI_SUM, s->comm, MPI_INFO_NULL, rq);
}
#else
#define REFUSED(fn)                                                                  \
    void fn(coll_state *s, char *sb, char *rb, MPI_Request *rq) {                    \
        (void)sb; (void)rb; (void)rq;                                                \
        cs_die("rank %d: %s: %s", s->rank, s->op->name, coll_unsupported(s->op));    \
    }
REFUSED(c_bcast_init)
REFUSED(c_reduce_init)
REFUSED(c_allreduce_init)
REFUSED(c_allgather_init)
REFUSED(c_alltoall_init)
REFUSED(c_barrier_init)
REFUSED(c_redscat_block_init)
REFUSED(c_scan_init)
REFUSED(c_exscan_init)
#undef REFUSED
#endif
