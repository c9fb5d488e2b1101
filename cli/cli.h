/* cli.h -- the subcommands of the `strata` program.
 *
 * Each subcommand is one function taking the arguments after its name
 * (argv[0] is the subcommand) and returning the process exit status:
 * 0 success, 1 a failed run (e.g. an infeasible plan), 2 bad usage or a bad
 * input file. Only cli/ prints and chooses exit codes; the library returns
 * status codes and messages.
 */
#ifndef STRATA_CLI_H
#define STRATA_CLI_H

#include <stdint.h>

#include "env/config.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

int cmd_cost(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_import_nodes(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_manifest(int argc, char **argv);
int cmd_simulate(int argc, char **argv);

/* cli_solve_policy is `strata solve --method policy` (cli/train.c): decodes
 * the policy checkpoint `ckpt` on job (greedy, or the best of `samples`
 * sampled plans when samples > 1, sampling stopped when budget_ms > 0 is
 * spent; with polish, the plan kept finished by segment moves) and prints
 * it as cmd_solve does, with the samples drawn. */
int cli_solve_policy(const cfg_run *run, const model_job *job, const char *ckpt, int samples,
                     int polish, uint64_t seed, long budget_ms, int as_json);

/* cmd_solve_jobs is `strata solve` for several jobs (objective jct,
 * cli/solve_jobs.c). cmd_solve calls it first with its own arguments; it
 * returns CLI_NOT_JOBS when the run is a single-job one, for cmd_solve to
 * handle, else the exit status. */
#define CLI_NOT_JOBS (-1)
int cmd_solve_jobs(int argc, char **argv);

#endif
