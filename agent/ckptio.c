/* ckptio.c -- agent checkpoints over nets/ckpt (see ckptio.h). */
#include "agent/ckptio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/rollout.h"
#include "agent/trainconf.h"
#include "env/gym.h"
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
    int64_t fv = 0;
    if (get_int(in, "agent_features", &fv) || fv != AGENT_FEATURES_VERSION) {
        snprintf(err, errlen,
                 "%s: trained on the agent's look-ahead features version %lld, this build computes version %d; "
                 "retrain the policy",
                 path, (long long)fv, AGENT_FEATURES_VERSION);
        return -1;
    }
    if (in->schema_version != GYM_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "%s: trained on feature schema %d, this build computes schema %d; retrain the policy",
                 path, in->schema_version, GYM_SCHEMA_VERSION);
        return -1;
    }
    double clip = 0;
    if (get_int(in, "embed", &e) || get_int(in, "hidden", &h) || get_int(in, "decoder", &dec) ||
        get_int(in, "scorer", &sc) || get_real(in, "clip", &clip) || e < 1 || h < 1 || dec < 1 ||
        sc < 1 || e > 4096 || h > 4096 || dec > 4096 || sc > 4096 || !(clip > 0)) {
        snprintf(err, errlen, "%s: the network's dimensions (embed, hidden, decoder, scorer, clip) are missing or bad",
                 path);
        return -1;
    }
    d->embed = (int)e;
    d->hidden = (int)h;
    d->decoder = (int)dec;
    d->scorer = (int)sc;
    d->clip = (float)clip;
    memset(st, 0, sizeof *st);
    st->step = in->step;
    get_int(in, "seed", &seed);
    st->seed = (int)seed;
    const char *mode = get_str(in, "mode");
    st->mode = mode && !strcmp(mode, "general") ? AGENT_MODE_GENERAL : AGENT_MODE_SEARCH;
    const char *pl = get_str(in, "placement");
    st->placement = PLACER_PLACE_NONE;
    if (pl) placer_placement_parse(pl, &st->placement); /* unknown: none */
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
    const char *as = get_str(in, "best_assign");
    if (as && *as) {
        int n = 1;
        for (const char *c = as; *c; c++) n += *c == ',';
        st->best_assign = malloc((size_t)n * sizeof(int));
        if (!st->best_assign) goto oom;
        const char *c = as;
        for (int i = 0; i < n; i++) {
            char *end;
            long v = strtol(c, &end, 10);
            if (end == c) {
                snprintf(err, errlen, "%s: best_assign is malformed", path);
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
    return rc;
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
    if (ckpt_load(path, p, NULL, err, errlen) != CKPT_OK) {
        agent_ckpt_state_clear(st);
        return -1;
    }
    return 0;
}
