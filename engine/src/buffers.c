/* Buffers: page-aligned and touched once, so first-touch page faults stay out of timings. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commscope.h"

#ifdef CS_SIMULATED
#include <mpi.h>

/* SMPI runs every rank in one process: buffers of all ranks share one mapping (their
 * contents are meaningless, their sizes are what the simulation needs), or a 192-rank
 * all-to-all would need hundreds of GiB. */
void *cs_buffer_alloc(size_t bytes) {
    void *p = SMPI_SHARED_MALLOC(bytes ? bytes : 1);
    if (!p) cs_die("cannot allocate a %zu-byte buffer", bytes);
    return p;
}

void cs_buffer_free(void *p) {
    SMPI_SHARED_FREE(p);
}
#else
void *cs_buffer_alloc(size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = bytes ? (bytes + page - 1) / page * page : page;
    void *p = NULL;
    if (posix_memalign(&p, page, len) != 0) cs_die("cannot allocate a %zu-byte buffer", bytes);
    memset(p, 0, len);
    return p;
}

void cs_buffer_free(void *p) {
    free(p);
}
#endif
