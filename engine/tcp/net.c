/* Socket plumbing for both roles: connect and listen, whole-buffer I/O, control lines, and
 * what the kernel knows about a connection (interface, MTU, speed, buffers, TCP_INFO). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_segs_out; glibc's stops earlier */
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cstcp.h"

double cstcp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cstcp_set_timeouts(int fd, int seconds) {
    struct timeval tv = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void cstcp_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void cstcp_sockbuf(int fd, long sockbuf, long *snd, long *rcv) {
    if (sockbuf > 0) {
        int v = sockbuf > 0x3fffffff ? 0x3fffffff : (int)sockbuf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
    int s = -1, r = -1;
    socklen_t len = sizeof s;
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s, &len);
    len = sizeof r;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &r, &len);
    *snd = s;
    *rcv = r;
}

/* Non-blocking connect bounded by timeout_s, so an unreachable peer fails in time. */
static int connect_one(const struct addrinfo *ai, long sockbuf, double timeout_s, int *why) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *why = errno;
        return -1;
    }
    long snd, rcv;
    cstcp_sockbuf(fd, sockbuf, &snd, &rcv); /* before connect: sets the window scale */
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        rc = poll(&p, 1, (int)(timeout_s * 1000));
        if (rc == 0) {
            *why = ETIMEDOUT;
            close(fd);
            return -1;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (rc < 0 || soerr) {
            *why = rc < 0 ? errno : soerr;
            close(fd);
            return -1;
        }
    } else if (rc < 0) {
        *why = errno;
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, flags);
    return fd;
}

int cstcp_connect(const char *host, int port, long sockbuf, double timeout_s, char *err,
                  size_t errlen) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve peer %s (%s); check the name or give an address",
                 host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, why = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, sockbuf, timeout_s, &why);
    freeaddrinfo(res);
    if (fd >= 0) {
        cstcp_nodelay(fd);
        cstcp_set_timeouts(fd, CSTCP_IO_TIMEOUT_S);
        return fd;
    }
    if (why == ECONNREFUSED)
        snprintf(err, errlen, "no commscope tcp server at %s:%d (connection refused); start one "
                 "there with 'commscope tcp serve'", host, port);
    else if (why == ETIMEDOUT)
        snprintf(err, errlen, "peer %s:%d did not answer within %g s; check the address, the "
                 "route and firewalls", host, port, timeout_s);
    else
        snprintf(err, errlen, "cannot connect to %s:%d (%s)", host, port, strerror(why));
    return -1;
}

int cstcp_listen(const char *bind_addr, int port, int *bound_port, char *err, size_t errlen) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(bind_addr, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot use bind address %s (%s)", bind_addr ? bind_addr : "*",
                 gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    int one = 1, why = errno;
    if (fd >= 0) {
        /* A restarted server must not wait for the old one's TIME_WAIT connections. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 8) < 0) {
            why = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (why == EADDRINUSE)
            snprintf(err, errlen, "port %d on %s is in use (another server?); choose another "
                     "with --port", port, bind_addr ? bind_addr : "all addresses");
        else
            snprintf(err, errlen, "cannot listen on %s port %d (%s)",
                     bind_addr ? bind_addr : "all addresses", port, strerror(why));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int cstcp_send_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int cstcp_recv_all(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_WAITALL);
        if (k == 0) return 1;
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

const char *cstcp_io_error(int rc) {
    if (rc == 1) return "the peer closed the connection";
    if (errno == EAGAIN || errno == EWOULDBLOCK) return "the peer went silent";
    return strerror(errno);
}

int cstcp_line_send(int fd, const char *text) {
    size_t n = strlen(text);
    if (cstcp_send_all(fd, text, n) < 0) return -1;
    return cstcp_send_all(fd, "\n", 1);
}

/* Byte by byte: control lines are few and short, and nothing is read past the newline. */
int cstcp_line_recv(int fd, char *buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        char c;
        int rc = cstcp_recv_all(fd, &c, 1);
        if (rc != 0) return rc;
        if (c == '\n') break;
        if (n + 1 >= cap) {
            errno = EMSGSIZE;
            return -1;
        }
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 0;
}

int cstcp_field(const char *line, const char *key, char *out, size_t cap) {
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
        if ((p != line && p[-1] != ' ') || p[klen] != '=') continue;
        const char *v = p + klen + 1;
        size_t n = strcspn(v, " ");
        if (n >= cap) n = cap - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        return 0;
    }
    return -1;
}

long long cstcp_field_ll(const char *line, const char *key, long long fallback) {
    char v[32];
    if (cstcp_field(line, key, v, sizeof v) != 0) return fallback;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? fallback : x;
}

double cstcp_field_num(const char *line, const char *key, double fallback) {
    char v[48];
    if (cstcp_field(line, key, v, sizeof v) != 0) return fallback;
    char *end;
    double x = strtod(v, &end);
    return *end ? fallback : x;
}

int cstcp_cmd_send(int fd, const cstcp_cmd *cmd) {
    const uint64_t f[8] = {cmd->kind, cmd->size, cmd->count, cmd->mean,
                           cmd->max, cmd->duration_us, cmd->interval_us, cmd->seed};
    unsigned char wire[64];
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 8; b++) wire[i * 8 + b] = (unsigned char)(f[i] >> (56 - 8 * b));
    return cstcp_send_all(fd, wire, sizeof wire);
}

