/* The client role: handshake, then ping-pong points and/or the stream, as JSON lines.
 *
 * Ping-pong follows the engine's rules: an untimed warm-up, a short probe that sets the
 * round trips per sample (a sample outlasts 100x the timer resolution and --sample-min-time),
 * then samples until the relative standard error reaches --target-rse after --min-samples,
 * the point's budget is spent, or --max-samples. A sample is half the round trip. Before each
 * block the server acknowledges the command, so the timed loop starts with the server
 * waiting in recv. Errors before the header exit 2, errors after it exit 3; every record
 * written before an error stays valid.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cstcp.h"

typedef struct client {
    const cstcp_client_opts *o;
    cstcp_facts f; /* what the records say about this session */
    int ctl, data;
    char *sbuf, *rbuf;
    double *samples;
    int records;
    double start;
    char err[CSTCP_ERRLEN];
} client;

static int fail(client *c, const char *what, int rc) {
    snprintf(c->err, sizeof c->err, "%s: %s", what, cstcp_io_error(rc));
    return -1;
}

static void timer_facts(client *c) {
    double best = 1.0;
    for (int i = 0; i < 200; i++) {
        double a = cstcp_now(), b;
        while ((b = cstcp_now()) == a) {}
        if (b - a < best) best = b - a;
    }
    double t0 = cstcp_now();
    for (int i = 0; i < 10000; i++) (void)cstcp_now();
    c->f.resolution_s = best;
    c->f.overhead_s = (cstcp_now() - t0) / 10000;
}

/* ---- handshake ---- */

static int expect(client *c, const char *line, const char *kind) {
    char want[64];
    snprintf(want, sizeof want, CSTCP_PROTO " %s ", kind);
    if (strncmp(line, want, strlen(want)) == 0) return 0;
    if (strncmp(line, CSTCP_PROTO " error ", strlen(CSTCP_PROTO) + 7) == 0)
        snprintf(c->err, sizeof c->err, "the server at %s:%d refused: %.160s", c->o->peer,
                 c->o->port, line + strlen(CSTCP_PROTO) + 7);
    else
        snprintf(c->err, sizeof c->err, "%s:%d is not a commscope tcp server (it said '%.60s')",
                 c->o->peer, c->o->port, line);
    return -1;
}

static int handshake(client *c) {
    const cstcp_client_opts *o = c->o;
    c->ctl = cstcp_connect(o->peer, o->port, 0, o->connect_timeout_s, c->err, sizeof c->err);
    if (c->ctl < 0) return -1;
    cstcp_set_timeouts(c->ctl, 10); /* a server that never answers is not ours */
    char line[512];
    snprintf(line, sizeof line, CSTCP_PROTO " hello mode=%s sockbuf=%ld node=%s", o->mode,
             o->sockbuf, o->node);
    int rc = cstcp_line_send(c->ctl, line);
    if (rc == 0) rc = cstcp_line_recv(c->ctl, line, sizeof line);
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        snprintf(c->err, sizeof c->err, "the server at %s:%d did not answer within 10 s "
                 "(busy with another client, or not a commscope tcp server)", o->peer, o->port);
        return -1;
    }
    if (rc != 0) return fail(c, "handshake with the server", rc);
    if (expect(c, line, "ok") < 0) return -1;
    char token[32] = "";
    cstcp_field(line, "token", token, sizeof token);
    cstcp_field(line, "node", c->f.server_node, sizeof c->f.server_node);
    c->f.server_pid = (int)cstcp_field_ll(line, "pid", 0);

    c->data = cstcp_connect(o->peer, o->port, o->sockbuf, o->connect_timeout_s, c->err,
                            sizeof c->err);
    if (c->data < 0) return -1;
    snprintf(line, sizeof line, CSTCP_PROTO " data token=%s", token);
    rc = cstcp_line_send(c->data, line);
    if (rc == 0) rc = cstcp_line_recv(c->ctl, line, sizeof line);
    if (rc != 0) return fail(c, "handshake with the server", rc);
    if (expect(c, line, "ready") < 0) return -1;
    cstcp_set_timeouts(c->ctl, CSTCP_IO_TIMEOUT_S + 10);
    cstcp_end *t = &c->f.server_end;
    cstcp_field(line, "address", t->address, sizeof t->address);
    t->port = (int)cstcp_field_ll(line, "port", 0);
    cstcp_field(line, "iface", t->iface, sizeof t->iface);
    if (strcmp(t->iface, "-") == 0) t->iface[0] = '\0';
    t->mtu = (long)cstcp_field_ll(line, "mtu", -1);
    t->speed_mbps = (long)cstcp_field_ll(line, "speed_mbps", -1);
    t->sndbuf = (long)cstcp_field_ll(line, "sndbuf", -1);
    t->rcvbuf = (long)cstcp_field_ll(line, "rcvbuf", -1);
    t->wmem_max = (long)cstcp_field_ll(line, "wmem_max", -1);
    t->rmem_max = (long)cstcp_field_ll(line, "rmem_max", -1);
    cstcp_end_of(c->data, &c->f.client_end);
    c->f.pair = cstcp_peer_is_local(c->data) ? "intra-node" : "inter-node";
    return 0;
}

