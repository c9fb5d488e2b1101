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

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

int cmd_cost(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif
