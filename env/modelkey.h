/* modelkey.h -- the canonical bytes of a job and a cluster.
 *
 * mkey_write writes every field of a job (but its own name) and of a
 * cluster, as parsed, in a fixed order: doubles by their bit pattern,
 * integers as 8 bytes, names with their length. Two problems with equal
 * bytes have the same figures for every part of strata that reads them
 * (the cost model, the environments, the solvers, the policy); any
 * difference in a figure gives different bytes. Every field of model_job,
 * model_layer, model_point, model_curve, model_cluster, model_type,
 * model_node and model_zone is either written or named in modelkey.c as
 * not read, and a compile-time check of those structs' sizes fails the
 * build when a field is added, so that the bytes cannot silently miss it.
 *
 * Users: the daemon's plan memo (service/probkey.h, these bytes then the
 * decision options) and the rollout's kept environments and look-ahead
 * tables (agent/rollout.c, their digest).
 */
#ifndef STRATA_ENV_MODELKEY_H
#define STRATA_ENV_MODELKEY_H

#include <stddef.h>
#include <stdint.h>

#include "env/model.h"

/* A sink for bytes: put(ud, bytes, n) appends them. */
typedef void (*mkey_put_fn)(void *ud, const void *bytes, size_t n);

/* mkey_write writes the canonical bytes of (job without its name, cl) to
 * put, in several calls. */
void mkey_write(const model_job *job, const model_cluster *cl, mkey_put_fn put, void *ud);

/* mkey_fnv continues the 64-bit FNV-1a digest h over bytes[n]; start from
 * MKEY_FNV_START. */
#define MKEY_FNV_START 1469598103934665603ULL
uint64_t mkey_fnv(uint64_t h, const void *bytes, size_t n);

/* mkey_digest returns the FNV-1a digest of mkey_write's bytes, never 0 (so
 * that 0 can mean "none" to a cache). */
uint64_t mkey_digest(const model_job *job, const model_cluster *cl);

#endif
