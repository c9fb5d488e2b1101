/* ytab.c -- the agent's declarative YAML walker (see ytab.h). Values are
 * parsed with env/units, so sizes and rates read as everywhere else.
 */
#include "agent/ytab.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

yt_doc *yt_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    yt_doc *d = calloc(1, sizeof *d);
    if (!d) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(d->path, sizeof d->path, "%s", path);
    yaml_parser_t ps;
    yaml_parser_initialize(&ps);
    yaml_parser_set_input_file(&ps, f);
    if (!yaml_parser_load(&ps, &d->doc)) {
        snprintf(err, errlen, "%s:%lu:%lu: %s", path, (unsigned long)ps.problem_mark.line + 1,
                 (unsigned long)ps.problem_mark.column + 1, ps.problem ? ps.problem : "bad YAML");
        yaml_parser_delete(&ps);
        fclose(f);
        free(d);
        return NULL;
    }
    yaml_parser_delete(&ps);
    fclose(f);
    d->root = yaml_document_get_root_node(&d->doc);
    return d;
}

void yt_free(yt_doc *d) {
    if (!d) return;
    yaml_document_delete(&d->doc);
    free(d);
}

int yt_fail(const yt_doc *d, const yaml_node_t *at, const char *path, char *err, size_t errlen,
            const char *fmt, ...) {
    char msg[1024], pos[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(pos, sizeof pos, "%s:%lu:%lu", d->path, (unsigned long)at->start_mark.line + 1,
                 (unsigned long)at->start_mark.column + 1);
    else
        snprintf(pos, sizeof pos, "%s", d->path);
    if (path && *path)
        snprintf(err, errlen, "%s: %s: %s", pos, path, msg);
    else
        snprintf(err, errlen, "%s: %s", pos, msg);
    return -1;
}

int yt_seq_len(const yaml_node_t *n) {
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *yt_seq_at(yt_doc *d, const yaml_node_t *n, int i) {
    return yaml_document_get_node(&d->doc, n->data.sequence.items.start[i]);
}

const char *yt_scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static void describe(const yaml_node_t *n, char *buf, size_t len) {
    if (n->type == YAML_MAPPING_NODE)
        snprintf(buf, len, "a mapping");
    else if (n->type == YAML_SEQUENCE_NODE)
        snprintf(buf, len, "a list");
    else if (n->data.scalar.length == 0)
        snprintf(buf, len, "an empty value");
    else
        snprintf(buf, len, "\"%.40s%s\"", (const char *)n->data.scalar.value,
                 n->data.scalar.length > 40 ? "..." : "");
}

/* edit distance, case-insensitive (short words only) */
static int lev(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 1000;
    int prev[64], row[64];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int c = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + c;
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
        }
        memcpy(prev, row, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

/* number parses scalar v as a value of `units`, checked against [lo, hi]. */
static int number(yt_doc *d, yaml_node_t *v, const char *path, units_kind units, double lo,
                  double hi, double *out, char *err, size_t errlen) {
    char dsc[96], msg[512];
    if (v->type != YAML_SCALAR_NODE) {
        describe(v, dsc, sizeof dsc);
        return yt_fail(d, v, path, err, errlen, "expected %s, got %s", units_expect(units), dsc);
    }
    const char *text = (const char *)v->data.scalar.value;
    if (units_parse(units, text, out, msg, sizeof msg))
        return yt_fail(d, v, path, err, errlen, "%s", msg);
    if (*out < lo || *out > hi)
        return yt_fail(d, v, path, err, errlen, "must be between %g and %g, got \"%s\"", lo, hi, text);
    return 0;
}

static int parse_value(yt_doc *d, const yt_field *f, yaml_node_t *v, const char *path, void *obj,
                       char *err, size_t errlen) {
    char dsc[96];
    char *at = (char *)obj + f->off;
    switch (f->kind) {
    case YT_NODE:
        return 0;
    case YT_NUM:
        return number(d, v, path, f->units, f->lo, f->hi, (double *)at, err, errlen);
    case YT_INT: {
        double x;
        if (number(d, v, path, UNITS_COUNT, f->lo, f->hi, &x, err, errlen)) return -1;
        *(int *)at = (int)x;
        return 0;
    }
    case YT_BOOL: {
        const char *s = yt_scalar(v);
        if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1") || !strcasecmp(s, "on")))
            *(int *)at = 1;
        else if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0") ||
                       !strcasecmp(s, "off")))
            *(int *)at = 0;
        else {
            describe(v, dsc, sizeof dsc);
            return yt_fail(d, v, path, err, errlen, "expected true or false, got %s", dsc);
        }
        return 0;
    }
    case YT_STR: {
        const char *s = yt_scalar(v);
        if (!s || v->data.scalar.length == 0) {
            describe(v, dsc, sizeof dsc);
            return yt_fail(d, v, path, err, errlen, "expected text, got %s", dsc);
        }
        if (strlen(s) >= YT_STR_MAX)
            return yt_fail(d, v, path, err, errlen, "longer than %d characters", YT_STR_MAX - 1);
        memcpy(at, s, strlen(s) + 1);
        return 0;
    }
    case YT_ENUM: {
        const char *s = yt_scalar(v);
        if (s) {
            const char *ch = f->choices;
            for (int i = 0; *ch; i++) {
                size_t l = strcspn(ch, "|");
                if (strlen(s) == l && strncmp(s, ch, l) == 0) {
                    *(int *)at = i;
                    return 0;
                }
                ch += l + (ch[l] == '|');
            }
        }
        describe(v, dsc, sizeof dsc);
        char list[256];
        snprintf(list, sizeof list, "%s", f->choices);
        for (char *c = list; *c; c++)
            if (*c == '|') *c = ',';
        return yt_fail(d, v, path, err, errlen, "unsupported value %s (expected one of: %s)", dsc, list);
    }
    case YT_RANGE: {
        double *r = (double *)at;
        if (v->type == YAML_SCALAR_NODE) {
            if (number(d, v, path, f->units, f->lo, f->hi, &r[0], err, errlen)) return -1;
            r[1] = r[0];
            return 0;
        }
        if (v->type != YAML_SEQUENCE_NODE || yt_seq_len(v) != 2) {
            describe(v, dsc, sizeof dsc);
            return yt_fail(d, v, path, err, errlen, "expected [low, high] or one value, got %s", dsc);
        }
        char p2[1200];
        for (int i = 0; i < 2; i++) {
            snprintf(p2, sizeof p2, "%s[%d]", path, i);
            if (number(d, yt_seq_at(d, v, i), p2, f->units, f->lo, f->hi, &r[i], err, errlen))
                return -1;
        }
        if (r[0] > r[1])
            return yt_fail(d, v, path, err, errlen, "low %g is above high %g", r[0], r[1]);
        return 0;
    }
    }
    return 0;
}

int yt_walk(yt_doc *d, yaml_node_t *map, const char *path, const yt_field *f, int nf, void *obj,
            yaml_node_t **vals, char *err, size_t errlen) {
    char dsc[96], kpath[1100];
    yaml_node_t *keys[128];
    if (nf > 128) return yt_fail(d, map, path, err, errlen, "table too large");
    if (!map || map->type != YAML_MAPPING_NODE) {
        if (!map) return yt_fail(d, NULL, path, err, errlen, "expected a mapping, the file is empty");
        describe(map, dsc, sizeof dsc);
        return yt_fail(d, map, path, err, errlen, "expected a mapping, got %s", dsc);
    }
    for (int i = 0; i < nf; i++) {
        keys[i] = NULL;
        if (vals) vals[i] = NULL;
        if (f[i].required || f[i].kind == YT_NODE || !obj) continue;
        char *at = (char *)obj + f[i].off;
        switch (f[i].kind) {
        case YT_NUM: *(double *)at = f[i].def; break;
        case YT_INT: case YT_BOOL: case YT_ENUM: *(int *)at = (int)f[i].def; break;
        case YT_STR: at[0] = '\0'; break;
        case YT_RANGE: ((double *)at)[0] = f[i].def; ((double *)at)[1] = f[i].def2; break;
        case YT_NODE: break;
        }
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&d->doc, p->value);
        const char *name = yt_scalar(k);
        if (!name) {
            describe(k, dsc, sizeof dsc);
            return yt_fail(d, k, path, err, errlen, "keys must be plain names, got %s", dsc);
        }
        if (path && *path)
            snprintf(kpath, sizeof kpath, "%s.%s", path, name);
        else
            snprintf(kpath, sizeof kpath, "%s", name);
        int idx = -1;
        for (int i = 0; i < nf; i++)
            if (!strcmp(f[i].key, name)) idx = i;
        if (idx < 0) {
            int bd = 1 << 30;
            const char *best = NULL;
            for (int i = 0; i < nf; i++) {
                int dd = lev(name, f[i].key);
                if (dd < bd) {
                    bd = dd;
                    best = f[i].key;
                }
            }
            if (best && bd <= 2 && bd < (int)strlen(name))
                return yt_fail(d, k, kpath, err, errlen, "unknown key (did you mean '%s'?)", best);
            char list[700];
            size_t used = 0;
            list[0] = '\0';
            for (int i = 0; i < nf && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", f[i].key);
            return yt_fail(d, k, kpath, err, errlen, "unknown key (valid keys: %s)", list);
        }
        if (keys[idx])
            return yt_fail(d, k, kpath, err, errlen, "duplicate key (first at line %lu)",
                           (unsigned long)keys[idx]->start_mark.line + 1);
        keys[idx] = k;
        if (vals) vals[idx] = v;
        if (obj && parse_value(d, &f[idx], v, kpath, obj, err, errlen)) return -1;
    }
    for (int i = 0; i < nf; i++)
        if (f[i].required && !keys[i]) {
            if (path && *path)
                snprintf(kpath, sizeof kpath, "%s.%s", path, f[i].key);
            else
                snprintf(kpath, sizeof kpath, "%s", f[i].key);
            return yt_fail(d, map, kpath, err, errlen, "missing required key");
        }
    return 0;
}
