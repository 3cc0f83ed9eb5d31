/* commscope-engine: parse options, find where ranks run, write the header, measure, end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commscope.h"

/* --help: the options come from the table they are parsed by. */
static void print_usage(void) {
    printf("usage: commscope-engine [OPTION VALUE]...   (run under mpirun/mpiexec; rank 0 writes\n"
           "JSON lines to stdout)\n"
           "       commscope-engine --version        engine and MPI library versions (JSON)\n"
           "       commscope-engine --options-json   the options below, as JSON\n"
           "operations (--ops): pingpong,bw,bibw,loggp,rma,contention,matrix,bisection,mbw,%s\n"
           "options:\n", cs_coll_names());
    cs_options_usage(stdout);
}

static const char *labels[] = {"intra-socket", "inter-socket", "intra-node", "inter-node"};

static void mpi_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, rank = -1;
    MPI_Error_string(*code, text, &len);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cs_die("rank %d: MPI error: %s", rank, text);
}

static void print_version(void) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    printf("{\"engine_version\":\"%s\",\"schema_version\":%d,\"mpi_standard\":\"%d.%d\","
           "\"mpi_library_version\":", CS_ENGINE_VERSION, CS_SCHEMA_VERSION, major, minor);
    cs_json_string_value(stdout, lib);
    printf("}\n");
}

/* Every rank calls this (the clock table is gathered); rank 0 writes. */
static void write_header(cs_context *ctx, const cs_pair *pairs, int npairs, int synced) {
    const cs_options *o = ctx->opt;
    const cs_timer *t = ctx->timer;
    const cs_topo *topo = ctx->topo;
    if (ctx->rank != 0) {
        if (synced) cs_clock_write(ctx, NULL);
        return;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    char standard[16];
    snprintf(standard, sizeof standard, "%d.%d", major, minor);
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "header");
    cs_json_int(&j, "schema_version", CS_SCHEMA_VERSION);
    cs_json_str(&j, "engine_version", CS_ENGINE_VERSION);
    cs_json_raw_begin(&j, "mpi", '{');
    cs_json_str(&j, "library_version", lib);
    cs_json_str(&j, "standard", standard);
    cs_json_raw_end(&j, '}');
    cs_json_int(&j, "nranks", topo->nranks);
    cs_json_str(&j, "socket_source", topo->socket_source);
    cs_json_raw_begin(&j, "ranks", '[');
    for (int r = 0; r < topo->nranks; r++) {
        const cs_rankinfo *x = &topo->ranks[r];
        cs_json_raw_begin(&j, NULL, '{');
        cs_json_int(&j, "rank", x->rank);
        cs_json_str(&j, "node", x->node);
        cs_json_int(&j, "node_index", x->node_index);
        cs_json_int(&j, "socket", x->socket);
        cs_json_int(&j, "cpu", x->cpu);
        cs_json_int(&j, "pid", x->pid);
        cs_json_raw_begin(&j, "affinity", '[');
        for (int c = 0; c < x->ncpus; c++) cs_json_elem_int(&j, x->affinity[c]);
        cs_json_raw_end(&j, ']');
        cs_json_raw_end(&j, '}');
    }
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "timer", '{');
    cs_json_str(&j, "name", t->name);
    cs_json_num(&j, "resolution_s", t->resolution_s);
    cs_json_num(&j, "overhead_s", t->overhead_s);
    cs_json_key(&j, "frequency_hz");
    if (t->frequency_hz > 0) fprintf(stdout, "%.9g", t->frequency_hz);
    else fputs("null", stdout);
    cs_json_raw_end(&j, '}');
    cs_json_raw_begin(&j, "pairs", '[');
    for (int i = 0; i < npairs; i++) {
        cs_json_raw_begin(&j, NULL, '{');
        cs_json_str(&j, "label", pairs[i].label);
        cs_json_raw_begin(&j, "ranks", '[');
        cs_json_elem_int(&j, pairs[i].a);
        cs_json_elem_int(&j, pairs[i].b);
        cs_json_raw_end(&j, ']');
        cs_json_raw_end(&j, '}');
    }
    cs_json_raw_end(&j, ']');
    cs_options_write(&j, o);
    if (synced) cs_clock_write(ctx, &j);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cs_json_num(&j, "started_unix", (double)now.tv_sec + 1e-9 * (double)now.tv_nsec);
    cs_json_end(&j);
}

