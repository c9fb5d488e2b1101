/* trainconf.c -- loading train configs (see trainconf.h) through one table
 * walked by env/config.h's cfg_doc. */
#include "agent/trainconf.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "agent/rollout.h"
#include "base/file.h"
#include "env/schema.h"
#include "solvers/placers.h"
#include "solvers/solve.h"

#define PLACEMENTS "none|policy|spread|pack|aggregate|zone|best"
#define REFERENCES "exact|homogeneous|rule|greedy"

void agent_trainconf_default(agent_trainconf *tc, int mode) {
    char *text = tc->text;
    memset(tc, 0, sizeof *tc);
    tc->text = text;
    tc->mode = mode;
    tc->valid = 32;
    tc->seed = 1;
    tc->steps = mode == AGENT_MODE_SEARCH ? 100000 : 20000;
    tc->seconds = mode == AGENT_MODE_SEARCH ? 60 : 0;
    tc->instances = mode == AGENT_MODE_SEARCH ? 1 : 32;
    tc->samples = mode == AGENT_MODE_SEARCH ? 128 : 8;
    tc->lr = 1e-3;
    tc->lr_final = mode == AGENT_MODE_SEARCH ? 1e-3 : 1e-4;
    tc->weight_decay = 0;
    tc->grad_clip = 1.0;
    tc->entropy = mode == AGENT_MODE_SEARCH ? 0.02 : 0.01;
    tc->entropy_final = mode == AGENT_MODE_SEARCH ? 0.02 : 0.001;
    tc->baseline = AGENT_BASE_SHARED;
    tc->baseline_decay = 0.9;
    tc->adv_norm = 0;
    tc->risk = mode == AGENT_MODE_SEARCH ? 0.1 : 0; /* search: risk-seeking (the best plan counts) */
    tc->reward = AGENT_REWARD_LOG;
    tc->penalty = 4;
    tc->reference = SOLVE_HOMOGENEOUS;
    tc->placement = PLACER_PLACE_NONE;
    agent_net_dims_default(&tc->net);
    tc->threads = 0;
    tc->log_every = 1;
    tc->eval_every = mode == AGENT_MODE_SEARCH ? 0 : 100;
    tc->eval_samples = 16;
    tc->ckpt_every = mode == AGENT_MODE_SEARCH ? 0 : 500;
    snprintf(tc->out, sizeof tc->out, "%s", mode == AGENT_MODE_SEARCH ? "runs/search" : "runs/general");
    tc->reuse = 1;
    tc->polish = mode == AGENT_MODE_SEARCH; /* segment moves around the best samples */
}

/* The table. Every key but mode is optional: the defaults are the mode's
 * (agent_trainconf_default), so only the keys present are taken from the
 * walk's struct. The walker is env/config.h's cfg_doc, so bounds, units and
 * the figure guard (every non-zero figure within [1e-12, 1e18]) are the
 * run loader's own. */
typedef struct {
    int mode;
    char problem[CFG_TEXT_MAX], generator[CFG_TEXT_MAX], out[CFG_TEXT_MAX];
    int valid, seed, steps, instances, samples, baseline, adv_norm, reference, placement, reward;
    int embed, hidden, decoder, scorer, threads, log_every, eval_every, eval_samples,
        ckpt_every, polish, freeze_plan, reuse;
    double seconds, lr, lr_final, weight_decay, grad_clip, entropy, entropy_final,
        baseline_decay, risk, penalty, clip, imitation, node_imitation;
} tc_in;

enum {
    K_MODE, K_PROBLEM, K_GENERATOR, K_EVAL, K_VALID, K_SEED, K_STEPS, K_SECONDS, K_INSTANCES,
    K_SAMPLES, K_LR, K_LR_FINAL, K_WD, K_CLIPG, K_ENT, K_ENT_FINAL, K_BASELINE, K_BDECAY,
    K_ADVNORM, K_RISK, K_PENALTY, K_REFERENCE, K_PLACEMENT, K_EMBED, K_HIDDEN, K_DECODER,
    K_SCORER, K_CLIP, K_THREADS, K_LOG, K_EVALEVERY, K_EVALSAMPLES, K_CKPT, K_OUT, K_POLISH,
    K_IMITATION, K_FREEZE, K_REWARD, K_REUSE, K_NODE_IMITATION, N_K
};

/* The table (rows built by env/config.h's CFG_ROW_*; defaults are not
 * used, see above). */
