/* common.h -- what the subcommands do alike.
 *
 * Loading a run (the config, then fitting the throughput curve of any job
 * that carries measurements, so that every command scores such a job the
 * same way), picking a job by name, and reading whole-number options. Each
 * prints its own error to stderr in the program's one format
 * ("strata: ...") and tells the caller to exit with CLI_USAGE.
 */
#ifndef STRATA_CLI_COMMON_H
#define STRATA_CLI_COMMON_H

#include "env/config.h"

/* cli_load_run loads path and fits its jobs' measured curves. Returns the
 * run (free with cfg_free), or NULL after printing why. */
cfg_run *cli_load_run(const char *path);

/* cli_find_job returns the job named `name`, or the first job when name is
 * NULL; NULL after printing an error when there is no such job. */
model_job *cli_find_job(cfg_run *run, const char *name);

/* cli_parse_int reads text as a whole number in [lo, hi] for option opt
 * (as the user typed it, e.g. "--seed"). Returns 0 with *out set, or -1
 * after printing "strata: OPT: expected a whole number from LO to HI". */
int cli_parse_int(const char *opt, const char *text, long long lo, long long hi,
                  long long *out);

#endif
