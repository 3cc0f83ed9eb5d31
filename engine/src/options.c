/* Command-line options; every rank parses the same argv, so every rank agrees. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

static int parse_sizes(const char *text, cs_options *o, char *err, size_t errlen) {
    int n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    o->sizes = malloc(sizeof(size_t) * (size_t)n);
    if (!o->sizes) {
        snprintf(err, errlen, "out of memory for --sizes");
        return -1;
    }
    o->nsizes = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-') {
            snprintf(err, errlen, "--sizes %s: expected comma-separated byte counts like 0,8,1024",
                     text);
            return -1;
        }
        o->sizes[o->nsizes++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int number(const char *flag, const char *text, double lo, double hi, double *out,
                  char *err, size_t errlen) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || v < lo || v > hi) {
        snprintf(err, errlen, "%s %s: expected a number in [%g, %g]", flag, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cs_options_parse(int argc, char **argv, cs_options *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->ops = "pingpong,bw,bibw";
    o->pairs = "auto";
    o->timer = "monotonic_raw";
    o->skip = "";
    o->window = 64;
    o->warmup = 10;
    o->min_samples = 10;
    o->max_samples = 1000;
    o->target_rse = 0.01;
    o->point_budget_s = 0.25;
    o->sample_min_s = 50e-6;
    o->window_bytes_cap = (size_t)64 << 20;
    const char *sizes = "0,8,1024,65536,1048576";
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s: missing value (see commscope-engine --help)", flag);
            return -1;
        }
        const char *val = argv[++i];
        double v = 0;
        int rc = 0;
        if (strcmp(flag, "--ops") == 0) o->ops = val;
        else if (strcmp(flag, "--pairs") == 0) o->pairs = val;
        else if (strcmp(flag, "--timer") == 0) o->timer = val;
        else if (strcmp(flag, "--sizes") == 0) sizes = val;
        else if (strcmp(flag, "--skip") == 0) o->skip = val;
        else if (strcmp(flag, "--window") == 0) {
            rc = number(flag, val, 1, 4096, &v, err, errlen);
            o->window = (int)v;
        } else if (strcmp(flag, "--warmup") == 0) {
            rc = number(flag, val, 0, 1e6, &v, err, errlen);
            o->warmup = (int)v;
        } else if (strcmp(flag, "--min-samples") == 0) {
            rc = number(flag, val, 2, 1e6, &v, err, errlen);
            o->min_samples = (int)v;
        } else if (strcmp(flag, "--max-samples") == 0) {
            rc = number(flag, val, 2, 1e7, &v, err, errlen);
            o->max_samples = (int)v;
        } else if (strcmp(flag, "--target-rse") == 0) {
            rc = number(flag, val, 0, 1, &v, err, errlen);
            o->target_rse = v;
        } else if (strcmp(flag, "--point-budget") == 0) {
            rc = number(flag, val, 1e-6, 3600, &v, err, errlen);
            o->point_budget_s = v;
        } else if (strcmp(flag, "--sample-min-time") == 0) {
            rc = number(flag, val, 0, 10, &v, err, errlen);
            o->sample_min_s = v;
        } else {
            snprintf(err, errlen, "unknown option %s (see commscope-engine --help)", flag);
            return -1;
        }
        if (rc) return -1;
    }
    if (o->max_samples < o->min_samples) {
        snprintf(err, errlen, "--max-samples %d is below --min-samples %d", o->max_samples,
                 o->min_samples);
        return -1;
    }
    return parse_sizes(sizes, o, err, errlen);
}

int cs_options_skipped(const cs_options *o, const char *op, const char *pair, size_t bytes) {
    char key[96];
    int n = snprintf(key, sizeof key, "%s:%s:%zu", op, pair, bytes);
    size_t len = (size_t)n;
    for (const char *p = o->skip; (p = strstr(p, key)) != NULL; p += len)
        if ((p == o->skip || p[-1] == ',') && (p[len] == '\0' || p[len] == ',')) return 1;
    return 0;
}