int cstcp_cmd_recv(int fd, cstcp_cmd *cmd) {
    unsigned char wire[64];
    int rc = cstcp_recv_all(fd, wire, sizeof wire);
    if (rc != 0) return rc;
    uint64_t f[8];
    for (int i = 0; i < 8; i++) {
        f[i] = 0;
        for (int b = 0; b < 8; b++) f[i] = (f[i] << 8) | wire[i * 8 + b];
    }
    *cmd = (cstcp_cmd){f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]};
    return 0;
}

/* ---- facts about one end ---- */

static long read_long(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

static int same_address(const struct sockaddr *a, const struct sockaddr *b) {
    if (!a || !b || a->sa_family != b->sa_family) return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return 0;
}

/* Name of the interface holding addr, or "" when none does. */
static void iface_of(const struct sockaddr *addr, char *name, size_t cap) {
    name[0] = '\0';
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return;
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (same_address(i->ifa_addr, addr)) {
            snprintf(name, cap, "%s", i->ifa_name);
            break;
        }
    }
    freeifaddrs(list);
}

static void address_text(const struct sockaddr_storage *ss, char *out, size_t cap, int *port) {
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)cap);
        *port = ntohs(s6->sin6_port);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s4->sin_addr, out, (socklen_t)cap);
        *port = ntohs(s4->sin_port);
    }
}

void cstcp_end_of(int fd, cstcp_end *end) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    memset(end, 0, sizeof *end);
    end->mtu = end->speed_mbps = -1;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        address_text(&ss, end->address, sizeof end->address, &end->port);
        iface_of((struct sockaddr *)&ss, end->iface, sizeof end->iface);
    }
    if (end->iface[0]) {
        char path[96];
        snprintf(path, sizeof path, "/sys/class/net/%s/mtu", end->iface);
        end->mtu = read_long(path);
        snprintf(path, sizeof path, "/sys/class/net/%s/speed", end->iface);
        end->speed_mbps = read_long(path); /* fails (EINVAL) where the kernel does not know */
        if (end->speed_mbps <= 0) end->speed_mbps = -1;
    }
    cstcp_sockbuf(fd, 0, &end->sndbuf, &end->rcvbuf);
    end->wmem_max = read_long("/proc/sys/net/core/wmem_max");
    end->rmem_max = read_long("/proc/sys/net/core/rmem_max");
}

int cstcp_peer_is_local(int fd) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0) return 0;
    if (peer.ss_family == AF_INET) {
        uint32_t a = ntohl(((struct sockaddr_in *)&peer)->sin_addr.s_addr);
        if ((a >> 24) == 127) return 1;
    } else if (peer.ss_family == AF_INET6 &&
               IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&peer)->sin6_addr)) {
        return 1;
    }
    char name[32];
    iface_of((struct sockaddr *)&peer, name, sizeof name);
    return name[0] != '\0';
}

void cstcp_stat_of(int fd, cstcp_stat *st) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    st->total_retrans = st->segs_out = -1;
    st->snd_mss = st->pmtu = -1;
    st->rtt_s = -1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return;
    st->total_retrans = ti.tcpi_total_retrans;
    st->snd_mss = ti.tcpi_snd_mss;
    st->pmtu = ti.tcpi_pmtu;
    st->rtt_s = ti.tcpi_rtt * 1e-6;
    /* Older kernels return a shorter struct: only trust fields they filled. */
    if (len >= offsetof(struct tcp_info, tcpi_segs_out) + sizeof ti.tcpi_segs_out)
        st->segs_out = ti.tcpi_segs_out;
}

void cstcp_stat_format(const cstcp_stat *st, char *out, size_t cap) {
    snprintf(out, cap, "retrans=%lld segs_out=%lld snd_mss=%ld pmtu=%ld rtt_s=%.9g",
             st->total_retrans, st->segs_out, st->snd_mss, st->pmtu, st->rtt_s);
}

void cstcp_stat_parse(const char *line, cstcp_stat *st) {
    st->total_retrans = cstcp_field_ll(line, "retrans", -1);
    st->segs_out = cstcp_field_ll(line, "segs_out", -1);
    st->snd_mss = (long)cstcp_field_ll(line, "snd_mss", -1);
    st->pmtu = (long)cstcp_field_ll(line, "pmtu", -1);
    st->rtt_s = cstcp_field_num(line, "rtt_s", -1);
}
