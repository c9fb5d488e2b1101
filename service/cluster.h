/* cluster.h -- the daemon's cluster and its occupancy (GET/PUT /v1/cluster).
 *
 * The daemon keeps one cluster (PUT /v1/cluster, the config schema's
 * cluster object as JSON) in its state file (service/store.h), and one
 * occupancy: the units each node has taken by the plans of registered
 * extender jobs (PUT /v1/jobs) and by online decisions committed through
 * POST /v1/place {"commit": {"job": "ns/name"}}. Occupancy is units taken
 * per node (and per type and zone), the same word `strata simulate` uses;
 * a DELETE of the job, or POST /v1/jobs/{ns}/{name}/complete, releases it.
 * GET /v1/cluster shows, per node, units in total, taken and free and who
 * takes them (job, role, index), with totals per type and zone.
 */
#ifndef STRATA_SERVICE_CLUSTER_H
#define STRATA_SERVICE_CLUSTER_H

#include <jansson.h>

#include "service/api.h"
#include "service/web.h"

#define CLUSTER_DEFAULT_MAX_NODES MODEL_MAX_NODES

/* cluster_free_nodes returns a copy of the node array nodes (config schema)
 * with each node's units and ps_slots less what taken ({node: {units, ps}},
 * store_taken's; may be NULL) says is taken there, never below 0. Caller
 * owns it; NULL when out of memory. */
json_t *cluster_free_nodes(const json_t *nodes, const json_t *taken);

/* cluster_handle answers GET /v1/cluster (the occupancy) and PUT
 * /v1/cluster (sets the cluster; 400 naming the field when it does not
 * load, 413 past env->max_cluster_nodes nodes). */
void cluster_handle(const api_env *env, const web_request *req, web_reply *rep);

/* cluster_load_file puts the cluster of the config file at path (a run
 * config or a cluster file: cfg_load_cluster) into env's state, as PUT
 * /v1/cluster would, checked the same way (strata serve --cluster). A
 * state file that already holds that very cluster is left untouched; one
 * that holds another has it replaced (the file named at start wins, as a
 * PUT would; occupancy is kept). Returns 0 with what happened in msg (for
 * the log), or -1 with the reason, naming the file, in msg. */
int cluster_load_file(const api_env *env, const char *path, char *msg, size_t msglen);

#endif
