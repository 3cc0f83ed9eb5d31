/* What the collective operations share between coll.c (the MPI 2.2 and MPI-3 nonblocking
 * operations, setup, --check, the record) and coll_extra.c (MPI_Alltoallw, neighbourhood
 * collectives, MPI-4 persistent collectives). Private to the engine's collective op. */
#ifndef CS_COLL_H
#define CS_COLL_H

#include <mpi.h>

#include "commscope.h"

enum kind { BARRIER, BCAST, GATHER, SCATTER, ALLGATHER, ALLTOALL, REDUCE, ALLREDUCE, REDSCAT,
            REDSCAT_BLOCK, SCAN, EXSCAN, WAIT_NULL, WAIT_UP, NBR_ALLGATHER, NBR_ALLTOALL };

typedef struct coll_state coll_state;
typedef void (*coll_fn)(coll_state *s, char *sb, char *rb, MPI_Request *rq);

struct cs_coll_op {
    const char *name;
    enum kind kind;
    int vector;      /* the v-variant: explicit counts and displacements (2: the w-variant) */
    int nonblocking; /* start, then MPI_Wait: time to completion */
    coll_fn call;
    int dims;       /* neighbourhood collectives: dimensions of the periodic Cartesian grid */
    int persistent; /* MPI-4: call initialises one request per buffer; a launch is Start+Wait */
};

struct coll_state {
    cs_context *ctx;
    const cs_coll_op *op;
    MPI_Comm comm; /* the measured group: MPI_COMM_WORLD or its first ranks */
    MPI_Comm cart; /* neighbourhood collectives: the grid over comm */
    int n, rank, root, count;
    MPI_Datatype type;
    int *counts, *displs;
    MPI_Datatype *types; /* alltoallw: one per peer */
    MPI_Request *reqs;   /* alltoall_block: 2 * block requests */
    MPI_Request *preqs;  /* persistent: one per buffer pair */
    char **sbufs, **rbufs;
    int nbufs;
    size_t bytes, block; /* block = count * type size */
};

/* Blocks a rank's buffers hold: one per rank, or per neighbour when there are more. */
int coll_blocks(const cs_coll_op *op, int n);
void coll_extra_setup(coll_state *s);    /* grid, alltoallw types, persistent requests */
void coll_extra_teardown(coll_state *s);
/* --check of a neighbourhood collective: each block from the neighbour it names. */
void coll_neighbor_check(coll_state *s, char *rb);
void expect_bytes(coll_state *s, const char *buf, int src, int blk_of_src);
/* Why this library cannot run op (NULL: it can). */
const char *coll_unsupported(const cs_coll_op *op);

void c_alltoallw(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_nbr_allgather(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_nbr_alltoall(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_bcast_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_reduce_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_allreduce_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_allgather_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_alltoall_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_barrier_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_redscat_block_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_scan_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);
void c_exscan_init(coll_state *s, char *sb, char *rb, MPI_Request *rq);

#endif
