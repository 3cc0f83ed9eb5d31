/* The client's JSON lines: header (transport "tcp", both ends), ping-pong points, the stream
 * record and the end record, in the engine's schema (records-v1.json). */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commscope.h"
#include "cstcp.h"

static void write_pair_ranks(cs_json *j) {
    cs_json_raw_begin(j, "ranks", '[');
    cs_json_elem_int(j, 0);
    cs_json_elem_int(j, 1);
    cs_json_raw_end(j, ']');
}

static void json_null(cs_json *j, const char *key) {
    cs_json_key(j, key);
    fputs("null", j->out);
}

static void json_known(cs_json *j, const char *key, long long v) {
    if (v < 0) json_null(j, key);
    else cs_json_int(j, key, v);
}

static void write_end_facts(cs_json *j, const char *role, const char *node, const cstcp_end *e) {
    cs_json_raw_begin(j, NULL, '{');
    cs_json_str(j, "role", role);
    cs_json_str(j, "node", node);
    cs_json_str(j, "address", e->address);
    cs_json_int(j, "port", e->port);
    if (e->iface[0]) cs_json_str(j, "interface", e->iface);
    else json_null(j, "interface");
    json_known(j, "mtu", e->mtu);
    json_known(j, "speed_mbps", e->speed_mbps);
    cs_json_int(j, "sndbuf", e->sndbuf);
    cs_json_int(j, "rcvbuf", e->rcvbuf);
    json_known(j, "wmem_max", e->wmem_max);
    json_known(j, "rmem_max", e->rmem_max);
    cs_json_raw_end(j, '}');
}

static void write_rank(cs_json *j, int rank, const char *node, int index, int cpu, int pid) {
    cs_json_raw_begin(j, NULL, '{');
    cs_json_int(j, "rank", rank);
    cs_json_str(j, "node", node);
    cs_json_int(j, "node_index", index);
    cs_json_int(j, "socket", -1);
    cs_json_int(j, "cpu", cpu);
    cs_json_int(j, "pid", pid);
    cs_json_raw_end(j, '}');
}

static void write_options(cs_json *j, const cstcp_client_opts *o) {
    cs_json_raw_begin(j, "options", '{');
    cs_json_str(j, "mode", o->mode);
    cs_json_str(j, "peer", o->peer);
    cs_json_int(j, "port", o->port);
    cs_json_int(j, "sockbuf", o->sockbuf);
    cs_json_raw_begin(j, "sizes", '[');
    for (int i = 0; i < o->nsizes; i++) cs_json_elem_int(j, (long long)o->sizes[i]);
    cs_json_raw_end(j, ']');
    cs_json_str(j, "skip", o->skip);
    cs_json_int(j, "warmup", o->warmup);
    cs_json_int(j, "min_samples", o->min_samples);
    cs_json_int(j, "max_samples", o->max_samples);
    cs_json_num(j, "target_rse", o->target_rse);
    cs_json_num(j, "point_budget_s", o->point_budget_s);
    cs_json_num(j, "sample_min_s", o->sample_min_s);
    cs_json_num(j, "duration_s", o->duration_s);
    cs_json_int(j, "mean_bytes", (long long)o->mean);
    cs_json_int(j, "max_bytes", (long long)o->max);
    cs_json_num(j, "interval_s", o->interval_s);
    cs_json_int(j, "seed", (long long)o->seed);
    cs_json_raw_end(j, '}');
}

void cstcp_write_header(const cstcp_facts *f) {
    const cstcp_client_opts *o = f->o;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "header");
    cs_json_int(&j, "schema_version", CS_SCHEMA_VERSION);
    cs_json_str(&j, "engine_version", CSTCP_VERSION);
    cs_json_str(&j, "transport", "tcp");
    cs_json_int(&j, "nranks", 2);
    cs_json_raw_begin(&j, "ranks", '[');
    int same = strcmp(o->node, f->server_node) == 0;
    write_rank(&j, 0, o->node, 0, sched_getcpu(), (int)getpid());
    write_rank(&j, 1, f->server_node, same ? 0 : 1, -1, f->server_pid);
    cs_json_raw_end(&j, ']');
    cs_json_raw_begin(&j, "timer", '{');
    cs_json_str(&j, "name", "monotonic_raw");
    cs_json_num(&j, "resolution_s", f->resolution_s);
    cs_json_num(&j, "overhead_s", f->overhead_s);
    cs_json_raw_end(&j, '}');
    cs_json_raw_begin(&j, "pairs", '[');
    cs_json_raw_begin(&j, NULL, '{');
    cs_json_str(&j, "label", f->pair);
    cs_json_raw_begin(&j, "ranks", '[');
    cs_json_elem_int(&j, 0);
    cs_json_elem_int(&j, 1);
    cs_json_raw_end(&j, ']');
    cs_json_raw_end(&j, '}');
    cs_json_raw_end(&j, ']');
    write_options(&j, o);
    cs_json_num(&j, "started_unix", (double)wall.tv_sec + 1e-9 * (double)wall.tv_nsec);
    cs_json_raw_begin(&j, "tcp", '{');
    cs_json_str(&j, "mode", o->mode);
    cs_json_str(&j, "peer", o->peer);
    cs_json_int(&j, "port", o->port);
    cs_json_key(&j, "nodelay");
    fputs("true", j.out);
    cs_json_int(&j, "sockbuf_requested", o->sockbuf);
    cs_json_raw_begin(&j, "ends", '[');
    write_end_facts(&j, "client", o->node, &f->client_end);
    write_end_facts(&j, "server", f->server_node, &f->server_end);
    cs_json_raw_end(&j, ']');
    cs_json_raw_end(&j, '}');
    cs_json_end(&j);
}

