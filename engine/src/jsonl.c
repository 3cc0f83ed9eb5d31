/* Minimal JSON writer for the records rank 0 emits: objects, arrays, strings, numbers. */
#include <math.h>
#include <stdio.h>

#include "commscope.h"

void cs_json_string_value(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void sep(cs_json *j) {
    if (!j->first) fputc(',', j->out);
    j->first = 0;
}

void cs_json_begin(cs_json *j, FILE *out) {
    j->out = out;
    j->first = 1;
    fputc('{', out);
}

void cs_json_end(cs_json *j) {
    fputs("}\n", j->out);
    fflush(j->out);
}

void cs_json_key(cs_json *j, const char *key) {
    sep(j);
    cs_json_string_value(j->out, key);
    fputc(':', j->out);
}

void cs_json_str(cs_json *j, const char *key, const char *value) {
    cs_json_key(j, key);
    cs_json_string_value(j->out, value);
}

void cs_json_int(cs_json *j, const char *key, long long value) {
    cs_json_key(j, key);
    fprintf(j->out, "%lld", value);
}

void cs_json_literal(cs_json *j, const char *key, const char *literal) {
    cs_json_key(j, key);
    fputs(literal, j->out);
}

static void number(FILE *out, double v) {
    if (isfinite(v)) fprintf(out, "%.9g", v);
    else fputs("null", out); /* JSON has no inf/nan */
}

void cs_json_num(cs_json *j, const char *key, double value) {
    cs_json_key(j, key);
    number(j->out, value);
}

void cs_json_raw_begin(cs_json *j, const char *key, char open) {
    if (key) cs_json_key(j, key);
    else sep(j);
    fputc(open, j->out);
    j->first = 1;
}

void cs_json_raw_end(cs_json *j, char close) {
    fputc(close, j->out);
    j->first = 0;
}

void cs_json_elem_int(cs_json *j, long long value) {
    sep(j);
    fprintf(j->out, "%lld", value);
}

void cs_json_elem_num(cs_json *j, double value) {
    sep(j);
    number(j->out, value);
}

void cs_json_elem_str(cs_json *j, const char *value) {
    sep(j);
    cs_json_string_value(j->out, value);
}

void cs_json_pair(cs_json *j, const cs_pair *pair) {
    cs_json_str(j, "pair", pair->label);
    cs_json_raw_begin(j, "ranks", '[');
    cs_json_elem_int(j, pair->a);
    cs_json_elem_int(j, pair->b);
    cs_json_raw_end(j, ']');
}
