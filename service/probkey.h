/* probkey.h -- the canonical bytes of a placement problem, for the plan memo.
 *
 * /v1/place answers a deterministic policy decode from a memo (service/api.c)
 * keyed by what the decision reads, not by the request's bytes: the job's
 * figures (its layers, names included, and targets; not the job's own name,
 * which the answer does not depend on), the cluster, and the decision
 * options a body sets. pk_place writes these, as parsed (so "1GB" and
 * "1000MB" are one figure; key order, spacing and units of the body do not
 * matter), field by field in a fixed order: doubles by their bit pattern,
 * integers as 8 bytes, names with their length. Two problems with equal
 * bytes are the same problem for decide_run; any difference in a figure
 * gives different bytes.
 *
 * The job's and the cluster's bytes are env/modelkey.h's; every field of
 * decide_opts is either written or named in probkey.c as not read by the
 * decision. A compile-time check of all those structs' sizes fails the
 * build when a field is added, so that the key cannot silently miss it.
 */
#ifndef STRATA_SERVICE_PROBKEY_H
#define STRATA_SERVICE_PROBKEY_H

#include <stddef.h>

#include "env/model.h"
#include "service/decide.h"

/* pk_place returns the canonical bytes of (job without its name, cl, o) in
 * a malloc'd buffer of *len bytes (the caller frees it), or NULL when out of
 * memory. The per-request fields of o (cpu_ms, mem_bytes, cancelled,
 * cancel_ud) are not part of the problem and are left out. */
char *pk_place(const model_job *job, const model_cluster *cl, const decide_opts *o, size_t *len);

#endif
