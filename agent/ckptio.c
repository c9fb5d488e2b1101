/* ckptio.c -- agent checkpoints over nets/ckpt (see ckptio.h). */
#include "agent/ckptio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/rollout.h"
#include "agent/trainconf.h"
#include "env/gym.h"
#include "env/model.h"
#include "nets/ckpt.h"

void agent_ckpt_state_clear(agent_ckpt_state *st) {
    if (!st) return;
    free(st->best_assign);
    free(st->metrics_csv);
    free(st->config_yaml);
    memset(st, 0, sizeof *st);
}

int agent_ckpt_write(const char *path, const nn_params *p, const agent_net_dims *d,
                     const agent_ckpt_state *st, char *err, size_t errlen) {
    char *assign = NULL;
    if (st->best_assign && st->n_best_assign > 0) {
        assign = malloc((size_t)st->n_best_assign * 12 + 1);
        if (!assign) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        size_t k = 0;
        for (int i = 0; i < st->n_best_assign; i++)
            k += (size_t)sprintf(assign + k, "%s%d", i ? "," : "", st->best_assign[i]);
    }
    ckpt_kv kv[24];
    int n = 0;
#define KS(k, v) kv[n++] = (ckpt_kv){k, CKPT_KV_STR, 0, 0, v}
#define KI(k, v) kv[n++] = (ckpt_kv){k, CKPT_KV_INT, (int64_t)(v), 0, NULL}
#define KR(k, v) kv[n++] = (ckpt_kv){k, CKPT_KV_REAL, 0, (double)(v), NULL}
    KS("agent_format", AGENT_CKPT_FORMAT);
    KI("agent_version", AGENT_CKPT_VERSION);
    KI("agent_features", AGENT_FEATURES_VERSION);
    KI("embed", d->embed);
    KI("hidden", d->hidden);
    KI("decoder", d->decoder);
    KI("scorer", d->scorer);
    KR("clip", d->clip);
    KS("mode", st->mode == AGENT_MODE_GENERAL ? "general" : "search");
    KS("placement", placer_placement_name(st->placement));
    KI("seed", st->seed);
    KR("episodes", st->episodes);
    KR("time_s", st->time_s);
    KR("base_type", st->base_type);
    KR("base_node", st->base_node);
    KI("base_init", st->base_init);
    KR("best_valid", st->best_valid);
    KR("best_cost", st->best_cost);
    KR("best_valid_node", st->best_valid_node);
    KI("average_n", st->average_n);
    if (assign) KS("best_assign", assign);
    if (st->metrics_csv) KS("metrics_csv", st->metrics_csv);
#undef KS
#undef KI
#undef KR
    ckpt_meta meta = {st->step, {(uint64_t)st->seed, 0, (uint64_t)st->step}, GYM_SCHEMA_VERSION,
                      st->config_yaml, kv, n};
    int rc = ckpt_save(path, p, &meta, err, errlen);
    free(assign);
    return rc == CKPT_OK ? 0 : -1;
}

static int get_int(const ckpt_info *in, const char *key, int64_t *out) {
    const ckpt_kv *kv = ckpt_info_hparam(in, key);
    if (!kv || kv->type != CKPT_KV_INT) return -1;
    *out = kv->i;
    return 0;
}

static int get_real(const ckpt_info *in, const char *key, double *out) {
    const ckpt_kv *kv = ckpt_info_hparam(in, key);
    if (!kv) return -1;
    if (kv->type == CKPT_KV_REAL)
        *out = kv->r;
    else if (kv->type == CKPT_KV_INT)
        *out = (double)kv->i;
    else
        return -1;
    return 0;
}

static const char *get_str(const ckpt_info *in, const char *key) {
    const ckpt_kv *kv = ckpt_info_hparam(in, key);
    return kv && kv->type == CKPT_KV_STR ? kv->s : NULL;
}

static char *dup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Every number a policy checkpoint carries, with the range a load
 * accepts (docs/reliability.md prints this table). The network's sizes
 * and clip take the train config's bounds (agent/trainconf.c); a value
 * outside is refused naming the field, since an absurd one that is still
 * finite (a clip of 1e300) turns logits into infinities. */