/* ---- ping-pong ---- */

static int block(client *c, size_t size, long count, double *elapsed) {
    cstcp_cmd cmd = {CSTCP_CMD_PINGPONG, size, (uint64_t)count, 0, 0, 0, 0, 0};
    char ack;
    int rc = cstcp_cmd_send(c->data, &cmd);
    if (rc == 0) rc = cstcp_recv_all(c->data, &ack, 1);
    if (rc != 0) return fail(c, "ping-pong command", rc);
    double t0 = cstcp_now();
    for (long i = 0; i < count; i++) {
        rc = cstcp_send_all(c->data, c->sbuf, size);
        if (rc == 0) rc = cstcp_recv_all(c->data, c->rbuf, size);
        if (rc != 0) {
            snprintf(c->err, sizeof c->err, "ping-pong at %zu bytes: %s", size,
                     cstcp_io_error(rc));
            return -1;
        }
    }
    *elapsed = cstcp_now() - t0;
    return 0;
}

static const char *stop_names[] = {"", "rse", "budget", "max_samples"};

static int measure(client *c, size_t size) {
    const cstcp_client_opts *o = c->o;
    double start = cstcp_now(), elapsed = 0.0;
    if (o->warmup > 0 && block(c, size, o->warmup, &elapsed) < 0) return -1;
    if (block(c, size, 2, &elapsed) < 0) return -1;
    double per = elapsed / 2.0;
    double want = fmax(o->sample_min_s, 100.0 * c->f.resolution_s);
    long iters = per > 0 && want > per ? (long)ceil(want / per) : 1;
    if (iters > (1L << 20)) iters = 1L << 20;

    int n = 0, stop = 0;
    double mean = 0.0, m2 = 0.0; /* Welford's running mean and squared deviations */
    while (!stop) {
        if (block(c, size, iters, &elapsed) < 0) return -1;
        double x = elapsed / (2.0 * (double)iters);
        c->samples[n++] = x;
        double d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
        double rse = n > 1 && mean > 0 ? sqrt(m2 / (n - 1) / n) / mean : INFINITY;
        if (n >= o->min_samples && rse <= o->target_rse) stop = 1;
        else if (cstcp_now() - start >= o->point_budget_s && n >= 2) stop = 2;
        else if (n >= o->max_samples) stop = 3;
    }
    cstcp_write_point(&c->f, size, iters, c->samples, n, stop_names[stop]);
    c->records++;
    return 0;
}

