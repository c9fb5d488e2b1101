/* common.h -- what the subcommands do alike.
 *
 * Loading a run (the config, then fitting the throughput curve of any job
 * that carries measurements, so that every command scores such a job the
 * same way), picking a job by name, and reading whole-number options,
 * among them the plan solver's budget and seed that both parsers of
 * `strata solve` (cli/solve.c, cli/solve_jobs.c) take. Each prints its own
 * error to stderr in the program's one format ("strata: ...") and tells
 * the caller to exit with CLI_USAGE.
 */
#ifndef STRATA_CLI_COMMON_H
#define STRATA_CLI_COMMON_H

#include "env/config.h"
#include "solvers/solve.h"

/* cli_load_run loads path and fits its jobs' measured curves. Returns the
 * run (free with cfg_free), or NULL after printing why. */
cfg_run *cli_load_run(const char *path);

/* cli_find_job returns the job named `name`, or the first job when name is
 * NULL; NULL after printing an error when there is no such job. */
model_job *cli_find_job(cfg_run *run, const char *name);

/* cli_blas_one_thread sets OpenBLAS to one thread, for the commands that
 * decode with a policy (solve, place, manifest, eval, serve): a decode
 * multiplies batches of at most 64 rows, too small to share out, and
 * OpenBLAS's threads only spin against the caller's own threads and any
 * other work on the machine (q8's eval on 2 cores beside a training run:
 * 12 s against 29 s; a best-of-16 solve of the default config 0.09 s
 * against 0.15 s). Training keeps BLAS's default (its scripts set it). */
void cli_blas_one_thread(void);

/* cli_parse_int reads text as a whole number in [lo, hi] for option opt
 * (as the user typed it, e.g. "--seed"). Returns 0 with *out set, or -1
 * after printing "strata: OPT: expected a whole number from LO to HI". */
int cli_parse_int(const char *opt, const char *text, long long lo, long long hi,
                  long long *out);

/* CLI_SOLVE_OPTIONS expands to the getopt_long entries (struct option
 * initialisers; the includer includes <getopt.h>) that `strata solve`
 * and its several-jobs branch share: --method, --budget-ms, --evals,
 * --seed, --job, --json and --help, with the short letters m, b, e, s, j,
 * J and h. Each parser lists them first, then its own entries and the
 * terminating {0, 0, 0, 0}, so that both read one command line alike. */
#define CLI_SOLVE_OPTIONS                    \
    {"method", required_argument, 0, 'm'},    \
    {"budget-ms", required_argument, 0, 'b'}, \
    {"evals", required_argument, 0, 'e'},     \
    {"seed", required_argument, 0, 's'},      \
    {"job", required_argument, 0, 'j'},       \
    {"json", no_argument, 0, 'J'},            \
    {"help", no_argument, 0, 'h'}

/* cli_solve_budget reads the value text of one of the plan solver's
 * budget options into so: letter 'b' (--budget-ms, milliseconds from 0),
 * 'e' (--evals, from 1) or 's' (--seed, from 0). Returns 0, or -1 after
 * printing what cli_parse_int prints (or that letter is none of those). */
int cli_solve_budget(int letter, const char *text, solve_opts *so);

#endif
