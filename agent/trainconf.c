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

/* The table. Every key but mode is optional. A row's default is the key's
 * default in both modes; a key whose default depends on the mode has
 * BY_MODE_DEF there and its two defaults in BY_MODE below. The walker is
 * env/schema.h's cfg_doc, so bounds, units and the figure guard (every
 * non-zero figure within [1e-12, 1e18]) are the run loader's own. The
 * loader and agent_trainconf_default both start from these defaults, so
 * each is written once. */
typedef struct {
    int mode;
    char problem[CFG_TEXT_MAX], generator[CFG_TEXT_MAX], out[CFG_TEXT_MAX], init_from[CFG_TEXT_MAX],
        node_head_from[CFG_TEXT_MAX], valid_generator[CFG_TEXT_MAX];
    int valid, seed, steps, instances, samples, baseline, adv_norm, reference, placement, reward;
    int embed, hidden, decoder, scorer, threads, log_every, eval_every, eval_samples,
        ckpt_every, polish, freeze_plan, reuse, average_every, average_after, dagger_cuts;
    double seconds, lr, lr_final, weight_decay, grad_clip, entropy, entropy_final,
        baseline_decay, risk, penalty, clip, imitation, node_imitation, dagger, node_dagger,
        draw_budget, dagger_soft, dagger_focus;
} tc_in;

enum {
    K_MODE, K_PROBLEM, K_GENERATOR, K_EVAL, K_VALID, K_SEED, K_STEPS, K_SECONDS, K_INSTANCES,
    K_SAMPLES, K_LR, K_LR_FINAL, K_WD, K_CLIPG, K_ENT, K_ENT_FINAL, K_BASELINE, K_BDECAY,
    K_ADVNORM, K_RISK, K_PENALTY, K_REFERENCE, K_PLACEMENT, K_EMBED, K_HIDDEN, K_DECODER,
    K_SCORER, K_CLIP, K_THREADS, K_LOG, K_EVALEVERY, K_EVALSAMPLES, K_CKPT, K_OUT, K_POLISH,
    K_IMITATION, K_FREEZE, K_REWARD, K_REUSE, K_NODE_IMITATION, K_DAGGER, K_INIT_FROM, K_NODE_DAGGER, K_NODE_HEAD_FROM, K_VALID_GEN, K_AVG_EVERY, K_AVG_AFTER, K_DRAW_BUDGET, K_DAGGER_SOFT, K_DAGGER_FOCUS, K_DAGGER_CUTS, N_K
};

#define BY_MODE_DEF 0 /* the row's default is unused: see BY_MODE */
/* The index of each reference in REFERENCES, and its solve_method. */
enum { REF_EXACT, REF_HOMOGENEOUS, REF_RULE, REF_GREEDY };
static const int REF_METHOD[] = {SOLVE_EXACT, SOLVE_HOMOGENEOUS, SOLVE_RULE, SOLVE_GREEDY};
/* PLACEMENTS lists none, policy, then the placers in order: index i is
 * placer_placement i - 2 (PLACER_PLACE_NONE -2, PLACER_PLACE_POLICY -1,
 * placer_method 0..). */
#define PLACEMENT_NONE 0

