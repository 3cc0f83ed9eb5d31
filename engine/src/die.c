/* Fatal errors: one line on stderr naming the rank, then MPI_Abort for the whole job. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "commscope.h"

void cs_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("commscope-engine: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}