static const cfg_field FIELDS[N_K] = {
    [K_MODE] = CFG_ROW_ENUM("mode", "search|general", 1, 0, tc_in, mode),
    [K_PROBLEM] = CFG_ROW_TEXT("problem", 0, tc_in, problem),
    [K_GENERATOR] = CFG_ROW_TEXT("generator", 0, tc_in, generator),
    [K_EVAL] = CFG_ROW_NODE("eval", CFG_FT_ANY, 0),
    [K_VALID] = CFG_ROW_INT("valid", 0, 0, CFG_B_GE, 0, CFG_B_LE, 100000, tc_in, valid),
    [K_SEED] = CFG_ROW_INT("seed", 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, seed),
    [K_STEPS] = CFG_ROW_INT("steps", 0, 0, CFG_B_GE, 1, CFG_B_NONE, 0, tc_in, steps),
    [K_SECONDS] = CFG_ROW_NUM("seconds", UNITS_SECONDS, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in,
                              seconds),
    [K_INSTANCES] = CFG_ROW_INT("instances", 0, 0, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in, instances),
    [K_SAMPLES] = CFG_ROW_INT("samples", 0, 0, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in, samples),
    [K_LR] = CFG_ROW_NUM("lr", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, tc_in, lr),
    [K_LR_FINAL] = CFG_ROW_NUM("lr_final", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, tc_in,
                               lr_final),
    [K_WD] = CFG_ROW_NUM("weight_decay", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, tc_in,
                         weight_decay),
    [K_CLIPG] = CFG_ROW_NUM("grad_clip", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in,
                            grad_clip),
    [K_ENT] = CFG_ROW_NUM("entropy", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 10, tc_in, entropy),
    [K_ENT_FINAL] = CFG_ROW_NUM("entropy_final", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 10,
                                tc_in, entropy_final),
    [K_BASELINE] = CFG_ROW_ENUM("baseline", "shared|moving", 0, 0, tc_in, baseline),
    [K_BDECAY] = CFG_ROW_NUM("baseline_decay", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 0.999999,
                             tc_in, baseline_decay),
    [K_ADVNORM] = CFG_ROW_BOOL("adv_norm", 0, 0, tc_in, adv_norm),
    [K_RISK] = CFG_ROW_NUM("risk", UNITS_FRACTION, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, tc_in, risk),
    [K_PENALTY] = CFG_ROW_NUM("penalty", UNITS_NUMBER, 0, 0, CFG_B_GT, 1, CFG_B_LE, 1e6, tc_in,
                              penalty),
    [K_REFERENCE] = CFG_ROW_ENUM("reference", REFERENCES, 0, 0, tc_in, reference),
    [K_PLACEMENT] = CFG_ROW_ENUM("placement", PLACEMENTS, 0, 0, tc_in, placement),
    [K_EMBED] = CFG_ROW_INT("embed", 0, 0, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in, embed),
    [K_HIDDEN] = CFG_ROW_INT("hidden", 0, 0, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in, hidden),
    [K_DECODER] = CFG_ROW_INT("decoder", 0, 0, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in, decoder),
    [K_SCORER] = CFG_ROW_INT("scorer", 0, 0, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in, scorer),
    [K_CLIP] = CFG_ROW_NUM("clip", UNITS_NUMBER, 0, 0, CFG_B_GE, 0.001, CFG_B_LE, 1000, tc_in,
                           clip),
    [K_THREADS] = CFG_ROW_INT("threads", 0, 0, CFG_B_GE, 0, CFG_B_LE, 1024, tc_in, threads),
    [K_LOG] = CFG_ROW_INT("log_every", 0, 0, CFG_B_GE, 1, CFG_B_NONE, 0, tc_in, log_every),
    [K_EVALEVERY] = CFG_ROW_INT("eval_every", 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, eval_every),
    [K_EVALSAMPLES] = CFG_ROW_INT("eval_samples", 0, 0, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in,
                                  eval_samples),
    [K_CKPT] = CFG_ROW_INT("ckpt_every", 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, ckpt_every),
    [K_OUT] = CFG_ROW_TEXT("out", 0, tc_in, out),
    [K_POLISH] = CFG_ROW_BOOL("polish", 0, 0, tc_in, polish),
    [K_IMITATION] = CFG_ROW_NUM("imitation", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6, tc_in,
                                imitation),
    [K_FREEZE] = CFG_ROW_BOOL("freeze_plan", 0, 0, tc_in, freeze_plan),
    [K_REWARD] = CFG_ROW_ENUM("reward", "log|ratio|rank", 0, 0, tc_in, reward),
    [K_REUSE] = CFG_ROW_INT("reuse", 0, 0, CFG_B_GE, 1, CFG_B_LE, 1000, tc_in, reuse),
    [K_NODE_IMITATION] = CFG_ROW_NUM("node_imitation", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6,
                                     tc_in, node_imitation),
};

