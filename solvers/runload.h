/* runload.h -- loading a run ready to score: the config, then its fits.
 *
 * Every program that reads a run (the commands of cli/, strata eval's
 * instances, the daemon's requests, the agent's training and evaluation
 * configs, the benchmarks, the fuzz target) goes through run_load*, so
 * that a job that carries measurements is scored with its fitted
 * throughput curve (solvers/fit.h) wherever it is loaded. env/config.h
 * cannot do it itself: fitting stands on solvers/, above env/.
 *
 * Messages: a config error as cfg_load writes it ("file:line:col: key:
 * message"); a fit error as "NAME: job J: measurements: message" with NAME
 * the file (or the name given for a buffer or document).
 * Ownership: each returns a cfg_run the caller frees with cfg_free().
 */
#ifndef STRATA_RUNLOAD_H
#define STRATA_RUNLOAD_H

#include <stddef.h>

#include "env/config.h"

struct json_t; /* jansson's json_t */

/* run_load is cfg_load(path) then fit_run. Returns the run, or NULL with
 * the message in err[errlen] (2048 bytes or more avoids truncation). */
cfg_run *run_load(const char *path, char *err, size_t errlen);

/* run_load_buffer is cfg_load_buffer (text in memory, include: refused)
 * then fit_run. */
cfg_run *run_load_buffer(const char *name, const char *text, size_t len, char *err,
                         size_t errlen);

/* run_load_json is cfg_load_json (a parsed JSON value, borrowed; include:
 * refused) then fit_run. */
cfg_run *run_load_json(const char *name, const struct json_t *root, char *err, size_t errlen);

/* run_load_json_on is cfg_load_json_on (root without cluster:, the run on a
 * copy of cl) then fit_run. */
cfg_run *run_load_json_on(const char *name, const struct json_t *root, const model_cluster *cl,
                          char *err, size_t errlen);

#endif
