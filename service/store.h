/* store.h -- the daemon's persistent state: registered jobs, their fixed
 * plans, and the units those plans take (SQLite).
 *
 * The extender fixes a job's plan once, at registration; pods are placed
 * by it whatever order they come in. For a restarted daemon, or a second
 * replica, to give the same answers, the registry and the plans live in a
 * SQLite file (`strata serve --state FILE`, on the pod's volume), in WAL
 * mode so that readers never wait behind the writer. Without --state the
 * same code runs on an in-memory database: nothing outlives the process.
 *
 * Tables: jobs(key "namespace/name", namespace, name, version,
 * registered_at, layers, doc, plan) and placements(job, role, idx, node,
 * type, zone, units, ps): one row per task of a planned job, the node the
 * plan put it on and what it takes there (a worker one unit, a ps one ps
 * slot). The next job's plan subtracts the placements of the others
 * (occupancy); deleting a job releases them. binds(seq, uid, job, role,
 * idx): the pods the extender placed by a registered job's plan, by pod
 * UID, until their bind records where they run (store_pod_put).
 *
 * Two processes sharing one file agree: every write is one IMMEDIATE
 * transaction (the plan is made inside it, so two replicas cannot give the
 * same free units to two jobs), versions come from the file, and
 * store_sync brings a registry up to date whenever another connection has
 * committed (PRAGMA data_version), before each call that reads jobs.
 *
 * A file that is not a strata state file, is corrupt or holds a row that
 * does not parse is refused at open with a message naming the file: the
 * daemon refuses to start rather than silently forget its jobs.
 *
 * Thread-safe: one connection behind one mutex.
 */
#ifndef STRATA_SERVICE_STORE_H
#define STRATA_SERVICE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "service/jobs.h"

typedef struct store store;

/* store_open opens (creating when missing) the state file at path, or an
 * in-memory database when path is NULL, and checks it (integrity, schema,
 * every row readable). Returns the store, or NULL with a message naming
 * the file in err. store_close closes it; accepts NULL. */
store *store_open(const char *path, char *err, size_t errlen);
void store_close(store *s);

/* store_path returns the file's path, or ":memory:". */
const char *store_path(const store *s);

/* A registration in progress: store_begin takes the file's write lock
 * (BEGIN IMMEDIATE, waiting up to 10 s for another writer) and the store's
 * mutex; store_end commits (commit 1) or rolls back and releases both.
 * Both return 0, or -1 with a message in err. Between them, only
 * store_taken, store_n_holding and store_put_job may be called by the
 * holder. */
int store_begin(store *s, char *err, size_t errlen);
int store_end(store *s, int commit, char *err, size_t errlen);

/* store_taken returns {node: {"units": u, "ps": p}}: what the plans of the
 * jobs other than key take on each node (caller owns it), or NULL with err. */
json_t *store_taken(store *s, const char *key, char *err, size_t errlen);

/* store_n_holding returns how many jobs take units (the running jobs of
 * the shared-cluster policy's view, service/clpolicy.h), or -1 with err.
 * Called by the holder, like store_taken. */
int store_n_holding(store *s, char *err, size_t errlen);

/* store_put_job writes (replacing) the job key with its document and its
 * fixed plan (k8s.h's plan object: its "workers" and "ps" arrays become
 * placements rows), under a version one above every version the file has
 * seen. *version and *registered_at get what was written. Returns 0, or
 * -1 with err. Inside store_begin/store_end. */
int store_put_job(store *s, const char *key, const json_t *doc, int n_layers,
                  const json_t *plan, uint64_t *version, double *registered_at, char *err,
                  size_t errlen);

/* store_delete_job removes the job and its placements (its own
 * transaction). Returns 1 when it was there (registered, or holding units
 * of an online commit), 0 when not, -1 with err. */
int store_delete_job(store *s, const char *key, char *err, size_t errlen);

/* store_sync makes the registry r hold exactly the jobs of the file when
 * another connection has written since the last sync (or force is 1):
 * new and changed jobs are loaded with their version and plan, jobs gone
 * from the file are dropped. While a registration of this process holds
 * the store, a sync without force returns at once (it is caught up at the
 * next call). Returns 0, or -1 with err naming the file. */
int store_sync(store *s, jobs_registry *r, int force, char *err, size_t errlen);

/* The daemon's cluster (PUT /v1/cluster): table cluster_nodes(idx, name,
 * doc) holds its nodes in order, meta 'cluster' the rest of the cluster
 * object (types, zones, links). Occupancy is the placements table: the
 * units every registered or committed job takes on each node. */

/* store_put_cluster replaces the cluster (a config-schema cluster object,
 * already checked) in its own transaction. Returns 0, or -1 with err. */
int store_put_cluster(store *s, const json_t *cluster, char *err, size_t errlen);

/* store_get_cluster returns the cluster object with its nodes (caller owns
 * it), json null when none was ever put, or NULL with err. locked: 1 when
 * called between store_begin and store_end. */
json_t *store_get_cluster(store *s, int locked, char *err, size_t errlen);

/* store_placements returns every placement row [{job, role, index, node,
 * units, ps}] ordered by job, role (workers first) and index (caller owns
 * it), or NULL with err. */
json_t *store_placements(store *s, char *err, size_t errlen);

/* store_holds returns 1 when the job key is registered or takes units, 0
 * when not, -1 with err. Inside store_begin/store_end. */
int store_holds(store *s, const char *key, char *err, size_t errlen);

/* store_bind records where the task (role "worker" or "ps", index idx in
 * the plan) of the registered job key was bound: its placements row takes
 * that node and zone (the occupancy then counts the node it runs on, not
 * the one planned), and the row of pod uid in binds (NULL or "": none) is
 * dropped, in the same transaction. Returns 1 when the placements row was
 * there, 0 when not (the job was deleted or replanned meanwhile), -1 with
 * err. Its own transaction. */
int store_bind(store *s, const char *key, const char *role, long idx, const char *node,
               const char *zone, const char *uid, char *err, size_t errlen);

/* The pods the extender placed, for the bind verb: kube-scheduler's bind
 * call names the pod (PodUID) but carries no labels, so the task a pod was
 * placed as at filter time is kept here, in the state file, for the bind
 * to find -- also when the daemon was restarted between the two, or the
 * bind reaches another replica on the same file. */

/* store_pod_put remembers that pod uid is task (role, idx) of job key
 * (replacing what it was), keeping at most max rows: the oldest go. An
 * unchanged row is only read, not written again. Its own transaction.
 * Returns 0 (uid NULL or "": nothing to do), or -1 with err. */
int store_pod_put(store *s, const char *uid, const char *key, const char *role, long idx,
                  int max, char *err, size_t errlen);

/* store_pod_get reads the task pod uid was placed as into key[keylen],
 * role[rolelen] and *idx. Returns 1, 0 when the pod is not remembered
 * (uid NULL or "" included), -1 with err. */
int store_pod_get(store *s, const char *uid, char *key, size_t keylen, char *role,
                  size_t rolelen, long *idx, char *err, size_t errlen);

/* store_n_pods returns how many pods are remembered, or -1 with err. */
int store_n_pods(store *s, char *err, size_t errlen);

/* store_put_placements writes the placement rows of an online decision's
 * plan ({workers: [{node, type, zone}], ps: [...]}) for the job key, with
 * no jobs row: the units are taken until DELETE or complete releases them.
 * Returns 0, or -1 with err. Inside store_begin/store_end. */
int store_put_placements(store *s, const char *key, const json_t *plan, char *err,
                         size_t errlen);

#endif
