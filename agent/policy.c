/* policy.c -- TEMPORARY placeholder for the policy API of policy.h.
 *
 * The agent (issue 6) replaces this file with the real implementation.
 * Until then every load fails with a clear message, so that the daemon,
 * strata eval and the CLI build and run against the contract.
 */
#include "agent/policy.h"

#include <stdio.h>

agent_policy *agent_policy_load(const char *path, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: policies cannot be loaded yet (the agent is not built)", path);
    return NULL;
}

void agent_policy_free(agent_policy *p) { (void)p; }

int agent_policy_decode(const agent_policy *p, const model_job *job,
                        const model_cluster *cl, const agent_decode_opts *opts,
                        agent_decode_result *res, char *err, size_t errlen) {
    (void)p, (void)job, (void)cl, (void)opts, (void)res;
    snprintf(err, errlen, "no policy loaded");
    return -1;
}

int agent_policy_max_tasks(const model_job *job, const model_cluster *cl) {
    (void)job, (void)cl;
    return 0;
}

const char *agent_policy_path(const agent_policy *p) { (void)p; return ""; }
int64_t agent_policy_step(const agent_policy *p) { (void)p; return 0; }
const char *agent_policy_hash(const agent_policy *p) { (void)p; return ""; }
