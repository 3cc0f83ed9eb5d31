/* Command-line options, declared once in engine/options.json (cs_options_table.h is generated
 * from it): their parsing, defaults, bounds, the header's "options" record, --options-json and
 * --help all walk the same table. Every rank parses the same argv, so every rank agrees. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commscope.h"

enum { T_INT, T_SWITCH, T_NUMBER, T_SIZES, T_NAMES, T_CHOICE, T_TEXT, T_STOP, T_DISTORT };
static const char *type_names[] = {"int",   "switch", "number", "sizes",  "names",
                                   "choice", "text",   "stop",   "distort"};

typedef struct {
    const char *name, *flag;
    int type;
    const char *def_text; /* strings and size lists; NULL: none */
    double def_num, lo, hi;
    int above; /* lo itself is refused */
    const char *choices, *same_as, *record, *benchmarks, *help;
    size_t at, count_at; /* member offsets; count_at only for sizes */
} spec;

/* Only a size list has a count member beside it. */
#define COUNT_SIZES(name) offsetof(cs_options, n##name)
#define COUNT_INT(name) 0
#define COUNT_SWITCH(name) 0
#define COUNT_NUMBER(name) 0
#define COUNT_NAMES(name) 0
#define COUNT_CHOICE(name) 0
#define COUNT_TEXT(name) 0
#define COUNT_STOP(name) 0
#define COUNT_DISTORT(name) 0
#define SPEC(name, flag, type, dtext, dnum, lo, hi, above, choices, same_as, record, bench, help) \
    {#name, flag, T_##type, dtext, dnum, lo, hi, above, choices, same_as, record, bench, help, \
     offsetof(cs_options, name), COUNT_##type(name)},

static const spec specs[] = {CS_OPTIONS(SPEC)};
#define NSPECS (sizeof specs / sizeof specs[0])

#define MEMBER(o, s, type) ((type *)((char *)(o) + (s)->at))
#define CMEMBER(o, s, type) ((const type *)((const char *)(o) + (s)->at))

static const spec *find(const char *flag) {
    for (size_t i = 0; i < NSPECS; i++)
        if (strcmp(specs[i].flag, flag) == 0) return &specs[i];
    return NULL;
}

static const spec *find_name(const char *name) {
    for (size_t i = 0; i < NSPECS; i++)
        if (strcmp(specs[i].name, name) == 0) return &specs[i];
    return NULL;
}

static int parse_sizes(const spec *s, const char *text, cs_options *o, char *err, size_t errlen) {
    int n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    size_t *sizes = malloc(sizeof(size_t) * (size_t)n);
    if (!sizes) {
        snprintf(err, errlen, "out of memory for %s", s->flag);
        return -1;
    }
    int count = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-') {
            snprintf(err, errlen, "%s %s: expected comma-separated byte counts like 0,8,1024",
                     s->flag, text);
            free(sizes);
            return -1;
        }
        if (v > CS_MAX_MESSAGE_BYTES) {
            /* MPI counts are ints: a larger size would wrap inside the operations. */
            snprintf(err, errlen, "%s %s: expected byte counts up to %d (an MPI count is an int)",
                     s->flag, text, CS_MAX_MESSAGE_BYTES);
            free(sizes);
            return -1;
        }
        sizes[count++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    *MEMBER(o, s, size_t *) = sizes;
    *(int *)((char *)o + s->count_at) = count;
    return 0;
}

static int in_bounds(const spec *s, double v) {
    return v <= s->hi && (s->above ? v > s->lo : v >= s->lo);
}

static int parse_number(const spec *s, const char *text, double *out, char *err,
                        size_t errlen) {
    char *end;
    errno = 0;
    double v = s->type == T_NUMBER ? strtod(text, &end) : (double)strtoll(text, &end, 10);
    if (end == text || *end || errno || !isfinite(v) || !in_bounds(s, v)) {
        if (s->type == T_NUMBER)
            snprintf(err, errlen, "%s %s: expected a number %s %g %s %g", s->flag, text,
                     s->above ? "above" : "from", s->lo, s->above ? "and at most" : "to", s->hi);
        else
            snprintf(err, errlen, "%s %s: expected a whole number from %.0f to %.0f", s->flag,
                     text, s->lo, s->hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Each item of a comma list once, and (when the table names them) one of the choices. */
static int names_ok(const spec *s, const char *text) {
    if (!*text) return 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        char item[64];
        if (n == 0 || n >= sizeof item) return 0;
        memcpy(item, p, n);
        item[n] = '\0';
        if (*s->choices && !cs_list_has(s->choices, item)) return 0;
        for (const char *q = text; q < p; q += strcspn(q, ",") + 1)
            if (strcspn(q, ",") == n && strncmp(q, item, n) == 0) return 0;
        p += n;
        if (*p == ',' && *++p == '\0') return 0;
    }
    return 1;
}

static int stop_ok(const char *text) {
    if (strcmp(text, "a") == 0 || strcmp(text, "b") == 0) return 1;
    if (strncmp(text, "rse:", 4) != 0) return 0;
    char *end;
    double x = strtod(text + 4, &end);
    return end != text + 4 && *end == '\0' && x > 0.0 && x < 1.0;
}

static int distort_read(const char *text, cs_options *o) {
    int used = 0;
    if (sscanf(text, "%d:%lf:%lf%n", &o->distort_rank, &o->distort_offset_s, &o->distort_drift,
               &used) != 3 || text[used] != '\0')
        return 0;
    return o->distort_rank >= 0 && fabs(o->distort_offset_s) <= 1 && fabs(o->distort_drift) <= 0.01;
}

static int set_option(const spec *s, const char *val, cs_options *o, char *err, size_t errlen) {
    double v;
    const char *expected = NULL;
    switch (s->type) {
    case T_INT:
    case T_SWITCH:
        if (parse_number(s, val, &v, err, errlen) != 0) return -1;
        *MEMBER(o, s, int) = (int)v;
        return 0;
    case T_NUMBER:
        if (parse_number(s, val, &v, err, errlen) != 0) return -1;
        *MEMBER(o, s, double) = v;
        return 0;
    case T_SIZES:
        return parse_sizes(s, val, o, err, errlen);
    case T_NAMES:
        if (!names_ok(s, val)) expected = *s->choices ? "each item once from" : "a comma list";
        break;
    case T_CHOICE:
        if (strchr(val, ',') || !cs_list_has(s->choices, val)) expected = "one of";
        break;
    case T_STOP:
        if (!stop_ok(val)) expected = "a, b or rse:X with 0 < X < 1";
        break;
    case T_DISTORT:
        if (!distort_read(val, o)) expected = "RANK:OFFSET_S:DRIFT, |offset| <= 1, |drift| <= 0.01";
        break;
    default:
        break;
    }
    if (expected) {
        snprintf(err, errlen, "%s %s: expected %s%s%s", s->flag, val, expected,
                 *s->choices ? " " : "", s->choices);
        return -1;
    }
    *MEMBER(o, s, const char *) = val;
    return 0;
}

int cs_options_parse(int argc, char **argv, cs_options *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->distort_rank = -1;
    int given[NSPECS] = {0};
    for (size_t i = 0; i < NSPECS; i++) {
        const spec *s = &specs[i];
        if (s->type == T_INT || s->type == T_SWITCH) *MEMBER(o, s, int) = (int)s->def_num;
        else if (s->type == T_NUMBER) *MEMBER(o, s, double) = s->def_num;
        else if (s->type != T_SIZES) *MEMBER(o, s, const char *) = s->def_text;
    }
    for (int i = 1; i < argc; i += 2) {
        const spec *s = find(argv[i]);
        if (!s) {
            snprintf(err, errlen, "unknown option %s (see commscope-engine --help)", argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s: missing value (see commscope-engine --help)", argv[i]);
            return -1;
        }
        if (set_option(s, argv[i + 1], o, err, errlen) != 0) return -1;
        given[s - specs] = 1;
    }
    /* Size lists not given: their default, or the list of the row they follow (earlier). */
    for (size_t i = 0; i < NSPECS; i++) {
        const spec *s = &specs[i];
        if (s->type != T_SIZES || given[i]) continue;
        if (s->def_text) {
            if (parse_sizes(s, s->def_text, o, err, errlen) != 0) return -1;
            continue;
        }
        const spec *from = s->same_as ? find_name(s->same_as) : NULL;
        if (!from || from >= s || from->type != T_SIZES) {
            snprintf(err, errlen, "%s: no default (options.json: same_as must name an earlier "
                     "size list)", s->flag);
            return -1;
        }
        *MEMBER(o, s, size_t *) = *MEMBER(o, from, size_t *);
        *(int *)((char *)o + s->count_at) = *(const int *)((const char *)o + from->count_at);
    }
    if (o->max_samples < o->min_samples) {
        snprintf(err, errlen, "--max-samples %d is below --min-samples %d", o->max_samples,
                 o->min_samples);
        return -1;
    }
    return 0;
}

int cs_list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

int cs_options_skipped(const cs_options *o, const char *op, const char *pair, size_t bytes) {
    char key[96];
    int n = snprintf(key, sizeof key, "%s:%s:%zu", op, pair, bytes);
    size_t len = (size_t)n;
    for (const char *p = o->skip; (p = strstr(p, key)) != NULL; p += len)
        if ((p == o->skip || p[-1] == ',') && (p[len] == '\0' || p[len] == ',')) return 1;
    return 0;
}

/* Array elements of a comma list ("" is an empty array). */
static void write_list(cs_json *j, const char *key, const char *list, int as_ints) {
    cs_json_raw_begin(j, key, '[');
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        char item[256];
        snprintf(item, sizeof item, "%.*s", (int)n, p);
        if (as_ints) cs_json_elem_int(j, strtoll(item, NULL, 10));
        else cs_json_elem_str(j, item);
        p += n + (p[n] == ',');
    }
    cs_json_raw_end(j, ']');
}

void cs_options_write(cs_json *j, const cs_options *o) {
    cs_json_raw_begin(j, "options", '{');
    for (size_t i = 0; i < NSPECS; i++) {
        const spec *s = &specs[i];
        switch (s->type) {
        case T_INT:
        case T_SWITCH:
            cs_json_int(j, s->record, *CMEMBER(o, s, int));
            break;
        case T_NUMBER:
            cs_json_num(j, s->record, *CMEMBER(o, s, double));
            break;
        case T_SIZES: {
            const size_t *sizes = *CMEMBER(o, s, size_t *);
            int n = *(const int *)((const char *)o + s->count_at);
            cs_json_raw_begin(j, s->record, '[');
            for (int k = 0; k < n; k++) cs_json_elem_int(j, (long long)sizes[k]);
            cs_json_raw_end(j, ']');
            break;
        }
        case T_DISTORT: /* written only when a clock is distorted */
            if (o->distort_rank < 0) break;
            cs_json_raw_begin(j, s->record, '{');
            cs_json_int(j, "rank", o->distort_rank);
            cs_json_num(j, "offset_s", o->distort_offset_s);
            cs_json_num(j, "drift", o->distort_drift);
            cs_json_raw_end(j, '}');
            break;
        default:
            cs_json_str(j, s->record, *CMEMBER(o, s, const char *));
        }
    }
    cs_json_raw_end(j, '}');
}

/* The compiled table, in the shape of options.json's rows with every field present. */
void cs_options_print_table(FILE *out) {
    cs_json j;
    cs_json_begin(&j, out);
    cs_json_raw_begin(&j, "options", '[');
    for (size_t i = 0; i < NSPECS; i++) {
        const spec *s = &specs[i];
        int numeric = s->type == T_INT || s->type == T_SWITCH || s->type == T_NUMBER;
        cs_json_raw_begin(&j, NULL, '{');
        cs_json_str(&j, "name", s->name);
        cs_json_str(&j, "flag", s->flag);
        cs_json_str(&j, "type", type_names[s->type]);
        if (s->type == T_NUMBER) cs_json_num(&j, "default", s->def_num);
        else if (numeric) cs_json_int(&j, "default", (long long)s->def_num);
        else if (!s->def_text) cs_json_literal(&j, "default", "null");
        else if (s->type == T_SIZES) write_list(&j, "default", s->def_text, 1);
        else cs_json_str(&j, "default", s->def_text);
        if (s->type == T_NUMBER) {
            cs_json_num(&j, "min", s->lo);
            cs_json_num(&j, "max", s->hi);
        } else if (numeric) { /* %.9g would round 2147483647 */
            cs_json_int(&j, "min", (long long)s->lo);
            cs_json_int(&j, "max", (long long)s->hi);
        } else {
            cs_json_literal(&j, "min", "null");
            cs_json_literal(&j, "max", "null");
        }
        cs_json_literal(&j, "above", s->above ? "true" : "false");
        write_list(&j, "choices", s->choices, 0);
        if (s->same_as) cs_json_str(&j, "same_as", s->same_as);
        else cs_json_literal(&j, "same_as", "null");
        write_list(&j, "benchmarks", s->benchmarks, 0);
        cs_json_str(&j, "record", s->record);
        cs_json_str(&j, "help", s->help);
        cs_json_raw_end(&j, '}');
    }
    cs_json_raw_end(&j, ']');
    cs_json_end(&j);
}

void cs_options_usage(FILE *out) {
    for (size_t i = 0; i < NSPECS; i++) {
        const spec *s = &specs[i];
        fprintf(out, "  %s %s\n      %s", s->flag, type_names[s->type], s->help);
        if (*s->choices) fprintf(out, " {%s}", s->choices);
        if (s->type == T_NUMBER)
            fprintf(out, s->above ? " [above %g and at most %g, default %g]"
                                  : " [from %g to %g, default %g]",
                    s->lo, s->hi, s->def_num);
        else if (s->type == T_INT || s->type == T_SWITCH)
            fprintf(out, " [from %.0f to %.0f, default %.0f]", s->lo, s->hi, s->def_num);
        else if (s->def_text && *s->def_text) fprintf(out, " [default %s]", s->def_text);
        fputc('\n', out);
    }
}
