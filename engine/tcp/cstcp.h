/* commscope-tcp: the network below MPI, measured over plain TCP sockets (no MPI).
 *
 * Contract: `commscope-tcp serve` answers clients one session at a time; `commscope-tcp
 * client` writes JSON lines to stdout like the engine: a header record (transport "tcp"),
 * one point per ping-pong size, a stream record, an end record. It only measures.
 *
 * A session uses two connections to the server's one port: a control connection (text
 * lines: hello, the server's facts, results) and a data connection, opened after the hello
 * so that the socket buffers asked for are set on both ends before any data moves. On the
 * data connection the client sends fixed-size commands; ping-pong blocks and the stream
 * follow them. Functions returning int return 0 on success and -1 on error (message in err).
 */
#ifndef CSTCP_H
#define CSTCP_H

#include <stddef.h>
#include <stdint.h>

#define CSTCP_VERSION "0.1.0"
#define CSTCP_PROTO "commscope-tcp 1"
#define CSTCP_DEFAULT_PORT 5220
#define CSTCP_ERRLEN 256
#define CSTCP_LINE_MAX 65536 /* control lines; a stream result with 1000 bins fits */
#define CSTCP_MAX_BINS 1000
#define CSTCP_MAX_MESSAGE ((size_t)1 << 30)
#define CSTCP_IO_TIMEOUT_S 30 /* a peer silent this long is gone */

/* ---- time ---- */
double cstcp_now(void); /* CLOCK_MONOTONIC_RAW, seconds */

/* ---- sockets ---- */
int cstcp_connect(const char *host, int port, long sockbuf, double timeout_s, char *err,
                  size_t errlen); /* fd, or -1 */
int cstcp_listen(const char *bind_addr, int port, int *bound_port, char *err, size_t errlen);
void cstcp_set_timeouts(int fd, int seconds);
void cstcp_nodelay(int fd);
/* Asks for sockbuf bytes each way when sockbuf > 0; reports what the kernel granted. */
void cstcp_sockbuf(int fd, long sockbuf, long *snd, long *rcv);
int cstcp_send_all(int fd, const void *buf, size_t n);  /* 0, or -1 with errno */
int cstcp_recv_all(int fd, void *buf, size_t n);        /* 0, 1 at end of stream, -1 errno */
int cstcp_line_send(int fd, const char *text);          /* appends the newline */
int cstcp_line_recv(int fd, char *buf, size_t cap);     /* 0, 1 at end of stream, -1 */
/* "key=value" from a control line; 0 when found. */
int cstcp_field(const char *line, const char *key, char *out, size_t cap);
long long cstcp_field_ll(const char *line, const char *key, long long fallback);
double cstcp_field_num(const char *line, const char *key, double fallback);
const char *cstcp_io_error(int rc); /* words for a failed send/recv: errno or end of stream */

/* ---- what the kernel knows about a connection's end ---- */
typedef struct cstcp_end {
    char address[64];
    int port;
    char iface[32];  /* "" when the address is on no interface found */
    long mtu;        /* -1 when unknown */
    long speed_mbps; /* -1 when the kernel does not know (virtual links, loopback) */
    long sndbuf, rcvbuf;     /* granted (getsockopt) */
    long wmem_max, rmem_max; /* the caps on what a process may ask for */
} cstcp_end;

void cstcp_end_of(int fd, cstcp_end *end);
int cstcp_peer_is_local(int fd); /* the peer's address belongs to this host */

typedef struct cstcp_stat {
    long long total_retrans; /* segments this end retransmitted */
    long long segs_out;      /* -1 when the kernel does not say */
    long snd_mss, pmtu;
    double rtt_s;
} cstcp_stat;

void cstcp_stat_of(int fd, cstcp_stat *st);
void cstcp_stat_format(const cstcp_stat *st, char *out, size_t cap); /* control-line fields */
void cstcp_stat_parse(const char *line, cstcp_stat *st);

/* ---- data-connection commands ---- */
enum { CSTCP_CMD_END = 0, CSTCP_CMD_PINGPONG = 1, CSTCP_CMD_STREAM = 2 };

typedef struct cstcp_cmd {
    uint64_t kind;
    uint64_t size, count;           /* ping-pong: message size, round trips */
    uint64_t mean, max;             /* stream: message size distribution */
    uint64_t duration_us, interval_us, seed;
} cstcp_cmd;

int cstcp_cmd_send(int fd, const cstcp_cmd *cmd);
int cstcp_cmd_recv(int fd, cstcp_cmd *cmd); /* as cstcp_recv_all */

/* ---- stream: both ends send and receive at once ---- */
typedef struct cstcp_stream {
    /* in */
    double duration_s, interval_s;
    size_t mean, max;
    uint64_t seed;
    /* out: this end's sending */
    long long sent_bytes, messages;
    double send_s;
    /* out: this end's receiving, times from this end's start */
    long long received_bytes;
    double first_s, last_s;
    long long bins[CSTCP_MAX_BINS]; /* bytes received per interval */
    int nbins;
} cstcp_stream;

/* Sends exponentially sized messages for duration_s while receiving, then half-closes the
 * connection and reads until the peer's end of stream. */
int cstcp_stream_run(int fd, cstcp_stream *s, char *err, size_t errlen);
void cstcp_stream_format(const cstcp_stream *s, char *out, size_t cap);
int cstcp_stream_parse(const char *line, cstcp_stream *s);
size_t cstcp_exp_size(uint64_t *state, double mean, size_t max); /* one message size */

/* ---- the two roles ---- */
typedef struct cstcp_serve_opts {
    const char *bind_addr;
    int port;
    int once; /* serve one session, exit with its status */
    const char *node;
} cstcp_serve_opts;

int cstcp_serve(const cstcp_serve_opts *o);

typedef struct cstcp_client_opts {
    const char *peer;
    int port;
    const char *mode; /* pingpong, stream, both */
    size_t *sizes;
    int nsizes;
    const char *skip; /* comma list of sizes already measured */
    long sockbuf;     /* 0: the system default */
    int warmup, min_samples, max_samples;
    double target_rse, point_budget_s, sample_min_s;
    double duration_s, interval_s, connect_timeout_s;
    size_t mean, max;
    uint64_t seed;
    const char *node;
} cstcp_client_opts;

int cstcp_client(const cstcp_client_opts *o); /* exit status */

/* ---- the client's records (JSON lines on stdout) ---- */
typedef struct cstcp_facts {
    const cstcp_client_opts *o;
    const char *pair; /* intra-node when the peer's address is on this host, else inter-node */
    char server_node[64];
    int server_pid;
    cstcp_end client_end, server_end;
    double resolution_s, overhead_s; /* of the timer (CLOCK_MONOTONIC_RAW) */
} cstcp_facts;

void cstcp_write_header(const cstcp_facts *f);
void cstcp_write_point(const cstcp_facts *f, size_t size, long iters, const double *samples,
                       int n, const char *stop);
void cstcp_write_stream(const cstcp_facts *f, const cstcp_stream *mine,
                        const cstcp_stream *theirs, const cstcp_stat *mine_st,
                        const cstcp_stat *theirs_st);
void cstcp_write_end(int records, double elapsed_s, const cstcp_stat *client,
                     const cstcp_stat *server);

#endif
