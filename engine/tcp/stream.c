/* Stream mode, run the same way at both ends: a sender thread writes messages whose sizes
 * follow an exponential distribution (the network test of Rechistov et al. 2012, cluster
 * simulation) for a fixed duration, while this thread counts what arrives from the peer in
 * fixed time bins until its end of stream.
 * Nagle's algorithm is on during the stream, as for any streaming application. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "cstcp.h"

#define RECV_CHUNK ((size_t)256 << 10)

static uint64_t next_random(uint64_t *s) {
    /* xorshift64*: fast, and good enough to draw message sizes */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

size_t cstcp_exp_size(uint64_t *state, double mean, size_t max) {
    /* Sizes outside [1, max] are drawn again: the distribution is truncated, not clipped,
     * so no spike of max-sized messages appears. */
    for (;;) {
        double u = (double)((next_random(state) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
        double x = floor(-mean * log(u) + 0.5);
        if (x >= 1.0 && x <= (double)max) return (size_t)x;
    }
}

typedef struct sender {
    int fd;
    cstcp_stream *s;
    double start;
    int error; /* errno of a failed send, 0 when none */
} sender;

static void *send_loop(void *arg) {
    sender *snd = arg;
    cstcp_stream *s = snd->s;
    char *buf = malloc(s->max);
    if (!buf) {
        snd->error = ENOMEM;
        shutdown(snd->fd, SHUT_WR);
        return NULL;
    }
    memset(buf, 's', s->max);
    uint64_t state = s->seed * 0x9E3779B97F4A7C15ULL + 1;
    double t = 0.0;
    while ((t = cstcp_now() - snd->start) < s->duration_s) {
        size_t n = cstcp_exp_size(&state, (double)s->mean, s->max);
        if (cstcp_send_all(snd->fd, buf, n) < 0) {
            snd->error = errno;
            break;
        }
        s->sent_bytes += (long long)n;
        s->messages++;
    }
    s->send_s = cstcp_now() - snd->start;
    shutdown(snd->fd, SHUT_WR); /* the peer's receiver sees its end of stream */
    free(buf);
    return NULL;
}

int cstcp_stream_run(int fd, cstcp_stream *s, char *err, size_t errlen) {
    if (s->mean < 1 || s->max < 1 || s->max > CSTCP_MAX_MESSAGE || s->duration_s <= 0) {
        snprintf(err, errlen, "stream: bad parameters (mean %zu, max %zu, %g s)", s->mean,
                 s->max, s->duration_s);
        return -1;
    }
    /* Bins cover the duration and the drain after it; wider bins for long runs. */
    double min_interval = (s->duration_s + 1.0) / (CSTCP_MAX_BINS - 1);
    if (s->interval_s < min_interval) s->interval_s = min_interval;
    s->sent_bytes = s->messages = s->received_bytes = 0;
    s->first_s = s->last_s = s->send_s = 0.0;
    s->nbins = 0;
    memset(s->bins, 0, sizeof s->bins);
    char *buf = malloc(RECV_CHUNK);
    if (!buf) {
        snprintf(err, errlen, "stream: out of memory");
        return -1;
    }
    /* A streaming application leaves Nagle on: small writes coalesce into full segments. */
    int off = 0;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
    sender snd = {fd, s, cstcp_now(), 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, send_loop, &snd) != 0) {
        free(buf);
        snprintf(err, errlen, "stream: cannot start the sending thread");
        return -1;
    }
    int rc = 0;
    for (;;) {
        ssize_t k = recv(fd, buf, RECV_CHUNK, 0);
        if (k == 0) break;
        if (k < 0) {
            if (errno == EINTR) continue;
            snprintf(err, errlen, "stream: receiving failed (%s)", cstcp_io_error(-1));
            rc = -1;
            break;
        }
        double t = cstcp_now() - snd.start;
        if (s->received_bytes == 0) s->first_s = t;
        s->last_s = t;
        s->received_bytes += k;
        int bin = (int)(t / s->interval_s);
        if (bin >= CSTCP_MAX_BINS) bin = CSTCP_MAX_BINS - 1;
        s->bins[bin] += k;
        if (bin + 1 > s->nbins) s->nbins = bin + 1;
    }
    if (rc != 0) shutdown(fd, SHUT_RDWR); /* unblocks a sender stuck on a dead peer */
    pthread_join(thread, NULL);
    free(buf);
    if (rc == 0 && snd.error) {
        snprintf(err, errlen, "stream: sending failed (%s)", strerror(snd.error));
        rc = -1;
    }
    return rc;
}

void cstcp_stream_format(const cstcp_stream *s, char *out, size_t cap) {
    int n = snprintf(out, cap, "sent=%lld messages=%lld send_s=%.9g received=%lld first_s=%.9g "
                     "last_s=%.9g interval_s=%.9g bins=", s->sent_bytes, s->messages, s->send_s,
                     s->received_bytes, s->first_s, s->last_s, s->interval_s);
    for (int i = 0; i < s->nbins && n > 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, i ? ",%lld" : "%lld", s->bins[i]);
}

int cstcp_stream_parse(const char *line, cstcp_stream *s) {
    s->sent_bytes = cstcp_field_ll(line, "sent", -1);
    s->messages = cstcp_field_ll(line, "messages", -1);
    s->send_s = cstcp_field_num(line, "send_s", -1);
    s->received_bytes = cstcp_field_ll(line, "received", -1);
    s->first_s = cstcp_field_num(line, "first_s", -1);
    s->last_s = cstcp_field_num(line, "last_s", -1);
    s->interval_s = cstcp_field_num(line, "interval_s", -1);
    if (s->sent_bytes < 0 || s->messages < 0 || s->received_bytes < 0 || s->interval_s <= 0)
        return -1;
    const char *p = strstr(line, " bins=");
    s->nbins = 0;
    if (!p) return -1;
    p += 6;
    while (*p && *p != ' ' && s->nbins < CSTCP_MAX_BINS) {
        char *end;
        s->bins[s->nbins++] = strtoll(p, &end, 10);
        if (end == p) return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}
