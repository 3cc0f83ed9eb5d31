/* The server role: one session at a time on one port. It echoes ping-pong blocks, joins
 * streams, and reports its end's facts and counters on the control connection. Events go to
 * stdout as short lines ("listening ADDR PORT" first, then one or two per session); only
 * errors that stop the server go to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cstcp.h"

#define ACCEPT_WAIT_S 10

typedef struct session {
    int listener, ctl, data;
    const cstcp_serve_opts *opt;
    unsigned long long token;
    char *buf;
    size_t cap;
    char err[CSTCP_ERRLEN];
} session;

static unsigned long long new_token(void) {
    unsigned long long t = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &t, sizeof t) != (ssize_t)sizeof t) t = 0;
        close(fd);
    }
    return t ? t : (unsigned long long)time(NULL) * 2654435761ULL ^ (unsigned long long)getpid();
}

static void reply_error(int fd, const char *what) {
    char line[CSTCP_ERRLEN + 32];
    snprintf(line, sizeof line, CSTCP_PROTO " error %s", what);
    cstcp_line_send(fd, line);
}

/* Waits for the client's data connection, turning away anyone else meanwhile. */
static int accept_data(session *s) {
    double deadline = cstcp_now() + ACCEPT_WAIT_S;
    char want[64], line[256];
    snprintf(want, sizeof want, CSTCP_PROTO " data token=%016llx", s->token);
    while (cstcp_now() < deadline) {
        struct pollfd p = {s->listener, POLLIN, 0};
        if (poll(&p, 1, (int)((deadline - cstcp_now()) * 1000) + 1) <= 0) continue;
        int fd = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        cstcp_set_timeouts(fd, 5);
        if (cstcp_line_recv(fd, line, sizeof line) == 0 && strcmp(line, want) == 0) {
            cstcp_set_timeouts(fd, CSTCP_IO_TIMEOUT_S);
            s->data = fd;
            return 0;
        }
        reply_error(fd, "busy with another client; try again later");
        close(fd);
    }
    snprintf(s->err, sizeof s->err, "the client's data connection did not arrive within %d s",
             ACCEPT_WAIT_S);
    return -1;
}

static int grow(session *s, size_t size) {
    if (size <= s->cap) return 0;
    char *b = realloc(s->buf, size);
    if (!b) return -1;
    memset(b, 'r', size);
    s->buf = b;
    s->cap = size;
    return 0;
}

static int echo(session *s, const cstcp_cmd *c) {
    if (c->size < 1 || c->size > CSTCP_MAX_MESSAGE || grow(s, c->size) < 0) {
        snprintf(s->err, sizeof s->err, "cannot echo %llu-byte messages",
                 (unsigned long long)c->size);
        return -1;
    }
    char ack = 'a';
    if (cstcp_send_all(s->data, &ack, 1) < 0) goto fail;
    for (uint64_t i = 0; i < c->count; i++) {
        int rc = cstcp_recv_all(s->data, s->buf, c->size);
        if (rc != 0 || cstcp_send_all(s->data, s->buf, c->size) < 0) {
            snprintf(s->err, sizeof s->err, "ping-pong at %llu bytes: %s",
                     (unsigned long long)c->size, cstcp_io_error(rc ? rc : -1));
            return -1;
        }
    }
    return 0;
fail:
    snprintf(s->err, sizeof s->err, "ping-pong: %s", cstcp_io_error(-1));
    return -1;
}

static int stream(session *s, const cstcp_cmd *c) {
    static cstcp_stream st; /* large (the bins); one session at a time */
    memset(&st, 0, sizeof st);
    st.duration_s = (double)c->duration_us * 1e-6;
    st.interval_s = (double)c->interval_us * 1e-6;
    st.mean = (size_t)c->mean;
    st.max = (size_t)c->max;
    st.seed = c->seed;
    if (cstcp_stream_run(s->data, &st, s->err, sizeof s->err) < 0) return -1;
    static char line[CSTCP_LINE_MAX];
    int n = snprintf(line, sizeof line, CSTCP_PROTO " stream ");
    cstcp_stream_format(&st, line + n, sizeof line - (size_t)n);
    return cstcp_line_send(s->ctl, line);
}

