/* commscope-tcp: parse the command line and run the server or the client role. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commscope.h"
#include "cstcp.h"

static const char *usage =
    "usage: commscope-tcp serve [--bind ADDR] [--port P] [--once] [--node NAME]\n"
    "       commscope-tcp client --peer HOST [--port P] [--mode pingpong|stream|both]\n"
    "         [--sizes 1,8,1024,...] [--sockbuf BYTES (0: system default)] [--skip LIST]\n"
    "         [--warmup N] [--min-samples N] [--max-samples N] [--target-rse X]\n"
    "         [--point-budget S] [--sample-min-time S] [--duration S] [--mean-size B]\n"
    "         [--max-message B] [--interval S] [--seed N] [--connect-timeout S] [--node NAME]\n"
    "       commscope-tcp --version\n"
    "The client writes JSON lines to stdout: a header, one point per size, a stream record,\n"
    "an end record. The server prints 'listening ADDR PORT' once it accepts connections.\n";

static int bad(const char *flag, const char *value, const char *want) {
    fprintf(stderr, "commscope-tcp: %s %s: expected %s\n", flag, value, want);
    return -1;
}

static int number(const char *flag, const char *text, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !(v >= lo && v <= hi)) {
        char want[64];
        snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
        return bad(flag, text, want);
    }
    *out = v;
    return 0;
}

static int parse_sizes(const char *text, cstcp_client_opts *o) {
    int n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    o->sizes = malloc(sizeof(size_t) * (size_t)n);
    if (!o->sizes) return bad("--sizes", text, "fewer sizes (out of memory)");
    o->nsizes = 0;
    for (const char *p = text; *p;) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-' || v < 1 ||
            v > CSTCP_MAX_MESSAGE)
            return bad("--sizes", text, "comma-separated sizes of 1 byte to 1 GiB (a TCP "
                       "stream cannot carry an empty message)");
        o->sizes[o->nsizes++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static char hostname[256];

static int parse_client(int argc, char **argv, cstcp_client_opts *o) {
    *o = (cstcp_client_opts){.port = CSTCP_DEFAULT_PORT, .mode = "pingpong", .skip = "",
                             .warmup = 10, .min_samples = 10, .max_samples = 1000,
                             .target_rse = 0.01, .point_budget_s = 0.25, .sample_min_s = 50e-6,
                             .duration_s = 10, .interval_s = 0.1, .connect_timeout_s = 10,
                             .mean = 2000, .max = 16000, .seed = 1, .node = hostname};
    static size_t default_size = 1;
    o->sizes = &default_size;
    o->nsizes = 1;
    for (int i = 2; i < argc; i += 2) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x = 0;
        int rc = 0;
        if (!v) return bad(f, "", "a value");
        if (strcmp(f, "--peer") == 0) o->peer = v;
        else if (strcmp(f, "--port") == 0) rc = number(f, v, 1, 65535, &x), o->port = (int)x;
        else if (strcmp(f, "--mode") == 0) {
            if (strcmp(v, "pingpong") && strcmp(v, "stream") && strcmp(v, "both"))
                return bad(f, v, "pingpong, stream or both");
            o->mode = v;
        } else if (strcmp(f, "--sizes") == 0) rc = parse_sizes(v, o);
        else if (strcmp(f, "--skip") == 0) o->skip = v;
        else if (strcmp(f, "--sockbuf") == 0) rc = number(f, v, 0, 1 << 30, &x), o->sockbuf = (long)x;
        else if (strcmp(f, "--warmup") == 0) rc = number(f, v, 0, 1e6, &x), o->warmup = (int)x;
        else if (strcmp(f, "--min-samples") == 0) rc = number(f, v, 2, 1e6, &x), o->min_samples = (int)x;
        else if (strcmp(f, "--max-samples") == 0) rc = number(f, v, 2, 1e6, &x), o->max_samples = (int)x;
        else if (strcmp(f, "--target-rse") == 0) rc = number(f, v, 0, 1, &o->target_rse);
        else if (strcmp(f, "--point-budget") == 0) rc = number(f, v, 1e-3, 36000, &o->point_budget_s);
        else if (strcmp(f, "--sample-min-time") == 0) rc = number(f, v, 0, 10, &o->sample_min_s);
        else if (strcmp(f, "--duration") == 0) rc = number(f, v, 0.1, 86400, &o->duration_s);
        else if (strcmp(f, "--interval") == 0) rc = number(f, v, 1e-3, 3600, &o->interval_s);
        else if (strcmp(f, "--connect-timeout") == 0) rc = number(f, v, 0.1, 600, &o->connect_timeout_s);
        else if (strcmp(f, "--mean-size") == 0) rc = number(f, v, 1, CSTCP_MAX_MESSAGE, &x), o->mean = (size_t)x;
        else if (strcmp(f, "--max-message") == 0) rc = number(f, v, 1, CSTCP_MAX_MESSAGE, &x), o->max = (size_t)x;
        else if (strcmp(f, "--seed") == 0) rc = number(f, v, 0, 1e15, &x), o->seed = (uint64_t)x;
        else if (strcmp(f, "--node") == 0) o->node = v;
        else return bad(f, v, "a known option (see --help)");
        if (rc < 0) return -1;
    }
    if (!o->peer) return bad("--peer", "(missing)", "the server's host name or address");
    if (o->min_samples > o->max_samples) return bad("--min-samples", "", "at most --max-samples");
    if (o->mean > o->max) return bad("--mean-size", "", "at most --max-message");
    for (const char *p = o->node; *p; p++)
        if (*p <= ' ' || *p == '=' || *p > '~') return bad("--node", o->node, "a name without spaces");
    return 0;
}

static int parse_serve(int argc, char **argv, cstcp_serve_opts *o) {
    *o = (cstcp_serve_opts){.bind_addr = NULL, .port = CSTCP_DEFAULT_PORT, .node = hostname};
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(f, "--once") == 0) {
            o->once = 1;
            continue;
        }
        if (!v) return bad(f, "", "a value");
        i++;
        if (strcmp(f, "--bind") == 0) o->bind_addr = v;
        else if (strcmp(f, "--port") == 0) {
            if (number(f, v, 0, 65535, &x) < 0) return -1; /* 0: any free port */
            o->port = (int)x;
        } else if (strcmp(f, "--node") == 0) o->node = v;
        else return bad(f, v, "a known option (see --help)");
    }
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN); /* a vanished peer is an error to report, not a reason to die */
    if (gethostname(hostname, sizeof hostname - 1) != 0) strcpy(hostname, "unknown");
    const char *role = argc > 1 ? argv[1] : "";
    if (strcmp(role, "--version") == 0) {
        printf("{\"engine_version\":\"%s\",\"schema_version\":%d,\"program\":\"commscope-tcp\","
               "\"protocol\":\"%s\"}\n", CSTCP_VERSION, CS_SCHEMA_VERSION, CSTCP_PROTO);
        return 0;
    }
    if (strcmp(role, "--help") == 0 || strcmp(role, "-h") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(role, "serve") == 0) {
        cstcp_serve_opts o;
        if (parse_serve(argc, argv, &o) < 0) return 2;
        return cstcp_serve(&o);
    }
    if (strcmp(role, "client") == 0) {
        cstcp_client_opts o;
        if (parse_client(argc, argv, &o) < 0) return 2;
        return cstcp_client(&o);
    }
    fputs(usage, stderr);
    return 2;
}