/* The table (rows built by env/schema.h's CFG_ROW_*). */
static const cfg_field FIELDS[N_K] = {
    [K_MODE] = CFG_ROW_ENUM("mode", "search|general", 1, 0, tc_in, mode),
    [K_PROBLEM] = CFG_ROW_TEXT("problem", 0, tc_in, problem),
    [K_GENERATOR] = CFG_ROW_TEXT("generator", 0, tc_in, generator),
    [K_EVAL] = CFG_ROW_NODE("eval", CFG_FT_ANY, 0),
    [K_VALID_GEN] = CFG_ROW_TEXT("valid_generator", 0, tc_in, valid_generator),
    [K_VALID] = CFG_ROW_INT("valid", 0, 32, CFG_B_GE, 0, CFG_B_LE, 100000, tc_in, valid),
    [K_SEED] = CFG_ROW_INT("seed", 0, 1, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, seed),
    [K_STEPS] = CFG_ROW_INT("steps", 0, BY_MODE_DEF, CFG_B_GE, 1, CFG_B_NONE, 0, tc_in, steps),
    [K_SECONDS] = CFG_ROW_NUM("seconds", UNITS_SECONDS, 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_NONE, 0,
                              tc_in, seconds),
    [K_INSTANCES] = CFG_ROW_INT("instances", 0, BY_MODE_DEF, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in,
                                instances),
    [K_SAMPLES] = CFG_ROW_INT("samples", 0, BY_MODE_DEF, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in,
                              samples),
    [K_LR] = CFG_ROW_NUM("lr", UNITS_NUMBER, 0, 1e-3, CFG_B_GE, 0, CFG_B_LE, 1, tc_in, lr),
    [K_LR_FINAL] = CFG_ROW_NUM("lr_final", UNITS_NUMBER, 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_LE, 1,
                               tc_in, lr_final),
    [K_WD] = CFG_ROW_NUM("weight_decay", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1, tc_in,
                         weight_decay),
    [K_CLIPG] = CFG_ROW_NUM("grad_clip", UNITS_NUMBER, 0, 1.0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in,
                            grad_clip),
    [K_ENT] = CFG_ROW_NUM("entropy", UNITS_NUMBER, 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_LE, 10, tc_in,
                          entropy),
    [K_ENT_FINAL] = CFG_ROW_NUM("entropy_final", UNITS_NUMBER, 0, BY_MODE_DEF, CFG_B_GE, 0,
                                CFG_B_LE, 10, tc_in, entropy_final),
    /* the choices in agent_baseline's order */
    [K_BASELINE] = CFG_ROW_ENUM("baseline", "shared|moving", 0, AGENT_BASE_SHARED, tc_in, baseline),
    [K_BDECAY] = CFG_ROW_NUM("baseline_decay", UNITS_NUMBER, 0, 0.9, CFG_B_GE, 0, CFG_B_LE,
                             0.999999, tc_in, baseline_decay),
    [K_ADVNORM] = CFG_ROW_BOOL("adv_norm", 0, 0, tc_in, adv_norm),
    [K_RISK] = CFG_ROW_NUM("risk", UNITS_FRACTION, 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_LE, 1, tc_in,
                           risk),
    [K_PENALTY] = CFG_ROW_NUM("penalty", UNITS_NUMBER, 0, 4, CFG_B_GT, 1, CFG_B_LE, 1e6, tc_in,
                              penalty),
    [K_REFERENCE] = CFG_ROW_ENUM("reference", REFERENCES, 0, REF_HOMOGENEOUS, tc_in, reference),
    [K_PLACEMENT] = CFG_ROW_ENUM("placement", PLACEMENTS, 0, PLACEMENT_NONE, tc_in, placement),
    [K_EMBED] = CFG_ROW_INT("embed", 0, AGENT_NET_EMBED, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in, embed),
    [K_HIDDEN] = CFG_ROW_INT("hidden", 0, AGENT_NET_HIDDEN, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in,
                             hidden),
    [K_DECODER] = CFG_ROW_INT("decoder", 0, AGENT_NET_DECODER, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in,
                              decoder),
    [K_SCORER] = CFG_ROW_INT("scorer", 0, AGENT_NET_SCORER, CFG_B_GE, 1, CFG_B_LE, 4096, tc_in,
                             scorer),
    [K_CLIP] = CFG_ROW_NUM("clip", UNITS_NUMBER, 0, AGENT_NET_CLIP, CFG_B_GE, 0.001, CFG_B_LE, 1000,
                           tc_in, clip),
    [K_THREADS] = CFG_ROW_INT("threads", 0, 0, CFG_B_GE, 0, CFG_B_LE, 1024, tc_in, threads),
    [K_LOG] = CFG_ROW_INT("log_every", 0, 1, CFG_B_GE, 1, CFG_B_NONE, 0, tc_in, log_every),
    [K_EVALEVERY] = CFG_ROW_INT("eval_every", 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in,
                                eval_every),
    [K_EVALSAMPLES] = CFG_ROW_INT("eval_samples", 0, 16, CFG_B_GE, 1, CFG_B_LE, 65536, tc_in,
                                  eval_samples),
    [K_CKPT] = CFG_ROW_INT("ckpt_every", 0, BY_MODE_DEF, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in,
                           ckpt_every),
    [K_OUT] = CFG_ROW_TEXT("out", 0, tc_in, out), /* by mode: OUT_BY_MODE */
    [K_POLISH] = CFG_ROW_BOOL("polish", 0, BY_MODE_DEF, tc_in, polish),
    [K_IMITATION] = CFG_ROW_NUM("imitation", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6, tc_in,
                                imitation),
    [K_FREEZE] = CFG_ROW_BOOL("freeze_plan", 0, 0, tc_in, freeze_plan),
    /* the choices in agent_reward's order */
    [K_REWARD] = CFG_ROW_ENUM("reward", "log|ratio|rank", 0, AGENT_REWARD_LOG, tc_in, reward),
    [K_AVG_EVERY] = CFG_ROW_INT("average_every", 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, average_every),
    [K_AVG_AFTER] = CFG_ROW_INT("average_after", 0, 0, CFG_B_GE, 0, CFG_B_NONE, 0, tc_in, average_after),
    [K_REUSE] = CFG_ROW_INT("reuse", 0, 1, CFG_B_GE, 1, CFG_B_LE, 1000, tc_in, reuse),
    [K_DRAW_BUDGET] = CFG_ROW_NUM("draw_budget", UNITS_SECONDS, 0, 5, CFG_B_GE, 0.001, CFG_B_LE, 3600,
                                  tc_in, draw_budget),
    [K_NODE_IMITATION] = CFG_ROW_NUM("node_imitation", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6,
                                     tc_in, node_imitation),
    [K_DAGGER] = CFG_ROW_NUM("dagger", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6, tc_in, dagger),
    [K_INIT_FROM] = CFG_ROW_TEXT("init_from", 0, tc_in, init_from),
    [K_NODE_HEAD_FROM] = CFG_ROW_TEXT("node_head_from", 0, tc_in, node_head_from),
    [K_NODE_DAGGER] = CFG_ROW_NUM("node_dagger", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1e6, tc_in,
                                  node_dagger),
    [K_DAGGER_SOFT] = CFG_ROW_NUM("dagger_soft", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 10, tc_in,
                                  dagger_soft),
    [K_DAGGER_FOCUS] = CFG_ROW_NUM("dagger_focus", UNITS_NUMBER, 0, 0, CFG_B_GE, 0, CFG_B_LE, 1000, tc_in,
                                   dagger_focus),
    [K_DAGGER_CUTS] = CFG_ROW_INT("dagger_cuts", 0, 1, CFG_B_GE, 1, CFG_B_LE, AGENT_DAGGER_CUTS_MAX, tc_in,
                                  dagger_cuts),
};