/* Rank 0 chooses the pairs; everyone learns them as (level index, a, b) triples. */
static int share_pairs(int rank, const cs_topo *topo, const char *wanted, cs_pair *pairs,
                       char *err) {
    int buf[1 + 3 * CS_MAX_PAIRS] = {0};
    if (rank == 0) {
        int n = 0;
        if (cs_pairs_choose(topo, wanted, pairs, &n, err, CS_ERRLEN) != 0) n = -1;
        buf[0] = n;
        for (int i = 0; i < n; i++) {
            for (int l = 0; l < 4; l++)
                if (strcmp(pairs[i].label, labels[l]) == 0) buf[1 + 3 * i] = l;
            buf[2 + 3 * i] = pairs[i].a;
            buf[3 + 3 * i] = pairs[i].b;
        }
    }
    MPI_Bcast(buf, 1 + 3 * CS_MAX_PAIRS, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < buf[0]; i++) {
        pairs[i].label = labels[buf[1 + 3 * i]];
        pairs[i].a = buf[2 + 3 * i];
        pairs[i].b = buf[3 + 3 * i];
    }
    return buf[0];
}

/* Checks every name; sets whether point-to-point (bit 1: pingpong/bw/bibw, bit 2: loggp, bit 4:
 * matrix/bisection, bit 8: rma) and
 * collective operations are present. */
