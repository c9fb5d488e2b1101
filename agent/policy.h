/* policy.h -- a trained placement policy, as the rest of strata uses it.
 *
 * A policy is loaded from an HDF5 checkpoint (nets/ckpt) and decodes a plan
 * for any job on any cluster: a type per layer (the layer head) and, when
 * the cluster lists nodes and the caller asks for it, a node per task (the
 * node head, or a placement heuristic of solvers/placers). Decoding is
 * greedy, or samples N plans and keeps the cheapest by the cost model.
 *
 * This is the contract between agent/ (which implements it) and its users:
 * `strata solve --method policy`, the daemon and `strata eval`.
 *
 * Ownership: agent_policy_load returns a policy the caller frees with
 * agent_policy_free (NULL accepted). Decoding reads the weights only: any
 * number of threads may call agent_policy_decode on the same policy at
 * once, each with its own agent_decode_result. (Each decode borrows a
 * workspace from the policy's idle list, under a lock, and gives it back:
 * a decode's answer never depends on the decodes before it.)
 */
#ifndef STRATA_AGENT_POLICY_H
#define STRATA_AGENT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"
#include "solvers/placers.h"

typedef struct agent_policy agent_policy;

typedef enum {
    AGENT_DECODE_GREEDY = 0, /* the most likely action at every step */
    AGENT_DECODE_SAMPLE = 1, /* decode `samples` plans -- the greedy one and
                                samples - 1 sampled, a sample that dead-ends
                                backtracking from its own decisions (agent/
                                decode.h) -- and keep the cheapest */
} agent_decode_kind;

typedef struct {
    agent_decode_kind decode;
    int samples;       /* plans decoded when decode == SAMPLE (>= 1): greedy's,
                          samples / 4 that flip one of its decisions (and as
                          many that flip the best of those, when it beats
                          greedy), the rest sampled; the cheapest is kept */
    uint64_t seed;     /* sampling seed: same seed, same plan */
    int placement;     /* a placer_placement (solvers/placers.h): PLACER_PLACE_NONE
                          plans only; PLACER_PLACE_POLICY also places the tasks
                          with the node head; a placer_method with that placer */
    int budget_ms;     /* stop sampling after this long (0: no limit); checked
                          after every batch of 64 samples, before each
                          repair of a sample that dead-ended and in polish,
                          and the greedy plan is decoded after the last */
    int (*cancelled)(void *ud); /* NULL, or asked after every batch of 64
                          samples and before each repair: nonzero stops
                          sampling at once (the caller has given up, e.g.
                          its client left) */
    void *cancel_ud;
    int workers, ps;   /* > 0: the job runs exactly this many worker (ps)
                          tasks, fixed beforehand (a TFJob's replica counts):
                          each decoded plan gets them (model_plan_set_counts:
                          extra tasks to the stages with the fewest; fewer
                          than the plan needs, or more units than are free,
                          make that plan infeasible and the decode goes on to
                          the next), and the node head (or placer) places
                          those tasks. 0: the plan's own counts */
    int node_samples;  /* with placement == PLACER_PLACE_POLICY: after the
                          decode, the node head also places the kept plan
                          (or greedy's plan whose placement missed R)
                          node_samples more times, sampling its nodes, and
                          the cheapest placement is kept (never worse than
                          the node head's greedy one). 0: the one placement */
    int polish;        /* 1: the types of the plan kept are finished by
                          segment moves to a local optimum of the plan's cost
                          (solve_polish, solvers/solve.h: up to L^2 T / 2 cost
                          evaluations a pass, within budget_ms and the cancel
                          callback), and the polished plan, played once with
                          its types forced (counts and placement as every
                          decode makes them), replaces the answer when that
                          is cheaper: never dearer. 0: the decoded plan */
} agent_decode_opts;

typedef struct {
    int *assign;      /* [n_layers] type per layer, caller-allocated */
    int *task_node;   /* [tasks] node per task, or NULL when not placing;
                         caller-allocated with room for the plan's tasks
                         (agent_policy_task_cap) */
    model_plan *plan; /* caller-created (model_plan_create(n_layers));
                         scored, and refined by place_eval when placed */
    int samples_used; /* decoding passes: `samples` when sampling (more
                         when a decode backtracks out of a dead end), plus
                         node_samples; greedy: its passes */
    int stopped;      /* 1 when budget_ms ran out before `samples` were drawn:
                         the answer is the best of samples_used */
    int cancelled;    /* 1 when opts->cancelled stopped sampling (stopped too) */
    int anchored;     /* 0, or when the policy's own decodes all ended in dead
                         ends: the first `anchored` layers of the plan were
                         forced to a solver's feasible plan and the policy
                         decoded the rest (agent_decode_anchored) */
    int anchor_method; /* that solver, a solve_method (when anchored) */
    int polished;     /* 1 when opts->polish lowered the answer's cost */
    double unpolished; /* the answer's cost before polish (placed, with the
                          counts: as the decode compares plans), INFINITY
                          when no plan was found */
} agent_decode_result;

/* agent_policy_load reads a checkpoint. Returns NULL with a message that
 * names the file and what is wrong (missing, truncated, wrong format
 * version, wrong feature schema, wrong shapes) in err[errlen]. */
agent_policy *agent_policy_load(const char *path, char *err, size_t errlen);
void agent_policy_free(agent_policy *p);

/* agent_policy_decode decodes a plan for job on cl into res. Returns 0 when
 * a feasible plan (and placement, if asked) was found; otherwise a
 * model_reason with res->plan->why saying why, or -1 with err filled on bad
 * options. Never changes the policy. */
int agent_policy_decode(const agent_policy *p, const model_job *job,
                        const model_cluster *cl, const agent_decode_opts *opts,
                        agent_decode_result *res, char *err, size_t errlen);

/* agent_policy_max_tasks bounds the tasks any plan of job can have on cl
 * (sum over types of their count plus the ps tasks), for sizing task_node. */
int agent_policy_max_tasks(const model_job *job, const model_cluster *cl);

/* agent_policy_task_cap bounds the tasks a decode with opts can place (the
 * room res->task_node needs): agent_policy_max_tasks, plus opts->ps when a
 * ps count is fixed (it may pass the plan's own bound; fixed workers never
 * pass the units). */
int agent_policy_task_cap(const model_job *job, const model_cluster *cl,
                          const agent_decode_opts *opts);

/* agent_policy_decode_bytes estimates the bytes agent_policy_decode takes
 * for job on cl with opts, before anything is allocated: the rollout
 * buffers of one batch of up to 64 episodes (T = layers steps of K = types
 * rows, and, when the node head places, up to max_tasks steps of n_nodes
 * rows), the look-ahead's stage memo and the tree of the states' features,
 * with the doubling growth of those buffers counted. An upper
 * estimate meant for admission control, not an exact figure. */
size_t agent_policy_decode_bytes(const model_job *job, const model_cluster *cl,
                                 const agent_decode_opts *opts);

/* Facts about the loaded policy, for reports and the daemon's /metrics. */
const char *agent_policy_path(const agent_policy *p); /* as loaded */
int64_t agent_policy_step(const agent_policy *p);      /* training step */
const char *agent_policy_hash(const agent_policy *p);  /* hex digest of the weights as loaded (a schema-1 file: grown, agent/ckptio.h) */

#endif