/* The defaults that depend on the mode: search, general. */
static const struct {
    int key;
    double search, general;
} BY_MODE[] = {
    {K_STEPS, 100000, 20000},
    {K_SECONDS, 60, 0},
    {K_INSTANCES, 1, 32},
    {K_SAMPLES, 128, 8},
    {K_LR_FINAL, 1e-3, 1e-4},
    {K_ENT, 0.02, 0.01},
    {K_ENT_FINAL, 0.02, 0.001},
    {K_RISK, 0.1, 0}, /* search: risk-seeking (the best plan counts) */
    {K_EVALEVERY, 0, 100},
    {K_CKPT, 0, 500},
    {K_POLISH, 1, 0}, /* search: segment moves around the best samples */
};
static const char *const OUT_BY_MODE[] = {[AGENT_MODE_SEARCH] = "runs/search",
                                          [AGENT_MODE_GENERAL] = "runs/general"};

/* by_mode writes the defaults of in->mode (BY_MODE, OUT_BY_MODE) into in
 * for every one of those keys not given: vals[k] NULL, or vals NULL. */
static void by_mode(tc_in *in, yaml_node_t *const *vals) {
    int search = in->mode == AGENT_MODE_SEARCH;
    for (size_t i = 0; i < sizeof BY_MODE / sizeof *BY_MODE; i++) {
        int k = BY_MODE[i].key;
        if (vals && vals[k]) continue;
        cfg_field f = FIELDS[k];
        f.def = search ? BY_MODE[i].search : BY_MODE[i].general;
        cfg_fields_default(&f, 1, in);
    }
    if (!vals || !vals[K_OUT]) snprintf(in->out, sizeof in->out, "%s", OUT_BY_MODE[in->mode]);
}

/* from_in sets every field of tc from in (file names as they are, not
 * resolved), keeping tc->text; path and eval are left empty. */
