/* decode.h -- greedy decoding with backtracking out of dead ends.
 *
 * The environment's mask never hides a completable action, but it cannot
 * see every combination of future stages, so a greedy decode can still walk
 * into a dead end (no type allowed for the next layer). agent_decode_greedy
 * then backtracks: it revisits the decisions from the deepest up, tries the
 * other allowed types at each in the order of the policy's probabilities,
 * and completes every new prefix greedily -- a depth-first search in the
 * policy's order, which is the plain greedy decode when that decode is
 * feasible. The search stops at the first feasible plan or after max_runs
 * decoding passes. A sampled decode that dead-ends is repaired the same
 * way from its own decisions (agent_decode_repair).
 */
#ifndef STRATA_AGENT_DECODE_H
#define STRATA_AGENT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/rollout.h"

/* agent_decode_greedy decodes instance `in` with the parameters p on the
 * (caller's) rollout ro, placement as in agent_rollout_opts. Returns 0 with
 * assign[n_layers] filled and the episode found left as episode 0 of ro
 * (agent_rollout_episode / agent_rollout_tasks), 1 when no feasible plan
 * was found in max_runs passes, -1 with a message on error. *runs (may be
 * NULL) receives the passes made. */
int agent_decode_greedy(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                        int placement, double penalty, int max_runs, int *assign, int *runs,
                        char *err, size_t errlen);

/* agent_decode_played copies into played[] (room for the instance's
 * layers) the TYPE actions episode b of ro's last run took: all of them,
 * or those before its dead end. Returns their count. */
int agent_decode_played(const agent_rollout *ro, int b, int *played);

/* agent_decode_repair is the way out of a dead end for a sampled decode:
 * it replays played[n_played] (the actions a sample took before it
 * dead-ended, agent_decode_played), then backtracks as agent_decode_greedy
 * does, except that every decision may be revisited, the sample's own
 * included: the deepest first, the other allowed types at each in the
 * order of the policy's probabilities, each new prefix completed greedily.
 * Since the mask never hides a completable action this is a complete
 * depth-first search, so, given passes enough, the plan found shares the
 * longest prefix with played[] that any feasible plan does. Stops at the
 * first feasible plan or after max_runs passes (the replay is the first).
 * Same returns as agent_decode_greedy. */
int agent_decode_repair(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                        int placement, double penalty, const int *played, int n_played,
                        int max_runs, int *assign, int *runs, char *err, size_t errlen);

/* agent_decode_anchored is the fallback for a greedy decode that found no
 * plan although `anchor` (a feasible plan from a solver, [n_layers]) exists:
 * it forces the anchor's first k layers and decodes the rest greedily with
 * backtracking (max_runs passes), for k = L/8, 2L/8, ..., L
 * (AGENT_ANCHOR_STEPS tries), and keeps the first plan that completes -- the
 * one with the most layers the policy chose. The last try is the anchor
 * itself, so a feasible anchor always yields a plan. Returns 0 with
 * assign[] filled, the episode left as episode 0 of ro and *n_anchored = k
 * (the layers taken from the anchor), 1 when none completed, -1 with a
 * message on error (a forced action the mask refuses: an infeasible
 * anchor). *runs (may be NULL) receives all passes made. */
#define AGENT_ANCHOR_STEPS 8
int agent_decode_anchored(agent_rollout *ro, const nn_params *p, const agent_instance *in,
                          int placement, double penalty, const int *anchor, int max_runs,
                          int *assign, int *runs, int *n_anchored, char *err, size_t errlen);

#endif