typedef struct {
    const char *key;
    int is_int;    /* 1: must be an integer attribute */
    int required;  /* 1: a file without it is refused */
    double lo, hi; /* accepted range, inclusive */
    int inf_ok;    /* 1: +infinity also accepted ("none yet") */
} hp_range;

static const hp_range HP_RANGES[] = {
    {"embed", 1, 1, 1, 4096, 0},
    {"hidden", 1, 1, 1, 4096, 0},
    {"decoder", 1, 1, 1, 4096, 0},
    {"scorer", 1, 1, 1, 4096, 0},
    {"clip", 0, 1, 0.001, 1000, 0},
    {"seed", 1, 0, 0, 2147483647.0, 0},
    {"episodes", 0, 0, 0, 1e18, 0},
    {"time_s", 0, 0, 0, 1e12, 0},
    {"base_type", 0, 0, -1e6, 1e6, 0},
    {"base_node", 0, 0, -1e6, 1e6, 0},
    {"base_init", 1, 0, 0, 1, 0},
    {"best_valid", 0, 0, -1, 1e18, 1},
    {"best_cost", 0, 0, 0, 1e30, 1},
    {"best_valid_node", 0, 0, 0, 1, 1},
    {"average_n", 1, 0, 0, 1e15, 0},
};
#define HP_N ((int)(sizeof HP_RANGES / sizeof *HP_RANGES))
#define STEP_MAX 1e15 /* /meta step */

/* check_ranges: 0 when every hyperparameter of HP_RANGES present in `in`
 * has its type and lies in its range (and the required ones are there),
 * and the step is in [0, STEP_MAX]; else -1 with a message naming the
 * first field that is not. */
static int check_ranges(const char *path, const ckpt_info *in, char *err, size_t errlen) {
    for (int i = 0; i < HP_N; i++) {
        const hp_range *r = &HP_RANGES[i];
        const ckpt_kv *kv = ckpt_info_hparam(in, r->key);
        if (!kv) {
            if (!r->required) continue;
            snprintf(err, errlen, "%s: hyperparameter %s is missing from /meta/hparams; not a complete policy checkpoint",
                     path, r->key);
            return -1;
        }
        double v = kv->type == CKPT_KV_INT ? (double)kv->i : kv->type == CKPT_KV_REAL ? kv->r : NAN;
        if (kv->type == CKPT_KV_STR || (r->is_int && kv->type != CKPT_KV_INT)) {
            snprintf(err, errlen, "%s: hyperparameter %s in /meta/hparams is a %s, expected %s", path, r->key,
                     kv->type == CKPT_KV_STR ? "string" : "real", r->is_int ? "an integer" : "a number");
            return -1;
        }
        if (!(v >= r->lo && v <= r->hi) && !(r->inf_ok && v == INFINITY)) {
            snprintf(err, errlen,
                     "%s: hyperparameter %s = %.17g in /meta/hparams is outside [%g, %g]%s; the file is damaged or "
                     "edited: use another checkpoint",
                     path, r->key, v, r->lo, r->hi, r->inf_ok ? " (or inf)" : "");
            return -1;
        }
    }
    if (!(in->step >= 0 && (double)in->step <= STEP_MAX)) {
        snprintf(err, errlen, "%s: /meta step = %lld is outside [0, %g]; the file is damaged: use another checkpoint",
                 path, (long long)in->step, STEP_MAX);
        return -1;
    }
    return 0;
}