/* Runs the client's commands until the end command or a stream; then reports counters. */
static int serve_commands(session *s) {
    for (;;) {
        cstcp_cmd c;
        int rc = cstcp_cmd_recv(s->data, &c);
        if (rc != 0) {
            snprintf(s->err, sizeof s->err, "waiting for a command: %s", cstcp_io_error(rc));
            return -1;
        }
        if (c.kind == CSTCP_CMD_PINGPONG) {
            if (echo(s, &c) < 0) return -1;
            continue;
        }
        if (c.kind == CSTCP_CMD_STREAM && stream(s, &c) < 0) return -1;
        if (c.kind != CSTCP_CMD_STREAM && c.kind != CSTCP_CMD_END) {
            snprintf(s->err, sizeof s->err, "unknown command %llu", (unsigned long long)c.kind);
            return -1;
        }
        cstcp_stat st;
        char fields[256], line[320];
        cstcp_stat_of(s->data, &st);
        cstcp_stat_format(&st, fields, sizeof fields);
        snprintf(line, sizeof line, CSTCP_PROTO " done %s", fields);
        return cstcp_line_send(s->ctl, line);
    }
}

/* Node names travel in space-separated control lines. */
static int plain_name(const char *name) {
    if (!*name) return 0;
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p == '=' || *p > '~') return 0;
    return 1;
}

static int session_run(session *s, const char *hello) {
    if (strncmp(hello, CSTCP_PROTO " hello ", strlen(CSTCP_PROTO) + 7) != 0) {
        reply_error(s->ctl, "not a commscope-tcp client of protocol 1");
        snprintf(s->err, sizeof s->err, "a connection that is not a commscope-tcp client");
        return -1;
    }
    long sockbuf = (long)cstcp_field_ll(hello, "sockbuf", 0);
    char line[512];
    s->token = new_token();
    snprintf(line, sizeof line, CSTCP_PROTO " ok token=%016llx node=%s pid=%d", s->token,
             s->opt->node, (int)getpid());
    if (cstcp_line_send(s->ctl, line) < 0 || accept_data(s) < 0) return -1;
    cstcp_nodelay(s->data);
    long snd, rcv;
    cstcp_sockbuf(s->data, sockbuf, &snd, &rcv);
    cstcp_end e;
    cstcp_end_of(s->data, &e);
    snprintf(line, sizeof line, CSTCP_PROTO " ready address=%s port=%d iface=%s mtu=%ld "
             "speed_mbps=%ld sndbuf=%ld rcvbuf=%ld wmem_max=%ld rmem_max=%ld", e.address, e.port,
             e.iface[0] ? e.iface : "-", e.mtu, e.speed_mbps, e.sndbuf, e.rcvbuf, e.wmem_max,
             e.rmem_max);
    if (cstcp_line_send(s->ctl, line) < 0) return -1;
    char node[64] = "?", mode[16] = "?";
    cstcp_field(hello, "node", node, sizeof node);
    cstcp_field(hello, "mode", mode, sizeof mode);
    printf("session with %s mode=%s sockbuf=%ld granted=%ld/%ld\n",
           plain_name(node) ? node : "?", plain_name(mode) ? mode : "?", sockbuf, snd, rcv);
    fflush(stdout);
    return serve_commands(s);
}

int cstcp_serve(const cstcp_serve_opts *o) {
    char err[CSTCP_ERRLEN];
    if (!plain_name(o->node)) {
        fprintf(stderr, "commscope-tcp: --node '%s' must be printable without spaces\n", o->node);
        return 2;
    }
    int port = 0;
    int listener = cstcp_listen(o->bind_addr, o->port, &port, err, sizeof err);
    if (listener < 0) {
        fprintf(stderr, "commscope-tcp: %s\n", err);
        return 2;
    }
    printf("listening %s %d\n", o->bind_addr ? o->bind_addr : "*", port);
    fflush(stdout);
    for (;;) {
        int ctl = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (ctl < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            fprintf(stderr, "commscope-tcp: accept failed (%s)\n", strerror(errno));
            return 2;
        }
        session s = {listener, ctl, -1, o, 0, NULL, 0, ""};
        cstcp_nodelay(ctl);
        cstcp_set_timeouts(ctl, CSTCP_IO_TIMEOUT_S);
        char hello[512];
        int rc = cstcp_line_recv(ctl, hello, sizeof hello);
        if (rc != 0) snprintf(s.err, sizeof s.err, "no hello: %s", cstcp_io_error(rc));
        else rc = session_run(&s, hello);
        if (rc != 0) printf("session ended early: %s\n", s.err);
        else printf("session done\n");
        fflush(stdout);
        if (s.data >= 0) close(s.data);
        close(ctl);
        free(s.buf);
        if (o->once) return rc == 0 ? 0 : 3;
    }
}
