/* adv.h -- advantages for REINFORCE from the rewards of a batch.
 *
 * The batch holds G instances with S episodes each (episode e = g S + s).
 * For one head (the TYPE decisions, or the NODE decisions), given the
 * rewards r[e] and which episodes have decisions of that head (has[e], or
 * NULL for all), agent_advantages writes adv[e] (0 for episodes without):
 *
 *   shared   adv = r - mean of the other episodes of the same instance that
 *            have decisions (0 when fewer than 2 have)
 *   moving   adv = r - b, with b an exponential moving average of the
 *            batch's mean reward: b starts at the first batch's mean, then
 *            b <- decay b + (1 - decay) mean after each batch (HeterPS)
 *   risk     (risk = eps in (0, 1]; replaces the baseline) per instance,
 *            q = the reward at rank floor((1 - eps) n) of its n sorted
 *            rewards; episodes with r >= q get adv = r - q, the others are
 *            dropped (keep[e] = 0: no gradient, no entropy bonus)
 *   adv_norm then every adv is divided by the standard deviation (+1e-8)
 *            of the advantages of the kept episodes with decisions
 */
#ifndef STRATA_AGENT_ADV_H
#define STRATA_AGENT_ADV_H

#include <stdint.h>

typedef struct {
    int baseline;    /* AGENT_BASE_SHARED or AGENT_BASE_MOVING (agent/trainconf.h) */
    double decay;    /* moving-average decay */
    int norm;        /* 1: divide by the standard deviation */
    double risk;     /* 0: off; else the kept top fraction per instance */
} agent_adv_opts;

/* agent_rewards_settle turns the rollout's rewards r[G*S] of one head
 * (agent/rollout.h) into the rewards the advantages see, per instance,
 * over the episodes with decisions of that head (has[e], or NULL for all);
 * ok[e] is 1 when episode e ended feasible (for the NODE head: placed
 * within the target). By mode (agent_reward of agent/trainconf.h):
 *   log    every infeasible episode gets w - log(penalty), w the worst
 *          (lowest) reward of the instance's feasible episodes, or
 *          -log(penalty) when none is feasible: strictly below every
 *          feasible plan of the batch, yet within log(penalty) of them, so
 *          the spread of the feasible rewards still counts;
 *   rank   r = -(number of the instance's episodes strictly better) / (n - 1)
 *          (n episodes; 0 when n < 2), a feasible episode being better than
 *          an infeasible one whatever the rewards, the infeasible ones all
 *          tying, and ties sharing a rank:
 *          rewards in [-1, 0] whatever the cost scale;
 *   ratio  unchanged.
 * Returns 0, or -1 when out of memory (r unchanged). */
int agent_rewards_settle(int mode, double penalty, int G, int S, double *r, const uint8_t *ok,
                         const uint8_t *has);

/* agent_zero_adv_share returns the share of the episodes that get a
 * gradient (has[e] or has NULL, and keep[e] or keep NULL) whose advantage
 * is 0 (|adv| < 1e-12): 1 when every advantage vanishes, the sign of a
 * reward that cannot tell the samples apart. NAN when no episode counts. */
double agent_zero_adv_share(int B, const double *adv, const uint8_t *has, const uint8_t *keep);

/* agent_advantages fills adv[G*S] from r[G*S] (has[G*S] or NULL). keep
 * (may be NULL: the risk rule is then not applied) receives 0 for dropped
 * episodes and is left untouched for the others. *base and the bit
 * init_bit of *init hold the moving baseline between calls. Returns 0, or
 * -1 when out of memory. */
int agent_advantages(const agent_adv_opts *o, int G, int S, const double *r, const uint8_t *has,
                     double *adv, uint8_t *keep, double *base, int *init, int init_bit);

#endif
