/* The point-to-point stop rule, shared by the operations that sample a pair (p2p, rma). */
#include <math.h>

#include "commscope.h"

int cs_rse_add(cs_rse *r, const cs_options *o, double x, double elapsed_s) {
    r->n++;
    double d = x - r->mean; /* Welford's running mean and squared deviations */
    r->mean += d / r->n;
    r->m2 += d * (x - r->mean);
    double rse = r->n > 1 && r->mean > 0 ? sqrt(r->m2 / (r->n - 1) / r->n) / r->mean : INFINITY;
    if (r->n >= o->min_samples && rse <= o->target_rse) return 1;
    if (elapsed_s >= o->point_budget_s && r->n >= 2) return 2;
    if (r->n >= o->max_samples) return 3;
    return 0;
}