static void check_ops(const char *ops, int rank, int *p2p, int *coll) {
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", ops);
    *p2p = *coll = 0;
    for (char *save = NULL, *op = strtok_r(copy, ",", &save); op; op = strtok_r(NULL, ",", &save)) {
        if (cs_op_find(op)) *p2p |= 1;
        else if (strcmp(op, "loggp") == 0) *p2p |= 2;
        else if (strcmp(op, "matrix") == 0 || strcmp(op, "bisection") == 0) *p2p |= 4;
        else if (strcmp(op, "rma") == 0) *p2p |= 8;
        else if (strcmp(op, "mbw") == 0) continue; /* its own pairs: none chosen here */
        else if (cs_coll_find(op) || strcmp(op, "contention") == 0) *coll = 1;
        else cs_die("rank %d: --ops: unknown operation '%s' (known: pingpong,bw,bibw,loggp,rma,contention,matrix,bisection,mbw,%s)", rank,
                    op, cs_coll_names());
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) { print_usage(); return 0; }
        if (strcmp(argv[i], "--version") == 0) { print_version(); return 0; }
        if (strcmp(argv[i], "--options-json") == 0) { cs_options_print_table(stdout); return 0; }
    }
    MPI_Init(&argc, &argv);
    MPI_Errhandler handler;
    MPI_Comm_create_errhandler(mpi_error, &handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
    cs_trace_phase(0); /* everything but the measured launches is commscope's own traffic */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char err[CS_ERRLEN] = "";

    cs_options opt;
    if (cs_options_parse(argc, argv, &opt, err, sizeof err) != 0) cs_die("rank %d: %s", rank, err);
    int has_p2p, has_coll;
    check_ops(opt.ops, rank, &has_p2p, &has_coll);
    cs_timer *timer = cs_timer_find(opt.timer);
    if (!timer) cs_die("rank %d: --timer %s: not compiled in", rank, opt.timer);
    if (cs_timer_setup(timer, err, sizeof err) != 0) cs_die("rank %d: %s", rank, err);
    if (opt.distort_rank == rank) cs_timer_distort(timer, opt.distort_offset_s, opt.distort_drift);
    /* a matrix of sockets: only matrix and bisection (bit 4) place ranks by socket */
    int by_package = (has_p2p & 4) && strcmp(opt.matrix_per, "socket") == 0;
    if ((opt.pin || by_package) && cs_pin_to_core(by_package, opt.pin, err, sizeof err) != 0)
        cs_die("rank %d: %s", rank, err);

    cs_topo topo;
    if (cs_topo_gather(&topo, err, sizeof err) != 0) cs_die("rank %d: %s", rank, err);
    if (opt.root >= topo.nranks) cs_die("rank %d: --root %d: only %d ranks", rank, opt.root, topo.nranks);
    cs_pair pairs[CS_MAX_PAIRS];
    int npairs = 0;
    if (has_p2p & 11) { /* p2p, loggp, rma; matrix and bisection pair every rank themselves */
        npairs = share_pairs(rank, &topo, opt.pairs, pairs, err);
        if (npairs < 0) {
            if (rank == 0) cs_die("rank 0: %s", err);
            MPI_Barrier(MPI_COMM_WORLD); /* rank 0 aborts the job */
        }
    }
    cs_context ctx = {&opt, timer, &topo, rank, topo.nranks, 0, {0, 0, 0, 0, 0}, 0.0, NULL};
    if (has_coll && cs_clock_sync(&ctx, err, sizeof err) != 0) cs_die("rank %d: %s", rank, err);
    double t0 = MPI_Wtime();
    write_header(&ctx, pairs, npairs, has_coll);
    cs_load_start();
    cs_tcp_loss_start();

    if (has_p2p & 1) cs_p2p_init(&ctx);
    if (has_p2p & 2) cs_loggp_init(&ctx);
    if (has_p2p & 4) cs_pairs_init(&ctx);
    if (has_p2p & 8) cs_rma_init(&ctx);
    char ops[1024];
    snprintf(ops, sizeof ops, "%s", opt.ops);
    for (char *save = NULL, *name = strtok_r(ops, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        if (strcmp(name, "contention") == 0) {
            cs_contention_run(&ctx);
            continue;
        }
        if (strcmp(name, "loggp") == 0) {
            cs_loggp_run(&ctx, pairs, npairs);
            continue;
        }
        if (strcmp(name, "matrix") == 0 || strcmp(name, "bisection") == 0) {
            if (strcmp(name, "matrix") == 0) cs_matrix_run(&ctx);
            else cs_bisection_run(&ctx);
            continue;
        }
        if (strcmp(name, "rma") == 0) {
            cs_rma_run(&ctx, pairs, npairs);
            continue;
        }
        if (strcmp(name, "mbw") == 0) {
            cs_mbw_run(&ctx);
            continue;
        }
        const cs_op *op = cs_op_find(name);
        const cs_coll_op *coll = cs_coll_find(name);
        int nsizes = op ? opt.nsizes : opt.ncoll_sizes;
        for (int s = 0; s < nsizes; s++) {
            if (op) {
                for (int p = 0; p < npairs; p++) { /* each series checks --skip itself */
                    op->measure(&ctx, &pairs[p], opt.sizes[s]);
                    if (topo.nranks > 2) cs_idle_barrier();
                }
            } else {
                cs_coll_run(&ctx, coll, s); /* every --procs group, minus --skip'd points */
            }
        }
    }
    cs_tcp_loss_stop();
    cs_load_stop(); /* before the ranks wait for each other and the end is written */
    cs_idle_barrier();
    cs_json j;
    if (rank == 0) {
        cs_json_begin(&j, stdout);
        cs_json_str(&j, "type", "end");
        cs_json_int(&j, "points", ctx.npoints);
        cs_json_num(&j, "elapsed_s", MPI_Wtime() - t0);
    }
    if (has_coll && strcmp(opt.sync, "barrier") != 0) cs_clock_check(&ctx, &j);
    cs_load_write(&ctx, &j);
    cs_tcp_loss_write(&ctx, &j);
    if (rank == 0) cs_coll_write_refused(&j);
    if (rank == 0) cs_json_end(&j);
    MPI_Finalize();
    return 0;
}