/* resolve writes dir/name into out unless name is absolute; returns 0, or
 * -1 when it does not fit. */
static int resolve(char *out, size_t len, const char *dir, const char *name) {
    int n;
    if (name[0] == '/' || !dir[0])
        n = snprintf(out, len, "%s", name);
    else
        n = snprintf(out, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

agent_trainconf *agent_trainconf_load(const char *path, char *err, size_t errlen) {
    cfg_doc *d = cfg_doc_load(path, err, errlen);
    if (!d) return NULL;
    agent_trainconf *tc = calloc(1, sizeof *tc);
    tc_in in;
    yaml_node_t *keys[N_K], *vals[N_K];
    yaml_node_t *root = cfg_doc_root(d);
    if (!tc) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    if (!root) {
        cfg_doc_fail(d, NULL, "", err, errlen, "expected a mapping, the file is empty");
        goto fail;
    }
    memset(&in, 0, sizeof in);
    if (cfg_doc_walk(d, root, "", "a mapping", FIELDS, N_K, &in, keys, vals, err, errlen))
        goto fail;
    int mode = in.mode;
    agent_trainconf_default(tc, mode);
    char dir[AGENT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
    snprintf(tc->path, sizeof tc->path, "%s", path);
#define TAKE(k, field, src) if (vals[k]) tc->field = in.src
    if ((vals[K_PROBLEM] && resolve(tc->problem, sizeof tc->problem, dir, in.problem)) ||
        (vals[K_GENERATOR] && resolve(tc->generator, sizeof tc->generator, dir, in.generator)) ||
        (vals[K_OUT] && resolve(tc->out, sizeof tc->out, dir, in.out))) {
        cfg_doc_fail(d, root, "", err, errlen, "a file name is too long");
        goto fail;
    }
    TAKE(K_VALID, valid, valid);
    TAKE(K_SEED, seed, seed);
    TAKE(K_STEPS, steps, steps);
    TAKE(K_SECONDS, seconds, seconds);
    TAKE(K_INSTANCES, instances, instances);
    TAKE(K_SAMPLES, samples, samples);
    TAKE(K_LR, lr, lr);
    TAKE(K_LR_FINAL, lr_final, lr_final);
    TAKE(K_WD, weight_decay, weight_decay);
    TAKE(K_CLIPG, grad_clip, grad_clip);
    TAKE(K_ENT, entropy, entropy);
    TAKE(K_ENT_FINAL, entropy_final, entropy_final);
    TAKE(K_BASELINE, baseline, baseline);
    TAKE(K_BDECAY, baseline_decay, baseline_decay);
    TAKE(K_ADVNORM, adv_norm, adv_norm);
    TAKE(K_RISK, risk, risk);
    TAKE(K_PENALTY, penalty, penalty);
    TAKE(K_REWARD, reward, reward); /* the enum's order is agent_reward's */
    TAKE(K_REFERENCE, reference, reference);
    TAKE(K_PLACEMENT, placement, placement);
    TAKE(K_EMBED, net.embed, embed);
    TAKE(K_HIDDEN, net.hidden, hidden);
    TAKE(K_DECODER, net.decoder, decoder);
    TAKE(K_SCORER, net.scorer, scorer);
    if (vals[K_CLIP]) tc->net.clip = (float)in.clip;
    TAKE(K_THREADS, threads, threads);
    TAKE(K_LOG, log_every, log_every);
    TAKE(K_EVALEVERY, eval_every, eval_every);
    TAKE(K_EVALSAMPLES, eval_samples, eval_samples);
    TAKE(K_CKPT, ckpt_every, ckpt_every);
    TAKE(K_POLISH, polish, polish);
    TAKE(K_IMITATION, imitation, imitation);
    TAKE(K_FREEZE, freeze_plan, freeze_plan);
    TAKE(K_REUSE, reuse, reuse);
    TAKE(K_NODE_IMITATION, node_imitation, node_imitation);
#undef TAKE
    /* the placement enum lists none, policy, then the placers in order:
     * PLACER_PLACE_NONE (-2), PLACER_PLACE_POLICY (-1), placer_method 0.. */
    if (vals[K_PLACEMENT]) tc->placement = in.placement - 2;
    if (vals[K_REFERENCE]) {
        static const int map[] = {SOLVE_EXACT, SOLVE_HOMOGENEOUS, SOLVE_RULE, SOLVE_GREEDY};
        tc->reference = map[in.reference];
    }
    if (vals[K_EVAL]) {
        yaml_node_t *ev = vals[K_EVAL];
        if (ev->type != YAML_SEQUENCE_NODE) {
            cfg_doc_fail(d, ev, "eval", err, errlen, "expected a list of config files");
            goto fail;
        }
        int n = (int)(ev->data.sequence.items.top - ev->data.sequence.items.start);
        if (n > AGENT_MAX_EVAL) {
            cfg_doc_fail(d, ev, "eval", err, errlen, "at most %d files", AGENT_MAX_EVAL);
            goto fail;
        }
        for (int i = 0; i < n; i++) {
            yaml_node_t *it = cfg_doc_node(d, ev->data.sequence.items.start[i]);
            const char *s = it->type == YAML_SCALAR_NODE ? (const char *)it->data.scalar.value : NULL;
            if (!s || !*s) {
                char p[32];
                snprintf(p, sizeof p, "eval[%d]", i);
                cfg_doc_fail(d, it, p, err, errlen, "expected a file name");
                goto fail;
            }
            if (resolve(tc->eval[i], sizeof tc->eval[i], dir, s)) {
                cfg_doc_fail(d, it, "eval", err, errlen, "file name too long");
                goto fail;
            }
        }
        tc->n_eval = n;
    }
    /* rules across keys */
    if (mode == AGENT_MODE_SEARCH && !tc->problem[0]) {
        cfg_doc_fail(d, root, "problem", err, errlen, "search mode needs the config file to solve");
        goto fail;
    }
    if (mode == AGENT_MODE_GENERAL && !tc->generator[0]) {
        cfg_doc_fail(d, root, "generator", err, errlen, "general mode needs a generator spec");
        goto fail;
    }
    if (tc->freeze_plan && tc->placement != PLACER_PLACE_POLICY) {
        cfg_doc_fail(d, vals[K_FREEZE], "freeze_plan", err, errlen,
                     "only the node head would learn: needs placement: policy");
        goto fail;
    }
    if (tc->node_imitation > 0 && tc->placement != PLACER_PLACE_POLICY) {
        cfg_doc_fail(d, vals[K_NODE_IMITATION], "node_imitation", err, errlen,
                     "demonstrates the node head: needs placement: policy");
        goto fail;
    }
    if (mode == AGENT_MODE_SEARCH && tc->instances != 1) {
        cfg_doc_fail(d, vals[K_INSTANCES], "instances", err, errlen,
                     "search mode trains on one instance");
        goto fail;
    }
    if (tc->baseline == AGENT_BASE_SHARED && tc->samples < 2) {
        cfg_doc_fail(d, vals[K_SAMPLES] ? vals[K_SAMPLES] : root, "samples", err, errlen,
                     "the shared baseline needs at least 2 samples per instance");
        goto fail;
    }
    char why[256];
    size_t tlen;
    if (file_read(path, FILE_MAX_CONFIG, &tc->text, &tlen, NULL, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto fail;
    }
    cfg_doc_free(d);
    return tc;
fail:
    cfg_doc_free(d);
    agent_trainconf_free(tc);
    return NULL;
}

agent_trainconf *agent_trainconf_search(const char *problem, char *err, size_t errlen) {
    agent_trainconf *tc = calloc(1, sizeof *tc);
    if (!tc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    agent_trainconf_default(tc, AGENT_MODE_SEARCH);
    snprintf(tc->problem, sizeof tc->problem, "%s", problem);
    size_t n = strlen(problem) + 64;
    tc->text = malloc(n);
    if (!tc->text) {
        free(tc);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(tc->text, n, "mode: search\nproblem: %s\n", problem);
    return tc;
}

void agent_trainconf_free(agent_trainconf *tc) {
    if (!tc) return;
    free(tc->text);
    free(tc);
}
