/* agent_peer_env.c -- the environment side of bench/agent_peer.py, built as
 * the shared library libstrata_peer.so for ctypes.
 *
 * The PyTorch peer of search mode plays the same episodes on the same
 * environment as `strata train --search`: strata's rollout (agent/rollout.h:
 * gym features, look-ahead features, masks, the counter-RNG sampling, the
 * rewards) with the network's TYPE head replaced by a Python callback
 * (agent_rollout_set_policy). Only the network, the advantages and the
 * optimiser differ, so the comparison measures the learner. The reference
 * and exact costs are found as the trainer finds them (reference:
 * homogeneous, falling back to greedy, then exact).
 *
 * Every function returns 0 on success, or -1 with a message in err.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/adv.h"
#include "agent/net.h"
#include "agent/pool.h"
#include "agent/rollout.h"
#include "agent/trainconf.h"
#include "env/config.h"
#include "solvers/runload.h"
#include "solvers/solve.h"

typedef struct {
    cfg_run *run;
    agent_instance ai;
    double exact;
    agent_rollout *ro;
    agent_pool *pool;
    int *inst_of; /* [B] zeros: every episode plays the one instance */
    uint8_t *ok;  /* [B] 1: the episode's plan is feasible */
    int B;
    double penalty;
} peer_env;

/* The sizes the Python side needs to lay out its arrays. */
int peer_sizes(int *fl, int *fg, int *ft) {
    *fl = AGENT_FL;
    *fg = AGENT_FG;
    *ft = AGENT_FT;
    return 0;
}

void peer_close(peer_env *pe) {
    if (!pe) return;
    agent_rollout_free(pe->ro);
    agent_pool_free(pe->pool);
    free(pe->inst_of);
    free(pe->ok);
    cfg_free(pe->run);
    free(pe);
}

/* peer_open loads the run file at path (one job, objective cost), solves
 * its exact and reference plans, and prepares B episodes per rollout on
 * `threads` environment threads (0: all cores). Returns the handle, or
 * NULL with a message. */
peer_env *peer_open(const char *path, int B, int threads, double penalty, char *err, int errlen) {
    peer_env *pe = calloc(1, sizeof *pe);
    if (!pe) return NULL;
    pe->B = B;
    pe->penalty = penalty;
    pe->run = run_load(path, err, (size_t)errlen);
    if (!pe->run) goto fail;
    if (pe->run->n_jobs != 1 || pe->run->objective != CFG_OBJECTIVE_COST) {
        snprintf(err, (size_t)errlen, "%s: one job with objective cost expected", path);
        goto fail;
    }
    pe->ai.job = &pe->run->jobs[0];
    pe->ai.cl = &pe->run->cluster;
    solve_result *res = solve_result_create(pe->ai.job->n_layers);
    if (!res) goto oom;
    solve_opts o;
    solve_opts_default(&o);
    o.budget_ms = 5000;
    if (solve_run(pe->ai.job, pe->ai.cl, &o, res) != 0) {
        snprintf(err, (size_t)errlen, "%s: no feasible plan", path);
        solve_result_free(res);
        goto fail;
    }
    pe->exact = res->plan->cost;
    double ref = pe->exact;
    solve_method m[2] = {SOLVE_HOMOGENEOUS, SOLVE_GREEDY};
    for (int k = 0; k < 2; k++) {
        o.method = m[k];
        if (solve_run(pe->ai.job, pe->ai.cl, &o, res) == 0) {
            ref = res->plan->cost;
            break;
        }
    }
    solve_result_free(res);
    pe->ai.ref_cost = ref > 0 ? ref : 1.0;
    agent_net_dims d;
    agent_net_dims_default(&d);
    pe->ro = agent_rollout_create(&d);
    pe->pool = agent_pool_create(threads);
    pe->inst_of = calloc((size_t)B, sizeof *pe->inst_of);
    pe->ok = calloc((size_t)B, 1);
    if (!pe->ro || !pe->pool || !pe->inst_of || !pe->ok) goto oom;
    return pe;
oom:
    snprintf(err, (size_t)errlen, "out of memory");
fail:
    peer_close(pe);
    return NULL;
}

double peer_exact(const peer_env *pe) { return pe->exact; }
int peer_layers(const peer_env *pe) { return pe->ai.job->n_layers; }

/* peer_play plays the B episodes of training step `step` (the sampling
 * stream, as the trainer's), the policy being fn(ctx, ...), and writes
 * each episode's TYPE reward, settled as the trainer settles it (search
 * mode's default, the log reward: agent_rewards_settle), and its plan cost
 * (INFINITY when infeasible). */
int peer_play(peer_env *pe, agent_type_policy fn, void *ctx, uint64_t seed, uint64_t step,
              double *r_type, double *plan_cost, char *err, int errlen) {
    agent_rollout_opts o = {.placement = PLACER_PLACE_NONE,
                            .greedy = 0,
                            .penalty = pe->penalty,
                            .seed = seed,
                            .stream = step,
                            .ep_base = 0,
                            .ep_total = pe->B + 1,
                            .record = 1,
                            .forced = NULL,
                            .reward = AGENT_REWARD_LOG};
    agent_rollout_set_policy(pe->ro, fn, ctx);
    if (agent_rollout_run(pe->ro, NULL, &pe->ai, 1, pe->inst_of, pe->B, &o, pe->pool, err,
                          (size_t)errlen))
        return -1;
    for (int b = 0; b < pe->B; b++) {
        const agent_episode *e = agent_rollout_episode(pe->ro, b);
        r_type[b] = e->r_type;
        plan_cost[b] = e->feasible ? e->plan_cost : INFINITY;
        pe->ok[b] = e->feasible != 0;
    }
    if (agent_rewards_settle(AGENT_REWARD_LOG, pe->penalty, 1, pe->B, r_type, pe->ok, NULL)) {
        snprintf(err, (size_t)errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* peer_traj hands out the recorded TYPE trajectories of the last play
 * (pointers into the rollout, valid until the next play): T, K and the
 * arrays of agent_type_traj (glob[T,B,FG], rows[T,B,K,FT], prev[T,B,FT],
 * mask[T,B,K], action[T,B]). */
int peer_traj(peer_env *pe, int *T, int *K, const float **glob, const float **rows, const float **prev,
              const uint8_t **mask, const int **action) {
    agent_type_traj *tt = agent_rollout_type_traj(pe->ro, NULL);
    *T = tt->T;
    *K = tt->K;
    *glob = tt->glob;
    *rows = tt->rows;
    *prev = tt->prev;
    *mask = tt->mask;
    *action = tt->action;
    return 0;
}