static void from_in(agent_trainconf *tc, const tc_in *in) {
    char *text = tc->text;
    memset(tc, 0, sizeof *tc);
    tc->text = text;
    tc->mode = in->mode;
    snprintf(tc->problem, sizeof tc->problem, "%s", in->problem);
    snprintf(tc->generator, sizeof tc->generator, "%s", in->generator);
    snprintf(tc->valid_generator, sizeof tc->valid_generator, "%s", in->valid_generator);
    tc->valid = in->valid;
    tc->seed = in->seed;
    tc->steps = in->steps;
    tc->seconds = in->seconds;
    tc->instances = in->instances;
    tc->samples = in->samples;
    tc->lr = in->lr;
    tc->lr_final = in->lr_final;
    tc->weight_decay = in->weight_decay;
    tc->grad_clip = in->grad_clip;
    tc->entropy = in->entropy;
    tc->entropy_final = in->entropy_final;
    tc->baseline = in->baseline;
    tc->baseline_decay = in->baseline_decay;
    tc->adv_norm = in->adv_norm;
    tc->risk = in->risk;
    tc->reward = in->reward;
    tc->penalty = in->penalty;
    tc->freeze_plan = in->freeze_plan;
    tc->imitation = in->imitation;
    tc->node_imitation = in->node_imitation;
    tc->dagger = in->dagger;
    tc->node_dagger = in->node_dagger;
    tc->dagger_soft = in->dagger_soft;
    tc->dagger_focus = in->dagger_focus;
    tc->dagger_cuts = in->dagger_cuts;
    tc->reference = REF_METHOD[in->reference];
    tc->placement = in->placement - 2;
    tc->net.embed = in->embed;
    tc->net.hidden = in->hidden;
    tc->net.decoder = in->decoder;
    tc->net.scorer = in->scorer;
    tc->net.clip = (float)in->clip;
    tc->threads = in->threads;
    tc->log_every = in->log_every;
    tc->eval_every = in->eval_every;
    tc->eval_samples = in->eval_samples;
    tc->ckpt_every = in->ckpt_every;
    snprintf(tc->out, sizeof tc->out, "%s", in->out);
    tc->reuse = in->reuse;
    tc->draw_budget = in->draw_budget;
    tc->polish = in->polish;
    tc->average_every = in->average_every;
    tc->average_after = in->average_after;
}

void agent_trainconf_default(agent_trainconf *tc, int mode) {
    tc_in in;
    memset(&in, 0, sizeof in);
    cfg_fields_default(FIELDS, N_K, &in);
    in.mode = mode;
    by_mode(&in, NULL);
    from_in(tc, &in);
}

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
    by_mode(&in, vals);
    from_in(tc, &in);
    char dir[AGENT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        dir[0] = '\0';
    snprintf(tc->path, sizeof tc->path, "%s", path);
    if ((vals[K_PROBLEM] && resolve(tc->problem, sizeof tc->problem, dir, in.problem)) ||
        (vals[K_GENERATOR] && resolve(tc->generator, sizeof tc->generator, dir, in.generator)) ||
        (vals[K_VALID_GEN] &&
         resolve(tc->valid_generator, sizeof tc->valid_generator, dir, in.valid_generator)) ||
        (vals[K_OUT] && resolve(tc->out, sizeof tc->out, dir, in.out)) ||
        (vals[K_INIT_FROM] && resolve(tc->init_from, sizeof tc->init_from, dir, in.init_from)) ||
        (vals[K_NODE_HEAD_FROM] &&
         resolve(tc->node_head_from, sizeof tc->node_head_from, dir, in.node_head_from))) {
        cfg_doc_fail(d, root, "", err, errlen, "a file name is too long");
        goto fail;
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
    if (tc->node_dagger > 0 && tc->placement != PLACER_PLACE_POLICY) {
        cfg_doc_fail(d, vals[K_NODE_DAGGER], "node_dagger", err, errlen,
                     "corrects the node head: needs placement: policy");
        goto fail;
    }
    if (tc->dagger > 0 && tc->placement == PLACER_PLACE_POLICY) {
        /* the node head's capacity masks can refuse the exact completion,
         * as they refuse the exact plan (docs/agent.md) */
        cfg_doc_fail(d, vals[K_DAGGER], "dagger", err, errlen,
                     "the exact completion can be refused by placement: policy's masks: use another placement");
        goto fail;
    }
    if (tc->dagger_soft > 0 && !(tc->dagger > 0)) {
        cfg_doc_fail(d, vals[K_DAGGER_SOFT], "dagger_soft", err, errlen,
                     "softens the DAgger lesson at the cut: needs dagger > 0");
        goto fail;
    }
    if (tc->dagger_cuts > 1 && !(tc->dagger > 0)) {
        cfg_doc_fail(d, vals[K_DAGGER_CUTS], "dagger_cuts", err, errlen,
                     "cuts the DAgger episodes: needs dagger > 0");
        goto fail;
    }
    if (tc->dagger_focus > 0 && !(tc->dagger_soft > 0)) {
        cfg_doc_fail(d, vals[K_DAGGER_FOCUS], "dagger_focus", err, errlen,
                     "weighs the soft lesson at the cut: needs dagger_soft > 0");
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