static int skipped(const char *skip, const char *item) {
    size_t n = strlen(item);
    for (const char *p = skip; p && *p; p += strcspn(p, ","), p += *p == ',') {
        if (strncmp(p, item, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

/* ---- stream ---- */

static int stream(client *c, cstcp_stat *server_stat) {
    const cstcp_client_opts *o = c->o;
    static cstcp_stream mine, theirs; /* large (the bins) */
    static char line[CSTCP_LINE_MAX];
    mine = (cstcp_stream){.duration_s = o->duration_s, .interval_s = o->interval_s,
                          .mean = o->mean, .max = o->max, .seed = o->seed};
    cstcp_cmd cmd = {CSTCP_CMD_STREAM, 0, 0, o->mean, o->max,
                     (uint64_t)llround(o->duration_s * 1e6),
                     (uint64_t)llround(o->interval_s * 1e6), o->seed + 1};
    int rc = cstcp_cmd_send(c->data, &cmd);
    if (rc != 0) return fail(c, "stream command", rc);
    if (cstcp_stream_run(c->data, &mine, c->err, sizeof c->err) < 0) return -1;
    rc = cstcp_line_recv(c->ctl, line, sizeof line);
    if (rc != 0) return fail(c, "the server's stream counts", rc);
    if (expect(c, line, "stream") < 0 || cstcp_stream_parse(line, &theirs) < 0) {
        snprintf(c->err, sizeof c->err, "the server's stream counts are malformed");
        return -1;
    }
    rc = cstcp_line_recv(c->ctl, line, sizeof line);
    if (rc != 0) return fail(c, "the server's counters", rc);
    if (expect(c, line, "done") < 0) return -1;
    cstcp_stat_parse(line, server_stat);
    cstcp_stat st;
    cstcp_stat_of(c->data, &st);
    cstcp_write_stream(&c->f, &mine, &theirs, &st, server_stat);
    c->records++;
    return 0;
}

/* ---- the session ---- */

static int finish(client *c, cstcp_stat *server_stat) {
    cstcp_cmd cmd = {CSTCP_CMD_END, 0, 0, 0, 0, 0, 0, 0};
    char line[512];
    int rc = cstcp_cmd_send(c->data, &cmd);
    if (rc == 0) rc = cstcp_line_recv(c->ctl, line, sizeof line);
    if (rc != 0) return fail(c, "the server's counters", rc);
    if (expect(c, line, "done") < 0) return -1;
    cstcp_stat_parse(line, server_stat);
    return 0;
}

static int measure_all(client *c) {
    const cstcp_client_opts *o = c->o;
    int pingpong = strcmp(o->mode, "stream") != 0;
    int streaming = strcmp(o->mode, "pingpong") != 0 && !skipped(o->skip, "stream");
    cstcp_stat server_stat = {-1, -1, -1, -1, -1};
    for (int i = 0; pingpong && i < o->nsizes; i++) {
        char item[32];
        snprintf(item, sizeof item, "%zu", o->sizes[i]);
        if (!skipped(o->skip, item) && measure(c, o->sizes[i]) < 0) return -1;
    }
    if (streaming ? stream(c, &server_stat) < 0 : finish(c, &server_stat) < 0) return -1;
    cstcp_stat st;
    cstcp_stat_of(c->data, &st);
    cstcp_write_end(c->records, cstcp_now() - c->start, &st, &server_stat);
    return 0;
}

int cstcp_client(const cstcp_client_opts *o) {
    client c = {.o = o, .f = {.o = o}, .ctl = -1, .data = -1, .start = cstcp_now()};
    size_t max = 1;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > max) max = o->sizes[i];
    c.sbuf = malloc(max);
    c.rbuf = malloc(max);
    c.samples = malloc(sizeof(double) * (size_t)o->max_samples);
    if (!c.sbuf || !c.rbuf || !c.samples) {
        fprintf(stderr, "commscope-tcp: out of memory for %zu-byte messages\n", max);
        return 2;
    }
    memset(c.sbuf, 'c', max);
    timer_facts(&c);
    if (handshake(&c) < 0) {
        fprintf(stderr, "commscope-tcp: %s\n", c.err);
        return 2;
    }
    cstcp_write_header(&c.f);
    int rc = measure_all(&c);
    if (rc < 0) fprintf(stderr, "commscope-tcp: %s\n", c.err);
    close(c.data);
    close(c.ctl);
    free(c.sbuf);
    free(c.rbuf);
    free(c.samples);
    return rc < 0 ? 3 : 0;
}