static void write_stat(cs_json *j, const char *key, const cstcp_stat *st) {
    cs_json_raw_begin(j, key, '{');
    json_known(j, "retrans", st->total_retrans);
    json_known(j, "segs_out", st->segs_out);
    json_known(j, "snd_mss", st->snd_mss);
    json_known(j, "pmtu", st->pmtu);
    if (st->rtt_s >= 0) cs_json_num(j, "rtt_s", st->rtt_s);
    else json_null(j, "rtt_s");
    cs_json_raw_end(j, '}');
}

void cstcp_write_point(const cstcp_facts *f, size_t size, long iters, const double *samples,
                       int n, const char *stop) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "point");
    cs_json_str(&j, "op", "pingpong");
    cs_json_str(&j, "pair", f->pair);
    write_pair_ranks(&j);
    cs_json_int(&j, "bytes", (long long)size);
    cs_json_int(&j, "bytes_per_sample", (long long)size);
    cs_json_int(&j, "window", 1);
    cs_json_int(&j, "iters_per_sample", iters);
    cs_json_int(&j, "warmup", f->o->warmup);
    cs_json_raw_begin(&j, "samples_s", '[');
    for (int i = 0; i < n; i++) cs_json_elem_num(&j, samples[i]);
    cs_json_raw_end(&j, ']');
    cs_json_str(&j, "stop", stop);
    cs_json_str(&j, "transport", "tcp");
    cs_json_int(&j, "sockbuf", f->o->sockbuf);
    cs_json_end(&j);
}

static void write_direction(cs_json *j, int from, const cstcp_stream *sent,
                            const cstcp_stream *got, const cstcp_stat *st) {
    cs_json_raw_begin(j, NULL, '{');
    cs_json_int(j, "from", from);
    cs_json_int(j, "to", 1 - from);
    cs_json_int(j, "sent_bytes", sent->sent_bytes);
    cs_json_int(j, "messages", sent->messages);
    cs_json_num(j, "send_s", sent->send_s);
    cs_json_int(j, "received_bytes", got->received_bytes);
    cs_json_num(j, "first_s", got->first_s);
    cs_json_num(j, "last_s", got->last_s);
    cs_json_raw_begin(j, "bins_bytes", '[');
    for (int i = 0; i < got->nbins; i++) cs_json_elem_int(j, got->bins[i]);
    cs_json_raw_end(j, ']');
    json_known(j, "retrans", st->total_retrans);
    json_known(j, "segs_out", st->segs_out);
    json_known(j, "snd_mss", st->snd_mss);
    json_known(j, "pmtu", st->pmtu);
    cs_json_raw_end(j, '}');
}

void cstcp_write_stream(const cstcp_facts *f, const cstcp_stream *mine,
                        const cstcp_stream *theirs, const cstcp_stat *mine_st,
                        const cstcp_stat *theirs_st) {
    const cstcp_client_opts *o = f->o;
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "stream");
    cs_json_str(&j, "pair", f->pair);
    write_pair_ranks(&j);
    cs_json_int(&j, "mean_bytes", (long long)o->mean);
    cs_json_int(&j, "max_bytes", (long long)o->max);
    cs_json_num(&j, "duration_s", o->duration_s);
    cs_json_num(&j, "interval_s", mine->interval_s);
    cs_json_int(&j, "sockbuf", o->sockbuf);
    cs_json_key(&j, "nodelay");
    fputs("false", j.out);
    cs_json_raw_begin(&j, "directions", '[');
    write_direction(&j, 0, mine, theirs, mine_st);
    write_direction(&j, 1, theirs, mine, theirs_st);
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
}

void cstcp_write_end(int records, double elapsed_s, const cstcp_stat *client,
                     const cstcp_stat *server) {
    cs_json j;
    cs_json_begin(&j, stdout);
    cs_json_str(&j, "type", "end");
    cs_json_int(&j, "points", records);
    cs_json_num(&j, "elapsed_s", elapsed_s);
    cs_json_raw_begin(&j, "tcp", '{');
    write_stat(&j, "client", client);
    write_stat(&j, "server", server);
    cs_json_raw_end(&j, '}');
    cs_json_end(&j);
}