/* decode fills d and st from info; returns 0 or -1 with a message. */
static int decode(const char *path, const ckpt_info *in, agent_net_dims *d, agent_ckpt_state *st,
                  char *err, size_t errlen) {
    const char *fmt = get_str(in, "agent_format");
    int64_t ver = 0, e = 0, h = 0, dec = 0, sc = 0, seed = 0, bi = 0;
    if (!fmt || strcmp(fmt, AGENT_CKPT_FORMAT)) {
        snprintf(err, errlen, "%s: not a strata policy checkpoint (no agent_format '%s' in /meta/hparams)", path,
                 AGENT_CKPT_FORMAT);
        return -1;
    }
    if (get_int(in, "agent_version", &ver) || ver != AGENT_CKPT_VERSION) {
        snprintf(err, errlen, "%s: policy format version %lld, this build reads version %d", path,
                 (long long)ver, AGENT_CKPT_VERSION);
        return -1;
    }
    /* look-ahead features version 2 is version 9 without the last five
     * type features (the completions by stages), versions 3 and 4 without
     * the last two (the completions that fit the counts): read, then grown
     * with zero weights on them (agent_ckpt_read), each plays the same
     * policy. Version 3's completions by stages were blind to the unit
     * counts: read, it meets the counted figures (a policy trained on
     * version 3 plans better on them, docs/agent-runs.md). Versions 5 to
     * 8 have version 9's rows; their shadow prices were sought less
     * widely (7 holds no type's units, 8 one at a time), so that on more
     * jobs no completion fit the counts (rollout.c, la_dp_fill): a policy decodes
     * on its own version's search (agent_rollout_set_features, from
     * st->features) */
    int64_t fv = 0;
    if (get_int(in, "agent_features", &fv) || fv < 2 || fv > AGENT_FEATURES_VERSION) {
        snprintf(err, errlen,
                 "%s: trained on the agent's look-ahead features version %lld, this build computes version %d; "
                 "retrain the policy",
                 path, (long long)fv, AGENT_FEATURES_VERSION);
        return -1;
    }
    /* schema 1 is schema 2 without the last two node features (the zones
     * of the stages around the task's): read, then grown with zero weights
     * on them (agent_ckpt_read), it plays the same policy */
    if (in->schema_version != GYM_SCHEMA_VERSION && in->schema_version != 1) {
        snprintf(err, errlen,
                 "%s: trained on feature schema %d, this build computes schema %d; retrain the policy",
                 path, in->schema_version, GYM_SCHEMA_VERSION);
        return -1;
    }
    if (check_ranges(path, in, err, errlen)) return -1;
    const char *mode = get_str(in, "mode"), *pl = get_str(in, "placement");
    if (mode && strcmp(mode, "general") && strcmp(mode, "search")) {
        snprintf(err, errlen, "%s: hyperparameter mode = '%.40s' in /meta/hparams is neither search nor general",
                 path, mode);
        return -1;
    }
    int pl_parsed;
    if (pl && placer_placement_parse(pl, &pl_parsed) < 0) {
        snprintf(err, errlen, "%s: hyperparameter placement = '%.40s' in /meta/hparams is not a placement method",
                 path, pl);
        return -1;
    }
    double clip = 0;
    get_int(in, "embed", &e);
    get_int(in, "hidden", &h);
    get_int(in, "decoder", &dec);
    get_int(in, "scorer", &sc);
    get_real(in, "clip", &clip);
    d->embed = (int)e;
    d->hidden = (int)h;
    d->decoder = (int)dec;
    d->scorer = (int)sc;
    d->clip = (float)clip;
    memset(st, 0, sizeof *st);
    st->node_feats = in->schema_version == 1 ? AGENT_FN_SCHEMA1 : AGENT_FN;
    st->type_feats = fv == 2 ? AGENT_FT_V2 : fv <= 4 ? AGENT_FT_V4 : AGENT_FT;
    st->features = (int)fv;
    st->step = in->step;
    get_int(in, "seed", &seed);
    st->seed = (int)seed;
    st->mode = mode && !strcmp(mode, "general") ? AGENT_MODE_GENERAL : AGENT_MODE_SEARCH;
    st->placement = PLACER_PLACE_NONE;
    if (pl) placer_placement_parse(pl, &st->placement); /* checked above */
    get_real(in, "episodes", &st->episodes);
    get_real(in, "time_s", &st->time_s);
    get_real(in, "base_type", &st->base_type);
    get_real(in, "base_node", &st->base_node);
    get_int(in, "base_init", &bi);
    st->base_init = (int)bi;
    st->best_valid = INFINITY;
    st->best_cost = INFINITY;
    get_real(in, "best_valid", &st->best_valid);
    get_real(in, "best_cost", &st->best_cost);
    st->best_valid_node = INFINITY;
    get_real(in, "best_valid_node", &st->best_valid_node);
    get_int(in, "average_n", &st->average_n);
    const char *as = get_str(in, "best_assign");
    if (as && *as) {
        int n = 1;
        for (const char *c = as; *c; c++) n += *c == ',';
        if (n > MODEL_MAX_LAYERS) {
            snprintf(err, errlen, "%s: hyperparameter best_assign has %d layers, more than %d", path, n,
                     MODEL_MAX_LAYERS);
            return -1;
        }
        st->best_assign = malloc((size_t)n * sizeof(int));
        if (!st->best_assign) goto oom;
        const char *c = as;
        for (int i = 0; i < n; i++) {
            char *end;
            long v = strtol(c, &end, 10);
            if (end == c || v < 0 || v >= MODEL_MAX_TYPES || (*end && *end != ',')) {
                snprintf(err, errlen,
                         "%s: hyperparameter best_assign is malformed at layer %d (a type index in [0, %d] "
                         "expected)",
                         path, i, MODEL_MAX_TYPES - 1);
                agent_ckpt_state_clear(st);
                return -1;
            }
            st->best_assign[i] = (int)v;
            c = *end == ',' ? end + 1 : end;
        }
        st->n_best_assign = n;
    }
    st->metrics_csv = dup(get_str(in, "metrics_csv"));
    st->config_yaml = dup(in->config_yaml);
    if ((get_str(in, "metrics_csv") && !st->metrics_csv) || !st->config_yaml) goto oom;
    return 0;
oom:
    agent_ckpt_state_clear(st);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

int agent_ckpt_peek(const char *path, agent_net_dims *d, agent_ckpt_state *st, char *err,
                    size_t errlen) {
    ckpt_info in;
    memset(&in, 0, sizeof in);
    if (ckpt_load(path, NULL, &in, err, errlen) != CKPT_OK) return -1;
    int rc = decode(path, &in, d, st, err, errlen);
    ckpt_info_free(&in);
    if (rc) return rc;
    /* the network these sizes describe must be in the file, every byte of
     * it, before any caller allocates it */
    nn_tensor_spec table[AN_N_TENSORS];
    agent_net_table_feats(d, st->type_feats, st->node_feats, table);
    if (ckpt_check_sizes(path, table, AN_N_TENSORS, err, errlen) != CKPT_OK) {
        agent_ckpt_state_clear(st);
        return -1;
    }
    return 0;
}

int agent_ckpt_read(const char *path, nn_params *p, const agent_net_dims *d, agent_ckpt_state *st,
                    char *err, size_t errlen) {
    agent_net_dims fd;
    if (agent_ckpt_peek(path, &fd, st, err, errlen)) return -1;
    if (fd.embed != d->embed || fd.hidden != d->hidden || fd.decoder != d->decoder ||
        fd.scorer != d->scorer || fd.clip != d->clip) {
        snprintf(err, errlen,
                 "%s: the checkpoint's network is embed %d, hidden %d, decoder %d, scorer %d, clip %g; "
                 "the config asks for %d, %d, %d, %d, %g",
                 path, fd.embed, fd.hidden, fd.decoder, fd.scorer, fd.clip, d->embed, d->hidden,
                 d->decoder, d->scorer, d->clip);
        agent_ckpt_state_clear(st);
        return -1;
    }
    if (st->node_feats == AGENT_FN && st->type_feats == AGENT_FT) {
        if (ckpt_load(path, p, NULL, err, errlen) != CKPT_OK) {
            agent_ckpt_state_clear(st);
            return -1;
        }
        return 0;
    }
    /* an older schema: its tensors, then grown into p */
    nn_tensor_spec t[AN_N_TENSORS];
    agent_net_table_feats(d, st->type_feats, st->node_feats, t);
    nn_params *old = nn_params_create(t, AN_N_TENSORS, err, errlen);
    char e[512];
    int rc = !old || ckpt_load(path, old, NULL, err, errlen) != CKPT_OK ? -1 : 0;
    if (!rc && agent_net_grow(p, d, old, d, e, sizeof e)) {
        snprintf(err, errlen, "%s: %s", path, e);
        rc = -1;
    }
    nn_params_free(old);
    if (rc) agent_ckpt_state_clear(st);
    return rc;
}
