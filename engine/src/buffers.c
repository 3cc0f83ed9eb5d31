/* Buffers: page-aligned and touched once, so first-touch page faults stay out of timings. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commscope.h"

void *cs_buffer_alloc(size_t bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = bytes ? (bytes + page - 1) / page * page : page;
    void *p = NULL;
    if (posix_memalign(&p, page, len) != 0) cs_die("cannot allocate a %zu-byte buffer", bytes);
    memset(p, 0, len);
    return p;
}
